"""Fully connected ReLU networks: architecture, parameters, forward pass, Jacobian.

A network ``d = n0 -> n1 -> ... -> nL`` applies ``x -> relu(W_l x + b_l)`` for every
layer but the last, which is affine (docs/concepts_relu.md §1). Parameters are a list of ``(W, b)``
pairs with ``W`` of shape ``(n_l, n_{l-1})`` and ``b`` of shape ``(n_l,)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import flint
import numpy as np

from ..._errors import InputError, ParameterError, short_repr
from ..._validation import (
    as_finite_array,
    as_real_array,
    as_seed_rng,
    check_finite_result,
    check_widths,
)
from ...exact import to_fmpq
from .clock import check_deadline
from .live import is_live_relu_model, live_relu_params

__all__ = ["ReLUNet", "forward", "check_params", "param_list", "widths_of", "exact_params"]

Params = list[tuple[np.ndarray, np.ndarray]]


def widths_of(params: Any) -> tuple[int, ...]:
    """The widths ``(n0, ..., nL)`` implied by the shapes of ``params``."""
    return ReLUNet.from_params(params).widths


def param_list(params: Any) -> Any:
    """The ``(W, b)`` list of a live model (:func:`neuromanifold.io.load`'s Model, a fitted
    scikit-learn MLP, a torch Sequential), or ``params`` as it is."""
    if is_live_relu_model(params):
        return live_relu_params(params, ParameterError)
    return params


def check_params(params: Any, widths: Sequence[int] | None = None) -> Params:
    """Validate ``params`` (list of ``(W, b)``) and return float64 copies.

    Shapes must chain (``W_l`` has ``n_{l-1}`` columns, ``b_l`` has ``n_l`` entries),
    every entry must be finite, and, when ``widths`` is given, match it.

    Args:
        params: list of ``(W, b)`` pairs, ``W`` of shape ``(n_l, n_{l-1})``; or the
            :class:`~neuromanifold.io.Model` that :func:`neuromanifold.io.load` returns,
            a fitted scikit-learn MLP with ReLU, or a ``torch.nn.Sequential`` of
            ``Linear`` and ``ReLU`` (read as their ``(W, b)`` list).
        widths: optional expected widths ``(n_0, ..., n_L)``.

    Returns:
        The list of ``(W, b)`` as float64 arrays; a :class:`ParameterError` or
        :class:`ArchitectureError` naming the rule otherwise.
    """
    params = param_list(params)
    if isinstance(params, np.ndarray) or not isinstance(params, Sequence) or len(params) == 0:
        raise ParameterError(
            f"ReLU parameters must be a non-empty list of (W, b) pairs; got {short_repr(params)}"
        )
    out: Params = []
    for l, layer in enumerate(params, start=1):
        if not isinstance(layer, Sequence) or len(layer) != 2:
            raise ParameterError(f"layer {l} must be a pair (W, b); got {short_repr(layer)}")
        # the shared input rules first: no complex, boolean, string or other objects
        # (numpy would drop an imaginary part or parse "1.5"); tensors detached
        W = as_finite_array(layer[0], f"W_{l}", ndim=2)
        b = as_finite_array(layer[1], f"b_{l}", ndim=1)
        if W.shape[0] == 0 or W.shape[1] == 0:
            raise ParameterError(
                f"W_{l} must have at least one row and column; got shape {W.shape}"
            )
        if b.shape[0] != W.shape[0]:
            raise ParameterError(
                f"b_{l} must have one entry per row of W_{l} ({W.shape[0]}); got shape {b.shape}"
            )
        if out and W.shape[1] != out[-1][0].shape[0]:
            raise ParameterError(
                f"W_{l} must have {out[-1][0].shape[0]} columns (the width of layer {l - 1}); "
                f"got shape {W.shape}"
            )
        out.append((W, b))
    if widths is not None:
        got = (out[0][0].shape[1],) + tuple(W.shape[0] for W, _ in out)
        if got != tuple(widths):
            raise ParameterError(
                f"parameters have widths {got} but the network has widths {tuple(widths)}"
            )
    return out


def _exact_entry(x: Any) -> flint.fmpq:
    if isinstance(x, (float, np.floating)):  # the common case: to_fmpq's fast path
        return to_fmpq(x)
    if isinstance(x, flint.fmpq):
        return x
    if isinstance(x, (int, np.integer)):
        return flint.fmpq(int(x))
    if isinstance(x, Fraction):
        return flint.fmpq(x.numerator, x.denominator)
    fr = Fraction(float(x))  # a float is an exact binary rational
    return flint.fmpq(fr.numerator, fr.denominator)


def float_params(raw: Any) -> list | None:
    """``raw`` validated as float64 ``(W, b)`` pairs when every entry is a float or an
    integer that float64 holds exactly (so the float network is the network given), else
    ``None`` (``Fraction`` entries, say, whose exact value only the exact routes keep)."""
    try:
        arrays = [np.asarray(x) for layer in param_list(raw) for x in layer]
    except Exception:  # anything numpy cannot read plainly: the caller validates it
        return None
    for x in arrays:
        if x.dtype.kind not in "fiu" or (
            x.dtype.kind in "iu" and x.size and np.abs(x).max() >= 2**53
        ):
            return None
    return check_params(raw)


def float64_mismatch(raw: Any, params: Params) -> str | None:
    """``None`` when every entry of ``raw`` is the float64 number in ``params`` (its
    checked float copy), else the first one that is not (a ``Fraction``, a large integer),
    in words: the analyses that decide on the float64 network would decide on another
    one (two rows parallel in exact arithmetic need not be after rounding, nor the
    reverse)."""
    if float_params(raw) is not None:
        return None
    for l, ((We, be), (W, b)) in enumerate(zip(exact_params(raw), params), start=1):
        for (i, k), v in [
            ((i, k), We[i, k]) for i in range(W.shape[0]) for k in range(W.shape[1])
        ] + [((i, None), be[i]) for i in range(len(b))]:
            f = W[i, k] if k is not None else b[i]
            if to_fmpq(float(f)) != v:
                where = f"W_{l}[{i}, {k}]" if k is not None else f"b_{l}[{i}]"
                return (
                    f"{where} = {v} is not a float64 number (it would be read as "
                    f"{float(f)!r}, another network whose parallel rows and signs can differ)"
                )
    return None


def exact_params(params: Any) -> list[tuple[flint.fmpq_mat, list[flint.fmpq]]]:
    """The exact values of the very entries passed, as ``(W, b)`` with ``W`` an
    ``fmpq_mat`` and ``b`` a list of ``fmpq``.

    Floats are exact binary rationals; entries given as ``int``, ``Fraction`` or ``fmpq``
    keep their exact value (they are not rounded to float64). Validate with
    :func:`check_params` first.

    >>> from fractions import Fraction
    >>> W, b = exact_params([([[Fraction(1, 3)]], [0.5])])[0]
    >>> W[0, 0], b[0]
    (1/3, 1/2)
    """
    out = []
    for l, (W, b) in enumerate(param_list(params), start=1):
        We = np.asarray(as_real_array(W, f"W_{l}", exact=True), dtype=object)
        be = np.asarray(as_real_array(b, f"b_{l}", exact=True), dtype=object).reshape(-1)
        We = We.reshape(be.size, -1)
        m = flint.fmpq_mat(We.shape[0], We.shape[1])
        for i in range(We.shape[0]):
            check_deadline()
            for j in range(We.shape[1]):
                x = We[i, j]
                if x != 0:
                    m[i, j] = _exact_entry(x)
        out.append((m, [_exact_entry(x) for x in be.tolist()]))
    return out


def forward_unchecked(params: list, X: np.ndarray) -> np.ndarray:
    """:func:`forward` without input checks, on a 2D batch (for checked internal callers)."""
    H = X
    for l, (W, b) in enumerate(params):
        H = H @ W.T + b
        if l < len(params) - 1:
            H = np.maximum(H, 0.0)
    return H


def forward(params: Any, X: Any) -> np.ndarray:
    """Evaluate the network on a batch.

    Args:
        params: list of ``(W, b)`` pairs.
        X: inputs of shape ``(N, d)`` (or ``(d,)`` for one input).

    Returns:
        Outputs of shape ``(N, n_L)`` (or ``(n_L,)`` for one input).

    >>> forward([(np.eye(1), np.zeros(1)), (np.eye(1), np.zeros(1))], [[-1.0], [2.0]])
    array([[0.],
           [2.]])
    """
    params = check_params(params)
    d = params[0][0].shape[1]
    X = as_finite_array(X, "X", error=InputError)
    single = X.ndim == 1
    if single:
        X = X[None, :]
    if X.ndim != 2 or X.shape[1] != d:
        raise InputError(f"X must have shape (N, {d}) for input dimension {d}; got shape {X.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        H = check_finite_result(forward_unchecked(params, X), "the network's output")
    return H[0] if single else H


class ReLUNet:
    """A fully connected ReLU network ``n0 -> n1 -> ... -> nL`` (ReLU on hidden layers).

    Args:
        widths: the layer widths ``(n0, ..., nL)``, at least two entries, all >= 1.

    >>> net = ReLUNet([2, 3, 1])
    >>> net.num_params, net.num_hidden
    (13, 3)
    """

    def __init__(self, widths: Sequence[int]):
        self.widths = check_widths(widths, "ReLUNet")

    @classmethod
    def from_params(cls, params: Any) -> "ReLUNet":
        """The architecture implied by the shapes of ``params``."""
        params = check_params(params)
        return cls((params[0][0].shape[1],) + tuple(W.shape[0] for W, _ in params))

    def __repr__(self) -> str:
        return f"ReLUNet(widths={list(self.widths)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReLUNet) and other.widths == self.widths

    def __hash__(self) -> int:
        return hash(("ReLUNet", self.widths))

    @property
    def input_dim(self) -> int:
        """Input dimension ``d = n_0``."""
        return self.widths[0]

    @property
    def num_layers(self) -> int:
        """Number of affine layers L."""
        return len(self.widths) - 1

    @property
    def num_hidden(self) -> int:
        """Number of hidden neurons ``n1 + ... + n_{L-1}``."""
        return int(sum(self.widths[1:-1]))

    @property
    def num_params(self) -> int:
        """Total number of parameters (weights and biases)."""
        return int(sum(a * b + a for b, a in zip(self.widths[:-1], self.widths[1:])))

    def check_params(self, params: Any) -> Params:
        """Validate ``params`` against this architecture (see :func:`check_params`)."""
        return check_params(params, self.widths)

    def random_params(self, seed: Any = 0) -> Params:
        """Gaussian weights and biases (He-style scale ``1/sqrt(fan_in)``); ``seed`` is an
        int, None or a numpy Generator (default 0, reproducible)."""
        rng = as_seed_rng(seed)
        return [
            (rng.standard_normal((m, n)) / np.sqrt(n), rng.standard_normal(m) / np.sqrt(n))
            for n, m in zip(self.widths[:-1], self.widths[1:])
        ]

    def forward(self, params: Any, X: Any) -> np.ndarray:
        """Same as :func:`forward`, with the parameters checked against this architecture."""
        return forward(self.check_params(params), X)

    def flatten(self, params: Any) -> np.ndarray:
        """All parameters as one vector: layer by layer, ``W_l`` (C order) then ``b_l``."""
        params = self.check_params(params)
        return np.concatenate([np.concatenate([W.ravel(), b]) for W, b in params])

    def unflatten(self, theta: Any) -> Params:
        """Inverse of :meth:`flatten`."""
        theta = as_finite_array(theta, "theta", ndim=1)
        if theta.size != self.num_params:
            raise ParameterError(
                f"theta must have {self.num_params} entries for {self!r}; got {theta.size}"
            )
        out, pos = [], 0
        for n, m in zip(self.widths[:-1], self.widths[1:]):
            W = theta[pos : pos + m * n].reshape(m, n)
            pos += m * n
            out.append((W.copy(), theta[pos : pos + m].copy()))
            pos += m
        return out

    def jacobian(self, params: Any, X: Any) -> np.ndarray:
        """Analytic Jacobian of the outputs w.r.t. the flattened parameters.

        Args:
            params: list of ``(W, b)`` pairs.
            X: inputs, shape ``(N, d)``.

        Returns:
            Array of shape ``(N * n_L, P)``: row ``i * n_L + o`` is the gradient of output
            ``o`` at input ``i``, columns ordered as in :meth:`flatten`. At a kink (a
            pre-activation exactly 0) the ReLU derivative is taken as 0.
        """
        params = self.check_params(params)
        X = as_finite_array(X, "X", ndim=2, error=InputError)
        if X.shape[1] != self.input_dim:
            raise InputError(f"X must have shape (N, {self.input_dim}); got shape {X.shape}")
        N = X.shape[0]
        if N == 0:  # no inputs, no rows
            return np.zeros((0, self.num_params))
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked after
            J = _jacobian(params, X, self.widths[-1])
        return check_finite_result(J, "the Jacobian")


def _jacobian(params: Params, X: np.ndarray, nL: int) -> np.ndarray:
    """The rows of :meth:`ReLUNet.jacobian` on checked input."""
    N = X.shape[0]
    # forward pass keeping activations and masks
    acts, masks = [X], []
    H = X
    for l, (W, b) in enumerate(params):
        Z = H @ W.T + b
        if l < len(params) - 1:
            masks.append((Z > 0).astype(float))
            H = Z * masks[-1]
        else:
            H = Z
        acts.append(H)
    # backward: G has shape (N, nL, n_l) = d out / d pre-activation of layer l
    G = np.broadcast_to(np.eye(nL), (N, nL, nL)).copy()
    blocks = []
    for l in range(len(params) - 1, -1, -1):
        W, _ = params[l]
        inp = acts[l]  # (N, n_{l-1})
        dW = G[:, :, :, None] * inp[:, None, None, :]  # (N, nL, n_l, n_{l-1})
        blocks.append(np.concatenate([dW.reshape(N, nL, -1), G], axis=2))
        if l > 0:
            G = (G @ W) * masks[l - 1][:, None, :]
    return np.concatenate(blocks[::-1], axis=2).reshape(N * nL, -1)
