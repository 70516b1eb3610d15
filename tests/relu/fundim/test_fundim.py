"""Functional dimension: exact rank, the bound P - hidden, and where it is reached."""

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import ParameterError
from neuromanifold.exact import exact_rank
from neuromanifold.relu import ReLUNet, bent_hyperplanes, functional_dimension
from neuromanifold.relu._fundim.fundim import region_rows
from neuromanifold.relu._regions.regions import compute_regions
from tests.support.relu import dyadic_net


@settings(max_examples=20, deadline=None)
@given(
    widths=st.lists(st.integers(1, 3), min_size=2, max_size=4),
    seed=st.integers(0, 10**6),
    domain=st.sampled_from([None, "orthant", (-1, 1)]),
)
def test_never_exceeds_bound_and_dominates_sampled_rank(widths, seed, domain):
    net = ReLUNet(widths)
    p = net.random_params(seed)
    fd = functional_dimension(p, domain=domain, tol=0)
    assert fd.certified and fd.num_params == net.num_params and fd.num_hidden == net.num_hidden
    assert fd.rank <= fd.bound
    # generic Gaussian weights: no region is thin and no singular value near tol, so the
    # rank at the default tolerance is the exact one
    num = functional_dimension(p, domain=domain)
    assert num.rank == fd.rank and num.num_thin_regions == 0
    assert num.certified == (num.rank == num.bound)
    # the float Jacobian at random inputs of the domain spans a subspace of the same space
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (200, widths[0]))
    if domain == "orthant":
        X = np.abs(X) * 3
    elif domain is None:
        X = X * 4
    J = net.jacobian(p, X)
    s = np.linalg.svd(J, compute_uv=False)
    assert int(np.sum(s > 1e-9 * max(1.0, s[0]))) <= fd.rank


def test_exact_rows_match_the_float_jacobian():
    net = ReLUNet([3, 4, 4, 2])
    p = net.random_params(0)
    R, cells, enet, _ = compute_regions(p, None, False)
    for cell in cells[:8]:
        rows, smooth = region_rows(enet, cell.patterns[0], cell.center_q)
        assert smooth
        d, m = 3, 2
        J = net.jacobian(p, cell.center_f[None, :])
        exact = np.array([[float(v) for v in rows[o * (d + 1)]] for o in range(m)])
        np.testing.assert_allclose(exact, J, rtol=1e-12, atol=1e-12)


def _sampled_rank(net, p, seed=0, n=40000):
    """Rank of the float Jacobian at random inputs over many scales (a lower bound)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, net.widths[0])) * np.exp(rng.uniform(-2, 4, (n, 1)))
    s = np.linalg.svd(net.jacobian(p, X), compute_uv=False)
    return int(np.sum(s > 1e-10 * s[0]))


def test_one_hidden_layer_reaches_bound_when_every_neuron_bends():
    draws, meeting = 10, 0
    for seed in range(draws):
        p = ReLUNet([2, 3, 1]).random_params(seed)
        if not bent_hyperplanes(p).all_visible:
            continue
        meeting += 1
        fd = functional_dimension(p)
        assert fd.rank == fd.bound, (seed, fd)
    print(f"[2, 3, 1]: {meeting}/{draws} draws have every neuron visible")
    assert meeting > 0


def test_two_hidden_layers_reach_bound_on_most_draws_where_every_neuron_bends():
    """3-4-4-1: the bound is reached by draws whose every neuron bends, but not by all of
    them (see the next test); every shortfall is confirmed by the sampled float Jacobian."""
    net = ReLUNet([3, 4, 4, 1])
    draws, meeting, at_bound = 6, 0, 0
    for seed in range(draws):
        p = net.random_params(seed)
        if not bent_hyperplanes(p).all_visible:
            continue
        meeting += 1
        fd = functional_dimension(p)
        at_bound += fd.at_bound
        if not fd.at_bound:
            assert _sampled_rank(net, p) <= fd.rank < fd.bound
    print(
        f"[3, 4, 4, 1]: {meeting}/{draws} draws have every neuron visible, "
        f"{at_bound} of them reach P - hidden"
    )
    assert at_bound > 0


def test_every_neuron_bending_does_not_imply_the_bound():
    """Counterexample to 'every neuron bends => functional dimension P - hidden': a draw
    (3-4-4-1, seed 23) where second-layer neuron 0 is active only where first-layer neuron 2
    is inactive, so the weight between them is locally free. Found by scanning seeds 0-29
    (2 of 23 all-visible draws fall short); the exact rank agrees with sampled Jacobians."""
    net = ReLUNet([3, 4, 4, 1])
    p = net.random_params(23)
    assert bent_hyperplanes(p).all_visible
    fd = functional_dimension(p)
    assert fd.rank < fd.bound
    assert _sampled_rank(net, p) == fd.rank
    from neuromanifold.relu import regions

    R = regions(p)
    assert all(not r.pattern[0][2] for r in R if r.pattern[1][0])
    # the locally free direction: W2[0, 2] alone
    W2 = p[1][0].copy()
    W2[0, 2] += 1e-3
    q = [p[0], (W2, p[1][1]), p[2]]
    from neuromanifold.relu import equivalent

    assert equivalent(p, q, method="regions").equivalent
    # independently of the exact rank: the hidden rescaling directions and e_{W2[0, 2]}
    # are hidden + 1 linearly independent (exact rank) null vectors of the float Jacobian
    # at many inputs, so the rank is at most P - hidden - 1 < the bound
    null = []
    for l in range(2):
        for i in range(4):
            v = [(np.zeros_like(W), np.zeros_like(b)) for W, b in p]
            v[l][0][i], v[l][1][i] = p[l][0][i], p[l][1][i]  # incoming row and bias
            v[l + 1][0][:, i] = -p[l + 1][0][:, i]  # minus outgoing column
            null.append(net.flatten(v))
    e = [(np.zeros_like(W), np.zeros_like(b)) for W, b in p]
    e[1][0][0, 2] = 1.0
    null.append(net.flatten(e))
    N = np.array(null)
    assert exact_rank(N) == net.num_hidden + 1
    X = np.random.default_rng(1).standard_normal((5000, 3)) * 5
    J = net.jacobian(p, X)
    assert np.all(J @ N[-1] == 0)  # exactly: h1[2] = 0 where (2, 0) is on
    assert np.abs(J @ N[:-1].T).max() < 1e-12 * np.abs(J).max()
    assert fd.rank <= fd.bound - 1


def test_dead_neuron_lowers_the_rank():
    p = ReLUNet([2, 3, 1]).random_params(0)
    fd = functional_dimension(p)
    assert fd.at_bound
    W1, b1 = p[0]
    W1, b1 = W1.copy(), b1.copy()
    W1[1] = 0.0
    b1[1] = -1.0  # neuron 1 is inactive on all of R^2
    dead = [(W1, b1), p[1]]
    assert bent_hyperplanes(dead).neurons[1].status == "dead"
    fd_dead = functional_dimension(dead)
    assert fd_dead.rank < fd_dead.bound
    # its 3 incoming and 1 outgoing coordinates are dead, against 1 for its rescaling
    assert fd_dead.rank <= fd.rank - 3


def test_zero_preactivation_is_flagged_not_smooth():
    # the second neuron's pre-activation is identically 0: theta -> f is not differentiable
    p = [(np.array([[1.0], [0.0]]), np.array([0.0, 0.0])), (np.array([[1.0, 1.0]]), np.zeros(1))]
    fd = functional_dimension(p)
    assert not fd.smooth


def test_domain_matters():
    # both kinks at x < 0: on the orthant the network is affine, so only 2 directions remain
    p = [(np.array([[1.0], [1.0]]), np.array([1.0, 2.0])), (np.array([[1.0, -1.0]]), np.zeros(1))]
    assert functional_dimension(p).rank > functional_dimension(p, "orthant").rank


def _parallel_up_to_rounding(seed):
    """2-3-1 network whose third neuron is the first one times a float factor, rounded."""
    rng = np.random.default_rng(seed)
    W1, b1 = rng.standard_normal((3, 2)), rng.standard_normal(3)
    s = rng.uniform(0.3, 3.0)
    W1[2], b1[2] = W1[0] * s, b1[0] * s
    return [(W1, b1), (rng.standard_normal((1, 3)), rng.standard_normal(1))]


def test_neurons_parallel_up_to_rounding_count_once_at_the_default_tol():
    """The rounded copy of a neuron splits off slivers of relative width ~1e-16: exactly
    (tol=0) they are regions and the rank is that of three independent neurons; at the
    default tol they are thin and the two neurons act as one."""
    for seed in range(4):
        p = _parallel_up_to_rounding(seed)
        num, ex = functional_dimension(p, method="regions"), functional_dimension(p, tol=0)
        assert ex.rank == 10 == ex.bound and ex.certified and ex.largest_dropped is None
        assert num.rank == 7 and not num.certified and num.num_thin_regions > 0
        assert num.smallest_counted > 1e-3 and num.largest_dropped < 1e-12  # a clear gap
        assert num.tol == 1e-9 and num.num_points == (num.num_regions - num.num_thin_regions) * 3
        # the MILP phase decides the same: the slivers are below its margin
        fast = functional_dimension(p)
        assert (fast.rank, fast.method, fast.certified) == (7, "milp", False)


def test_extreme_magnitudes_give_the_same_functional_dimension():
    for p in (_parallel_up_to_rounding(1), ReLUNet([2, 3, 2, 1]).random_params(4)):
        q = [(p[0][0] * 2.0**-1000, p[0][1] * 2.0**-1000), (p[1][0] * 2.0**1000, p[1][1]), *p[2:]]
        for tol in (1e-9, 0):
            a, b = functional_dimension(p, tol=tol), functional_dimension(q, tol=tol)
            assert (a.rank, a.num_regions, a.num_thin_regions) == (
                b.rank,
                b.num_regions,
                b.num_thin_regions,
            )
            assert (a.smallest_counted, a.largest_dropped) == (
                b.smallest_counted,
                b.largest_dropped,
            )


# -- the fast path: sampled regions first, stop at the bound -----------------------------


def _exhaustive_rank(p, domain=None):
    """The former computation: every region, exact rows, exact rational rank."""
    import flint

    R, cells, enet, _ = compute_regions(p, domain, False)
    P = sum(np.size(W) + np.size(b) for W, b in p)
    rows = [row for c in cells for row in region_rows(enet, c.patterns[0], c.center_q)[0]]
    return int(flint.fmpq_mat(len(rows), P, [v for r in rows for v in r]).rank())


def _adversarial(kind, rng, widths):
    p = ReLUNet(widths).random_params(int(rng.integers(10**6)))
    p = [(W.copy(), b.copy()) for W, b in p]
    if kind == "dead":  # a first-layer neuron inactive everywhere
        p[0][0][0] = 0.0
        p[0][1][0] = -1.0
    elif kind == "parallel":  # two first-layer neurons on the same hyperplane, exactly
        p[0][0][1], p[0][1][1] = 2.0 * p[0][0][0], 2.0 * p[0][1][0]
    elif kind == "zero_out":  # a neuron whose outgoing weights vanish
        p[1][0][:, 0] = 0.0
    elif kind == "dyadic":
        p = dyadic_net(rng, widths)
    return p


@settings(max_examples=14, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    kind=st.sampled_from(["generic", "dead", "parallel", "zero_out", "dyadic"]),
    widths=st.sampled_from([[2, 3, 2, 1], [2, 2, 1, 2], [1, 3, 1, 1], [2, 3, 1], [3, 2, 2, 1]]),
    domain=st.sampled_from([None, "orthant", (-1, 1)]),
)
def test_fast_rank_equals_the_exhaustive_exact_rank(seed, kind, widths, domain):
    """Width-1 layers, dead, parallel and disconnected neurons, dyadic weights with exact
    coincidences: the exact rank (tol=0) equals the rank over every region, whether the
    sampled regions reached the bound or the enumeration ran to the end."""
    p = _adversarial(kind, np.random.default_rng(seed), widths)
    fd = functional_dimension(p, domain, tol=0)
    assert fd.rank == _exhaustive_rank(p, domain)
    assert fd.certified and fd.rank <= fd.bound
    assert fd.enumerated or fd.rank == fd.bound  # stops early only at the bound


def test_stops_at_the_bound_without_enumerating():
    p = ReLUNet([3, 4, 4, 1]).random_params(0)
    for tol in (1e-9, 0):
        fd = functional_dimension(p, tol=tol)
        assert fd.at_bound and fd.certified and not fd.enumerated
        assert 0 < fd.num_sampled_regions == fd.num_regions
    from neuromanifold.relu import regions

    assert fd.num_regions < regions(p).num_regions


def test_below_the_bound_every_region_is_used():
    p = _adversarial("dead", np.random.default_rng(0), [2, 3, 2, 1])
    from neuromanifold.relu import regions

    n = regions(p).num_regions
    for tol in (1e-9, 0):
        fd = functional_dimension(p, tol=tol, method="regions")
        assert not fd.at_bound and fd.enumerated and fd.method == "regions"
        assert fd.num_regions == n + fd.num_sampled_regions


# -- the MILP phase: kernel directions decided without enumerating ------------------------


@settings(max_examples=int(os.environ.get("NM_MILP_EXAMPLES", 16)), deadline=None)
@given(
    seed=st.integers(0, 10**6),
    kind=st.sampled_from(["generic", "dead", "parallel", "zero_out", "dyadic"]),
    widths=st.sampled_from(
        [[2, 3, 2, 1], [2, 2, 1, 2], [1, 3, 1, 1], [2, 3, 1], [3, 2, 2, 1], [2, 4, 3, 2]]
    ),
    domain=st.sampled_from([None, "orthant", (-1, 1), ([0.5, -2.0], [3.0, 4.0])]),
    tol=st.sampled_from([1e-9, 0]),
    samples=st.sampled_from([2000, 8]),
)
def test_milp_rank_equals_the_exhaustive_exact_rank(seed, kind, widths, domain, tol, samples):
    """The ground truth is the exact rank over every region; the MILP phase must reach it
    on random and adversarial networks (dead, parallel, disconnected neurons, dyadic
    weights with exact coincidences) without enumerating, or say why it handed over. With
    only 8 random points most of the rank is left to the MILPs to find."""
    from unittest import mock

    from neuromanifold.relu._fundim import fundim as _fundim

    if isinstance(domain, tuple) and np.ndim(domain[0]) and len(domain[0]) != widths[0]:
        domain = (-1, 1)
    p = _adversarial(kind, np.random.default_rng(seed), widths)
    with (
        mock.patch.object(_fundim, "_SAMPLES", samples),
        mock.patch.object(_fundim, "_SAMPLE_BATCH", min(samples, 250)),
    ):
        fd = functional_dimension(p, domain, tol=tol, method="milp")
    assert fd.rank == _exhaustive_rank(p, domain)
    assert fd.method in ("sampling", "milp", "regions")
    if fd.method == "milp" and fd.rank < fd.bound:  # a floating-point bound decided the rest
        assert not fd.certified
    elif tol == 0:
        assert fd.certified
    assert fd.enumerated == (fd.method == "regions")
    assert ("the MILP phase" in fd.note) == fd.enumerated  # the hand-over says why
    assert fd.certified or fd.note  # never uncertified without why
    if kind in ("generic", "dead", "zero_out"):
        # no exact coincidences: the MILP phase settles everything (a fallback here means
        # a wrong derivative or a witness that was none)
        assert not fd.enumerated, fd.note


def test_milp_finds_a_region_that_highs_probing_cut_off():
    """A 1-3-1-1 network with dyadic weights: with 8 sampled points, one kernel direction
    moves the function only on the region -1 < x < 0. HiGHS's presolve probing, at the
    MILP's tight feasibility tolerances, reported "optimal 0" for it, so the rank came
    out 6 instead of 7 (with probing off the witness is found)."""
    from neuromanifold.relu._core.domain import as_domain
    from neuromanifold.relu._fundim.tangent import TangentMILP

    Ws = [np.array([[0.5], [-0.5], [-0.25]]), np.array([[0.5, -0.125, 0.5]]), np.array([[-0.5]])]
    bs = [np.array([0.0, -0.5, 0.5]), np.array([0.25]), np.array([0.125])]
    dWs = [np.array([[0.0], [1.0], [0.0]]), np.array([[0.0, -0.25, 0.0]]), np.zeros((1, 1))]
    dbs = [np.array([0.25, 0.0, 0.0]), np.zeros(1), np.array([0.0625])]
    for box in (None, (-3, 3), (-1.2, 3)):
        witness = TangentMILP(Ws, bs, as_domain(box, 1)).exceeds(dWs, dbs, 1e-9)
        assert witness and abs(witness.value - 0.0625) < 1e-6
        assert [w.tolist() for w in witness.patterns] == [[False, False, True], [True]]
    p = [(W.copy(), b.copy()) for W, b in zip(Ws, bs)]
    assert functional_dimension(p, tol=1e-9, method="milp").rank == _exhaustive_rank(p) == 7


def test_milp_phase_finds_regions_that_sampling_misses():
    """Two first-layer neurons active together only on a thin wedge far out: random
    points miss it (the search for rare signs, which reaches it too, switched off), the
    MILP finds it (and with it the full rank)."""
    from unittest import mock

    from neuromanifold.relu._fundim import fundim as _fundim

    W1 = np.array([[1.0, 0.0], [-1.0, 1e-3], [0.0, 1.0]])
    b1 = np.array([0.0, -1e4, 0.0])
    p = [(W1, b1), (np.ones((1, 3)), np.zeros(1))]
    with mock.patch.object(_fundim, "_rare_points", lambda *args, **kwargs: []):
        fd = functional_dimension(p, method="milp")
    assert fd.rank == _exhaustive_rank(p) == fd.bound and fd.method == "milp"
    assert fd.num_milps > 0 and fd.certified


def test_a_corner_region_found_by_milp():
    # HiGHS's objective_bound option made the MILP report a wrong optimum here (the
    # region where only the width-1 neuron is active is a small corner of the box)
    from unittest import mock

    from neuromanifold.relu._fundim import fundim as _fundim

    p = _adversarial("generic", np.random.default_rng(29786), [2, 2, 1, 2])
    with mock.patch.object(_fundim, "_SAMPLES", 8), mock.patch.object(_fundim, "_SAMPLE_BATCH", 8):
        fd = functional_dimension(p, (-1, 1), method="milp")
    assert fd.rank == _exhaustive_rank(p, (-1, 1)) == 7 and fd.method == "milp"


def test_a_dead_neuron_is_decided_by_milp():
    p = _adversarial("dead", np.random.default_rng(0), [2, 3, 2, 1])
    fd = functional_dimension(p)
    assert (fd.rank, fd.method, fd.certified, fd.enumerated) == (
        _exhaustive_rank(p),
        "milp",
        False,
        False,
    )


# -- budgets -------------------------------------------------------------------------------


def test_budgets_raise_with_a_partial_lower_bound():
    import pytest

    from neuromanifold import ComputationLimitError, InputError

    p = _adversarial("dead", np.random.default_rng(0), [2, 3, 2, 1])
    full = functional_dimension(p, method="regions")
    with pytest.raises(ComputationLimitError, match="max_regions=2") as err:
        functional_dimension(p, method="regions", max_regions=2)
    part = err.value.partial
    assert part.method == "incomplete" and not part.certified and part.rank <= full.rank
    with pytest.raises(ComputationLimitError, match="time limit") as err:
        functional_dimension(ReLUNet([3, 8, 8, 1]).random_params(0), time_limit=1e-6)
    assert err.value.partial.rank <= err.value.partial.bound
    with pytest.raises(InputError, match="method must be one of"):
        functional_dimension(p, method="exact")
    # a budget that is not reached changes nothing
    assert (
        functional_dimension(p, max_regions=10**6, time_limit=600.0).rank
        == functional_dimension(p).rank
    )


@pytest.mark.parametrize("scale", [1e200, 1e300])
def test_a_scale_beyond_the_float_range_is_refused_with_the_limit(scale):
    p = [(W * scale, b * scale) for W, b in ReLUNet([2, 3, 1]).random_params(seed=0)]
    for tol in (1e-9, 0):
        with pytest.raises(ParameterError, match="beyond the float range"):
            functional_dimension(p, tol=tol)


def test_a_large_output_scale_keeps_the_rank():
    """The output layer is brought into range by a power of two (the rank does not
    change): at 1e150 the float rows used to lose a rank."""
    p = ReLUNet([2, 3, 1]).random_params(seed=0)
    q = [(W * 1e150, b * 1e150) for W, b in p]
    assert functional_dimension(q).rank == functional_dimension(p).rank == 10


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from([[1, 1], [3, 2, 1], [2, 4, 3], [5, 4, 3, 2], [4, 3, 5, 2, 3]]),
)
def test_sketch_from_the_factors_is_the_sketch_of_the_rows(seed, widths):
    """The sketched rows and the value rows' column maxima built from the factors of the
    rows (no m (d + 1) x P matrix) equal those of the rows themselves."""
    from neuromanifold.relu._fundim import fundim as _fd

    rng = np.random.default_rng(seed)
    p = ReLUNet(widths).random_params(seed)
    Ws, bs = _fd._balanced(p)
    x = rng.standard_normal(widths[0])
    patterns = [rng.random(n) < 0.7 for n in widths[1:-1]]
    rows = _fd._float_rows(Ws, bs, patterns, x)
    G, V, U = _fd._row_factors(Ws, bs, patterns, x)
    S = rng.standard_normal((7, rows.shape[0]))
    np.testing.assert_allclose(
        _fd._sketched_rows(G, V, U, S),
        S @ _fd._row_scaled(rows),
        rtol=1e-12,
        atol=1e-13 * np.abs(S).sum(axis=1).max(),
    )
    d = widths[0]
    np.testing.assert_array_equal(
        _fd._value_colmax(G, V, U), np.max(np.abs(rows[0 :: d + 1]), axis=0)
    )
    np.testing.assert_array_equal(_fd._row_peaks(G, V, U), np.max(np.abs(rows), axis=1))


# -- the layered route: trained sizes without the P-column matrix ---------------------------
@pytest.mark.parametrize("tol", [1e-9, 0])
def test_layered_rank_certifies_the_bound_without_the_stacked_rows(tol):
    p = ReLUNet([40, 40, 30, 5]).random_params(0)
    fd = functional_dimension(p, tol=tol)
    assert fd.layered and fd.certified and fd.rank == fd.bound == 2955
    assert sum(fd.levels) == fd.rank and fd.levels[0] == 40 * 41
    assert fd.note == "" and fd.method == "sampling"
    back = type(fd).from_dict(fd.to_dict())
    assert back.levels == fd.levels and back.layered and back.rank == fd.rank


def test_layered_rank_below_the_bound_is_a_lower_bound_with_its_reason():
    # a second-layer neuron dead on R^d (non-negative inputs, non-positive weights, negative
    # bias): its 41 + 5 weights drop out, less its scaling, so the rank is 2955 - 45
    p = [(W.copy(), b.copy()) for W, b in ReLUNet([40, 40, 30, 5]).random_params(0)]
    p[1][0][0] = -np.abs(p[1][0][0])
    p[1][1][0] = -1.0
    fd = functional_dimension(p)
    assert fd.layered and not fd.certified and fd.rank == 2955 - 45
    assert "lower bound" in fd.note and "P = 3,025" in fd.note
    assert "1 hidden neuron(s) active at none of them (layer 2 neuron 0)" in fd.note


def test_layered_float_rank_is_capped_by_the_exact_rank_of_its_regions(monkeypatch):
    # two equal first-layer neurons whose outgoing columns differ by 1e-8: the float null
    # space of the first level carries rounding into the next, which the exact check
    # modulo the prime catches; the answer never exceeds the exact functional dimension
    from neuromanifold.relu._fundim import fundim

    monkeypatch.setattr(fundim, "_DENSE_LIMIT", 0)  # the layered answer, not the stacked
    rng = np.random.default_rng(1)
    p = [(W.copy(), b.copy()) for W, b in ReLUNet([3, 4, 3, 2]).random_params(1)]
    p[0][0][1], p[0][1][1] = p[0][0][0], p[0][1][0]
    p[1][0][:, 1] = p[1][0][:, 0] + 1e-8 * rng.standard_normal(3)
    fd = functional_dimension(p)
    assert fd.layered and fd.rank <= _exhaustive_rank(p) and not fd.certified


def test_rational_entries_keep_the_exact_route():
    # the residues of the layered route are those of the floats: a weight of 1/3 is not
    # a float, so tol=0 answers from the exact rows (its float copy has more dimensions)
    from fractions import Fraction

    p = ReLUNet([3, 6, 5, 2]).random_params(0)
    p = [([list(map(Fraction, row)) for row in W], list(map(Fraction, b))) for W, b in p]
    p[0][0][1] = [v / 3 for v in p[0][0][0]]
    p[0][1][1] = p[0][1][0] / 3
    fd = functional_dimension(p, tol=0)
    assert not fd.layered and fd.certified and fd.rank == _exhaustive_rank(p)
    floats = [(np.array(W, dtype=float), np.array(b, dtype=float)) for W, b in p]
    assert functional_dimension(floats, tol=0).rank > fd.rank


def test_weights_near_the_float_maximum_are_refused_not_ranked():
    """A weight of 1e308: balancing the neurons overflowed and the rank came out 0 (an
    independent fuzz). Overflow is now a ParameterError."""
    p = ReLUNet([3, 4, 4, 2]).random_params(seed=1)
    p[0][0][0, 0] = 1e308
    for tol in (1e-9, 0):
        with pytest.raises(ParameterError, match="overflow"):
            functional_dimension(p, tol=tol)


def test_a_budget_that_stops_the_float_search_passes_on_no_rank_as_proven():
    """The proven rank of the local verdict and the fiber searches in floats and checks
    once modulo a prime; stopped before that check ends, its float ranks (which may exceed
    the exact one) are not passed on as a proven lower bound."""
    from unittest import mock

    from neuromanifold import ComputationLimitError
    from neuromanifold.relu._fundim import fundim as _fundim

    def stops(*args, exact=False, **kwargs):
        if exact:
            err = ComputationLimitError("stopped")
            err.partial = mock.Mock(rank=10**6, smooth=True)  # what the float pass holds
            raise err
        return real(*args, exact=exact, **kwargs)

    real = _fundim.layered_rank
    p = ReLUNet([3, 4, 3, 2]).random_params(0)
    with mock.patch.object(_fundim, "layered_rank", stops):
        rank, why, _ = _fundim.proven_jacobian_rank(p, 10**6, None, None)
    assert rank is None and "not reached" in why
