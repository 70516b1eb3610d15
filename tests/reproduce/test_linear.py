"""The computed docs/concepts_linear.md §3 table (reproduce linear): rows, verdicts from the
computation,
re-verified witnesses, refined rows, the CLI and its JSON."""

import argparse
import json

import numpy as np
import pytest

from neuromanifold import InputError, LinearConvNet, ntk_dependence
from neuromanifold.cli import _reproduce
from neuromanifold.linear import is_regular_point
from neuromanifold.reproduce import (
    Case,
    Claim,
    Refinement,
    Row,
    default_linear_claims,
    reproduce_linear,
    summarize,
    verify_independence,
    verify_witness,
)
from neuromanifold.reproduce._linear import REGULAR, SIZES, standing_hypothesis

KEYS = {
    "architecture",
    "condition",
    "paper_claim",
    "computed",
    "outcome",
    "agrees",
    "hypotheses",
    "reason",
    "evidence",
}
VERDICTS = {"independent", "dependent", "mixed", "inconclusive"}
OUTCOMES = {"agrees", "disagrees", "outside the hypotheses", "inconclusive"}


@pytest.fixture(scope="module")
def rows():
    return reproduce_linear(quick=True)


def _models_by_label():
    return {
        case.label: case.model
        for claim in default_linear_claims(quick=True)
        for case in claim.cases
    }


def test_rows_have_the_required_keys(rows):
    assert rows and all(isinstance(r, Row) for r in rows)
    for r in rows:
        d = r.to_dict()
        assert set(d) == KEYS
        assert r.computed in VERDICTS and r.paper_claim in {"independent", "dependent"}
        assert r.outcome in OUTCOMES and r.agrees == (r.outcome == "agrees")
        if r.computed == r.paper_claim:
            assert r.outcome == "agrees"
        assert r.hypotheses and 0 <= r.evidence["num_within"] <= r.evidence["num_instances"]
        e = r.evidence
        assert e["num_instances"] >= e["num_architectures"] >= 1
        assert e["fiber_sizes"][0] <= e["fiber_sizes"][1]
        assert isinstance(r.summary(), str)
        if r.computed == "dependent":
            assert e["witness"] is not None and e["max_relative_difference"] > 1e-6
        if r.computed == "independent":
            assert e["witness"] is None and e["max_relative_difference"] <= 1e-8


def test_every_seed_row_is_present(rows):
    top = [(r.architecture, r.condition) for r in rows if "refines" not in r.evidence]
    claims = [(c.architecture, c.condition) for c in default_linear_claims(quick=True)]
    assert top == claims


def test_witnesses_reverified_independently(rows):
    """Every reported witness: same function and invariants, NTK difference above tolerance,
    recomputed here from the stored parameters."""
    models = _models_by_label()
    seen = 0
    for r in rows:
        w = r.evidence["witness"]
        if w is None:
            continue
        model = models[w["architecture"]]
        p, q = ([np.asarray(a) for a in pts] for pts in w["params"])
        np.testing.assert_allclose(
            np.asarray(model.end_to_end(p)),
            np.asarray(model.end_to_end(q)),
            atol=1e-8 * max(1, np.abs(model.end_to_end(p)).max()),
        )
        Kp, Kq = model.ntk(p), model.ntk(q)
        assert np.linalg.norm(Kp - Kq) > 1e-6 * np.linalg.norm(Kp)
        assert verify_witness(model, (p, q))["verified"]
        seen += 1
    assert seen >= 3


def test_refined_rows_follow_mixed_parents(rows):
    """A mixed row is followed by refined rows, each uniform, that partition its cases."""
    for i, r in enumerate(rows):
        if r.computed != "mixed":
            continue
        children = []
        for c in rows[i + 1 :]:
            if c.evidence.get("refines") != r.condition:
                break
            children.append(c)
        assert len(children) >= 2
        assert (
            sum(c.evidence["num_architectures"] for c in children)
            == r.evidence["num_architectures"]
        )
        assert {c.computed for c in children} == {"independent", "dependent"}
        assert r.evidence["explained"]


def test_stride_one_and_interchangeable_refinements_found(rows):
    """The computation (not a stored answer) finds the known refinements of docs/concepts_linear.md
    §3."""
    by = {(r.architecture, r.condition): r for r in rows}
    d2 = [
        r
        for r in rows
        if r.architecture == "D >= 2 convolution" and "interchangeable layers (" in r.condition
    ]
    assert d2 and d2[0].computed == "dependent" and d2[0].outcome == "disagrees"
    assert by[("1D convolution", "all strides s_1..s_{L-1} > 1")].computed == "independent"


def test_verdicts_are_computed_not_stored():
    """A claim with the wrong answer is reported as disagreeing; the same architectures with
    the right answer agree."""
    net = LinearConvNet([2, 2], [2])
    case = Case(net, net, net.random_params)
    wrong = reproduce_linear(
        claims=[Claim("1D convolution", "test", "dependent", [case])], num_instances=2
    )
    right = reproduce_linear(
        claims=[Claim("1D convolution", "test", "independent", [case])], num_instances=2
    )
    assert wrong[0].computed == right[0].computed == "independent"
    assert not wrong[0].agrees and right[0].agrees
    # no hypotheses listed: every instance meets them all, and certified independence
    # on every instance refutes the (wrong) dependence claim
    assert wrong[0].outcome == "disagrees" and right[0].outcome == "agrees"


def test_refinement_grouping_with_custom_claims():
    nets = [LinearConvNet([2, 2], [1]), LinearConvNet([2, 2], [2])]
    claim = Claim(
        "1D convolution",
        "any",
        "independent",
        [Case(n, n, n.random_params) for n in nets],
        refinements=[Refinement("stride 1", lambda n: n.strides[0][0] == 1)],
        otherwise="stride > 1",
    )
    out = reproduce_linear(claims=[claim], num_instances=2, seed=4)
    assert [r.computed for r in out] == ["mixed", "dependent", "independent"]
    assert [r.condition for r in out] == ["any", "any; stride 1", "any; stride > 1"]


def test_condition_is_checked():
    net = LinearConvNet([2, 2], [1])
    claim = Claim(
        "1D convolution",
        "all strides > 1",
        "independent",
        [Case(net, net, net.random_params)],
        condition_holds=lambda n: all(s[0] > 1 for s in n.strides),
    )
    with pytest.raises(InputError, match="does not satisfy"):
        reproduce_linear(claims=[claim])
    with pytest.raises(InputError, match="paper_claim"):
        reproduce_linear(claims=[Claim("x", "y", "maybe", [])])
    with pytest.raises(InputError, match="seed"):
        reproduce_linear(seed="zero", quick=True)
    with pytest.raises(InputError, match="list of Claim"):
        reproduce_linear(claims="rows")
    with pytest.raises(InputError, match="tol"):
        reproduce_linear(quick=True, tol=0.0)
    with pytest.raises(InputError, match="pair of parameters"):
        verify_witness(net, [net.random_params(0)])


def test_seed_reproducible():
    a = [r.to_dict() for r in reproduce_linear(quick=True, seed=3)]
    b = [r.to_dict() for r in reproduce_linear(quick=True, seed=3)]
    assert a == b


def _run_cli(argv):
    parser = argparse.ArgumentParser(prog="neuromanifold")
    _reproduce.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_json_round_trip(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "2000")  # a row per line (fitting is tested in tests/cli)
    path = tmp_path / "rows.json"
    assert _run_cli(["reproduce", "linear", "--quick", "--json", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "paper's claim" in out and "computed" in out and "outcome" in out
    assert "reproduce linear" in err  # the progress bar went to stderr
    data = json.loads(path.read_text())
    assert isinstance(data, list) and data and all(set(row) == KEYS for row in data)
    rows = reproduce_linear(quick=True)
    assert [row["computed"] for row in data] == [r.computed for r in rows]
    assert [row["condition"] for row in data] == [r.condition for r in rows]
    for line, row in zip(out.splitlines()[4:], data):  # the table lists every row in order
        assert row["architecture"] in line and row["computed"] in line
        assert row["outcome"] in line
    # the summary line counts only genuine disagreements
    n = sum(row["outcome"] == "disagrees" for row in data)
    assert f"{n} genuine disagreement" in out.splitlines()[-1]
    assert sum(row["computed"] != row["paper_claim"] for row in data) > n


def test_cli_through_main(tmp_path):
    """The registered command runs end to end through the console entry point."""
    from neuromanifold.cli import _main

    path = tmp_path / "rows.json"
    assert _main.main(["reproduce", "linear", "--quick", "--json", str(path)]) == 0
    assert all(set(row) == KEYS for row in json.loads(path.read_text()))


def test_cli_rejects_unknown_table():
    with pytest.raises(SystemExit):
        _run_cli(["reproduce", "quadratic"])


def test_strided_special_points_are_smooth_and_dependent():
    """1D, stride 2, filter 1 = (a, 0, b): a full-rank Jacobian, but the u-roots (u = t^2)
    can trade places with layer 2's, so the NTK depends on the parameter; the witness is
    re-verified from scratch, and v is a crossing, not a regular point: outside the
    smooth locus where docs/concepts_linear.md §3 claims independence."""
    from neuromanifold import LinearConvNet, ntk_dependence
    from neuromanifold.reproduce._linear import _special_strided_params

    net = LinearConvNet([3, 2], [2])
    make = _special_strided_params(net)
    rng = np.random.default_rng(3)
    found = 0
    for _ in range(6):
        params = make(rng)
        assert params[0][1] == 0.0 and net.is_smooth(params, exact=True)
        dep = ntk_dependence(net, params)
        if not dep.independent:
            check = verify_witness(net, dep.witnesses)
            assert check["verified"] and dep.certified
            assert is_regular_point(net, net.polynomial(params)).regular is False
            assert dep.within_hypotheses is False
            found += 1
    assert found > 0


# ------------------------------------------------------------------ judged within hypotheses
def _claims_by_row():
    return {(c.architecture, c.condition): c for c in default_linear_claims(quick=True)}


def _claim_of(row):
    by = _claims_by_row()
    return by[(row.architecture, row.evidence.get("refines", row.condition))]


def _case_by_label(claim, label):
    return next(c for c in claim.cases if c.label == label)


def test_every_disagreement_meets_every_hypothesis(rows):
    """Each 'disagrees' row: its counterexample is re-verified and every hypothesis of the
    claim is rechecked here from the stored parameters (fresh dependence test, fresh
    regularity test on a freshly computed fiber, filter sizes read off the architecture)."""
    seen = 0
    for r in rows:
        if r.outcome != "disagrees":
            assert "counterexample" not in r.evidence
            continue
        seen += 1
        claim = _claim_of(r)
        c = r.evidence["counterexample"]
        case = _case_by_label(claim, c["architecture"])
        model = case.model
        if r.paper_claim == "independent":
            p, q = ([np.asarray(a) for a in pts] for pts in c["params"])
            assert verify_witness(model, (p, q))["verified"]
        else:
            p = [np.asarray(a) for a in c["params"]]
            assert verify_independence(model, p)["verified"]
        dep = ntk_dependence(model, p)
        for h in claim.hypotheses:
            holds, detail = h.check(case, p, dep)
            assert holds is True, (r.condition, h.label, detail)
        lin = case.structure
        if isinstance(lin, LinearConvNet):
            assert all(n > 1 for n in lin.layer_sizes)
            lin_p = p if lin is model else p[:-1]
            assert is_regular_point(lin, lin.polynomial(lin_p)).regular is True
    assert seen >= 2


def test_outcomes_recomputed_from_instances(rows):
    """The outcome follows from the stored instance evidence: a row that disagrees has a
    within-hypotheses counterexample; an 'outside' row has no instance meeting every
    hypothesis and names the failing one."""
    for r in rows:
        e = r.evidence
        if r.outcome == "outside the hypotheses":
            assert e["num_within"] == 0 and e["failed_hypotheses"]
            assert any(label in r.reason for label in e["failed_hypotheses"])
        if r.outcome == "disagrees":
            assert e["num_within"] >= 1 and e["counterexample"]
        if r.outcome == "agrees" and r.computed != r.paper_claim:
            assert e["computed_within"] == r.paper_claim and e["failed_hypotheses"]


def test_summary_counts_only_genuine_disagreements(rows):
    counts = summarize(rows)
    assert counts["rows"]["disagrees"] == sum(r.outcome == "disagrees" for r in rows)
    assert sum(counts["rows"].values()) == len(rows)
    assert sum(counts["claims"].values()) == len(default_linear_claims(quick=True))
    # rows whose computed verdict differs from the paper but are not genuine disagreements
    assert any(r.computed != r.paper_claim and r.outcome != "disagrees" for r in rows)
    line = _reproduce.summary_line(counts)
    assert f"{counts['rows']['disagrees']} genuine disagreement" in line


def test_size_one_layers_are_outside_the_hypotheses():
    """1D, stride 1 with a layer of filter size 1: independent, but the claim's standing
    assumption (every filter has more than one entry) fails: 'outside', not 'disagrees'."""
    net = LinearConvNet([2, 1, 2], [1, 2])
    claim = Claim(
        "1D convolution",
        "some stride = 1",
        "dependent",
        [Case(net, net, net.random_params)],
        hypotheses=[standing_hypothesis(SIZES)],
    )
    row = reproduce_linear(claims=[claim], num_instances=2)[0]
    assert row.computed == "independent" and row.outcome == "outside the hypotheses"
    assert "filter size 1" in row.reason
    # the same claim without the hypothesis: a genuine disagreement
    bare = Claim(
        "1D convolution", "some stride = 1", "dependent", [Case(net, net, net.random_params)]
    )
    assert reproduce_linear(claims=[bare], num_instances=2)[0].outcome == "disagrees"


def test_crossings_are_outside_the_smooth_locus():
    """Filters (3, 2), stride 2, first filter (a, 0, b): the NTK differs on the fiber, but v
    is a crossing (not a regular point): outside the independence theorem's hypotheses."""
    from neuromanifold.reproduce._linear import _special_strided_params

    net = LinearConvNet([3, 2], [2])
    case = Case(net, net, _special_strided_params(net), generic=False)
    claim = Claim(
        "1D convolution",
        "all strides > 1",
        "independent",
        [case],
        hypotheses=[standing_hypothesis(SIZES), standing_hypothesis(REGULAR)],
    )
    row = reproduce_linear(claims=[claim], num_instances=2, seed=1)[0]
    assert row.computed == "dependent" and row.outcome == "outside the hypotheses"
    assert "crossing" in row.reason
    assert row.evidence["witness"]["within_hypotheses"] is False
    bare = Claim("1D convolution", "all strides > 1", "independent", [case])
    assert reproduce_linear(claims=[bare], num_instances=2, seed=1)[0].outcome == "disagrees"


def test_sampled_independence_is_inconclusive(rows):
    """Independence on sampled (uncertified) fully connected fibers refutes no dependence
    claim."""
    row = next(
        r
        for r in rows
        if r.architecture == "fully connected linear" and "expected fiber dim <= 0" in r.condition
    )
    assert row.computed == "independent" and not row.evidence["certified"]
    assert row.outcome == "inconclusive"


def _sampled_verdict(net, params, rng, starts=12):
    """An independent path to the dependence verdict: solve mu(theta) = v, delta(theta) =
    delta by least squares from random starts (no factorization), compare the NTKs of
    the solutions found."""
    from scipy import optimize

    from neuromanifold.fibers import invariant_vector

    v, d = net.end_to_end(params), invariant_vector(net, params)
    scale = np.linalg.norm(v)

    def fun(theta):
        p = net.unflatten(theta)
        return np.concatenate(
            [(net.end_to_end(p) - v).ravel() / scale, (invariant_vector(net, p) - d) / scale]
        )

    Ks = [net.ntk(params)]
    for _ in range(starts):
        x0 = rng.standard_normal(net.num_params) * scale ** (1 / net.num_layers)
        sol = optimize.least_squares(fun, x0, xtol=1e-15, ftol=1e-15, gtol=1e-15)
        if np.linalg.norm(sol.fun) < 1e-10:
            Ks.append(net.ntk(net.unflatten(sol.x)))
    diff = max(np.linalg.norm(K - Ks[0]) / np.linalg.norm(Ks[0]) for K in Ks)
    return ("dependent" if diff > 1e-6 else "independent"), len(Ks)


@pytest.mark.parametrize(
    "shapes,strides",
    [
        ([2, 2], [1]),
        ([3, 2], [2]),
        ([2, 1, 2], [1, 2]),
        ([(2, 2), (2, 2)], None),
        ([(2, 2), (3, 2)], None),
        ([(2, 1), (3, 1)], None),
    ],
)
def test_row_verdicts_recomputed_by_sampling(shapes, strides):
    """The verdict behind each convolutional row (strided, stride 1, size-1 layer, D >= 2
    with and without interchangeable layers, common axis) on a small instance, recomputed
    by sampling the fiber with least squares instead of factoring."""
    net = LinearConvNet(shapes, strides)
    rng = np.random.default_rng(11)
    params = net.random_params(rng)
    if shapes == [(2, 1), (3, 1)]:  # three real roots, so that roots can be reassigned
        params = [np.array([[1.0], [-0.5]]), np.array([[1.0], [-3.0], [2.0]])]
    fast = ntk_dependence(net, params)
    sampled, found = _sampled_verdict(net, params, rng)
    assert found >= 2
    assert ("independent" if fast.independent else "dependent") == sampled


@pytest.mark.parametrize("which", ["relu_cnn_2d", "relu_mlp_one_layer", "fc_bottleneck"])
def test_other_row_verdicts_recomputed_by_sampling(which):
    """The same independent path for the shallow ReLU rows (2D interchangeable layers:
    dependent; one linear layer: independent, also by the path-lifting closed form) and
    the fully connected bottleneck (independent)."""
    from neuromanifold import LinearFCNet, ShallowReLUCNN, ShallowReLUMLP
    from neuromanifold.linear import path_lifting_check

    rng = np.random.default_rng(5)
    if which == "relu_cnn_2d":
        model = ShallowReLUCNN.with_random_inputs([(2, 2), (2, 2)], None, seed=7)
    elif which == "relu_mlp_one_layer":
        model = ShallowReLUMLP.with_random_inputs([2, 2], seed=7)
    else:
        model = LinearFCNet([2, 1, 2])
    params = model.random_params(rng)
    options = {"num_starts": 4, "seed": 0} if which == "fc_bottleneck" else {}
    fast = ntk_dependence(model, params, **options)
    sampled, found = _sampled_verdict(model, params, rng)
    assert found >= 2
    assert ("independent" if fast.independent else "dependent") == sampled
    if which == "relu_mlp_one_layer":
        assert path_lifting_check(params, model.inputs).independent and fast.independent


def test_num_instances_is_capped():
    from neuromanifold.reproduce import reproduce_linear

    with pytest.raises(InputError, match="at most"):
        reproduce_linear(num_instances=10**12)
