"""Canonical form and the polynomial-time equivalence test of bottleneck networks
(relu._canonical): the symmetry found takes p to q; canonical forms agree iff the ground
truth says equivalent, on pairs built from every named symmetry and on near misses."""

import zlib

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import neuromanifold as nm
from neuromanifold import InputError, relu
from neuromanifold.relu._bounds.parameters import path_norm_scale
from neuromanifold.relu._canonical import block
from neuromanifold.relu._canonical.three_layer import (
    canonical_form,
    equivalent_bottleneck,
    fast_path_reason,
)
from neuromanifold.relu.symmetries import apply_sequence, random_orbit_point
from tests.support.canonical import block_rowspace_pair, dead_to_linear_pair, linear_block_flip_pair
from tests.support.common import load_benchmark
from tests.support.symmetry import bottleneck, ground_truth_equivalent, sampled_relative_difference


def random_symmetry(rng, p):
    """A random chain of named symmetries that apply to p (the public generator)."""
    return random_orbit_point(p, seed=rng)[1]


SHAPES = [
    ((4, 3, 4, 1), None),
    ((3, 2, 3, 2), None),
    ((3, 3, 3, 1), [("hiding", 1), "dead", "dead"]),  # flips and translation
    ((3, 3, 3, 1), [("hiding", 0), ("hiding", 0), "dead"]),  # translation, no flip
    ((3, 2, 4, 1), ["mixed", "linear", "dead", "mixed"]),
    ((4, 3, 4, 2), ["linear", "linear", "mixed", "mixed"]),
    ((5, 3, 5, 1), ["mixed", "mixed", "mixed", "dead", "linear"]),
]


def draw(rng, shape, kinds):
    while True:
        p = bottleneck(rng, shape, kinds)
        if fast_path_reason(p) is None:
            return p


@pytest.mark.parametrize("shape,kinds", SHAPES)
def test_symmetry_recovered_and_canonical_forms_agree(shape, kinds):
    rng = np.random.default_rng(zlib.crc32(repr((shape, kinds)).encode()))
    for _ in range(15):
        p = draw(rng, shape, kinds)
        q = apply_sequence(random_symmetry(rng, p), p)
        r = equivalent_bottleneck(p, q)
        assert r.applies and r.equivalent and r.certified, r
        # the returned symmetry, applied to p, gives q
        got = apply_sequence(r.symmetry, p)
        scale = path_norm_scale(q)
        for (Wa, ba), (Wb, bb) in zip(got, q):
            assert (
                np.max(np.abs(Wa - Wb)) <= 1e-9 * scale and np.max(np.abs(ba - bb)) <= 1e-9 * scale
            )
        try:
            cp, cq = canonical_form(p), canonical_form(q)
        except InputError as exc:  # an always-active block wider than n3: no canonical form
            assert "always-active" in str(exc)
            continue
        for (Wa, ba), (Wb, bb) in zip(cp, cq):
            assert np.allclose(Wa, Wb, atol=1e-8) and np.allclose(ba, bb, atol=1e-8 * scale)


@pytest.mark.parametrize("shape,kinds", SHAPES)
def test_near_misses_and_unrelated_pairs_are_not_equivalent(shape, kinds):
    rng = np.random.default_rng(1 + zlib.crc32(repr((shape, kinds)).encode()))
    for trial in range(6):
        p = draw(rng, shape, kinds)
        q = apply_sequence(random_symmetry(rng, p), p)
        scale = path_norm_scale(q)
        q = [(W.copy(), b.copy()) for W, b in q]
        which = trial % 3
        if which == 0:
            q[2][1][0] += 1e-6 * scale  # output bias
        elif which == 1:
            q[0][0][0] += 1e-5 * np.linalg.norm(q[0][0][0])  # a first-layer row
        else:
            q = draw(rng, shape, kinds)  # unrelated
        r = equivalent_bottleneck(p, q)
        assert r.applies and r.equivalent is False, r
        assert sampled_relative_difference(p, q) > 1e-9


def test_agrees_with_the_exact_engine():
    """Fast path == ground truth (exact region engine) on small pairs of every kind."""
    rng = np.random.default_rng(7)
    shapes = [
        ((3, 2, 3, 1), None),
        ((3, 3, 3, 1), [("hiding", 2), "dead", "dead"]),
        ((2, 2, 3, 1), ["mixed", "linear", "dead"]),
    ]
    checked = 0
    for shape, kinds in shapes:
        for trial in range(2):
            p = draw(rng, shape, kinds)
            q = apply_sequence(random_symmetry(rng, p), p)
            if trial % 2:
                q[2][1][0] += 1e-4 * path_norm_scale(q)
            fast = equivalent_bottleneck(p, q)
            assert fast.equivalent == ground_truth_equivalent(p, q) == (trial % 2 == 0)
            if trial == 0:
                assert ground_truth_equivalent(p, canonical_form(p))  # a point of the fiber
            checked += 1
    assert checked == 6


def test_canonical_form_is_idempotent_and_in_the_fiber():
    rng = np.random.default_rng(3)
    for shape, kinds in SHAPES:
        p = draw(rng, shape, kinds)
        try:
            c = canonical_form(p)
        except InputError:  # an always-active block wider than n3
            continue
        assert sampled_relative_difference(p, c) <= 1e-12
        if fast_path_reason(c) is None:
            c2 = canonical_form(c)
            for (Wa, ba), (Wb, bb) in zip(c, c2):
                assert np.allclose(Wa, Wb, atol=1e-9) and np.allclose(ba, bb, atol=1e-9)


def test_a_second_layer_flip_through_the_linear_block_is_recovered():
    p, q = linear_block_flip_pair()
    assert sampled_relative_difference(p, q) < 1e-12
    r = equivalent_bottleneck(p, q)
    assert r.applies and r.equivalent and r.certified
    assert "second_layer_flip" in [s.name for s in r.symmetry]
    got = apply_sequence(r.symmetry, p)
    assert max(np.max(np.abs(a[0] - b[0])) for a, b in zip(got, q)) < 1e-12


def test_a_dead_neuron_turned_always_active_is_recovered_by_block_refactor():
    """A dead neuron becomes always active to carry the linear term of a turned-around
    crossing neuron: the invariant decides, BlockRefactor + SecondLayerFlip connect."""
    p, q = dead_to_linear_pair()
    assert fast_path_reason(p) is None and fast_path_reason(q) is None
    assert sampled_relative_difference(p, q) < 1e-12 and ground_truth_equivalent(p, q)
    r = equivalent_bottleneck(p, q)
    assert r.applies and r.equivalent and r.certified
    names = [s.name for s in r.symmetry]
    assert "block_refactor" in names and "second_layer_flip" in names
    assert r.max_parameter_difference < 1e-12
    q[2][1][0] += 1e-6
    assert not equivalent_bottleneck(p, q).equivalent


def test_a_block_with_more_neurons_than_outputs_has_a_canonical_form():
    """Two always-active neurons with n3 = 1 < 2: the row space of the block can turn
    around the linear part (equivalent by the exact engine, row spaces differ, so no mixing
    connects them). The canonical block depends on the linear part L alone (rank 1 with
    entries of both signs here, so rank + 1 = 2 rows spanning rowspace(L) + span(1)): the
    canonical forms agree and their paths connect."""
    p, q = block_rowspace_pair()
    assert np.linalg.matrix_rank(np.vstack([p[1][0][1:], q[1][0][1:]])) == 3
    assert ground_truth_equivalent(p, q)
    cp, cq = canonical_form(p), canonical_form(q)
    for (Wa, ba), (Wb, bb) in zip(cp, cq):
        assert np.allclose(Wa, Wb, atol=1e-9) and np.allclose(ba, bb, atol=1e-9)
    L = p[2][0][:, 1:] @ p[1][0][1:]
    assert np.any(L < 0) and np.any(L > 0)
    assert np.sum(np.all(np.hstack([cp[1][0], cp[1][1][:, None]]) >= 0, axis=1)) == 2
    r = equivalent_bottleneck(p, q)
    assert r.applies and r.equivalent and r.certified
    assert r.max_parameter_difference < 1e-9
    q = [(W.copy(), b.copy()) for W, b in q]
    q[0][0][0, 0] += 1e-5
    assert not equivalent_bottleneck(p, q).equivalent


def test_outside_the_fast_path():
    rng = np.random.default_rng(0)
    p = bottleneck(rng, (3, 2, 3, 1))
    assert "tol = 0" in fast_path_reason(p, tol=0)
    assert not equivalent_bottleneck(p, p, tol=0).applies
    # n1 = 1, the first-layer kink cancelled by two ramps, no neuron to carry a linear part:
    # relu(1 - u) - relu(2 - u) has slope 0 just above u = 0
    one = [
        (np.array([[1.0, 0.5]]), np.zeros(1)),
        (np.array([[-1.0], [-1.0]]), np.array([1.0, 2.0])),
        (np.array([[1.0, -1.0]]), np.zeros(1)),
    ]
    assert "kink of the first-layer neuron is cancelled" in fast_path_reason(one)
    dead = bottleneck(rng, (3, 2, 2, 1), ["dead", "dead"])
    assert "no live" in fast_path_reason(dead)
    wide = [
        (np.ones((3, 2)), np.zeros(3)),
        (np.ones((2, 3)), np.zeros(2)),
        (np.ones((1, 2)), np.zeros(1)),
    ]
    assert "bottleneck" in fast_path_reason(wide)
    with pytest.raises(InputError, match="generic three-layer bottleneck"):
        canonical_form(dead)


def test_bench_symmetry_recovery_quick(capsys):
    rows = load_benchmark("bench_symmetry_recovery").main(["--quick"])
    assert rows and all(r["ours"] == r["trials"] for r in rows)  # ours recovers every one
    assert "Re-Basin" in capsys.readouterr().out
    # any depth: relu.equivalent against weight matching on normalized weights, same pairs
    deep = [r for r in rows if r.get("baseline") == "weight matching on normalized weights"]
    assert deep and all(r["matching"] == r["trials"] and r["baseline_s"] > 0 for r in deep)


def test_bench_bottleneck_equivalence_quick(capsys):
    rows = load_benchmark("bench_bottleneck_equivalence").main(["--quick", "--repeat", "1"])
    compared = [r for r in rows if "agree" in r]
    assert compared and all(r["agree"] for r in compared)  # same verdicts as the exact engine
    assert any(r["block"] for r in compared)  # the canonical block, too
    suite = [r for r in rows if "task" in r]
    assert len(suite) == len([r for r in rows if "block" in r]) and all(
        r["ours_s"] > 0 for r in suite
    )
    assert "fitted growth" in capsys.readouterr().out


# -- property tests: random and adversarial sign patterns ------------------------------------

ROW_KINDS = ("mixed", "dead", "linear", ("hiding", 0))


def _close_params(a, b, atol):
    return all(
        np.allclose(Wa, Wb, atol=atol) and np.allclose(ba, bb, atol=atol)
        for (Wa, ba), (Wb, bb) in zip(a, b)
    )


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n1=st.integers(2, 3),
    n3=st.integers(1, 2),
    kinds=st.lists(st.sampled_from(ROW_KINDS), min_size=1, max_size=4) | st.none(),
)
@example(seed=1_138_234_027, n1=2, n3=2, kinds=[("hiding", 0), "linear", "dead", "linear"])
def test_canonical_form_is_constant_on_random_orbits(seed, n1, n3, kinds):
    """For every sign pattern drawn on purpose (or Gaussian rows): two random points of the
    orbit (every named symmetry that applies, block refactors and second-layer flips
    included) have the same canonical form, and the symmetry found takes p to q."""
    rng = np.random.default_rng(seed)
    n2 = len(kinds) if kinds else int(rng.integers(2, 5))
    p = bottleneck(rng, (n1 + 1, n1, n2, n3), kinds)
    assume(fast_path_reason(p) is None)
    try:
        c = canonical_form(p)
    except InputError as exc:
        assert "was not decided within" in str(exc) or "always-active block" in str(exc)
        return
    q, seq = random_orbit_point(p, seed=rng)
    q2, _ = random_orbit_point(p, seed=rng)
    scale = path_norm_scale(p)
    for other in (q, q2):
        try:
            co = canonical_form(other)
        except InputError as exc:  # an orbit point whose block is too ill-conditioned
            assert "always-active block" in str(exc)
            continue
        assert _close_params(co, c, 1e-7 * max(scale, 1.0)), (seq, c)
    r = equivalent_bottleneck(p, q)
    assert r.applies and r.equivalent and r.certified, r
    assert _close_params(apply_sequence(r.symmetry, p), q, 1e-9 * max(path_norm_scale(q), 1.0))


@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    kinds=st.lists(st.sampled_from(ROW_KINDS), min_size=2, max_size=3) | st.none(),
)
def test_different_canonical_forms_have_a_witness(seed, kinds):
    """Canonical forms that differ => the exact engine finds a witness (2 -> 2 -> n2 -> 1,
    q a random orbit point of p with one weight moved)."""
    rng = np.random.default_rng(seed)
    n2 = len(kinds) if kinds else 2
    p = bottleneck(rng, (2, 2, n2, 1), kinds)
    assume(fast_path_reason(p) is None)
    q, _ = random_orbit_point(p, seed=rng)
    layer = int(rng.integers(0, 3))
    W = q[layer][0]
    W[tuple(int(rng.integers(0, k)) for k in W.shape)] += 0.05 * (1 + np.max(np.abs(W)))
    try:
        cp, cq = canonical_form(p), canonical_form(q)
    except InputError:
        return
    assume(not _close_params(cp, cq, 1e-6))
    r = relu.equivalent(p, q, method="regions")
    assert not r.equivalent and r.witness is not None and r.certified


def test_entries_within_tol_of_zero_are_set_to_zero_when_the_function_allows():
    """A weight-decayed entry (1e-12 of its row) in a crossing row: the fast path treats it
    as 0 (certified by the function-distance bound, reported in the note), canonical forms
    of p and of a symmetric copy agree; entries just under tol on a neuron that carries the
    whole function move it by more than tol: refused, with the bound."""
    rng = np.random.default_rng(11)
    p = draw(rng, (3, 2, 3, 1), ["mixed", "linear", "dead"])
    p[1][0][0, 1] = 1e-12 * np.max(np.abs(p[1][0][0]))
    q, _ = random_orbit_point(p, seed=3)
    assert fast_path_reason(p) is None
    r = equivalent_bottleneck(p, q)
    assert r.applies and r.equivalent and r.certified and "within tol of zero" in r.note
    assert _close_params(apply_sequence(r.symmetry, p), q, 1e-9 * path_norm_scale(q))
    assert _close_params(canonical_form(p), canonical_form(q), 1e-8)
    assert sampled_relative_difference(p, canonical_form(p)) <= 1e-9
    # four entries at 0.9 tol of a row that carries the function: the bound exceeds tol
    W1, b1 = np.eye(4)[:3], np.zeros(3)
    bad = [
        (W1, b1),
        (np.array([[1.0, -0.9e-9, -0.9e-9]]), np.array([-0.9e-9])),
        (np.array([[1.0]]), np.zeros(1)),
    ]
    why = fast_path_reason(bad)
    assert why is not None and "could move the function" in why
    assert not equivalent_bottleneck(bad, bad).applies


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n3=st.integers(1, 2),
    kinds=st.lists(
        st.sampled_from(("ramp", "dead", "linear", ("hiding", 0))), min_size=1, max_size=4
    )
    | st.none(),
)
def test_one_first_layer_neuron_canonical_form_is_constant_on_random_orbits(seed, n3, kinds):
    """n1 = 1 (ramp flips turn the first-layer neuron around, second-layer flips turn ramps
    into rising rows through the block): the canonical form is constant on random orbits
    and the symmetry found takes p to q."""
    rng = np.random.default_rng(seed)
    n2 = len(kinds) if kinds else int(rng.integers(2, 5))
    p = bottleneck(rng, (2, 1, n2, n3), kinds)
    assume(fast_path_reason(p) is None)
    c = canonical_form(p)
    q, seq = random_orbit_point(p, seed=rng)
    scale = path_norm_scale(p)
    assert _close_params(canonical_form(q), c, 1e-7 * max(scale, 1.0)), seq
    r = equivalent_bottleneck(p, q)
    assert r.applies and r.equivalent and r.certified, r
    assert _close_params(apply_sequence(r.symmetry, p), q, 1e-9 * max(path_norm_scale(q), 1.0))


def test_a_ramp_flip_is_recovered():
    """The two networks of docs/relu_symmetries.md (first-layer neuron turned around at a
    ramp): same canonical form, and the symmetry found contains the ramp flip."""
    p = [
        (np.array([[2.0, -1.0]]), np.array([0.5])),
        (np.array([[-1.5]]), np.array([3.0])),
        (np.array([[2.0]]), np.array([0.7])),
    ]
    q = [
        (np.array([[-3.0, 1.5]]), np.array([2.25])),
        (np.array([[-1.0]]), np.array([3.0])),
        (np.array([[-2.0]]), np.array([6.7])),
    ]
    assert ground_truth_equivalent(p, q)
    assert _close_params(canonical_form(p), canonical_form(q), 1e-9)
    r = equivalent_bottleneck(p, q)
    assert r.applies and r.equivalent and r.certified
    assert "ramp_flip" in [s.name for s in r.symmetry]
    assert _close_params(apply_sequence(r.symmetry, p), q, 1e-9)


@settings(max_examples=60, deadline=None)
@given(
    widths=st.sampled_from(
        [(3, 1, 3, 1), (2, 1, 2, 1), (3, 2, 3, 1), (2, 2, 3, 2), (4, 3, 4, 1), (3, 1, 1, 1)]
    ),
    seed=st.integers(0, 10_000),
)
@example(widths=(3, 1, 3, 1), seed=7)
def test_a_network_is_equivalent_to_its_own_canonical_form(widths, seed):
    """ReLUNet([3, 1, 3, 1]) seed 7 crashed here (an empty block of non-crossing rows)."""
    p = nm.ReLUNet(list(widths)).random_params(seed=seed)
    try:
        c = canonical_form(p)
    except nm.NeuromanifoldError:
        return  # a refusal with its reason (outside the fast path)
    assert nm.relu.equivalent(p, c).equivalent
    try:
        cc = canonical_form(c)
    except nm.NeuromanifoldError:
        return
    assert nm.relu.equivalent(p, cc).equivalent


def _planted_block(widths, dead, active, seed=0):
    """Gaussian weights with ``dead`` second-layer rows made nonpositive (dead on the
    orthant) and ``active`` nonnegative (always active)."""
    rng = np.random.default_rng(seed)
    p = [(rng.standard_normal((o, i)), rng.standard_normal(o)) for i, o in zip(widths, widths[1:])]
    W2, b2 = p[1]
    W2[:dead], b2[:dead] = -np.abs(W2[:dead]), -np.abs(b2[:dead])
    W2[dead : dead + active], b2[dead : dead + active] = (
        np.abs(W2[dead : dead + active]),
        np.abs(b2[dead : dead + active]),
    )
    return p


@pytest.mark.parametrize(
    "widths,dead,active,orbit_points",
    [
        ((32, 16, 32, 10), 2, 0, 2),  # 30 crossing rows in R^16: two sides of 15, each
        # annihilated in turn (the branch and bound before)
        ((784, 64, 32, 10), 3, 3, 2),  # 26 independent crossing rows: the least-rank route
        ((32, 16, 48, 10), 1, 0, 2),  # 47 crossing rows in R^16, one neuron for the block:
        # the wedge products (the branch and bound refused it)
        ((32, 16, 32, 10), 3, 3, 1),  # 26 crossing rows, six neurons for the block: the
        # branch and bound, past the 50,000 branches it once refused at (25 s a form, so
        # one orbit point: the suite's longest test)
    ],
)
def test_trained_sizes_with_dead_and_always_active_rows_have_a_canonical_form(
    widths, dead, active, orbit_points
):
    """More crossing neurons than can be enumerated and few neurons for the block (both
    were refused before): random orbit points (block refactors and second-layer flips
    among them) have the same canonical form, and the symmetry is recovered."""
    p = _planted_block(widths, dead, active)
    c = canonical_form(p)
    scale = path_norm_scale(p)
    for s in range(orbit_points):
        q, _ = random_orbit_point(p, seed=s)
        assert _close_params(canonical_form(q), c, 1e-7 * max(scale, 1.0))
        r = equivalent_bottleneck(p, q)
        assert r.equivalent and r.certified, r.note


def test_a_form_refused_for_its_block_still_leaves_a_verdict(monkeypatch):
    """32-16-32-10 with three dead and three always-active rows, the branch and bound held
    to 5,000 branches: the orientation search runs out, so the form refuses, saying why;
    equivalent_bottleneck still decides (the block mixed onto the other's), as the fast
    path's conditions do not include the form."""
    monkeypatch.setattr(block, "MAX_NODES", 5000)
    p = _planted_block((32, 16, 32, 10), 3, 3)
    assert fast_path_reason(p) is None
    with pytest.raises(InputError, match="not decided within 5000 branches.*SUBSET-SUM"):
        canonical_form(p)
    q, _ = random_orbit_point(p, seed=0)
    r = equivalent_bottleneck(p, q)
    assert r.applies and r.equivalent and r.certified, r.note


def test_an_ill_scaled_block_cone_gets_a_form_or_a_refusal():
    """Always-active rows whose columns span ten orders of magnitude (C(64, 3) facet subsets:
    the analytic-center rows): a LinAlgError and a block of more rows than neurons came out
    of the first version; each seed now has a form shared by an orbit point, or a refusal."""
    for seed in range(4):
        rng = np.random.default_rng(seed)
        d, n1, nc, m, n3 = 64, 64, 3, 4, 5
        W2 = rng.standard_normal((nc + m, n1))
        b2 = rng.standard_normal(nc + m)
        W2[nc:] = np.abs(W2[nc:]) * 10.0 ** (-10 * rng.random(n1))[None, :]
        b2[nc:] = np.abs(b2[nc:])
        p = [
            (rng.standard_normal((n1, d)), rng.standard_normal(n1)),
            (W2, b2),
            (rng.standard_normal((n3, nc + m)), rng.standard_normal(n3)),
        ]
        try:
            c = canonical_form(p)
        except InputError as exc:
            assert "always-active block" in str(exc)
            continue
        assert all(W.shape == V.shape for (W, _), (V, _) in zip(c, p))
        q, _ = random_orbit_point(p, seed=seed)
        assert _close_params(canonical_form(q), c, 1e-7 * max(path_norm_scale(p), 1.0))
        assert equivalent_bottleneck(p, c).equivalent


def test_equivalent_does_not_wait_for_the_thorough_orientation(monkeypatch):
    """equivalent_bottleneck decides from the block as it is when the orientation choice
    refuses, so it skips the split route (tens of seconds at 64-32-64-10 with four dead
    rows, where it decided in 15 s before; found by review) and keeps the small budget."""

    def split(*args):
        raise AssertionError("the split route ran inside equivalent_bottleneck")

    monkeypatch.setattr(block, "_by_split_projections", split)
    p = _planted_block((32, 16, 32, 10), 2, 0)
    q, _ = random_orbit_point(p, seed=0)
    r = equivalent_bottleneck(p, q)
    assert r.applies and r.equivalent and r.certified, r.note
