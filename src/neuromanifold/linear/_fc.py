"""Fully connected linear networks (docs/concepts_linear.md §4) and the balanced operator A_W
(docs/concepts_linear.md §3).

Widths ``d_0, ..., d_N``; ``W_l`` has shape ``(d_l, d_{l-1})``; the end-to-end matrix is
``W = W_N ... W_1``. Vectors of matrices are row-major (C order) throughout, so
``vec(A X B) = (A kron B^T) vec(X)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flint
import numpy as np

from .._errors import InputError, ParameterError
from .._validation import (
    as_finite_array,
    as_seed_rng,
    check_finite_result,
    check_positive_int,
    check_widths,
)
from ..exact import fmpq_matrix
from ._base import LinearNetBase, finite_result
from ._fiber_fc import FC_FIBER_TOL, fc_fiber

__all__ = ["LinearFCNet", "balanced_ntk_operator"]


def _psd_power(M: np.ndarray, p: float) -> np.ndarray:
    """``M^p`` for a symmetric positive semidefinite ``M`` (tiny negative eigenvalues clipped)."""
    lam, U = np.linalg.eigh((M + M.T) / 2)
    # eigenvalues at rounding level are zeros of a singular M: a fractional power would
    # blow them up (1e-17 ** (1/3) ~ 2e-6), so they are set to exactly zero
    cutoff = max(M.shape) * np.finfo(float).eps * max(float(np.abs(lam).max(initial=0.0)), 1e-300)
    lam = np.where(lam > cutoff, lam, 0.0)
    if p == 0:
        return U @ U.T
    powered = np.zeros_like(lam)
    powered[lam > 0] = lam[lam > 0] ** p
    return (U * powered) @ U.T


def _fmpq_chain(mats: list, n: int) -> flint.fmpq_mat:
    out = flint.fmpq_mat(n, n)
    for i in range(n):
        out[i, i] = 1
    for M in mats:
        out = M * out
    return out


def balanced_ntk_operator(W: Any, num_layers: int) -> np.ndarray:
    """The matrix of ``A_W(Z) = sum_{j=1}^N (W W^T)^{(N-j)/N} Z (W^T W)^{(j-1)/N}``
    (docs/concepts_linear.md §3).

    This is the NTK of a balanced fully connected network with end-to-end matrix ``W``
    and ``N`` layers (Arora, Cohen, Hazan 2018), acting on row-major ``vec(Z)``.

    Args:
        W: the end-to-end matrix, shape ``(d_N, d_0)``.
        num_layers: N >= 1.

    Returns:
        Array of shape ``(d_N d_0, d_N d_0)``.

    >>> balanced_ntk_operator(np.array([[2.0]]), 2)
    array([[4.]])
    """
    W = as_finite_array(W, "W", ndim=2, error=InputError)
    N = check_positive_int(num_layers, "num_layers", maximum=10_000)
    if W.size == 0:
        raise InputError(f"W must have at least one row and one column; got shape {W.shape}")
    # A_W is homogeneous of degree 2 (N - 1) / N in W: compute at W / 2^e (exact) and
    # scale back, so that W W^T neither overflows nor underflows for extreme magnitudes
    e = int(np.frexp(np.abs(W).max())[1]) if np.any(W) else 0
    W = np.ldexp(W, -e)
    left, right = W @ W.T, W.T @ W
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        out = sum(
            np.kron(_psd_power(left, (N - j) / N), _psd_power(right, (j - 1) / N))
            for j in range(1, N + 1)
        ) * np.power(2.0, 2 * e * (N - 1) / N)
    return check_finite_result(out, "the balanced NTK operator")


class LinearFCNet(LinearNetBase):
    """A fully connected linear network with widths ``(d_0, ..., d_N)`` (docs/concepts_linear.md
    §4).

    Args:
        widths: at least two positive ints; ``W_l`` has shape ``(d_l, d_{l-1})``.

    >>> net = LinearFCNet([3, 2, 3])
    >>> net.dimension   # matrices of rank <= 2 in R^{3x3}
    8
    """

    def __init__(self, widths: Sequence[int]):
        self.widths = check_widths(widths, "LinearFCNet")

    def __repr__(self) -> str:
        return f"LinearFCNet(widths={list(self.widths)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LinearFCNet) and other.widths == self.widths

    def __hash__(self) -> int:
        return hash(("LinearFCNet", self.widths))

    @property
    def shapes(self) -> tuple[tuple[int, int], ...]:
        """``(d_l, d_{l-1})``: the shape of each ``W_l``."""
        return tuple((b, a) for a, b in zip(self.widths[:-1], self.widths[1:]))

    param_shapes = shapes

    def _layer_name(self, l: int) -> str:
        return f"W_{l}"

    @property
    def end_to_end_shape(self) -> tuple[int, int]:
        """Shape ``(d_N, d_0)`` of the end-to-end matrix."""
        return (self.widths[-1], self.widths[0])

    @property
    def end_to_end_size(self) -> int:
        """Number of entries of the end-to-end matrix."""
        return self.widths[-1] * self.widths[0]

    @property
    def rank_bound(self) -> int:
        """``r = min(widths)``: the end-to-end matrix has rank at most r."""
        return min(self.widths)

    @property
    def dimension(self) -> int:
        """Dimension of the neuromanifold (matrices of rank <= r): ``r (d_0 + d_N - r)``."""
        r, d0, dN = self.rank_bound, self.widths[0], self.widths[-1]
        return r * (d0 + dN - r)

    # ------------------------------------------------------------- parameters
    def random_params(self, seed: Any = 0) -> list[np.ndarray]:
        """Gaussian matrices scaled by ``1/sqrt(d_{l-1})``.

        Args:
            seed: an int, None (fresh entropy) or a numpy Generator.
        """
        rng = as_seed_rng(seed)
        return [rng.standard_normal(s) / np.sqrt(s[1]) for s in self.shapes]

    def balanced_params(self, seed: Any = 0, *, end_to_end: Any = None) -> list[np.ndarray]:
        """Balanced parameters (all ``Delta_l = 0``), docs/concepts_linear.md §3.

        With ``end_to_end = U diag(sigma) V^T`` of rank ``<= r = min(widths)``, returns
        ``W_l = U_l diag(sigma)^{1/N} U_{l-1}^T`` with ``U_0 = V``, ``U_N = U`` and random
        orthonormal frames in between, so ``W_{l+1}^T W_{l+1} = W_l W_l^T``.

        Args:
            seed: seed of the random frames (and of the end-to-end matrix if not given):
                an int, None (fresh entropy) or a numpy Generator.
            end_to_end: target matrix ``W`` (shape ``(d_N, d_0)``), of rank at most r;
                default a random rank-r matrix.
        """
        rng = as_seed_rng(seed)
        r, N = self.rank_bound, self.num_layers
        if end_to_end is None:
            W = rng.standard_normal((self.widths[-1], r)) @ rng.standard_normal((r, self.widths[0]))
        else:
            W = as_finite_array(end_to_end, "end_to_end", shape=self.end_to_end_shape)
        # W_l carries sigma^(1/N): factor a power of two out of W first (exact), so that
        # extreme magnitudes neither overflow nor underflow in the SVD
        e = int(np.frexp(np.abs(W).max())[1]) if np.any(W) else 0
        W = np.ldexp(W, -e)
        U, s, Vt = np.linalg.svd(W, full_matrices=False)
        tol = max(W.shape) * np.finfo(float).eps * (s[0] if s.size else 0.0)
        if np.sum(s > tol) > r:
            raise ParameterError(
                f"end_to_end has rank {int(np.sum(s > tol))} but {self!r} realizes rank <= {r}"
            )
        U, s, V = U[:, :r], s[:r], Vt[:r].T
        frames = (
            [V] + [np.linalg.qr(rng.standard_normal((d, r)))[0] for d in self.widths[1:-1]] + [U]
        )
        with np.errstate(divide="ignore"):
            root = np.exp2((np.log2(s) + e) / N)  # (s 2^e)^(1/N), 0 for s = 0
        out = [(frames[l + 1] * root) @ frames[l].T for l in range(N)]
        return check_finite_result(out, f"the balanced parameters of {self!r}")

    # ------------------------------------------------------------- the map mu
    @staticmethod
    def _chain(mats: list[np.ndarray], n: int) -> np.ndarray:
        out = np.eye(n)
        for M in mats:
            out = M @ out
        return out

    def _outer_inner(self, params: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each layer l: ``A_l = W_N ... W_{l+1}`` and ``B_l = W_{l-1} ... W_1``."""
        N = len(params)
        return [
            (
                self._chain(params[l + 1 :], self.widths[l + 1]),
                self._chain(params[:l], self.widths[0]),
            )
            for l in range(N)
        ]

    @finite_result("the end-to-end matrix")
    def end_to_end(self, params: Any) -> np.ndarray:
        """``W = W_N ... W_1``, shape ``(d_N, d_0)``."""
        return self._chain(self.check_params(params), self.widths[0])

    @finite_result("the Jacobian")
    def jacobian(self, params: Any) -> np.ndarray:
        """Rows: entries of W (row-major); columns: entries of each ``W_l`` (row-major), layer
        by layer. Block l is ``A_l kron B_l^T`` since ``W = A_l W_l B_l``."""
        params = self.check_params(params)
        return np.hstack([np.kron(A, B.T) for A, B in self._outer_inner(params)])

    def exact_jacobian(self, params: Any) -> flint.fmpq_mat:
        """The Jacobian computed exactly over the rationals from the (exact binary) float
        parameters, as a ``flint.fmpq_mat``; used for certified ranks."""
        params = [fmpq_matrix(W) for W in self.check_params(params)]
        d0, dN = self.widths[0], self.widths[-1]
        J = flint.fmpq_mat(self.end_to_end_size, self.num_params)
        col = 0
        for l in range(len(params)):
            A = _fmpq_chain(params[l + 1 :], self.widths[l + 1])
            B = _fmpq_chain(params[:l], d0)
            rows_l, cols_l = self.shapes[l]
            # d W[a, c] / d W_l[p, q] = A[a, p] B[q, c]
            for a in range(dN):
                for c in range(d0):
                    row = a * d0 + c
                    for p_ in range(rows_l):
                        Aap = A[a, p_]
                        if Aap == 0:
                            continue
                        for q in range(cols_l):
                            J[row, col + p_ * cols_l + q] = Aap * B[q, c]
            col += rows_l * cols_l
        return J

    @finite_result("the NTK")
    def ntk(self, params: Any) -> np.ndarray:
        """``K = sum_l (A_l A_l^T) kron (B_l^T B_l)`` (docs/concepts_linear.md §4), without forming
        J."""
        params = self.check_params(params)
        return sum(np.kron(A @ A.T, B.T @ B) for A, B in self._outer_inner(params))

    @finite_result("the vector-Jacobian product")
    def vjp(self, params: Any, cotangent: Any) -> list[np.ndarray]:
        """``J^T g`` per layer: ``A_l^T G B_l^T`` for the cotangent matrix ``G``."""
        params = self.check_params(params)
        G = as_finite_array(cotangent, "cotangent", error=InputError)
        if G.size != self.end_to_end_size:
            raise InputError(
                f"cotangent must have {self.end_to_end_size} entries "
                f"(shape {self.end_to_end_shape}); got shape {G.shape}"
            )
        G = G.reshape(self.end_to_end_shape)
        return [A.T @ G @ B.T for A, B in self._outer_inner(params)]

    @finite_result("the invariants")
    def invariants(self, params: Any) -> list[np.ndarray]:
        """``Delta_l = W_{l+1}^T W_{l+1} - W_l W_l^T`` (each ``d_l x d_l``), l = 1..N-1."""
        params = self.check_params(params)
        return [
            params[l + 1].T @ params[l + 1] - params[l] @ params[l].T
            for l in range(len(params) - 1)
        ]

    @finite_result("the output")
    def apply(self, params: Any, x: Any) -> np.ndarray:
        """Apply the network to vectors ``x`` of shape ``(..., d_0)``, layer after layer."""
        params = self.check_params(params)
        x = as_finite_array(x, "x", error=InputError)
        if x.ndim == 0 or x.shape[-1] != self.widths[0]:
            raise InputError(f"x must have shape (..., {self.widths[0]}); got shape {x.shape}")
        for W in params:
            x = x @ W.T
        return x

    def end_to_end_operator(self, x: Any) -> np.ndarray:
        """The matrix ``M`` with ``M @ W.ravel() == W @ x`` for one input vector ``x``."""
        x = as_finite_array(x, "x", shape=(self.widths[0],), error=InputError)
        return np.kron(np.eye(self.widths[-1]), x[None, :])

    def fiber(
        self,
        W: Any,
        invariants: Any,
        *,
        num_starts: int = 20,
        seed: Any = 0,
        start: Any = None,
        walk_steps: int = 4,
        tol: float = FC_FIBER_TOL,
        progress: bool = False,
    ):
        """Sample the fiber at fixed ``(W, Delta)`` numerically (docs/concepts_linear.md §4).

        Levenberg-Marquardt on ``mu(theta) = W``, ``Delta(theta) = Delta`` from
        ``num_starts`` random starts (plus ``start``, optional parameters used as one more
        start), then ``walk_steps`` random steps along the fiber from every point found;
        a point counts when its relative residual is below ``tol``; ``progress`` shows a
        progress bar on stderr (see :func:`neuromanifold.linear._fiber_fc.fc_fiber`).
        Returns a :class:`~neuromanifold.linear.Fiber` with ``certified=False`` and
        ``dimension`` (kernel dimension of the constraint Jacobian).

        >>> net = LinearFCNet([2, 2, 2])
        >>> p = net.balanced_params(seed=0)
        >>> fib = net.fiber(net.end_to_end(p), net.invariants(p), num_starts=3, seed=0)
        >>> fib.dimension, fib.certified
        (1, False)
        """
        return fc_fiber(
            self,
            W,
            invariants,
            num_starts=num_starts,
            seed=seed,
            start=start,
            walk_steps=walk_steps,
            tol=tol,
            progress=progress,
        )
