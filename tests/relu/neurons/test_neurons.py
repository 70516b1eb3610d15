"""Neurons on a domain: the certified bounds route against the exact region engine, planted
dead and always-active neurons at trained sizes, data as the domain, and bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import DomainError, InputError
from neuromanifold.relu import Domain, ReLUNet, bent_hyperplanes, neurons
from neuromanifold.relu._bounds.interval import box_bounds, difference_bounds


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from([[2, 4, 3, 1], [3, 5, 4, 2], [2, 3, 3, 3, 1]]),
    domain=st.sampled_from([None, (-1.0, 1.0), (0.0, 0.5), "orthant"]),
    shift=st.sampled_from([0.0, -2.0, 2.0]),
)
def test_bounds_never_contradict_the_exact_engine(seed, widths, domain, shift):
    p = ReLUNet(widths).random_params(seed)
    p = [(W, b + shift) if l == 1 else (W, b) for l, (W, b) in enumerate(p)]
    fast = neurons(p, domain, method="bounds", num_samples=500)
    exact = neurons(p, domain, method="regions")
    assert exact.method == "regions" and fast.method == "bounds"
    for f_layer, e_layer in zip(fast.status, exact.status):
        for f, e in zip(f_layer, e_layer):
            if f in ("dead", "linear"):
                assert e == f, (f, e)
            elif f == "switching":
                assert e in ("hidden", "visible"), (f, e)
    assert exact.status == tuple(
        tuple(n.status for n in bent_hyperplanes(p, domain).neurons if n.layer == l + 1)
        for l in range(len(widths) - 2)
    )


def test_planted_dead_and_linear_neurons_at_a_trained_size():
    rng = np.random.default_rng(0)
    p = ReLUNet([64, 32, 16, 10]).random_params(1)
    W1, b1 = p[0]
    b1 = b1.copy()
    b1[[3, 7]] = -100.0  # never active on [0, 1]^64
    b1[5] = 100.0  # always active
    p[0] = (W1, b1)
    X = rng.random((300, 64))
    r = neurons(p, data=X)
    assert r.method == "bounds" and r.domain.kind == "box"
    assert r.indices("dead")[0] == [3, 7] and r.indices("linear")[0] == [5]
    assert sum(r.counts()[0].values()) == 32
    assert "dead: 3, 7" in r.describe()


def test_from_data_widens_constant_coordinates():
    X = np.array([[0.0, 1.0], [0.0, 3.0]])
    dom = Domain.from_data(X)
    assert np.all(dom.contains(X)) and dom.lower[1] == 1.0 and dom.upper[1] == 3.0
    assert 0.0 < dom.upper[0] <= 1e-9
    with pytest.raises(DomainError, match="at least one row"):
        Domain.from_data(np.zeros((0, 2)))
    with pytest.raises(DomainError, match="finite"):
        Domain.from_data([[np.nan, 1.0]])


def test_bad_input_and_round_trip():
    p = ReLUNet([2, 3, 1]).random_params(0)
    with pytest.raises(InputError, match="2 columns"):
        neurons(p, data=np.zeros((4, 3)))
    with pytest.raises(InputError, match="method"):
        neurons(p, method="sampled")
    r = neurons(p, (-1.0, 1.0))
    assert type(r).from_dict(r.to_dict()).to_dict() == r.to_dict()
    with pytest.raises(InputError, match="status"):
        r.indices("alive")


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from([[2, 5, 4, 2], [6, 8, 8, 3], [3, 4, 1]]),
    eps=st.sampled_from([0.0, 1e-6, 1e-2, 1.0]),
)
def test_difference_bounds_contain_every_sampled_difference(seed, widths, eps):
    """Per layer the bounds of z^q - z^p and h^q - h^p hold at sampled points (the box's
    vertices included), and for nearby networks they are far tighter than the difference
    of the two networks' own intervals."""
    rng = np.random.default_rng(seed)
    p = ReLUNet(widths).random_params(seed)
    q = [
        (W + eps * rng.standard_normal(W.shape), b + eps * rng.standard_normal(b.shape))
        for W, b in p
    ]
    dom = Domain.box(np.full(widths[0], -1.5), np.full(widths[0], 0.5))
    pre, post = difference_bounds(p, q, dom)
    X = np.vstack(
        [
            dom.lower + (dom.upper - dom.lower) * rng.random((500, widths[0])),
            np.where(rng.random((64, widths[0])) < 0.5, dom.lower, dom.upper),
        ]
    )
    Hp = Hq = X
    for l, ((Wp, bp), (Wq, bq)) in enumerate(zip(p, q)):
        Zp, Zq = Hp @ Wp.T + bp, Hq @ Wq.T + bq
        noise = 1e-12 * (1 + np.abs(Zp))  # the samples' own float rounding
        lo, hi = pre[l]
        assert np.all(Zq - Zp >= lo - noise) and np.all(Zq - Zp <= hi + noise)
        if l < len(p) - 1:
            Hp, Hq = np.maximum(Zp, 0), np.maximum(Zq, 0)
            lo, hi = post[l]
            assert np.all(Hq - Hp >= lo - noise) and np.all(Hq - Hp <= hi + noise)
    if eps == 0.0:
        assert all(np.all(lo == 0) and np.all(hi == 0) for lo, hi in pre)
    (lp, hp), (lq, hq) = box_bounds(p, dom)[-1], box_bounds(q, dom)[-1]
    if eps <= 1e-6:
        assert np.max(pre[-1][1] - pre[-1][0]) <= 1e-3 * np.max(np.maximum(hp - lq, hq - lp))


def test_a_region_budget_of_method_regions_is_this_calls_error():
    """The error names neurons, not the engine's caller inside it, and carries what the
    bounds prove as its partial result; 'auto' answers by the bounds."""
    from neuromanifold import ComputationLimitError

    p = ReLUNet([3, 8, 8, 1]).random_params(0)
    with pytest.raises(ComputationLimitError, match=r"neurons\(method='regions'\)") as err:
        neurons(p, method="regions", max_regions=2)
    partial = err.value.partial
    assert partial.method == "bounds" and "region engine stopped" in partial.note
    assert err.value.num_regions is not None
    assert neurons(p, max_regions=2).method == "bounds"


def test_the_answer_on_the_data_points_themselves():
    """Two data points (0, 0) and (1, 1): their bounding box holds (1, 0), where neuron 0
    of layer 2 fires; on the data it fires on neither point, which on_data says."""
    from neuromanifold.relu import neurons

    X = np.array([[0.0, 0.0], [1.0, 1.0]])
    W1, b1 = np.eye(2), np.full(2, 0.5)
    W2, b2 = np.array([[1.0, -1.0], [1.0, 1.0]]), np.array([-0.5, 1.0])
    p = [(W1, b1), (W2, b2), (np.ones((1, 2)), np.zeros(1))]
    st = neurons(p, data=X)
    assert st.status[1][0] != "dead"  # it fires at (1, 0) of the box
    assert st.on_data == (("active", "active"), ("inactive", "active"))
    text = st.describe()
    assert "on the data points themselves" in text and "never active: 0" in text
    assert "bounding box of the data" in st.note
    assert neurons(p, (0.0, 1.0)).on_data is None
    back = type(st).from_dict(st.to_dict())
    assert back.on_data == st.on_data


def test_hidden_against_visible_has_its_stated_tolerance():
    """A dead neuron with a weight of 1e10 inflates the path norm, the scale of the
    relative tolerance: with the default tol the small bends count as none ("hidden"),
    and the result says against what; with tol=0 every bend counts (an independent fuzz
    found the first answer unexplained)."""
    p = ReLUNet([3, 4, 4, 2]).random_params(seed=1)
    box = ([-2.0, -1, -1], [-1.0, 1, 1])
    h = [(W.copy(), b.copy()) for W, b in p]
    h[0][0][0, 0] = 1e10  # neuron 0 stays dead on the box: the same function as at 1e8
    loose = neurons(h, box)
    assert loose.tol == 1e-9 and "tol = 1e-09 times the scale" in loose.note
    exact = neurons(h, box, tol=0)
    small = [(W.copy(), b.copy()) for W, b in p]
    small[0][0][0, 0] = 1e8
    assert exact.status == neurons(small, box, tol=0).status
    assert "visible" in exact.status[0] and exact.tol == 0
