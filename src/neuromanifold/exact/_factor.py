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
  system, solved exactly. A factor with exactly one absolutely irreducible factor is
  irreducible over R.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import flint
import numpy as np

__all__ = ["support_line", "line_univariate", "absolute_factor_count",
           "certify_real_irreducible", "mpoly_dense"]


def mpoly_dense(f: flint.fmpq_mpoly, ndim: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """Dense float coefficient array of ``f`` (index = exponent) and its degree per axis."""
    terms = {tuple(int(e) for e in k): float(c) for k, c in f.to_dict().items()}
    deg = tuple(max(k[a] for k in terms) for a in range(ndim)) if terms else (0,) * ndim
    out = np.zeros(tuple(d + 1 for d in deg))
    for k, c in terms.items():
        out[k] = c
    return out, deg


def support_line(exps: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], tuple[int, ...], list[int]] | None:
    """If the exponent vectors lie on one line, return ``(base, alpha, steps)``.

    ``exps[i] = base + steps[i] * alpha`` with ``alpha`` a primitive integer vector,
    ``steps >= 0`` and ``min(steps) == 0``. Returns None if the support is not collinear
    (or is a single point).

    >>> support_line([(2, 0), (0, 2)])
    ((0, 2), (1, -1), [2, 0])
    >>> support_line([(0, 0), (1, 2), (2, 4)])
    ((0, 0), (1, 2), [0, 1, 2])
    """
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
    if next(a for a in alpha if a != 0) < 0:      # orient: first nonzero entry positive
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


def line_univariate(f: flint.fmpq_mpoly) -> tuple[tuple[int, ...], tuple[int, ...], flint.fmpq_poly] | None:
    """For a factor supported on a line, ``(base, alpha, g)`` with ``f = t^base g(t^alpha)``
    (negative entries of alpha read as in a Laurent monomial). None otherwise."""
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
    for i in range(m):
        for j in range(n + 1):
            b = mono(i, j)
            columns.append(f * b.derivative(names[y]) - b * fy)
    for i in range(m + 1):
        for j in range(n):
            b = mono(i, j)
            columns.append(-(f * b.derivative(names[x]) - b * fx))
    rows: dict[tuple, int] = {}
    for col in columns:
        for k in col.to_dict():
            rows.setdefault(tuple(int(e) for e in k), len(rows))
    if not rows:
        return len(columns)
    M = flint.fmpq_mat(len(rows), len(columns))
    for c, col in enumerate(columns):
        for k, val in col.to_dict().items():
            M[rows[tuple(int(e) for e in k)], c] = val
    return len(columns) - int(M.rank())


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
    ctx = f.context()
    degs = [int(d) for d in f.degrees()]
    used = [a for a, d in enumerate(degs) if d > 0]
    if len(used) < 2:
        return None
    if len(used) == 2:
        return _gao_count(f, used[0], used[1])
    rng = np.random.default_rng(seed)
    ctx2 = flint.fmpq_mpoly_ctx.get(("x", "y"), "lex")
    X, Y = ctx2.gens()
    for _ in range(3):
        subs = []
        for a in range(ctx.nvars()):
            ai, bi, ci = (int(z) for z in rng.integers(-7, 8, size=3))
            subs.append(ai * X + bi * Y + ci)
        g = f.compose(*subs, ctx=ctx2)
        if g.total_degree() != f.total_degree():
            continue
        count = _gao_count(g, 0, 1)
        if count == 1:
            return 1
    return None


def certify_real_irreducible(f: flint.fmpq_mpoly) -> bool:
    """Whether a Q-irreducible multivariate ``f`` is proven irreducible over R (it is when
    it is absolutely irreducible)."""
    return absolute_factor_count(f) == 1
