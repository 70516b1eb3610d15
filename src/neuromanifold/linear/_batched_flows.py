"""Many gradient flows at once: vectorized explicit Runge-Kutta integrators (``solve_ivp``'s
DOP853 and Dormand-Prince 5(4) pairs) with step control per trajectory, for linear
convolutional networks.

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
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._errors import ComputationLimitError, InputError, short_repr
from .._progress import progress_bar
from .._results import Result
from .._validation import (
    check_bool,
    check_choice,
    check_positive_float,
    check_positive_int,
    renamed_keywords,
)
from ..flows import QuadraticLoss
from ..flows._library import OUT_OF_REACH, SOLVER_ATOL, SOLVER_RTOL, check_num_times
from ._flow_paths import MonomialPath

__all__ = ["BatchedFlowResult", "gradient_flows"]

# Dormand-Prince 5(4) tableau (the one of scipy's RK45)
_C = np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1])
_A = [
    [],
    [1 / 5],
    [3 / 40, 9 / 40],
    [44 / 45, -56 / 15, 32 / 9],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
]
_B = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])
_E = np.array([71 / 57600, 0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40])


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class BatchedFlowResult(Result):
    """Gradient flows of one network from many initializations, sampled at ``times``.

    A trajectory that stops before ``t_final`` (its step budget ran out, or ``t_final`` is
    out of reach at its step size: ``success`` is False) has NaN at the sample times it did
    not reach; :attr:`reached` marks the samples that hold values.

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
        final_time: per trajectory, the time it reached (``t_final`` on success, less when
            the step budget ran out), shape ``(B,)``.
        gradient_norm: per trajectory, ``||grad_theta l||`` at ``final_params``, shape
            ``(B,)``.
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
    final_time: np.ndarray = None
    gradient_norm: np.ndarray = None

    @property
    def reached(self) -> np.ndarray:
        """Which samples hold values, shape ``(B, T)``: ``times <= final_time`` of each
        trajectory (all of them on success)."""
        return self.times[None, :] <= self.final_time[:, None] * (1 + 1e-12)


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
        return [
            theta[:, a:b].reshape((B,) + k)
            for a, b, k in zip(self.offsets[:-1], self.offsets[1:], self.shapes)
        ]

    def _conv_up(self, a: np.ndarray, w: np.ndarray, S: tuple) -> np.ndarray:
        """Batched full convolution ``a * up(w, S)``, looping over the taps of w."""
        B, D = a.shape[0], self.D
        k = w.shape[1:]
        out = np.zeros((B,) + tuple(n + (m - 1) * s for n, m, s in zip(a.shape[1:], k, S)))
        for j in np.ndindex(*k):
            sl = (slice(None),) + tuple(
                slice(i * s, i * s + n) for i, s, n in zip(j, S, a.shape[1:])
            )
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
                sl = (slice(None),) + tuple(
                    slice(i * s, i * s + n) for i, s, n in zip(j, S, P.shape[1:])
                )
                gl[(slice(None),) + j] = np.sum(g[sl] * P, axis=axes)
            grads.append(gl.reshape(B, -1))
        return np.concatenate(grads, axis=1)


class _BatchedMonomial:
    """The same map and velocity for a small network from its monomials (as
    :class:`~neuromanifold.linear._flow_paths.MonomialPath`, batched): ``v = m @ Pos``
    and ``J^T g = (E * (g @ Pos^T)) @ Q`` with 0/1 matrices ``Pos`` (tuple -> entry of v)
    and ``Q`` (layer and tuple -> parameter), so every step is a BLAS product over the
    whole batch."""

    def __init__(self, net: Any):
        mono = MonomialPath(net)
        self.L, C = mono.pidx.shape
        self.pidx = mono.pidx
        self.Pos = np.zeros((C, mono.n))
        self.Pos[np.arange(C), mono.pos] = 1.0
        self.Q = np.zeros((self.L * C, mono.P))
        self.Q[np.arange(self.L * C), mono.flat_pidx] = 1.0

    @staticmethod
    def applies(net: Any) -> bool:
        return MonomialPath.applies(net)

    def products(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(E, m)``: per trajectory and tuple, the products without layer l, and of all."""
        G = theta[:, self.pidx]  # (B, L, C)
        L = self.L
        E = np.empty_like(G)
        if L == 1:
            E[:, 0] = 1.0
            return E, G[:, 0]
        pre = [G[:, 0]]
        for l in range(1, L - 1):
            pre.append(pre[-1] * G[:, l])
        suf = G[:, L - 1]
        E[:, L - 1] = pre[L - 2]
        for l in range(L - 2, 0, -1):
            E[:, l] = pre[l - 1] * suf
            suf = suf * G[:, l]
        E[:, 0] = suf
        return E, E[:, L - 1] * G[:, L - 1]

    def end_to_end(self, theta: np.ndarray) -> np.ndarray:
        return self.products(theta)[1] @ self.Pos

    def velocity(self, theta: np.ndarray, A: np.ndarray, target: np.ndarray) -> np.ndarray:
        E, m = self.products(theta)
        g = _times_A(m @ self.Pos - target, A)
        return -((E * (g @ self.Pos.T)[:, None, :]).reshape(len(theta), -1) @ self.Q)


def _times_A(r: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``r_b^T A_b`` per trajectory (= ``A_b r_b``, A symmetric): one product with a
    shared ``A`` of shape ``(n, n)``, a batched one with a stack of shape ``(b, n, n)``."""
    if A.ndim == 2:
        return r @ A
    return np.matmul(r[:, None, :], A)[:, 0, :]


def _stack_losses(loss: Any, B: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A, target, offset)`` of one shared loss (``(n, n)``, ``(n,)``, scalar) or of a
    sequence of B losses stacked (``(B, n, n)``, ``(B, n)``, ``(B,)``)."""
    if isinstance(loss, QuadraticLoss):
        losses = [loss]
    elif isinstance(loss, Sequence) and not isinstance(loss, (str, bytes)):
        losses = list(loss)
        if len(losses) != B:
            raise InputError(
                f"loss must be one QuadraticLoss or a sequence of one per flow "
                f"({B}); got a sequence of {len(losses)}"
            )
    else:
        losses = [loss]
    for one in losses:
        if not isinstance(one, QuadraticLoss):
            raise InputError(
                f"loss must be a QuadraticLoss or SquareLoss (or a sequence of "
                f"one per flow); got {short_repr(one)}"
            )
        if one.size != size:
            raise InputError(
                f"loss acts on {one.size} entries but the end-to-end filter has {size}"
            )
    if isinstance(loss, QuadraticLoss):
        return loss.A, loss.target, np.float64(loss.offset)
    return (
        np.stack([one.A for one in losses]),
        np.stack([one.target for one in losses]),
        np.array([one.offset for one in losses]),
    )


def _stack_params(net: Any, params: Any) -> np.ndarray:
    if isinstance(params, np.ndarray) or not isinstance(params, Sequence) or len(params) == 0:
        raise InputError(
            f"params must be a non-empty list of parameter lists (one per flow); "
            f"got {short_repr(params)}"
        )
    return np.stack([net.flatten(net.check_params(p)) for p in params])


def _tableau(solver: str) -> dict:
    """Butcher tableau, error estimate and step-size exponent of an embedded pair."""
    if solver == "RK45":
        return {
            "C": _C,
            "A": [np.array(r) for r in _A],
            "B": _B,
            "stages": 6,
            "exponent": -1 / 5,
            "max_factor": 5.0,
        }
    from scipy.integrate._ivp import dop853_coefficients as d  # start-up: a slow import

    n = d.N_STAGES
    return {
        "C": d.C[:n],
        "A": [d.A[s, :s] for s in range(n)],
        "B": d.B,
        "stages": n,
        "E3": d.E3,
        "E5": d.E5,
        "exponent": -1 / 8,
        "max_factor": 10.0,
    }


def _combine(coeffs: np.ndarray, K: np.ndarray) -> np.ndarray:
    """``sum_s coeffs[s] K[s]`` for stages ``K`` of shape ``(S, b, P)`` (``S >= len(coeffs)``):
    one matrix-vector product, without ``tensordot``'s overhead."""
    n = len(coeffs)
    return (coeffs @ K[:n].reshape(n, -1)).reshape(K.shape[1:])


def _error_norm(tab: dict, K: np.ndarray, h: np.ndarray, sc: np.ndarray) -> np.ndarray:
    """Per trajectory, the error norm of the step (solve_ivp's definitions): RK45's
    RMS of ``h * K^T E / scale``; DOP853's combination of its 5th and 3rd order
    estimates."""
    P = K.shape[2]
    if "E5" not in tab:
        e = _combine(_E, K) * h[:, None] / sc
        return np.sqrt(np.mean(e**2, axis=1))
    e5 = np.sum((_combine(tab["E5"], K) / sc) ** 2, axis=1)
    e3 = np.sum((_combine(tab["E3"], K) / sc) ** 2, axis=1)
    denom = e5 + 0.01 * e3
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.abs(h) * e5 / np.sqrt(denom * P)
    return np.where(denom == 0, 0.0, out)


@renamed_keywords(method="solver")
def gradient_flows(
    net: Any,
    params: Any,
    loss: Any,
    t_final: float,
    *,
    num_times: int = 21,
    solver: str = "DOP853",
    rtol: float = SOLVER_RTOL,
    atol: float = SOLVER_ATOL,
    max_steps: int = 200_000,
    time_limit: float | None = None,
    progress: bool = False,
) -> BatchedFlowResult:
    """Integrate ``theta' = -J^T grad l(mu(theta))`` from many initializations at once.

    The batched counterpart of :func:`neuromanifold.gradient_flow` for
    :class:`neuromanifold.LinearConvNet` (any dimension): one vectorized explicit
    Runge-Kutta integration (``solve_ivp``'s embedded pairs) with error control, step
    size and acceptance per trajectory (the tolerances mean what they mean in
    ``solve_ivp``). Small networks (at most 4,096 products of one entry per filter)
    evaluate the velocity of the whole batch from their monomials with a few BLAS
    products; larger ones with batched convolutions. Each trajectory may have its own
    loss (e.g. its own data): the B losses are stacked, so the velocity stays a few
    batched products.

    Args:
        net: a :class:`neuromanifold.LinearConvNet`.
        params: a list of B parameter lists (the initializations).
        loss: a :class:`QuadraticLoss` on the end-to-end filter (e.g. a SquareLoss) shared
            by every trajectory, or a sequence of B of them (one per trajectory, each on
            the end-to-end filter).
        t_final: the final time, > 0.
        num_times: number of sample times in ``[0, t_final]`` (>= 2).
        solver: ``"DOP853"`` (default, order 8, as :func:`neuromanifold.gradient_flow`)
            or ``"RK45"`` (Dormand-Prince 5(4)).
        rtol, atol: the tolerances (per component, as in ``solve_ivp``).
        max_steps: a budget of accepted steps per trajectory; a trajectory that runs out
            stops there with ``success=False`` (an absurd horizon ends, it does not hang).
        time_limit: an optional wall-clock budget in seconds; reaching it raises a
            :class:`ComputationLimitError` (``kind="time"``, ``t`` the least time reached).
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

    One loss per trajectory (here: the same start, two targets):

    >>> two = [loss, QuadraticLoss(np.eye(4), np.zeros(4))]
    >>> res = gradient_flows(net, [starts[0], starts[0]], two, 1.0)
    >>> v = res.end_to_end[:, -1]
    >>> bool(res.loss[1, -1] < res.loss[1, 0]), bool(np.abs(v[0] - v[1]).max() > 0.1)
    (True, True)
    """
    # a network of stacked strided correlations (LinearConvNet): this mechanism knows only
    # the structure it integrates, not the domain class that provides it
    if not all(hasattr(net, a) for a in ("filter_shapes", "cumulative_strides", "ndim")):
        raise InputError(
            f"gradient_flows integrates LinearConvNet flows; got "
            f"{short_repr(net)} (use gradient_flow for other networks)"
        )
    t_final = check_positive_float(t_final, "t_final")
    num_times = check_num_times(num_times)
    check_choice(solver, "solver", ("DOP853", "RK45"))
    rtol, atol = check_positive_float(rtol, "rtol"), check_positive_float(atol, "atol")
    max_steps = check_positive_int(max_steps, "max_steps")
    if time_limit is not None:
        time_limit = check_positive_float(time_limit, "time_limit")
    progress = check_bool(progress, "progress")
    theta = _stack_params(net, params)
    A, target, offset = _stack_losses(loss, len(theta), net.end_to_end_size)
    return integrate_flows(
        net,
        theta,
        A,
        target,
        offset,
        t_final,
        num_times=num_times,
        solver=solver,
        rtol=rtol,
        atol=atol,
        max_steps=max_steps,
        time_limit=time_limit,
        progress=progress,
    )


#: accepted steps after which :func:`integrate_flows` may give up on a trajectory whose
#: step size cannot reach ``t_final`` within its budget (``give_up=True``)
GIVE_UP_AFTER = 50


def _flow_ops(net: Any) -> tuple[Callable, Callable]:
    """``(rhs, e2e)``: the batched velocity ``rhs(theta, A, target)`` of the gradient flow
    and the end-to-end maps ``e2e(theta)``, by monomials where they apply, else by
    convolutions."""
    vshape = net.end_to_end_shape
    if _BatchedMonomial.applies(net):
        ops = _BatchedMonomial(net)

        def rhs(th: np.ndarray, A: np.ndarray, target: np.ndarray) -> np.ndarray:
            return ops.velocity(th, A, target)

        def e2e(th: np.ndarray) -> np.ndarray:
            return ops.end_to_end(th).reshape((len(th),) + vshape)

        return rhs, e2e
    conv = _BatchedConv(net)

    def rhs(th: np.ndarray, A: np.ndarray, target: np.ndarray) -> np.ndarray:
        ws = conv.split(th)
        v = conv.end_to_end(ws)
        g = _times_A(v.reshape(len(th), -1) - target, A).reshape(v.shape)  # A symmetric
        return -conv.vjp(ws, g)

    def e2e(th: np.ndarray) -> np.ndarray:
        return conv.end_to_end(conv.split(th))

    return rhs, e2e


def _step_factor(tab: dict, err: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """The step-size factor of each trial step from its error norm (at most 1 for a
    rejected step)."""
    with np.errstate(divide="ignore", over="ignore"):
        factor = np.where(
            np.isfinite(err) & (err > 0),
            0.9 * np.maximum(err, 1e-10) ** tab["exponent"],
            tab["max_factor"],
        )
    # a step whose stages overflowed (error NaN or inf) shrinks by the most
    factor = np.where(np.isfinite(err), np.clip(factor, 0.2, tab["max_factor"]), 0.2)
    factor[~ok] = np.minimum(factor[~ok], 1.0)
    return factor


def _drift_and_monotone(invs: np.ndarray, losses: np.ndarray, norms0: np.ndarray) -> tuple:
    """Per trajectory, the largest drift of the invariants relative to their scale, and
    whether the loss never rose (beyond rounding)."""
    scale = np.maximum(np.abs(invs[:, 0]).max(axis=1, initial=0.0), norms0.max(axis=1))
    scale = np.where(scale > 0, scale, 1.0)
    drift = np.nanmax(np.abs(invs - invs[:, :1]).max(axis=2, initial=0.0), axis=1) / scale
    tol = 1e-12 * np.maximum(1.0, np.abs(losses[:, 0]))
    dl = np.diff(losses, axis=1)
    monotone = np.all(np.nan_to_num(dl, nan=0.0) <= tol[:, None], axis=1)
    return drift, monotone


def integrate_flows(
    net: Any,
    theta: np.ndarray,
    A: np.ndarray,
    target: np.ndarray,
    offset: Any,
    t_final: float,
    *,
    num_times: int,
    solver: str,
    rtol: float,
    atol: float,
    max_steps: int,
    time_limit: float | None = None,
    progress: bool = False,
    give_up: bool = False,
) -> BatchedFlowResult:
    """The integration behind :func:`gradient_flows`, on checked input: flat parameters
    ``theta`` of shape ``(B, P)`` (not modified) and the loss data as returned by
    ``_stack_losses``. With ``give_up``, a trajectory whose step size, after
    :data:`GIVE_UP_AFTER` accepted steps, would need more than its remaining budget to
    reach ``t_final`` stops there (``success=False``) instead of spending the budget: a
    caller that hands such (stiff) flows to an implicit solver loses little time."""
    # Whole: one adaptive-step loop over the batch; its t, h, alive and steps arrays change together
    theta0 = theta
    theta = np.array(theta, dtype=float)
    shared = A.ndim == 2
    vshape = net.end_to_end_shape
    B, L = theta.shape[0], len(net.filter_shapes)
    rhs, e2e = _flow_ops(net)
    cuts = np.cumsum([0] + [int(np.prod(k)) for k in net.filter_shapes])

    def part(idx: np.ndarray) -> tuple:
        """The loss data of the trajectories ``idx`` (all of it when shared)."""
        return (A, target, offset) if shared else (A[idx], target[idx], offset[idx])

    def observe(th: np.ndarray, idx: np.ndarray):
        v = e2e(th)
        Ai, ti, oi = part(idx)
        r = v.reshape(len(th), -1) - ti
        losses = 0.5 * np.sum(_times_A(r, Ai) * r, axis=1) + oi
        norms = np.stack(
            [np.sum(th[:, a:b] ** 2, axis=1) for a, b in zip(cuts[:-1], cuts[1:])], axis=1
        )
        return v, losses, np.diff(norms, axis=1)

    tab = _tableau(solver)
    n_st = tab["stages"]
    times = np.linspace(0.0, t_final, num_times)
    vs, losses, invs = [
        np.empty((B, num_times) + vshape),
        np.empty((B, num_times)),
        np.empty((B, num_times, L - 1)),
    ]
    everyone = np.arange(B)
    vs[:, 0], losses[:, 0], invs[:, 0] = observe(theta, everyone)
    t = np.zeros(B)
    f = rhs(theta, *part(everyone)[:2])
    scale0 = atol + rtol * np.abs(theta)
    d0, d1 = np.sqrt(np.mean((theta / scale0) ** 2, 1)), np.sqrt(np.mean((f / scale0) ** 2, 1))
    h = np.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / np.maximum(d1, 1e-300))
    h = np.minimum(h, times[1])
    steps, rejected = np.zeros(B, dtype=int), np.zeros(B, dtype=int)
    alive = np.ones(B, dtype=bool)
    nfev = 1
    start = time.monotonic()
    bar = None
    if progress:
        bar = progress_bar(
            total=t_final,
            desc=f"{B} gradient flows",
            unit="t",
            bar_format="{l_bar}{bar}| t={n:.3g}/{total:.3g}",
        )
    # a trial step far beyond the stability limit may overflow in its stages: its error
    # norm is then not finite and the step is rejected (and shrunk)
    errstate = np.errstate(over="ignore", invalid="ignore")
    errstate.__enter__()
    try:
        for k in range(1, num_times):
            t_next = times[k]
            while True:
                run = alive & (t < t_next - 1e-14 * max(1.0, t_next))
                if not run.any():
                    break
                if time_limit is not None and time.monotonic() - start > time_limit:
                    err = ComputationLimitError(
                        f"the batched gradient flows reached their time limit "
                        f"time_limit={time_limit:g} s at t={t[run].min():.6g} of "
                        f"t_final={t_final:.6g} (raise time_limit, shorten t_final or pass "
                        f"fewer flows)"
                    )
                    err.t, err.kind = float(t[run].min()), "time"
                    raise err
                idx = np.flatnonzero(run)
                Ai, ti = part(idx)[:2]
                hh = np.minimum(h[idx], t_next - t[idx])
                y = theta[idx]
                K = np.empty((n_st + 1,) + y.shape)
                K[0] = f[idx]
                for s in range(1, n_st):
                    dy = _combine(tab["A"][s], K)
                    K[s] = rhs(y + hh[:, None] * dy, Ai, ti)
                y_new = y + hh[:, None] * _combine(tab["B"], K)
                K[n_st] = rhs(y_new, Ai, ti)
                nfev += n_st
                sc = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
                err = _error_norm(tab, K, hh, sc)
                ok = np.isfinite(err) & (err <= 1.0)
                acc = idx[ok]
                theta[acc], f[acc], t[acc] = y_new[ok], K[n_st][ok], t[acc] + hh[ok]
                steps[acc] += 1
                rejected[idx[~ok]] += 1
                factor = _step_factor(tab, err, ok)
                # a clipped step (landing on a sample time) does not shrink the next one
                h[idx] = np.where(ok, np.maximum(hh, h[idx]) * factor, hh * factor)
                alive[idx] &= (steps[idx] < max_steps) & (h[idx] > 0)
                late = idx[steps[idx] >= GIVE_UP_AFTER]
                if give_up:
                    alive[late] &= (t_final - t[late]) <= h[late] * (max_steps - steps[late])
                else:  # out of reach, as for one flow: 100 budgets at this step size
                    alive[late] &= (t_final - t[late]) <= h[late] * OUT_OF_REACH * max_steps
            done = alive
            if done.any():
                vs[done, k], losses[done, k], invs[done, k] = observe(
                    theta[done], np.flatnonzero(done)
                )
            vs[~done, k], losses[~done, k], invs[~done, k] = np.nan, np.nan, np.nan
            if bar is not None:
                bar.update(t_next - bar.n)
    finally:
        errstate.__exit__(None, None, None)
        if bar is not None:
            bar.close()
    success = alive & np.isclose(t, t_final, rtol=1e-12, atol=1e-12)
    norms0 = np.stack([np.sum(theta0[:, a:b] ** 2, 1) for a, b in zip(cuts[:-1], cuts[1:])], 1)
    drift, monotone = _drift_and_monotone(invs, losses, norms0)
    return BatchedFlowResult(
        times=times,
        end_to_end=vs,
        loss=losses,
        invariants=invs,
        final_params=[net.unflatten(th) for th in theta],
        max_invariant_drift=drift,
        loss_monotone=monotone,
        success=success,
        steps=steps,
        rejected=rejected,
        nfev=nfev,
        rtol=rtol,
        atol=atol,
        final_time=t,
        gradient_norm=np.linalg.norm(rhs(theta, *part(everyone)[:2]), axis=1),
    )
