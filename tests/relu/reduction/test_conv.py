"""``reduce`` of a convolutional network by channel (``relu/_reduction/conv.py``): every
planted dead, zero-output and duplicate channel of 3- to 6-layer CNNs removed, the
function kept exactly (exact rational outputs of the given and the reduced network, and
the dense unrolling's exact engine on a small one); what is not reduced is said."""

from fractions import Fraction

import numpy as np
import pytest

import neuromanifold as nm
from neuromanifold.relu import ReLUConvNet
from neuromanifold.relu import layers as nl
from tests.support.common import run_cli
from tests.support.relu import planted_cnn


def _same_exactly(p: ReLUConvNet, q: ReLUConvNet, X: np.ndarray) -> bool:
    return all(np.array_equal(p.exact_forward(x[None]), q.exact_forward(x[None])) for x in X)


@pytest.mark.parametrize("depth", [2, 3, 4, 5])
@pytest.mark.parametrize("seed", range(2))
def test_every_planted_channel_is_removed_and_the_function_kept_exactly(seed, depth):
    net, kept = planted_cnn(seed, depth)
    box = (np.zeros(64), np.ones(64))
    r = nm.relu.reduce(net, box)
    assert r.widths_before == (1,) + (5,) * depth + (3,)
    assert r.widths_after == (1,) + tuple(kept) + (3,), r.moves
    assert r.exact and r.bound == 0.0 and r.params == []
    X = np.random.default_rng(seed).uniform(size=(6, 64))
    assert _same_exactly(net, r.network, X)
    kinds = " ".join(r.moves)
    assert "dead channels [1]" in kinds and "zero-output channels [4]" in kinds
    assert "channel 3 = 2 x channel 0, merged" in kinds


def test_the_dense_unrolling_agrees_on_a_small_one():
    """The ground truth of the MLP analyses: the exact engine proves the dense views of
    the given and the reduced network equal on the box."""
    net, _ = planted_cnn(0, 2)
    small = ReLUConvNet(
        input_shape=(1, 4, 4),
        layers=[net.layers[0], nl.ReLU(), nl.Flatten(),
                nl.Dense(np.ones((1, 45)) / 8, np.zeros(1))],
    )  # fmt: skip
    r = nm.relu.reduce(small, (np.zeros(16), np.ones(16)))
    assert r.widths_after[1] < 5
    box = (np.zeros(16), np.ones(16))
    e = nm.relu.equivalent(small.dense_params(), r.network.dense_params(), box, tol=0)
    assert e.equivalent is True and e.certified


def test_a_wrong_merge_would_be_caught():
    """The checks' power: merging channel 3 into 0 without its factor 2 changes the
    exact outputs."""
    net, _ = planted_cnn(1, 2)
    r = nm.relu.reduce(net, (np.zeros(64), np.ones(64)))
    Q = net.layers[2]
    W = Q.weight.copy()
    W[:, 0] += W[:, 3]  # lam forgotten
    wrong = net.with_layers([net.layers[0], net.layers[1], nl.Conv(W, Q.bias, padding=1)]
                            + list(net.layers[3:]))  # fmt: skip
    X = np.random.default_rng(2).uniform(size=(3, 64))
    W2 = net.layers[0].weight.copy()
    W2[3] = 0  # channel 3 silenced in place of removed: the same as removing it
    wrong = wrong.with_layers([nl.Conv(W2, np.where(np.arange(5) == 3, -1.0,
                                                    net.layers[0].bias))]
                              + list(wrong.layers[1:]))  # fmt: skip
    assert _same_exactly(net, r.network, X)
    assert not _same_exactly(net, wrong, X)


def test_a_merge_that_rounds_is_made_with_its_bound():
    """Channel 2 is exactly 3 times channel 0, and the head's merged weights
    ``0.1 + 3 * 0.3`` are no float64 number: the merge is made, the exact merged network
    keeps the function exactly (lossless) and the float one within ``bound``, which the
    exact outputs at sampled inputs respect (and nearly reach: the rounding is real)."""
    W = np.zeros((3, 1, 2, 2))
    W[0, 0] = [[1.0, 2.0], [3.0, 4.0]]
    W[1, 0] = [[1.0, -1.0], [0.5, 2.0]]
    W[2] = 3 * W[0]
    b = np.array([1.0, 0.5, 3.0])
    head = np.zeros((1, 27))
    head[0, :9], head[0, 9:18], head[0, 18:] = 0.1, 0.7, 0.3
    net = ReLUConvNet(
        input_shape=(1, 4, 4),
        layers=[nl.Conv(W, b), nl.ReLU(), nl.Flatten(), nl.Dense(head, np.zeros(1))],
    )
    assert Fraction(0.1) + 3 * Fraction(0.3) != Fraction(0.1 + 3 * 0.3)
    r = nm.relu.reduce(net, (np.zeros(16), np.ones(16)))
    assert r.widths_after == (1, 2, 1) and "channel 2 = 3 x channel 0, merged" in r.moves[0]
    assert r.lossless and not r.exact and 0 < r.bound < 1e-12 * r.scale and r.within_tol
    X = np.random.default_rng(0).uniform(size=(6, 16))
    gaps = [
        Fraction(
            str(abs(net.exact_forward(x[None])[0, 0] - r.network.exact_forward(x[None])[0, 0]))
        )
        for x in X
    ]
    assert all(g <= Fraction(r.bound) * max(1, Fraction(float(np.abs(x).max())))
               for g, x in zip(gaps, X))  # fmt: skip
    assert max(gaps) > 0


def test_the_rounding_bound_is_needed():
    """The bound's own power: merged weights moved by more than their rounding (a
    mutation of the merge) leave the outputs outside the bound computed for the true
    rounding."""
    from neuromanifold.relu._reduction.conv import rounding_bound

    rng = np.random.default_rng(1)
    net = ReLUConvNet(
        input_shape=(1, 4, 4),
        layers=[nl.Conv(rng.standard_normal((2, 1, 2, 2)), np.ones(2)), nl.ReLU(),
                nl.Flatten(), nl.Dense(rng.standard_normal((1, 18)), np.zeros(1))],
    )  # fmt: skip
    E = np.full(net.layers[3].weight.shape, 1e-15)
    bound = rounding_bound(net, {3: E})
    moved = net.with_layers(
        list(net.layers[:3]) + [nl.Dense(net.layers[3].weight + 1e-12, np.zeros(1))]
    )
    x = np.ones((1, 16))
    assert abs(float(moved.forward(x)[0, 0] - net.forward(x)[0, 0])) > bound
    assert 0 < bound < 1e-12


def test_on_all_of_r_d_only_zero_weights_prove_a_channel_dead():
    net, _ = planted_cnn(0, 2)
    r = nm.relu.reduce(net)  # layer 0's channel 1 is dead on the box only
    assert "layer 0 (Conv): dead channels" not in " ".join(r.moves)
    assert "layer 2 (Conv): dead channels [1]" in " ".join(r.moves)
    X = np.random.default_rng(0).normal(size=(4, 64)) * 3
    assert _same_exactly(net, r.network, X)


def test_data_gives_the_box():
    net, _ = planted_cnn(0, 2)
    X = np.random.default_rng(0).uniform(size=(30, 64))
    r = nm.relu.reduce(net, data=X)
    assert r.domain.kind == "box" and "dead channels [1]" in " ".join(r.moves)
    with pytest.raises(nm.InputError, match="must lie in the domain"):
        nm.relu.reduce(net, (np.zeros(64), np.ones(64) * 0.5), data=X)


def test_residual_blocks_are_left_and_said():
    rng = np.random.default_rng(0)
    conv = lambda: nl.Conv(rng.standard_normal((2, 2, 3, 3)), rng.standard_normal(2), padding=1)  # noqa: E731
    net = ReLUConvNet(
        input_shape=(2, 4, 4),
        layers=[nl.Residual([conv(), nl.ReLU(), conv()], []), nl.ReLU(), nl.Flatten(),
                nl.Dense(rng.standard_normal((1, 32)), np.zeros(1))],
    )  # fmt: skip
    r = nm.relu.reduce(net, (np.zeros(32), np.ones(32)))
    assert "residual blocks" in r.note and r.widths_after == r.widths_before


def test_a_reduction_result_round_trips():
    net, _ = planted_cnn(0, 2)
    r = nm.relu.reduce(net, (np.zeros(64), np.ones(64)))
    back = type(r).from_dict(r.to_dict())
    assert back.moves == r.moves and back.widths_after == r.widths_after


def test_the_cli_reduces_a_cnn_file_and_writes_the_smaller_one(tmp_path):
    pytest.importorskip("onnx")
    net, kept = planted_cnn(0, 2)
    nm.io.save(net, tmp_path / "cnn.onnx")
    out = run_cli(
        "relu", "reduce", tmp_path / "cnn.onnx", "--domain", "box:0,1",
        "--out", tmp_path / "small.onnx",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "reduced 1-5-5-3 -> 1-2-2-3" in out.stdout and "wrote" in out.stdout
    small = nm.io.load(tmp_path / "small.onnx").network()
    X = np.random.default_rng(0).uniform(size=(3, 64))
    assert _same_exactly(net, small, X)


@pytest.mark.parametrize("seed", range(3))
def test_float_duplicates_of_trained_looking_weights_are_merged_within_the_bound(seed):
    """He-initialized float weights (not dyadic), a channel planted as 2 (or 0.5) times
    another in each of two convolutions: merged; the outputs at sampled inputs, exactly,
    within the reported bound."""
    rng = np.random.default_rng(seed)
    W1, b1 = rng.normal(size=(4, 1, 3, 3)) * 0.5, rng.normal(size=4) * 0.1
    W1[3], b1[3] = 2 * W1[0], 2 * b1[0]
    W2, b2 = rng.normal(size=(5, 4, 2, 2)) * 0.35, rng.normal(size=5) * 0.1
    W2[4], b2[4] = 0.5 * W2[1], 0.5 * b2[1]
    net = ReLUConvNet(
        input_shape=(1, 6, 6),
        layers=[nl.Conv(W1, b1), nl.ReLU(), nl.Conv(W2, b2), nl.ReLU(), nl.Flatten(),
                nl.Dense(rng.normal(size=(2, 45)), np.zeros(2))],
    )  # fmt: skip
    r = nm.relu.reduce(net, (np.zeros(36), np.ones(36)))
    assert r.widths_after == (1, 3, 4, 2), r.moves
    assert r.lossless and r.within_tol and r.bound < 1e-12 * r.scale
    X = np.random.default_rng(seed + 5).uniform(size=(5, 36))
    for x in X:
        gap = np.abs(net.exact_forward(x[None]) - r.network.exact_forward(x[None])).max()
        assert Fraction(str(gap)) <= Fraction(r.bound) * max(1, Fraction(float(x.max())))


def _far_chain(*, residual: bool) -> ReLUConvNet:
    """A chain whose third layer is positive only near x = 0 (found in review: a radius
    capped at a large finite value, then shrunk by a later layer, once made its channel
    'dead' on R^d and after a residual block)."""
    head = [nl.Dense(np.array([[1.0], [-1.0]]), np.array([0.0, 0.0])), nl.ReLU()]
    if residual:
        head += [nl.Residual(body=[nl.Dense(np.eye(2), np.zeros(2))], skip=[]), nl.ReLU()]
    return ReLUConvNet(
        input_shape=(1,),
        layers=head
        + [nl.Dense(np.array([[4000.0, 4000.0]]), np.array([-1.0])), nl.ReLU(),
           nl.Dense(np.array([[-1e-4], [1e-4]]), np.array([1e-6, 0.0])), nl.ReLU(),
           nl.Dense(np.array([[1.0, 1.0]]), np.array([0.0]))],
    )  # fmt: skip


@pytest.mark.parametrize("residual, domain", [(False, None), (True, (-np.ones(1), np.ones(1)))])
def test_a_channel_live_near_zero_is_kept_when_the_bounds_are_unbounded(residual, domain):
    net = _far_chain(residual=residual)
    r = nm.relu.reduce(net, domain)
    assert not any("dead" in m for m in r.moves), r.moves
    x = np.zeros((1, 1))
    assert np.array_equal(net.exact_forward(x), r.network.exact_forward(x))
    statuses = nm.relu.neurons(net, domain, method="bounds").channels
    assert all(s != "dead" for layer in statuses[-1:] for s in layer)


def test_extreme_magnitudes_keep_the_bound_and_never_crash():
    """Found in review: a rounding bound below the float range was 0 (exact=True for an
    inexact merge), merged weights beyond it raised a builtin OverflowError, and an
    overflowing float forward pass tripped the self-check."""
    tiny = ReLUConvNet(
        input_shape=(1,),
        layers=(nl.Dense(np.array([[1e-20], [2e-20]]), np.zeros(2)), nl.ReLU(),
                nl.Dense(np.array([[1e-300, 3e-301]]), np.zeros(1))),
    )  # fmt: skip
    r = nm.relu.reduce(tiny)
    x = np.ones((1, 1))
    gap = abs(Fraction(str(tiny.exact_forward(x)[0, 0] - r.network.exact_forward(x)[0, 0])))
    assert gap > 0 and not r.exact and gap <= Fraction(r.bound)
    huge = ReLUConvNet(
        input_shape=(1,),
        layers=(nl.Dense(np.array([[1.0], [1.0]]), np.zeros(2)), nl.ReLU(),
                nl.Dense(np.array([[1.5e308, 1.5e308]]), np.zeros(1))),
    )  # fmt: skip
    r = nm.relu.reduce(huge)  # lam = 1, but the merged weight would leave the floats
    assert r.widths_after == (1, 2, 1) and r.exact
