"""Fast evaluations of a linear convolutional network's map, Jacobian and gradient-flow
velocity on flat parameter vectors, offered to the shared flows (which import no domain)
through :func:`neuromanifold.flows._library.register_fast_path` when this package loads.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..flows._library import register_fast_path

__all__ = ["MONOMIAL_MAX_TERMS", "Conv1DFastPath", "MonomialPath"]


#: most index combinations (products of one entry per filter) of the monomial path
MONOMIAL_MAX_TERMS = 4096


class MonomialPath:
    """``mu`` and the flow's velocity of a small :class:`LinearConvNet` (any D) from its
    monomials: every entry of v is a sum of products ``w_1[c_1] ... w_L[c_L]`` with
    ``sum_l c_l S_{l-1} = i`` (docs/concepts_linear.md §1), so with the index tuples
    ``c`` listed once per network, ``v`` is one gather, one product and one ``bincount``,
    and the gradient of layer l sums ``g[i(c)] prod_{m != l} w_m[c_m]`` over the tuples
    (prefix and suffix products along the layers, no division). A handful of numpy
    calls on arrays of ``L * prod |w_l|`` entries, for networks with at most
    :data:`MONOMIAL_MAX_TERMS` tuples; larger ones use the convolution path."""

    def __init__(self, net: Any):
        sizes = [int(np.prod(k)) for k in net.filter_shapes]
        offsets = net._flat_plan()[0]
        grids = np.indices(sizes).reshape(len(sizes), -1)  # (L, C): c_l per tuple
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.pidx = grids + starts[:, None]  # index of w_l[c_l] in theta
        self.flat_pidx = self.pidx.ravel()
        self.pos = sum(o[c] for o, c in zip(offsets, grids))  # flat position in v
        self.n, self.P, self.L = net.end_to_end_size, int(sum(sizes)), len(sizes)

    @staticmethod
    def applies(net: Any) -> bool:
        """Whether ``net`` is a linear convolutional network with few monomials."""
        shapes = getattr(net, "filter_shapes", None)
        return (
            hasattr(net, "_flat_plan")
            and shapes is not None
            and math.prod(math.prod(k) for k in shapes) <= MONOMIAL_MAX_TERMS
        )

    def velocity(self, theta: np.ndarray, A: np.ndarray, target: np.ndarray) -> np.ndarray:
        """``-J^T A (mu(theta) - target)``: minus the gradient of the quadratic loss."""
        with np.errstate(over="ignore", invalid="ignore"):
            G = theta[self.pidx]  # (L, C)
            L = self.L
            E = np.empty_like(G)
            if L == 1:
                E[0], m = 1.0, G[0]
            else:
                # E[l] = prod_{m != l} G[m] from running products (L is small: a loop of
                # 3L - 4 products beats cumprod's overhead)
                pre = [G[0]]
                for l in range(1, L - 1):
                    pre.append(pre[-1] * G[l])
                suf = G[L - 1]
                E[L - 1] = pre[L - 2]
                for l in range(L - 2, 0, -1):
                    E[l] = pre[l - 1] * suf
                    suf = suf * G[l]
                E[0] = suf
                m = E[L - 1] * G[L - 1]
            g = A @ (np.bincount(self.pos, m, minlength=self.n) - target)
            return -np.bincount(self.flat_pidx, (E * g[self.pos]).ravel(), minlength=self.P)


class Conv1DFastPath:
    """``mu``, its Jacobian and the flow's velocity for a 1D :class:`LinearConvNet`, with
    numpy's 1D convolution on flat parameter vectors (the formulas of
    docs/concepts_linear.md §2, as in ``net.end_to_end``, ``net.jacobian`` and
    ``net.vjp``, without their per-call overhead)."""

    def __init__(self, net: Any):
        self.sizes = [k[0] for k in net.filter_shapes]
        self.strides = [s[0] for s in net.cumulative_strides]
        self.cuts = np.cumsum(self.sizes)[:-1]
        self.n = net.end_to_end_size

    @staticmethod
    def applies(net: Any) -> bool:
        """Whether ``net`` is a 1D linear convolutional network."""
        return (
            getattr(net, "ndim", None) == 1
            and hasattr(net, "cumulative_strides")
            and hasattr(net, "filter_shapes")
            and hasattr(net, "end_to_end_size")
        )

    def parts(self, theta: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """``v = mu(theta)`` and the products ``P_l`` of all layers but l."""
        ups = []
        for w, s in zip(np.split(theta, self.cuts), self.strides):
            u = np.zeros((w.size - 1) * s + 1)
            u[::s] = w
            ups.append(u)
        one = np.ones(1)
        prefix, suffix = [one], [one]
        with np.errstate(over="ignore", invalid="ignore"):
            for u in ups[:-1]:
                prefix.append(np.convolve(prefix[-1], u))
            for u in ups[:0:-1]:
                suffix.append(np.convolve(suffix[-1], u))
            suffix = suffix[::-1]
            v = np.convolve(prefix[-1], ups[-1])
            P = [np.convolve(pre, suf) for pre, suf in zip(prefix, suffix)]
        return v, P

    def jacobian(self, theta: np.ndarray) -> np.ndarray:
        """The Jacobian of mu: column j of block l is ``P_l`` shifted by ``j S_{l-1}``."""
        _, P = self.parts(theta)
        J = np.zeros((self.n, int(sum(self.sizes))))
        col = 0
        for p, k, s in zip(P, self.sizes, self.strides):
            for j in range(k):
                J[j * s : j * s + p.size, col] = p
                col += 1
        return J

    def velocity(self, theta: np.ndarray, A: np.ndarray, target: np.ndarray) -> np.ndarray:
        """``-J^T A (mu(theta) - target)``: minus the gradient of the quadratic loss."""
        v, P = self.parts(theta)
        with np.errstate(over="ignore", invalid="ignore"):
            g = A @ (v - target)
            # d<g, v>/d w_l[j] = sum_i g[i + j S] P_l[i]
            return -np.concatenate(
                [
                    np.correlate(g, p, "valid")[::s][:k]
                    for p, k, s in zip(P, self.sizes, self.strides)
                ]
            )


# offered to the shared flows in the order they try them: the monomials first (a dozen numpy
# calls), then the 1D convolution
register_fast_path(MonomialPath, "monomials")
register_fast_path(Conv1DFastPath, "convolution")
