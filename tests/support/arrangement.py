"""Helpers shared by the tests of the weighted arrangement and of the orthant fiber:
small dyadic one-hidden-layer networks (exact in binary, with many coincidences) and an
independent exact evaluation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def dyadic_one_hidden(rng, d, n, m, pivot_one=False, span=4):
    """Entries k/4: exact in binary, with frequent coincidences. With ``pivot_one`` the
    first entry of every first-layer row is +-1, so canonical normals stay dyadic."""
    W = rng.integers(-span, span + 1, (n, d)) / 4
    if pivot_one:
        W[:, 0] = rng.choice([-1.0, 1.0], n)
    b = rng.integers(-span, span + 1, n) / 4
    C = rng.integers(-span, span + 1, (m, n)) / 4
    g = rng.integers(-span, span + 1, m) / 4
    return [(W, b), (C, g)]


def exact_eval(params, x):
    """The network at a rational point, in exact arithmetic (entries may be Fractions)."""
    (W, b), (C, g) = params
    x = [Fraction(v) for v in x]
    h = []
    for row, bj in zip(np.asarray(W, dtype=object), np.asarray(b, dtype=object)):
        z = sum((Fraction(a) * xi for a, xi in zip(row, x)), Fraction(bj))
        h.append(max(z, Fraction(0)))
    return [
        sum((Fraction(c) * hj for c, hj in zip(crow, h)), Fraction(go))
        for crow, go in zip(np.asarray(C, dtype=object), np.asarray(g, dtype=object))
    ]


def _mixed_row(rng, d):
    while True:
        r = rng.integers(-3, 4, d + 1) / 2
        if (r > 0).any() and (r < 0).any():
            return r


def structured_one_hidden(rng, d, n, m):
    """Dyadic networks of rich types: neurons sharing a hyperplane with both orientations,
    cancelling pairs, linear rows with zero entries, dead rows, zero outgoing weights."""
    rows, Cs = [], []
    while len(rows) < n:
        kind = rng.choice(["H", "Hmulti", "cancel", "lin", "dead", "zeroC"])
        left = n - len(rows)
        if kind == "H":
            rows.append(_mixed_row(rng, d))
            Cs.append(rng.integers(-3, 4, m) / 2)
        elif kind == "Hmulti" and left >= 2:
            r = _mixed_row(rng, d)
            for _ in range(int(rng.integers(2, left + 1))):
                rows.append(r * rng.choice([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0]))
                Cs.append(rng.integers(-3, 4, m) / 2)
        elif kind == "cancel" and left >= 2:
            r, c = _mixed_row(rng, d), rng.integers(-3, 4, m) / 2
            s1, s2 = rng.choice([-2.0, -1.0, 0.5, 1.0], 2)
            rows += [s1 * r, s2 * r]
            Cs += [c / abs(s1), -c / abs(s2)]
        elif kind == "lin":
            rows.append(np.abs(rng.integers(-3, 4, d + 1) / 2) * (rng.random(d + 1) < 0.6))
            Cs.append(rng.integers(-3, 4, m) / 2)
        elif kind == "dead":
            r = -np.abs(rng.integers(-3, 4, d + 1) / 2)
            r[rng.integers(d + 1)] = -1.0
            rows.append(r)
            Cs.append(rng.integers(-3, 4, m) / 2)
        elif kind == "zeroC":
            rows.append(rng.integers(-3, 4, d + 1) / 2)
            Cs.append(np.zeros(m))
    R, C = np.array(rows[:n]), np.array(Cs[:n]).T
    return [(R[:, :d].copy(), R[:, d].copy()), (C.copy(), rng.integers(-3, 4, m) / 2)]


def symmetric_copy(rng, p):
    """A parameter of the same function on the orthant, by the layer-wise symmetries of
    docs/concepts_relu.md §4: permutation and positive (power-of-two) scaling, free outgoing weights
    and any nonpositive row for dead neurons, any row for neurons with zero outgoing weights,
    mixing of the linear neurons by a nonnegative invertible matrix and nonnegative bias
    shifts compensated in b2, a dead neuron turned into a second copy of a visible one."""
    (W, b), (C, g) = p
    R = np.hstack([W, b[:, None]]).astype(float)
    C, g = C.astype(float).copy(), g.astype(float).copy()
    n, d = W.shape
    lin = [j for j in range(n) if (R[j] >= 0).all() and (R[j] > 0).any()]
    dead = [j for j in range(n) if (R[j] <= 0).all() and (R[j] < 0).any()]
    zero_out = [j for j in range(n) if not C[:, j].any() and j not in dead]
    for j in dead:
        C[:, j] = rng.integers(-3, 4, C.shape[0]) / 2
        R[j] = -np.abs(rng.integers(0, 4, d + 1) / 2)
        R[j, rng.integers(d + 1)] = -0.5
    for j in zero_out:
        R[j] = rng.integers(-3, 4, d + 1) / 2
    if lin:
        G = np.eye(len(lin)) + np.triu(rng.integers(0, 2, (len(lin), len(lin))), 1) / 2
        R[lin] = G @ R[lin]  # G >= 0 keeps the rows nonnegative
        C[:, lin] = C[:, lin] @ np.linalg.inv(G)  # unit upper triangular: exact in floats
        shift = rng.integers(0, 3, len(lin)) / 2
        R[lin, d] += shift
        g -= C[:, lin] @ shift
    crossing = [j for j in range(n) if (R[j] > 0).any() and (R[j] < 0).any() and C[:, j].any()]
    if dead and crossing:  # split a visible neuron's jump over a former dead neuron
        j, k = crossing[0], dead[0]
        R[k] = 2 * R[j]
        C[:, k] = C[:, j] / 4
        C[:, j] = C[:, j] / 2
    perm = rng.permutation(n)
    s = 2.0 ** rng.integers(-2, 3, n)
    R, C = R[perm] * s[:, None], C[:, perm] / s
    return [(R[:, :d], R[:, d]), (C, g)]


def float_rescaled_copy(rng, p):
    """p with its hidden neurons permuted and rescaled by random positive floats (not
    powers of two): the same function, up to float64 rounding of every rescaled entry."""
    (W, b), (C, g) = p
    n = W.shape[0]
    perm = rng.permutation(n)
    s = rng.uniform(0.1, 10.0, n)
    return [(W[perm] * s[:, None], b[perm] * s), (C[:, perm] / s, g.copy())]
