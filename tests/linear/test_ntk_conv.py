"""The NTK fast path of linear convolutional networks (LinearConvNet.ntk / jacobian):
per-architecture plans, the one-pass parameter check, the two ways to the partial
products (direct convolutions, one batched FFT), and the gather of J^T.

Ground truths: the previous flat construction (one convolution per prefix and suffix
step, J^T written layer by layer through strided views, kept verbatim below) and the
D-dimensional reference ``_jacobian_blocks``; both regimes of the plan are forced on every
random architecture, so the small direct path and the FFT path are both checked
whatever the size the examples happen to have.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import fft as sp_fft

from neuromanifold import LinearConvNet, ParameterError
from neuromanifold.linear import _conv
from neuromanifold.linear._conv import _direct_work, _GramPlan


# ----------------------------------------------------------------- references
def _conv1d(a, b):
    """The previous 1D convolution: direct below 2^15 multiply-adds, FFT beyond."""
    if a.size * b.size <= 1 << 15 or min(a.size, b.size) < 32:
        return np.convolve(a, b)
    m = a.size + b.size - 1
    nfft = sp_fft.next_fast_len(m, real=True)
    return sp_fft.irfft(sp_fft.rfft(a, nfft) * sp_fft.rfft(b, nfft), nfft)[:m]


def previous_partial_products(net, params):
    """The flat ``P_l`` before per-architecture plans (3L - 2 convolutions), verbatim."""
    offsets_all = net._flat_plan()[0]
    ups = []
    for w, o in zip(params, offsets_all):
        u = np.zeros(int(o[-1]) + 1)
        u[o] = w.ravel()
        ups.append(u)
    one = np.ones(1)
    prefix = [one]
    for u in ups[:-1]:
        prefix.append(_conv1d(prefix[-1], u))
    suffix = [one]
    for u in ups[:0:-1]:
        suffix.append(_conv1d(suffix[-1], u))
    suffix = suffix[::-1]
    return [_conv1d(a, b) for a, b in zip(prefix, suffix)]


def previous_flat_ntk(net, params):
    """The construction before per-architecture plans (J^T written layer by layer through
    strided views), verbatim: ``(J, K)``."""
    params = net.check_params(params)
    offsets_all, views = net._flat_plan()
    n = net.end_to_end_size
    Jt = np.zeros((net.num_params, n))
    row = 0
    for P, offsets, (k, strides) in zip(previous_partial_products(net, params), offsets_all, views):
        view = np.ndarray(
            k + (P.size,), dtype=np.float64, buffer=Jt, offset=8 * row * n, strides=strides + (8,)
        )
        view[...] = P
        row += offsets.size
    return Jt.T, Jt.T @ Jt


def reference_ntk(net, params):
    """J from the D-dimensional partial products, scattered per layer: ``(J, K)``."""
    J = np.hstack(net._jacobian_blocks(net.check_params(params)))
    return J, J @ J.T


def rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def forced_plan(net, monkeypatch, fft):
    """A plan of ``net`` that takes the FFT route (``fft``, when L >= 3) or the direct one."""
    monkeypatch.setattr(_conv, "_BATCH_FFT_MIN_WORK", -1 if fft else 10**18)
    plan = _GramPlan(net)
    monkeypatch.undo()
    assert bool(plan.nfft) == (fft and net.num_layers >= 3)
    return plan


def plan_ntk(plan, theta):
    Jt = plan.jacobian_transpose(theta)
    return Jt.T, Jt.T @ Jt


@st.composite
def ntk_nets(draw):
    """Random 1D and 2D architectures, from one layer to five, filters up to 12 (1D) or
    4 x 4 (2D), strides up to 3 (|v| up to a few hundred)."""
    D = draw(st.sampled_from([1, 2]))
    L = draw(st.integers(1, 5))
    mk, ms = (12, 3) if D == 1 else (4, 2)
    shapes = [tuple(draw(st.integers(1, mk)) for _ in range(D)) for _ in range(L)]
    strides = [tuple(draw(st.integers(1, ms)) for _ in range(D)) for _ in range(L - 1)]
    if D == 1:
        shapes, strides = [s[0] for s in shapes], [s[0] for s in strides]
    return LinearConvNet(shapes, strides)


def adversarial_params(net, rng, kind):
    """Parameters of one adversarial kind: exact zeros (entries and a whole filter),
    layer scales from 1e-120 to 1e120 (balanced, so that K stays in range), entries
    spanning 16 decades inside each filter, or small integers."""
    params = net.random_params(rng)
    if kind == "zeros":
        for _ in range(3):
            l = int(rng.integers(len(params)))
            params[l].flat[int(rng.integers(params[l].size))] = 0.0
        if len(params) > 1 and rng.random() < 0.5:
            params[int(rng.integers(len(params)))][...] = 0.0
    elif kind == "scales":
        exps = rng.integers(-120, 121, size=len(params)).astype(float)
        exps -= exps.mean()
        # centred exponents reach 240; a Jacobian block is the product of the other
        # layers (10^-e_l) and K its square: at most 10^60 per block keeps K in range
        # (seed 3129 on a five-layer 2D net overflowed to inf before this bound)
        exps *= min(1.0, 60.0 / max(float(np.abs(exps).max()), 1.0))
        params = [w * 10.0**e for w, e in zip(params, exps)]
    elif kind == "decades":
        params = [w * 10.0 ** rng.uniform(-8, 8, size=w.shape) for w in params]
    elif kind == "integers":
        params = [rng.integers(-3, 4, size=w.shape).astype(float) for w in params]
    return params


KINDS = ["gaussian", "zeros", "scales", "decades", "integers"]


# ----------------------------------------------------------------- equal to the previous path
@settings(max_examples=80)  # cheap (small nets): more architectures than the default
@given(net=ntk_nets(), seed=st.integers(0, 2**31), kind=st.sampled_from(KINDS))
def test_both_routes_equal_the_previous_path_and_the_reference(net, seed, kind):
    """On random 1D/2D architectures with strides, every route to J and K (the default
    plan, forced direct, forced FFT) equals the previous flat construction and the
    D-dimensional reference to 1e-12 relative, also on adversarial parameters."""
    rng = np.random.default_rng(seed)
    params = adversarial_params(net, rng, kind)
    theta = net.flatten(params)
    J_prev, K_prev = previous_flat_ntk(net, params)
    J_ref, K_ref = reference_ntk(net, params)
    assert rel(J_prev, J_ref) <= 1e-12 and rel(K_prev, K_ref) <= 1e-12
    K = net.ntk(params)
    J = net.jacobian(params)
    assert rel(K, K_prev) <= 1e-12 and rel(J, J_prev) <= 1e-12
    assert np.array_equal(K, K.T) and J.flags.c_contiguous
    routes = {}
    with pytest.MonkeyPatch.context() as mp:
        for fft in (False, True):
            plan = forced_plan(net, mp, fft)
            for P, P_prev in zip(
                plan.partial_products(theta), previous_partial_products(net, params)
            ):
                assert P.shape == P_prev.shape and rel(P, P_prev) <= 1e-12
            J_p, K_p = routes[fft] = plan_ntk(plan, theta)
            assert rel(K_p, K_prev) <= 1e-12, (fft, rel(K_p, K_prev))
            assert rel(J_p, J_prev) <= 1e-12
            assert np.array_equal(K_p, K_p.T)
    if kind == "gaussian":
        # generic filters: the FFT route has exact zeros exactly where the direct
        # convolutions have them (the structural zeros of J)
        assert np.array_equal(routes[True][0] == 0, routes[False][0] == 0)
    if kind == "integers":
        # small integers: the direct route is exact
        assert np.array_equal(routes[False][1], np.rint(K_ref))


@pytest.mark.parametrize(
    "shapes, strides",
    [
        ([20] * 5, [2, 2, 1, 1]),  # |v| = 286
        ([(3, 3)] * 5, [(2, 2)] + [(1, 1)] * 3),  # |v| = 361, 2D
        ([(5, 5)] * 5, [(2, 2)] + [(1, 1)] * 3),  # |v| = 1369: FFT route
        ([(5, 5)] * 4, [(2, 2)] + [(1, 1)] * 2),  # |v| = 841
        ([(3, 1, 2), (1, 4, 1), (2, 2, 2)], [(1, 3, 1), (2, 1, 2)]),  # 3D
        ([1, 1, 1], [5, 7]),  # size-1 filters, sparse P_l
        ([5, 5, 5], [2, 2]),  # small: direct route
    ],
)
def test_benchmark_like_sizes_equal_the_previous_path(shapes, strides):
    net = LinearConvNet(shapes, strides)
    assert bool(net._gram_plan().nfft) == (net.end_to_end_size == 1369)
    params = net.random_params(7)
    J_prev, K_prev = previous_flat_ntk(net, params)
    assert rel(net.ntk(params), K_prev) <= 1e-12
    assert rel(net.jacobian(params), J_prev) <= 1e-12


def test_the_route_is_chosen_by_size():
    small, large = LinearConvNet([20] * 5, [2, 2, 1, 1]), LinearConvNet([60] * 5, [2] * 4)
    assert small._gram_plan().nfft == 0
    assert _direct_work(small._gram_plan().lengths) <= _conv._BATCH_FFT_MIN_WORK
    assert large._gram_plan().nfft >= large.end_to_end_size
    assert _direct_work(large._gram_plan().lengths) > _conv._BATCH_FFT_MIN_WORK
    # the direct route is exact on integer filters (the doctest prints them)
    net = LinearConvNet([2, 3, 2], [2, 1])
    params = [np.array([1.0, -2.0]), np.array([3.0, 0.0, 1.0]), np.array([1.0, 1.0])]
    J_ref, K_ref = reference_ntk(net, params)
    assert np.array_equal(net.ntk(params), K_ref)


def test_direct_work_counts_the_multiply_adds():
    """_direct_work equals the multiply-adds of the 3L - 6 convolutions, counted on the
    arrays the direct route actually convolves."""
    net = LinearConvNet([4, 3, 5, 2], [2, 3, 1])
    plan = net._gram_plan()
    calls = []
    real = np.convolve

    def counting(a, b):
        calls.append(a.size * b.size)
        return real(a, b)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_conv.np, "convolve", counting)
        plan._direct_partial_products(net.flatten(net.random_params(0)))
    assert len(calls) == 3 * 4 - 6
    assert sum(calls) == _direct_work(plan.lengths)


# ----------------------------------------------------------------- one and two layers
@pytest.mark.parametrize(
    "shapes, strides", [([4], []), ([(2, 3)], []), ([3, 4], [2]), ([(2, 2), (3, 1)], [(1, 2)])]
)
def test_one_and_two_layers(shapes, strides):
    net = LinearConvNet(shapes, strides)
    params = net.random_params(1)
    J_ref, K_ref = reference_ntk(net, params)
    assert rel(net.jacobian(params), J_ref) <= 1e-12
    assert rel(net.ntk(params), K_ref) <= 1e-12
    if net.num_layers == 1:  # J is a 0/1 selection: exact
        assert np.array_equal(net.jacobian(params), J_ref)


# ----------------------------------------------------------------- plans
def test_plans_are_shared_by_equal_architectures_only():
    a, b = LinearConvNet([3, 3, 3], [2, 1]), LinearConvNet([3, 3, 3], [2, 1])
    c = LinearConvNet([3, 3, 3], [1, 2])
    assert a._gram_plan() is b._gram_plan()
    assert c._gram_plan() is not a._gram_plan()
    params = a.random_params(0)
    # same filters, different strides: different kernels, each equal to its reference
    assert rel(c.ntk(params), reference_ntk(c, params)[1]) <= 1e-12
    assert rel(a.ntk(params), reference_ntk(a, params)[1]) <= 1e-12
    assert a.ntk(params).shape != c.ntk(params).shape or not np.allclose(
        a.ntk(params), c.ntk(params)
    )


# ----------------------------------------------------------------- validation
def test_the_one_pass_check_refuses_what_check_params_refuses():
    net = LinearConvNet([3, 2], [2])
    good = net.random_params(0)
    for bad, match in [
        ([good[0], np.array([1.0, np.nan])], "filter of layer 2"),
        ([good[0], np.array([np.inf, 1.0])], "filter of layer 2"),
        ([good[0], np.zeros(3)], "shape"),
        ([good[0]], "one array per layer"),
        (np.zeros(5), "list"),
        ([good[0], np.array(["1", "2"])], "filter of layer 2"),
    ]:
        for method in (net.ntk, net.jacobian):
            with pytest.raises(ParameterError, match=match):
                method(bad)


def test_the_one_pass_check_accepts_what_check_params_accepts():
    net = LinearConvNet([3, 2], [2])
    good = net.random_params(0)
    K = net.ntk(good)
    for other in (
        [list(good[0]), tuple(good[1])],  # lists and tuples
        tuple(good),  # a tuple of arrays
        [good[0][::-1][::-1], good[1]],
    ):  # a view
        assert rel(net.ntk(other), K) <= 1e-12
    single = [good[0].astype(np.float32), good[1]]  # float32: converted
    assert np.array_equal(net.ntk(single), net.ntk([w.astype(np.float64) for w in single]))
    ints = [np.array([1, 2, 3]), np.array([1, -1])]
    assert np.array_equal(net.ntk(ints), net.ntk([w.astype(float) for w in ints]))
    # non-contiguous float64 views are read correctly
    big = np.arange(6.0)
    assert np.array_equal(
        net.ntk([big[::2], np.array([1.0, 2.0])]),
        net.ntk([np.array([0.0, 2.0, 4.0]), np.array([1.0, 2.0])]),
    )


# ----------------------------------------------------------------- overflow
def fft_net(monkeypatch):
    """|v| = 286 with its plan forced onto the FFT route."""
    net = LinearConvNet([20] * 5, [2, 2, 1, 1])
    net._gram = forced_plan(net, monkeypatch, True)
    return net


def test_overflow_is_an_error_on_the_fft_route_too(monkeypatch):
    net = fft_net(monkeypatch)
    assert net._gram_plan().nfft
    params = net.random_params(0)
    with pytest.raises(ParameterError, match="overflow: the NTK"):
        net.ntk([w * 1e70 for w in params])  # P ~ 1e280, K ~ 1e560
    big = [w * 1e35 for w in params]  # K ~ 1e280 (finite)
    K = net.ntk(big)
    assert np.isfinite(K).all()
    assert rel(K, previous_flat_ntk(net, big)[1]) <= 1e-12


def test_overflowing_spectra_fall_back_to_the_direct_route(monkeypatch):
    """When the FFT route gives a non-finite J (spectra can overflow a little before the
    convolutions do), ntk and jacobian decide on the direct route."""
    net = fft_net(monkeypatch)
    params = net.random_params(3)
    K_prev = previous_flat_ntk(net, params)[1]
    plan = net._gram_plan()
    assert plan.nfft

    def overflowing(self, theta):
        return np.full((self.L, self.nfft), np.inf)

    monkeypatch.setattr(_GramPlan, "_fft_partial_products", overflowing)
    assert rel(net.ntk(params), K_prev) <= 1e-12
    assert rel(net.jacobian(params), previous_flat_ntk(net, params)[0]) <= 1e-12
