"""Sampled fibers of fully connected linear networks at fixed (W, Delta) (docs/concepts_linear.md
§4).

The fiber ``{theta : W_N...W_1 = W, W_{l+1}^T W_{l+1} - W_l W_l^T = Delta_l}`` is a real
algebraic set of positive dimension (generically ``sum_l d_l (d_l - 1) / 2``: the
Delta-preserving part of the moves ``W_l -> G_l W_l G_{l-1}^{-1}``; orthogonal G_l when
balanced). It is sampled, not enumerated:

1. damped Gauss-Newton (Levenberg-Marquardt with minimum-norm steps, since there are
   fewer equations than unknowns) on the constraints from many random starts;
2. a random walk along every point found: a step in the kernel of the constraint
   Jacobian (a tangent direction of the fiber) followed by re-projection.

The dimension reported is the kernel dimension of the constraint Jacobian at the points
(an upper bound on the local dimension, equal to it where the constraints are regular).
Nothing here is certified.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import InputError, NotInNeuromanifoldError, short_repr
from .._progress import progress_bar
from .._validation import (
    as_finite_array,
    as_seed_rng,
    check_bool,
    check_finite_result,
    check_nonnegative_int,
    check_positive_float,
    check_positive_int,
)
from ..fibers import Fiber

__all__ = ["fc_fiber"]

#: default relative residual of a fully connected fiber's points: Newton's method on the
#: polynomial equations reaches it in a few steps, far below the residual of a fitted point
FC_FIBER_TOL = 1e-11


def _parse(net, W: Any, invariants: Any) -> tuple[np.ndarray, list[np.ndarray]]:
    W = as_finite_array(W, "end-to-end matrix W", shape=net.end_to_end_shape, error=InputError)
    N = net.num_layers
    if isinstance(invariants, np.ndarray) and invariants.ndim == 3:
        invariants = list(invariants)
    if (
        isinstance(invariants, (str, bytes))
        or not isinstance(invariants, Sequence)
        or len(invariants) != N - 1
    ):
        raise InputError(
            f"invariants must be a list of N - 1 = {N - 1} matrices Delta_l "
            f"(Delta_l = W_(l+1)^T W_(l+1) - W_l W_l^T) for {net!r}; "
            f"got {short_repr(invariants)}"
        )
    deltas = []
    for l, Dl in enumerate(invariants, start=1):
        d = net.widths[l]
        Dl = as_finite_array(Dl, f"Delta_{l}", shape=(d, d), error=InputError)
        if not np.allclose(Dl, Dl.T, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(Dl).max())):
            raise InputError(
                f"Delta_{l} must be symmetric (it is W_(l+1)^T W_(l+1) - W_l W_l^T); "
                f"got {short_repr(Dl)}"
            )
        deltas.append((Dl + Dl.T) / 2)
    return W, deltas


class _Constraints:
    """Residual and Jacobian of ``(mu(theta) - W, upper(Delta_l(theta) - Delta_l))``."""

    def __init__(self, net, W: np.ndarray, deltas: list[np.ndarray]):
        self.net, self.W, self.deltas = net, W, deltas
        N = net.num_layers
        self.sW = max(np.linalg.norm(W), 1e-300)
        gram_scale = self.sW ** (2.0 / N)
        self.sD = max([gram_scale] + [np.linalg.norm(D) for D in deltas])
        self.iu = [np.triu_indices(net.widths[l]) for l in range(1, N)]
        sizes = [a * b for a, b in net.shapes]
        self.offs = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        # transpose permutation T with vec(Y^T) = T vec(Y) for d x d matrices
        self.T = {}
        for d in set(net.widths[1:-1]):
            idx = np.arange(d * d).reshape(d, d).T.ravel()
            self.T[d] = np.eye(d * d)[idx]

    def residual(self, theta: np.ndarray) -> np.ndarray:
        P = self.net.unflatten(theta)
        r = [(self.net.end_to_end(P) - self.W).ravel() / self.sW]
        for l, (D, iu) in enumerate(zip(self.deltas, self.iu)):
            G = P[l + 1].T @ P[l + 1] - P[l] @ P[l].T - D
            r.append(G[iu] / self.sD)
        return np.concatenate(r)

    def jacobian(self, theta: np.ndarray) -> np.ndarray:
        P = self.net.unflatten(theta)
        blocks = [self.net.jacobian(P) / self.sW]
        n = theta.size
        for l, iu in enumerate(self.iu):
            d = self.net.widths[l + 1]
            T = self.T[d]
            rows = np.zeros((d * d, n))
            A, B = P[l + 1], P[l]  # A: (d_{l+1}, d), B: (d, d_{l-1})
            # d(A^T A) = dA^T A + A^T dA ; vec(A^T dA) = (A^T kron I_d) vec(dA)
            M = np.kron(A.T, np.eye(d))
            rows[:, self.offs[l + 1] : self.offs[l + 2]] = M + T @ M
            # -d(B B^T) = -(dB B^T + B dB^T) ; vec(dB B^T) = (I_d kron B) vec(dB)
            M = np.kron(np.eye(d), B)
            rows[:, self.offs[l] : self.offs[l + 1]] = -(M + T @ M)
            sel = iu[0] * d + iu[1]
            blocks.append(rows[sel] / self.sD)
        return np.vstack(blocks)

    def solve(self, theta: np.ndarray, tol: float, max_iter: int = 300) -> tuple[np.ndarray, float]:
        """Levenberg-Marquardt with minimum-norm steps (underdetermined system)."""
        r = self.residual(theta)
        nr = np.linalg.norm(r)
        lam = 1e-3
        for _ in range(max_iter):
            if nr < tol:
                break
            J = self.jacobian(theta)
            m, n = J.shape
            # minimum-norm damped step: delta = -J^T (J J^T + lam I)^{-1} r
            K = J @ J.T
            K[np.diag_indices(m)] += lam * (1.0 + np.trace(K) / m)
            try:
                step = -J.T @ np.linalg.solve(K, r)
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            trial = theta + step
            rt = self.residual(trial)
            nt = np.linalg.norm(rt)
            if nt < nr:
                theta, r, nr = trial, rt, nt
                lam = max(lam / 5, 1e-15)
            else:
                lam *= 4
                if lam > 1e12:
                    break
        return theta, float(nr)


def fc_fiber(
    net,
    W: Any,
    invariants: Any,
    *,
    num_starts: int = 20,
    seed: Any = 0,
    walk_steps: int = 4,
    tol: float = FC_FIBER_TOL,
    start: Any = None,
    progress: bool = False,
) -> Fiber:
    """Sample the fiber of a fully connected linear network at ``(W, Delta)``.

    Args:
        net: a :class:`LinearFCNet`.
        W: the end-to-end matrix, shape ``(d_N, d_0)``.
        invariants: the ``N - 1`` symmetric matrices ``Delta_l``.
        num_starts: random starts of the solver (at most 10000).
        seed: seed of the starts and of the walk.
        walk_steps: random steps along the fiber from every point found (0: none; at
            most 10000).
        tol: residual norm (relative) below which a point counts as on the fiber.
        start: optional parameters used as one extra start.
        progress: show a progress bar on stderr.

    Returns:
        A :class:`Fiber` with ``certified=False``, ``dimension`` = the most frequent kernel
        dimension of the constraint Jacobian at the points, ``num_sign_patterns=1``
        (points are raw samples; sign changes are part of the continuous moves).

    Raises:
        NotInNeuromanifoldError: no start converged (W may have too large a rank, or
            (W, Delta) may not be realizable).
    """
    W, deltas = _parse(net, W, invariants)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return _fc_fiber(
            net,
            W,
            deltas,
            num_starts=num_starts,
            seed=seed,
            walk_steps=walk_steps,
            tol=tol,
            start=start,
            progress=progress,
        )


def _fc_fiber(net, W, deltas, *, num_starts, seed, walk_steps, tol, start, progress) -> Fiber:
    # Whole: start, solve, walk, dedupe, measure: short loops over one growing list of points
    num_starts = check_positive_int(num_starts, "num_starts", maximum=10_000)
    walk_steps = check_nonnegative_int(walk_steps, "walk_steps", maximum=10_000)
    tol = check_positive_float(tol, "tol")
    rng = as_seed_rng(seed)
    progress = check_bool(progress, "progress")
    if start is not None:
        start = net.check_params(start)
    C = _Constraints(net, W, deltas)
    starts = []
    if start is not None:
        starts.append(net.flatten(start))
    while len(starts) < num_starts + (start is not None):
        p = net.random_params(rng)
        scale = (C.sW / max(np.linalg.norm(net.end_to_end(p)), 1e-300)) ** (1.0 / net.num_layers)
        starts.append(net.flatten([M * scale for M in p]))
    iterator = starts
    if progress:
        iterator = progress_bar(starts, desc="sampling the fiber")
    found: list[np.ndarray] = []
    for x0 in iterator:
        theta, nr = C.solve(x0, tol)
        if nr < tol:
            found.append(theta)
    if not found:
        raise NotInNeuromanifoldError(
            f"no point of the fiber of {net!r} at the given (W, Delta) was found from "
            f"{len(starts)} start(s): W may exceed rank {net.rank_bound}, or (W, Delta) may not "
            f"be realizable"
        )
    points = list(found)
    for theta in found:
        cur = theta
        for _ in range(walk_steps):
            J = C.jacobian(cur)
            _, s, Vt = np.linalg.svd(J)
            rank = int(np.sum(s > 1e-8 * s[0])) if s.size else 0
            kernel = Vt[rank:]
            if kernel.shape[0] == 0:
                break
            direction = kernel.T @ rng.standard_normal(kernel.shape[0])
            direction *= 0.3 * np.linalg.norm(cur) / max(np.linalg.norm(direction), 1e-300)
            new, nr = C.solve(cur + direction, tol)
            if nr < tol:
                points.append(new)
                cur = new
    # dedupe
    unique: list[np.ndarray] = []
    for th in points:
        if all(np.linalg.norm(th - u) > 1e-7 * max(1.0, np.linalg.norm(u)) for u in unique):
            unique.append(th)
    dims = []
    residuals = []
    for th in unique:
        J = C.jacobian(th)
        s = np.linalg.svd(J, compute_uv=False)
        rank = int(np.sum(s > 1e-8 * s[0])) if s.size else 0
        dims.append(th.size - rank)
        residuals.append(_relative_residual(net, net.unflatten(th), W, deltas))
    check_finite_result([residuals, unique], f"the fiber of {net!r}")
    dim_counts = Counter(dims)
    dimension = dim_counts.most_common(1)[0][0]
    notes = []
    if len(dim_counts) > 1:
        notes.append(
            f"kernel dimension of the constraint Jacobian varies over the points: "
            f"{dict(dim_counts)}"
        )
    notes.append(
        f"{len(found)} of {len(starts)} start(s) converged; {len(unique)} distinct "
        f"point(s) after {walk_steps} walk step(s) from each"
    )
    return Fiber(
        points=[net.unflatten(th) for th in unique],
        num_sign_patterns=1,
        certified=False,
        method="Levenberg-Marquardt from random starts + random walk along the fiber",
        dimension=int(dimension),
        num_assignments=len(starts),
        max_residual=float(max(residuals)),
        notes=tuple(notes),
    )


def _relative_residual(
    net, params: list[np.ndarray], W: np.ndarray, deltas: list[np.ndarray]
) -> float:
    r = np.linalg.norm(net.end_to_end(params) - W) / max(np.linalg.norm(W), 1e-300)
    for l, D in enumerate(deltas):
        A, B = params[l + 1].T @ params[l + 1], params[l] @ params[l].T
        scale = max(np.linalg.norm(A), np.linalg.norm(B), 1e-300)
        r = max(r, np.linalg.norm(A - B - D) / scale)
    return float(r)
