"""Helpers for the ReLU test files: small random networks and an independent brute force."""

from __future__ import annotations

import itertools

import flint
import numpy as np

from neuromanifold.exact import to_fmpq
from neuromanifold.exact._lp import strict_interior_point
from neuromanifold.relu import ReLUConvNet, as_domain
from neuromanifold.relu import layers as nl
from neuromanifold.relu._engine.cells import ExactNet


def dyadic_net(rng, widths, scale=2):
    """Weights in {-2, ..., 2} / scale: exact in binary, with many exact coincidences
    (dead neurons, parallel and repeated hyperplanes) that stress the exact engine."""
    return [
        (rng.integers(-2, 3, (m, n)) / scale, rng.integers(-2, 3, m) / scale)
        for n, m in zip(widths[:-1], widths[1:])
    ]


def permuted_rescaled(p, rng, exponents=(-3, 3)):
    """A copy of ``p`` with every hidden layer's neurons permuted and positively rescaled
    by powers of two ``2^k``, ``k`` in ``exponents`` (exact in floats): same function."""
    q = [(np.array(W, float), np.array(b, float)) for W, b in p]
    for l in range(len(q) - 1):
        n = q[l][0].shape[0]
        perm = rng.permutation(n)
        s = 2.0 ** rng.integers(exponents[0], exponents[1] + 1, n)
        W, b = q[l]
        q[l] = (W[perm] * s[:, None], b[perm] * s)
        Wn, bn = q[l + 1]
        q[l + 1] = (Wn[:, perm] / s[None, :], bn)
    return q


def brute_force_patterns(params, domain=None) -> set:
    """Every activation pattern (flattened tuple of bools) on a full-dimensional set,
    found by trying all 2^n patterns with the exact rational simplex: the naive ground truth.
    A neuron whose pre-activation is constant on the candidate set must have the sign its
    bit says (exactly 0 counts as inactive)."""
    net = ExactNet([(np.asarray(W, float), np.asarray(b, float)) for W, b in params])
    d = net.d
    dom = as_domain(domain, d)
    sizes = [net.widths[l + 1] for l in net.hidden_layers]
    found = set()
    for bits in itertools.product([False, True], repeat=sum(sizes)):
        rows = [[to_fmpq(float(v)) for v in r] for r in dom.A]
        offs = [to_fmpq(float(v)) for v in dom.c]
        H = flint.fmpq_mat(d, d + 1, [1 if j == i else 0 for i in range(d) for j in range(d + 1)])
        pos, ok = 0, True
        for l in net.hidden_layers:
            Z = net.Wq[l] * H + net.Baugq[l]
            m = sizes[l]
            e = Z.entries()
            D = flint.fmpq_mat(m, m)
            for j in range(m):
                a, c, act = e[j * (d + 1) : j * (d + 1) + d], e[j * (d + 1) + d], bits[pos + j]
                if all(v == 0 for v in a):
                    ok = ok and (act == (c > 0))
                elif act:
                    rows.append([-v for v in a])
                    offs.append(c)
                else:
                    rows.append(list(a))
                    offs.append(-c)
                if act:
                    D[j, j] = 1
            pos += m
            H = D * Z
            if not ok:
                break
        if ok and (not rows or strict_interior_point(rows, offs, dim=d) is not None):
            found.add(bits)
    return found


def flat_pattern(region) -> tuple:
    return tuple(bool(v) for v in np.concatenate(region.pattern)) if region.pattern else ()


def float_permuted_rescaled(p, rng, log_range=2.0):
    """A copy of ``p`` with every hidden layer's neurons permuted and positively rescaled
    by random float factors ``exp(U(-log_range, log_range))`` (not powers of two, as every
    real rescaling): the same function up to float rounding."""
    q = [(np.array(W, float), np.array(b, float)) for W, b in p]
    for l in range(len(q) - 1):
        n = q[l][0].shape[0]
        perm = rng.permutation(n)
        s = np.exp(rng.uniform(-log_range, log_range, n))
        W, b = q[l]
        q[l] = (W[perm] * s[:, None], b[perm] * s)
        Wn, bn = q[l + 1]
        q[l + 1] = (Wn[:, perm] / s[None, :], bn)
    return q


def domain_samples(domain, d, rng, n=4000):
    """Points of a domain (None, "orthant" or a scalar box) over many scales."""
    if isinstance(domain, tuple):
        return rng.uniform(domain[0], domain[1], (n, d))
    X = rng.standard_normal((n, d)) * np.exp(rng.uniform(-2, 4, (n, 1)))
    return np.abs(X) if domain == "orthant" else X


def live_output_weight(p, domain, rng):
    """``(o, j, effect)``: the last-layer weight whose neuron shows most on the domain,
    ``effect = max_x |W_L[o, j]| h_j(x) / max(1, ||x||_inf)`` over samples (0 if none)."""
    X = domain_samples(domain, p[0][0].shape[1], rng)
    H = X
    for W, b in p[:-1]:
        H = np.maximum(H @ W.T + b, 0.0)
    act = (H / np.maximum(1.0, np.abs(X).max(axis=1))[:, None]).max(axis=0)
    eff = np.abs(p[-1][0]) * act[None, :]
    o, j = np.unravel_index(int(np.argmax(eff)), eff.shape)
    return int(o), int(j), float(eff[o, j])


def exact_outputs(params, x):
    """The outputs at ``x`` in exact rational arithmetic (Fractions), an independent
    forward pass of the float entries."""
    from fractions import Fraction

    h = [Fraction(float(v)) for v in x]
    for l, (W, b) in enumerate(params):
        z = [
            sum((Fraction(float(w)) * v for w, v in zip(row, h)), Fraction(float(c)))
            for row, c in zip(np.asarray(W), np.asarray(b))
        ]
        h = z if l == len(params) - 1 else [max(v, Fraction(0)) for v in z]
    return h


def _eighths(rng, shape):
    """Weights on a grid of 1/8: sums and merges of them are float64 numbers."""
    return np.round(rng.standard_normal(shape) * 8) / 8


def planted_cnn(seed: int, depth: int):
    """A CNN of ``depth`` convolutions (then a dense head) on 1x8x8 inputs in [0, 1], with
    one dead, one zero-output and one duplicate channel planted in every convolution;
    returns the network and the channels each convolution should keep."""
    rng = np.random.default_rng(seed)
    channels, layers, kept = 1, [], []
    size = 8
    for k in range(depth):
        out = 5
        W, b = _eighths(rng, (out, channels, 2, 2)), _eighths(rng, out)
        W[[0, 2]], b[[0, 2]] = np.abs(W[[0, 2]]), 0.5  # alive: positive on every input
        if k == 0:  # dead on [0, 1]^64: nonpositive weights, negative bias
            W[1], b[1] = -np.abs(W[1]), -0.5
        else:  # dead everywhere: zero weights, bias <= 0
            W[1], b[1] = 0.0, -0.25
        W[3], b[3] = 2 * W[0], 2 * b[0]  # a duplicate of channel 0
        layers += [nl.Conv(W, b, padding=1 if k % 2 else 0), nl.ReLU()]
        size = size + (1 if k % 2 else -1)
        channels = out
        kept.append(2)  # channels 0 and 2: 1 dead, 3 merged, 4 zero-output (below)
    head = _eighths(rng, (3, channels * size * size))
    layers += [nl.Flatten(), nl.Dense(head, _eighths(rng, 3))]
    net = ReLUConvNet(input_shape=(1, 8, 8), layers=layers)
    # channel 4 of every convolution: nothing reads it
    fixed = list(net.layers)
    for k in range(depth):
        nxt = 2 * (k + 1)
        Q = fixed[nxt + 1] if k == depth - 1 else fixed[nxt]
        if k == depth - 1:
            W = Q.weight.reshape(3, channels, -1).copy()
            W[:, 4] = 0
            fixed[nxt + 1] = nl.Dense(W.reshape(3, -1), Q.bias)
        else:
            W = Q.weight.copy()
            W[:, 4] = 0
            fixed[nxt] = nl.Conv(W, Q.bias, padding=Q.padding)
    return net.with_layers(fixed), kept
