"""Bent hyperplanes: pieces, visibility and gradient jumps."""

from fractions import Fraction
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold.relu import ReLUNet, bent_hyperplanes, forward


@settings(max_examples=15, deadline=None)
@given(d=st.integers(1, 3), n=st.integers(1, 5), seed=st.integers(0, 10**6))
def test_one_hidden_layer_pieces_and_jumps(d, n, seed):
    p = ReLUNet([d, n, 2]).random_params(seed)
    B = bent_hyperplanes(p)
    (W1, b1), (W2, _) = p
    for nu in B.neurons:
        j = nu.index
        # H_j is cut by the other n-1 hyperplanes (general position) into this many pieces
        assert nu.num_pieces == sum(comb(n - 1, i) for i in range(d))
        assert nu.status == "visible"
        expected = np.array(
            [
                [Fraction(float(W2[o, j])) * Fraction(float(W1[j, k])) for k in range(d)]
                for o in range(2)
            ],
            dtype=object,
        )
        for piece in nu.pieces:
            assert (piece.jump == expected).all()  # c_j a_j^T exactly (docs/concepts_relu.md §2)
            assert piece.visible


def test_zero_outgoing_weight_is_hidden_and_dead_neuron_is_dead():
    W1 = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    b1 = np.array([0.0, 0.0, -1.0])  # neuron 2 is dead everywhere
    W2 = np.array([[1.0, 0.0, 5.0]])  # neuron 1 has no outgoing weight
    B = bent_hyperplanes([(W1, b1), (W2, np.zeros(1))])
    assert [n.status for n in B.neurons] == ["visible", "hidden", "dead"]
    assert B.num_visible == 1 and B.num_hidden == 1 and not B.all_visible
    lin = [(np.array([[1.0]]), np.array([5.0])), (np.array([[1.0]]), np.zeros(1))]
    assert bent_hyperplanes(lin, domain=(-1, 1)).neurons[0].status == "linear"


def _hiding(t):
    return [
        (np.array([[1.0]]), np.array([t])),
        (np.array([[1.0]]), np.array([-1.0 - t])),
        (np.array([[1.0]]), np.array([0.0])),
    ]


@pytest.mark.parametrize("t", [-0.5, 0.0, 2.0])
def test_spec_hiding_family_first_layer_hidden(t):
    B = bent_hyperplanes(_hiding(t))
    assert B.neuron(1, 0).status == "hidden"
    assert B.neuron(2, 0).status == "visible"
    piece = B.neuron(2, 0).pieces[0]
    assert float(piece.point_exact[0]) == 1.0  # relu(x - 1) bends at x = 1
    assert piece.jump[0, 0] == 1


def test_sign_flip_hiding_pattern_hides_exactly_one_first_layer_neuron():
    # docs/concepts_relu.md §5: a single second-layer row positive in column i only, negative bias
    rng = np.random.default_rng(3)
    W1, b1 = rng.standard_normal((3, 3)), rng.standard_normal(3)
    W2, b2 = np.array([[-0.7, 1.3, -0.4]]), np.array([-0.5])
    B = bent_hyperplanes([(W1, b1), (W2, b2), (np.array([[1.5]]), np.zeros(1))])
    assert [n.status for n in B.neurons[:3]] == ["visible", "hidden", "visible"]


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10**6), domain=st.sampled_from([None, (-2, 2), "orthant"]))
def test_pieces_lie_on_hyperplanes_and_jumps_match_forward(seed, domain):
    widths = [2, 3, 3, 1]
    p = ReLUNet(widths).random_params(seed)
    B = bent_hyperplanes(p, domain=domain)
    R = B.regions
    for nu in B.neurons:
        for piece in nu.pieces:
            y = piece.point_exact
            assert sum(a * v for a, v in zip(piece.normal, y)) + piece.offset == 0
            assert R.domain.contains(piece.point[None, :])[0]
            act = R[piece.region].pattern[nu.layer - 1][nu.index]
            inact = R[piece.neighbor].pattern[nu.layer - 1][nu.index]
            assert act and not inact
            jump = R[piece.region].linear - R[piece.neighbor].linear
            assert (jump == piece.jump).all()
            # numerically: one-sided gradients of forward at the piece differ by the jump
            nrm = np.array([float(v) for v in piece.normal])
            nrm /= np.linalg.norm(nrm)
            h = min(piece.margin, 1e-3) / 4

            def grad(x):
                e = 1e-2 * h
                return np.array(
                    [
                        (forward(p, x + e * ek) - forward(p, x - e * ek))[0] / (2 * e)
                        for ek in np.eye(2)
                    ]
                )

            g_plus, g_minus = grad(piece.point + h * nrm), grad(piece.point - h * nrm)
            np.testing.assert_allclose(g_plus - g_minus, piece.jump[0].astype(float), atol=1e-5)


def test_result_serializes():
    import json

    B = bent_hyperplanes(ReLUNet([2, 2, 1]).random_params(1))
    d = B.to_dict()
    assert json.dumps(d) and len(d["neurons"]) == 2


def test_unknown_neuron_is_a_clear_error():
    from neuromanifold import InputError

    B = bent_hyperplanes(ReLUNet([2, 3, 1]).random_params(0))
    assert B.neuron(1, 2).index == 2
    with pytest.raises(InputError, match="1-based"):
        B.neuron(2, 0)  # there is only one hidden layer


def test_visibility_at_a_tolerance():
    """A jump of 1e-13 relative to the path norm is hidden at the default tol and visible
    exactly; the result reports tol, scale and each piece's relative jump."""
    W1, b1 = np.array([[1.0], [1.0]]), np.array([0.0, -1.0])
    p = [(W1, b1), (np.array([[1.0, 1e-13]]), np.zeros(1))]
    B = bent_hyperplanes(p)
    assert [n.status for n in B.neurons] == ["visible", "hidden"] and B.tol == 1e-9
    assert B.neurons[1].pieces[0].jump_size == pytest.approx(1e-13 / B.scale)
    assert [n.status for n in bent_hyperplanes(p, tol=0).neurons] == ["visible", "visible"]
    assert bent_hyperplanes(p, tol=1e-14).neurons[1].status == "visible"
    # 2**-1000 magnitudes: the same statuses and relative jumps
    q = [(W1 * 2.0**-1000, b1 * 2.0**-1000), (p[1][0] * 2.0**1000, p[1][1])]
    Bq = bent_hyperplanes(q)
    assert [n.status for n in Bq.neurons] == ["visible", "hidden"]
    assert [pc.jump_size for n in Bq.neurons for pc in n.pieces] == [
        pc.jump_size for n in B.neurons for pc in n.pieces
    ]
