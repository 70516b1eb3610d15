"""Riemannian gradient flow in function space, ``v' = -K(v, delta) grad l(v)``
(docs/concepts_linear.md §5).

The parameter flow ``theta' = -grad_theta l(mu(theta))`` moves ``v = mu(theta)`` by
``v' = -K_theta grad l(v)`` (docs/concepts_linear.md §2), and conserves the invariants
``delta``. The Riemannian flow is that equation in function space, with the kernel
``K(v, delta)`` taken at a lift of ``v`` to the fiber ``{theta : mu(theta) = v,
delta(theta) = delta}``, continued along the trajectory from an initial lift.

**How it is integrated: in the chart given by the lift.** A continuous lift
``theta(t)`` of a solution satisfies ``J theta' = v' = -J J^T grad l`` and
``d delta(theta) = 0``; the parameter velocity ``-J^T grad l`` satisfies both, and at a
smooth point where the fiber is discrete (linear convolutional networks) it is the only
solution, so the continued lift *is* the parameter flow from the initial lift. On the
positive-dimensional fibers of fully connected networks the lift's velocity is not
unique; ``-J^T grad l`` is the one with no component along the fiber (the horizontal
lift, of minimal norm), and ``K`` may vary along the fiber, which the check below then
shows. The flow therefore carries ``theta`` along and
reads ``v(t) = mu(theta(t))``: ``v`` never leaves the neuromanifold, there is no
projection to fail, and the only drift is the solver's drift of the invariants, which is
reported. Function space is used as the *check*: at every sample time ``v(t)`` is lifted
again from ``(v(t), delta)`` alone, by Gauss-Newton continuation from the previous
sample's lift, and ``-K(v, delta) grad l(v)`` at that lift is compared with the chart's
velocity.

**Where it genuinely fails.** At a point where the Jacobian of ``mu`` drops rank (a
singular point of the neuromanifold, e.g. two layers of a stride-1 network sharing a
root), branches of the fiber meet and ``(v, delta)`` no longer determines how the flow
continues. The smallest relevant singular value of the Jacobian (columns normalized) is
measured after every solver step, local minima inside a step are located on the
solver's dense output, and reaching ``singular_tol`` raises a
:class:`SingularPointError` that says so, with the time ``t`` and ``v`` there.

Where the NTK is parameter-independent (docs/concepts_linear.md §3) the result is the
parameter flow's ``v(t)`` whatever lift is chosen; where it is not, different initial
lifts of the same ``(v0, delta)`` give different trajectories (:func:`compare_lifts`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._errors import (
    ComputationLimitError,
    InputError,
    NotInNeuromanifoldError,
    ParameterError,
    SingularPointError,
    short_repr,
)
from .._results import Result
from .._tolerance import DEFAULT_TOL
from .._validation import (
    as_finite_array,
    check_bool,
    check_options,
    check_positive_float,
    check_positive_int,
    renamed_keywords,
)
from ..fibers import invariant_scale, invariant_vector
from ._gradient_flow import (
    DEFAULT_MAX_STEPS,
    SOLVER_ATOL,
    SOLVER_RTOL,
    GradientFlowResult,
    Stepper,
    check_finite,
    check_flow_args,
    fast_path,
    gradient_flow,
    parameter_velocity,
    quiet_overflow,
)
from ._losses import QuadraticLoss

__all__ = [
    "riemannian_flow",
    "RiemannianFlowResult",
    "lift_to_fiber",
    "FiberLift",
    "compare_lifts",
    "LiftComparison",
    "LiftOutcome",
    "compare_with_parameter_flow",
    "FlowComparison",
]

#: default relative residual of a lift onto the fiber (Newton's iterations stop below it)
LIFT_TOL = 1e-13


# --------------------------------------------------------------------------- lifting
@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class FiberLift(Result):
    """A point of the fiber over ``(v, delta)`` found by Gauss-Newton continuation.

    Attributes:
        params: the lifted parameters (one array per layer).
        residual: ``max(||mu(theta) - v|| / ||v||, ||delta(theta) - delta||_inf / scale)``
            with ``scale = max(||delta||_inf, max_l ||w_l||^2)``: how far the lift is from
            the fiber (relative).
        iterations: Gauss-Newton steps taken.
        converged: ``residual <= tol``, or the Gauss-Newton step vanished: a least-squares
            lift of a ``v`` slightly off the neuromanifold (solver stages are).
        tol: the requested relative residual.
    """

    params: list[np.ndarray]
    residual: float
    iterations: int
    converged: bool
    tol: float


def _fiber_residual(net: Any, theta: np.ndarray, v: np.ndarray, delta: np.ndarray):
    params = net.unflatten(theta)
    rv = net.end_to_end(params).ravel() - v
    rd = invariant_vector(net, params) - delta
    vscale = max(float(np.linalg.norm(v)), 1e-300)
    rel = max(
        float(np.linalg.norm(rv)) / vscale,
        float(np.abs(rd).max(initial=0.0)) / invariant_scale(delta, params),
    )
    return params, np.concatenate([rv, rd]), rel


def _check_lift_finite(rel: float, r: np.ndarray) -> None:
    if not (np.isfinite(rel) and np.all(np.isfinite(r))):
        raise ParameterError(
            "overflow: the fiber residual at the start is not finite in "
            "float64 (v, the invariants or the start are too large in "
            "magnitude; rescale them)"
        )


@quiet_overflow
def lift_to_fiber(
    net: Any, v: Any, invariants: Any, start: Any, *, tol: float = LIFT_TOL, max_iter: int = 50
) -> FiberLift:
    """Continue a lift: Gauss-Newton on ``mu(theta) = v``, ``delta(theta) = delta`` from ``start``.

    Each step is the minimal-norm least-squares solution of the linearized equations,
    so from a nearby start the iteration converges to the nearby point of the fiber
    (the branch through ``start``); on a positive-dimensional fiber (fully connected
    networks) it moves orthogonally to the fiber, i.e. as little as possible.

    Args:
        net: a network with ``end_to_end``, ``jacobian``, ``invariants``,
            ``invariant_jacobian``, ``flatten`` and ``unflatten`` (e.g.
            :class:`LinearConvNet`, :class:`LinearFCNet`).
        v: the end-to-end map to lift.
        invariants: the target invariants (as returned by ``net.invariants``).
        start: parameters to start from (the previous lift).
        tol: relative residual at which to stop (see :class:`FiberLift`).
        max_iter: maximum number of iterations.

    Returns:
        A :class:`FiberLift`; ``converged`` is False when the iteration neither reached
        ``tol`` nor became stationary within ``max_iter`` steps.

    >>> from neuromanifold import LinearConvNet
    >>> net = LinearConvNet([2, 2], strides=[2])
    >>> theta = net.random_params(0)
    >>> v, d = net.end_to_end(theta), net.invariants(theta)
    >>> lift = lift_to_fiber(net, v, d, [w * 1.01 for w in theta])
    >>> lift.converged, bool(np.allclose(lift.params[0], theta[0]))
    (True, True)
    """
    tol = check_positive_float(tol, "tol")
    max_iter = check_positive_int(max_iter, "max_iter")
    v = _as_end_to_end_vector(net, v, "v")
    delta = _as_invariant_vector(invariants)
    start = net.check_params(start)
    expected = invariant_vector(net, start).size
    if delta.size != expected:
        raise InputError(
            f"invariants must have {expected} entries for {net!r}; "
            f"got {delta.size}: {short_repr(invariants)}"
        )
    theta = net.flatten(start)
    with np.errstate(over="ignore", invalid="ignore"):
        params, r, rel = _fiber_residual(net, theta, v, delta)
    _check_lift_finite(rel, r)
    best = (rel, theta)
    steps, stationary = 0, False
    while rel > tol and steps < max_iter:
        F = np.vstack([net.jacobian(params), net.invariant_jacobian(params)])
        step, *_ = np.linalg.lstsq(F, -r, rcond=None)
        theta = theta + step
        steps += 1
        prev = rel
        with np.errstate(over="ignore", invalid="ignore"):
            params, r, rel = _fiber_residual(net, theta, v, delta)
        if not (np.isfinite(rel) and np.all(np.isfinite(r))):
            break  # the step overflowed: keep the best finite iterate
        if rel < best[0]:
            best = (rel, theta)
        # a vanishing step means a least-squares lift: v is off the neuromanifold by the
        # residual (solver stages are, by O(h^p)); K is then taken at the nearest lift.
        # A residual that stops decreasing at a tiny level is the rounding floor.
        if np.linalg.norm(step) <= 1e-13 * max(1.0, float(np.linalg.norm(theta))) or (
            rel < 1e-10 and rel > 0.5 * prev
        ):
            stationary = True
            break
    rel, theta = best
    return FiberLift(
        params=net.unflatten(theta),
        residual=float(rel),
        iterations=steps,
        converged=bool(rel <= tol or stationary),
        tol=tol,
    )


def _as_end_to_end_vector(net: Any, v: Any, name: str) -> np.ndarray:
    """An end-to-end map of ``net`` (any shape with the right number of entries), flat."""
    v = as_finite_array(v, name, error=InputError)
    if v.size != net.end_to_end_size:
        raise InputError(
            f"{name} must have {net.end_to_end_size} entries for {net!r}; got shape {v.shape}"
        )
    return v.ravel()


def _as_invariant_vector(invariants: Any) -> np.ndarray:
    """Invariants as one flat vector (a list of matrices, as for fully connected nets, is
    flattened and concatenated like :func:`invariant_vector`)."""
    if isinstance(invariants, (list, tuple)) and any(np.ndim(d) >= 1 for d in invariants):
        return np.concatenate(
            [as_finite_array(d, "invariants", error=InputError).ravel() for d in invariants]
        )
    return as_finite_array(invariants, "invariants", error=InputError).ravel()


# --------------------------------------------------------------------------- the flow
@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class RiemannianFlowResult(Result):
    """A Riemannian gradient flow in function space, sampled at ``times`` (docs/concepts_linear.md
    §5).

    Attributes:
        times: sample times, shape ``(T,)``.
        end_to_end: ``v(t)``, shape ``(T,) + end_to_end_shape``.
        loss: ``l(v(t))``, shape ``(T,)``.
        lifts: the lift of ``v(t)`` carried by the flow at each sample time (list of T
            parameter lists): ``mu(lift) = v(t)`` exactly, invariants within
            ``max_invariant_drift``.
        invariants: the fixed invariants ``delta`` (flattened).
        initial_lift: the lift of ``v0`` the flow started from.
        max_invariant_drift: ``max_t ||delta(lift(t)) - delta||_inf / scale`` (scale as in
            :class:`FiberLift`): the solver's drift off the fiber (``v`` itself never
            leaves the neuromanifold).
        max_lift_residual: the largest relative residual of the function-space lifts of
            ``(v(t), delta)`` at the sample times (see :class:`FiberLift`): how far
            ``(v(t), delta)`` is from having a lift, i.e. the drift off the neuromanifold
            and off the invariants, as seen from function space.
        max_lift_iterations: the most Gauss-Newton iterations a function-space lift needed.
        lift_restarts: sample times where the function-space continuation from the
            previous sample's lift did not converge and was restarted from the carried
            lift (0 on a clean run).
        max_kernel_mismatch: ``max_t ||v'(t) + K(v, delta) grad l(v)|| / (||K(v, delta)||_2
            ||grad l(v)||)`` with ``v' = J theta'`` the chart's velocity and ``K(v, delta)``
            at the function-space lift: the check that ``v(t)`` solves the function-space
            equation (relative to the size of its right-hand side's factors, so that it
            stays meaningful as ``grad l`` tends to 0).
        min_singular_value: the smallest ``sigma_dim / sigma_1`` of the Jacobian (columns
            normalized, ``dim`` the dimension of the neuromanifold) seen along the flow
            (after every step, and at local minima inside steps): how close the flow came
            to a singular point.
        min_singular_time: the time where it was seen.
        singular_tol: the threshold at which a singular point stops the flow.
        riemannian_gradient_norm: ``||K(v, delta) grad l(v)||`` at the final time.
        loss_monotone: whether the sampled loss never increases (up to 1e-12 relative).
        solver, rtol, atol: solver settings; success, message, nfev: solver report;
        num_steps: accepted solver steps.
    """

    times: np.ndarray
    end_to_end: np.ndarray
    loss: np.ndarray
    lifts: list[list[np.ndarray]] = dataclasses.field(repr=False)
    invariants: np.ndarray = dataclasses.field(repr=False)
    initial_lift: list[np.ndarray] = dataclasses.field(repr=False)
    max_invariant_drift: float
    max_lift_residual: float
    max_lift_iterations: int = dataclasses.field(repr=False)
    lift_restarts: int = dataclasses.field(repr=False)
    max_kernel_mismatch: float
    min_singular_value: float
    min_singular_time: float = dataclasses.field(repr=False)
    singular_tol: float = dataclasses.field(repr=False)
    riemannian_gradient_norm: float = dataclasses.field(repr=False)
    loss_monotone: bool
    solver: str
    rtol: float = dataclasses.field(repr=False)
    atol: float = dataclasses.field(repr=False)
    success: bool
    message: str = dataclasses.field(repr=False)
    nfev: int = dataclasses.field(repr=False)
    num_steps: int


def _initial_lift(
    net: Any, v0: np.ndarray, delta: Any, lift: Any, lift_index: int, fiber_options: dict
) -> list:
    if lift is not None:
        if fiber_options:
            raise InputError(
                f"fiber options are used only to compute the initial lift when lift=None; "
                f"got lift=... and {sorted(fiber_options)} (drop one of them)"
            )
        return net.check_params(lift)
    if not hasattr(net, "fiber"):
        raise InputError(f"{net!r} has no fiber(); pass an initial lift with lift=...")
    check_options(
        net.fiber, fiber_options, f"{type(net).__name__}.fiber (the initial lift's **fiber_options)"
    )
    fib = net.fiber(v0.reshape(net.end_to_end_shape), delta, **fiber_options)
    points = list(fib.points)
    if not points:
        raise NotInNeuromanifoldError(
            f"the fiber over v0={short_repr(v0)} with invariants {short_repr(delta)} is empty"
        )
    if (
        isinstance(lift_index, (bool, np.bool_))
        or not isinstance(lift_index, (int, np.integer))
        or not -len(points) <= lift_index < len(points)
    ):
        raise InputError(
            f"lift_index must be an int in [0, {len(points)}) (the fiber has "
            f"{len(points)} points); got {short_repr(lift_index)}"
        )
    return net.check_params(points[lift_index])


class _SingularityWatch:
    """``sigma(theta) = sigma_dim / sigma_1`` of the column-normalized Jacobian, tracked
    along the flow; raises :class:`SingularPointError` at ``sigma <= tol``.

    After each step, ``sigma`` and ``d sigma / dt`` (a finite difference along the
    velocity) at the step's end are compared with those at its start: when a dip to 0
    inside the step is possible (the slope turns from - to +, or ``sigma`` at an end is
    within reach of 0 at the end slopes), ``sigma`` is sampled on the step's dense output
    and each local minimum is located by golden-section search (a transversal crossing of
    the singular locus, where ``sigma ~ |t - t*|``, is found to rounding precision)."""

    def __init__(self, net: Any, dim: int, tol: float, velocity: Any):
        self.net, self.dim, self.tol, self.velocity = net, dim, tol, velocity
        self.min = (math.inf, 0.0)
        self.s, self.slope = math.inf, 0.0
        fast = fast_path(net, ("convolution",))
        self.jacobian = (
            fast.jacobian
            if fast is not None
            else (lambda theta: net.jacobian(net.unflatten(theta)))
        )

    def sigma(self, theta: np.ndarray) -> float:
        J = self.jacobian(theta)
        check_finite("the Jacobian", J, "along the Riemannian flow")
        # unit columns, normalized by their largest entry first: a column of size 1e-300
        # (a tiny layer) has a norm that underflows when squared, yet is not zero
        m = np.max(np.abs(J), axis=0)
        keep = m > 0
        if keep.sum() < self.dim:
            return 0.0
        Jk = J[:, keep] / m[keep]
        s = np.linalg.svd(Jk / np.linalg.norm(Jk, axis=0), compute_uv=False)
        return float(s[self.dim - 1] / s[0]) if s.size >= self.dim and s[0] > 0 else 0.0

    def _slope(self, theta: np.ndarray, s: float) -> float:
        f = self.velocity(theta)
        nf = float(np.abs(f).max(initial=0.0))
        h = 1e-7 * max(1.0, float(np.abs(theta).max(initial=0.0))) / nf if nf > 0 else 0.0
        if not (np.isfinite(h) and h > 0 and np.all(np.isfinite(theta + h * f))):
            return 0.0
        return (self.sigma(theta + h * f) - s) / h

    def check(self, t: float, theta: np.ndarray, s: float | None = None) -> float:
        s = self.sigma(theta) if s is None else s
        if s < self.min[0]:
            self.min = (s, float(t))
        if s <= self.tol:
            err = SingularPointError(
                f"the flow reached a singular point of the neuromanifold at t={t:.9g}, "
                f"v={short_repr(self.net.end_to_end(self.net.unflatten(theta)).ravel())}: "
                f"the Jacobian of the parameterization drops rank there (sigma_dim/sigma_1 "
                f"= {s:.3g} <= singular_tol={self.tol:.3g}; dim={self.dim}), branches of the "
                f"fiber meet and (v, delta) no longer determines the flow (the parameter "
                f"flow, gradient_flow, continues through it)"
            )
            err.t, err.sigma = float(t), float(s)
            err.v = self.net.end_to_end(self.net.unflatten(theta))
            err.theta = np.array(theta)
            raise err
        return s

    def start(self, theta: np.ndarray) -> None:
        self.s = self.check(0.0, theta)
        self.slope = self._slope(theta, self.s)

    def on_step(self, t_old: float, t_new: float, y_new: np.ndarray, dense: Any) -> None:
        s_old, slope_old = self.s, self.slope
        s_new = self.check(t_new, y_new)
        slope_new = self._slope(y_new, s_new)
        self.s, self.slope = s_new, slope_new
        h = t_new - t_old
        lip = 2.0 * max(abs(slope_old), abs(slope_new))  # a Lipschitz bound of sigma(t)
        # sigma can reach 0 inside the step only if an end is within reach of 0
        if h <= 0 or min(s_old, s_new) > 2.0 * lip * h:
            return
        path = dense()
        grid = np.linspace(t_old, t_new, 9)
        vals = [s_old] + [self.check(t, path(t)) for t in grid[1:-1]] + [s_new]
        spacing = grid[1] - grid[0]
        for i in range(len(grid)):
            left, right = vals[max(i - 1, 0)], vals[min(i + 1, len(grid) - 1)]
            if vals[i] <= left and vals[i] <= right and vals[i] <= 2.0 * lip * spacing:
                self._refine(grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)], path, lip)

    def _refine(self, a: float, b: float, path: Any, lip: float) -> None:
        """Golden-section search for a minimum of sigma on ``[a, b]``, while a value
        ``<= tol`` is still within reach (``best - lip * (b - a) <= tol``)."""
        ratio = (math.sqrt(5.0) - 1.0) / 2.0
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        fc, fd = self.check(c, path(c)), self.check(d, path(d))
        for _ in range(100):
            if (
                b - a <= 4 * np.finfo(float).eps * max(1.0, abs(b))
                or min(fc, fd) - 2.0 * lip * (b - a) > self.tol
            ):
                break
            if fc <= fd:
                b, d, fd = d, c, fc
                c = b - ratio * (b - a)
                fc = self.check(c, path(c))
            else:
                a, c, fc = c, d, fd
                d = a + ratio * (b - a)
                fd = self.check(d, path(d))


def _generic_rank(net: Any, params: list) -> int:
    dim = getattr(net, "dimension", None)
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool) and dim > 0:
        return int(dim)
    return max(1, int(np.linalg.matrix_rank(net.jacobian(params))))  # pragma: no cover


def _assemble(
    net: Any,
    loss: QuadraticLoss,
    delta: np.ndarray,
    first: FiberLift,
    *,
    samples: list,
    times: np.ndarray,
    velocity: Any,
    watch: _SingularityWatch,
    lift_tol: float,
    max_lift_residual: float,
    settings: dict,
) -> RiemannianFlowResult:
    """The result from the chart's samples, with the function-space checks."""
    vs, lifts, losses = [], [], []
    drift = max_res = mismatch = 0.0
    max_it = first.iterations
    restarts = 0
    fs_lift = first.params
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # overflow is checked explicitly (check_finite) and raised as a ParameterError
        for theta in samples:
            p = net.unflatten(theta)
            v = net.end_to_end(p)
            check_finite("the end-to-end map", v, "along the Riemannian flow")
            inv = invariant_vector(net, p)
            check_finite("the invariants", inv, "along the Riemannian flow")
            drift = max(
                drift, float(np.abs(inv - delta).max(initial=0.0)) / invariant_scale(delta, p)
            )
            # the check in function space alone: lift (v, delta) again, continued from the
            # previous sample's function-space lift
            fl = lift_to_fiber(net, v, delta, fs_lift, tol=lift_tol)
            if not fl.converged or fl.residual > max_lift_residual:
                restarts += 1
                fl = lift_to_fiber(net, v, delta, p, tol=lift_tol)
            fs_lift = fl.params
            max_res, max_it = max(max_res, fl.residual), max(max_it, fl.iterations)
            g = loss.gradient(v).ravel()
            vdot = net.jacobian(p) @ velocity(theta)
            K = net.ntk(fl.params)
            kg = K @ g
            check_finite("the velocity", np.concatenate([vdot, kg]), "along the Riemannian flow")
            scale = float(np.linalg.norm(K, 2) * np.linalg.norm(g))
            check_finite("the size of K grad l", scale, "along the Riemannian flow")
            err = float(np.linalg.norm(vdot + kg))
            mismatch = max(mismatch, err / scale if scale > 0 else err)
            vs.append(v)
            lifts.append(p)
            losses.append(loss.value(v))
    losses_arr = np.array(losses)
    final = lifts[-1]
    with np.errstate(over="ignore", invalid="ignore"):
        rgrad = float(np.linalg.norm(net.ntk(final) @ loss.gradient(vs[-1]).ravel()))
    check_finite("the Riemannian gradient", rgrad, "at the final time")
    ltol = 1e-12 * max(1.0, abs(losses_arr[0]))
    return RiemannianFlowResult(
        times=times[: len(vs)],
        end_to_end=np.array(vs).reshape((len(vs),) + tuple(net.end_to_end_shape)),
        loss=losses_arr,
        lifts=lifts,
        invariants=delta,
        initial_lift=first.params,
        max_invariant_drift=drift,
        max_lift_residual=float(max_res),
        max_lift_iterations=int(max_it),
        lift_restarts=restarts,
        max_kernel_mismatch=float(mismatch),
        min_singular_value=float(watch.min[0]),
        min_singular_time=float(watch.min[1]),
        singular_tol=watch.tol,
        riemannian_gradient_norm=rgrad,
        loss_monotone=bool(np.all(np.diff(losses_arr) <= ltol)),
        **settings,
    )


@renamed_keywords(method="solver")
@quiet_overflow
def riemannian_flow(
    net: Any,
    v0: Any,
    invariants: Any,
    loss: QuadraticLoss,
    t_final: float,
    *,
    lift: Any = None,
    lift_index: int = 0,
    num_times: int = 101,
    solver: str = "DOP853",
    rtol: float = SOLVER_RTOL,
    atol: float = SOLVER_ATOL,
    lift_tol: float = LIFT_TOL,
    max_lift_residual: float = 1e-4,
    singular_tol: float = DEFAULT_TOL,
    max_steps: int = DEFAULT_MAX_STEPS,
    time_limit: float | None = None,
    progress: bool = False,
    **fiber_options: Any,
) -> RiemannianFlowResult:
    """Integrate ``v' = -K(v, delta) grad l(v)`` on the neuromanifold, from ``v0`` with
    invariants ``delta``, in the chart given by the lift (see the module docs).

    The initial lift is ``lift`` if given, else point ``lift_index`` of
    ``net.fiber(v0, invariants)``; it is refined onto the fiber by :func:`lift_to_fiber`
    and carried along: ``theta' = -J^T grad l(mu(theta))``, ``v(t) = mu(theta(t))``. At
    every sample time ``v(t)`` is lifted again from ``(v(t), delta)`` alone and the
    function-space velocity ``-K(v, delta) grad l(v)`` is checked against the chart's
    (``max_kernel_mismatch``).

    Args:
        net: a network with ``end_to_end``, ``jacobian``, ``vjp``, ``ntk``,
            ``invariants``, ``invariant_jacobian``, ``flatten``/``unflatten`` and
            ``dimension`` (and ``fiber`` when ``lift`` is not given).
        v0: the initial end-to-end map (in the neuromanifold).
        invariants: the invariants ``delta`` (fixed along the flow).
        loss: a :class:`QuadraticLoss` on ``v``.
        t_final: final time, > 0.
        lift: an initial lift of ``(v0, delta)`` (refined by Gauss-Newton); default from
            the fiber.
        lift_index: which fiber point to start from when ``lift`` is None.
        num_times: number of sample times in ``[0, t_final]``.
        solver: an explicit (``"DOP853"``, ``"RK45"``, ``"RK23"``) or stiff (``"Radau"``,
            ``"BDF"``, ``"LSODA"``) scipy solver.
        rtol, atol: solver tolerances.
        lift_tol: relative residual each function-space lift is solved to.
        max_lift_residual: the initial lift must reach the fiber over ``(v0, delta)`` to
            this relative residual (else :class:`NotInNeuromanifoldError`); a
            function-space lift at a sample time that does not is restarted from the
            carried lift and counted in ``lift_restarts``.
        singular_tol: the flow stops with a :class:`SingularPointError` (attributes
            ``t``, ``v``, ``sigma`` and ``partial``, the result up to there) where
            ``sigma_dim / sigma_1`` of the column-normalized Jacobian is at most this.
        max_steps: the step budget: reaching it raises a :class:`ComputationLimitError`
            (attributes ``t`` and ``partial``), so ``t_final=1e300`` fails fast.
        time_limit: an optional wall-clock budget in seconds, with the same error.
        progress: show a progress bar (in flow time) on stderr.
        **fiber_options: passed to ``net.fiber`` for the initial lift.

    Returns:
        A :class:`RiemannianFlowResult` (no NaN or inf: values leaving the float64 range
        raise a :class:`ParameterError` or :class:`InputError` "overflow: ...").

    >>> from neuromanifold import LinearConvNet, QuadraticLoss
    >>> net = LinearConvNet([2, 2], strides=[2])
    >>> theta = net.random_params(0)
    >>> loss = QuadraticLoss(np.eye(4), [1.0, 0.5, -0.3, 0.2])
    >>> flow = riemannian_flow(net, net.end_to_end(theta), net.invariants(theta), loss, 1.0,
    ...                        lift=theta, num_times=3)
    >>> bool(flow.loss[-1] < flow.loss[0]), flow.max_kernel_mismatch < 1e-10
    (True, True)
    """
    # Whole: checks, the initial lift, the stepper; result() closes over them all for the partial
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
    lift_tol = check_positive_float(lift_tol, "lift_tol")
    max_lift_residual = check_positive_float(max_lift_residual, "max_lift_residual")
    singular_tol = check_positive_float(singular_tol, "singular_tol")
    if singular_tol >= 1:
        raise InputError(
            f"singular_tol must be a relative tolerance in (0, 1); got {short_repr(singular_tol)}"
        )
    progress = check_bool(progress, "progress")
    v0 = _as_end_to_end_vector(net, v0, "v0")
    delta = _as_invariant_vector(invariants)
    start = _initial_lift(net, v0, invariants, lift, lift_index, fiber_options)
    first = lift_to_fiber(net, v0, delta, start, tol=lift_tol)
    check_finite("the initial lift's residual", first.residual, "(v0, delta or the lift)")
    if first.residual > max_lift_residual:
        raise NotInNeuromanifoldError(
            f"the initial lift does not reach the fiber over (v0, delta): relative residual "
            f"{first.residual:.3g} > max_lift_residual={max_lift_residual:.1g}; "
            f"v0={short_repr(v0)}, delta={short_repr(delta)}"
        )

    # v(t) by the same convolutions as net.end_to_end: the kernel check compares
    # J theta' with -K grad l(v) where grad l(v) = A (v - target) is a small difference
    velocity = parameter_velocity(net, loss, monomials=False)
    theta0 = net.flatten(first.params)
    watch = _SingularityWatch(net, _generic_rank(net, first.params), singular_tol, velocity)
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
        what="Riemannian flow",
        progress=progress,
    )

    def result(upto: float = math.inf) -> RiemannianFlowResult:
        keep = [y for y, t in zip(stepper.samples, times) if t <= upto] or stepper.samples[:1]
        settings = dict(
            solver=solver,
            rtol=rtol,
            atol=atol,
            success=upto == math.inf and stepper.finished,
            message=stepper.message,
            nfev=int(stepper.solver.nfev),
            num_steps=stepper.steps,
        )
        return _assemble(
            net,
            loss,
            delta,
            first,
            samples=keep,
            times=times,
            velocity=velocity,
            watch=watch,
            lift_tol=lift_tol,
            max_lift_residual=max_lift_residual,
            settings=settings,
        )

    try:
        watch.start(theta0)
        stepper.run(on_step=watch.on_step)
    except SingularPointError as err:
        stepper.message = f"stopped at a singular point at t={err.t:.9g}"
        err.partial = result(err.t)
        raise
    except ComputationLimitError as err:
        stepper.message = str(err)
        err.partial = result(err.t)
        raise
    return result()


# --------------------------------------------------------------------------- comparisons
@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class FlowComparison(Result):
    """The Riemannian flow from ``(mu(theta0), delta(theta0))`` against the parameter flow.

    Attributes:
        times: common sample times.
        max_difference: ``max_t ||v_riem(t) - v_param(t)|| / max(1, max_t ||v_param(t)||)``.
        riemannian: the :class:`RiemannianFlowResult`.
        parameter: the :class:`GradientFlowResult`.
    """

    times: np.ndarray
    max_difference: float
    riemannian: RiemannianFlowResult
    parameter: GradientFlowResult


@renamed_keywords(method="solver")
@quiet_overflow
def compare_with_parameter_flow(
    net: Any,
    params0: Any,
    loss: QuadraticLoss,
    t_final: float,
    *,
    lift: Any = None,
    num_times: int = 21,
    solver: str = "DOP853",
    rtol: float = SOLVER_RTOL,
    atol: float = SOLVER_ATOL,
    singular_tol: float = DEFAULT_TOL,
    max_steps: int = DEFAULT_MAX_STEPS,
    time_limit: float | None = None,
    **fiber_options: Any,
) -> FlowComparison:
    """Run the Riemannian flow from ``(mu(theta0), delta(theta0))`` and the parameter flow
    from ``theta0``, and measure how far their ``v(t)`` are apart.

    The Riemannian flow's initial lift is ``lift`` if given, else the first point of
    ``net.fiber`` (not ``theta0``): where the NTK is parameter-independent the two flows
    agree to solver tolerance anyway.

    Args:
        net, loss, t_final: as in :func:`gradient_flow`.
        params0: the initial parameters ``theta0``.
        lift: the Riemannian flow's initial lift (default: from ``net.fiber``).
        num_times, solver, rtol, atol, singular_tol, max_steps, time_limit: as in
            :func:`riemannian_flow` (the last two apply to each flow).
        **fiber_options: passed to ``net.fiber`` (only when ``lift`` is None).

    Returns:
        A :class:`FlowComparison`: ``max_difference`` of the two ``v(t)`` (relative to
        ``max(1, max |v|)``) and both flows. A Riemannian flow that reaches a singular
        point raises :class:`SingularPointError` (with ``t`` and ``v`` there).

    >>> from neuromanifold import LinearConvNet, QuadraticLoss
    >>> net = LinearConvNet([2, 2], strides=[2])
    >>> theta = net.random_params(1)
    >>> cmp = compare_with_parameter_flow(net, theta, QuadraticLoss(np.eye(4), np.ones(4)),
    ...                                   0.5, lift=theta, num_times=3)
    >>> cmp.max_difference < 1e-8
    True
    """
    params0 = net.check_params(params0)
    v0, delta = net.end_to_end(params0), net.invariants(params0)
    riem = riemannian_flow(
        net,
        v0,
        delta,
        loss,
        t_final,
        lift=lift,
        num_times=num_times,
        solver=solver,
        rtol=rtol,
        atol=atol,
        singular_tol=singular_tol,
        max_steps=max_steps,
        time_limit=time_limit,
        **fiber_options,
    )
    par = gradient_flow(
        net,
        params0,
        loss,
        t_final,
        num_times=num_times,
        solver=solver,
        rtol=rtol,
        atol=atol,
        max_steps=max_steps,
        time_limit=time_limit,
    )
    a, b = riem.end_to_end, par.end_to_end
    n = min(len(a), len(b))
    scale = max(1.0, float(np.abs(b).max(initial=0.0)))
    diff = float(max(np.linalg.norm((a[i] - b[i]).ravel()) for i in range(n)) / scale)
    return FlowComparison(times=riem.times[:n], max_difference=diff, riemannian=riem, parameter=par)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class LiftOutcome(Result):
    """How the Riemannian flow from one initial lift ended (in :func:`compare_lifts`).

    Attributes:
        index: the lift's position in ``LiftComparison.lifts``.
        status: ``"finished"`` (reached ``t_final``), ``"singular point"`` (the branch
            reached a singular point of the neuromanifold and ends there) or
            ``"limit"`` (the step or time budget ran out).
        t_end: the time reached (``t_final``, or where the branch ended).
        v_end: ``v`` there (flattened).
        min_singular_value: the smallest ``sigma_dim / sigma_1`` seen (see
            :class:`RiemannianFlowResult`).
        max_lift_residual, max_invariant_drift, max_kernel_mismatch: the flow's checks
            over the computed part.
        message: the error message when the flow did not finish, else ``""``.
    """

    index: int
    status: str
    t_end: float
    v_end: np.ndarray = dataclasses.field(repr=False)
    min_singular_value: float
    max_lift_residual: float
    max_invariant_drift: float = dataclasses.field(repr=False)
    max_kernel_mismatch: float = dataclasses.field(repr=False)
    message: str = dataclasses.field(repr=False)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class LiftComparison(Result):
    """Riemannian flows from one ``(v0, delta)`` started at different lifts.

    Attributes:
        times: the sample times every flow reached, shape ``(T,)``.
        trajectories: ``v(t)`` for each lift at those times, shape
            ``(P, T) + end_to_end_shape``.
        lifts: the initial lifts (P parameter lists, all over the same ``(v0, delta)``).
        initial_ntk_difference: ``max_{i,j} ||K_i - K_j|| / max_i ||K_i||`` at t = 0.
        max_difference: ``max_{i,j,t} ||v_i(t) - v_j(t)|| / max(1, max ||v||)`` over
            ``times``.
        pair: the pair ``(i, j)`` of lifts attaining ``max_difference``.
        flows: the :class:`RiemannianFlowResult` of each lift (up to where it ended).
        outcomes: a :class:`LiftOutcome` per lift: finished, or where its branch ended.
        all_finished: every flow reached ``t_final``.
    """

    times: np.ndarray
    trajectories: np.ndarray
    lifts: list[list[np.ndarray]]
    initial_ntk_difference: float
    max_difference: float
    pair: tuple
    flows: list
    outcomes: list
    all_finished: bool


@renamed_keywords(method="solver")
@quiet_overflow
def compare_lifts(
    net: Any,
    v0: Any,
    invariants: Any,
    loss: QuadraticLoss,
    t_final: float,
    *,
    lifts: Any = None,
    num_times: int = 21,
    solver: str = "DOP853",
    rtol: float = SOLVER_RTOL,
    atol: float = SOLVER_ATOL,
    singular_tol: float = DEFAULT_TOL,
    max_steps: int = DEFAULT_MAX_STEPS,
    time_limit: float | None = None,
    **fiber_options: Any,
) -> LiftComparison:
    """Integrate the Riemannian flow from every lift of ``(v0, delta)`` and compare.

    A flow that reaches a singular point, or its step or time budget, does not abort the
    comparison: its outcome says where it ended, and the trajectories are compared over
    the sample times every flow reached.

    Args:
        net, v0, invariants, loss, t_final: as in :func:`riemannian_flow`.
        lifts: the initial lifts to compare (at least one); default every point of
            ``net.fiber(v0, invariants, **fiber_options)``.
        num_times, solver, rtol, atol, singular_tol, max_steps, time_limit: as in
            :func:`riemannian_flow` (the budgets apply to each flow).

    Returns:
        A :class:`LiftComparison`. Where the NTK depends on the lift, ``max_difference``
        is far above the solver tolerance (two different flows from the same data).

    >>> from neuromanifold import LinearConvNet, QuadraticLoss
    >>> cmp = compare_lifts(LinearConvNet([2, 2]), [1.0, -3.0, 2.0], [1.0],
    ...                     QuadraticLoss(np.eye(3), [1.0, -2.5, 1.0]), 1.0, num_times=5)
    >>> [o.status for o in cmp.outcomes], cmp.max_difference > 1e-3
    (['finished', 'finished'], True)
    """
    # Whole: run the flow from each lift, then compare them pairwise: two loops over one list
    if lifts is not None and fiber_options:
        raise InputError(
            f"fiber options are used only to compute the lifts when lifts=None; "
            f"got lifts=... and {sorted(fiber_options)} (drop one of them)"
        )
    if lifts is None:
        if not hasattr(net, "fiber") or not hasattr(net, "end_to_end_shape"):
            raise InputError(
                f"{short_repr(net)} has no fiber(); pass the lifts to compare with lifts=..."
            )
        check_options(net.fiber, fiber_options, "compare_lifts (fiber options)")
        v = as_finite_array(v0, "v0", error=InputError)
        if v.size != math.prod(net.end_to_end_shape):
            raise InputError(
                f"v0 must have {math.prod(net.end_to_end_shape)} entries (shape "
                f"{net.end_to_end_shape}); got {short_repr(v0)}"
            )
        lifts = list(net.fiber(v.reshape(net.end_to_end_shape), invariants, **fiber_options).points)
    if (
        isinstance(lifts, (str, bytes, np.ndarray))
        or not hasattr(lifts, "__len__")
        or len(lifts) == 0
    ):
        raise InputError(
            f"lifts must be a non-empty list of parameter lists; got {short_repr(lifts)}"
        )
    flows, outcomes = [], []
    for index, p in enumerate(lifts):
        status, message = "finished", ""
        try:
            flow = riemannian_flow(
                net,
                v0,
                invariants,
                loss,
                t_final,
                lift=p,
                num_times=num_times,
                solver=solver,
                rtol=rtol,
                atol=atol,
                singular_tol=singular_tol,
                max_steps=max_steps,
                time_limit=time_limit,
            )
            t_end, v_end = float(flow.times[-1]), flow.end_to_end[-1].ravel()
        except SingularPointError as err:
            status, message, flow = "singular point", str(err), err.partial
            t_end, v_end = err.t, np.ravel(err.v)
        except ComputationLimitError as err:
            status, message, flow = "limit", str(err), err.partial
            t_end, v_end = err.t, flow.end_to_end[-1].ravel()
        flows.append(flow)
        outcomes.append(
            LiftOutcome(
                index=index,
                status=status,
                t_end=float(t_end),
                v_end=np.array(v_end),
                min_singular_value=flow.min_singular_value,
                max_lift_residual=flow.max_lift_residual,
                max_invariant_drift=flow.max_invariant_drift,
                max_kernel_mismatch=flow.max_kernel_mismatch,
                message=message,
            )
        )
    n = min(len(f.times) for f in flows)
    traj = np.array([f.end_to_end[:n] for f in flows])
    scale = max(1.0, float(np.abs(traj).max(initial=0.0)))
    best, pair = 0.0, (0, 0)
    kernels = [net.ntk(f.initial_lift) for f in flows]
    kscale = max(float(np.linalg.norm(K)) for K in kernels) or 1.0
    kdiff = 0.0
    for i in range(len(flows)):
        for j in range(i + 1, len(flows)):
            d = float(np.linalg.norm((traj[i] - traj[j]).reshape(n, -1), axis=1).max()) / scale
            if d > best:
                best, pair = d, (i, j)
            kdiff = max(kdiff, float(np.linalg.norm(kernels[i] - kernels[j])) / kscale)
    return LiftComparison(
        times=flows[0].times[:n],
        trajectories=traj,
        lifts=[f.initial_lift for f in flows],
        initial_ntk_difference=kdiff,
        max_difference=best,
        pair=pair,
        flows=flows,
        outcomes=outcomes,
        all_finished=all(o.status == "finished" for o in outcomes),
    )
