"""The rescaling lemma of docs/concepts_linear.md §2, solved exactly (rationals) or vectorized
(floats).

Given layers with squared norms ``n_l > 0`` and target invariants
``delta_l = t_{l+1} - t_l`` (l = 1..L-1), there is exactly one positive rescaling
``c_l > 0``, ``prod c_l = 1`` with ``t_l = ||c_l w_l||^2 = c_l^2 n_l`` reaching them:
``t_l = t_1 + D_l`` with ``D_l = delta_1 + ... + delta_{l-1}`` and
``prod_l t_l = prod_l n_l =: P``. Writing ``y = t_1 - T0`` with ``T0 = max_l(-D_l)``
(so every ``E_l = D_l + T0 >= 0`` and the smallest is 0), the equation is
``F(y) = prod_l (y + E_l) = P`` with F strictly increasing on ``y > 0`` from 0 to
infinity: exactly one root.
"""

from __future__ import annotations

from collections.abc import Sequence

import flint
import numpy as np

from .._errors import InputError, short_repr
from .._validation import as_finite_array, check_positive_int
from ._rational import fmpq_vector
from ._roots import working_precision

__all__ = ["rescaled_norms", "log_rescaled_norms", "apply_rescaling", "rescaled_norms_exact"]


def _offsets(deltas: np.ndarray) -> np.ndarray:
    D = np.concatenate([[0.0], np.cumsum(deltas)])
    return D - D.min()


def rescaled_norms(norms_sq: np.ndarray, deltas: np.ndarray, *, max_iter: int = 200) -> np.ndarray:
    """Target squared norms ``t_l`` of the unique rescaling (docs/concepts_linear.md §2),
    vectorized.

    Solves ``h(s) = sum_l log(e^s + E_l) - sum_l log n_l = 0`` for ``s = log y``. h is
    increasing and convex in s with ``h' >= 1`` (the term with ``E_l = 0`` contributes
    exactly 1), and ``h(log G) >= 0`` for the geometric mean ``G = P^(1/L)``; so Newton's
    method started at ``log G`` decreases monotonically to the root (no overshoot) and
    converges quadratically. Every row is solved at once.

    Args:
        norms_sq: array ``(..., L)`` of positive squared norms.
        deltas: the ``L - 1`` target invariants (shared by all rows).
        max_iter: iteration cap (the iteration normally stops after ~10 steps).

    Returns:
        Array ``(..., L)`` of the target squared norms ``t_l``; the scale factors are
        ``sqrt(t_l / n_l)``.

    >>> t = rescaled_norms(np.array([[1.0, 4.0]]), np.array([3.0]))
    >>> np.round(t, 12).tolist(), float(np.prod(t))   # t_2 - t_1 = 3, t_1 t_2 = 4
    ([[1.0, 4.0]], 4.0)
    """
    n = as_finite_array(norms_sq, "norms_sq", error=InputError)
    if n.ndim == 0:
        raise InputError(f"norms_sq must have a last axis of L layers; got {short_repr(norms_sq)}")
    if n.shape[-1] == 0 or np.any(~(n > 0)):
        raise InputError(
            f"every layer must have a positive finite squared norm to be "
            f"rescaled; got {short_repr(n)}"
        )
    out = np.exp(log_rescaled_norms(np.log(n), deltas, max_iter=max_iter))
    if not np.all(np.isfinite(out)):
        raise InputError(
            f"overflow: the rescaled squared norms leave the float64 range "
            f"(norms_sq {short_repr(norms_sq)}, deltas {short_repr(deltas)})"
        )
    return out


def log_rescaled_norms(
    log_norms_sq: np.ndarray, deltas: np.ndarray, *, max_iter: int = 200
) -> np.ndarray:
    """:func:`rescaled_norms` in log space: ``log t_l`` from ``log n_l``.

    For squared norms out of the float64 range (a layer of size 1e-200 has squared
    norm 1e-400): the logarithms are finite where the squares under- or overflow.

    Args:
        log_norms_sq: array ``(..., L)`` of the finite logarithms of the squared norms.
        deltas: the ``L - 1`` target invariants (shared by all rows).
        max_iter: iteration cap.

    Returns:
        Array ``(..., L)`` of ``log t_l`` (finite).

    >>> np.round(np.exp(log_rescaled_norms(np.log([[1.0, 4.0]]), np.array([3.0]))), 12).tolist()
    [[1.0, 4.0]]
    """
    logn = as_finite_array(log_norms_sq, "log_norms_sq", error=InputError)
    deltas = as_finite_array(deltas, "deltas", error=InputError).reshape(-1)
    max_iter = check_positive_int(max_iter, "max_iter", maximum=10_000)
    if logn.ndim == 0 or logn.shape[-1] == 0:
        raise InputError(
            f"log_norms_sq must have a last axis of L layers; got {short_repr(log_norms_sq)}"
        )
    L = logn.shape[-1]
    if deltas.size != L - 1:
        raise InputError(f"need {L - 1} invariants for {L} layers; got {deltas.size}")
    E = _offsets(deltas)
    if not np.all(np.isfinite(E)):
        raise InputError(f"the partial sums of deltas overflow float64; got {short_repr(deltas)}")
    with np.errstate(divide="ignore"):
        logE = np.log(E)  # -inf for the offset that is 0
    logP = np.sum(logn, axis=-1)
    shape = logP.shape
    logP = logP.reshape(-1)
    s = logP / L  # log of the geometric mean: h(s) >= 0
    active = np.arange(s.size)
    extra = 2  # polishing steps after convergence
    for _ in range(max_iter):
        sa = s[active]
        # log(e^s + E_l) without forming e^s (which under- or overflows for extreme
        # norms): logaddexp(s, log E_l)
        la = np.logaddexp(sa[:, None], logE)
        h = np.sum(la, axis=-1) - logP[active]
        dh = np.sum(np.exp(sa[:, None] - la), axis=-1)
        step = h / dh
        s[active] = sa - step
        # rows whose step is at rounding level are done (Newton is monotone here, so a
        # tiny step means the root is reached, up to rounding of h)
        moving = np.abs(step) > 1e-14 * np.maximum(1.0, np.abs(sa))
        if not np.any(moving):
            extra -= 1
            if extra < 0:
                break
            continue
        active = active[moving] if extra == 2 else active
    return np.logaddexp(s.reshape(shape)[..., None], logE)


def apply_rescaling(layers: list[np.ndarray], deltas: np.ndarray) -> None:
    """Scale stacked layers by the unique positive rescaling reaching ``deltas``, in place.

    Args:
        layers: the L layers of N points, each an array of shape ``(N, ...)`` (float).
        deltas: the ``L - 1`` target invariants.

    Works in log space, so a layer of a tiny (or huge) point whose squared norm leaves
    the float64 range is rescaled correctly as long as its entries do not.
    """
    N = layers[0].shape[0]
    if len(layers) == 1:
        return
    # in log space: a layer of a tiny (or huge) end-to-end filter can have a squared
    # norm out of the float64 range while its entries are not
    log_norms = np.stack([_log_norm_sq(w.reshape(N, -1)) for w in layers], axis=1)
    if not np.all(np.isfinite(log_norms)):
        raise InputError(
            "every layer must have a nonzero finite norm to be rescaled; got "
            f"log squared norms {short_repr(log_norms)}"
        )
    log_lam = 0.5 * (log_rescaled_norms(log_norms, deltas) - log_norms)
    for l, w in enumerate(layers):
        # w * lam as (w / 2^e) * exp(log lam + e log 2), so neither factor under/overflows
        e = np.frexp(np.max(np.abs(w.reshape(N, -1)), axis=1))[1]
        shape = (N,) + (1,) * (w.ndim - 1)
        w[...] = np.ldexp(w, (-e).reshape(shape)) * np.exp(log_lam[:, l] + e * np.log(2.0)).reshape(
            shape
        )


def _log_norm_sq(rows: np.ndarray) -> np.ndarray:
    """``log ||row||^2`` per row, without squaring entries out of the float64 range."""
    m = np.max(np.abs(rows), axis=1)
    safe = np.where(m > 0, m, 1.0)
    with np.errstate(divide="ignore"):
        return np.where(
            m > 0, 2.0 * np.log(safe) + np.log(np.sum((rows / safe[:, None]) ** 2, axis=1)), -np.inf
        )


def rescaled_norms_exact(norms_sq: Sequence, deltas: Sequence, *, prec: int = 128) -> list:
    """The target squared norms ``t_l`` as certified real balls, from rational data.

    ``F(y) - P`` is a rational polynomial with exactly one positive root (module
    docstring); it is isolated with Arb's certified root finder and ``t_l = y + E_l``.

    Args:
        norms_sq: the L squared norms (rationals: ``fmpq``, ``Fraction``, int; floats are
            taken as the exact binary rationals they are).
        deltas: the ``L - 1`` invariants (rationals, likewise).
        prec: working precision in bits of the returned balls.

    Returns:
        A list of L ``flint.arb`` balls, each containing the exact ``t_l``.

    >>> [float(t) for t in rescaled_norms_exact([1, 4], [3])]
    [1.0, 4.0]
    """
    n = fmpq_vector(norms_sq, "norms_sq")
    d = fmpq_vector(deltas, "deltas")
    prec = check_positive_int(prec, "prec", maximum=1 << 16)
    if not n:
        raise InputError("norms_sq must have at least one layer")
    if len(d) != len(n) - 1:
        raise InputError(f"need {len(n) - 1} invariants for {len(n)} layers; got {len(d)}")
    if any(x <= 0 for x in n):
        raise InputError("every layer must have a positive norm to be rescaled")
    D = [flint.fmpq(0)]
    for x in d:
        D.append(D[-1] + x)
    low = min(D)
    E = [x - low for x in D]
    P = flint.fmpq(1)
    for x in n:
        P *= x
    F = flint.fmpq_poly([1])
    for e in E:
        F *= flint.fmpq_poly([e, 1])
    F -= P
    with working_precision(prec):
        roots = [z for z, _ in F.complex_roots() if z.imag.is_zero() and z.real > 0]
        if len(roots) != 1:  # pragma: no cover - excluded by the monotonicity argument
            raise InputError(f"rescaling equation {F} has {len(roots)} positive roots")
        y = roots[0].real
        return [y + flint.arb(e) for e in E]
