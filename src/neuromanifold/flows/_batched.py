"""Many gradient flows at once: a vectorized Dormand-Prince 5(4) integrator with step
control per trajectory, for linear convolutional networks.

A study of convergence or of NTK dependence needs hundreds or thousands of flows of one
architecture from different initializations. Integrating them one by one with
``solve_ivp`` spends almost all its time in Python overhead around tiny arrays; here the
whole batch moves together: the end-to-end filters, the vector-Jacobian products and the
Runge-Kutta stages are computed for every trajectory in one numpy operation each, while
every trajectory keeps its own step size, error estimate and acceptance.

The map and its derivative are the ones of docs/concepts_linear.md §1-2, batched:
``v = w_1 * up(w_2, S_1) * ... * up(w_L, S_{L-1})`` (full convolution) and
``d<g, v>/d w_l[j] = sum_i g[i + j S_{l-1}] P_l[i]`` with ``P_l`` the product of the
other layers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import InputError, short_repr
from .._results import Result
from .._validation import check_bool, check_positive_float, check_positive_int
from ._losses import QuadraticLoss

__all__ = ["BatchedFlowResult", "gradient_flows"]

# Dormand-Prince 5(4) tableau (the one of scipy's RK45)
_C = np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1])
_A = [[], [1 / 5], [3 / 40, 9 / 40], [44 / 45, -56 / 15, 32 / 9],
      [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
      [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]]
_B = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])
_E = np.array([71 / 57600, 0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40])


@dataclasses.dataclass(frozen=True, repr=False)
class BatchedFlowResult(Result):
    """Gradient flows of one network from many initializations, sampled at ``times``.

    Attributes:
        times: sample times, shape ``(T,)``.
        end_to_end: ``mu(theta_b(t))``, shape ``(B, T) + end_to_end_shape``.
        loss: shape ``(B, T)``.
        invariants: shape ``(B, T, L - 1)``.
        final_params: the parameters at ``t_final``, one parameter list per trajectory.
        max_invariant_drift: per trajectory, ``max_t ||delta(t) - delta(0)||_inf / scale``
            (the same relative measure as :class:`GradientFlowResult`), shape ``(B,)``.
        loss_monotone: per trajectory, the sampled loss never increases (``1e-12`` relative).
        success: per trajectory, reached ``t_final`` within ``max_steps``.
        steps: accepted steps per trajectory; ``rejected``: rejected ones.
        nfev: right-hand-side evaluations of the whole batch (each evaluates every
            trajectory still running).
        rtol, atol: the tolerances (as in ``solve_ivp``, per component).
    """

    times: np.ndarray
    end_to_end: np.ndarray
    loss: np.ndarray
    invariants: np.ndarray
    final_params: list[list[np.ndarray]] = dataclasses.field(repr=False)
    max_invariant_drift: np.ndarray = None
    loss_monotone: np.ndarray = None
    success: np.ndarray = None
    steps: np.ndarray = None
    rejected: np.ndarray = None
    nfev: int = 0
    rtol: float = 0.0
    atol: float = 0.0


class _BatchedConv:
    """The map mu and its vector-Jacobian product for a batch of parameters of one
    :class:`LinearConvNet` (arrays with a leading batch axis)."""

    def __init__(self, net: Any):
        self.net = net
        self.D = net.ndim
        self.shapes = net.filter_shapes
        self.S = net.cumulative_strides
        self.sizes = [int(np.prod(k)) for k in self.shapes]
        self.offsets = np.cumsum([0] + self.sizes)

    def split(self, theta: np.ndarray) -> list[np.ndarray]:
        B = theta.shape[0]
        return [theta[:, a:b].reshape((B,) + k)
                for a, b, k in zip(self.offsets[:-1], self.offsets[1:], self.shapes)]

    def _conv_up(self, a: np.ndarray, w: np.ndarray, S: tuple) -> np.ndarray:
        """Batched full convolution ``a * up(w, S)``, looping over the taps of w."""
        B, D = a.shape[0], self.D
        k = w.shape[1:]
        out = np.zeros((B,) + tuple(n + (m - 1) * s for n, m, s in zip(a.shape[1:], k, S)))
        for j in np.ndindex(*k):
            sl = (slice(None),) + tuple(slice(i * s, i * s + n)
                                        for i, s, n in zip(j, S, a.shape[1:]))
            out[sl] += w[(slice(None),) + j].reshape((B,) + (1,) * D) * a
        return out

    def _conv(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Batched full convolution of two dense arrays (loop over the smaller one)."""
        if b[0].size > a[0].size:
            a, b = b, a
        return self._conv_up(a, b, (1,) * self.D)

    def end_to_end(self, ws: list[np.ndarray]) -> np.ndarray:
        v = ws[0]
        for w, S in zip(ws[1:], self.S[1:]):
            v = self._conv_up(v, w, S)
        return v

    def vjp(self, ws: list[np.ndarray], g: np.ndarray) -> np.ndarray:
        """``J^T g`` for every trajectory, flattened like theta."""
        B, L = g.shape[0], len(ws)
        one = np.ones((B,) + (1,) * self.D)
        prefix = [one]
        for w, S in zip(ws[:-1], self.S[:-1]):
            prefix.append(self._conv_up(prefix[-1], w, S))
        suffix = [one]
        for w, S in zip(ws[:0:-1], self.S[:0:-1]):
            suffix.append(self._conv_up(suffix[-1], w, S))
        suffix = suffix[::-1]
        grads = []
        axes = tuple(range(1, self.D + 1))
        for l in range(L):
            P = self._conv(prefix[l], suffix[l])
            S, k = self.S[l], self.shapes[l]
            gl = np.empty((B,) + k)
            for j in np.ndindex(*k):
                sl = (slice(None),) + tuple(slice(i * s, i * s + n)
                                            for i, s, n in zip(j, S, P.shape[1:]))
                gl[(slice(None),) + j] = np.sum(g[sl] * P, axis=axes)
            grads.append(gl.reshape(B, -1))
        return np.concatenate(grads, axis=1)


def _stack_params(net: Any, params: Any) -> np.ndarray:
    if isinstance(params, np.ndarray) or not isinstance(params, Sequence) or len(params) == 0:
        raise InputError(f"params must be a non-empty list of parameter lists (one per flow); "
                         f"got {short_repr(params)}")
    return np.stack([net.flatten(net.check_params(p)) for p in params])


def gradient_flows(net: Any, params: Any, loss: QuadraticLoss, t_final: float, *,
                   num_times: int = 21, rtol: float = 1e-10, atol: float = 1e-12,
                   max_steps: int = 200_000, progress: bool = False) -> BatchedFlowResult:
    """Integrate ``theta' = -J^T grad l(mu(theta))`` from many initializations at once.

    The batched counterpart of :func:`neuromanifold.gradient_flow` for
    :class:`neuromanifold.LinearConvNet` (any dimension): one vectorized Dormand-Prince
    5(4) integration with error control, step size and acceptance per trajectory (the
    tolerances mean what they mean in ``solve_ivp``).

    Args:
        net: a :class:`neuromanifold.LinearConvNet`.
        params: a list of B parameter lists (the initializations).
        loss: a :class:`QuadraticLoss` on the end-to-end filter (e.g. a SquareLoss).
        t_final: the final time, > 0.
        num_times: number of sample times in ``[0, t_final]`` (>= 2).
        rtol, atol: the tolerances (per component, as in ``solve_ivp``).
        max_steps: a budget of accepted steps per trajectory; a trajectory that runs out
            stops there with ``success=False`` (an absurd horizon ends, it does not hang).
        progress: a progress bar in flow time (the slowest trajectory) on stderr.

    Returns:
        A :class:`BatchedFlowResult`.

    >>> from neuromanifold import LinearConvNet, QuadraticLoss
    >>> net = LinearConvNet([2, 2], strides=[2])
    >>> loss = QuadraticLoss(np.eye(4), [1.0, 0.5, -0.3, 0.2])
    >>> starts = [net.random_params(seed=s) for s in range(50)]
    >>> res = gradient_flows(net, starts, loss, 1.0)
    >>> bool(res.success.all()), bool((res.loss[:, -1] < res.loss[:, 0]).all())
    (True, True)
    >>> bool(res.max_invariant_drift.max() < 1e-8)
    True
    """
    from ..linear import LinearConvNet
    if not isinstance(net, LinearConvNet):
        raise InputError(f"gradient_flows integrates LinearConvNet flows; got "
                         f"{short_repr(net)} (use gradient_flow for other networks)")
    if not isinstance(loss, QuadraticLoss):
        raise InputError(f"loss must be a QuadraticLoss or SquareLoss; got {short_repr(loss)}")
    if loss.size != net.end_to_end_size:
        raise InputError(f"loss acts on {loss.size} entries but the end-to-end filter has "
                         f"{net.end_to_end_size}")
    t_final = check_positive_float(t_final, "t_final")
    num_times = check_positive_int(num_times, "num_times")
    if num_times < 2:
        raise InputError(f"num_times must be at least 2; got {num_times}")
    rtol, atol = check_positive_float(rtol, "rtol"), check_positive_float(atol, "atol")
    max_steps = check_positive_int(max_steps, "max_steps")
    progress = check_bool(progress, "progress")
    theta = _stack_params(net, params)
    ops = _BatchedConv(net)
    A, target = loss.A, loss.target
    vshape = net.end_to_end_shape
    B = theta.shape[0]

    def rhs(th: np.ndarray) -> np.ndarray:
        ws = ops.split(th)
        v = ops.end_to_end(ws)
        g = ((v.reshape(len(th), -1) - target) @ A).reshape(v.shape)  # A symmetric
        return -ops.vjp(ws, g)

    def observe(th: np.ndarray):
        ws = ops.split(th)
        v = ops.end_to_end(ws)
        r = v.reshape(len(th), -1) - target
        losses = 0.5 * np.einsum("bi,ij,bj->b", r, A, r) + loss.offset
        norms = np.stack([np.sum(w.reshape(len(th), -1) ** 2, axis=1) for w in ws], axis=1)
        return v, losses, np.diff(norms, axis=1)

    times = np.linspace(0.0, t_final, num_times)
    vs, losses, invs = [np.empty((B, num_times) + vshape), np.empty((B, num_times)),
                        np.empty((B, num_times, len(net.filter_shapes) - 1))]
    vs[:, 0], losses[:, 0], invs[:, 0] = observe(theta)
    t = np.zeros(B)
    f = rhs(theta)
    scale0 = atol + rtol * np.abs(theta)
    d0, d1 = np.sqrt(np.mean((theta / scale0) ** 2, 1)), np.sqrt(np.mean((f / scale0) ** 2, 1))
    h = np.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / np.maximum(d1, 1e-300))
    h = np.minimum(h, times[1])
    steps, rejected = np.zeros(B, dtype=int), np.zeros(B, dtype=int)
    alive = np.ones(B, dtype=bool)
    nfev = 1
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=t_final, desc=f"{B} gradient flows", unit="t",
                   bar_format="{l_bar}{bar}| t={n:.3g}/{total:.3g}")
    try:
        for k in range(1, num_times):
            t_next = times[k]
            while True:
                run = alive & (t < t_next - 1e-14 * max(1.0, t_next))
                if not run.any():
                    break
                idx = np.flatnonzero(run)
                hh = np.minimum(h[idx], t_next - t[idx])
                y, f0 = theta[idx], f[idx]
                K = [f0]
                for s in range(1, 6):
                    dy = sum(a * Kj for a, Kj in zip(_A[s], K))
                    K.append(rhs(y + hh[:, None] * dy))
                y_new = y + hh[:, None] * sum(b * Kj for b, Kj in zip(_B, K))
                f_new = rhs(y_new)
                K.append(f_new)
                nfev += 6
                err_vec = hh[:, None] * sum(e * Kj for e, Kj in zip(_E, K))
                sc = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
                err = np.sqrt(np.mean((err_vec / sc) ** 2, axis=1))
                ok = np.isfinite(err) & (err <= 1.0)
                acc = idx[ok]
                theta[acc], f[acc], t[acc] = y_new[ok], f_new[ok], t[acc] + hh[ok]
                steps[acc] += 1
                rejected[idx[~ok]] += 1
                factor = np.where(np.isfinite(err) & (err > 0),
                                  0.9 * np.maximum(err, 1e-10) ** -0.2, 5.0)
                factor = np.clip(factor, 0.2, 5.0)
                factor[~ok] = np.minimum(factor[~ok], 1.0)
                # a clipped step (landing on a sample time) does not shrink the next one
                h[idx] = np.where(ok, np.maximum(hh, h[idx]) * factor, hh * factor)
                alive[idx] &= (steps[idx] < max_steps) & (h[idx] > 0)
            done = alive
            if done.any():
                vs[done, k], losses[done, k], invs[done, k] = observe(theta[done])
            vs[~done, k], losses[~done, k], invs[~done, k] = np.nan, np.nan, np.nan
            if bar is not None:
                bar.update(t_next - bar.n)
    finally:
        if bar is not None:
            bar.close()
    success = alive & np.isclose(t, t_final, rtol=1e-12, atol=1e-12)
    norms0 = np.stack([np.sum(w.reshape(B, -1) ** 2, 1)
                       for w in ops.split(_stack_params(net, params))], 1)
    scale = np.maximum(np.abs(invs[:, 0]).max(axis=1, initial=0.0), norms0.max(axis=1))
    scale = np.where(scale > 0, scale, 1.0)
    drift = np.nanmax(np.abs(invs - invs[:, :1]).max(axis=2, initial=0.0), axis=1) / scale
    tol = 1e-12 * np.maximum(1.0, np.abs(losses[:, 0]))
    dl = np.diff(losses, axis=1)
    monotone = np.all(np.nan_to_num(dl, nan=0.0) <= tol[:, None], axis=1)
    return BatchedFlowResult(
        times=times, end_to_end=vs, loss=losses, invariants=invs,
        final_params=[net.unflatten(th) for th in theta], max_invariant_drift=drift,
        loss_monotone=monotone, success=success, steps=steps, rejected=rejected,
        nfev=nfev, rtol=rtol, atol=atol)
