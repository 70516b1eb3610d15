"""Canonical form and the polynomial-time equivalence test of bottleneck networks
(relu._canonical): the symmetry found takes p to q; canonical forms agree iff the ground
truth says equivalent, on pairs built from every named symmetry and on near misses."""

import zlib

import numpy as np
import pytest
from canonical_support import block_rowspace_pair, dead_to_linear_pair, linear_block_flip_pair
from support import load_benchmark
from symmetry_support import bottleneck, ground_truth_equivalent, sampled_relative_difference

from neuromanifold import InputError
from neuromanifold._tolerance import path_norm_scale
from neuromanifold.relu._canonical import canonical_form, equivalent_bottleneck, fast_path_reason
from neuromanifold.relu.symmetries import (DeadNeuronMove, Flip, HidingTranslation,
                                           LinearBlockMixing, Permutation, Scaling,
                                           apply_sequence)


def random_symmetry(rng, p):
    """A random chain of named symmetries that apply to p (every kind that applies)."""
    (W1, b1), (W2, b2), (W3, _) = p
    n1, n2, n3 = W1.shape[0], W2.shape[0], W3.shape[0]
    out = [Scaling(1, rng.uniform(0.3, 3.0, n1)), Scaling(2, rng.uniform(0.3, 3.0, n2))]
    cur = apply_sequence(out, p)
    S = np.hstack([cur[1][0], cur[1][1][:, None]])
    for j in range(n2):
        if np.all(S[j] <= 0):
            out.append(DeadNeuronMove(j, -rng.uniform(0.1, 2, n1 + 1), rng.standard_normal(n3)))
    lin = [j for j in range(n2) if np.all(S[j] >= 0)]
    if lin:
        M = np.eye(len(lin)) + rng.uniform(0, 0.3, (len(lin), len(lin)))
        out.append(LinearBlockMixing(tuple(lin), M, tuple(rng.uniform(0, 1, len(lin)))))
    cur = apply_sequence(out, p)
    for i in range(n1):
        tr = HidingTranslation(i, 0.0).applies(cur)
        if tr.applies:
            lo, hi = tr.valid_set
            out.append(HidingTranslation(i, rng.uniform(lo, min(hi, lo + 3.0))))
            cur = apply_sequence(out, p)
            ks = tuple(k for k in range(n1) if k != i and rng.random() < 0.6)
            if ks and Flip(i, ks).applies(cur).applies:
                out.append(Flip(i, ks))
    out += [Permutation(1, rng.permutation(n1)), Permutation(2, rng.permutation(n2))]
    return out


SHAPES = [
    ((4, 3, 4, 1), None),
    ((3, 2, 3, 2), None),
    ((3, 3, 3, 1), [("hiding", 1), "dead", "dead"]),             # flips and translation
    ((3, 3, 3, 1), [("hiding", 0), ("hiding", 0), "dead"]),      # translation, no flip
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
            assert np.max(np.abs(Wa - Wb)) <= 1e-9 * scale and np.max(np.abs(ba - bb)) <= 1e-9 * scale
        try:
            cp, cq = canonical_form(p), canonical_form(q)
        except InputError as exc:   # an always-active block wider than n3: no canonical form
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
            q[2][1][0] += 1e-6 * scale                       # output bias
        elif which == 1:
            q[0][0][0] += 1e-5 * np.linalg.norm(q[0][0][0])  # a first-layer row
        else:
            q = draw(rng, shape, kinds)                      # unrelated
        r = equivalent_bottleneck(p, q)
        assert r.applies and r.equivalent is False, r
        assert sampled_relative_difference(p, q) > 1e-9


def test_agrees_with_the_exact_engine():
    """Fast path == ground truth (exact region engine) on small pairs of every kind."""
    rng = np.random.default_rng(7)
    shapes = [((3, 2, 3, 1), None), ((3, 3, 3, 1), [("hiding", 2), "dead", "dead"]),
              ((2, 2, 3, 1), ["mixed", "linear", "dead"])]
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
        except InputError:          # an always-active block wider than n3
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
    one = bottleneck(rng, (2, 1, 2, 1), ["ramp", "ramp"])
    assert "n1 = 1" in fast_path_reason(one)
    dead = bottleneck(rng, (3, 2, 2, 1), ["dead", "dead"])
    assert "no live" in fast_path_reason(dead)
    wide = [(np.ones((3, 2)), np.zeros(3)), (np.ones((2, 3)), np.zeros(2)),
            (np.ones((1, 2)), np.zeros(1))]
    assert "bottleneck" in fast_path_reason(wide)
    with pytest.raises(InputError, match="generic three-layer bottleneck"):
        canonical_form(dead)


def test_bench_symmetry_recovery_quick(capsys):
    rows = load_benchmark("bench_symmetry_recovery").main(["--quick"])
    assert rows and all(r["ours"] == r["trials"] for r in rows)   # ours recovers every one
    assert "Re-Basin" in capsys.readouterr().out


def test_bench_bottleneck_equivalence_quick(capsys):
    rows = load_benchmark("bench_bottleneck_equivalence").main(["--quick", "--repeat", "1"])
    compared = [r for r in rows if "baseline" in r]
    assert compared and all(r["agree"] for r in compared)    # same verdicts as the exact engine
    assert "fitted growth" in capsys.readouterr().out
