"""Hand-built pairs of equivalent bottleneck networks related by second-layer flips (shared
by the canonical-form and fiber-search tests)."""

import numpy as np


def linear_block_flip_pair():
    """p with two always-active neurons (= n1, an open set) and q = p with crossing neuron 0
    turned around, its linear term absorbed by the always-active block."""
    W1, b1 = np.array([[1.0, 0.5, 0.0], [0.2, -1.0, 1.0]]), np.array([0.3, -0.2])
    W2 = np.array([[1.0, -2.0], [1.0, 0.5], [0.5, 1.0]])
    b2 = np.array([0.5, 1.0, 2.0])
    W3, b3 = np.array([[1.5, 1.0, -1.0], [0.5, -2.0, 1.0]]), np.array([0.1, -0.3])
    p = [(W1, b1), (W2, b2), (W3, b3)]
    c, a, beta, WA = W3[:, 0], W2[0], b2[0], W2[1:]  # c relu(r) = c relu(-r) + c r
    G = np.outer(c, a) @ np.linalg.inv(WA)
    q = [
        (W1, b1),
        (np.vstack([-a, WA]), np.append(-beta, b2[1:])),
        (np.column_stack([c, W3[:, 1:] + G]), b3 + c * beta - G @ b2[1:]),
    ]
    return p, q


def dead_to_linear_pair():
    """p with a dead neuron and a crossing row with nonnegative weights; q turns the crossing
    neuron around and makes the dead neuron always active to carry its linear term."""
    W1, b1 = np.array([[1.0, 0.5, 0.0], [0.2, -1.0, 1.0]]), np.array([0.3, -0.2])
    W2 = np.array([[1.0, 0.5], [-1.0, -1.0], [1.0, -1.0]])
    b2 = np.array([-1.0, -1.0, 0.5])
    W3, b3 = np.array([[2.0, 0.7, -1.0]]), np.array([0.1])
    p = [(W1, b1), (W2, b2), (W3, b3)]
    q = [
        (W1, b1),
        (np.array([[-1.0, -0.5], [1.0, 0.5], [1.0, -1.0]]), np.array([1.0, 0.0, 0.5])),
        (np.array([[2.0, 2.0, -1.0]]), b3 + 2.0 * -1.0),
    ]
    return p, q


def block_rowspace_pair():
    """p with two always-active neurons, n3 = 1 < 2 and n1 = 3; q factors the same linear
    part ``L = W3[:, A] W2[A]`` through two nonnegative rows spanning a different plane: no
    mixing (which keeps the row space) connects them."""
    W1 = np.array([[1.0, 0.5, 0.0], [0.2, -1.0, 1.0], [0.5, 0.5, -1.0]])
    b1 = np.array([0.25, -0.5, 0.75])
    W2 = np.array([[1.0, -2.0, 0.5], [1.0, 0.5, 0.25], [0.5, 1.0, 2.0]])
    b2 = np.array([0.5, 1.0, 2.0])
    W3, b3 = np.array([[1.5, 1.0, -1.0]]), np.array([0.25])
    p = [(W1, b1), (W2, b2), (W3, b3)]
    L = (W3[:, 1:] @ W2[1:])[0]
    a = np.array([2.0, 0.0, 0.0])
    q = [
        (W1, b1),
        (np.vstack([W2[0], a, a - L]), np.array([b2[0], 0.0, 0.0])),
        (np.array([[1.5, 1.0, -1.0]]), b3 + W3[:, 1:] @ b2[1:]),
    ]
    return p, q
