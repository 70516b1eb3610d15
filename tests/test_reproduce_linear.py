"""The computed docs/concepts_linear.md §3 table (reproduce linear): rows, verdicts from the computation,
re-verified witnesses, refined rows, the CLI and its JSON."""

import argparse
import json

import numpy as np
import pytest

from neuromanifold import InputError, LinearConvNet
from neuromanifold.cli import _reproduce
from neuromanifold.reproduce import (Case, Claim, Refinement, Row, default_linear_claims,
                                     reproduce_linear, verify_witness)

KEYS = {"architecture", "condition", "seed_claim", "computed", "agrees", "evidence"}
VERDICTS = {"independent", "dependent", "mixed", "inconclusive"}


@pytest.fixture(scope="module")
def rows():
    return reproduce_linear(quick=True)


def _models_by_label():
    return {case.label: case.model for claim in default_linear_claims(quick=True)
            for case in claim.cases}


def test_rows_have_the_required_keys(rows):
    assert rows and all(isinstance(r, Row) for r in rows)
    for r in rows:
        d = r.to_dict()
        assert set(d) == KEYS
        assert r.computed in VERDICTS and r.seed_claim in {"independent", "dependent"}
        assert r.agrees == (r.computed == r.seed_claim)
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
        np.testing.assert_allclose(np.asarray(model.end_to_end(p)), np.asarray(model.end_to_end(q)),
                                   atol=1e-8 * max(1, np.abs(model.end_to_end(p)).max()))
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
        for c in rows[i + 1:]:
            if c.evidence.get("refines") != r.condition:
                break
            children.append(c)
        assert len(children) >= 2
        assert sum(c.evidence["num_architectures"] for c in children) == \
            r.evidence["num_architectures"]
        assert {c.computed for c in children} == {"independent", "dependent"}
        assert r.evidence["explained"]


def test_stride_one_and_interchangeable_refinements_found(rows):
    """The computation (not a stored answer) finds the known refinements of docs/concepts_linear.md §3."""
    by = {(r.architecture, r.condition): r for r in rows}
    d2 = [r for r in rows if r.architecture == "D >= 2 convolution"
          and "interchangeable layers (" in r.condition]
    assert d2 and d2[0].computed == "dependent" and not d2[0].agrees
    assert by[("1D convolution", "all strides s_1..s_{L-1} > 1")].computed == "independent"


def test_verdicts_are_computed_not_stored():
    """A claim with the wrong answer is reported as disagreeing; the same architectures with
    the right answer agree."""
    net = LinearConvNet([2, 2], [2])
    case = Case(net, net, net.random_params)
    wrong = reproduce_linear(claims=[Claim("1D convolution", "test", "dependent", [case])],
                             num_instances=2)
    right = reproduce_linear(claims=[Claim("1D convolution", "test", "independent", [case])],
                             num_instances=2)
    assert wrong[0].computed == right[0].computed == "independent"
    assert not wrong[0].agrees and right[0].agrees


def test_refinement_grouping_with_custom_claims():
    nets = [LinearConvNet([2, 2], [1]), LinearConvNet([2, 2], [2])]
    claim = Claim("1D convolution", "any", "independent",
                  [Case(n, n, n.random_params) for n in nets],
                  refinements=[Refinement("stride 1", lambda n: n.strides[0][0] == 1)],
                  otherwise="stride > 1")
    out = reproduce_linear(claims=[claim], num_instances=2, seed=4)
    assert [r.computed for r in out] == ["mixed", "dependent", "independent"]
    assert [r.condition for r in out] == ["any", "any; stride 1", "any; stride > 1"]


def test_condition_is_checked():
    net = LinearConvNet([2, 2], [1])
    claim = Claim("1D convolution", "all strides > 1", "independent",
                  [Case(net, net, net.random_params)],
                  condition_holds=lambda n: all(s[0] > 1 for s in n.strides))
    with pytest.raises(InputError, match="does not satisfy"):
        reproduce_linear(claims=[claim])
    with pytest.raises(InputError, match="seed_claim"):
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


def test_cli_json_round_trip(tmp_path, capsys):
    path = tmp_path / "rows.json"
    assert _run_cli(["reproduce", "linear", "--quick", "--json", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "seed's claim" in out and "computed" in out and "agrees" in out
    assert "reproduce linear" in err          # the progress bar went to stderr
    data = json.loads(path.read_text())
    assert isinstance(data, list) and data and all(set(row) == KEYS for row in data)
    rows = reproduce_linear(quick=True)
    assert [row["computed"] for row in data] == [r.computed for r in rows]
    assert [row["condition"] for row in data] == [r.condition for r in rows]
    for line, row in zip(out.splitlines()[4:], data):   # the table lists every row in order
        assert row["architecture"] in line and row["computed"] in line


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
    """1D, stride 2, filter 1 = (a, 0, b): a smooth point whose u-roots (u = t^2) can trade
    places with layer 2's, so the NTK depends on the parameter (refines docs/concepts_linear.md §3's
    "independent, any delta" to generic v); the witness is re-verified from scratch."""
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
            found += 1
    assert found > 0
