"""The layered rank of sampled regions equals the rational rank of their stacked rows, modulo
the prime and (on Gaussian weights) in floats, on random, planted and degenerate networks;
in floats it matches a dense SVD; and the pattern certificate is never wrong."""

from fractions import Fraction

import flint
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold._tolerance import numerical_rank
from neuromanifold.exact import to_fmpq
from neuromanifold.relu import ReLUNet
from neuromanifold.relu._engine.cells import ExactNet
from neuromanifold.relu._fundim.fundim import region_rows
from neuromanifold.relu._fundim.layered_rank import certified_pattern, layered_rank
from tests.support.relu import dyadic_net


def _patterns(Ws, bs, X):
    out, a = [], X
    for W, b in zip(Ws[:-1], bs[:-1]):
        z = a @ W.T + b
        out.append(z > 0)
        a = np.maximum(z, 0.0)
    return [[m[i] for m in out] for i in range(X.shape[0])]


def _regions(p, rng, n=60):
    """Distinct patterns of random points (several scales), each certified exactly."""
    Ws, bs = [W for W, _ in p], [b for _, b in p]
    X = rng.standard_normal((n, Ws[0].shape[1])) * np.exp(rng.uniform(-1, 2, (n, 1)))
    seen, points = set(), []
    for x, pats in zip(X, _patterns(Ws, bs, X)):
        key = tuple(np.concatenate(pats))
        if key not in seen and certified_pattern(Ws, bs, x, pats):
            seen.add(key)
            points.append((x, pats))
    return Ws, bs, points


def _stacked_rows(p, points):
    """Every region's rows, exactly (the ground truth)."""
    enet = ExactNet(p)
    rows = []
    for x, pats in points:
        rows += region_rows(
            enet, [list(map(bool, m)) for m in pats], [to_fmpq(float(v)) for v in x]
        )[0]
    return rows


def _exact_rank(rows, P):
    return int(flint.fmpq_mat(len(rows), P, [v for r in rows for v in r]).rank())


def _planted(kind, rng, widths):
    p = [(W.copy(), b.copy()) for W, b in ReLUNet(widths).random_params(int(rng.integers(10**6)))]
    if kind == "dead":  # a second-layer neuron off on every sampled region
        p[1][0][0] = -np.abs(p[1][0][0])
        p[1][1][0] = -10.0
    elif kind == "zero row":  # a first-layer neuron with a zero row of H
        p[0][0][0] = 0.0
        p[0][1][0] = 0.0
    elif kind == "duplicate" and widths[1] > 1:  # two first-layer neurons, parallel rows
        p[0][0][1], p[0][1][1] = 2 * p[0][0][0], 2 * p[0][1][0]
    elif kind == "dyadic":
        p = [(np.asarray(W, float), np.asarray(b, float)) for W, b in dyadic_net(rng, widths)]
    return p


widths_st = st.lists(st.integers(1, 4), min_size=3, max_size=5)
kinds = st.sampled_from(["generic", "dead", "zero row", "duplicate", "dyadic"])


def _layered_and_rational(widths, kind, seed, **how):
    """``(layered rank, rational rank of the stacked rows)`` of a planted network's
    sampled regions, or None when no point was certified."""
    rng = np.random.default_rng(seed)
    p = _planted(kind, rng, widths)
    Ws, bs, points = _regions(p, rng)
    if not points:
        return None
    P = sum(W.size + b.size for W, b in p)
    found = layered_rank(Ws, bs, [pats for _, pats in points], seed=seed, **how)
    return found, _exact_rank(_stacked_rows(p, points), P)


@settings(max_examples=40, deadline=None)
@given(widths=widths_st, kind=kinds, seed=st.integers(0, 10**6))
def test_exact_layered_rank_is_the_rational_rank(widths, kind, seed):
    out = _layered_and_rational(widths, kind, seed, exact=True)
    if out is None:
        return
    found, truth = out
    # modulo a prime the rank can only drop, and the random subspaces only lose rank:
    # never above, and equal but for a probability-zero event
    assert found.rank == truth
    assert sum(found.levels) == found.rank


@settings(max_examples=40, deadline=None)
@given(
    widths=widths_st,
    kind=st.sampled_from(["generic", "dead", "zero row", "duplicate"]),
    seed=st.integers(0, 10**6),
)
def test_float_layered_rank_is_the_rational_rank_on_gaussian_weights(widths, kind, seed):
    out = _layered_and_rational(widths, kind, seed, tol=1e-9)
    if out is None:
        return
    found, truth = out
    # Gaussian weights: the gap between counted and dropped singular values is wide
    assert found.rank == truth
    if found.smallest_counted is not None and found.largest_dropped is not None:
        assert found.smallest_counted > 1e3 * found.largest_dropped


def test_float_rank_matches_a_dense_svd_at_a_moderate_size():
    p = ReLUNet([12, 10, 8, 6, 3]).random_params(3)
    rng = np.random.default_rng(0)
    Ws, bs, points = _regions(p, rng, n=400)
    rows = np.array([[float(v) for v in r] for r in _stacked_rows(p, points)])
    dense = numerical_rank(rows, 1e-9)[0]
    found = layered_rank(Ws, bs, [pats for _, pats in points], tol=1e-9)
    assert found.rank == dense
    assert found.levels[0] == 10 * 13  # the first layer's factor: full
    assert layered_rank(Ws, bs, [pats for _, pats in points], exact=True).rank == dense


def test_the_direct_level_has_a_size_limit():
    p = ReLUNet([2, 3, 80, 80, 2]).random_params(0)
    Ws, bs, points = _regions(p, np.random.default_rng(0), n=10)
    assert layered_rank(Ws, bs, [pats for _, pats in points], tol=1e-9) is None


def test_needs_a_hidden_layer():
    with pytest.raises(ValueError, match="hidden layer"):
        layered_rank([np.ones((1, 2))], [np.zeros(1)], [[]])


# -- the pattern certificate ----------------------------------------------------------------
def _exact_signs(p, x):
    a = [Fraction(float(v)) for v in x]
    out = []
    for W, b in p[:-1]:
        z = [
            sum((Fraction(float(w)) * v for w, v in zip(row, a)), Fraction(float(c)))
            for row, c in zip(W, b)
        ]
        out.append(z)
        a = [max(v, Fraction(0)) for v in z]
    return out


@settings(max_examples=60, deadline=None)
@given(widths=widths_st, seed=st.integers(0, 10**6), dyadic=st.booleans())
def test_a_certified_pattern_is_the_exact_one(widths, seed, dyadic):
    rng = np.random.default_rng(seed)
    p = _planted("dyadic" if dyadic else "generic", rng, widths)
    Ws, bs = [W for W, _ in p], [b for _, b in p]
    # small integers give exact zeros: points on a bent hyperplane must be refused
    X = rng.integers(-2, 3, (20, widths[0])) / 2 if dyadic else rng.standard_normal((20, widths[0]))
    for x, pats in zip(X, _patterns(Ws, bs, X)):
        if certified_pattern(Ws, bs, x, pats):
            for z, m in zip(_exact_signs(p, x), pats):
                assert all((v > 0) if s else (v < 0) for v, s in zip(z, m))


def test_a_point_on_a_kink_is_not_certified():
    W1, b1 = np.array([[1.0, -1.0], [1.0, 1.0]]), np.zeros(2)
    Ws, bs = [W1, np.ones((1, 2))], [b1, np.zeros(1)]
    x = np.array([0.5, 0.5])  # the first neuron's pre-activation is exactly 0
    assert not certified_pattern(Ws, bs, x, [np.array([False, True])])
    assert not certified_pattern(Ws, bs, x, [np.array([True, True])])
    assert certified_pattern(Ws, bs, np.array([0.5, 0.25]), [np.array([True, True])])
