"""Independent checks for the non-localizability and ReLU reproduction tests: parameter
Jacobian ranks sampled inside every linear region (float, ``ReLUNet.jacobian``), the two
halves of a three-layer network, cancelling orientations by brute force."""

from __future__ import annotations

import itertools

import numpy as np

from neuromanifold import relu


def sampled_rank(layers, ncols=None, domain=None, seed=0):
    """Numerical rank of the parameter Jacobian (float, ``ReLUNet.jacobian``) at points
    inside every linear region (its interior point and d nearby points within its margin),
    restricted to the first ``ncols`` columns; the singular value gap must be clear."""
    rng = np.random.default_rng(seed)
    d = layers[0][0].shape[1]
    net = relu.ReLUNet.from_params(layers)
    pts = []
    for R in relu.regions(layers, domain).regions:
        pts.append(R.point)
        for _ in range(d + 1):
            u = rng.standard_normal(d)
            pts.append(R.point + 0.4 * R.margin * u / np.linalg.norm(u))
    J = net.jacobian(layers, np.array(pts))
    J = J[:, :ncols] if ncols is not None else J
    J = J / np.maximum(np.linalg.norm(J, axis=0), 1e-300)
    s = np.linalg.svd(J, compute_uv=False)
    if s[0] == 0:
        return 0
    rank = int(np.sum(s > 1e-9 * s[0]))
    assert rank == len(s) or s[rank] < 1e-12 * s[0], f"no clear gap: {s}"
    return rank


def halves(p):
    (W1, b1), (W2, b2), (W3, b3) = p
    n2 = W2.shape[0]
    return [(W1, b1), (W2, b2), (np.eye(n2), np.zeros(n2))], [(W2, b2), (W3, b3)]


def cancelling(p):
    """Brute force: nonempty sets S with sum_{j in S} W3[:, j] W2[j] = 0 (floats, exact here
    since the examples are dyadic or random)."""
    _, (W2, _), (W3, _) = p
    n2 = W2.shape[0]
    return [
        S
        for k in range(1, n2 + 1)
        for S in itertools.combinations(range(n2), k)
        if np.allclose(sum(np.outer(W3[:, j], W2[j]) for j in S), 0, atol=1e-14)
    ]
