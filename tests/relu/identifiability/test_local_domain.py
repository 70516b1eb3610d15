"""Local identifiability and the fiber on a domain (a box): the moves the neurons' statuses
there allow keep the function on the box (checked on points of the box, and shown to change
it outside), a ``False`` comes with fiber points off the orbit that agree on the box, a
``True`` matches the exact rank over the box's enumerated regions, and a box fixing an
input is refused."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import DomainError
from neuromanifold.relu import (
    DeepFiber,
    Identifiability,
    ReLUNet,
    fiber,
    forward,
    identifiability,
    regions,
)
from neuromanifold.relu._symmetries.orbit import orbit_gap


def _hidden(P):
    return sum(W.shape[0] for W, _ in P[:-1])


def _num_params(P):
    return sum(W.size + b.size for W, b in P)


def off_on_the_box(widths, seed, j=0):
    """A random network and the box [-1, 1]^d on which first-layer neuron ``j`` is
    negative with a margin (its bias below minus its row's 1-norm), while it is active on
    a half-space of R^d."""
    P = ReLUNet(widths).random_params(seed)
    W, b = P[0]
    b[j] = -np.abs(W[j]).sum() - 0.5
    d = widths[0]
    return P, (-np.ones(d), np.ones(d))


def box_points(box, n, seed):
    lo, hi = box
    return np.random.default_rng(seed).uniform(lo, hi, (n, lo.size))


@settings(max_examples=10, deadline=None)
@given(
    widths=st.sampled_from([[3, 4, 3, 2], [2, 4, 4, 3, 1], [3, 5, 4, 2], [4, 3, 3]]),
    seed=st.integers(0, 10**6),
)
def test_the_box_fiber_keeps_the_function_on_the_box_only(widths, seed):
    P, box = off_on_the_box(widths, seed)
    F = fiber(P, box, time_limit=30)
    assert isinstance(F, DeepFiber) and F.domain.kind == "box"
    assert any(f.kind == "dead_with_margin" for f in F.families)
    assert F.dimension > _hidden(P)  # the neuron's row and column are free near P
    if F.kernel_dimension is not None:
        assert F.dimension <= F.kernel_dimension
    X = box_points(box, 500, seed)
    far = -10.0 * np.sign(P[0][0][0])[None, :]  # where the planted neuron is active
    changed = False
    for Q in F.sample(4, seed=seed):
        assert np.allclose(forward(Q, X), forward(P, X), rtol=1e-9, atol=1e-9)
        changed |= not np.allclose(forward(Q, -far), forward(P, -far), rtol=1e-6)
        changed |= not np.allclose(forward(Q, far), forward(P, far), rtol=1e-6)
    assert changed  # the moves are the box's, not R^d's


@settings(max_examples=10, deadline=None)
@given(
    widths=st.sampled_from([[3, 4, 3, 2], [2, 4, 4, 3, 1], [3, 5, 4, 2], [4, 3, 3]]),
    seed=st.integers(0, 10**6),
)
def test_a_neuron_off_on_the_box_makes_it_not_locally_identifiable_there(widths, seed):
    """The False is checked independently: a fiber point off the orbit (its orbit gap)
    that agrees with the parameter on points of the box."""
    P, box = off_on_the_box(widths, seed)
    whole = identifiability(P, local=True, time_limit=30)
    r = identifiability(P, box, time_limit=30)
    assert r.locally_identifiable is False
    assert r.local_domain is not None and r.local_domain.kind == "box"
    if whole.locally_identifiable is not False:  # else a move of R^d decided it first
        assert "negative throughout" in r.local_reason
    assert "not locally identifiable on the box" in r.describe()
    Q = fiber(P, box, time_limit=30).sample(1, seed=seed)[0]
    assert orbit_gap(P, Q) > 1e-6
    X = box_points(box, 500, seed)
    assert np.allclose(forward(Q, X), forward(P, X), rtol=1e-9, atol=1e-9)
    back = Identifiability.from_dict(r.to_dict())
    assert back.local_domain.kind == "box" and back.locally_identifiable is False
    assert whole.local_domain is None


def test_the_box_verdict_is_not_the_whole_spaces():
    """On R^d the planted neuron switches: the parameter is locally identifiable there,
    and not on the box."""
    P, box = off_on_the_box([3, 5, 4, 2], 3)
    assert identifiability(P, local=True).locally_identifiable is True
    assert identifiability(P, box).locally_identifiable is False


def float_rank_at(P, X):
    """The numerical rank of the stacked parameter Jacobian at the rows of ``X`` (float
    SVD: an independent estimate)."""
    widths = [P[0][0].shape[1]] + [W.shape[0] for W, _ in P]
    J = ReLUNet(widths).jacobian(P, X)
    s = np.linalg.svd(J, compute_uv=False)
    return int(np.sum(s > 1e-9 * s[0]))


@settings(max_examples=8, deadline=None)
@given(
    widths=st.sampled_from([[2, 3, 3, 1], [3, 4, 3, 2], [2, 4, 3, 2]]),
    seed=st.integers(0, 10**6),
)
def test_locally_identifiable_on_a_box_matches_the_enumerated_rank_there(widths, seed):
    P = ReLUNet(widths).random_params(seed)
    box = (-3 * np.ones(widths[0]), 3 * np.ones(widths[0]))
    r = identifiability(P, box, time_limit=30)
    bound = _num_params(P) - _hidden(P)
    if r.locally_identifiable is True:
        assert r.jacobian_rank == bound
        # the ground truth: every region of the box enumerated (LPs), the Jacobian at
        # points around each one's interior point (float rank: it cannot exceed the true one)
        R = regions(P, box)
        rng = np.random.default_rng(seed)
        X = np.vstack(
            [
                g.point
                + g.margin
                * 0.5
                * rng.uniform(-1, 1, (widths[0] + 1, widths[0]))
                / np.sqrt(widths[0])
                for g in R.regions
            ]
        )
        assert float_rank_at(P, X) == bound
    if r.locally_identifiable is False:
        F = fiber(P, box, time_limit=30)
        assert F.dimension > _hidden(P)


def test_a_generic_network_on_a_wide_box_is_locally_identifiable():
    P = ReLUNet([3, 5, 4, 2]).random_params(3)
    r = identifiability(P, (-10 * np.ones(3), 10 * np.ones(3)))
    assert r.locally_identifiable is True
    assert r.jacobian_rank == _num_params(P) - _hidden(P)
    assert "locally identifiable on the box: proved" in r.describe()


def test_a_box_fixing_an_input_is_refused():
    P = ReLUNet([2, 3, 3, 1]).random_params(0)
    box = (np.array([0.0, -1.0]), np.array([0.0, 1.0]))
    with pytest.raises(DomainError, match="fixes inputs"):
        identifiability(P, box)
    with pytest.raises(DomainError, match="fixes inputs"):
        fiber(P, box)
    with pytest.raises(DomainError, match="dimension"):
        fiber(P, (np.zeros(3), np.ones(3)))
