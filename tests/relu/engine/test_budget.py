"""Budgets of the analyses that enumerate linear regions (relu/_budget.py), the pruned
searches that made them faster (bent hyperplanes, genericity: ground truth = the
unpruned search), the cost order of ``equivalent(method="auto")``, and silence on stdout."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import ComputationLimitError, InputError, relu
from neuromanifold.relu import (
    ReLUNet,
    bent_hyperplanes,
    equivalent,
    genericity,
    identifiability,
    plot_arrangement,
)
from neuromanifold.relu._engine import joint_regions as _joint
from neuromanifold.relu._equivalence import equivalence as _equivalence
from neuromanifold.relu._genericity import genericity as _genericity
from neuromanifold.relu._regions import bent as _bent
from tests.support.relu import dyadic_net


def _split(p, j=0, share=0.25):
    """``p`` with first-layer neuron ``j`` split into two positive multiples: the same
    function, one more neuron (so no permutation-and-scaling symmetry relates them)."""
    (W1, b1), (W2, b2), *rest = [(np.array(W, float), np.array(b, float)) for W, b in p]
    W1s = np.vstack([W1, share * W1[j : j + 1]])
    b1s = np.append(b1, share * b1[j])
    W1s[j] *= 1 - share
    b1s[j] *= 1 - share
    return [(W1s, b1s), (np.hstack([W2, W2[:, j : j + 1]]), b2), *rest]


def _dead_on_box(p, seed=2):
    """``p`` with one more first-layer neuron, inactive on the box [-1, 1]^d, with random
    outgoing weights: the same function on the box only (no symmetry or reduction)."""
    rng = np.random.default_rng(seed)
    (W1, b1), (W2, b2), *rest = p
    w = rng.standard_normal(W1.shape[1])
    return [
        (np.vstack([W1, w]), np.append(b1, -(np.abs(w).sum() + 0.5))),
        (np.hstack([W2, rng.standard_normal((W2.shape[0], 1))]), b2),
        *rest,
    ]


BOX = (-1.0, 1.0)
NET = ReLUNet([2, 4, 3, 1]).random_params(5)


# -- budgets ------------------------------------------------------------------------------


@pytest.mark.parametrize("analysis", ["bent", "genericity", "equivalent", "plot"])
def test_region_limit_raises_with_counts(analysis):
    calls = {
        "bent": lambda **kw: bent_hyperplanes(NET, **kw),
        "genericity": lambda **kw: genericity(NET, **kw),
        "equivalent": lambda **kw: equivalent(NET, _split(NET), method="regions", **kw),
        "plot": lambda **kw: plot_arrangement(NET, (-3.0, 3.0), ax=_axes(), **kw),
    }
    with pytest.raises(ComputationLimitError, match=r"max_regions=3\)") as info:
        calls[analysis](max_regions=3)
    err = info.value
    assert err.num_regions == 3 and err.num_lps > 0 and err.elapsed >= 0
    assert "3 " in str(err) and "LPs" in str(err)
    with pytest.raises(ComputationLimitError, match=r"time limit") as info:
        calls[analysis](time_limit=1e-9)
    # a plot gives each of its enumerations at least 1 ms, in which a region or two more
    # can be found (2 on a clean-clone CI run); the others stop at once
    assert info.value.num_regions <= (3 if analysis == "plot" else 1)
    # a budget that is not reached changes nothing
    full = calls[analysis]()
    limited = calls[analysis](max_regions=10**6, time_limit=1e6)
    if analysis != "plot":
        assert full.to_dict() == limited.to_dict()


def _axes():
    from matplotlib.figure import Figure

    return Figure().subplots()


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10", True])
def test_bad_budgets_are_input_errors(bad):
    with pytest.raises(InputError, match="max_regions"):
        bent_hyperplanes(NET, max_regions=bad)
    with pytest.raises(InputError, match="max_regions"):
        equivalent(NET, NET, max_regions=bad)
    if bad != 2.5:
        with pytest.raises(InputError, match="time_limit"):
            genericity(NET, time_limit=bad if bad != "10" else "10")


def test_partial_bent_hyperplanes_is_what_was_found():
    full = bent_hyperplanes(NET)
    n = full.regions.num_regions
    for k in (1, n // 2, n - 1):
        with pytest.raises(ComputationLimitError) as info:
            bent_hyperplanes(NET, max_regions=k)
        part = info.value.partial
        assert not part.complete and not part.certified and len(part.regions) == k
        assert not part.regions.certified
        for a, b in zip(part.neurons, full.neurons):
            assert a.status in ("visible", "undecided")
            assert a.status != "visible" or b.status == "visible"
            # the pieces found are the full result's pieces on the regions examined
            assert [(p.region, p.visible) for p in a.pieces] == [
                (p.region, p.visible) for p in b.pieces if p.region < k
            ]
            assert all(p.neighbor is None or p.neighbor < k for p in a.pieces)
    assert full.complete and all(
        p.neighbor is not None and p.neighbor >= 0 for nu in full.neurons for p in nu.pieces
    )


def test_partial_genericity_lists_real_failures():
    p = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -2.0], [1.0, 1.0]]), np.array([0.0, -1.0])),
        (np.ones((1, 2)), np.zeros(1)),
    ]
    full = genericity(p)
    assert not full.generic and full.complete
    with pytest.raises(ComputationLimitError) as info:
        genericity(p, max_regions=2)
    part = info.value.partial
    assert not part.complete and part.num_regions == 2 and "INCOMPLETE" in part.describe()
    messages = {f.message for f in full.failures}
    assert {f.message for f in part.failures} <= messages


def test_identifiability_passes_the_budget_on():
    P = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -1.0], [-1.0, 2.0]]), np.array([0.5, -1.0])),
        (np.array([[1.0, 2.0]]), np.zeros(1)),
    ]
    with pytest.raises(ComputationLimitError, match="genericity"):
        identifiability(P, exact_genericity=True, max_regions=1)
    assert identifiability(P, max_regions=1).identifiable  # no enumeration without it


# -- the pruned searches against the unpruned ones ------------------------------------------


def _bent_key(B):
    return [
        (
            nu.status,
            [
                (p.region, p.neighbor, p.visible, p.jump_size, p.coincident, tuple(p.normal))
                for p in nu.pieces
            ],
        )
        for nu in B.neurons
    ]


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from([[2, 3, 3, 1], [2, 4, 2, 2], [3, 3, 2, 1], [1, 3, 3, 1]]),
    dyadic=st.booleans(),
    domain=st.sampled_from([None, "orthant", (-1.0, 1.0)]),
)
def test_bent_pruning_matches_the_unpruned_search(seed, widths, dyadic, domain):
    p = (
        dyadic_net(np.random.default_rng(seed), widths)
        if dyadic
        else ReLUNet(widths).random_params(seed)
    )
    fast = bent_hyperplanes(p, domain)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_bent, "_PRUNE", False)
        slow = bent_hyperplanes(p, domain)
    assert _bent_key(fast) == _bent_key(slow)
    assert fast.num_lps <= slow.num_lps


def _failures(g):
    return sorted(
        (f.condition, f.kind, tuple(sorted(f.elements)), str(f.pattern), str(f.point), f.certified)
        for f in g.failures
    )


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from([[2, 3, 3, 1], [2, 3, 2, 2, 1], [3, 3, 2, 1]]),
    dyadic=st.booleans(),
    domain=st.sampled_from([None, "orthant", (-1.0, 1.0)]),
)
def test_genericity_closure_pruning_matches_all_pieces(seed, widths, dyadic, domain):
    p = (
        dyadic_net(np.random.default_rng(seed), widths)
        if dyadic
        else ReLUNet(widths).random_params(seed)
    )
    fast = genericity(p, domain, tol=0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_genericity, "_touching", lambda pieces, *a: pieces)
        slow = genericity(p, domain, tol=0)
    assert _failures(fast) == _failures(slow)
    assert fast.generic == slow.generic
    # a piece left out is certified to miss the closure exactly, where the unpruned search
    # may have asked a float LP about a family containing it (then certified=False)
    assert fast.certified or not slow.certified
    assert fast.num_subsets <= slow.num_subsets


def test_closure_pruning_keeps_a_piece_through_a_vertex():
    # a layer-2 neuron whose pieces only touch the closure of the regions at the origin
    p = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -2.0], [1.0, 1.0]]), np.array([0.0, -1.0])),
        (np.ones((1, 2)), np.zeros(1)),
    ]
    s2 = [f for f in genericity(p).failures if f.condition == "S2"]
    assert any(f.kind == "common point" and f.point == (0, 0) for f in s2)


# -- equivalent(method="auto"): cheap checks first, then regions or the MILP by size -------


def test_auto_runs_regions_before_the_milp_on_few_regions(monkeypatch):
    p = ReLUNet([2, 4, 4, 1]).random_params(1)
    q = _dead_on_box(p)

    def no_milp(*a, **kw):
        raise AssertionError("the MILP ran although few joint regions were expected")

    monkeypatch.setattr(_equivalence, "by_milp", no_milp)
    r = equivalent(p, q, BOX)
    assert r.equivalent and r.method == "regions" and r.certified and r.num_milps == 0
    assert "regions first" in r.note


def test_auto_runs_the_milp_first_on_many_regions(monkeypatch):
    p = ReLUNet([2, 4, 4, 1]).random_params(1)
    q = _dead_on_box(p)
    calls = []
    real = _equivalence.by_milp

    def counted(*a, **kw):
        calls.append(kw.get("time_limit"))
        return real(*a, **kw)

    monkeypatch.setattr(_equivalence, "_REGIONS_FIRST", 0)
    monkeypatch.setattr(_equivalence, "by_milp", counted)
    r = equivalent(p, q, BOX)
    assert r.equivalent and r.method == "regions" and calls == [_equivalence._MILP_SHARE]
    assert "the MILP first" in r.note and r.num_milps == 2


def test_auto_finds_a_witness_by_sampling_before_anything_else(monkeypatch):
    p = ReLUNet([2, 4, 4, 1]).random_params(1)
    q = [(W.copy(), b.copy()) for W, b in p]
    q[-1][1][0] += 0.25
    monkeypatch.setattr(_equivalence, "by_milp", lambda *a, **kw: 1 / 0)
    monkeypatch.setattr(_equivalence, "by_regions", lambda *a, **kw: 1 / 0)
    r = equivalent(p, q)
    assert not r.equivalent and r.method == "sampling" and r.certified


def test_milp_time_share_is_respected(monkeypatch):
    p = ReLUNet([2, 4, 4, 1]).random_params(1)
    seen = []
    real = _joint.solve_milp

    def spy(*a, time_limit=None, **kw):
        seen.append(time_limit)
        return real(*a, time_limit=time_limit, **kw)

    monkeypatch.setattr(_joint, "solve_milp", spy)
    equivalent(p, _split(p), method="milp", time_limit=50.0)
    assert seen and all(t is not None and 0 < t <= 50.0 for t in seen)


# -- nothing on stdout, at the file-descriptor level ---------------------------------------


def test_no_analysis_writes_to_stdout(capfd):
    os.write(1, b"control\n")  # the capture does see the file descriptor
    assert capfd.readouterr().out == "control\n"
    p = ReLUNet([2, 3, 3, 1]).random_params(2)
    q = _split(p)
    r = [(W.copy(), b.copy()) for W, b in p]
    r[-1][1][0] += 1e-3
    bott = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -1.0], [-1.0, 2.0]]), np.array([0.5, -1.0])),
        (np.array([[1.0, 2.0]]), np.zeros(1)),
    ]
    runs = [
        lambda: relu.regions(p),
        lambda: list(relu.iter_regions(p)),
        lambda: relu.estimate_regions(p, num_samples=500),
        lambda: relu.bent_hyperplanes(p),
        lambda: relu.genericity(p),
        lambda: relu.functional_dimension(p, (-1.0, 1.0)),
        lambda: equivalent(p, q),
        lambda: equivalent(p, q, method="regions"),
        lambda: equivalent(p, q, method="milp"),
        lambda: equivalent(p, r, method="milp"),
        lambda: equivalent(p, r),
        lambda: relu.identifiability(bott, exact_genericity=True),
        lambda: relu.canonical_form(bott),
        lambda: relu.equivalent_bottleneck(bott, bott),
        lambda: relu.weighted_arrangement([p[0], (np.ones((1, 3)), np.zeros(1))]),
        lambda: plot_arrangement(p, ax=_axes()),
    ]
    for run in runs:
        run()
        out = capfd.readouterr().out
        assert out == "", f"{run.__code__.co_firstlineno}: wrote {out[:200]!r} to stdout"


def test_budget_after_the_milp_keeps_its_verdict_as_partial(monkeypatch):
    p = ReLUNet([2, 4, 4, 1]).random_params(1)
    monkeypatch.setattr(_equivalence, "_REGIONS_FIRST", 0)
    with pytest.raises(ComputationLimitError, match="max_regions=1") as info:
        equivalent(p, _dead_on_box(p), BOX, max_regions=1)
    part = info.value.partial
    assert part.method == "milp" and part.equivalent and not part.certified


def test_a_milp_time_limit_does_not_point_to_estimate_regions():
    from neuromanifold.relu._engine.budget import Budget

    b = Budget(
        "equivalent", 2, max_regions=None, time_limit=1.0, progress=False, unit="joint region"
    )
    assert "estimate_regions" not in str(b.time_error(stage="the MILP"))
    one = Budget("regions", 2, max_regions=None, time_limit=1.0, progress=False)
    assert "estimate_regions" in str(one.time_error())


def test_time_limit_holds_through_the_exact_simplex():
    """First-layer neurons whose weights decayed to 1e-16 (dead neurons of a trained
    network) put walls at 1e16 that floating point cannot settle: the engine falls back to
    the exact simplex, whose pivots on such rationals took 25 s past a 1 s limit; the
    limit is now checked before every pivot."""
    import time

    p = ReLUNet([64, 32, 16, 10]).random_params(0)
    p[0][0][:4] *= 1e-16
    t = time.monotonic()
    with pytest.raises(ComputationLimitError, match="time limit") as err:
        relu.regions(p, time_limit=1)
    assert time.monotonic() - t < 6  # 1.1 s + 1 s is the goal; a wide margin for CI
    assert err.value.partial is not None


def test_time_limit_sees_a_rank_update_coming():
    """At 64-32-16-10 (2,810 parameters) one rank update of the stacked rows takes about
    12 s on one core; with a 2 s limit it is not started: the error comes in time, with
    the partial result (the rank so far). A dead second-layer neuron keeps the layered
    rank below the bound, so that the stacked rows are needed."""
    import time

    p = [(W.copy(), b.copy()) for W, b in ReLUNet([64, 32, 16, 10]).random_params(0)]
    p[1][0][0] = -np.abs(p[1][0][0])
    p[1][1][0] = -1.0
    t = time.monotonic()
    with pytest.raises(ComputationLimitError, match="time limit") as err:
        relu.functional_dimension(p, time_limit=2)
    assert time.monotonic() - t < 6  # 2.2 s + 1 s is the goal; a wide margin for CI
    part = err.value.partial
    assert part is not None and not part.certified
    assert part.rank == 2730 - 42  # the layered rank: the dead neuron's 33 + 10, less 1
    assert "rank so far 2688" in str(err.value)


_DECAYED = None


def _decayed_net():
    """64-32-16-10 with four first-layer rows decayed to 1e-16 (as weight decay leaves
    dead neurons): walls at 1e16 that only the exact simplex settles."""
    global _DECAYED
    if _DECAYED is None:
        p = ReLUNet([64, 32, 16, 10]).random_params(0)
        p[0][0][:4] *= 1e-16
        _DECAYED = p
    return [(W.copy(), b.copy()) for W, b in _DECAYED]


def _near(p):
    q = [(W.copy(), b.copy()) for W, b in p]
    q[0][1][0] += 1e-7
    return q


@pytest.mark.parametrize(
    "name, call",
    [
        ("regions", lambda p, t: relu.regions(p, time_limit=t)),
        ("bent_hyperplanes", lambda p, t: relu.bent_hyperplanes(p, time_limit=t)),
        ("genericity", lambda p, t: relu.genericity(p, time_limit=t)),
        ("functional_dimension", lambda p, t: relu.functional_dimension(p, time_limit=t)),
        ("neurons", lambda p, t: relu.neurons(p, method="regions", time_limit=t)),
        ("equivalent", lambda p, t: relu.equivalent(p, _near(p), method="regions", time_limit=t)),
        ("distance", lambda p, t: relu.distance(p, _near(p), time_limit=t)),
        ("identifiability", lambda p, t: relu.identifiability(p, time_limit=t)),
    ],
)
def test_every_time_limit_holds_on_a_trained_like_network(name, call):
    """Each analysis either finishes or stops with a partial result (or none, where no
    verdict was reached), within its limit plus a wide margin (the rule is 10 % + 1 s;
    benchmarks/bench_budgets.py measures it)."""
    import time

    p = _decayed_net()
    t = time.monotonic()
    try:
        call(p, 1.0)
    except ComputationLimitError as err:
        assert "time limit" in str(err)
        # a verdict-less comparison has nothing partial; the others keep what they found
        assert err.partial is not None or name == "equivalent", name
    assert time.monotonic() - t < 6, name


def test_the_exact_steps_before_the_regions_hold_the_time_limit():
    """4-640-640-1 with a dead first-layer neuron whose outgoing weights differ between
    the two networks: converting them to exact rationals, the exact matching and the
    reduction each take seconds (31 s in all past a 20 s limit once); they read the
    deadline row by row, so a 1 s limit stops the call in time."""
    import time

    p = ReLUNet([4, 640, 640, 1]).random_params(0)
    p[0][0][0], p[0][1][0] = 0.0, -1.0
    q = [(W.copy(), b.copy()) for W, b in p]
    q[1][0][:, 0] = np.random.default_rng(1).standard_normal(640)
    t = time.monotonic()
    with pytest.raises(ComputationLimitError, match="time limit") as err:
        relu.equivalent(p, q, time_limit=1)
    assert time.monotonic() - t < 4  # 1.1 s + 1 s is the goal; a margin for CI
    assert err.value.partial is None and err.value.elapsed >= 1.0
