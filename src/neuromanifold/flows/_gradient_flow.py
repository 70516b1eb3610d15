"""Gradient flow in parameter space, ``theta' = -grad_theta l(mu(theta))`` (docs/concepts_linear.md
§2, 1.5)."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import integrate

from .._errors import ComputationLimitError, InputError, ParameterError, short_repr
from .._progress import progress_bar
from .._results import Result
from .._validation import (
    check_bool,
    check_choice,
    check_positive_float,
    check_positive_int,
    renamed_keywords,
)
from ..fibers import invariant_scale, invariant_vector
from ._losses import QuadraticLoss

__all__ = ["gradient_flow", "GradientFlowResult", "invariant_vector"]

#: the ``solve_ivp`` methods: explicit Runge-Kutta, then stiff
SOLVERS = ("RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA")
_SOLVER_CLASSES = {name: getattr(integrate, name) for name in SOLVERS}

#: a flow that, at its current step size, would need more than this many step budgets to
#: reach t_final stops (one flow raises, a batched trajectory ends with success=False):
#: an absurd horizon such as ``t_final=1e300`` ends at once, not after the whole budget
OUT_OF_REACH = 100
#: default step budget of every flow: an absurd horizon (``t_final=1e300``) raises a
#: :class:`ComputationLimitError` after this many solver steps instead of running forever
DEFAULT_MAX_STEPS = 10_000
#: default relative and absolute tolerances of the ODE solver of every single flow (a
#: study of many runs, ``convergence_study``, uses looser ones of its own)
SOLVER_RTOL = 1e-10
SOLVER_ATOL = 1e-12
#: most sample times a flow records (every one stores the parameters and v)
MAX_NUM_TIMES = 1_000_000
#: steps after which a horizon out of reach of the budget (at the current step size) fails
WARMUP_STEPS = 200
#: consecutive steps without progress in t after which a solver counts as stalled
STALL_STEPS = 50


def check_num_times(num_times: Any) -> int:
    """The number of sample times of a flow: an int from 2 (both ends of the interval) to
    :data:`MAX_NUM_TIMES`, else an :class:`InputError` naming the rule. The one check of
    every flow (linear, batched, ReLU)."""
    if (
        isinstance(num_times, (bool, np.bool_))
        or not isinstance(num_times, (int, np.integer))
        or num_times < 2
    ):
        raise InputError(
            f"num_times must be an int >= 2 (both ends of the interval); got "
            f"{short_repr(num_times)}"
        )
    return check_positive_int(num_times, "num_times", maximum=MAX_NUM_TIMES)


def check_flow_args(
    net: Any,
    loss: Any,
    t_final: Any,
    *,
    num_times: Any,
    solver: Any,
    rtol: Any,
    atol: Any,
    max_steps: Any = DEFAULT_MAX_STEPS,
    time_limit: Any = None,
) -> None:
    """The checks every flow shares: a quadratic loss of the network's size, a positive
    finite time, at least two sample times, a known solver, positive tolerances, a
    positive step budget and a positive time limit (or None)."""
    if not isinstance(loss, QuadraticLoss):
        raise InputError(f"loss must be a QuadraticLoss or SquareLoss; got {type(loss).__name__}")
    size = getattr(net, "end_to_end_size", None)
    if size is None or isinstance(net, type):
        raise InputError(
            f"net must be a network with an end-to-end map (LinearConvNet, "
            f"LinearFCNet, ...); got {short_repr(net)}"
        )
    if loss.size != size:
        raise InputError(
            f"loss acts on {loss.size} entries but {net!r} has {size} end-to-end entries"
        )
    check_positive_float(t_final, "t_final")
    check_num_times(num_times)
    check_choice(solver, "solver", SOLVERS)
    check_positive_float(rtol, "rtol")
    check_positive_float(atol, "atol")
    check_positive_int(max_steps, "max_steps")
    if time_limit is not None:
        check_positive_float(time_limit, "time_limit")


def check_finite(
    what: str, value: Any, where: Any = "", error: type[Exception] = ParameterError
) -> None:
    """Raise ``error`` ("overflow: ...") when ``value`` (an array or float computed from
    finite input) holds NaN or inf; ``where`` is a string, or an array echoed as
    ``at theta=...`` (formatted only on failure)."""
    if not np.all(np.isfinite(np.asarray(value, dtype=float))):
        if not isinstance(where, str):
            where = f"at theta={short_repr(where)}"
        raise error(
            f"overflow: {what} is not finite (NaN or inf) {where}; the parameters, "
            f"data or loss are too large for float64 (rescale them)"
        )


def quiet_overflow(func: Callable) -> Callable:
    """Run ``func`` with numpy's overflow warnings off: every value a flow computes is
    checked with :func:`check_finite`, which raises a clear error instead."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return func(*args, **kwargs)

    return wrapper


class Stepper:
    """Steps a scipy solver from 0 to ``t_final`` and samples it at ``times``, within a
    step budget and an optional wall-clock limit.

    ``on_step(t_old, t_new, y_new, dense)`` is called after every accepted step, with
    ``dense()`` returning the step's dense output (computed on demand).
    """

    def __init__(
        self,
        rhs: Callable,
        y0: np.ndarray,
        times: np.ndarray,
        *,
        solver: str,
        rtol: float,
        atol: float,
        max_steps: int,
        time_limit: float | None,
        what: str,
        progress: bool = False,
    ):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            # scipy's first-step heuristic divides by norms that may overflow; the
            # velocity itself raises on overflow
            self.solver = _SOLVER_CLASSES[solver](
                rhs, 0.0, y0, float(times[-1]), rtol=rtol, atol=atol
            )
        self.times, self.max_steps, self.time_limit, self.what = times, max_steps, time_limit, what
        self.samples = [np.array(y0, dtype=float)]
        self.steps = 0
        self.message = "reached t_final"
        self.progress = progress

    @property
    def finished(self) -> bool:
        """Whether the solver reached ``t_final``."""
        return self.solver.status == "finished"

    def run(self, on_step: Callable | None = None) -> None:
        """Step until ``t_final`` (or a solver failure, reported in ``message``)."""
        solver, times = self.solver, self.times
        start = time.monotonic()
        bar = None
        if self.progress:
            bar = progress_bar(
                total=float(times[-1]),
                desc=self.what,
                unit="t",
                bar_format="{l_bar}{bar}| t={n:.3g}/{total:.3g}",
            )
        i = 1
        stalled = 0
        try:
            while solver.status == "running":
                if self.steps >= self.max_steps:
                    self._limit(f"reached its step budget max_steps={self.max_steps}")
                if self.time_limit is not None and time.monotonic() - start > self.time_limit:
                    self._limit(
                        f"reached its time limit time_limit={self.time_limit:g} s after "
                        f"{self.steps} steps",
                        kind="time",
                    )
                if stalled >= STALL_STEPS:
                    self._limit(
                        f"made no progress in {stalled} steps (the time span is below "
                        f"the solver's resolution)",
                        kind="stalled",
                    )
                if self.steps >= WARMUP_STEPS and solver.step_size is not None:
                    # the horizon is out of reach: at the current step size, t_final needs
                    # far more steps than the budget (100 times) - fail now, not in minutes
                    need = (float(times[-1]) - solver.t) / max(solver.step_size, 1e-300)
                    if need > OUT_OF_REACH * self.max_steps:
                        self._limit(
                            f"cannot reach t_final within max_steps={self.max_steps}: "
                            f"after {self.steps} steps the step size is "
                            f"{solver.step_size:.3g}, ~{need:.3g} more steps"
                        )
                t_old = solver.t
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    msg = solver.step()
                if solver.status == "failed":
                    self.message = str(msg)
                    break
                self.steps += 1
                stalled = stalled + 1 if solver.t == t_old else 0
                cache: list = []

                def dense():
                    if not cache:
                        cache.append(solver.dense_output())
                    return cache[0]

                while i < len(times) and times[i] <= solver.t:
                    yt = dense()(times[i]) if times[i] < solver.t else solver.y.copy()
                    self.samples.append(np.array(yt, dtype=float))
                    i += 1
                if on_step is not None:
                    on_step(t_old, solver.t, solver.y, dense)
                if bar is not None:
                    bar.update(solver.t - bar.n)
        finally:
            if bar is not None:
                bar.close()

    def _limit(self, what: str, kind: str = "steps") -> None:
        """Raise :class:`ComputationLimitError` with ``t``, the state ``y`` and ``kind``
        (``"steps"``, ``"time"`` or ``"stalled"``)."""
        stalled = kind == "stalled"
        t, t_final = float(self.solver.t), float(self.times[-1])
        advice = (
            "use a longer horizon or another solver"
            if stalled
            else "raise max_steps or time_limit, shorten t_final, or use a stiff solver such "
            "as 'LSODA'"
        )
        err = ComputationLimitError(
            f"the {self.what} {what}, at t={t:.6g} of t_final={t_final:.6g} ({advice})"
        )
        err.t, err.y, err.kind = t, np.array(self.solver.y), kind
        raise err


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class GradientFlowResult(Result):
    """A parameter-space gradient flow, sampled at ``times``.

    Attributes:
        times: the sample times, shape ``(T,)``.
        params: the parameters at each time (list of T parameter lists).
        end_to_end: ``mu(theta(t))``, shape ``(T,) + end_to_end_shape``.
        loss: the loss at each time, shape ``(T,)``.
        invariants: the invariants at each time, flattened, shape ``(T, m)``.
        max_invariant_drift: ``max_t ||delta(t) - delta(0)||_inf / scale`` with
            ``scale = max(||delta(0)||_inf, max_l ||w_l(0)||^2)``: the relative drift of
            the conserved quantities (0 for an exact flow).
        max_ntk_residual: ``max_t ||v' + K grad l(v)|| / ||K grad l(v)||`` where ``v' = J theta'``
            is computed from the Jacobian and ``theta'`` from the vector-Jacobian product,
            and ``K`` from the structured NTK: the check that ``v' = -K grad l(v)``.
        loss_monotone: whether the sampled loss never increases (up to ``1e-12`` relative).
        gradient_norm: ``||grad_theta l||`` at the final time.
        solver, rtol, atol: the solver settings; success, message, nfev: solver report.
        num_steps: accepted solver steps (at most ``max_steps``).
    """

    times: np.ndarray
    params: list[list[np.ndarray]]
    end_to_end: np.ndarray
    loss: np.ndarray
    invariants: np.ndarray
    max_invariant_drift: float
    max_ntk_residual: float
    loss_monotone: bool
    gradient_norm: float
    solver: str
    rtol: float
    atol: float
    success: bool
    message: str
    nfev: int
    num_steps: int = 0

    @property
    def final_params(self) -> list:
        """The parameters at the last time."""
        return self.params[-1]


def parameter_velocity(net: Any, loss: QuadraticLoss, *, monomials: bool = True) -> Callable:
    """``theta -> -J^T grad l(mu(theta))`` on flat parameter vectors, raising a
    :class:`ParameterError` ("overflow: ...") instead of returning NaN or inf.

    A network for which its domain registered a fast path (:func:`register_fast_path`:
    linear convolutional networks with few monomials evaluate theirs in a dozen numpy
    calls, other 1D ones by numpy's 1D convolution) uses it, a monomial one only when
    ``monomials``; other networks ``net.end_to_end`` and ``net.vjp``.

    Args:
        net: the network.
        loss: the quadratic loss.
        monomials: allow the monomial path. Its ``v`` agrees with ``net.end_to_end`` to
            rounding, not bit for bit; a check that subtracts the two near a minimum
            (the Riemannian flow's kernel check) asks for the convolution path.
    """
    fast = fast_path(net, FAST_PATH_KINDS if monomials else ("convolution",))
    if fast is not None:
        A, target = loss.A, loss.target

        def fast_velocity(theta: np.ndarray) -> np.ndarray:
            out = fast.velocity(theta, A, target)
            if not np.isfinite(out).all():  # one check in the common case
                _check_state(theta)
                check_finite("the velocity -grad_theta l", out, theta)
            return out

        return fast_velocity

    def velocity(theta: np.ndarray) -> np.ndarray:
        _check_state(theta)
        params = net.unflatten(theta)
        v = net.end_to_end(params)
        check_finite("the end-to-end map mu(theta)", v, theta)
        g = loss.gradient(v)
        out = -np.concatenate([a.ravel() for a in net.vjp(params, g)])
        check_finite("the velocity -grad_theta l", out, theta)
        return out

    return velocity


def _check_state(theta: np.ndarray) -> None:
    if not np.all(np.isfinite(theta)):
        raise ParameterError(
            f"overflow: the flow left the finite floats (theta={short_repr(theta)}); the "
            f"parameters or the loss are too large for float64 (rescale them)"
        )


#: fast evaluations of a domain's networks on flat parameter vectors, which the domain
#: offers when it is imported (flows imports no domain): ``(path, kind)`` in the order
#: tried, each ``path`` a class with ``applies(net)``, ``path(net)`` and
#: ``velocity(theta, A, target)``; ``"convolution"`` paths also have ``jacobian(theta)``
#: and agree with ``net.end_to_end`` bit for bit, ``"monomials"`` ones to rounding
_FAST_PATHS: list[tuple[type, str]] = []

FAST_PATH_KINDS = ("monomials", "convolution")


def register_fast_path(path: type, kind: str) -> None:
    """Offer ``path`` (see :data:`_FAST_PATHS`) for the networks it applies to."""
    if kind not in FAST_PATH_KINDS:
        raise ValueError(f"kind must be one of {FAST_PATH_KINDS}; got {kind!r}")
    if (path, kind) not in _FAST_PATHS:
        _FAST_PATHS.append((path, kind))


def fast_path(net: Any, kinds: tuple = FAST_PATH_KINDS) -> Any | None:
    """The first registered path of one of ``kinds`` that applies to ``net``, built for
    it, or ``None``."""
    for path, kind in _FAST_PATHS:
        if kind in kinds and path.applies(net):
            return path(net)
    return None


@renamed_keywords(method="solver")
@quiet_overflow
def gradient_flow(
    net: Any,
    params0: Any,
    loss: QuadraticLoss,
    t_final: float,
    *,
    num_times: int = 101,
    solver: str = "DOP853",
    rtol: float = SOLVER_RTOL,
    atol: float = SOLVER_ATOL,
    max_steps: int = DEFAULT_MAX_STEPS,
    time_limit: float | None = None,
    progress: bool = False,
) -> GradientFlowResult:
    """Integrate ``theta' = -J^T grad l(mu(theta))`` with a scipy ``solve_ivp`` solver.

    Args:
        net: a network with ``end_to_end``, ``vjp``, ``jacobian``, ``ntk``, ``invariants``,
            ``flatten`` and ``unflatten`` (:class:`LinearConvNet`, :class:`LinearFCNet`).
        params0: the initial parameters.
        loss: a :class:`QuadraticLoss` (or :class:`SquareLoss`) on the end-to-end map.
        t_final: final time, > 0.
        num_times: number of sample times in ``[0, t_final]``.
        solver: a ``solve_ivp`` solver (:data:`SOLVERS`): ``"DOP853"`` (default, 8th
            order), ``"RK45"``, ``"RK23"`` or a stiff one (``"Radau"``, ``"BDF"``,
            ``"LSODA"``).
        rtol, atol: solver tolerances.
        max_steps: the step budget: reaching it before ``t_final`` raises a
            :class:`ComputationLimitError` (attributes ``t`` reached and state ``y``), so an
            absurd horizon such as ``t_final=1e300`` fails fast instead of running forever.
        time_limit: an optional wall-clock budget in seconds, with the same error.
        progress: show a progress bar (in flow time) on stderr.

    Returns:
        A :class:`GradientFlowResult`. Raises a :class:`ParameterError` ("overflow: ...")
        when the flow's values leave the float64 range (never a result holding NaN/inf).

    >>> from neuromanifold import LinearConvNet
    >>> net = LinearConvNet([2, 2], strides=[2])
    >>> loss = QuadraticLoss(np.eye(4), [1.0, 0.5, -0.3, 0.2])
    >>> flow = gradient_flow(net, net.random_params(0), loss, 1.0, num_times=5)
    >>> bool(flow.loss[-1] < flow.loss[0]), flow.max_invariant_drift < 1e-8
    (True, True)
    """
    # Whole: a straight line: check, integrate, then one pass over the samples filling the result
    check_flow_args(
        net,
        loss,
        t_final,
        num_times=num_times,
        solver=solver,
        rtol=rtol,
        atol=atol,
        max_steps=max_steps,
        time_limit=time_limit,
    )
    progress = check_bool(progress, "progress")
    params0 = net.check_params(params0)
    theta0 = net.flatten(params0)
    velocity = parameter_velocity(net, loss)
    times = np.linspace(0.0, float(t_final), int(num_times))
    stepper = Stepper(
        lambda t, theta: velocity(theta),
        theta0,
        times,
        solver=solver,
        rtol=rtol,
        atol=atol,
        max_steps=max_steps,
        time_limit=time_limit,
        what="gradient flow",
        progress=progress,
    )
    stepper.run()

    params, vs, losses, invs, residuals = [], [], [], [], []
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # overflow is checked explicitly (check_finite) and raised as a ParameterError
        for theta in stepper.samples:
            p = net.unflatten(theta)
            v = net.end_to_end(p)
            g = loss.gradient(v)
            # v' from the chain rule (Jacobian times the vjp-based velocity) against -K grad l
            vdot = net.jacobian(p) @ velocity(theta)
            kg = net.ntk(p) @ g.ravel()
            check_finite("the NTK times the loss gradient", np.concatenate([vdot, kg]), theta)
            residuals.append(
                np.linalg.norm(vdot + kg) / max(np.linalg.norm(kg), 1e-300)
                if np.linalg.norm(kg) > 0
                else float(np.linalg.norm(vdot))
            )
            params.append(p)
            vs.append(v)
            losses.append(loss.value(v))
            invs.append(invariant_vector(net, p))
    invs_arr = np.array(invs)
    check_finite("the invariants", invs_arr, "along the flow")
    drift = float(
        np.abs(invs_arr - invs_arr[0]).max(initial=0.0) / invariant_scale(invs_arr[0], params0)
    )
    losses_arr = np.array(losses)
    tol = 1e-12 * max(1.0, abs(losses_arr[0]))
    monotone = bool(np.all(np.diff(losses_arr) <= tol))
    result = GradientFlowResult(
        times=times[: len(params)],
        params=params,
        end_to_end=np.array(vs),
        loss=losses_arr,
        invariants=invs_arr,
        max_invariant_drift=drift,
        max_ntk_residual=float(max(residuals)),
        loss_monotone=monotone,
        gradient_norm=float(np.linalg.norm(velocity(stepper.solver.y))),
        solver=solver,
        rtol=rtol,
        atol=atol,
        success=stepper.finished,
        message=stepper.message,
        nfev=int(stepper.solver.nfev),
        num_steps=stepper.steps,
    )
    check_finite(
        "a field of the result",
        [result.max_invariant_drift, result.max_ntk_residual, result.gradient_norm],
        "of the gradient flow",
    )
    return result
