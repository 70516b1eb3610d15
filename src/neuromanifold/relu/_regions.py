"""Linear regions of a ReLU network: every activation pattern on a full-dimensional set.

See :mod:`neuromanifold.relu._engine` for the algorithm (layer-by-layer refinement with
one LP per candidate, certified exactly) and ``docs/relu.md`` for the definitions.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._results import Result
from .._validation import as_finite_array, check_bool
from .._errors import InputError
from ..exact._rational import fmpq_to_fraction
from ._domain import Domain, as_domain
from ._engine import Engine, ExactNet, enumerate_cells, output_map
from ._net import check_params  # noqa: F401  (re-exported for callers)

__all__ = ["Region", "Regions", "regions", "activation_pattern"]


@dataclasses.dataclass(frozen=True, repr=False)
class Region(Result):
    """One linear region: a full-dimensional set where the activation pattern is fixed.

    Attributes:
        index: position in :attr:`Regions.regions`.
        pattern: one boolean array per hidden layer (True = active, pre-activation > 0).
        point: a point strictly inside the region (floats; see ``point_exact``).
        point_exact: the same point as exact rationals; it is verified in exact arithmetic
            to satisfy every inequality of the region strictly.
        margin: radius of a ball around ``point`` inside the region (the Chebyshev radius
            as computed by the LP, capped at 1 for unbounded regions).
        linear, offset: the network on the region is ``x -> linear @ x + offset``, exactly
            (object arrays of ``Fraction``, shapes ``(n_L, d)`` and ``(n_L,)``).
        A, c: the region is ``{x : A x <= c}`` (float copies of the exact inequalities,
            each row scaled by a power of two: domain constraints first, then one per
            neuron that bounds it).
    """

    index: int
    pattern: tuple[np.ndarray, ...]
    point: np.ndarray
    point_exact: tuple
    margin: float
    linear: np.ndarray
    offset: np.ndarray
    A: np.ndarray = dataclasses.field(repr=False)
    c: np.ndarray = dataclasses.field(repr=False)

    def evaluate(self, X: Any) -> np.ndarray:
        """The region's affine map applied (in floats) to inputs ``X`` of shape ``(N, d)``."""
        X = np.atleast_2d(as_finite_array(X, "X", error=InputError))
        d = self.linear.shape[1]
        if X.ndim != 2 or X.shape[1] != d:
            raise InputError(f"X must have shape (N, {d}) for input dimension {d}; "
                             f"got shape {X.shape}")
        return X @ self.linear.astype(float).T + self.offset.astype(float)


@dataclasses.dataclass(frozen=True, repr=False)
class Regions(Result):
    """All linear regions of a network on a domain.

    Attributes:
        regions: the :class:`Region` list.
        num_regions: its length.
        num_lps: floating-point LPs solved (HiGHS).
        num_exact_fallbacks: decisions that needed the exact rational simplex.
        counts: number of cells after each hidden layer.
        widths: the network's widths.
        domain: the domain analysed.
        certified: every region is certified full-dimensional by an exact interior point
            and every discarded candidate certified empty (exact Motzkin certificate or
            exact simplex), so the list is complete and correct.
        params: the network's parameters (float64 copies).
    """

    regions: list
    num_regions: int
    num_lps: int
    num_exact_fallbacks: int
    counts: tuple
    widths: tuple
    domain: Domain
    certified: bool
    params: list[tuple[np.ndarray, np.ndarray]] = dataclasses.field(repr=False)

    def __len__(self) -> int:
        return self.num_regions

    def __iter__(self):
        return iter(self.regions)

    def __getitem__(self, i: int) -> Region:
        return self.regions[i]

    def locate(self, x: Any) -> Region | None:
        """The region whose pattern is the activation pattern at ``x`` (or ``None``).

        Points on a boundary get the pattern with ReLU'(0) = 0 and may not be found.
        """
        key = tuple(_key(p) for p in activation_pattern(self.params, x))
        for r in self.regions:
            if tuple(_key(p) for p in r.pattern) == key:
                return r
        return None


def _key(mask: np.ndarray) -> bytes:
    return np.packbits(np.asarray(mask, dtype=bool)).tobytes() + bytes([mask.size % 256])


def _pattern_at(params, x) -> list[np.ndarray]:
    h = np.asarray(x, dtype=float)
    out = []
    for W, b in params[:-1]:
        z = W @ h + b
        out.append(z > 0)
        h = np.maximum(z, 0.0)
    return out


def activation_pattern(params: Any, x: Any) -> list[np.ndarray]:
    """The activation pattern (one boolean array per hidden layer) at one input ``x``.

    Args:
        params: list of ``(W, b)`` pairs.
        x: one input, shape ``(d,)``.

    Returns:
        One boolean array per hidden layer (True = active, pre-activation > 0).

    >>> activation_pattern([(np.array([[1.0], [-1.0]]), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))], [2.0])
    [array([ True, False])]
    """
    params = check_params(params)
    d = params[0][0].shape[1]
    x = as_finite_array(x, "x", ndim=1, error=InputError)
    if x.size != d:
        raise InputError(f"x must have {d} entries (the input dimension); got {x.size}")
    return _pattern_at(params, x)


def _fractions(M) -> np.ndarray:
    rows, cols = M.nrows(), M.ncols()
    out = np.empty((rows, cols), dtype=object)
    for i in range(rows):
        for j in range(cols):
            out[i, j] = fmpq_to_fraction(M[i, j])
    return out


def regions(params: Any, domain: Any = None, *, progress: bool = False) -> Regions:
    """Enumerate the linear regions of a ReLU network on a domain, exactly.

    Every activation pattern that occurs on a full-dimensional subset of the domain is
    found by layer-by-layer refinement (an LP per candidate split, never all 2^n
    patterns), with an interior point, its margin and the exact affine map there.

    Args:
        params: list of ``(W, b)`` pairs.
        domain: ``None`` (all of R^d), ``"orthant"``, a ``(lower, upper)`` box or a Domain.
        progress: show a progress bar on stderr.

    Returns:
        A :class:`Regions` result.

    >>> W1 = np.array([[1.0, 0.0], [0.0, 1.0]]); b1 = np.zeros(2)
    >>> R = regions([(W1, b1), (np.ones((1, 2)), np.zeros(1))])
    >>> R.num_regions, R.certified
    (4, True)
    >>> sorted(str(r.linear[0, 0]) + "," + str(r.linear[0, 1]) for r in R)
    ['0,0', '0,1', '1,0', '1,1']
    """
    return _compute(params, domain, progress)[0]


def _compute(params: Any, domain: Any, progress: bool):
    """Regions plus the internal cells, network and engine (used by the other analyses)."""
    progress = check_bool(progress, "progress")
    net = ExactNet.from_params(params)
    params = net.params
    dom = as_domain(domain, net.d)
    engine = Engine(net.d)
    cells, counts = enumerate_cells([net], dom, engine, progress=progress)
    out = []
    for i, cell in enumerate(cells):
        Fq = output_map(cell, 0, net)
        F = _fractions(Fq)
        out.append(Region(
            index=i,
            pattern=tuple(cell.patterns[0]),
            point=np.array(cell.center_f, dtype=float),
            point_exact=tuple(fmpq_to_fraction(v) for v in cell.center_q),
            margin=float(cell.radius),
            linear=F[:, :net.d],
            offset=F[:, net.d],
            A=np.array(cell.rows_f, dtype=float),
            c=np.array(cell.offs_f, dtype=float),
        ))
    result = Regions(out, len(out), engine.counter.count, engine.exact_fallbacks,
                     tuple(counts), net.widths, dom, True, params)
    return result, cells, net, engine
