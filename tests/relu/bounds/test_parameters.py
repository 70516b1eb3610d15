"""The scale and the parameter bound: the plain float64 chains agree with the
exponent-tracked ones, bound the sampled difference, and give way to them near the ends of
the float range."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold.relu import ReLUNet, forward
from neuromanifold.relu._bounds import parameters as _parameters
from neuromanifold.relu._bounds.parameters import function_distance_bound, path_norm_scale


def _net(widths, seed, log2_scale):
    p = ReLUNet(list(widths)).random_params(seed)
    s = 2.0**log2_scale
    return [(W * s, b * s) for W, b in p]


def _tracked(monkeypatch):
    """Force the exponent-tracked chains (the plain ones decline)."""
    monkeypatch.setattr(_parameters, "_plain_path_norms", lambda layers: None)
    monkeypatch.setattr(_parameters, "_plain_telescoping", lambda a, b, d: None)


widths_st = st.lists(st.integers(1, 7), min_size=2, max_size=5)


@settings(max_examples=60, deadline=None)
@given(
    widths=widths_st,
    seed=st.integers(0, 2**31 - 1),
    e=st.integers(-60, 60),
    eps=st.floats(1e-12, 1e-1),
)
def test_plain_chains_agree_with_the_exponent_tracked_ones(widths, seed, e, eps):
    p = _net(widths, seed, e)
    rng = np.random.default_rng(seed)
    q = [
        (W * (1 + eps * rng.standard_normal(W.shape)), b + eps * rng.standard_normal(b.shape))
        for W, b in p
    ]
    fast = path_norm_scale(p), function_distance_bound(p, q)
    with pytest.MonkeyPatch.context() as mp:
        _tracked(mp)
        slow = path_norm_scale(p), function_distance_bound(p, q)
    assert fast[0] == pytest.approx(slow[0], rel=1e-12)
    assert fast[1] == pytest.approx(slow[1], rel=1e-9)
    # the bound bounds the sampled difference, relative to max(1, |x|_inf)
    X = rng.standard_normal((200, widths[0])) * 10.0 ** rng.uniform(-3, 3, (200, 1))
    Fp, Fq = forward(p, X), forward(q, X)
    diff = np.max(np.abs(Fp - Fq), axis=-1).reshape(-1)
    noise = 1e-12 * np.max(np.abs(Fp) + np.abs(Fq), axis=-1).reshape(-1)  # the samples' rounding
    assert np.all(
        (diff - noise) / np.maximum(1.0, np.max(np.abs(X), axis=1)) <= fast[1] * (1 + 1e-12)
    )


@pytest.mark.parametrize("exponents", [(-600, -600, 600, 600), (600, 600, -600, -600)])
def test_plain_chains_decline_when_the_products_leave_the_float_range(exponents):
    """Products of layers 2**-600, 2**-600, 2**600, 2**600 underflow to 0 in plain float64
    (and the reversed order overflows) though the path norm is 1: the plain chain declines
    and the exponent-tracked one gives 1."""
    p = [(np.array([[2.0**e]]), np.zeros(1)) for e in exponents]
    assert _parameters._plain_path_norms([(np.abs(W), np.abs(b)) for W, b in p]) is None
    assert path_norm_scale(p) == 1.0
    q = [(W * 1.5, b) if l == 1 else (W, b) for l, (W, b) in enumerate(p)]
    assert 0.5 <= function_distance_bound(p, q) <= 0.5 * (1 + 1e-8)


def test_equal_networks_get_a_zero_bound():
    p = _net((4, 5, 3), 1, 0)
    assert function_distance_bound(p, p) == 0.0
