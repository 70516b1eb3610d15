"""Local identifiability from the exact Jacobian rank: checked against the fiber's own
bounds (its listed moves and ``P - rank``) and against planted continuous symmetries."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError
from neuromanifold.relu import Identifiability, ReLUNet, fiber, identifiability


def _hidden(P):
    return sum(W.shape[0] for W, _ in P[:-1])


@settings(max_examples=12, deadline=None)
@given(
    widths=st.sampled_from([[2, 3, 3, 1], [3, 4, 4, 2], [3, 4, 2], [2, 3, 3, 3, 1], [3, 5, 3, 2]]),
    seed=st.integers(0, 10**6),
)
def test_the_local_verdict_agrees_with_the_fibers_bounds(widths, seed):
    """True only where the fiber's proven upper bound ``P - rank`` is the number of
    scalings; False only where the fiber's proven lower bound exceeds it."""
    P = ReLUNet(widths).random_params(seed)
    r = identifiability(P, local=True)
    F = fiber(P, tol=0) if len(P) != 3 else None
    H = _hidden(P)
    if r.locally_identifiable is True and r.jacobian_rank is not None:
        num = sum(W.size + b.size for W, b in P)
        assert r.jacobian_rank == num - H
        if F is not None and F.kernel_dimension is not None:
            assert F.kernel_dimension >= H and F.dimension <= F.kernel_dimension
    if r.locally_identifiable is False:
        assert r.identifiable is False
        if F is not None:
            assert F.dimension > H  # the listed moves generate more than the scalings
    if r.identifiable is False and r.locally_identifiable is True:
        # a witness of a discrete symmetry only (a flip): the orbit is left by a jump
        assert r.local_reason.startswith("proved")


def test_a_generic_trained_size_network_is_locally_identifiable():
    """Digits-sized 64-32-16-10: the rank P - H = 2778 - 48 is proved at once."""
    P = ReLUNet([64, 32, 16, 10]).random_params(0)
    r = identifiability(P, local=True)
    assert r.locally_identifiable is True and r.jacobian_rank == 2730
    assert "locally identifiable: proved" in r.describe()
    assert identifiability(P).locally_identifiable is None  # not asked: not computed
    back = Identifiability.from_dict(r.to_dict())
    assert back.locally_identifiable is True and back.jacobian_rank == 2730


def test_a_planted_dead_neuron_is_not_locally_identifiable():
    P = ReLUNet([3, 4, 4, 4, 2]).random_params(1)
    W, b = P[1]
    W[0], b[0] = -np.abs(W[0]), -1.0  # dead on the image of the first layer (>= 0)
    r = identifiability(P, local=True)
    assert r.locally_identifiable is False and "continuous family" in r.local_reason


def test_a_zero_row_leaves_the_local_verdict_open():
    P = ReLUNet([3, 4, 4, 2]).random_params(2)
    P[0][0][1], P[0][1][1] = 0.0, 0.0
    r = identifiability(P, local=True)
    assert r.locally_identifiable in (None, False)


def test_local_must_be_a_bool():
    with pytest.raises(InputError, match="local"):
        identifiability(ReLUNet([2, 2, 1]).random_params(0), local="yes")


def test_the_undecided_local_verdict_names_the_pairs_never_active_together():
    """Where the proven rank stays below P - H, the reason passes on the pairs of neurons
    the sampled regions never saw active together (the weights no region's rows see)."""
    from unittest import mock

    from neuromanifold.relu._fundim import fundim as _fundim

    p = ReLUNet([3, 4, 3, 2]).random_params(0)
    said = "1 pair(s) of neurons never active together at the sampled points (...)"
    with mock.patch.object(_fundim, "rank_lower_bound", lambda *a, **k: (5, True, said)):
        r = identifiability(p, local=True)
    assert r.locally_identifiable is None and said in r.local_reason
