"""Exact fibers of linear convolutional networks (docs/concepts_linear.md §1-1.3; docs/fibers.md).

The fiber of ``(v, delta)`` is the set of filters ``theta = (w_1..w_L)`` with
``mu(theta) = v`` and ``delta(theta) = delta``, listed one per class modulo the sign flips
of docs/concepts_linear.md §2. ``pi(v)(t) = prod_l pi(w_l)(t^{S_{l-1}})`` turns this into factoring
pi(v):

* **1D** (:func:`_fiber_1d`): isolate the roots of pi(v) (certified), group them in orbits
  under the S-th roots of unity (certified), enumerate every way to hand real roots,
  conjugate pairs, roots at 0 and "roots at infinity" (degree drops) to the layers, as
  contingency tables generated breadth-first with numpy; build every layer polynomial
  from its roots at once (vectorized products), then apply the unique positive rescaling
  for delta (docs/concepts_linear.md §2 lemma, :mod:`neuromanifold.exact._rescaling`).
* **D >= 2** (:func:`_fiber_nd`): exact factorization over Q (``fmpq_mpoly.factor``),
  factors classified by :mod:`neuromanifold.exact._factor` (line-supported factors
  behave like 1D and are split over R by their roots; other factors are certified
  absolutely irreducible), then every grouping of the factors into layers that fits each
  layer's box of exponents and lattice ``S_{l-1} Z^D``, then the rescaling (exact when
  every layer is rational).
* A float v that is only *near* the neuromanifold (its exact rational value factors no
  way that fits) is handled by :func:`_numerical_fiber`: least-squares projection onto
  the neuromanifold, exact enumeration at the projected point, Gauss-Newton polish back
  to (v, delta); uncertified.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import flint
import numpy as np
from scipy import optimize, signal

from .._errors import InputError, NotInNeuromanifoldError, UndecidedFactorizationError, short_repr
from .._progress import progress_bar
from .._tolerance import RESIDUAL_TOL
from .._validation import (
    as_seed_rng,
    check_bool,
    check_choice,
    check_positive_float,
    check_positive_int,
)
from ..exact import (
    certified_roots,
    line_univariate,
    power_classes,
    real_irreducible,
    rescaled_norms_exact,
    to_fmpq,
)
from ..exact._library import apply_rescaling, isolate_factors, mpoly_dense, working_precision
from ..fibers import Fiber

__all__ = ["conv_fiber", "Fiber"]

_METHODS = ("auto", "exact", "numerical")


# ---------------------------------------------------------------------------- inputs
def _parse_target(net, v: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    """``v`` as (exact fmpq object array, float array, given_exactly)."""
    shape = net.end_to_end_shape
    if isinstance(v, flint.fmpq_mpoly):
        if v.context().nvars() != net.ndim:
            raise InputError(
                f"polynomial v must have {net.ndim} variable(s) for {net!r}; "
                f"got {v.context().nvars()}"
            )
        exact = net.coefficients(v)
        return exact, np.vectorize(float, otypes=[float])(exact), True
    arr = np.asarray(v, dtype=object) if not isinstance(v, np.ndarray) else v
    exact_input = (
        arr.dtype == object
        and arr.size > 0
        and all(
            isinstance(x, (Fraction, flint.fmpq, flint.fmpz, int, np.integer))
            and not isinstance(x, bool)
            for x in arr.ravel()
        )
    )
    if exact_input:
        if arr.shape != shape and not (net.ndim == 1 and arr.shape == (math.prod(shape),)):
            raise InputError(
                f"end-to-end filter v must have shape {shape} for {net!r}; got shape {arr.shape}"
            )
        arr = arr.reshape(shape)
        exact = np.empty(shape, dtype=object)
        for idx, x in np.ndenumerate(arr):
            exact[idx] = to_fmpq(x)
        return exact, np.vectorize(float, otypes=[float])(exact), True
    try:
        vf = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"end-to-end filter v must be an array of real numbers or an exact "
            f"polynomial; got {short_repr(v)}"
        ) from exc
    if vf.shape != shape:
        raise InputError(
            f"end-to-end filter v must have shape {shape} for {net!r}; got shape {vf.shape}"
        )
    if not np.all(np.isfinite(vf)):
        raise InputError(
            f"end-to-end filter v must be finite (no NaN or inf); got {short_repr(vf)}"
        )
    exact = np.empty(shape, dtype=object)
    for idx, x in np.ndenumerate(vf):
        exact[idx] = to_fmpq(float(x))
    return exact, vf, False


def _parse_invariants(net, invariants: Any) -> tuple[np.ndarray, list]:
    L = net.num_layers
    if isinstance(invariants, (str, bytes)):
        raise InputError(
            f"invariants must be a list of {L - 1} numbers; got {short_repr(invariants)}"
        )
    try:
        items = (
            list(np.asarray(invariants, dtype=object).reshape(-1)) if np.ndim(invariants) else None
        )
    except (TypeError, ValueError):
        items = None
    if items is None or len(items) != L - 1:
        raise InputError(
            f"invariants must be a list of L - 1 = {L - 1} numbers "
            f"(delta_l = ||w_(l+1)||^2 - ||w_l||^2) for {net!r}; got {short_repr(invariants)}"
        )
    exact, floats = [], []
    for x in items:
        if isinstance(x, (bool, np.bool_)):
            raise InputError(
                f"invariants must be real numbers, not booleans; got {short_repr(invariants)}"
            )
        if isinstance(x, (Fraction, flint.fmpq, flint.fmpz, int, np.integer)):
            q = to_fmpq(x)
        else:
            try:
                f = float(x)
            except (TypeError, ValueError) as exc:
                raise InputError(
                    f"invariants must be real numbers; got {short_repr(invariants)}"
                ) from exc
            if not math.isfinite(f):
                raise InputError(
                    f"invariants must be finite (no NaN or inf); got {short_repr(invariants)}"
                )
            q = to_fmpq(f)
        exact.append(q)
        floats.append(float(q))
    return np.array(floats), exact


# ---------------------------------------------------------------------------- public
def conv_fiber(
    net,
    v: Any,
    invariants: Any,
    *,
    method: str = "auto",
    tol: float = RESIDUAL_TOL,
    num_starts: int = 20,
    seed: Any = None,
    start: Any = None,
    progress: bool = False,
) -> Fiber:
    """All filters with end-to-end filter ``v`` and invariants ``delta`` (see
    :meth:`LinearConvNet.fiber`)."""
    check_choice(method, "method", _METHODS)
    tol = check_positive_float(tol, "tol")
    num_starts = check_positive_int(num_starts, "num_starts")
    as_seed_rng(seed)  # validated now, used by the numerical route
    progress = check_bool(progress, "progress")
    if start is not None:
        start = net.check_params(start)
    exact_v, v_float, given_exactly = _parse_target(net, v)
    deltas, deltas_q = _parse_invariants(net, invariants)
    if all(x == 0 for x in exact_v.ravel()):
        raise InputError(
            "v = 0: the fiber of the zero function is positive-dimensional (any layer may "
            "vanish), not a finite set; fiber() needs a nonzero end-to-end filter"
        )
    if method == "numerical":
        return _numerical_fiber(
            net,
            v_float,
            deltas,
            deltas_q,
            tol=tol,
            num_starts=num_starts,
            seed=seed,
            start=start,
            progress=progress,
        )
    try:
        return _exact_fiber(net, exact_v, v_float, deltas, deltas_q, progress=progress)
    except (NotInNeuromanifoldError, UndecidedFactorizationError) as exc:
        # an exact v that certainly does not factor is not in the neuromanifold; a float
        # v may be near it, and an undecided factorization may split over R
        if method == "exact" or (given_exactly and isinstance(exc, NotInNeuromanifoldError)):
            raise
        return _numerical_fiber(
            net,
            v_float,
            deltas,
            deltas_q,
            tol=tol,
            num_starts=num_starts,
            seed=seed,
            start=start,
            progress=progress,
            exact_reason=str(exc),
        )


def _exact_fiber(
    net,
    exact_v: np.ndarray,
    v_float: np.ndarray,
    deltas: np.ndarray,
    deltas_q: list,
    *,
    progress: bool = False,
) -> Fiber:
    """Dispatch to the 1D or the D-dimensional engine (dropping axes where every filter
    has size 1), then verify and package the points."""
    L = net.num_layers
    shapes = np.array(net.filter_shapes)  # (L, D)
    S = np.array(net.cumulative_strides[:L])  # S_0..S_{L-1}, (L, D)
    live = [a for a in range(net.ndim) if np.any(shapes[:, a] > 1)]
    notes: list[str] = []
    if len(live) < net.ndim and net.ndim > 1:
        notes.append(
            f"axes {[a for a in range(net.ndim) if a not in live]} have filter size 1 "
            f"in every layer and were dropped"
        )
    sub = tuple(slice(None) if a in live else 0 for a in range(net.ndim))
    ev = exact_v[sub] if live else exact_v.reshape(())
    if not live:
        # every filter is a scalar
        layers, count, certified, more = _fiber_scalars(L, ev.item(), deltas)
    elif len(live) == 1:
        a = live[0]
        if net.ndim > 1:
            notes.append(
                f"every filter is degenerate outside axis {a}: the network behaves "
                f"like a 1D network and its roots are split over R"
            )
        layers, count, certified, more = _fiber_1d(
            tuple(int(x) for x in shapes[:, a]),
            tuple(int(x) for x in S[:, a]),
            list(ev.reshape(-1)),
            deltas,
            deltas_q,
        )
    else:
        layers, count, certified, more = _fiber_nd(
            [tuple(int(x) for x in shapes[l, live]) for l in range(L)],
            [tuple(int(x) for x in S[l, live]) for l in range(L)],
            ev,
            deltas,
            deltas_q,
            progress=progress,
        )
    notes.extend(more)
    # re-insert dropped axes
    full = [
        arr.reshape((arr.shape[0],) + tuple(net.filter_shapes[l])) for l, arr in enumerate(layers)
    ]
    method = (
        "1D: certified root isolation + orbit grouping + exhaustive assignment + rescaling"
        if len(live) <= 1
        else "exact factorization over Q + exhaustive grouping + rescaling"
    )
    return _package(
        net, full, v_float, deltas, certified=certified, method=method, count=count, notes=notes
    )


def _package(
    net,
    layers: list[np.ndarray],
    v_float: np.ndarray,
    deltas: np.ndarray,
    *,
    certified: bool,
    method: str,
    count: int,
    notes: list[str],
    polish_threshold: float = 1e-11,
) -> Fiber:
    """Measure residuals, polish any inaccurate point by Gauss-Newton, build the Fiber."""
    N = layers[0].shape[0] if layers else 0
    res = _residuals(net, layers, v_float, deltas)
    bad = np.nonzero(res > polish_threshold)[0]
    for i in bad:
        pt = _polish(net, [arr[i] for arr in layers], v_float, deltas)
        for arr, w in zip(layers, pt):
            arr[i] = w
    if bad.size:
        res[bad] = _residuals(net, [arr[bad] for arr in layers], v_float, deltas)
        notes = notes + [f"{bad.size} point(s) polished by Gauss-Newton"]
    # list(arr) makes the row views in C; zip regroups them per point
    points = list(map(list, zip(*[list(arr) for arr in layers])))
    return Fiber(
        points=points,
        num_sign_patterns=2 ** (net.num_layers - 1),
        certified=certified,
        method=method,
        dimension=0,
        num_assignments=int(count),
        max_residual=float(res.max()) if N else 0.0,
        notes=tuple(notes),
    )


# ---------------------------------------------------------------------------- residuals
def _batch_end_to_end(net, layers: list[np.ndarray]) -> np.ndarray:
    """``mu`` for a stack of parameters (first axis), vectorized over the stack."""
    N = layers[0].shape[0]
    out = None
    for w, S in zip(layers, net.cumulative_strides):
        k = w.shape[1:]
        up = np.zeros((N,) + tuple((kk - 1) * s + 1 for kk, s in zip(k, S)))
        up[(slice(None),) + tuple(slice(None, None, s) for s in S)] = w
        if out is None:
            out = up
            continue
        shape = (N,) + tuple(a + b - 1 for a, b in zip(out.shape[1:], up.shape[1:]))
        new = np.zeros(shape)
        for j in np.ndindex(*up.shape[1:]):
            c = up[(slice(None),) + j]
            if not np.any(c):
                continue
            new[(slice(None),) + tuple(slice(jj, jj + n) for jj, n in zip(j, out.shape[1:]))] += (
                out * c.reshape((N,) + (1,) * net.ndim)
            )
        out = new
    return out


def _residuals(
    net, layers: list[np.ndarray], v_float: np.ndarray, deltas: np.ndarray
) -> np.ndarray:
    """Relative residual per point: ``max(|mu - v| / |v|, |delta(theta) - delta| / scale)``
    with ``scale = max_l ||w_l||^2`` (norms of the point)."""
    if layers[0].shape[0] == 0:
        return np.zeros(0)
    N = layers[0].shape[0]
    V = _batch_end_to_end(net, layers).reshape(N, -1)
    # both norms after an exact power-of-two shift: a tiny or huge v must not under- or
    # overflow in the squares
    shift = -int(np.frexp(np.max(np.abs(v_float)))[1])
    rv = np.linalg.norm(np.ldexp(V - v_float.reshape(1, -1), shift), axis=1) / np.linalg.norm(
        np.ldexp(v_float, shift)
    )
    norms = np.stack([np.sum(w.reshape(N, -1) ** 2, axis=1) for w in layers], axis=1)
    if norms.shape[1] > 1:
        rd = np.max(np.abs(np.diff(norms, axis=1) - deltas[None, :]), axis=1) / norms.max(axis=1)
    else:
        rd = np.zeros(N)
    return np.maximum(rv, rd)


def _constraint_system(net, params: list[np.ndarray], v: np.ndarray, deltas: np.ndarray):
    """Residual and Jacobian of ``(mu(theta) - v, delta(theta) - delta)``, scaled."""
    vs = max(np.linalg.norm(v), 1e-300)
    r1 = (net.end_to_end(params) - v).ravel() / vs
    J1 = net.jacobian(params) / vs
    norms = np.array([np.sum(w * w) for w in params])
    ds = max(norms.max(), 1e-300)
    r2 = (np.diff(norms) - deltas) / ds
    J2 = net.invariant_jacobian(params) / ds
    return np.concatenate([r1, r2]), np.vstack([J1, J2])


def _polish(
    net, params: list[np.ndarray], v: np.ndarray, deltas: np.ndarray, iters: int = 12
) -> list[np.ndarray]:
    """A few minimum-norm Gauss-Newton steps towards ``mu = v``, ``delta = deltas``."""
    theta = net.flatten(params)
    best, best_r = theta, np.inf
    for _ in range(iters):
        r, J = _constraint_system(net, net.unflatten(theta), v, deltas)
        nr = np.linalg.norm(r)
        if nr < best_r:
            best, best_r = theta, nr
        if nr < 1e-15:
            break
        step = np.linalg.lstsq(J, -r, rcond=None)[0]
        theta = theta + step
    r, _ = _constraint_system(net, net.unflatten(theta), v, deltas)
    if np.linalg.norm(r) < best_r:
        best = theta
    return net.unflatten(best)


# ---------------------------------------------------------------------------- scalars
def _fiber_scalars(
    L: int, value, deltas: np.ndarray
) -> tuple[list[np.ndarray], int, bool, list[str]]:
    """All filters are 1x..x1: ``prod w_l = v``, rescaled (docs/concepts_linear.md §2 lemma)."""
    layers = [np.array([[float(to_fmpq(value))]])] + [np.ones((1, 1)) for _ in range(L - 1)]
    _apply_rescaling(layers, deltas)
    return layers, 1, True, []


# ---------------------------------------------------------------------------- 1D engine
def _compositions(total: int, parts: int, exact: bool) -> np.ndarray:
    """All vectors of ``parts`` nonnegative ints with sum ``total`` (or ``<= total``)."""
    rows = []
    for t in [total] if exact else range(total + 1):
        for combo in itertools.combinations_with_replacement(range(parts), t):
            rows.append(np.bincount(np.array(combo, dtype=int), minlength=parts))
    return np.array(rows, dtype=np.int64).reshape(-1, parts)


def _tables(
    caps: Sequence[int], udeg: Sequence[int], demand: Sequence[int], exact: bool
) -> np.ndarray:
    """All contingency tables ``c[atom, layer] >= 0`` with
    ``sum_layer c[a, :] == caps[a]`` (or ``<=`` when not ``exact``) and
    ``sum_atom udeg[a] * c[a, layer] == demand[layer]``.

    Breadth-first over atoms with numpy: each step expands every partial table by every
    admissible row and keeps the rows that do not overshoot any layer. Atoms of degree 2
    (conjugate pairs) go first so that the degree-1 atoms fill what is left. Partial
    tables are stored as one small index per atom (into that atom's list of admissible
    rows), so each step copies ``N x A`` bytes, not ``N x A x G`` integers.
    Returns an int array ``(N, A, G)``; N = 0 when there is no table.
    """
    A, G = len(caps), len(demand)
    demand = np.asarray(demand, dtype=np.int64)
    caps = np.asarray(caps, dtype=np.int64)
    udeg = np.asarray(udeg, dtype=np.int64)
    empty = np.zeros((0, A, G), dtype=np.int64)
    if exact and int(np.sum(caps * udeg)) != int(demand.sum()):
        return empty
    if not exact and int(np.sum(caps * udeg)) < int(demand.sum()):
        return empty
    order = sorted(range(A), key=lambda a: -udeg[a])
    rest = np.concatenate([np.cumsum([caps[a] * udeg[a] for a in order][::-1])[::-1], [0]])
    comps = [_compositions(int(caps[a]), G, exact) for a in range(A)]
    idx_dtype = np.int32 if max((len(c) for c in comps), default=1) > 30000 else np.int16
    rem = demand[None, :].astype(np.int16)
    choice = np.zeros((1, A), dtype=idx_dtype)
    for pos, a in enumerate(order):
        new = rem[:, None, :] - (udeg[a] * comps[a]).astype(np.int16)[None, :, :]
        ok = np.all(new >= 0, axis=2)
        if not exact:
            ok &= new.sum(axis=2) <= rest[pos + 1]
        si, ci = np.nonzero(ok)
        rem = new[si, ci]
        choice = choice[si]
        choice[:, a] = ci
        if rem.shape[0] == 0:
            return empty
    keep = np.all(rem == 0, axis=1)
    choice = choice[keep]
    out = np.empty((choice.shape[0], A, G), dtype=np.int64)
    for a in range(A):
        out[:, a, :] = comps[a][choice[:, a]]
    return out


def _coeffs_from_homogeneous(Aa: np.ndarray, Bb: np.ndarray) -> np.ndarray:
    """Coefficients (constant first) of ``prod_j (B_j u - A_j)`` for every row.

    A finite root r is ``(r, 1)``, a root at 0 is ``(0, 1)`` and a root at infinity (a
    degree drop) is ``(-1, 0)``: the product has top nonzero coefficient 1.
    """
    N, n = Aa.shape
    c = np.ones((N, 1), dtype=Aa.dtype)
    for j in range(n):
        new = np.zeros((N, j + 2), dtype=Aa.dtype)
        new[:, 1:] += Bb[:, j : j + 1] * c
        new[:, :-1] -= Aa[:, j : j + 1] * c
        c = new
    return c.real.copy() if np.iscomplexobj(c) else c


class _Atom:
    """A unit that one layer of cumulative stride S takes as a whole: a real orbit
    ``{z : z^S = r}`` (u-degree 1), a conjugate pair of orbits (u-degree 2), a root at 0
    or at infinity (u-degree 1, consuming S of them)."""

    __slots__ = ("udeg", "roots", "consume", "zeros", "infs", "cap")

    def __init__(self, roots, consume, zeros, infs, cap):
        self.roots = roots  # [(a, b)] homogeneous u-roots, len == udeg
        self.udeg = len(roots)
        self.consume = consume  # {root index: count per use}
        self.zeros, self.infs, self.cap = zeros, infs, cap


def _fiber_1d(
    k: tuple[int, ...], S: tuple[int, ...], coeffs: list, deltas: np.ndarray, deltas_q: list
) -> tuple[list[np.ndarray], int, bool, list[str]]:
    """Every 1D fiber point, as stacked per-layer arrays ``(N, k_l)``."""
    # Whole: atoms_for and recurse close over the root classes, strides and results of one fiber
    L = len(k)
    P = flint.fmpq_poly([to_fmpq(c) for c in coeffs])
    K = len(coeffs)
    nz = [i for i, c in enumerate(coeffs) if c != 0]
    m0, deg = nz[0], nz[-1]
    d_inf = (K - 1) - deg
    v_top = float(to_fmpq(coeffs[deg]))
    P0 = flint.fmpq_poly([to_fmpq(c) for c in coeffs[m0 : deg + 1]])
    iso = certified_roots(P0)
    svals = sorted(set(S), reverse=True)
    classes: dict[int, list[list[int]]] = {}
    while True:
        restart = False
        for s in svals:
            iso2, cl = power_classes(P0, iso, s)
            if iso2 is not iso:
                iso, restart = iso2, True
                break
            classes[s] = cl
        if not restart:
            break
    nroots = len(iso)
    mult = np.array(iso.multiplicities, dtype=np.int64)
    # class data per stride: u-root value, conjugate class
    class_info: dict[int, list[tuple[list[int], complex, int, bool]]] = {}
    for s in svals:
        info = []
        where = {i: c for c, members in enumerate(classes[s]) for i in members}
        for members in classes[s]:
            z = iso.values[members[0]]
            with working_precision(iso.prec):
                r = z**s
            rc = complex(float(r.real.mid()), float(r.imag.mid()))
            conj_class = where[iso.conjugate[members[0]]]
            info.append((members, rc, conj_class, None))
        class_info[s] = [
            (m, (rc.real + 0j) if cc == ci else rc, cc, cc == ci)
            for ci, (m, rc, cc, _) in enumerate(info)
        ]
    groups = [(s, [l for l in range(L) if S[l] == s]) for s in svals]
    results: list[list[np.ndarray]] = []

    def atoms_for(s: int, rem: np.ndarray, rem0: int, remd: int) -> list[_Atom]:
        atoms = []
        if rem0 >= s:
            atoms.append(_Atom([(0j, 1 + 0j)], {}, s, 0, rem0 // s))
        if remd >= s:
            atoms.append(_Atom([(-1 + 0j, 0j)], {}, 0, s, remd // s))
        for ci, (members, r, cc, real) in enumerate(class_info[s]):
            if len(members) != s or cc < ci:
                continue
            allm = list(members) + ([] if real else list(class_info[s][cc][0]))
            cap = int(min(rem[i] for i in allm))
            if cap <= 0:
                continue
            roots = [(r, 1 + 0j)] if real else [(r, 1 + 0j), (np.conj(r), 1 + 0j)]
            atoms.append(_Atom(roots, {i: 1 for i in allm}, 0, 0, cap))
        return atoms

    def recurse(gi: int, rem: np.ndarray, rem0: int, remd: int, fixed: dict[int, list]) -> None:
        s, layers = groups[gi]
        final = gi == len(groups) - 1
        atoms = atoms_for(s, rem, rem0, remd)
        if final:
            # everything left must be consumed by the stride-1 layers
            used = np.zeros(nroots, dtype=np.int64)
            z0 = zi = 0
            for at in atoms:
                for i, c in at.consume.items():
                    used[i] += c * at.cap
                z0 += at.zeros * at.cap
                zi += at.infs * at.cap
            if np.any(used != rem) or z0 != rem0 or zi != remd:
                return
        demand = [k[l] - 1 for l in layers]
        tabs = _tables([a.cap for a in atoms], [a.udeg for a in atoms], demand, exact=final)
        if tabs.shape[0] == 0:
            return
        if not final:
            for row in tabs:
                new_rem, n0, nd = rem.copy(), rem0, remd
                fx = dict(fixed)
                for g, l in enumerate(layers):
                    roots = []
                    for a, at in enumerate(atoms):
                        c = int(row[a, g])
                        if c:
                            roots.extend(at.roots * c)
                            for i, cc in at.consume.items():
                                new_rem[i] -= cc * c
                            n0 -= at.zeros * c
                            nd -= at.infs * c
                    fx[l] = roots
                recurse(gi + 1, new_rem, n0, nd, fx)
            return
        N = tabs.shape[0]
        out = [None] * L
        A = len(atoms)
        udeg = np.array([at.udeg for at in atoms], dtype=np.int64)
        rootA = np.zeros((A, 2), dtype=complex)
        rootB = np.zeros((A, 2), dtype=complex)
        for a, at in enumerate(atoms):
            for j, (ra, rb) in enumerate(at.roots):
                rootA[a, j], rootB[a, j] = ra, rb
        all_real = not np.any(rootA.imag) and not np.any(rootB.imag)
        for g, l in enumerate(layers):
            n = k[l] - 1
            if n == 0:
                out[l] = np.ones((N, 1))
                continue
            # slot j of row i holds root (atom, position within the atom): expand the
            # table row by row with np.repeat instead of looping over rows
            reps = (tabs[:, :, g] * udeg[None, :]).ravel()
            atom_of_slot = np.repeat(np.tile(np.arange(A), N), reps)
            block_start = np.repeat(np.cumsum(reps) - reps, reps)
            within = (np.arange(atom_of_slot.size) - block_start) % udeg[atom_of_slot]
            Aa = rootA[atom_of_slot, within].reshape(N, n)
            Bb = rootB[atom_of_slot, within].reshape(N, n)
            if all_real:
                Aa, Bb = Aa.real.copy(), Bb.real.copy()
            out[l] = _coeffs_from_homogeneous(Aa, Bb)
        for l, roots in fixed.items():
            Aa = np.array([[r[0] for r in roots]], dtype=complex).reshape(1, -1)
            Bb = np.array([[r[1] for r in roots]], dtype=complex).reshape(1, -1)
            out[l] = np.repeat(_coeffs_from_homogeneous(Aa, Bb), N, axis=0)
        results.append(out)

    recurse(0, mult.copy(), m0, d_inf, {})
    if not results:
        nreal = sum(iso.is_real)
        raise NotInNeuromanifoldError(
            f"v is not in the neuromanifold: pi(v) = {P} (degree {deg}, {m0} root(s) at 0, "
            f"{d_inf} at infinity, {nreal} distinct real root(s), {(len(iso) - nreal) // 2} "
            f"conjugate pair(s), multiplicities {list(iso.multiplicities)}) admits no assignment "
            f"of roots to layers with filter sizes {list(k)} and cumulative strides {list(S)} "
            f"(a layer with cumulative stride S takes whole orbits under the S-th roots of "
            f"unity, and real polynomials take conjugate roots together)"
        )
    layers = [np.concatenate([r[l] for r in results], axis=0) for l in range(L)]
    count = layers[0].shape[0]
    layers[0] *= v_top
    _apply_rescaling(layers, deltas)
    return layers, count, True, []


def _apply_rescaling(layers: list[np.ndarray], deltas: np.ndarray) -> None:
    """Scale each stacked layer by the unique positive rescaling (docs/concepts_linear.md §2), in
    place."""
    apply_rescaling(layers, deltas)


# ---------------------------------------------------------------------------- D >= 2
class _NDAtom:
    """A real irreducible factor of pi(v) with its multiplicity. ``exact`` is the rational
    polynomial when the factor is rational; ``line``/``roots`` identify the pieces of
    line-supported factors (direction alpha, indices of their roots in that direction's
    isolation)."""

    __slots__ = ("exact", "dense", "deg", "mult", "label", "line", "roots")

    def __init__(self, exact, dense, deg, mult, label, line=None, roots=()):
        self.exact, self.dense, self.deg, self.mult, self.label = exact, dense, deg, mult, label
        self.line, self.roots = line, roots


def _period(alpha: tuple[int, ...], S: tuple[int, ...]) -> int:
    """Smallest M >= 1 with ``M * alpha`` in ``S Z^D``: a polynomial in ``s = t^alpha`` has
    its exponents in one class mod S iff it is a polynomial in ``s^M`` (times a power)."""
    M = 1
    for a, s in zip(alpha, S):
        M = math.lcm(M, s // math.gcd(s, abs(a)))
    return M


def _nd_atoms(P: Any, D: int, S: list[tuple[int, ...]]) -> tuple:
    """The factorization of ``pi(v)`` over Q cut into atoms for :func:`_fiber_nd`:
    ``(content, factors, const, atoms, line_data, notes, certified)``: monomial and
    multivariate factors as they are, factors on a line split over R by certified root
    isolation (their root classes per period in ``line_data``), the atoms by decreasing
    degree; ``certified`` is False where a factor could not be proved irreducible over R
    (the notes say which)."""
    # Whole: a pass over the factors, then one over the lines; both fill the same atoms and notes
    content, factors = P.factor()
    const = flint.fmpq(content)
    notes: list[str] = []
    certified = True
    atoms: list[_NDAtom] = []
    lines: dict[tuple[int, ...], list] = {}
    for f, e in factors:
        e = int(e)
        if len(f.to_dict()) == 1:
            dense, deg = mpoly_dense(f, D)
            atoms.append(_NDAtom(f, dense, deg, e, str(f)))
            continue
        line = line_univariate(f)
        if line is not None:
            base, alpha, g = line
            lines.setdefault(alpha, []).append((f, e, g, base))
            continue
        verdict = real_irreducible(f)
        if verdict is not True:
            certified = False
            notes.append(
                f"factor {f} is irreducible over Q but "
                + (
                    "splits over R (Gao's criterion: several absolutely irreducible factors, "
                    "some real)"
                    if verdict is False
                    else "could not be proven irreducible over R"
                )
                + ": its real factors are not enumerated by the exact route"
            )
        dense, deg = mpoly_dense(f, D)
        atoms.append(_NDAtom(f, dense, deg, e, str(f)))
    line_data: dict[tuple[int, ...], tuple] = {}
    for alpha, items in lines.items():
        ap = np.maximum(np.array(alpha), 0)
        am = np.maximum(-np.array(alpha), 0)
        periods = sorted({_period(alpha, st) for st in S})
        iso, owner, classes = isolate_factors([(g, e) for _, e, g, _ in items], periods)
        line_data[alpha] = (classes, am)
        values = iso.as_complex()
        for f, e, g, base in items:
            lc = flint.fmpq(g.coeffs()[-1])
            const *= lc**e
            gamma = np.array(base) - g.degree() * am
            if np.any(gamma != 0):  # pragma: no cover - an irreducible f has no monomial factor
                raise NotInNeuromanifoldError(f"unexpected monomial part in factor {f}")
        split = Counter()
        for i in range(len(iso)):
            if not iso.is_real[i] and iso.conjugate[i] < i:
                continue
            f, e, g, _ = items[owner[i]]
            z = values[i]
            if iso.is_real[i]:
                coeffs, roots = [-z.real, 1.0], (i,)
            else:
                coeffs, roots = [abs(z) ** 2, -2.0 * z.real, 1.0], (i, iso.conjugate[i])
            dp = len(coeffs) - 1
            deg = tuple(int(x) for x in dp * np.maximum(ap, am))
            dense = np.zeros(tuple(x + 1 for x in deg))
            for j, c in enumerate(coeffs):
                dense[tuple(j * ap + (dp - j) * am)] = c
            # a piece that is the whole factor keeps its exact rational coefficients
            exact = f * (flint.fmpq(1) / flint.fmpq(g.coeffs()[-1])) if g.degree() == dp else None
            split[owner[i]] += 1
            atoms.append(
                _NDAtom(
                    exact,
                    dense,
                    deg,
                    iso.multiplicities[i],
                    f"real factor of {f}",
                    line=alpha,
                    roots=roots,
                )
            )
        for j, (f, e, g, _) in enumerate(items):
            if split[j] > 1:
                notes.append(
                    f"factor {f} is supported on a line (a polynomial in the monomial "
                    f"t^{tuple(alpha)}): it behaves like 1D and was split over R into "
                    f"{split[j]} real irreducible pieces by certified root isolation"
                )
    atoms.sort(key=lambda a: -sum(a.deg))
    return content, factors, const, atoms, line_data, notes, certified


def _rescaled_points(
    points_exact: list, shapes: list, deltas: np.ndarray, deltas_q: list
) -> list[np.ndarray]:
    """The fiber points of :func:`_fiber_nd` as float arrays (one per layer, a row per
    point), each rescaled to the invariants ``deltas``: exactly computed filters through
    certified norms, the others numerically."""
    L = len(shapes)
    out = [np.zeros((len(points_exact),) + tuple(k)) for k in shapes]
    float_rows = []
    for p, (filters, exact_ok) in enumerate(points_exact):
        if exact_ok and L > 1:
            norms = []
            for filt in filters:
                n = flint.fmpq(0)
                for c in filt.ravel():
                    n += c * c
                norms.append(n)
            with working_precision(128):
                t = rescaled_norms_exact(norms, deltas_q, prec=128)
                for l, filt in enumerate(filters):
                    lam = (t[l] / flint.arb(norms[l])).sqrt()
                    out[l][p] = np.vectorize(lambda c: float(flint.arb(c) * lam), otypes=[float])(
                        filt
                    )
        else:
            for l, filt in enumerate(filters):
                out[l][p] = (
                    np.vectorize(float, otypes=[float])(filt) if filt.dtype == object else filt
                )
            float_rows.append(p)
    if float_rows:
        rows = np.array(float_rows)
        sub = [arr[rows] for arr in out]
        _apply_rescaling(sub, deltas)
        for arr, s in zip(out, sub):
            arr[rows] = s
    return out


def _fiber_nd(
    shapes: list[tuple[int, ...]],
    S: list[tuple[int, ...]],
    exact_v: np.ndarray,
    deltas: np.ndarray,
    deltas_q: list,
    *,
    progress: bool = False,
) -> tuple[list[np.ndarray], int, bool, list[str]]:
    """Every fiber point in D >= 2 from the exact factorization of pi(v) over Q.

    Lattice condition (a layer with cumulative stride S is a polynomial in t^S): the
    product of a layer's factors has its exponents in ``S Z^D`` iff it is invariant under
    ``t -> zeta t`` for every ``zeta`` in ``mu_{S_1} x ... x mu_{S_D}``. That group maps
    factors to factors of the same kind and support, so the condition splits: the
    rational (monomial and multivariate) part must have all exponents in one class mod S;
    the pieces of each line direction alpha must form whole orbits of roots under the
    M-th roots of unity (M = :func:`_period`), decided with certified root classes; and
    the classes of the parts must add up to 0. Every test is exact or certified.
    """
    # Whole: assign and on_lattice close over the atoms, caps and line data of one factorization
    D, L = len(shapes[0]), len(shapes)
    names = tuple(f"t{a + 1}" for a in range(D))
    ctx = flint.fmpq_mpoly_ctx.get(names, "lex")
    P = ctx.from_dict(
        {tuple(int(i) for i in idx): c for idx, c in np.ndenumerate(exact_v) if c != 0}
    )
    content, factors, const, atoms, line_data, notes, certified = _nd_atoms(P, D, S)
    caps = [tuple((kk - 1) * s for kk, s in zip(k, st)) for k, st in zip(shapes, S)]
    leaves: list[list[list[int]]] = []
    used = [[0] * D for _ in range(L)]
    counts = [[0] * len(atoms) for _ in range(L)]

    def assign(i: int) -> None:
        if i == len(atoms):
            leaves.append([row[:] for row in counts])
            return
        at = atoms[i]
        for comp in _compositions(at.mult, L, exact=True):
            if all(
                used[l][a] + comp[l] * at.deg[a] <= caps[l][a] for l in range(L) for a in range(D)
            ):
                for l in range(L):
                    counts[l][i] = int(comp[l])
                    for a in range(D):
                        used[l][a] += comp[l] * at.deg[a]
                assign(i + 1)
                for l in range(L):
                    counts[l][i] = 0
                    for a in range(D):
                        used[l][a] -= comp[l] * at.deg[a]

    assign(0)

    def on_lattice(members: list, st: tuple[int, ...]) -> bool:
        Sv = np.array(st)
        offset = np.zeros(D, dtype=np.int64)
        rational = [(at, c) for at, c in members if at.line is None]
        if rational:
            q = ctx.from_dict({(0,) * D: 1})
            for at, c in rational:
                q = q * at.exact**c
            exps = np.array([[int(x) for x in kk] for kk in q.to_dict()])
            if np.any((exps - exps[0]) % Sv):
                return False
            offset += exps[0]
        for alpha in {at.line for at, _ in members if at.line is not None}:
            classes, am = line_data[alpha]
            M = _period(alpha, st)
            mult: Counter = Counter()
            d = 0
            for at, c in members:
                if at.line == alpha:
                    d += c * len(at.roots)
                    for r in at.roots:
                        mult[r] += c
            if M > 1:
                for cl in classes[M]:
                    ms = [mult.get(i, 0) for i in cl]
                    if (len(cl) < M and any(ms)) or len(set(ms)) > 1:
                        return False
            offset += d * am
        return not np.any(offset % Sv)

    points_exact: list[tuple[list, bool]] = []
    iterator = leaves
    if progress:
        iterator = progress_bar(leaves, desc="groupings")
    for leaf in iterator:
        filters, exact_ok, ok = [], True, True
        for l in range(L):
            members = [(atoms[i], leaf[l][i]) for i in range(len(atoms)) if leaf[l][i]]
            if any(s > 1 for s in S[l]) and not on_lattice(members, S[l]):
                ok = False
                break
            if all(at.exact is not None for at, _ in members):
                q = ctx.from_dict({(0,) * D: 1})
                for at, c in members:
                    q = q * at.exact**c
                if l == 0:
                    q = q * const
                filt = np.empty(shapes[l], dtype=object)
                filt.fill(flint.fmpq(0))
                for kk, c in q.to_dict().items():
                    filt[tuple(int(x) // s for x, s in zip(kk, S[l]))] = c
                filters.append(filt)
            else:
                exact_ok = False
                arr = np.ones((1,) * D)
                for at, c in members:
                    for _ in range(c):
                        arr = signal.convolve(arr, at.dense, method="direct")
                if l == 0:
                    arr = arr * float(const)
                down = arr[tuple(slice(None, None, s) for s in S[l])]
                filt = np.zeros(shapes[l])
                filt[tuple(slice(0, n) for n in down.shape)] = down
                filters.append(filt)
        if ok:
            points_exact.append((filters, exact_ok))
    if not points_exact:
        factored = f"pi(v) = {P} factors over Q as {content} * " + " * ".join(
            f"({f})^{e}" for f, e in factors
        )
        rule = (
            f"the layers' filter shapes {shapes} with cumulative strides {S} (each "
            f"layer's product must have degree <= (k_l - 1) S_(l-1) per axis and "
            f"exponents in S_(l-1) Z^D)"
        )
        if not certified:
            raise UndecidedFactorizationError(
                f"the exact route cannot decide whether v is in the neuromanifold: "
                f"{factored}; no grouping of these factors fits {rule}, but some factor "
                f"may split further over R (see the notes: {'; '.join(notes)}); "
                f"method='auto' or 'numerical' decides numerically"
            )
        raise NotInNeuromanifoldError(
            f"v is not in the neuromanifold: {factored}, and no grouping of its real "
            f"irreducible factors fits {rule}"
        )
    out = _rescaled_points(points_exact, shapes, deltas, deltas_q)
    return out, len(leaves), certified, notes


# ---------------------------------------------------------------------------- numerical
def _numerical_fiber(
    net,
    v: np.ndarray,
    deltas: np.ndarray,
    deltas_q: list,
    *,
    tol: float,
    num_starts: int,
    seed: Any,
    start: Any,
    progress: bool,
    exact_reason: str | None = None,
) -> Fiber:
    """Project v onto the neuromanifold by least squares, enumerate the fiber of the
    projected point exactly, and polish every point back to (v, delta). Uncertified."""
    # Whole: project, enumerate, polish: three steps sharing the power-of-two shift and the starts
    rng = as_seed_rng(seed)
    # the neuromanifold is a cone (v -> c^L v when every layer is scaled by c): project
    # v rescaled by an exact power of two to norm ~1, so that tiny or huge filters do not
    # under- or overflow in the least-squares solver, and scale the projection back
    v_given = v
    shift = -int(np.frexp(np.max(np.abs(v)))[1])
    v = np.ldexp(v, shift)
    vn = np.linalg.norm(v)
    starts: list[np.ndarray] = []
    if start is not None:
        c = 2.0 ** (shift / net.num_layers)
        starts.append(net.flatten([np.asarray(w) * c for w in start]))
    while len(starts) < max(num_starts, 1):
        p = net.random_params(rng)
        scale = (vn / max(np.linalg.norm(net.end_to_end(p)), 1e-300)) ** (1.0 / net.num_layers)
        starts.append(net.flatten([w * scale for w in p]))

    def fun(theta):
        return (net.end_to_end(net.unflatten(theta)) - v).ravel() / vn

    def jac(theta):
        return net.jacobian(net.unflatten(theta)) / vn

    best, best_r = None, np.inf
    iterator = starts
    if progress:
        iterator = progress_bar(starts, desc="projecting v onto the neuromanifold", file=None)
    for x0 in iterator:
        # "lm" needs at least as many residuals as unknowns; "trf" handles the rest
        lsq = "lm" if net.end_to_end_size >= net.num_params else "trf"
        sol = optimize.least_squares(
            fun, x0, jac=jac, method=lsq, xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=2000
        )
        r = float(np.linalg.norm(sol.fun))
        if r < best_r:
            best, best_r = sol.x, r
        if best_r < 1e-14:
            break
    if best is None or best_r > tol:
        reason = f"{exact_reason}; moreover " if exact_reason else ""
        raise NotInNeuromanifoldError(
            f"{reason}v is not within relative distance tol={tol:g} of the neuromanifold of "
            f"{net!r}: the best least-squares fit from {len(starts)} start(s) misses v by "
            f"{best_r:.3g} (relative)"
        )
    theta = net.unflatten(best)
    projected = net.polynomial(theta)
    unshift = flint.fmpq(2) ** (-shift)
    exact_v = np.vectorize(lambda x: x * unshift, otypes=[object])(net.coefficients(projected))
    v = v_given
    inner = _exact_fiber(
        net, exact_v, np.vectorize(float, otypes=[float])(exact_v), deltas, deltas_q
    )
    layers = [np.stack([pt[l] for pt in inner.points]) for l in range(net.num_layers)]
    for i in range(layers[0].shape[0]):
        pt = _polish(net, [arr[i] for arr in layers], v, deltas)
        for arr, w in zip(layers, pt):
            arr[i] = w
    head = (
        f"exact route gave no answer ({exact_reason}); "
        if exact_reason
        else "numerical method requested; "
    )
    notes = [
        head + f"v was projected onto the neuromanifold by least squares from "
        f"{len(starts)} start(s) (relative distance {best_r:.3g}), the fiber of the "
        f"projected point was enumerated exactly, and every point was polished back to "
        f"(v, delta); not certified"
    ] + list(inner.notes)
    fib = _package(
        net,
        layers,
        v,
        deltas,
        certified=False,
        method="numerical projection + exact enumeration at the projected point",
        count=inner.num_assignments,
        notes=notes,
        polish_threshold=np.inf,
    )
    return fib
