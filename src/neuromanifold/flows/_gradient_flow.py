"""Gradient flow in parameter space, ``theta' = -grad_theta l(mu(theta))`` (docs/concepts_linear.md §2, 1.5)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy.integrate import solve_ivp

from .._errors import InputError, short_repr
from .._results import Result
from .._validation import check_bool, check_positive_float
from ..fibers import invariant_scale, invariant_vector
from ._losses import QuadraticLoss

__all__ = ["gradient_flow", "GradientFlowResult", "invariant_vector"]

#: the ``solve_ivp`` methods: explicit Runge-Kutta, then stiff
SOLVERS = ("RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA")


def check_flow_args(net: Any, loss: Any, t_final: Any, num_times: Any, method: Any,
                    rtol: Any, atol: Any) -> None:
    """The checks every flow shares: a quadratic loss of the network's size, a positive
    finite time, at least two sample times, a known solver and positive tolerances."""
    if not isinstance(loss, QuadraticLoss):
        raise InputError(f"loss must be a QuadraticLoss or SquareLoss; got {type(loss).__name__}")
    size = getattr(net, "end_to_end_size", None)
    if size is None:
        raise InputError(f"net must be a network with an end-to-end map (LinearConvNet, "
                         f"LinearFCNet, ...); got {short_repr(net)}")
    if loss.size != size:
        raise InputError(f"loss acts on {loss.size} entries but {net!r} has "
                         f"{size} end-to-end entries")
    check_positive_float(t_final, "t_final")
    if isinstance(num_times, (bool, np.bool_)) or not isinstance(num_times, (int, np.integer)) \
            or num_times < 2:
        raise InputError(f"num_times must be an int >= 2; got {num_times!r}")
    if method not in SOLVERS:
        raise InputError(f"method must be one of {list(SOLVERS)}; got {method!r}")
    check_positive_float(rtol, "rtol")
    check_positive_float(atol, "atol")


@dataclasses.dataclass(frozen=True, repr=False)
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
        method, rtol, atol: the solver settings; success, message, nfev: solver report.
    """

    times: np.ndarray
    params: list
    end_to_end: np.ndarray
    loss: np.ndarray
    invariants: np.ndarray
    max_invariant_drift: float
    max_ntk_residual: float
    loss_monotone: bool
    gradient_norm: float
    method: str
    rtol: float
    atol: float
    success: bool
    message: str
    nfev: int

    @property
    def final_params(self) -> list:
        """The parameters at the last time."""
        return self.params[-1]


def gradient_flow(net: Any, params0: Any, loss: QuadraticLoss, t_final: float, *,
                  num_times: int = 101, method: str = "DOP853", rtol: float = 1e-10,
                  atol: float = 1e-12, progress: bool = False) -> GradientFlowResult:
    """Integrate ``theta' = -J^T grad l(mu(theta))`` with scipy's ``solve_ivp``.

    Args:
        net: a network with ``end_to_end``, ``vjp``, ``jacobian``, ``ntk``, ``invariants``,
            ``flatten`` and ``unflatten`` (:class:`LinearConvNet`, :class:`LinearFCNet`).
        params0: the initial parameters.
        loss: a :class:`QuadraticLoss` (or :class:`SquareLoss`) on the end-to-end map.
        t_final: final time, > 0.
        num_times: number of sample times in ``[0, t_final]``.
        method: a ``solve_ivp`` method (:data:`SOLVERS`): ``"DOP853"`` (default, 8th
            order), ``"RK45"``, ``"RK23"`` or a stiff one (``"Radau"``, ``"BDF"``,
            ``"LSODA"``).
        rtol, atol: solver tolerances.
        progress: show a progress bar (in flow time) on stderr.

    Returns:
        A :class:`GradientFlowResult`.

    >>> from neuromanifold import LinearConvNet
    >>> net = LinearConvNet([2, 2], strides=[2])
    >>> loss = QuadraticLoss(np.eye(4), [1.0, 0.5, -0.3, 0.2])
    >>> flow = gradient_flow(net, net.random_params(0), loss, 1.0, num_times=5)
    >>> bool(flow.loss[-1] < flow.loss[0]), flow.max_invariant_drift < 1e-8
    (True, True)
    """
    check_flow_args(net, loss, t_final, num_times, method, rtol, atol)
    progress = check_bool(progress, "progress")
    params0 = net.check_params(params0)
    theta0 = net.flatten(params0)

    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=float(t_final), desc="gradient flow", unit="t", file=None,
                   bar_format="{l_bar}{bar}| t={n:.3g}/{total:.3g}")

    def velocity(theta: np.ndarray) -> np.ndarray:
        params = net.unflatten(theta)
        g = loss.gradient(net.end_to_end(params))
        return -np.concatenate([a.ravel() for a in net.vjp(params, g)])

    def rhs(t: float, theta: np.ndarray) -> np.ndarray:
        if bar is not None and t > bar.n:
            bar.update(t - bar.n)
        return velocity(theta)

    times = np.linspace(0.0, float(t_final), int(num_times))
    try:
        sol = solve_ivp(rhs, (0.0, float(t_final)), theta0, method=method, t_eval=times,
                        rtol=rtol, atol=atol)
    finally:
        if bar is not None:
            bar.close()

    params, vs, losses, invs, residuals = [], [], [], [], []
    for theta in sol.y.T:
        p = net.unflatten(theta)
        v = net.end_to_end(p)
        g = loss.gradient(v)
        # v' from the chain rule (Jacobian times the vjp-based velocity) against -K grad l
        vdot = net.jacobian(p) @ velocity(theta)
        kg = net.ntk(p) @ g.ravel()
        residuals.append(np.linalg.norm(vdot + kg) / max(np.linalg.norm(kg), 1e-300)
                         if np.linalg.norm(kg) > 0 else float(np.linalg.norm(vdot)))
        params.append(p)
        vs.append(v)
        losses.append(loss.value(v))
        invs.append(invariant_vector(net, p))
    invs_arr = np.array(invs)
    drift = float(np.abs(invs_arr - invs_arr[0]).max(initial=0.0)
                  / invariant_scale(invs_arr[0], params0))
    losses_arr = np.array(losses)
    tol = 1e-12 * max(1.0, abs(losses_arr[0]))
    monotone = bool(np.all(np.diff(losses_arr) <= tol))
    return GradientFlowResult(
        times=sol.t, params=params, end_to_end=np.array(vs), loss=losses_arr,
        invariants=invs_arr, max_invariant_drift=drift, max_ntk_residual=float(max(residuals)),
        loss_monotone=monotone, gradient_norm=float(np.linalg.norm(velocity(sol.y[:, -1]))),
        method=method, rtol=rtol, atol=atol, success=bool(sol.success), message=str(sol.message),
        nfev=int(sol.nfev))
