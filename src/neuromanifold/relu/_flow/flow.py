"""Gradient flow of a ReLU network on the square loss, and the laws it conserves
(docs/conservation.md).

Along ``theta' = -grad L(theta)`` with ``L = 1/2 sum_k ||f_theta(x_k) - y_k||^2``:

* every hidden neuron conserves ``||incoming weights and bias||^2 - ||outgoing
  weights||^2`` (the rescaling law; ReLU is positively homogeneous, so this holds across
  activation changes, with ``relu'(0) = 0`` or any other value);
* a block ``A`` of neurons of one hidden layer that are active at every data point acts
  linearly on the data, so the loss depends on their weights only through the product
  ``W_{l+1}[:, A] R_A`` (``R_A`` = the rows of ``[W_l | b_l]`` in ``A``), which is
  invariant under ``R_A -> G R_A``, ``W_{l+1}[:, A] -> W_{l+1}[:, A] G^{-1}``; the
  symmetric generators of this action give the matrix law
  ``R_A R_A^T - W_{l+1}[:, A]^T W_{l+1}[:, A]``, conserved *while* the block stays active
  on the data, and drifting once a neuron of the block switches off at a data point.

:func:`gradient_flow` integrates the flow with ``scipy.integrate`` (the stepping of
:mod:`neuromanifold.flows`), and records the loss, the drift of every law and the
changes of the activation patterns on the data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._errors import ComputationLimitError, InputError, ParameterError, short_repr
from ..._results import Result
from ..._validation import (
    as_finite_array,
    check_bool,
    check_choice,
    check_finite_result,
    check_positive_float,
    renamed_keywords,
)
from ...flows._library import (
    SOLVER_ATOL,
    SOLVER_RTOL,
    SOLVERS,
    Stepper,
    check_finite,
    check_num_times,
    quiet_overflow,
)
from .._core.live import refuse_conv
from .._core.net import ReLUNet, check_params, forward_unchecked

__all__ = [
    "gradient_flow",
    "ReLUFlowResult",
    "block_law",
    "active_blocks",
    "rescaling_law_terms",
    "block_law_terms",
]

#: a law as ``(name, terms)``; ``terms`` are ``(i, j, c)``: the law is
#: ``sum c * theta[i] * theta[j]`` over the flattened parameters (``ReLUNet.flatten`` order)
Law = tuple[str, tuple[tuple[int, int, int], ...]]


def _offsets(widths: Sequence[int]) -> list[tuple[int, int]]:
    """Flat offsets of ``W_l`` and ``b_l`` (``ReLUNet.flatten`` order), per layer."""
    out, pos = [], 0
    for n, m in zip(widths[:-1], widths[1:]):
        out.append((pos, pos + m * n))
        pos += m * n + m
    return out


def rescaling_law_terms(widths: Sequence[int]) -> list[Law]:
    """The rescaling law of every hidden neuron, as quadratic forms in the flattened
    parameters (see :data:`Law`).

    Args:
        widths: ``(n_0, ..., n_L)``.

    Returns:
        One law per hidden neuron, named ``"rescaling[l, j]"`` (layer ``l >= 1``, neuron
        ``j``, both counted as in ``params``: layer 1 is the first hidden layer).

    >>> [name for name, _ in rescaling_law_terms([1, 2, 1])]
    ['rescaling[1, 0]', 'rescaling[1, 1]']
    >>> rescaling_law_terms([1, 1, 1])[0][1]   # w1^2 + b1^2 - w2^2
    ((0, 0, 1), (1, 1, 1), (2, 2, -1))
    """
    off = _offsets(widths)
    laws = []
    for l in range(1, len(widths) - 1):
        n_in, n, n_out = widths[l - 1], widths[l], widths[l + 1]
        (w_in, b_in), (w_out, _) = off[l - 1], off[l]
        for j in range(n):
            terms = [(w_in + j * n_in + c, w_in + j * n_in + c, 1) for c in range(n_in)]
            terms.append((b_in + j, b_in + j, 1))
            terms += [(w_out + o * n + j, w_out + o * n + j, -1) for o in range(n_out)]
            laws.append((f"rescaling[{l}, {j}]", tuple(terms)))
    return laws


def block_law_terms(widths: Sequence[int], layer: int, block: Sequence[int]) -> list[Law]:
    """The off-diagonal entries ``(a, b)``, ``a < b`` in ``block``, of the block law
    ``R_A R_A^T - W_{l+1}[:, A]^T W_{l+1}[:, A]`` of hidden layer ``layer`` (the diagonal
    entries are the rescaling laws of the block's neurons).

    >>> [name for name, _ in block_law_terms([1, 3, 1], 1, [0, 2])]
    ['block[1; 0, 2]']
    """
    off = _offsets(widths)
    n_in, n = widths[layer - 1], widths[layer]
    (w_in, b_in), (w_out, _) = off[layer - 1], off[layer]
    laws = []
    for i, a in enumerate(block):
        for b in block[i + 1 :]:
            terms = [(w_in + a * n_in + c, w_in + b * n_in + c, 1) for c in range(n_in)]
            terms.append((b_in + a, b_in + b, 1))
            terms += [(w_out + o * n + a, w_out + o * n + b, -1) for o in range(widths[layer + 1])]
            laws.append((f"block[{layer}; {a}, {b}]", tuple(terms)))
    return laws


def _law_values(laws: list[Law], theta: np.ndarray) -> np.ndarray:
    return np.array([sum(c * theta[i] * theta[j] for i, j, c in terms) for _, terms in laws])


def _law_scales(laws: list[Law], theta: np.ndarray) -> np.ndarray:
    """``sum |c| |theta_i theta_j|`` per law: the size its drift is measured against."""
    return np.array([sum(abs(c * theta[i] * theta[j]) for i, j, c in terms) for _, terms in laws])


def _check_layer_block(widths: tuple[int, ...], block: Any, layer: Any) -> tuple[int, list[int]]:
    L = len(widths) - 1
    if L < 2:
        raise InputError(f"block laws need a hidden layer; the network has widths {widths}")
    if layer is None:
        layer = L - 1
    if (
        isinstance(layer, (bool, np.bool_))
        or not isinstance(layer, (int, np.integer))
        or not 1 <= layer <= L - 1
    ):
        raise InputError(
            f"layer must be a hidden layer, an int in [1, {L - 1}]; got {short_repr(layer)}"
        )
    layer = int(layer)
    try:
        ndim = np.ndim(block)
    except (ValueError, TypeError, RuntimeError):  # a ragged nest, a tensor
        ndim = -1
    if (
        isinstance(block, (str, bytes))
        or not isinstance(block, (Sequence, np.ndarray))
        or ndim != 1
        or len(block) == 0
    ):
        raise InputError(
            f"block must be a non-empty list of neuron indices; got {short_repr(block)}"
        )
    out = []
    for a in block:
        if (
            isinstance(a, (bool, np.bool_))
            or not isinstance(a, (int, np.integer))
            or not 0 <= a < widths[layer]
        ):
            raise InputError(
                f"block entries must be neuron indices of layer {layer}, ints in "
                f"[0, {widths[layer] - 1}]; got {short_repr(block)}"
            )
        out.append(int(a))
    if len(set(out)) != len(out):
        raise InputError(f"block must not repeat a neuron; got {short_repr(block)}")
    return layer, sorted(out)


def block_law(params: Any, block: Sequence[int], *, layer: int | None = None) -> np.ndarray:
    """The local block law ``R_A R_A^T - W_{l+1}[:, A]^T W_{l+1}[:, A]`` of a block ``A``
    of neurons of hidden layer ``l``.

    ``R_A`` holds the rows of ``[W_l | b_l]`` in ``A``. The matrix is conserved by the
    gradient flow of any loss on data at which every neuron of ``A`` is active (the
    block is then linear on the data), and only while it stays so (docs/conservation.md).
    Its diagonal holds the rescaling laws of the block's neurons.

    Args:
        params: a ReLU network, list of ``(W, b)``.
        block: neuron indices of layer ``layer`` (0-based).
        layer: the hidden layer (1 = first hidden layer); default the last hidden layer
            (the second-layer neurons of a three-layer network).

    Returns:
        The symmetric ``|A| x |A|`` matrix (float64), rows in the sorted order of ``block``.

    >>> W1, b1 = np.eye(2), np.zeros(2)
    >>> W2, b2 = np.array([[1.0, 2.0], [3.0, 0.0]]), np.array([1.0, 1.0])
    >>> W3, b3 = np.array([[1.0, 1.0]]), np.zeros(1)
    >>> block_law([(W1, b1), (W2, b2), (W3, b3)], [0, 1])
    array([[5., 3.],
           [3., 9.]])
    """
    params = check_params(params)
    widths = ReLUNet.from_params(params).widths
    layer, A = _check_layer_block(widths, block, layer)
    W, b = params[layer - 1]
    R = np.concatenate([W[A], b[A, None]], axis=1)
    V = params[layer][0][:, A]
    return check_finite_result(R @ R.T - V.T @ V, "the block law")


def _preactivations(params: list, X: np.ndarray) -> list[np.ndarray]:
    """Pre-activations of every hidden layer at the inputs ``X`` (float64)."""
    out, H = [], X
    for W, b in params[:-1]:
        Z = H @ W.T + b
        out.append(Z)
        H = np.maximum(Z, 0.0)
    return out


def active_blocks(params: Any, X: Any) -> list[list[int]]:
    """Per hidden layer, the neurons active (pre-activation > 0) at every input of ``X``.

    Args:
        params: a ReLU network, list of ``(W, b)``.
        X: inputs, shape ``(N, d)``, ``N >= 1``.

    Returns:
        One sorted list of neuron indices per hidden layer (layer 1 first).

    >>> p = [(np.array([[1.0], [-1.0]]), np.array([1.0, 0.0])), (np.ones((1, 2)), np.zeros(1))]
    >>> active_blocks(p, [[0.5], [2.0]])
    [[0]]
    """
    params = check_params(params)
    X = _check_inputs(X, params[0][0].shape[1], "X")
    return [np.flatnonzero(np.all(Z > 0, axis=0)).tolist() for Z in _preactivations(params, X)]


def _check_inputs(X: Any, d: int, name: str) -> np.ndarray:
    X = as_finite_array(X, name, error=InputError)
    if X.ndim != 2 or X.shape[1] != d or X.shape[0] == 0:
        raise InputError(f"{name} must have shape (N, {d}) with N >= 1; got shape {X.shape}")
    return X


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class ReLUFlowResult(Result):
    """A gradient flow of a ReLU network on the square loss, sampled at ``times``.

    Attributes:
        times: the sample times, shape ``(T,)``.
        params: the parameters at each sample time (list of ``T`` lists of ``(W, b)``).
        loss: ``1/2 sum_k ||f(x_k) - y_k||^2`` at each time, shape ``(T,)``.
        law_names: the tracked laws (rescaling laws, then block laws).
        law_values: their values at each time, shape ``(T, len(law_names))``.
        law_drift: per law, ``max_t |h(t) - h(0)| / s`` with ``s = max_t sum |c theta_i
            theta_j|`` over the law's terms (its size), shape ``(len(law_names),)``.
        max_law_drift: the largest drift of a rescaling law (0 for an exact flow).
        max_block_drift: the largest drift of a block law (None when none is tracked).
        max_block_drift_while_active: the largest drift of a block law over the sample
            times before ``blocks_leave_time`` (None when no block is tracked).
        blocks_leave_time: the first sample time at which a neuron of a tracked block is
            inactive at a data point (None if never, or no block is tracked).
        pattern_changes: per sample time after the first, the number of (data point,
            neuron) pairs whose activation differs from the previous sample time, shape
            ``(T - 1,)``.
        first_change_time: the first sample time at which the activation pattern on the
            data differs from the one at t=0 (None if it never does).
        blocks: the tracked blocks as ``(layer, neurons)``.
        loss_monotone: whether the sampled loss never increases (up to ``1e-12``
            relative).
        solver, rtol, atol: the solver settings; success, message, nfev: solver report.
        num_steps: accepted solver steps.
    """

    times: np.ndarray
    params: list[list[tuple[np.ndarray, np.ndarray]]] = dataclasses.field(repr=False)
    loss: np.ndarray
    law_names: tuple = dataclasses.field(repr=False)
    law_values: np.ndarray = dataclasses.field(repr=False)
    law_drift: np.ndarray = dataclasses.field(repr=False)
    max_law_drift: float
    max_block_drift: float | None
    max_block_drift_while_active: float | None
    blocks_leave_time: float | None
    pattern_changes: np.ndarray = dataclasses.field(repr=False)
    first_change_time: float | None
    blocks: tuple
    loss_monotone: bool
    solver: str
    rtol: float = dataclasses.field(repr=False)
    atol: float = dataclasses.field(repr=False)
    success: bool
    message: str
    nfev: int = dataclasses.field(repr=False)
    num_steps: int

    @property
    def final_params(self) -> list:
        """The parameters at the last sample time."""
        return self.params[-1]


def _velocity(net: ReLUNet, X: np.ndarray, Y: np.ndarray):
    """``theta -> -grad L(theta)`` with ``relu'(0) = 0`` (as :meth:`ReLUNet.jacobian`)."""

    def velocity(theta: np.ndarray) -> np.ndarray:
        if not np.all(np.isfinite(theta)):
            raise ParameterError(
                f"overflow: the flow left the finite floats "
                f"(theta={short_repr(theta)}); rescale the data or parameters"
            )
        params = net.unflatten(theta)
        acts, masks, H = [X], [], X
        for l, (W, b) in enumerate(params):
            Z = H @ W.T + b
            if l < len(params) - 1:
                masks.append(Z > 0)
                H = np.where(masks[-1], Z, 0.0)
            else:
                H = Z
            acts.append(H)
        G = H - Y  # dL / d output, (N, n_L)
        grads = []
        for l in range(len(params) - 1, -1, -1):
            W, _ = params[l]
            grads.append((G.sum(axis=0), G.T @ acts[l]))
            if l > 0:
                G = (G @ W) * masks[l - 1]
        out = -np.concatenate([np.concatenate([gW.ravel(), gb]) for gb, gW in grads[::-1]])
        check_finite("the velocity -grad L", out, theta)
        return out

    return velocity


@renamed_keywords(t_end="t_final", method="solver")
def gradient_flow(
    params: Any,
    X: Any,
    Y: Any,
    t_final: float,
    *,
    num_times: int = 101,
    laws: Any = "auto",
    solver: str = "DOP853",
    rtol: float = SOLVER_RTOL,
    atol: float = SOLVER_ATOL,
    max_steps: int = 10_000,
    time_limit: float | None = None,
    progress: bool = False,
) -> ReLUFlowResult:
    """Integrate the gradient flow of ``L = 1/2 sum_k ||f_theta(x_k) - y_k||^2`` and track
    its conservation laws (docs/conservation.md).

    Args:
        params: the initial ReLU network, list of ``(W, b)``.
        X: inputs, shape ``(N, d)``.
        Y: targets, shape ``(N, n_L)`` (or ``(N,)`` for one output).
        t_final: the final time, > 0.
        num_times: number of sample times in ``[0, t_final]`` (>= 2).
        laws: ``"auto"``: the rescaling law of every hidden neuron and the block laws of
            the blocks active at every data point at t=0 (per hidden layer, when at least
            two neurons are); ``"rescaling"``: the rescaling laws only; or a list of
            blocks ``(layer, neurons)`` to track besides the rescaling laws (whether or
            not they are active).
        solver: a ``solve_ivp`` solver (``"DOP853"``, ``"RK45"``, ``"LSODA"``, ...).
        rtol, atol: solver tolerances.
        max_steps, time_limit: the step budget and optional wall-clock limit (seconds);
            reaching either raises :class:`neuromanifold.ComputationLimitError`.
        progress: show a progress bar on stderr.

    Returns:
        A :class:`ReLUFlowResult`. A :class:`neuromanifold.ComputationLimitError` (step
        budget, time limit, or a step size that collapses, as in a sliding mode along a
        kink) carries the result up to there as ``partial``.

    >>> rng = np.random.default_rng(0)
    >>> p = ReLUNet([2, 3, 3, 1]).random_params(seed=0)
    >>> X = rng.standard_normal((8, 2)); Y = rng.standard_normal((8, 1))
    >>> flow = gradient_flow(p, X, Y, 1.0, num_times=5)
    >>> bool(flow.loss[-1] < flow.loss[0]), flow.max_law_drift < 1e-8
    (True, True)
    """
    refuse_conv(params, "gradient_flow")

    params = check_params(params)
    net = ReLUNet.from_params(params)
    X = _check_inputs(X, net.input_dim, "X")
    Y = as_finite_array(Y, "Y", error=InputError)
    if Y.ndim == 1 and net.widths[-1] == 1:
        Y = Y[:, None]
    if Y.shape != (X.shape[0], net.widths[-1]):
        raise InputError(
            f"Y must have shape ({X.shape[0]}, {net.widths[-1]}) (one target per "
            f"input); got shape {Y.shape}"
        )
    check_positive_float(t_final, "t_final")
    check_num_times(num_times)
    check_choice(solver, "solver", SOLVERS)
    check_positive_float(rtol, "rtol")
    check_positive_float(atol, "atol")
    progress = check_bool(progress, "progress")
    blocks = _blocks_to_track(params, X, laws)
    tracked = rescaling_law_terms(net.widths)
    num_rescaling = len(tracked)
    for layer, A in blocks:
        tracked += block_law_terms(net.widths, layer, A)

    theta0 = net.flatten(params)
    velocity = _velocity(net, X, Y)
    times = np.linspace(0.0, float(t_final), int(num_times))

    stepper = Stepper(
        lambda t, th: velocity(th),
        theta0,
        times,
        solver=solver,
        rtol=rtol,
        atol=atol,
        max_steps=max_steps,
        time_limit=time_limit,
        what="ReLU gradient flow",
        progress=progress,
    )

    def result() -> ReLUFlowResult:
        """The result from the samples so far (all of them once the stepper finished)."""
        return _result(
            net,
            X,
            Y,
            times,
            stepper=stepper,
            tracked=tracked,
            num_rescaling=num_rescaling,
            blocks=blocks,
            solver=solver,
            rtol=rtol,
            atol=atol,
        )

    try:
        quiet_overflow(stepper.run)()
    except ComputationLimitError as err:
        # e.g. a sliding mode at a kink (the step size collapses): the samples so far
        err.partial = result()
        raise
    return result()


def _result(
    net: ReLUNet,
    X: np.ndarray,
    Y: np.ndarray,
    times: np.ndarray,
    *,
    stepper: Any,
    tracked: list,
    num_rescaling: int,
    blocks: list,
    solver: str,
    rtol: float,
    atol: float,
) -> ReLUFlowResult:
    thetas = np.array(stepper.samples)
    plist = [net.unflatten(th) for th in thetas]
    losses, patterns, block_active = [], [], []
    for p in plist:
        out = forward_unchecked(p, X)
        losses.append(0.5 * float(np.sum((out - Y) ** 2)))
        pre = _preactivations(p, X)
        patterns.append(
            np.concatenate([Z > 0 for Z in pre], axis=1)
            if pre
            else np.zeros((X.shape[0], 0), dtype=bool)
        )
        block_active.append(all(bool(np.all(pre[layer - 1][:, A] > 0)) for layer, A in blocks))
    values = np.array([_law_values(tracked, th) for th in thetas]).reshape(len(thetas), -1)
    scales = np.array([_law_scales(tracked, th) for th in thetas]).reshape(len(thetas), -1)
    size = np.maximum(scales.max(axis=0, initial=0.0), 1e-300)
    dev = np.abs(values - values[0]) / size
    drift = dev.max(axis=0, initial=0.0)
    changes = np.array([int(np.sum(a != b)) for a, b in zip(patterns[:-1], patterns[1:])])
    first = next((float(t) for t, pat in zip(times, patterns) if np.any(pat != patterns[0])), None)
    exit_index = next((i for i, a in enumerate(block_active) if not a), len(block_active))
    blocks_dev = dev[:exit_index, num_rescaling:]
    losses_arr = check_finite_result(np.array(losses), "the loss along the flow")
    monotone = bool(np.all(np.diff(losses_arr) <= 1e-12 * max(1.0, abs(losses_arr[0]))))
    has_blocks = len(tracked) > num_rescaling
    return ReLUFlowResult(
        times=times[: len(plist)],
        params=plist,
        loss=losses_arr,
        law_names=tuple(name for name, _ in tracked),
        law_values=values,
        law_drift=drift,
        max_law_drift=float(drift[:num_rescaling].max(initial=0.0)),
        max_block_drift=float(drift[num_rescaling:].max()) if has_blocks else None,
        max_block_drift_while_active=(float(blocks_dev.max(initial=0.0)) if has_blocks else None),
        blocks_leave_time=(
            float(times[exit_index]) if has_blocks and exit_index < len(block_active) else None
        ),
        pattern_changes=changes,
        first_change_time=first,
        blocks=tuple((layer, tuple(A)) for layer, A in blocks),
        loss_monotone=monotone,
        solver=solver,
        rtol=float(rtol),
        atol=float(atol),
        success=stepper.finished,
        message=stepper.message,
        nfev=int(stepper.solver.nfev),
        num_steps=stepper.steps,
    )


def _blocks_to_track(params: list, X: np.ndarray, laws: Any) -> list[tuple[int, list[int]]]:
    widths = ReLUNet.from_params(params).widths
    if isinstance(laws, str):
        if laws == "rescaling":
            return []
        if laws == "auto":
            return [(l, A) for l, A in enumerate(active_blocks(params, X), start=1) if len(A) >= 2]
    elif isinstance(laws, (list, tuple)):
        out = []
        for item in laws:
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise InputError(
                    f"laws must be 'auto', 'rescaling' or a list of blocks "
                    f"(layer, neurons); got an entry {short_repr(item)}"
                )
            out.append(_check_layer_block(widths, item[1], item[0]))
        return out
    raise InputError(
        f"laws must be 'auto', 'rescaling' or a list of blocks (layer, neurons); "
        f"got {short_repr(laws)}"
    )
