"""The search for the sign a neuron rarely takes at random points of the domain (the
regions the Jacobian's rank needs): on a box it reaches a neuron that switches in one
corner only, from either side, and every point it returns lies strictly inside the box
with the neuron of that sign."""

import numpy as np
import pytest

from neuromanifold.relu import ReLUNet
from neuromanifold.relu._core.domain import Domain
from neuromanifold.relu._fundim.fundim import _pre_activations, _rare_points, _sample_points


def corner_network(d, sign, seed=0):
    """First-layer neuron 0 has ``sign`` only where ``sum(1 - x) < 0.6``, a corner of
    [-1, 1]^d of volume 0.6^d / d! (a 2e-6 part of the box at d = 6)."""
    P = ReLUNet([d, 4, 3, 1]).random_params(seed)
    W, b = P[0]
    b[:] = 0.0
    W[0] = sign * np.ones(d)
    b[0] = -sign * (d - 0.6)
    return [W for W, _ in P], [b for _, b in P]


@pytest.mark.parametrize("sign", [1, -1])
def test_a_neuron_switching_in_one_corner_of_the_box_is_reached(sign):
    d = 6
    Ws, bs = corner_network(d, sign)
    dom = Domain.box(-np.ones(d), np.ones(d))
    rng = np.random.default_rng(0)
    seen: set = set()
    points = [pt for batch in _sample_points(Ws, bs, dom, 0.0, rng, seen) for pt in batch]
    Z = _pre_activations(Ws, bs, np.array([x for x, _ in points]))
    assert not np.any(sign * Z[0][:, 0] > 0)  # random points never see it
    more = _rare_points(Ws, bs, dom, tol=0.0, points=points, rng=rng, seen=seen, check=lambda: None)
    X = np.array([x for x, _ in more])
    hits = sign * _pre_activations(Ws, bs, X)[0][:, 0] > 0
    assert hits.sum() >= 1
    assert np.all(X > -1) and np.all(X < 1)  # strictly inside: a ball in the domain
