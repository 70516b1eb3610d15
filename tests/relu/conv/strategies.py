"""Random convolutional networks for property tests: plain chains of every layer kind,
networks with residual blocks, and random channel symmetries of a network."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import neuromanifold as nm
from neuromanifold.relu import ReLUConvNet, channel_spec
from neuromanifold.relu import layers as nl
from neuromanifold.relu._symmetries.channels import ChannelSymmetry


def random_channel_symmetries(net, rng, pow2: bool) -> tuple:
    """A random permutation and positive scaling of every channel group of ``net``
    (scales powers of two, or uniform in [0.3, 3])."""
    return tuple(
        ChannelSymmetry(
            group=g.name,
            perm=tuple(rng.permutation(g.size).tolist()),
            scale=tuple(
                (
                    2.0 ** rng.integers(-3, 4, g.size) if pow2 else rng.uniform(0.3, 3, g.size)
                ).tolist()
            ),
        )
        for g in channel_spec(net).groups
    )


@st.composite
def conv_nets(draw):
    """Random small CNNs: 1-D or 2-D, stride, padding, dilation, max/avg pooling before or
    after the ReLU, a global average pooling or a flatten, one or two dense layers."""
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    two_d = draw(st.booleans())
    size = draw(st.integers(5, 8))
    c0, c1, c2 = (draw(st.integers(1, 3)) for _ in range(3))
    k = (3, 3) if two_d else (3,)
    shape = (c0, size, size) if two_d else (c0, size)
    pad = draw(st.integers(0, 1))
    layers = [
        nl.Conv(
            rng.normal(size=(c1, c0, *k)), rng.normal(size=c1), stride=1, padding=pad, dilation=1
        )
    ]
    pool = draw(st.sampled_from(["max_before", "max_after", "avg", "none"]))
    pk = (2, 2) if two_d else (2,)
    if pool == "max_before":
        layers += [nl.MaxPool(kernel=pk, stride=1), nl.ReLU()]
    elif pool == "max_after":
        layers += [nl.ReLU(), nl.MaxPool(kernel=pk, stride=draw(st.integers(1, 2)))]
    elif pool == "avg":
        layers += [nl.ReLU(), nl.AvgPool(kernel=pk)]
    else:
        layers += [nl.ReLU()]
    dil = draw(st.integers(1, 2))
    layers.append(
        nl.Conv(
            rng.normal(size=(c2, c1, *k)),
            rng.normal(size=c2),
            stride=draw(st.integers(1, 2)),
            dilation=dil,
            padding=1,
        )
    )
    layers.append(nl.ReLU())
    if draw(st.booleans()):
        layers.append(nl.GlobalAvgPool())
    layers.append(nl.Flatten())
    try:
        width = ReLUConvNet(input_shape=shape, layers=layers).output_dim
    except nm.ArchitectureError:
        from hypothesis import assume

        assume(False)
    hidden = draw(st.integers(1, 4))
    layers += [nl.Dense(rng.normal(size=(hidden, width)), rng.normal(size=hidden)), nl.ReLU()]
    layers.append(nl.Dense(rng.normal(size=(2, hidden)), rng.normal(size=2)))
    return ReLUConvNet(input_shape=shape, layers=layers), rng


def conv_layer(rng, cin, cout, k=3, stride=1, two_d=True):
    shape = (cout, cin, k, k) if two_d else (cout, cin, k)
    return nl.Conv(
        rng.normal(size=shape) / np.sqrt(cin * k), rng.normal(size=cout) * 0.3,
        stride=stride, padding=k // 2,
    )  # fmt: skip


@st.composite
def residual_nets(draw):
    """Small networks with residual blocks: identity and projection skips, a block on the
    raw input (not known nonnegative), a max pooling inside a body, a nested block."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    two_d = draw(st.booleans())
    size = 4 if two_d else 6
    c0, c1, c2 = (draw(st.integers(1, 3)) for _ in range(3))
    shape = (c0, size, size) if two_d else (c0, size)
    layers: list = []
    if draw(st.booleans()):  # a block first, on the raw input
        layers += [nl.Residual([conv_layer(rng, c0, c0, two_d=two_d), nl.ReLU(),
                                conv_layer(rng, c0, c0, two_d=two_d)]), nl.ReLU()]  # fmt: skip
    layers += [conv_layer(rng, c0, c1, two_d=two_d), nl.ReLU()]
    body = [conv_layer(rng, c1, c1, two_d=two_d), nl.ReLU()]
    if draw(st.booleans()):  # a nested block
        body += [nl.Residual([conv_layer(rng, c1, c1, two_d=two_d), nl.ReLU(),
                              conv_layer(rng, c1, c1, two_d=two_d)]), nl.ReLU()]  # fmt: skip
    body.append(conv_layer(rng, c1, c1, two_d=two_d))
    layers += [nl.Residual(body), nl.ReLU()]
    if draw(st.booleans()):  # a projection block that halves the size
        pool = [nl.MaxPool(kernel=1)] if draw(st.booleans()) else []
        layers += [
            nl.Residual(
                [conv_layer(rng, c1, c2, stride=2, two_d=two_d), *pool, nl.ReLU(),
                 conv_layer(rng, c2, c2, two_d=two_d)],
                [conv_layer(rng, c1, c2, k=1, stride=2, two_d=two_d)],
            ),
            nl.ReLU(),
        ]  # fmt: skip
        c1 = c2
    layers += [nl.GlobalAvgPool(), nl.Flatten(), nl.Dense(rng.normal(size=(2, c1)), np.zeros(2))]
    return ReLUConvNet(input_shape=shape, layers=layers), rng
