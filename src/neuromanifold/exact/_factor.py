"""Exact multivariate factor analysis over the rationals (python-flint ``fmpq_mpoly``).

Used by the fibers of D-dimensional convolutional networks: after factoring pi(v) over Q,
every irreducible factor is classified as

* a *monomial* (a variable, i.e. a root at 0 along one axis);
* a *line* factor, whose support lies on a line: ``f = g(t^alpha)`` up to a monomial with
  g univariate. Such a factor behaves like a 1D polynomial and splits over the reals into
  linear and quadratic pieces (certified root isolation of g);
* a genuinely *multivariate* factor. Irreducible over Q does not imply irreducible over R
  (``(t1+1)^2 - 2 t2^2``), so absolute irreducibility is certified with Gao's
  partial-differential-equation criterion (S. Gao, Math. Comp. 72 (2003), 801-822): for
  f in F[x, y] with gcd(f, f_x) = 1 and bidegree (m, n), the number of absolutely
  irreducible factors of f equals the dimension of the space of g (deg g <= (m-1, n))
  such that ``(g/f)_y = (h/f)_x`` for some h (deg h <= (m, n-1)); a rational linear
  system, solved exactly. A factor is irreducible over R iff it has one absolutely
  irreducible factor, or exactly two that are complex conjugate; which factors are real is
  read off Gao's solutions (:func:`real_irreducible`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import flint
import numpy as np

from .._errors import InputError, short_repr
from .._validation import as_seed_rng
from ._roots import certified_roots, working_precision

__all__ = [
    "support_line",
    "line_univariate",
    "absolute_factor_count",
    "real_irreducible",
    "mpoly_dense",
]


def mpoly_dense(f: flint.fmpq_mpoly, ndim: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """Dense float coefficient array of ``f`` (index = exponent) and its degree per axis."""
    terms = {tuple(int(e) for e in k): float(c) for k, c in f.to_dict().items()}
    deg = tuple(max(k[a] for k in terms) for a in range(ndim)) if terms else (0,) * ndim
    out = np.zeros(tuple(d + 1 for d in deg))
    for k, c in terms.items():
        out[k] = c
    return out, deg


def support_line(
    exps: Sequence[Sequence[int]],
) -> tuple[tuple[int, ...], tuple[int, ...], list[int]] | None:
    """If the exponent vectors lie on one line, return ``(base, alpha, steps)``.

    ``exps[i] = base + steps[i] * alpha`` with ``alpha`` a primitive integer vector,
    ``steps >= 0`` and ``min(steps) == 0``. Returns None if the support is not collinear
    (or is a single point).

    >>> support_line([(2, 0), (0, 2)])
    ((0, 2), (1, -1), [2, 0])
    >>> support_line([(0, 0), (1, 2), (2, 4)])
    ((0, 0), (1, 2), [0, 1, 2])
    """
    if isinstance(exps, np.ndarray):
        if exps.dtype.kind not in "iuO":
            raise InputError(f"exps must hold integer exponents; got dtype {exps.dtype}")
        exps = exps.tolist()
    if (
        isinstance(exps, (str, bytes))
        or not isinstance(exps, Sequence)
        or not all(
            isinstance(e, (Sequence, np.ndarray)) and not isinstance(e, (str, bytes)) for e in exps
        )
    ):
        raise InputError(
            f"exps must be a list of exponent vectors (tuples of ints >= 0); got {short_repr(exps)}"
        )
    if len({len(e) for e in exps}) > 1:
        raise InputError(f"exponent vectors must all have the same length; got {short_repr(exps)}")
    if not all(
        isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)) and x >= 0
        for e in exps
        for x in e
    ):
        raise InputError(f"exponents must be ints >= 0; got {short_repr(exps)}")
    pts = [tuple(int(x) for x in e) for e in exps]
    if len(set(pts)) < 2:
        return None
    p0 = pts[0]
    diffs = [tuple(a - b for a, b in zip(p, p0)) for p in pts]
    ref = next(d for d in diffs if any(d))
    g = 0
    for x in ref:
        g = math.gcd(g, abs(x))
    alpha = tuple(x // g for x in ref)
    if next(a for a in alpha if a != 0) < 0:  # orient: first nonzero entry positive
        alpha = tuple(-a for a in alpha)
    steps = []
    for d in diffs:
        # d must be a multiple of alpha
        idx = next(i for i, a in enumerate(alpha) if a != 0)
        if d[idx] % alpha[idx]:
            return None
        s = d[idx] // alpha[idx]
        if tuple(s * a for a in alpha) != d:
            return None
        steps.append(s)
    low = min(steps)
    base = tuple(p + low * a for p, a in zip(p0, alpha))
    return base, alpha, [s - low for s in steps]


def _check_mpoly(f: object) -> None:
    if not isinstance(f, flint.fmpq_mpoly):
        raise InputError(f"f must be a python-flint fmpq_mpoly; got {short_repr(f)}")


def _plane_restrictions(
    f: flint.fmpq_mpoly, seed: int, tries: int = 3
) -> Iterator[flint.fmpq_mpoly]:
    """Restrictions of f to random planes ``t_i = a_i x + b_i y + c_i`` (integer
    coefficients) that keep its total degree, in a bivariate context ``(x, y)``.

    A factorization of f (over R or C) survives such a restriction with both factors of
    positive degree, so irreducibility of a restriction proves irreducibility of f."""
    rng = np.random.default_rng(seed)
    ctx2 = flint.fmpq_mpoly_ctx.get(("x", "y"), "lex")
    X, Y = ctx2.gens()
    for _ in range(tries):
        subs = []
        for a in range(f.context().nvars()):
            ai, bi, ci = (int(z) for z in rng.integers(-7, 8, size=3))
            subs.append(ai * X + bi * Y + ci)
        g = f.compose(*subs, ctx=ctx2)
        if g.total_degree() == f.total_degree():
            yield g


def line_univariate(
    f: flint.fmpq_mpoly,
) -> tuple[tuple[int, ...], tuple[int, ...], flint.fmpq_poly] | None:
    """For a factor supported on a line, ``(base, alpha, g)`` with ``f = t^base g(t^alpha)``
    (negative entries of alpha read as in a Laurent monomial). None otherwise."""
    _check_mpoly(f)
    d = f.to_dict()
    exps = [tuple(int(e) for e in k) for k in d]
    line = support_line(exps)
    if line is None:
        return None
    base, alpha, steps = line
    coeffs = [flint.fmpq(0)] * (max(steps) + 1)
    for k, s in zip(d, steps):
        coeffs[s] = d[k]
    return base, alpha, flint.fmpq_poly(coeffs)


def _gao_count(f: flint.fmpq_mpoly, x: int, y: int) -> int | None:
    """Gao's count of absolutely irreducible factors of a bivariate ``f`` in variables
    (x, y) (indices into f's context). None when the criterion does not apply."""
    system = _gao_system(f, x, y)
    if system is None:
        return None
    M, ncols = system[0], system[1]
    return ncols - (int(M.rank()) if M.nrows() else 0)


def _gao_system(f: flint.fmpq_mpoly, x: int, y: int):
    """Gao's linear system ``f g_y - g f_y = f h_x - h f_x`` as an exact matrix whose
    columns are the unknown coefficients (g first, then h); also the g monomials."""
    ctx = f.context()
    degs = f.degrees()
    m, n = int(degs[x]), int(degs[y])
    if m == 0 or n == 0:
        return None
    names = ctx.names()
    fx, fy = f.derivative(names[x]), f.derivative(names[y])
    if not f.gcd(fx).is_constant():
        return None
    nv = ctx.nvars()

    def mono(i: int, j: int) -> flint.fmpq_mpoly:
        e = [0] * nv
        e[x], e[y] = i, j
        return ctx.from_dict({tuple(e): 1})

    columns = []
    g_monos = []
    for i in range(m):
        for j in range(n + 1):
            b = mono(i, j)
            g_monos.append(b)
            columns.append(f * b.derivative(names[y]) - b * fy)
    for i in range(m + 1):
        for j in range(n):
            b = mono(i, j)
            columns.append(-(f * b.derivative(names[x]) - b * fx))
    rows: dict[tuple, int] = {}
    for col in columns:
        for k in col.to_dict():
            rows.setdefault(tuple(int(e) for e in k), len(rows))
    M = flint.fmpq_mat(len(rows), len(columns))
    for c, col in enumerate(columns):
        for k, val in col.to_dict().items():
            M[rows[tuple(int(e) for e in k)], c] = val
    return M, len(columns), g_monos


def _nullspace(M: flint.fmpq_mat, ncols: int) -> list[list[flint.fmpq]]:
    """A basis of the rational null space of M (from its reduced row echelon form)."""
    if M.nrows() == 0:
        return [[flint.fmpq(int(i == j)) for i in range(ncols)] for j in range(ncols)]
    R, rank = M.rref()
    pivots = []
    for r in range(int(rank)):
        c = next(c for c in range(ncols) if R[r, c] != 0)
        pivots.append(c)
    basis = []
    for free in (c for c in range(ncols) if c not in pivots):
        vec = [flint.fmpq(0)] * ncols
        vec[free] = flint.fmpq(1)
        for r, c in enumerate(pivots):
            vec[c] = -R[r, free]
        basis.append(vec)
    return basis


def _acb_eval(p: flint.fmpq_poly, z):
    return (
        flint.acb_poly([flint.acb(flint.arb(c)) for c in p.coeffs()])(z)
        if p.degree() >= 0
        else flint.acb(0)
    )


def _lambda_structure(
    f: flint.fmpq_mpoly, x: int, y: int, *, seed: int = 0
) -> tuple[int, int] | None:
    """``(m, r)``: the number m of absolutely irreducible factors of a bivariate f and how
    many of them are defined over R, certified; None if undecided.

    Gao's solutions are ``g = sum_i lambda_i (f / f_i) d_x f_i``; at a point of the zero set
    of f_i alone, ``g / f_x = lambda_i``. For a generic g the lambda_i are distinct and
    ``f_i = gcd(f, g - lambda_i f_x)``, so f_i is real iff lambda_i is real. The values are
    evaluated in ball arithmetic at the (certified) roots of ``f(x, y0)``; the groups of
    equal values are certified by their count (exactly m) and realness by conjugation
    (the conjugate of a lambda is a lambda; if its ball meets only its own group, it is
    real).
    """

    system = _gao_system(f, x, y)
    if system is None:
        return None
    M, ncols, g_monos = system
    basis = _nullspace(M, ncols)
    m = len(basis)
    if m <= 1:
        return (m, m)
    ctx = f.context()
    names = ctx.names()
    fx = f.derivative(names[x])
    rng = np.random.default_rng(seed)

    def restrict(p: flint.fmpq_mpoly, y0: int) -> flint.fmpq_poly:
        coeffs: dict[int, flint.fmpq] = {}
        for k, c in p.to_dict().items():
            k = [int(e) for e in k]
            coeffs[k[x]] = coeffs.get(k[x], flint.fmpq(0)) + c * flint.fmpq(y0) ** k[y]
        top = max(coeffs, default=0)
        return flint.fmpq_poly([coeffs.get(i, flint.fmpq(0)) for i in range(top + 1)])

    degx = int(f.degrees()[x])
    for attempt in range(6):
        weights = [int(w) for w in rng.integers(-5, 6, size=m)]
        gvec = [
            sum((w * b[i] for w, b in zip(weights, basis)), flint.fmpq(0))
            for i in range(len(g_monos))
        ]
        g = (
            ctx.from_dict({})
            if not any(gvec)
            else sum((c * mono for c, mono in zip(gvec, g_monos) if c != 0), ctx.from_dict({}))
        )
        y0 = int(rng.integers(-7, 8))
        fy0 = restrict(f, y0)
        if fy0.degree() != degx or not fy0.gcd(fy0.derivative()).degree() == 0:
            continue
        gy0, fxy0 = restrict(g, y0), restrict(fx, y0)
        iso = certified_roots(fy0)
        for prec in (128, 256, 512, 1024):
            with working_precision(prec):
                if prec != 128:
                    iso = certified_roots(fy0, min_prec=prec)
                lams = [_acb_eval(gy0, z) / _acb_eval(fxy0, z) for z in iso.values]
                groups: list[list[int]] = []
                for i, lam in enumerate(lams):
                    hit = [gi for gi, grp in enumerate(groups) if lams[grp[0]].overlaps(lam)]
                    if len(hit) > 1:
                        groups = []
                        break
                    if hit:
                        groups[hit[0]].append(i)
                    else:
                        groups.append([i])
                if len(groups) != m or any(
                    lams[a[0]].overlaps(lams[b[0]])
                    for ia, a in enumerate(groups)
                    for b in groups[ia + 1 :]
                ):
                    continue
                real = 0
                for gi, grp in enumerate(groups):
                    conj = lams[grp[0]].conjugate()
                    partners = [
                        gj for gj, grp2 in enumerate(groups) if lams[grp2[0]].overlaps(conj)
                    ]
                    if len(partners) != 1:
                        break
                    real += partners[0] == gi
                else:
                    return (m, real)
    return None


def real_irreducible(f: flint.fmpq_mpoly, *, seed: int = 0) -> bool | None:
    """Whether a Q-irreducible multivariate ``f`` is irreducible over R: True (proven),
    False (proven reducible over R), None (undecided).

    f is irreducible over R iff it has one absolutely irreducible factor, or exactly two
    that are complex conjugate (not real): :func:`_lambda_structure`. With three or more
    variables f is restricted to a random plane keeping its total degree (a real
    factorization would survive), which can only prove irreducibility.

    >>> ctx = flint.fmpq_mpoly_ctx.get(("x", "y"), "lex")
    >>> x, y = ctx.gens()
    >>> real_irreducible(x**2 * (y + 1)**2 + 1), real_irreducible((x + 1)**2 - 2 * y**2)
    (True, False)
    """
    _check_mpoly(f)
    as_seed_rng(seed)  # validated now, used by the random plane restrictions
    used = [a for a, d in enumerate(f.degrees()) if int(d) > 0]
    if len(used) < 2:
        return None
    if len(used) == 2:
        s = _lambda_structure(f, used[0], used[1], seed=seed)
        if s is None:
            return None
        m, r = s
        if m == 1 or (m == 2 and r == 0):
            return True
        return False
    for g in _plane_restrictions(f, seed):
        factors = g.factor()[1]
        # real_irreducible expects a Q-irreducible, square-free input
        if len(factors) == 1 and factors[0][1] == 1 and real_irreducible(g, seed=seed) is True:
            return True
    return None


def absolute_factor_count(f: flint.fmpq_mpoly, *, seed: int = 0) -> int | None:
    """Number of absolutely irreducible factors of a Q-irreducible ``f``, when certifiable.

    Bivariate factors: Gao's criterion, exactly. Factors in three or more variables are
    restricted to a random plane ``t_i = a_i x + b_i y + c_i`` that keeps the total
    degree (a factorization over C would survive the restriction); if the restriction has
    one absolutely irreducible factor, so has f and 1 is returned, otherwise None
    (undecided). Univariate or constant factors: None (they are handled by roots).

    >>> ctx = flint.fmpq_mpoly_ctx.get(("x", "y"), "lex")
    >>> x, y = ctx.gens()
    >>> absolute_factor_count((x + 1)**2 - 2*y**2), absolute_factor_count(x**2 + y**2 + 1)
    (2, 1)
    """
    _check_mpoly(f)
    as_seed_rng(seed)  # validated now, used by the random plane restrictions
    used = [a for a, d in enumerate(f.degrees()) if int(d) > 0]
    if len(used) < 2:
        return None
    if len(used) == 2:
        return _gao_count(f, used[0], used[1])
    for g in _plane_restrictions(f, seed):
        if _gao_count(g, 0, 1) == 1:
            return 1
    return None
