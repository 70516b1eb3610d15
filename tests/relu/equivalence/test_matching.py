"""The compiled certified matching (relu/_equivalence/matching.py) against its numpy twins: the
assignment against scipy's, the match, path norms and bound against
``match_hidden_neurons``, ``path_norm_scale`` and ``function_distance_bound``, and the hand-backs
(non-finite entries, chains near the ends of the float range, no positive match)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from neuromanifold import ParameterError, relu
from neuromanifold.relu._bounds.parameters import function_distance_bound, path_norm_scale
from neuromanifold.relu._equivalence.equivalence import (
    _compiled_match,
    _flat_layers,
    by_matching,
    match_hidden_neurons,
)
from neuromanifold.relu._equivalence.matching import (
    FALLBACK,
    MATCHED,
    NO_MATCH,
    NOT_FINITE,
    lsap_max,
    match_kernel,
    path_norm_kernel,
)

_U = 2.0**-53


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 14), ties=st.booleans())
def test_lsap_max_is_an_optimal_assignment(seed, n, ties):
    rng = np.random.default_rng(seed)
    # small integers make many optimal assignments: the optimum must still be reached
    S = rng.integers(-3, 4, (n, n)).astype(float) if ties else rng.standard_normal((n, n))
    col = lsap_max(S)
    assert sorted(col.tolist()) == list(range(n))
    _, ref = linear_sum_assignment(S, maximize=True)
    assert S[np.arange(n), col].sum() == pytest.approx(S[np.arange(n), ref].sum(), abs=1e-12)
    if not ties:
        assert col.tolist() == ref.tolist()


def _planted(rng, widths, seed):
    p = relu.ReLUNet(widths).random_params(seed)
    q = [(W.copy(), b.copy()) for W, b in p]
    for l in range(len(q) - 1):
        n = q[l][0].shape[0]
        perm, s = rng.permutation(n), np.exp(rng.uniform(-np.log(4), np.log(4), n))
        q[l] = (q[l][0][perm] * s[:, None], q[l][1][perm] * s)
        q[l + 1] = (q[l + 1][0][:, perm] / s[None, :], q[l + 1][1])
    return p, q


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from(
        [[1, 1], [3, 2], [2, 3, 1], [8, 6, 8, 1], [5, 7, 3, 4, 2], [4, 9, 9, 9, 9, 3]]
    ),
    nudge=st.sampled_from([0.0, 1e-12, 1e-6, 1e-2]),
)
def test_match_kernel_agrees_with_the_numpy_path(seed, widths, nudge):
    rng = np.random.default_rng(seed)
    p, q = _planted(rng, widths, seed)
    q[0][1][0] += nudge
    P, dims, offsets = _flat_layers(p)
    Q, _, _ = _flat_layers(q)
    code, perms, scales, scale_p, scale_q, bound = match_kernel(P, Q, dims, offsets)
    assert code == MATCHED
    assert scale_p == pytest.approx(path_norm_scale(p), rel=1e-13)
    assert scale_q == pytest.approx(path_norm_scale(q), rel=1e-13)
    found, image = match_hidden_neurons(p, q)
    at = 0
    for perm, s in found:
        assert perms[at : at + perm.size].tolist() == perm.tolist()
        np.testing.assert_allclose(scales[at : at + perm.size], s, rtol=1e-13)
        at += perm.size
    ref = function_distance_bound(image, q) + 4 * _U * len(p) * path_norm_scale(p)
    # the two images may differ in last bits (sums in another order): so may the bounds,
    # by the rounding of the parameters
    assert bound == pytest.approx(ref, rel=1e-10, abs=64 * _U * len(p) * scale_p)
    # the bound holds at sampled inputs (it bounds |f_p - f_q| / max(1, |x|_inf))
    X = 3 * rng.standard_normal((64, widths[0]))
    gap = np.abs(relu.forward(p, X) - relu.forward(q, X)).max(axis=1)
    assert np.all(gap <= bound * np.maximum(1, np.abs(X).max(axis=1)) * (1 + 1e-12))


def test_the_kernel_hands_back_where_it_cannot_decide():
    rng = np.random.default_rng(0)
    p, q = _planted(rng, [3, 4, 2, 1], 0)
    P, dims, offsets = _flat_layers(p)
    Q, _, _ = _flat_layers(q)
    bad = Q.copy()
    bad[3] = np.nan
    assert match_kernel(P, bad, dims, offsets)[0] == NOT_FINITE
    # a chain of layers scaled by 2**-600, without biases, underflows: the exponent-tracked
    # numpy chain decides
    tiny = [(W * 2.0**-600, 0 * b) for W, b in p]
    T, _, _ = _flat_layers(tiny)
    assert path_norm_kernel(T, dims, offsets) == -1.0
    assert match_kernel(T, T, dims, offsets)[0] == FALLBACK
    # p against itself: a telescoping sum of 0, the rounding term of the match left
    code, _, _, scale_p, _, bound = match_kernel(P, P, dims, offsets)
    assert code == MATCHED and bound == pytest.approx(4 * _U * 3 * scale_p, rel=1e-9)
    # a neuron of q turned around matches no positive multiple of one of p
    flipped = [(-q[0][0], -q[0][1])] + q[1:]
    F, _, _ = _flat_layers(flipped)
    assert match_kernel(P, F, dims, offsets)[0] == NO_MATCH


def _layers_scaled(params, exponents):
    """Layer l's weights times ``2**exponents[l]``, its bias times their running sum (the
    same function times ``2**sum(exponents)``)."""
    out, acc = [], 0
    for (W, b), k in zip(params, exponents):
        acc += k
        out.append((W * 2.0**k, b * 2.0**acc))
    return out


@pytest.mark.parametrize("case", ["scaled", "underflowing", "self", "float32", "list"])
def test_by_matching_gives_one_answer_on_both_paths(case):
    """Inputs the kernel hands back (a chain whose plain products underflow) or does not
    take (float32, nested lists) go through the numpy path; the verdict and the symmetry
    are the same either way."""
    rng = np.random.default_rng(1)
    p, q = _planted(rng, [4, 5, 3, 3, 2], 1)
    if case == "scaled":
        p, q = _layers_scaled(p, [-400, 0, 0, 0]), _layers_scaled(q, [-400, 0, 0, 0])
        assert _compiled_match(p, q)[0] == MATCHED
    elif case == "underflowing":  # the plain chain meets 2**-1500 after three layers
        exponents = [-500, -500, -500, 1000]
        p, q = _layers_scaled(p, exponents), _layers_scaled(q, exponents)
        assert _compiled_match(p, q)[0] == FALLBACK
    elif case == "self":
        q = [(W.copy(), b.copy()) for W, b in p]
    elif case == "list":
        p = [(W.tolist(), b.tolist()) for W, b in p]
    elif case == "float32":  # the same network as float32 and float64 arrays
        p = [(W.astype(np.float32), b.astype(np.float32)) for W, b in p]
        q = [(W.astype(np.float64), b.astype(np.float64)) for W, b in p]
        assert _compiled_match(p, q) is None
    r = by_matching(p, q, None, 1e-9)
    assert r is not None and r.equivalent and r.certified and r.method == "matching"
    reference = by_matching(
        [(np.asarray(W, dtype=float).tolist(), np.asarray(b, dtype=float).tolist()) for W, b in p],
        q,
        None,
        1e-9,
    )
    assert len(r.symmetry) == len(reference.symmetry)
    for a, b in zip(r.symmetry, reference.symmetry):  # sums in another order: last bits
        assert type(a) is type(b) and a.layer == b.layer
        if hasattr(a, "perm"):
            assert a.perm == b.perm
        else:
            np.testing.assert_allclose(a.scales, b.scales, rtol=1e-13)
    # images rounded apart in their last bits: bounds at the level of rounding may differ
    assert r.max_difference == pytest.approx(reference.max_difference, rel=1e-9, abs=1e-14)


def test_non_finite_input_is_still_refused():
    p, q = _planted(np.random.default_rng(2), [3, 4, 2, 1], 2)
    q[1][0][0, 0] = np.inf
    with pytest.raises(ParameterError, match="finite"):
        relu.equivalent(p, q)


def test_the_numpy_path_does_not_certify_through_subnormal_entries():
    """An image entry that rounds to a subnormal loses more than the rounding term allows:
    the numpy path (where the kernel hands such chains back) must not certify. Found by
    review: p and q differ by 5 % relative, and the match reported 1.3e-15."""
    t = 2.0**-1074
    A = np.array
    p = [
        (A([[2.0**-400, 0], [0, 2.0**500]]), A([0.0, 0])),
        (A([[2.0**-500, 28 * t]]), A([0.0])),
        (A([[2.0**560]]), A([0.0])),
    ]
    q = [
        (A([[2.0**-400, 0], [0, 3 * 2.0**500]]), A([0.0, 0])),
        (A([[2.0**-500, 9 * t]]), A([0.0])),
        (A([[2.0**560]]), A([0.0])),
    ]
    assert by_matching(p, q, None, 1e-9) is None
    r = relu.equivalent(p, q)
    assert r.equivalent is False and r.certified
    tiny = [(A([[1.0]]), A([0.0])), (A([[28 * t]]), A([0.0]))]
    assert by_matching(tiny, [(A([[3.0]]), A([0.0])), (A([[9 * t]]), A([0.0]))], None, 1e-9) is None


def test_row_norms_beyond_the_float_range_decide_nothing():
    big = [([[2.0**600]], [0.0]), ([[1.0]], [0.0])]  # lists: the numpy path
    assert by_matching(big, big, None, 1e-9) is None
    assert relu.equivalent(big, big).equivalent
