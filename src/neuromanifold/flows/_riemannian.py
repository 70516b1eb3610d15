"""Riemannian gradient flow in function space, ``v' = -K(v, delta) grad l(v)`` (docs/concepts_linear.md §5).

The parameter flow ``theta' = -grad_theta l(mu(theta))`` moves ``v = mu(theta)`` by
``v' = -K_theta grad l(v)`` (docs/concepts_linear.md §2). The Riemannian flow integrates that equation in
function space alone: at every evaluation the kernel is recomputed from ``(v, delta)`` by
*lifting* ``v`` to the fiber ``{theta : mu(theta) = v, delta(theta) = delta}`` and taking
``K_theta`` there. The lift is continued along the trajectory: a Gauss-Newton iteration on
``mu(theta) = v, delta(theta) = delta`` started from the lift at the previous accepted
solver step (minimal-norm steps), so one branch of the fiber is followed continuously.

Where the NTK is parameter-independent (docs/concepts_linear.md §3) the result is the parameter flow's
``v(t)`` whatever lift is chosen; where it is not, different initial lifts of the same
``(v0, delta)`` give different trajectories (:func:`compare_lifts`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy import integrate

from .._errors import InputError, NotInNeuromanifoldError
from .._results import Result
from .._validation import (as_finite_array, check_bool, check_positive_float,
                           check_positive_int)
from ..fibers import invariant_scale, invariant_vector
from ._gradient_flow import SOLVERS, GradientFlowResult, check_flow_args, gradient_flow
from ._losses import QuadraticLoss

__all__ = ["riemannian_flow", "RiemannianFlowResult", "lift_to_fiber", "FiberLift",
           "compare_lifts", "LiftComparison", "compare_with_parameter_flow", "FlowComparison"]

_SOLVERS = {name: getattr(integrate, name) for name in SOLVERS}


# --------------------------------------------------------------------------- lifting
@dataclasses.dataclass(frozen=True, repr=False)
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

    params: list
    residual: float
    iterations: int
    converged: bool
    tol: float


def _fiber_residual(net: Any, theta: np.ndarray, v: np.ndarray, delta: np.ndarray):
    params = net.unflatten(theta)
    rv = net.end_to_end(params).ravel() - v
    rd = invariant_vector(net, params) - delta
    vscale = max(float(np.linalg.norm(v)), 1e-300)
    rel = max(float(np.linalg.norm(rv)) / vscale,
              float(np.abs(rd).max(initial=0.0)) / invariant_scale(delta, params))
    return params, np.concatenate([rv, rd]), rel


def lift_to_fiber(net: Any, v: Any, invariants: Any, start: Any, *, tol: float = 1e-13,
                  max_iter: int = 50) -> FiberLift:
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
    theta = net.flatten(net.check_params(start))
    params, r, rel = _fiber_residual(net, theta, v, delta)
    if r.size - v.size != delta.size:
        raise InputError(f"invariants must have {r.size - v.size} entries for {net!r}; "
                         f"got {delta.size}")
    best = (rel, theta)
    steps, stationary = 0, False
    while rel > tol and steps < max_iter:
        F = np.vstack([net.jacobian(params), net.invariant_jacobian(params)])
        step, *_ = np.linalg.lstsq(F, -r, rcond=None)
        theta = theta + step
        steps += 1
        prev = rel
        params, r, rel = _fiber_residual(net, theta, v, delta)
        if rel < best[0]:
            best = (rel, theta)
        # a vanishing step means a least-squares lift: v is off the neuromanifold by the
        # residual (solver stages are, by O(h^p)); K is then taken at the nearest lift.
        # A residual that stops decreasing at a tiny level is the rounding floor.
        if np.linalg.norm(step) <= 1e-13 * max(1.0, float(np.linalg.norm(theta))) or (
                rel < 1e-10 and rel > 0.5 * prev):
            stationary = True
            break
    rel, theta = best
    return FiberLift(net.unflatten(theta), float(rel), steps, bool(rel <= tol or stationary), tol)


def _as_end_to_end_vector(net: Any, v: Any, name: str) -> np.ndarray:
    """An end-to-end map of ``net`` (any shape with the right number of entries), flat."""
    v = as_finite_array(v, name, error=InputError)
    if v.size != net.end_to_end_size:
        raise InputError(f"{name} must have {net.end_to_end_size} entries for {net!r}; "
                         f"got shape {v.shape}")
    return v.ravel()


def _as_invariant_vector(invariants: Any) -> np.ndarray:
    """Invariants as one flat vector (a list of matrices, as for fully connected nets, is
    flattened and concatenated like :func:`invariant_vector`)."""
    if isinstance(invariants, (list, tuple)) and any(np.ndim(d) >= 1 for d in invariants):
        return np.concatenate([as_finite_array(d, "invariants", error=InputError).ravel()
                               for d in invariants])
    return as_finite_array(invariants, "invariants", error=InputError).ravel()


# --------------------------------------------------------------------------- the flow
@dataclasses.dataclass(frozen=True, repr=False)
class RiemannianFlowResult(Result):
    """A Riemannian gradient flow in function space, sampled at ``times`` (docs/concepts_linear.md §5).

    Attributes:
        times: sample times, shape ``(T,)``.
        end_to_end: ``v(t)``, shape ``(T,) + end_to_end_shape``.
        loss: ``l(v(t))``, shape ``(T,)``.
        lifts: the lift of ``v(t)`` to the fiber at each sample time (list of T parameter
            lists), continued from the initial lift.
        invariants: the fixed invariants ``delta`` (flattened).
        initial_lift: the lift of ``v0`` the flow started from.
        max_lift_residual: the largest relative lift residual over the computed trajectory
            (sample times and accepted steps; see :class:`FiberLift`): how far ``v(t)``
            drifted off the neuromanifold, of the order of the solver tolerance.
        max_lift_iterations: the most Gauss-Newton iterations any lift needed.
        riemannian_gradient_norm: ``||K(v, delta) grad l(v)||`` at the final time.
        loss_monotone: whether the sampled loss never increases (up to 1e-12 relative).
        method, rtol, atol: solver settings; success, message, nfev: solver report
            (``nfev`` = kernel evaluations, each with one lift).
    """

    times: np.ndarray
    end_to_end: np.ndarray
    loss: np.ndarray
    lifts: list
    invariants: np.ndarray
    initial_lift: list
    max_lift_residual: float
    max_lift_iterations: int
    riemannian_gradient_norm: float
    loss_monotone: bool
    method: str
    rtol: float
    atol: float
    success: bool
    message: str
    nfev: int


def _initial_lift(net: Any, v0: np.ndarray, delta: Any, lift: Any, lift_index: int,
                  fiber_options: dict) -> list:
    if lift is not None:
        if fiber_options:
            raise InputError(
                f"fiber options are used only to compute the initial lift when lift=None; "
                f"got lift=... and {sorted(fiber_options)} (drop one of them)")
        return net.check_params(lift)
    if not hasattr(net, "fiber"):
        raise InputError(f"{net!r} has no fiber(); pass an initial lift with lift=...")
    fib = net.fiber(v0.reshape(net.end_to_end_shape), delta, **fiber_options)
    points = list(fib.points)
    if not points:
        raise NotInNeuromanifoldError(
            f"the fiber over v0={v0!r} with invariants {delta!r} is empty")
    if not isinstance(lift_index, (int, np.integer)) \
            or not -len(points) <= lift_index < len(points):
        raise InputError(f"lift_index must be an int in [0, {len(points)}) (the fiber has "
                         f"{len(points)} points); got {lift_index!r}")
    return net.check_params(points[lift_index])


def riemannian_flow(net: Any, v0: Any, invariants: Any, loss: QuadraticLoss, t_final: float, *,
                    lift: Any = None, lift_index: int = 0, num_times: int = 101,
                    method: str = "DOP853", rtol: float = 1e-10, atol: float = 1e-12,
                    lift_tol: float = 1e-13, max_lift_residual: float = 1e-4,
                    progress: bool = False, **fiber_options: Any) -> RiemannianFlowResult:
    """Integrate ``v' = -K(v, delta) grad l(v)`` with K recomputed from ``(v, delta)`` alone.

    ``K(v, delta)`` is the NTK at a lift of ``v`` to the fiber over ``(v, delta)``: the lift
    is continued from the lift at the previous accepted solver step by :func:`lift_to_fiber`
    (for the stages inside one step the same anchor is used, so the branch is chosen
    continuously). The initial lift is ``lift`` if given, else point ``lift_index`` of
    ``net.fiber(v0, invariants)``.

    Args:
        net: a network with ``end_to_end``, ``jacobian``, ``ntk``, ``invariants``,
            ``flatten``/``unflatten`` (and ``fiber`` when ``lift`` is not given).
        v0: the initial end-to-end map (in the neuromanifold).
        invariants: the invariants ``delta`` (fixed along the flow).
        loss: a :class:`QuadraticLoss` on ``v``.
        t_final: final time, > 0.
        lift: an initial lift of ``(v0, delta)`` (refined by Gauss-Newton); default from
            the fiber.
        lift_index: which fiber point to start from when ``lift`` is None.
        num_times: number of sample times in ``[0, t_final]``.
        method: an explicit (``"DOP853"``, ``"RK45"``, ``"RK23"``) or stiff (``"Radau"``,
            ``"BDF"``, ``"LSODA"``) scipy solver.
        rtol, atol: solver tolerances.
        lift_tol: relative residual each lift is solved to.
        max_lift_residual: a lift (at any solver stage) farther than this from the fiber
            stops the integration with an error (the branch ended, or the trajectory
            left the neuromanifold).
        progress: show a progress bar (in flow time) on stderr.
        **fiber_options: passed to ``net.fiber`` for the initial lift.

    Returns:
        A :class:`RiemannianFlowResult`.

    >>> from neuromanifold import LinearConvNet, QuadraticLoss
    >>> net = LinearConvNet([2, 2], strides=[2])
    >>> theta = net.random_params(0)
    >>> loss = QuadraticLoss(np.eye(4), [1.0, 0.5, -0.3, 0.2])
    >>> flow = riemannian_flow(net, net.end_to_end(theta), net.invariants(theta), loss, 1.0,
    ...                        lift=theta, num_times=3)
    >>> bool(flow.loss[-1] < flow.loss[0]), flow.max_lift_residual < 1e-10
    (True, True)
    """
    check_flow_args(net, loss, t_final, num_times, method, rtol, atol)
    lift_tol = check_positive_float(lift_tol, "lift_tol")
    max_lift_residual = check_positive_float(max_lift_residual, "max_lift_residual")
    progress = check_bool(progress, "progress")
    v0 = _as_end_to_end_vector(net, v0, "v0")
    delta = _as_invariant_vector(invariants)
    start = _initial_lift(net, v0, invariants, lift, lift_index, fiber_options)
    first = lift_to_fiber(net, v0, delta, start, tol=lift_tol)
    if first.residual > max_lift_residual:
        raise NotInNeuromanifoldError(
            f"the initial lift does not reach the fiber over (v0, delta): relative residual "
            f"{first.residual:.3g} > {max_lift_residual:.1g}; v0={v0!r}, delta={delta!r}")

    state = {"anchor": first.params, "max_res": first.residual, "max_it": first.iterations,
             "nfev": 0}

    def lift_at(v: np.ndarray, anchor: list, record: bool = False) -> list:
        res = lift_to_fiber(net, v, delta, anchor, tol=lift_tol)
        state["max_it"] = max(state["max_it"], res.iterations)
        if record:  # points of the computed trajectory (not trial stages)
            state["max_res"] = max(state["max_res"], res.residual)
        if not res.converged or res.residual > max_lift_residual:
            raise NotInNeuromanifoldError(
                f"lost the fiber while integrating: lift residual {res.residual:.3g} "
                f"(converged: {res.converged}, limit {max_lift_residual:.1g}) at v={v!r}: "
                f"the chosen branch of the fiber ends here, or the trajectory left the "
                f"neuromanifold")
        return res.params

    def rhs(t: float, v: np.ndarray) -> np.ndarray:
        state["nfev"] += 1
        params = lift_at(v, state["anchor"])
        return -net.ntk(params) @ loss.gradient(v)

    times = np.linspace(0.0, float(t_final), int(num_times))
    solver = _SOLVERS[method](rhs, 0.0, v0, float(t_final), rtol=rtol, atol=atol)
    out_v, out_lifts = [v0.copy()], [first.params]
    next_i = 1
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=float(t_final), desc="Riemannian flow", unit="t",
                   bar_format="{l_bar}{bar}| t={n:.3g}/{total:.3g}")
    try:
        message = "reached t_final"
        while solver.status == "running":
            anchor = state["anchor"]
            msg = solver.step()
            if solver.status == "failed":
                message = str(msg)
                break
            dense = solver.dense_output()
            sample_anchor = anchor
            while next_i < len(times) and times[next_i] <= solver.t:
                vt = dense(times[next_i]) if times[next_i] < solver.t else solver.y.copy()
                sample_anchor = lift_at(vt, sample_anchor, record=True)
                out_v.append(np.array(vt))
                out_lifts.append(sample_anchor)
                next_i += 1
            state["anchor"] = lift_at(solver.y, anchor, record=True)
            if bar is not None:
                bar.update(solver.t - bar.n)
    finally:
        if bar is not None:
            bar.close()

    vs = np.array(out_v)
    losses = np.array([loss.value(v) for v in vs])
    final_params = out_lifts[-1]
    rgrad = float(np.linalg.norm(net.ntk(final_params) @ loss.gradient(vs[-1])))
    tol = 1e-12 * max(1.0, abs(losses[0]))
    return RiemannianFlowResult(
        times=times[:len(vs)], end_to_end=vs.reshape((len(vs),) + tuple(net.end_to_end_shape)),
        loss=losses, lifts=out_lifts, invariants=delta, initial_lift=first.params,
        max_lift_residual=float(state["max_res"]), max_lift_iterations=int(state["max_it"]),
        riemannian_gradient_norm=rgrad, loss_monotone=bool(np.all(np.diff(losses) <= tol)),
        method=method, rtol=rtol, atol=atol, success=solver.status == "finished",
        message=message, nfev=int(state["nfev"]))


# --------------------------------------------------------------------------- comparisons
@dataclasses.dataclass(frozen=True, repr=False)
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


def compare_with_parameter_flow(net: Any, params0: Any, loss: QuadraticLoss, t_final: float, *,
                                lift: Any = None, num_times: int = 21, method: str = "DOP853",
                                rtol: float = 1e-10, atol: float = 1e-12,
                                **fiber_options: Any) -> FlowComparison:
    """Run the Riemannian flow from ``(mu(theta0), delta(theta0))`` and the parameter flow
    from ``theta0``, and measure how far their ``v(t)`` are apart.

    The Riemannian flow's initial lift is ``lift`` if given, else the first point of
    ``net.fiber`` (not ``theta0``): where the NTK is parameter-independent the two flows
    agree to solver tolerance anyway.

    Args:
        net, loss, t_final: as in :func:`gradient_flow`.
        params0: the initial parameters ``theta0``.
        lift: the Riemannian flow's initial lift (default: from ``net.fiber``).
        num_times, method, rtol, atol: as in :func:`riemannian_flow`.
        **fiber_options: passed to ``net.fiber`` (only when ``lift`` is None).

    Returns:
        A :class:`FlowComparison`: ``max_difference`` of the two ``v(t)`` (relative to
        ``max(1, max |v|)``) and both flows.

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
    riem = riemannian_flow(net, v0, delta, loss, t_final, lift=lift, num_times=num_times,
                           method=method, rtol=rtol, atol=atol, **fiber_options)
    par = gradient_flow(net, params0, loss, t_final, num_times=num_times, method=method,
                        rtol=rtol, atol=atol)
    a, b = riem.end_to_end, par.end_to_end
    n = min(len(a), len(b))
    scale = max(1.0, float(np.abs(b).max(initial=0.0)))
    diff = float(max(np.linalg.norm((a[i] - b[i]).ravel()) for i in range(n)) / scale)
    return FlowComparison(times=riem.times[:n], max_difference=diff, riemannian=riem,
                          parameter=par)


@dataclasses.dataclass(frozen=True, repr=False)
class LiftComparison(Result):
    """Riemannian flows from one ``(v0, delta)`` started at different lifts.

    Attributes:
        times: sample times, shape ``(T,)``.
        trajectories: ``v(t)`` for each lift, shape ``(P, T) + end_to_end_shape``.
        lifts: the initial lifts (P parameter lists, all over the same ``(v0, delta)``).
        initial_ntk_difference: ``max_{i,j} ||K_i - K_j|| / max_i ||K_i||`` at t = 0.
        max_difference: ``max_{i,j,t} ||v_i(t) - v_j(t)|| / max(1, max ||v||)``.
        pair: the pair ``(i, j)`` of lifts attaining ``max_difference``.
        flows: the :class:`RiemannianFlowResult` of each lift.
    """

    times: np.ndarray
    trajectories: np.ndarray
    lifts: list
    initial_ntk_difference: float
    max_difference: float
    pair: tuple
    flows: list


def compare_lifts(net: Any, v0: Any, invariants: Any, loss: QuadraticLoss, t_final: float, *,
                  lifts: Any = None, num_times: int = 21, method: str = "DOP853",
                  rtol: float = 1e-10, atol: float = 1e-12,
                  **fiber_options: Any) -> LiftComparison:
    """Integrate the Riemannian flow from every lift of ``(v0, delta)`` and compare.

    Args:
        net, v0, invariants, loss, t_final: as in :func:`riemannian_flow`.
        lifts: the initial lifts to compare (at least one); default every point of
            ``net.fiber(v0, invariants, **fiber_options)``.
        num_times, method, rtol, atol: as in :func:`riemannian_flow`.

    Returns:
        A :class:`LiftComparison`. Where the NTK depends on the lift, ``max_difference``
        is far above the solver tolerance (two different flows from the same data).
    """
    if lifts is not None and fiber_options:
        raise InputError(f"fiber options are used only to compute the lifts when lifts=None; "
                         f"got lifts=... and {sorted(fiber_options)} (drop one of them)")
    if lifts is None:
        if not hasattr(net, "fiber"):
            raise InputError(f"{net!r} has no fiber(); pass the lifts to compare with lifts=...")
        lifts = list(net.fiber(np.reshape(as_finite_array(v0, "v0", error=InputError),
                                          net.end_to_end_shape),
                               invariants, **fiber_options).points)
    if isinstance(lifts, (str, bytes)) or not hasattr(lifts, "__len__") or len(lifts) == 0:
        raise InputError(f"lifts must be a non-empty list of parameter lists; got {lifts!r}")
    flows = [riemannian_flow(net, v0, invariants, loss, t_final, lift=p, num_times=num_times,
                             method=method, rtol=rtol, atol=atol) for p in lifts]
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
    return LiftComparison(times=flows[0].times[:n], trajectories=traj,
                          lifts=[f.initial_lift for f in flows], initial_ntk_difference=kdiff,
                          max_difference=best, pair=pair, flows=flows)
