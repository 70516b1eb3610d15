"""Exact multivariate polynomials over the rationals (python-flint ``fmpq_mpoly``).

Polynomials live in a ring with ``nvars`` variables ``x0, x1, ...`` (:func:`polynomial_ring`);
arithmetic is flint's. These helpers evaluate them and their gradients at exact points and
print them with sympy symbols.

>>> R = polynomial_ring(2)
>>> x, y = R.gens()
>>> p = x * y - 2
>>> poly_value(p, [3, 1]), poly_gradient(p, [3, 1])
(1, [1, 3])
>>> poly_to_sympy(p, __import__("sympy").symbols("a b"))
a*b - 2
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flint
import numpy as np

from .._errors import InputError, short_repr
from .._validation import as_real_array
from ._rational import to_fmpq

__all__ = ["polynomial_ring", "poly_value", "poly_gradient", "poly_to_sympy"]

_Q0 = flint.fmpq(0)


def polynomial_ring(nvars: int) -> flint.fmpq_mpoly_ctx:
    """The ring of rational polynomials in ``nvars >= 1`` variables ``x0, ..., x{nvars-1}``
    (``.gens()`` are the variables, ``.constant(c)`` a constant).

    >>> polynomial_ring(3).gens()
    (x0, x1, x2)
    """
    if isinstance(nvars, bool) or not isinstance(nvars, int) or not 1 <= nvars <= 100_000:
        raise InputError(
            f"a polynomial ring needs nvars >= 1 variables (at most 100000); "
            f"got {short_repr(nvars)}"
        )
    return flint.fmpq_mpoly_ctx.get(("x", nvars))


def _check_poly(p: Any) -> None:
    if not isinstance(p, flint.fmpq_mpoly):
        raise InputError(f"expected a rational polynomial (flint.fmpq_mpoly); got {short_repr(p)}")


def _point(p: flint.fmpq_mpoly, x: Sequence[Any]) -> list:
    _check_poly(p)
    n = p.context().nvars()
    if isinstance(x, (set, frozenset, dict)):
        raise InputError(f"the point must be a sequence of {n} coordinates; got {short_repr(x)}")
    if hasattr(x, "detach") or not hasattr(x, "__len__"):  # a tensor, or a scalar
        x = as_real_array(x, "the point", error=InputError)
    if (isinstance(x, np.ndarray) and x.ndim == 0) or len(x) != n:
        raise InputError(f"the point must have {n} coordinates; got {short_repr(x)}")
    return [x_ if type(x_) is flint.fmpq else to_fmpq(x_) for x_ in x]


def poly_value(p: flint.fmpq_mpoly, x: Sequence[Any]) -> flint.fmpq:
    """``p(x)`` exactly (coordinates fmpq, ints, Fractions or floats).

    >>> poly_value(polynomial_ring(1).gens()[0] ** 2, [0.5])
    1/4
    """
    return flint.fmpq(p(*_point(p, x)))


def poly_gradient(p: flint.fmpq_mpoly, x: Sequence[Any]) -> list[flint.fmpq]:
    """The exact gradient of ``p`` at ``x`` (one entry per variable of the ring).

    >>> x, y, z = polynomial_ring(3).gens()
    >>> poly_gradient(x * y + z, [2, 3, 5])
    [3, 2, 1]
    """
    xq = _point(p, x)
    g = [_Q0] * len(xq)
    used = {i for mono in p.monoms() for i, e in enumerate(mono) if e}
    for i in sorted(used):
        g[i] = flint.fmpq(p.derivative(i)(*xq))
    return g


def poly_to_sympy(p: flint.fmpq_mpoly, symbols: Sequence[Any]):
    """``p`` as a sympy expression in ``symbols`` (one per variable of the ring).

    >>> import sympy
    >>> x, y = polynomial_ring(2).gens()
    >>> poly_to_sympy(x / 2 - y, sympy.symbols("u v"))
    u/2 - v
    """
    import sympy  # start-up: a slow import

    _check_poly(p)
    if (
        isinstance(symbols, (str, bytes, set, dict, type))
        or not hasattr(symbols, "__len__")
        or len(symbols) != p.context().nvars()
    ):
        raise InputError(
            f"symbols must be a sequence of {p.context().nvars()} symbols; got "
            f"{short_repr(symbols)}"
        )

    terms = []
    for mono, c in p.terms():
        t = sympy.Rational(int(c.p), int(c.q))
        for k, e in enumerate(mono):
            if e:
                t = t * symbols[k] ** int(e)
        terms.append(t)
    return sympy.Add(*terms) if terms else sympy.Integer(0)
