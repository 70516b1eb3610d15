"""Linear regions of a ReLU network: every activation pattern on a full-dimensional set.

See :mod:`neuromanifold.relu._engine.cells` for the algorithm (layer-by-layer refinement; a
float walk or an LP per undecided hyperplane, certified exactly) and ``docs/relu.md`` for the
definitions. :func:`iter_regions` streams the regions depth first (memory independent of their
number, with budgets); :func:`regions` collects them; :func:`estimate_regions` bounds and
estimates their number before any enumeration (``docs/relu_arrangement.md`` §5).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from fractions import Fraction
from math import comb
from typing import Any

import numpy as np

from ..._errors import ComputationLimitError, InputError
from ..._progress import progress_bar
from ..._results import Result
from ..._tolerance import check_tol
from ..._validation import (
    as_finite_array,
    as_seed_rng,
    check_bool,
    check_positive_float,
    check_positive_int,
    check_workers,
    renamed_keywords,
)
from .._core.domain import Domain, FixedInputs, as_domain
from .._core.net import (
    ReLUNet,  # noqa: F401  (check_params re-exported for callers)
    check_params,
)
from .._engine.cells import Engine, EngineDeadline, ExactNet, iter_cells, output_map, thickness
from .._engine.parallel import iter_leaves

__all__ = [
    "warm_up",
    "Region",
    "Regions",
    "RegionStream",
    "RegionEstimate",
    "regions",
    "iter_regions",
    "estimate_regions",
    "activation_pattern",
]


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Region(Result):
    """One linear region: a full-dimensional set where the activation pattern is fixed.

    Attributes:
        index: position in :attr:`Regions.regions` (in the stream of :func:`iter_regions`).
        pattern: one boolean array per hidden layer (True = active, pre-activation > 0).
        point: a point strictly inside the region (floats; see ``point_exact``).
        point_exact: the same point as exact rationals; it is verified in exact arithmetic
            to satisfy every inequality of the region strictly.
        margin: radius of a ball around ``point`` inside the region (computed in floats,
            capped at 1; the point is moved towards the Chebyshev centre by a short float
            walk and usually reaches it).
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
            raise InputError(
                f"X must have shape (N, {d}) for input dimension {d}; got shape {X.shape}"
            )
        return X @ self.linear.astype(float).T + self.offset.astype(float)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
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
            exact simplex), so the list is complete and correct. False for
            ``certify=False`` (floating-point decisions) and for the partial list of a
            :class:`~neuromanifold.ComputationLimitError`.
        params: the network's parameters (float64 copies).
        tol: regions thinner than ``tol`` were left out (0.0: none; see :func:`iter_regions`).
        num_thin_regions: how many were left out.
        num_walks: floating-point walks across a cell (each decides a hyperplane in place
            of an LP, with the same exact checks; see ``docs/relu_arrangement.md`` §5).
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
    tol: float = 0.0
    num_thin_regions: int = 0
    num_walks: int = 0

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
        key = tuple(region_key(p) for p in activation_pattern(self.params, x))
        for r in self.regions:
            if tuple(region_key(p) for p in r.pattern) == key:
                return r
        return None


def region_key(mask: np.ndarray) -> bytes:
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

    >>> activation_pattern([(np.array([[1.0], [-1.0]]), np.zeros(2)), (np.ones((1, 2)),
    ...                     np.zeros(1))], [2.0])
    [array([ True, False])]
    """
    params = check_params(params)
    d = params[0][0].shape[1]
    x = as_finite_array(x, "x", ndim=1, error=InputError)
    if x.size != d:
        raise InputError(f"x must have {d} entries (the input dimension); got {x.size}")
    return _pattern_at(params, x)


def _coprime_fraction():
    """A maker of ``Fraction(p, q)`` for ``p, q`` already in lowest terms with ``q > 0`` (as
    flint keeps them) that skips the gcd of ``Fraction``; plain ``Fraction`` where the
    Python version offers no such shortcut."""
    try:
        Fraction(1, 2, _normalize=False)  # Python <= 3.11
        return lambda p, q: Fraction(p, q, _normalize=False)
    except TypeError:
        return getattr(Fraction, "_from_coprime_ints", Fraction)  # Python >= 3.12


_coprime = _coprime_fraction()


def _fraction(v) -> Fraction:
    """An ``fmpq`` as a ``Fraction`` (the value of ``fmpq_to_fraction``, without its
    checks and gcd: the engine's entries are canonical ``fmpq``)."""
    return _coprime(int(v.p), int(v.q))


def _fractions(M) -> np.ndarray:
    out = np.empty(M.nrows() * M.ncols(), dtype=object)
    out[:] = [_fraction(v) for v in M.entries()]
    return out.reshape(M.nrows(), M.ncols())


def region_of(cell, i: int, net: ExactNet) -> Region:
    F = _fractions(output_map(cell, 0, net))
    return Region(
        index=i,
        pattern=tuple(cell.patterns[0]),
        point=np.array(cell.center_f, dtype=float),
        point_exact=tuple(_fraction(v) for v in cell.center_q),
        margin=float(cell.radius),
        linear=F[:, : net.d],
        offset=F[:, net.d],
        A=np.array(cell.rows_f, dtype=float),
        c=np.array(cell.offs_f, dtype=float),
    )


class RegionStream:
    """The iterator returned by :func:`iter_regions`: yields :class:`Region` objects one at
    a time and keeps running counts (readable at any time, final once exhausted).

    Attributes:
        num_regions: regions yielded so far.
        num_thin_regions: regions left out as thinner than ``tol``.
        num_lps: floating-point LPs solved so far.
        num_walks: floating-point walks across a cell so far (each in place of an LP).
        num_exact_fallbacks: decisions that needed the exact rational simplex.
        counts: cells reached after each hidden layer so far (lists the final
            per-layer counts of :class:`Regions` once finished).
        elapsed: seconds spent inside the iterator.
        finished: the enumeration is complete (every region was yielded).
        certified: decisions are exact (``certify=True``).
        domain, widths, tol: as for :class:`Regions`.
    """

    def __init__(
        self,
        net: ExactNet,
        dom: Domain,
        *,
        tol: float,
        certify: bool,
        max_regions: int | None,
        time_limit: float | None,
        progress: bool,
        workers: int = 1,
    ):
        self.net, self.domain, self.widths = net, dom, net.widths
        self.workers = workers
        self.tol, self.certified = tol, certify
        self.max_regions, self.time_limit, self.progress = max_regions, time_limit, progress
        self.num_regions = self.num_thin_regions = 0
        self.counts: list[int] = []
        self.elapsed = 0.0
        self.finished = False
        self._engine = Engine(net.d, certify=certify)
        self._gen = self._run()
        self._cut: Any = None  # a box fixing inputs: the regions are lifted back to it
        self.params = net.params

    def _restrict(self, cut: Any, net: ExactNet, dom: Domain) -> "RegionStream":
        """This stream, run on the free inputs of ``cut``, as one on ``net`` and ``dom``."""
        self._cut, self.widths, self.domain_shown, self.params = cut, net.widths, dom, net.params
        return self

    @property
    def shown_domain(self) -> Domain:
        """The domain asked for (a box fixing inputs, when the stream runs on the rest)."""
        return self.domain_shown if self._cut is not None else self.domain

    @property
    def num_lps(self) -> int:
        """Floating-point LPs solved so far."""
        return self._engine.counter.count

    @property
    def num_walks(self) -> int:
        """Floating-point walks across a cell so far (each in place of an LP)."""
        return self._engine.walks

    @property
    def num_exact_fallbacks(self) -> int:
        """Decisions so far that needed the exact rational simplex."""
        return self._engine.exact_fallbacks

    def __iter__(self):
        return self

    def __next__(self) -> Region:
        region = next(self._gen)
        return region if self._cut is None else _lift_region(region, self._cut)

    def close(self) -> None:
        """Stop the enumeration early (and its worker processes, if any); the counts
        stay as they are. Closing a finished stream does nothing."""
        self._gen.close()

    def __repr__(self) -> str:
        state = "finished" if self.finished else "running"
        return (
            f"RegionStream(widths={self.widths}, {state}, num_regions={self.num_regions}, "
            f"num_lps={self.num_lps}, num_walks={self.num_walks}, "
            f"elapsed={self.elapsed:.3g} s)"
        )

    def _limit(self, what: str) -> ComputationLimitError:
        err = ComputationLimitError(
            f"region enumeration stopped at the {what} after {self.num_regions} regions "
            f"({self.num_lps} LPs, {self.num_walks} walks, {self.elapsed:.3g} s; cells "
            f"per layer so far "
            f"{tuple(self.counts)}); raise the limit, or see estimate_regions for the "
            f"expected count"
        )
        err.num_regions, err.num_lps, err.elapsed = self.num_regions, self.num_lps, self.elapsed
        err.num_walks = self.num_walks
        err.partial = None
        return err

    def _run(self):
        engine, net = self._engine, self.net
        bar = None
        t0 = time.monotonic()
        if self.time_limit is not None:
            engine.deadline = t0 + self.time_limit
        leaves = iter_leaves(
            [net],
            self.domain,
            engine,
            self.counts,
            workers=self.workers,
            leaf=_region_leaf,
            leaf_args=(self.tol,),
        )
        try:
            while True:
                try:
                    region = next(leaves)
                except StopIteration:
                    break
                except EngineDeadline:
                    self.elapsed = time.monotonic() - t0
                    raise self._limit(f"time limit ({self.time_limit:g} s)") from None
                if region is None:
                    self.num_thin_regions += 1
                    continue
                if self.max_regions is not None and self.num_regions >= self.max_regions:
                    self.elapsed = time.monotonic() - t0
                    raise self._limit(f"region limit (max_regions={self.max_regions})")
                # the region was just made for this stream (here or in a worker) and is
                # seen nowhere else yet: numbering it in place spares a copy per region
                object.__setattr__(region, "index", self.num_regions)
                self.num_regions += 1
                if bar is None and self.progress:
                    # made once the workers run: its monitor thread would make them
                    # start by forkserver instead of fork (see relu/_parallel.py)
                    bar = progress_bar(desc="regions", unit="region", leave=False)
                if bar is not None:
                    bar.update(1)
                    if self.num_regions % 64 == 1:
                        bar.set_postfix(lps=self.num_lps, refresh=False)
                self.elapsed = time.monotonic() - t0
                t_out = time.monotonic()
                yield region
                t0 += time.monotonic() - t_out  # time spent by the caller does not count
                if engine.deadline is not None:
                    engine.deadline += time.monotonic() - t_out
            self.finished = True
            self.elapsed = time.monotonic() - t0
        finally:
            leaves.close()  # stops the worker processes, if any
            if bar is not None:
                bar.close()


def _region_leaf(cell, nets, tol: float) -> Region | None:
    """The :class:`Region` of a final cell (index 0; the stream numbers it), or ``None``
    when it is thinner than ``tol`` (runs in the worker processes too)."""
    net = nets[0]
    if tol > 0 and thickness(cell, net.d) <= tol:
        return None
    return region_of(cell, 0, net)


def _check_options(tol, certify, max_regions, time_limit, progress, workers):
    workers = check_workers(workers)
    tol = check_tol(tol, "min_thickness")
    certify = check_bool(certify, "certify")
    if max_regions is not None:
        max_regions = check_positive_int(max_regions, "max_regions")
    if time_limit is not None:
        time_limit = check_positive_float(time_limit, "time_limit")
    return tol, certify, max_regions, time_limit, check_bool(progress, "progress"), workers


@renamed_keywords(tol="min_thickness")
def iter_regions(
    params: Any,
    domain: Any = None,
    *,
    min_thickness: Any = 0.0,
    certify: bool = True,
    max_regions: int | None = None,
    time_limit: float | None = None,
    progress: bool = False,
    workers: int | None = 1,
) -> RegionStream:
    """Stream the linear regions of a ReLU network on a domain, one at a time.

    The same regions as :func:`regions`, in the same order, with the same certification,
    but depth first over the layer-by-layer split tree: nothing of a finished sub-tree is
    kept, so the memory does not grow with the number of regions.

    Args:
        params: list of ``(W, b)`` pairs.
        domain: ``None`` (all of R^d), ``"orthant"``, a ``(lower, upper)`` box or a Domain.
        min_thickness: relative thickness below which a region is left out (``0``, the default:
            every region; see ``docs/relu_arrangement.md`` §5). A region counts when it contains
            a ball of radius ``> min_thickness * max(1, ||x||_inf)`` around some x; slivers between
            neurons that coincide up to rounding are thinner than that.
        certify: ``True`` (default): every region and every discarded side is certified
            exactly. ``False``: the floating-point walks and LPs decide (an LP: radius
            above 1e-7 non-empty, else empty); faster, numerically checked only
            (``certified`` is False).
        max_regions: stop with a :class:`~neuromanifold.ComputationLimitError` when the
            network has more than this many regions (after yielding that many).
        time_limit: stop with a :class:`~neuromanifold.ComputationLimitError` after this
            many seconds inside the iterator (time the caller spends between regions does
            not count).
        progress: a progress bar on stderr counting regions and LPs.
        workers: processes that enumerate (``None``: every core available). With more
            than one, the first hidden layer's cells are split among worker processes,
            each enumerating the later layers below its cells with the same exact
            checks; the regions come in the same order as with one. Starting the
            workers takes about a second: it pays from some thousands of regions on.

    Returns:
        A :class:`RegionStream` (an iterator of :class:`Region`) with running counts. The
        error raised by a budget has attributes ``num_regions``, ``num_lps``,
        ``num_walks``, ``elapsed``.

    >>> W1 = np.array([[1.0, 0.0], [0.0, 1.0]]); b1 = np.zeros(2)
    >>> it = iter_regions([(W1, b1), (np.ones((1, 2)), np.zeros(1))])
    >>> [str(r.linear[0, 0]) + "," + str(r.linear[0, 1]) for r in it]
    ['0,0', '0,1', '1,0', '1,1']
    >>> it.finished, it.num_regions, it.counts
    (True, 4, [4])
    >>> it = iter_regions([(W1, b1), (np.ones((1, 2)), np.zeros(1))], max_regions=3)
    >>> try:
    ...     sum(1 for _ in it)
    ... except ComputationLimitError as err:
    ...     print(err.num_regions, "regions, then:", str(err).split(" after")[0])
    3 regions, then: region enumeration stopped at the region limit (max_regions=3)
    """
    tol, certify, max_regions, time_limit, progress, workers = _check_options(
        min_thickness, certify, max_regions, time_limit, progress, workers
    )
    net = ExactNet.from_params(params)
    dom = as_domain(domain, net.d)
    cut = FixedInputs.of(dom)
    stream = RegionStream(
        net if cut is None else ExactNet.from_params(cut.reduce(params)),
        dom if cut is None else cut.domain,
        tol=tol,
        certify=certify,
        max_regions=max_regions,
        time_limit=time_limit,
        progress=progress,
        workers=workers,
    )
    return stream if cut is None else stream._restrict(cut, net, dom)


def _lift_region(r: Region, cut: FixedInputs) -> Region:
    """A region of the free inputs as a region of the box fixing the others: the point
    with the fixed values put in, the linear map with zero columns for the fixed inputs
    (constant on the box; the offset carries them), the box's rows in front."""
    d, k = cut.dim, cut.domain.dim
    point_exact = np.empty(d, dtype=object)
    point_exact[cut.free] = list(r.point_exact)
    point_exact[cut.fixed] = [Fraction(float(v)) for v in cut.values]
    linear = np.full((r.linear.shape[0], d), Fraction(0), dtype=object)
    linear[:, cut.free] = r.linear
    A = np.zeros((r.A.shape[0] - 2 * k, d))
    A[:, cut.free] = r.A[2 * k :]
    lo, hi = cut.lift(cut.domain.lower), cut.lift(cut.domain.upper)
    return dataclasses.replace(
        r,
        point=cut.lift(r.point),
        point_exact=tuple(point_exact),
        linear=linear,
        A=np.vstack([np.eye(d), -np.eye(d), A]),
        c=np.concatenate([hi, -lo, r.c[2 * k :]]),
    )


@renamed_keywords(tol="min_thickness")
def regions(
    params: Any,
    domain: Any = None,
    *,
    progress: bool = False,
    min_thickness: Any = 0.0,
    certify: bool = True,
    max_regions: int | None = None,
    time_limit: float | None = None,
    workers: int | None = 1,
) -> Regions:
    """Enumerate the linear regions of a ReLU network on a domain, exactly.

    Every activation pattern that occurs on a full-dimensional subset of the domain is
    found by layer-by-layer refinement (an LP per candidate split, never all 2^n
    patterns), with an interior point, its margin and the exact affine map there. The
    list is collected from :func:`iter_regions` (use that to stream very many regions).

    Args:
        params: list of ``(W, b)`` pairs.
        domain: ``None`` (all of R^d), ``"orthant"``, a ``(lower, upper)`` box or a Domain.
        progress: show a progress bar on stderr.
        min_thickness, certify, max_regions, time_limit, workers: as for :func:`iter_regions`; on a
            budget the :class:`~neuromanifold.ComputationLimitError` carries the regions found so
            far as ``partial`` (a :class:`Regions` with ``certified=False``).

    Returns:
        A :class:`Regions` result.

    >>> W1 = np.array([[1.0, 0.0], [0.0, 1.0]]); b1 = np.zeros(2)
    >>> R = regions([(W1, b1), (np.ones((1, 2)), np.zeros(1))])
    >>> R.num_regions, R.certified
    (4, True)
    >>> sorted(str(r.linear[0, 0]) + "," + str(r.linear[0, 1]) for r in R)
    ['0,0', '0,1', '1,0', '1,1']
    """
    it = iter_regions(
        params,
        domain,
        min_thickness=min_thickness,
        certify=certify,
        max_regions=max_regions,
        time_limit=time_limit,
        progress=progress,
        workers=workers,
    )
    out: list[Region] = []
    try:
        for r in it:
            out.append(r)
    except ComputationLimitError as err:
        err.partial = _collect(it, out, complete=False)
        raise
    return _collect(it, out, complete=True)


def _collect(it: RegionStream, out: list, complete: bool) -> Regions:
    return Regions(
        regions=out,
        num_regions=len(out),
        num_lps=it.num_lps,
        num_exact_fallbacks=it.num_exact_fallbacks,
        counts=tuple(it.counts),
        widths=it.widths,
        domain=it.shown_domain,
        certified=complete and it.certified,
        params=it.params,
        tol=it.tol,
        num_thin_regions=it.num_thin_regions,
        num_walks=it.num_walks,
    )


def compute_regions(params: Any, domain: Any, progress: bool):
    """Regions plus the internal cells, network and engine (used by the other analyses)."""
    progress = check_bool(progress, "progress")
    net = ExactNet.from_params(params)
    dom = as_domain(domain, net.d)
    engine = Engine(net.d)
    counts: list[int] = []
    cells, out = [], []
    bar = None
    if progress:
        bar = progress_bar(desc="regions", unit="region", leave=False)
    for cell in iter_cells([net], dom, engine, counts):
        out.append(region_of(cell, len(out), net))
        cells.append(cell)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    result = Regions(
        regions=out,
        num_regions=len(out),
        num_lps=engine.counter.count,
        num_exact_fallbacks=engine.exact_fallbacks,
        counts=tuple(counts),
        widths=net.widths,
        domain=dom,
        certified=True,
        params=net.params,
        num_walks=engine.walks,
    )
    return result, cells, net, engine


# -- how many regions to expect ---------------------------------------------------------


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class RegionEstimate(Result):
    """What :func:`estimate_regions` says about the number of linear regions.

    Attributes:
        upper_bound: a proven upper bound for every network of these widths on all of R^d
            (Serra, Tjandraatmadja, Ramalingam, "Bounding and Counting Linear Regions of
            Deep Neural Networks", arXiv 1711.02114, Theorem 1); for one hidden layer it is
            Zaslavsky's count of an arrangement in general position.
        layer_bound: the weaker layer-by-layer product ``prod_l sum_{j <= d_l} C(n_l, j)``
            with ``d_l = min(d, n_1, ..., n_{l-1})``.
        sampled_patterns: distinct activation patterns seen at ``samples`` random points
            of the domain (a lower bound up to points on a boundary, which do not occur
            with probability one).
        estimate: the Chao1 richness estimate from those samples,
            ``seen + f1^2 / (2 f2)`` (f1, f2: patterns seen once, twice), capped at
            ``upper_bound``: a rough guess, not a bound; small and far-out regions are
            rarely hit, so it tends to be low (4-12-12-1 on R^4, seed 0: 5,689 from
            100,000 points, against 13,689 regions).
        samples: the number of points drawn.
        widths, domain: the network's widths and the domain.
    """

    upper_bound: int
    layer_bound: int
    sampled_patterns: int
    estimate: float
    samples: int
    widths: tuple
    domain: Domain


def _serra_bound(widths: tuple) -> int:
    d, hidden = widths[0], widths[1:-1]
    states = {d: 1}  # dimension budget -> sum of products of binomials
    for n in hidden:
        nxt: dict[int, int] = {}
        for b, v in states.items():
            for j in range(min(b, n) + 1):
                key = min(b, n - j)
                nxt[key] = nxt.get(key, 0) + v * comb(n, j)
        states = nxt
    return sum(states.values())


def _layer_bound(widths: tuple) -> int:
    total, dim = 1, widths[0]
    for n in widths[1:-1]:
        total *= sum(comb(n, j) for j in range(min(dim, n) + 1))
        dim = min(dim, n)
    return total


def sample_domain(dom: Domain, n: int, rng: np.random.Generator) -> np.ndarray:
    d = dom.dim
    if dom.kind == "box":
        return rng.uniform(dom.lower, dom.upper, (n, d))
    X = rng.standard_normal((n, d)) * np.exp(rng.uniform(-2.0, 4.0, (n, 1)))
    return np.abs(X) if dom.kind == "orthant" else X


@renamed_keywords(samples="num_samples")
def estimate_regions(
    params: Any, domain: Any = None, *, num_samples: int = 20000, seed: Any = 0
) -> RegionEstimate:
    """How many linear regions to expect, before enumerating them.

    Args:
        params: list of ``(W, b)`` pairs.
        domain: as for :func:`regions`. Points are drawn uniformly from a box, and from
            Gaussians at scales ``e^-2 .. e^4`` on R^d and the orthant.
        num_samples: number of random points (at most 10^7).
        seed: int, None or a numpy Generator.

    Returns:
        A :class:`RegionEstimate`: a proven upper bound for the widths, the number of
        distinct patterns seen at the sampled points, and a Chao1 estimate.

    >>> W1 = np.array([[1.0, 0.0], [0.0, 1.0]]); b1 = np.zeros(2)
    >>> e = estimate_regions([(W1, b1), (np.ones((1, 2)), np.zeros(1))], num_samples=1000)
    >>> e.upper_bound, e.sampled_patterns
    (4, 4)
    """
    num_samples = check_positive_int(num_samples, "num_samples", maximum=10**7)
    rng = as_seed_rng(seed)
    net = ExactNet.from_params(params)
    dom = as_domain(domain, net.d)
    keys: Counter = Counter()
    for start in range(0, num_samples, 50000):
        X = sample_domain(dom, min(50000, num_samples - start), rng)
        H, pats = X, []
        for W, b in net.params[:-1]:
            Z = H @ W.T + b
            pats.append(Z > 0)
            H = np.maximum(Z, 0.0)
        if pats:
            P = np.packbits(np.hstack(pats), axis=1)
            keys.update(P[i].tobytes() for i in range(P.shape[0]))
        else:
            keys.update([b""] * X.shape[0])
    seen = len(keys)
    f1 = sum(1 for v in keys.values() if v == 1)
    f2 = sum(1 for v in keys.values() if v == 2)
    chao = seen + (f1 * f1 / (2.0 * f2) if f2 else f1 * (f1 - 1) / 2.0)
    upper = _serra_bound(net.widths)
    return RegionEstimate(
        upper_bound=upper,
        layer_bound=_layer_bound(net.widths),
        sampled_patterns=seen,
        estimate=float(min(chao, upper)),
        samples=num_samples,
        widths=net.widths,
        domain=dom,
    )


def warm_up() -> None:
    """Compile (or load from numba's cache) the region engine's float kernels with the
    argument types the engine passes, by enumerating the regions of a small network on
    R^3 and on a box."""
    p = ReLUNet([3, 4, 4, 1]).random_params(0)
    regions(p)
    regions(p, (-1.0, 1.0))
