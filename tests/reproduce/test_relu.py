"""``reproduce_relu`` and ``neuromanifold reproduce relu|all``: every row of the JSON of a
quick run recomputed by an independent path (sign patterns by hand, Jacobian ranks sampled
in every region, functions compared on dense samples, flips applied by a formula written
here), the outcome rules, and the CLI."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from neuromanifold import InputError
from neuromanifold.cli._main import main
from neuromanifold.reproduce import (
    OUTCOMES,
    ReLUClaim,
    Row,
    default_relu_claims,
    reproduce_relu,
    summarize,
    verdict_row,
)
from tests.support.nonlocalizability import cancelling, halves, sampled_rank
from tests.support.symmetry import same_orbit, sampled_relative_difference

GT = 1e-9


def arr(params):
    return [(np.asarray(W, dtype=float), np.asarray(b, dtype=float)) for W, b in params]


@pytest.fixture(scope="module")
def quick_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("rr") / "relu.json"
    assert main(["reproduce", "relu", "--quick", "--json", str(path)]) == 0
    return json.loads(path.read_text())


def signs(p):
    """Hand-made sign facts of the rows of [W2 | b2]: dead, always active, hidden."""
    (W1, b1), (W2, b2), _ = p
    R = np.hstack([W2, b2[:, None]])
    dead = bool(np.any(np.all(R <= 0, axis=1)))
    linear = bool(np.any(np.all(R >= 0, axis=1)))
    hidden = any(np.all(np.delete(R, i, axis=1) <= 0) for i in range(W1.shape[0]))
    return dead, linear, hidden


_RANKS: dict = {}


def rank_of(p):
    key = repr(p)
    if key not in _RANKS:
        _RANKS[key] = sampled_rank(p)
    return _RANKS[key]


def check_identifiability_row(row):
    literal = "hyperplane hidden" in row["condition"]
    for rec in row["evidence"]["instances"]:
        p = arr(rec["params"])
        dead, linear, hidden = signs(p)
        pred = (not hidden) if literal else not (dead or linear or hidden)
        assert rec["predicted_identifiable"] == pred
        P = sum(W.size + b.size for W, b in p)
        assert rec["rank"] == rank_of(p) and rec["bound"] == P - sum(W.shape[0] for W, _ in p[:2])
        wit = rec["witness"]
        if wit is not None:  # a fiber point off the orbit: recheck on a dense sample
            q = arr(wit["point"])
            assert sampled_relative_difference(p, q) <= GT and not same_orbit(p, q)
        gt_not = rec["rank"] < rec["bound"] or wit is not None
        assert rec["ground_truth"] == ("not identifiable" if gt_not else "identifiable")
        assert rec["agree"] == (pred == (not gt_not))


def check_fiber_row(row):
    for rec in row["evidence"]["instances"]:
        p = arr(rec["params"])
        P = sum(W.size + b.size for W, b in p)
        assert rec["agree"] == (rec["fiber_dimension"] == P - rank_of(p))


def check_symmetry_row(row):
    name = row["evidence"]["symmetry"]
    for rec in row["evidence"]["instances"]:
        if not rec["within"]:
            continue
        p, q = arr(rec["params"]), arr(rec["point"])
        same = sampled_relative_difference(p, q) <= GT
        assert rec["equivalent"] == same == rec["agree"]
        assert same_orbit(p, q) == (name in ("permutation", "scaling"))


def flip(p, i, S, row=0):
    """The flip formula of docs/concepts_relu.md §4, written out here."""
    (W1, b1), (W2, b2), (W3, b3) = [(W.copy(), b.copy()) for W, b in p]
    for k in S:
        r = W2[row, k] / W2[row, i]
        W1[i] += r * W1[k]
        b1[i] += r * b1[k]
        W1[k], b1[k] = -W1[k], -b1[k]
    return [(W1, b1), (W2, b2), (W3, b3)]


def check_flip_row(row):
    for rec in row["evidence"]["instances"]:
        p = arr(rec["params"])
        n1 = p[0][0].shape[0]
        pts = [arr(x) for x in rec["points"]]
        subsets = [S for k in range(n1) for S in itertools.combinations(range(1, n1), k)]
        assert len(pts) == len(subsets) == 2 ** (n1 - 1)
        for S, q in zip(subsets, pts):
            assert np.allclose(
                np.hstack([q[0][0], q[0][1][:, None]]),
                np.hstack([flip(p, 0, S)[0][0], flip(p, 0, S)[0][1][:, None]]),
            )
            assert sampled_relative_difference(p, q) <= GT
        assert not any(same_orbit(a, b) for a, b in itertools.combinations(pts, 2))
        assert rec["group_size"] == 2 ** (n1 - 1)
        c = arr(rec["control"]["params"])
        assert sampled_relative_difference(c, flip(c, 0, (1,))) > 1e-6
        assert rec["control"]["forced_flip_equivalent"] is False


def check_nonlocal_row(row):
    for rec in row["evidence"]["instances"]:
        p = arr(rec["params"])
        (W1, b1), (W2, b2), _ = p
        N, g = halves(p)
        P12 = W1.size + b1.size + W2.size + b2.size
        assert sampled_rank(N, P12) == P12 - W1.shape[0] == rec["ranks"]["f2 o f1"][0]
        assert sampled_rank(g) == rec["ranks"]["f3 o f2"][1] and not cancelling(p)
        q = arr(rec["witness"])
        assert sampled_relative_difference(p, q) <= GT and not same_orbit(p, q)
    s = row["evidence"]["search"]
    assert s["total_nonlocalizable"] == sum(a["nonlocalizable"] for a in s["architectures"])


def check_equivalence_row(row):
    for rec in row["evidence"]["instances"]:
        p, q = arr(rec["params"]), arr(rec["other"])
        same = sampled_relative_difference(p, q) <= GT
        assert rec["exact"] == same
        if rec["fast_applies"]:
            assert rec["agree"] == (rec["fast"] == same)


def _layers(params):
    return [(np.asarray(W, float), np.asarray(b, float)) for W, b in params]


def check_conservation_count_row(row):
    """The count again by symbolic brackets (sympy), not the modular jets of the library."""
    from neuromanifold.conservation._naive import naive_lie_trace

    for rec in row["evidence"]["instances"]:
        P = _layers(rec["params"])
        assert rec["hidden"] == sum(W.shape[0] for W, _ in P[:-1])
        if rec["within"]:
            assert naive_lie_trace(P)["count"] == rec["count"]
        assert rec["agree"] == (rec["count"] == rec["hidden"])


def _rescaling_laws(P):
    out = []
    for (W, b), (V, _) in zip(P[:-1], P[1:]):
        for i in range(W.shape[0]):
            val = W[i] @ W[i] + b[i] ** 2 - V[:, i] @ V[:, i]
            out.append((val, W[i] @ W[i] + b[i] ** 2 + V[:, i] @ V[:, i]))
    return out


def check_conservation_flow_row(row):
    """Laws recomputed with numpy from the first and last parameters of each flow."""
    for rec in row["evidence"]["instances"]:
        P0, P1 = _layers(rec["params"]), _layers(rec["params_end"])
        assert not np.allclose(P0[0][0], P1[0][0], rtol=0, atol=1e-12)  # the flow moved
        if "block" in row["condition"]:

            def law(P):
                R = np.hstack([P[1][0], P[1][1][:, None]])[[0, 1]]
                W3 = P[2][0][:, [0, 1]]
                return R @ R.T - W3.T @ W3, np.abs(R) @ np.abs(R).T + np.abs(W3).T @ np.abs(W3)

            (a, sa), (c, _) = law(P0), law(P1)
            if rec["leave_time"] is None:
                assert np.max(np.abs(c - a)) <= 1e-8 * np.max(sa)
        else:
            for (a, sa), (c, _) in zip(_rescaling_laws(P0), _rescaling_laws(P1)):
                assert abs(c - a) <= 1e-8 * sa
        assert rec["agree"]


CHECKS = {
    "conservation count": check_conservation_count_row,
    "conservation flow": check_conservation_flow_row,
    "identifiability": check_identifiability_row,
    "fiber": check_fiber_row,
    "symmetry": check_symmetry_row,
    "flips": check_flip_row,
    "nonlocal": check_nonlocal_row,
    "equivalence": check_equivalence_row,
}


def kind_of(row):
    claim = row["paper_claim"]
    if "count = hidden neurons" in claim:
        return "conservation count"
    if "conserved along gradient flow" in claim:
        return "conservation flow"
    if "identifiable iff" in claim:
        return "identifiability"
    if "fiber generated" in claim:
        return "fiber"
    if "symmetry" in row["evidence"]:
        return "symmetry"
    if "(Z/2)" in claim:
        return "flips"
    if "f2 o f1" in claim:
        return "nonlocal"
    return "equivalence"


def check_outcome(row):
    """The outcome rule, from the records alone."""
    recs = row["evidence"]["instances"]
    within = [r for r in recs if r["within"]]
    proved = [r for r in within if not r["agree"] and r["proof"]]
    if row["outcome"] == "disagrees":
        c = row["evidence"]["counterexample"]
        assert c["proof"] and c["within"] and all(h[1] is True for h in c["hypotheses"])
        assert any(
            h[0].startswith("a contradicting instance is also exactly generic")
            for h in c["hypotheses"]
        ) or "the move applies" in str(row["hypotheses"])
    elif row["outcome"] == "agrees":
        assert within and all(r["agree"] for r in within) and not proved
    elif row["outcome"] == "outside the hypotheses":
        assert not within
    assert row["agrees"] == (row["outcome"] == "agrees")


def test_every_row_recomputed_independently(quick_json):
    kinds = set()
    for row in quick_json:
        assert row["outcome"] in OUTCOMES
        kind = kind_of(row)
        kinds.add(kind)
        CHECKS[kind](row)
        check_outcome(row)
    assert kinds == set(CHECKS)


def test_the_findings_of_the_quick_run(quick_json):
    """What the computation finds (recomputed above): the literal reading fails on dead or
    always-active neurons; the sign patterns fail only for n1 = 1 (ramp flips); the rest
    agrees."""
    by = {(r["architecture"], r["condition"]): r for r in quick_json}
    ramp = by[
        ("three-layer bottleneck, n1 = 1", "sign patterns (no dead, always-active or hiding rows)")
    ]
    assert ramp["outcome"] == "disagrees"
    assert ramp["evidence"]["counterexample"]["witness"]["symmetry"] == "ramp_flip"
    assert (
        by[
            (
                "three-layer bottleneck, n1 >= 2",
                "sign patterns (no dead, always-active or hiding rows)",
            )
        ]["outcome"]
        == "agrees"
    )
    lit = by[("three-layer bottleneck, n1 >= 2", "no first-layer hyperplane hidden")]
    assert lit["outcome"] == "disagrees"
    assert lit["evidence"]["counterexample"]["witness"]["symmetry"] in (
        "dead_neuron_move",
        "linear_block_mixing",
    )


def test_verdict_row_rules():
    claim = ReLUClaim("x", "a claim", ("h",), lambda ctx, c: [])
    ok = {
        "architecture": "a",
        "params": [],
        "hypotheses": [["h", True, ""]],
        "within": True,
        "agree": True,
        "proof": False,
    }
    bad_out = dict(ok, within=False, agree=False, proof=True, hypotheses=[["h", False, "no"]])
    unproved = dict(ok, agree=False)
    proved = dict(ok, agree=False, proof=True)

    def outcome(*recs):
        return verdict_row(
            claim,
            "a",
            "c",
            [dict(r, hypotheses=[list(h) for h in r["hypotheses"]]) for r in recs],
            computed="",
            summary="",
        ).outcome

    assert outcome(ok, ok) == "agrees"
    assert outcome(ok, bad_out) == "agrees"
    assert outcome(bad_out) == "outside the hypotheses"
    assert outcome(ok, unproved) == "inconclusive"
    assert outcome(ok, proved) == "disagrees"
    assert outcome() == "inconclusive"


def test_one_more_claim_is_one_more_row():
    def rows(ctx, claim):
        ctx.tick()
        return [
            verdict_row(
                claim, "three-layer", "any", [], computed="nothing", summary="a placeholder"
            )
        ]

    extra = ReLUClaim("extra", "an appended claim", (), rows)
    out = reproduce_relu(quick=True, claims=[extra])
    assert len(out) == 1 and isinstance(out[0], Row)
    assert out[0].paper_claim == "an appended claim" and "a placeholder" in out[0].summary()
    assert summarize(out)["rows"]["inconclusive"] == 1
    assert [c.name for c in default_relu_claims(quick=True)][-1] == "conservation laws: flows"


def test_input_errors():
    with pytest.raises(InputError, match="seed"):
        reproduce_relu(seed=-1, claims=[])
    with pytest.raises(InputError, match="quick must be True or False"):
        reproduce_relu(quick="yes", claims=[])
    with pytest.raises(InputError, match="claims must be a list of ReLUClaim"):
        reproduce_relu(claims=["identifiability"])
    with pytest.raises(InputError, match="tol"):
        reproduce_relu(tol=2.0, claims=[])


def test_cli_reproduce_all_quick(tmp_path, monkeypatch, capsys):
    """``all`` = linear then relu, one report with both tables, JSON with both (a few
    claims each, so that the test stays short)."""
    monkeypatch.setenv("COLUMNS", "2000")  # a row per line (fitting: tests/cli)
    import neuromanifold.reproduce as rep

    lin, rel = rep.reproduce_linear, rep.reproduce_relu
    monkeypatch.setattr(
        rep,
        "reproduce_linear",
        lambda **k: lin(claims=rep.default_linear_claims(quick=True)[:1], **k),
    )
    monkeypatch.setattr(
        rep, "reproduce_relu", lambda **k: rel(claims=rep.default_relu_claims(quick=True)[5:6], **k)
    )
    out = tmp_path / "all.json"
    assert (
        main(["reproduce", "all", "--quick", "--json", str(out), "--report", str(tmp_path / "rep")])
        == 0
    )
    text = capsys.readouterr().out
    assert text.index("docs/concepts_linear.md §3") < text.index("Paper B")
    assert text.count("genuine disagreement") == 2 and "genuine" in text.splitlines()[-1]
    data = json.loads(out.read_text())
    assert set(data) == {"linear", "relu"} and len(data["linear"]) >= 1
    assert data["relu"][0]["condition"] == "f2 o f1 and f3 o f2 identifiable, the whole not"
    results = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert {"linear", "relu_claims", "flows", "relu"} <= set(results)
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "Paper A" in html and "Paper B" in html


def test_cli_rejects_unknown_table(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "conv"])
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err
