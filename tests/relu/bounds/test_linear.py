"""Linear bound propagation: every bound holds at every sampled point (one network's
neurons, two networks' difference, the two side by side; both ways of bounding the hidden
layers), a wrong relaxation is caught by the same check, and the difference bound of two
nearby networks is of the size of their difference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold.relu import ReLUNet
from neuromanifold.relu._bounds import linear
from neuromanifold.relu._bounds.linear import (
    difference_chain,
    network_chain,
    product_chain,
    propagate,
)

ARCHITECTURES = [[2, 5, 1], [3, 6, 5, 2], [4, 8, 8, 8, 3], [1, 3, 3, 1]]


def _pre_activations(params, X):
    out, h = [], X
    for l, (W, b) in enumerate(params):
        z = h @ W.T + b
        out.append(z)
        h = np.maximum(z, 0.0)
    return out


def _boxes(rng, d, k):
    """k random boxes in [-2, 2]^d, some coordinates fixed (lower == upper)."""
    a, b = rng.uniform(-2, 2, (k, d)), rng.uniform(-2, 2, (k, d))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    fixed = rng.random((k, d)) < 0.2
    hi = np.where(fixed, lo, hi)
    return lo, hi


def _points(rng, lo, hi, n=400):
    """Points of each box: uniform and vertices, ``(k, n, d)``."""
    k, d = lo.shape
    t = rng.random((k, n, d))
    t[:, : n // 4] = rng.random((k, n // 4, d)) < 0.5
    return lo[:, None] + t * (hi - lo)[:, None]


def _violations(p, q, rng, *, intermediate="backward", num_boxes=6):
    """How many sampled values fall outside the bounds: one network's hidden neurons and
    outputs, the difference chain's (a, d, a + d) per layer and its outputs, the
    product chain's outputs. The samples are computed in floats, the bounds hold for
    the exact values: a value counts outside beyond the samples' own rounding (1e-12
    relative to the layer's size), far below what a wrong relaxation moves."""
    d = p[0][0].shape[1]
    lo, hi = _boxes(rng, d, num_boxes)
    X = _points(rng, lo, hi)
    bad = 0

    def outside(vals, lower, upper):
        slack = 1e-12 * max(1.0, float(np.max(np.abs(vals), initial=0.0)))
        return int(np.sum(vals < lower - slack) + np.sum(vals > upper + slack))

    for k in range(num_boxes):
        Z = _pre_activations(p, X[k])
        bounds, upper, _ = propagate(
            network_chain(p), lo[k : k + 1], hi[k : k + 1], intermediate=intermediate
        )
        for (l, u), z in zip(bounds, Z[:-1]):
            bad += outside(z, l[0], u[0])
        m = Z[-1].shape[1]
        bad += outside(Z[-1], -upper[0, m:], upper[0, :m])
        if q is None:
            continue
        Zq = _pre_activations(q, X[k])
        diff = Zq[-1] - Z[-1]
        for chain in (difference_chain(p, q), product_chain(p, q)):
            bounds, upper, _ = propagate(
                chain, lo[k : k + 1], hi[k : k + 1], intermediate=intermediate
            )
            bad += outside(diff, -upper[0, m:], upper[0, :m])
        bounds, _, _ = propagate(
            difference_chain(p, q), lo[k : k + 1], hi[k : k + 1], intermediate=intermediate
        )
        for (l, u), a, b in zip(bounds, Z[:-1], Zq[:-1]):
            vals = np.hstack([a, b - a, b])
            bad += outside(vals, l[0], u[0])
    return bad


def _perturbed(p, rng, size):
    return [
        (W + size * rng.standard_normal(W.shape), b + size * rng.standard_normal(b.shape))
        for W, b in p
    ]


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from(ARCHITECTURES),
    size=st.sampled_from([0.0, 1e-3, 0.1, 1.0]),
    intermediate=st.sampled_from(["backward", "forward"]),
)
def test_every_bound_holds_at_every_sampled_point(seed, widths, size, intermediate):
    rng = np.random.default_rng(seed)
    p = ReLUNet(widths).random_params(seed=seed)
    q = _perturbed(p, rng, size)
    assert _violations(p, q, rng, intermediate=intermediate) == 0


def test_bounds_hold_where_rounding_decides():
    # equal networks: the difference is 0 and every bound of it rests on the rounding terms
    p = ReLUNet([3, 7, 7, 2]).random_params(seed=3)
    p = [(W * 1e8, b * 1e8) for W, b in p]
    lo, hi = np.full((1, 3), -1.0), np.full((1, 3), 1.0)
    _, upper, _ = propagate(difference_chain(p, p), lo, hi)
    assert np.all(upper >= 0) and np.max(upper) < 1e-3


@pytest.mark.parametrize("mutation", ["upper_slope", "lower_slope", "difference_chord"])
def test_a_wrong_relaxation_is_caught(monkeypatch, mutation):
    """The check above must fail on a relaxation that is not one: a chord too flat, a
    lower slope above 1, the difference's chord through the wrong end."""
    original, original_diff = linear._relu_relaxation, linear._difference_relaxation

    def wrong(lo, hi, slope):
        s, t, low = original(lo, hi, slope)
        if mutation == "upper_slope":
            return s * 0.8, t, low
        return s, t, np.where((lo < 0) & (hi > 0), 1.5, low)

    def wrong_difference(al, au, dl, du, bl, bu, slope):
        r = original_diff(al, au, dl, du, bl, bu, slope)
        n = al.shape[1]
        u0 = r.u0.copy()
        u0[:, n:] = np.where((dl < 0) & (du > 0), 0.0, u0[:, n:])  # the chord through 0
        return linear.Relaxation(
            U=r.U, u0=u0, L=r.L, l0=r.l0, post_abs=r.post_abs, pre_abs=r.pre_abs
        )

    if mutation == "difference_chord":
        monkeypatch.setattr(linear, "_difference_relaxation", wrong_difference)
    else:
        monkeypatch.setattr(linear, "_relu_relaxation", wrong)
    rng = np.random.default_rng(0)
    found = 0
    for seed in range(6):
        p = ReLUNet([3, 6, 5, 2]).random_params(seed=seed)
        found += _violations(p, _perturbed(p, rng, 0.3), rng)
    assert found > 0


def test_the_difference_bound_is_of_the_size_of_the_difference():
    rng = np.random.default_rng(1)
    p = ReLUNet([8, 32, 32, 4]).random_params(seed=1)
    lo, hi = np.full((1, 8), -1.0), np.full((1, 8), 1.0)
    own = np.max(propagate(network_chain(p), lo, hi)[1])
    for size in (1e-2, 1e-4, 1e-6):
        q = _perturbed(p, rng, size)
        diff = np.max(propagate(difference_chain(p, q), lo, hi)[1])
        side_by_side = np.max(propagate(product_chain(p, q), lo, hi)[1])
        assert diff < 1e4 * size * own / 10 and side_by_side > own
    assert np.max(propagate(difference_chain(p, p), lo, hi)[1]) < 1e-12


def test_product_chain_takes_two_widths():
    p = ReLUNet([3, 5, 4, 2]).random_params(seed=0)
    q = ReLUNet([3, 7, 2, 2]).random_params(seed=1)
    rng = np.random.default_rng(0)
    lo, hi = _boxes(rng, 3, 3)
    X = _points(rng, lo, hi)
    _, upper, _ = propagate(product_chain(p, q), lo, hi)
    for k in range(3):
        diff = _pre_activations(q, X[k])[-1] - _pre_activations(p, X[k])[-1]
        assert np.all(diff <= upper[k, :2]) and np.all(-diff <= upper[k, 2:])


def test_neuron_bounds_are_within_the_interval_bounds_and_hold():
    from neuromanifold.relu._bounds.interval import box_bounds
    from neuromanifold.relu._bounds.linear import neuron_bounds
    from neuromanifold.relu._core.domain import Domain

    rng = np.random.default_rng(7)
    p = ReLUNet([4, 12, 12, 12, 2]).random_params(seed=7)
    lo, hi = -np.ones(4), np.full(4, 0.5)
    tight, loose = neuron_bounds(p, lo, hi), box_bounds(p, Domain.box(lo, hi))[:-1]
    X = rng.uniform(lo, hi, (20000, 4))
    Z = _pre_activations(p, X)[:-1]
    narrower = 0
    for (l, u), (il, iu), z in zip(tight, loose, Z):
        assert np.all(il <= l) and np.all(u <= iu)
        assert np.all(z >= l - 1e-12) and np.all(z <= u + 1e-12)
        narrower += int(np.sum(u - l < iu - il))
    assert narrower > 0  # the linear bounds are the tighter on deep neurons


# -- optimized slopes (alpha) -------------------------------------------------------------


def _chains(p, q):
    return {
        "network": network_chain(p),
        "difference": difference_chain(p, q),
        "product": product_chain(p, q),
    }


def _truth(name, p, q, X):
    """The chain's outputs at ``X`` (one network's outputs, or ``f_q - f_p``)."""
    out = _pre_activations(p, X)[-1]
    return out if name == "network" else _pre_activations(q, X)[-1] - out


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from(ARCHITECTURES),
    size=st.sampled_from([1e-3, 0.1, 1.0]),
)
def test_optimized_slopes_give_bounds_that_hold_and_are_no_looser(seed, widths, size):
    rng = np.random.default_rng(seed)
    p = ReLUNet(widths).random_params(seed=seed)
    q = _perturbed(p, rng, size)
    lo, hi = _boxes(rng, widths[0], 3)
    X = _points(rng, lo, hi)
    for name, chain in _chains(p, q).items():
        bounds, crown, _ = propagate(chain, lo, hi)
        slopes = linear.optimize_slopes(chain, lo, hi, bounds, steps=15)
        assert all(np.all((s >= 0) & (s <= 1)) for s in slopes)
        alpha, _ = linear.optimized_output_bounds(chain, lo, hi, bounds, steps=15)
        m = alpha.shape[1] // 2
        for k in range(len(lo)):
            vals = _truth(name, p, q, X[k])
            slack = 1e-12 * max(1.0, float(np.max(np.abs(vals))))
            assert np.all(vals <= alpha[k, :m] + slack) and np.all(-vals <= alpha[k, m:] + slack)
        # the best slopes are kept per box: the largest row no looser than CROWN's (up to
        # the float rounding terms, which the two evaluate on different coefficients)
        assert np.all(alpha.max(axis=1) <= crown.max(axis=1) * (1 + 1e-9) + 1e-9)


def test_the_slopes_gradient_is_the_bounds_derivative():
    """The reverse pass of the back substitution against a finite difference, on every
    chain, for every unstable neuron of the first hidden layer whose slope moves the
    bound."""
    rng = np.random.default_rng(0)
    p = ReLUNet([4, 12, 12, 3]).random_params(seed=0)
    q = _perturbed(p, rng, 0.1)
    lo, hi = -np.ones((1, 4)), np.ones((1, 4))
    for name, chain in _chains(p, q).items():
        bounds, _, _ = propagate(chain, lo, hi)
        rels = [chain.relax(j, l, u, None) for j, (l, u) in enumerate(bounds)]
        base = [np.concatenate([r.L[i][i] for i in r.slope_blocks], axis=1) for r in rels]

        def top_bound(slopes, row=None):
            rr = [chain.relax(j, l, u, s) for j, ((l, u), s) in enumerate(zip(bounds, slopes))]
            val, Ms = linear._output_bound(chain, rr, lo, hi)
            return val, Ms, rr

        val, Ms, rr = top_bound(base)
        top = int(np.argmax(val[0]))
        w = np.zeros_like(val)
        w[0, top] = 1.0
        g_M = w[..., None] * np.where(Ms[0] > 0, hi[:, None, :], lo[:, None, :])
        A, c = chain.affine[0]
        g_lam = g_M @ A.T + w[..., None] * c
        _, g = linear._substitute_gradient(rr[0], Ms[1], g_lam, w)
        l0, u0 = bounds[0]
        width = g.shape[1] // len(rr[0].slope_blocks)
        checked = 0
        for k in np.flatnonzero(np.abs(g[0]) > 1e-8):
            block_k = k % width
            if not (l0[0, block_k] < 0 < u0[0, block_k]):
                continue
            moved = [s.copy() for s in base]
            step = 1e-6 if moved[0][0, k] < 0.5 else -1e-6
            moved[0][0, k] += step
            fd = (top_bound(moved)[0][0, top] - val[0, top]) / step
            assert abs(fd - g[0, k]) <= 1e-5 * max(1.0, abs(g[0, k])), (name, k)
            checked += 1
        assert checked > 0, name


def test_branch_and_bound_with_optimized_slopes_brackets_the_maximum():
    from neuromanifold.relu._bounds.branch import branch_and_bound
    from neuromanifold.relu._equivalence.alignment import DifferenceAt

    p = ReLUNet([2, 8, 8, 2]).random_params(seed=1)
    q = _perturbed(p, np.random.default_rng(1), 0.05)
    lo, hi = -np.ones(2), np.ones(2)
    bb = branch_and_bound(
        difference_chain(p, q), lo, hi, DifferenceAt(p, q), gap=1e-4, deadline=None,
        max_boxes=4000, alpha_steps=5,
    )  # fmt: skip
    X = np.random.default_rng(2).uniform(-1, 1, (20000, 2))
    sampled = np.abs(_pre_activations(q, X)[-1] - _pre_activations(p, X)[-1]).max()
    at = np.abs(_pre_activations(q, bb.point[None])[-1] - _pre_activations(p, bb.point[None])[-1])
    assert np.isclose(bb.lower, at.max())  # the lower end is a value attained
    assert sampled <= bb.upper and bb.upper - bb.lower <= 1e-4 + 1e-12
    plain = branch_and_bound(
        difference_chain(p, q), lo, hi, DifferenceAt(p, q), gap=1e-4, deadline=None,
        max_boxes=4000,
    )  # fmt: skip
    assert max(plain.lower, bb.lower) <= min(plain.upper, bb.upper) + 1e-12


def _relaxation_violations(rng, n=4000):
    """Random bounds of ``(a, d, a + d)`` (each neuron's box), random points of each box
    that satisfy all three, and how many of them ``delta = relu(a + d) - relu(a)`` leaves
    between the difference relaxation's two sides; also how many neurons took the two
    triangles' sides (both neurons unstable, the triangles tighter than ``d``'s chord)."""
    al = -rng.uniform(0, 2, n) * (rng.random(n) < 0.8)
    au = al + rng.uniform(0, 3, n)
    dl = rng.uniform(-3, 3, n)
    du = dl + rng.uniform(0, 3, n)
    # b's bounds: a + d's, sometimes tightened (as back substitution finds them)
    bl = al + dl + rng.uniform(0, 1, n) * (au + du - al - dl) * (rng.random(n) < 0.5) / 2
    bu = au + du - rng.uniform(0, 1, n) * (au + du - bl) * (rng.random(n) < 0.5) / 2
    r = linear._difference_relaxation(*(v[None] for v in (al, au, dl, du, bl, bu)), None)
    ua, ud, la, ld = r.U[1][0][0], r.U[1][1][0], r.L[1][0][0], r.L[1][1][0]
    u0, l0 = r.u0[0, n:], r.l0[0, n:]
    bad = 0
    for _ in range(50):
        a = rng.uniform(al, au)
        d = np.clip(rng.uniform(dl, du), bl - a, bu - a)
        ok = (d >= dl) & (d <= du)
        delta = np.maximum(a + d, 0) - np.maximum(a, 0)
        slack = 1e-12 * (1 + np.abs(a) + np.abs(d))
        bad += int(np.sum(ok & (delta > ua * a + ud * d + u0 + slack)))
        bad += int(np.sum(ok & (delta < la * a + ld * d + l0 - slack)))
    both = (al < 0) & (au > 0) & (bl < 0) & (bu > 0)
    triangles = int(np.sum(both & (ua != 0)))
    return bad, triangles


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_the_difference_relaxation_holds_on_every_case(seed):
    bad, triangles = _relaxation_violations(np.random.default_rng(seed))
    assert bad == 0
    assert triangles > 0  # the case of both neurons unstable is exercised
