"""The search for the sign a neuron rarely takes at random points of the domain (the
regions the Jacobian's rank needs): on a box it reaches a neuron that switches in one
corner only, from either side, and every point it returns lies strictly inside the box
with the neuron of that sign."""

import numpy as np
import pytest

from neuromanifold.relu import ReLUNet
from neuromanifold.relu._core.domain import Domain
from neuromanifold.relu._fundim.fundim import (
    _SPAN_DIRECTIONS,
    _input_spans,
    _pre_activations,
    _rare_points,
    _sample_points,
    _short_layers,
)


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


def _region_map(Ws, bs, x, l):
    """The homogeneous linear map ``(x, t) -> (a_{l-1}, t)`` of the region of ``x``, built
    layer by layer from the masks at ``x`` (independent of the vectorized code)."""
    d = Ws[0].shape[1]
    M = np.eye(d + 1)
    a = x
    for k in range(l):
        z = Ws[k] @ a + bs[k]
        on = (z > 0).astype(float)
        top = on[:, None] * (np.hstack([Ws[k], bs[k][:, None]]) @ M)
        M = np.vstack([top, M[-1:]])
        a = np.maximum(z, 0.0)
    return M


def test_input_spans_are_the_region_maps_applied_to_random_directions():
    P = ReLUNet([3, 5, 4, 2]).random_params(3)
    Ws, bs = [W for W, _ in P], [b for _, b in P]
    X = np.random.default_rng(1).standard_normal((7, 3)) * 3
    Z = _pre_activations(Ws, bs, X)
    spans = _input_spans(Ws, bs, Z, np.random.default_rng(5))
    U = np.random.default_rng(5).standard_normal((4, _SPAN_DIRECTIONS))
    for l in range(2):
        assert spans[l].shape == (7, Ws[l].shape[1] + 1, _SPAN_DIRECTIONS)
        for i, x in enumerate(X):
            np.testing.assert_allclose(spans[l][i], _region_map(Ws, bs, x, l) @ U, atol=1e-12)


def test_short_layers_name_the_levels_below_their_bounds():
    widths = (4, 3, 5, 2, 1)  # blocks 15, 20, 12, 3; scalings 3, 5, 2
    full = (15, 20 - 3, 12 + 3 - 5 - 2)
    assert _short_layers(full, widths) == set()
    assert _short_layers((14, 17, 8), widths) == {0}
    assert _short_layers((15, 16, 8), widths) == {1}
    assert _short_layers((15, 17, 7), widths) == {2, 3}
    assert _short_layers((15, 0, 20), widths) is None  # the second level not split off


def test_a_second_layer_neuron_never_seen_active_is_reached_on_the_whole_space():
    P = ReLUNet([2, 3, 2, 1]).random_params(0)
    P[0] = (np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]), np.zeros(3))
    P[1] = (np.array([[1e-3, -1.0, -1.0], [1.0, 1.0, 1.0]]), np.array([-1.0, 0.0]))
    Ws, bs = [W for W, _ in P], [b for _, b in P]
    dom = Domain.whole(2)
    rng = np.random.default_rng(0)
    seen: set = set()
    points = [pt for batch in _sample_points(Ws, bs, dom, 0.0, rng, seen) for pt in batch]
    Z = _pre_activations(Ws, bs, np.array([x for x, _ in points]))
    assert not np.any(Z[1][:, 0] > 0)
    more = _rare_points(
        Ws, bs, dom, tol=0.0, points=points, rng=rng, seen=seen, check=lambda: None, short={1}
    )
    hits = _pre_activations(Ws, bs, np.array([x for x, _ in more]))[1][:, 0] > 0
    assert hits.sum() >= 1


def test_a_neuron_active_often_but_in_too_narrow_regions_is_targeted():
    """Second-layer neuron 0 (``a_1 - 1``) is active at 5 points, more than its fan-in + 1,
    but all in the region where only first-layer neuron 0 is active: its inputs there span
    2 of the 4 dimensions they span over all points, so its weights on neurons 1 and 2 are
    not in the rank. A count of active points would leave it; the shortfall of span sends
    the search to regions where it is active with other inputs."""
    W1 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    P = [
        (W1, np.zeros(3)),
        (np.array([[1.0, 0.0, 0.0]]), np.array([-1.0])),
        (np.ones((1, 1)), np.zeros(1)),
    ]
    Ws, bs = [W for W, _ in P], [b for _, b in P]
    X = np.array([[2.0, -1.0]] * 5 + [[-1.0, 2.0]] * 5 + [[-1.0, -1.0]] * 5)
    X = X + 1e-3 * np.random.default_rng(0).standard_normal(X.shape)
    pats = [[m[i] for m in (p > 0 for p in _pre_activations(Ws, bs, X))] for i in range(15)]
    points = list(zip(X, pats))
    more = _rare_points(
        Ws,
        bs,
        Domain.whole(2),
        tol=0.0,
        points=points,
        rng=np.random.default_rng(0),
        seen=set(),
        check=lambda: None,
        short={1},
    )
    Y = np.array([x for x, _ in more])
    Z = _pre_activations(Ws, bs, Y)
    assert np.any((Z[1][:, 0] > 0) & (Z[0][:, 1] > 0))  # active together with neuron 1


def test_pairs_never_active_together_are_named():
    """Second-layer neuron 0 reads relu(x) - 1 and relu(-x) with weight -1: it is active
    only for x > 1, where first-layer neuron 1 is not, so the weight between them is in
    no region's rows (and lowering it keeps the function)."""
    from neuromanifold.relu._fundim.fundim import _never_together

    P = [
        (np.array([[1.0], [-1.0]]), np.zeros(2)),
        (np.array([[1.0, -1.0], [1.0, 1.0]]), np.array([-1.0, 0.0])),
        (np.ones((1, 2)), np.zeros(1)),
    ]
    Ws, bs = [W for W, _ in P], [b for _, b in P]
    X = np.linspace(-3, 3, 61)[:, None] + 1e-3
    pats = [[z[i] > 0 for z in _pre_activations(Ws, bs, X)] for i in range(len(X))]
    text = _never_together(list(zip(X, pats)), None)
    assert "layer 2 neuron 0 never with layer 1 neuron 1" in text
    assert text.startswith("1 pair(s)")
    assert _never_together(list(zip(X, pats)), {0}) == ""  # layer 2 not short: not named
