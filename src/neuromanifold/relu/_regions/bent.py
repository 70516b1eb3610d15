"""Bent hyperplanes: where each neuron switches, and whether the function bends there.

Definitions (see ``docs/relu.md``): for a hidden neuron nu, a *piece* of its bent
hyperplane is a facet shared by two linear regions R (nu active) and R' (nu inactive),
lying on ``{z_nu = 0}`` and crossing the interior of the domain. The *jump* is
``linear(R) - linear(R')`` (for one hidden layer it is ``c_j a_j^T``, docs/concepts_relu.md
§2). The function *bends* on the piece (the piece is *visible*) iff the jump exceeds
``tol * scale`` in the norm ``max_o sum_k |jump[o, k]|`` (how much the slope of any output
changes per unit of ``||x||_inf``), with ``scale`` the network's path norm; with ``tol = 0``
iff the jump is not exactly zero. A neuron is visible if one of its pieces is; it is *hidden*
if it has pieces but none is visible, *dead* / *linear* if it is inactive / active on
every region.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import flint
import numpy as np

from ..._errors import ComputationLimitError, InputError, short_repr  # noqa: F401
from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol
from ...exact import fmpq_to_fraction, to_fmpq
from ...exact._library import dot
from .._bounds.parameters import path_norm_scale
from .._core.domain import Domain, as_domain
from .._engine.budget import Budget
from .._engine.cells import ExactNet, layer_maps, pow2_floats
from .regions import Regions, region_key, region_of

__all__ = ["BentPiece", "BentNeuron", "BentHyperplanes", "bent_hyperplanes"]

#: skip the LP of a neuron whose hyperplane bounds no side of the region (its piece there
#: is empty); False only in tests, which compare with the unpruned search
_PRUNE = True


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class BentPiece(Result):
    """One piece of a neuron's bent hyperplane.

    Attributes:
        region: index of the region on the active side (the neuron's pre-activation > 0).
        neighbor: index of the region across the piece (the neuron inactive); ``None``
            in a partial result when that region was not reached.
        normal, offset: the piece lies on ``{x : normal . x + offset = 0}``; on ``region``
            the neuron's pre-activation is exactly ``normal . x + offset`` (Fractions).
        point, point_exact: a point in the relative interior of the piece (the exact one
            lies on the hyperplane and is verified to satisfy the region's other
            inequalities strictly).
        margin: radius of a ball (in R^d) around the point that meets no other boundary.
        visible: whether the function bends on the piece (``jump_size > tol``; with
            ``tol = 0``, ``jump != 0`` exactly).
        jump: ``linear(region) - linear(neighbor)``, exact, shape ``(n_L, d)``.
        jump_size: ``max_o sum_k |jump[o, k]|`` relative to the network's scale (rounded).
        coincident: other neurons ``(layer, index)`` that switch on the same piece.
    """

    region: int
    neighbor: int
    normal: np.ndarray
    offset: Any
    point: np.ndarray
    point_exact: tuple
    margin: float
    visible: bool
    jump: np.ndarray
    coincident: tuple
    jump_size: float = 0.0
    #: the neighbor's activation pattern, packed (internal: resolves ``neighbor``)
    _neighbor_key: tuple = dataclasses.field(default=None, repr=False, compare=False)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class BentNeuron(Result):
    """A hidden neuron (``layer`` is 1-based like ``W_l``; ``index`` 0-based) and its pieces.

    ``status`` is ``"visible"``, ``"hidden"`` (pieces, none bends), ``"dead"`` (inactive
    on every region) or ``"linear"`` (active on every region); ``"undecided"`` only in
    the partial result of a budget (no visible piece found in the regions examined).
    """

    layer: int
    index: int
    status: str
    visible: bool
    num_pieces: int
    num_visible_pieces: int
    pieces: list = dataclasses.field(repr=False)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class BentHyperplanes(Result):
    """The bent hyperplanes of every hidden neuron on a domain.

    Attributes:
        neurons: one :class:`BentNeuron` per hidden neuron, layer by layer.
        num_visible, num_hidden: neurons with status ``"visible"`` / ``"hidden"``.
        all_visible: every hidden neuron bends the function somewhere.
        regions: the :class:`Regions` the piece indices refer to.
        num_lps: LPs solved (regions included).
        certified: each piece's existence is decided exactly (see ``Regions.certified``),
            and its visibility exactly against ``tol * scale``. False for the partial
            result of a budget.
        domain: the domain analysed.
        tol: the relative tolerance used (0.0 = exact).
        scale: the network's path norm.
        complete: every region was examined. False only for the ``partial`` result of a
            :class:`~neuromanifold.ComputationLimitError`: then the neurons with a visible
            piece found so far are ``"visible"`` and the others ``"undecided"``, and a
            piece whose neighbor region was not reached has ``neighbor=None``.
    """

    neurons: list
    num_visible: int
    num_hidden: int
    all_visible: bool
    regions: Regions = dataclasses.field(repr=False)
    num_lps: int
    certified: bool
    domain: Domain
    tol: float = 0.0
    scale: float = 0.0
    complete: bool = True

    def neuron(self, layer: int, index: int) -> BentNeuron:
        """The entry of neuron ``index`` in hidden layer ``layer`` (1-based)."""
        if any(
            isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer))
            for v in (layer, index)
        ):
            raise InputError(f"layer and index must be ints; got {short_repr((layer, index))}")
        for nu in self.neurons:
            if nu.layer == layer and nu.index == index:
                return nu
        raise InputError(
            f"no hidden neuron (layer={short_repr(layer)}, index={short_repr(index)}): layer "
            f"is 1-based in 1..{max((n.layer for n in self.neurons), default=0)} and index "
            "0-based within the layer"
        )


def _proportional_pos(a, c, b, e) -> bool:
    """Whether the row ``(a, c)`` is a positive multiple of ``(b, e)`` (exact)."""
    lam = None
    for x, y in zip(list(a) + [c], list(b) + [e]):
        if y == 0:
            if x != 0:
                return False
            continue
        q = x / y
        if lam is None:
            lam = q
        elif q != lam:
            return False
    return lam is not None and lam > 0


def bent_hyperplanes(
    params: Any,
    domain: Any = None,
    *,
    tol: Any = DEFAULT_TOL,
    progress: bool = False,
    max_regions: int | None = None,
    time_limit: float | None = None,
) -> BentHyperplanes:
    """For each hidden neuron, the pieces of its bent hyperplane and whether f bends there.

    The regions are streamed (nothing of a region but its :class:`Region` entry is kept), and
    a neuron is tested for a piece on a region only when its hyperplane is one of the
    region's bounding hyperplanes (else the piece is empty without an LP).

    Args:
        params: list of ``(W, b)`` pairs, as for :func:`regions`.
        domain: only pieces meeting the interior of this domain count (accepted forms as
            for :func:`regions`).
        tol: relative tolerance deciding visibility (see the module docs); ``0`` = exact.
        progress: a progress bar on stderr counting regions and LPs.
        max_regions: stop with a :class:`~neuromanifold.ComputationLimitError` when the
            domain has more regions than this.
        time_limit: stop with a :class:`~neuromanifold.ComputationLimitError` after this
            many seconds (the whole analysis). The error's ``partial`` is a
            :class:`BentHyperplanes` of the regions examined (``complete=False``); its
            ``num_regions``, ``num_lps`` and ``elapsed`` say how far it got.

    Returns:
        A :class:`BentHyperplanes` result; its pieces index into its ``regions``.

    >>> W1 = np.array([[1.0], [1.0]]); b1 = np.array([0.0, -1.0])
    >>> B = bent_hyperplanes([(W1, b1), (np.array([[1.0, 0.0]]), np.zeros(1))])
    >>> [(n.index, n.status) for n in B.neurons]
    [(0, 'visible'), (1, 'hidden')]
    >>> try:
    ...     bent_hyperplanes([(W1, b1), (np.array([[1.0, 0.0]]), np.zeros(1))], max_regions=2)
    ... except ComputationLimitError as err:
    ...     print(err.num_regions, [n.status for n in err.partial.neurons])
    2 ['visible', 'undecided']
    """
    # Whole: result() gives both the answer and the budget's partial, over the same dicts
    tol = check_tol(tol)
    net = ExactNet.from_params(params)
    dom = as_domain(domain, net.d)
    budget = Budget(
        "bent_hyperplanes", net.d, max_regions=max_regions, time_limit=time_limit, progress=progress
    )
    engine = budget.engine
    scale = path_norm_scale(net.params)
    thr = to_fmpq(tol * scale)
    hidden = [(l, i) for l in net.hidden_layers for i in range(net.widths[l + 1])]
    pieces: dict[tuple[int, int], list] = {nu: [] for nu in hidden}
    seen_on = {nu: False for nu in hidden}  # active on some region
    seen_off = {nu: False for nu in hidden}  # inactive on some region
    out: list = []  # Region entries
    index: dict = {}  # pattern key -> region index
    piece_lps = [0]

    def result(complete: bool) -> BentHyperplanes:
        neurons = []
        for l, i in hidden:
            ps = pieces[(l, i)]
            if not complete:
                ps = [
                    p
                    if p.neighbor is not None and p.neighbor >= 0
                    else dataclasses.replace(p, neighbor=index.get(p._neighbor_key))
                    for p in ps
                ]
            nvis = sum(p.visible for p in ps)
            if nvis:
                status = "visible"
            elif not complete:
                status = "undecided"
            elif ps:
                status = "hidden"
            elif not seen_off[(l, i)]:
                status = "linear"
            elif not seen_on[(l, i)]:
                status = "dead"
            else:  # pragma: no cover - switching without a facet is impossible
                status = "hidden"
            neurons.append(
                BentNeuron(
                    layer=l + 1,
                    index=i,
                    status=status,
                    visible=nvis > 0,
                    num_pieces=len(ps),
                    num_visible_pieces=nvis,
                    pieces=ps,
                )
            )
        R = Regions(
            regions=out,
            num_regions=len(out),
            num_lps=engine.counter.count - piece_lps[0],
            num_exact_fallbacks=engine.exact_fallbacks,
            counts=tuple(budget.counts),
            widths=net.widths,
            domain=dom,
            certified=complete,
            params=net.params,
        )
        num_vis = sum(n.status == "visible" for n in neurons)
        num_hid = sum(n.status == "hidden" for n in neurons)
        return BentHyperplanes(
            neurons=neurons,
            num_visible=num_vis,
            num_hidden=num_hid,
            all_visible=num_vis == len(neurons),
            regions=R,
            num_lps=engine.counter.count,
            certified=complete,
            domain=dom,
            tol=tol,
            scale=float(scale),
            complete=complete,
        )

    partial = lambda: result(False)  # noqa: E731
    step = 0.0
    for cell in budget.cells([net], dom, partial=partial):
        ri = len(out)
        out.append(region_of(cell, ri, net))
        pattern = cell.patterns[0]
        index[tuple(region_key(m) for m in pattern)] = ri
        for l, i in hidden:
            if pattern[l][i]:
                seen_on[(l, i)] = True
            else:
                seen_off[(l, i)] = True
        # a region's pieces are one step (a second each beside a layer of 5,000 neurons):
        # not started when the last one says it would end past the limit
        budget.check_time(partial, stage="the pieces of a region", upcoming=step)
        started = time.monotonic()
        with budget.guard(partial, "the pieces of a region"):
            _region_pieces(
                cell, ri, net, engine, pieces=pieces, thr=thr, scale=scale, piece_lps=piece_lps
            )
        step = time.monotonic() - started
    # every neighbor was enumerated: resolve the indices
    for l, i in hidden:
        for k, p in enumerate(pieces[(l, i)]):
            ni = index.get(p._neighbor_key)
            if ni is None:  # pragma: no cover - would contradict completeness
                raise RuntimeError(
                    f"internal error: the region across neuron {(l + 1, i)} at {p.point} was "
                    "not enumerated; please report this network"
                )
            pieces[(l, i)][k] = dataclasses.replace(p, neighbor=ni)
    return result(True)


def _candidate_rows(cell, d: int) -> np.ndarray:
    """Unit float copies of the region's rows ``(a, c)`` (for a first, inexact test of
    proportionality; the exact test follows)."""
    R = np.hstack([cell.rows_f, cell.offs_f[:, None]])
    n = np.linalg.norm(R, axis=1)
    return R / np.where(n > 0, n, 1.0)[:, None]


def _region_pieces(
    cell, ri: int, net, engine, *, pieces: dict, thr, scale: float, piece_lps: list
) -> None:
    """Append to ``pieces`` the pieces of every neuron active on the region ``cell`` (their
    neighbor left unresolved: ``neighbor=-1`` and the neighbor's pattern key kept)."""
    # Whole: one loop over the region's neurons; each piece's LP, pattern and jump built in turn
    d = net.d
    pattern = cell.patterns[0]
    Zs = layer_maps(net, pattern)
    units = _candidate_rows(cell, d)
    ents = [Z.entries() for Z in Zs[:-1]]

    def fn(l, i):
        e = ents[l]
        return e[i * (d + 1) : i * (d + 1) + d], e[i * (d + 1) + d]

    lin_R = Zs[-1]
    for l, i in pieces:
        if not pattern[l][i]:
            continue
        a, c = fn(l, i)
        if all(v == 0 for v in a):
            continue
        own_row, own_off = [-v for v in a], c
        # rows that may be positive multiples of the neuron's own side (floats first: a
        # positive multiple has the same unit vector up to rounding)
        own_f, _ = pow2_floats(own_row + [own_off], d)
        own_f = own_f / max(float(np.linalg.norm(own_f)), 1e-300)
        near = np.abs(units - own_f[None, :]).max(axis=1) <= 1e-6
        keep = [
            j
            for j, (row, off, ow) in enumerate(zip(cell.rows_q, cell.offs_q, cell.owners))
            if ow is None or not near[j] or not _proportional_pos(row, off, own_row, own_off)
        ]
        if _PRUNE and len(keep) == len(cell.rows_q):
            # the hyperplane bounds no side of the region: the neuron is positive on the
            # open region, so its zero set meets no relative interior of a facet
            continue
        af, _ = pow2_floats(list(a) + [c], d)  # scaled by a power of two: no underflow
        before = engine.counter.count
        res = engine.decide(
            [cell.rows_q[j] for j in keep],
            [cell.offs_q[j] for j in keep],
            cell.rows_f[keep],
            cell.offs_f[keep],
            eq=(list(a), -c, af[:d], -float(af[d])),
        )
        piece_lps[0] += engine.counter.count - before
        if res is None:
            continue
        yf, yq, margin = res
        # the pattern across the piece, layer by layer (see module docstring)
        new_pat = [m.copy() for m in pattern]
        coincident = []
        H = flint.fmpq_mat(d, d + 1, [1 if k == j else 0 for j in range(d) for k in range(d + 1)])
        for ll in net.hidden_layers:
            Z = net.Wq[ll] * H + net.Baugq[ll]
            e2 = Z.entries()
            for j in range(net.widths[ll + 1]):
                aR, cR = fn(ll, j)
                if dot(aR, yq) + cR != 0:
                    continue
                aP = e2[j * (d + 1) : j * (d + 1) + d]
                new_pat[ll][j] = bool(dot(aP, a) < 0)
                if (ll, j) != (l, i) and new_pat[ll][j] != pattern[ll][j]:
                    coincident.append((ll + 1, j))
            n = net.widths[ll + 1]
            D = flint.fmpq_mat(n, n)
            for j in range(n):
                if new_pat[ll][j]:
                    D[j, j] = 1
            H = D * Z
        if new_pat[l][i]:
            continue  # nu touches 0 here without switching
        lin_N = layer_maps(net, new_pat)[-1]
        m = lin_R.nrows()
        jump = np.empty((m, d), dtype=object)
        size = flint.fmpq(0)
        for o in range(m):
            row = flint.fmpq(0)
            for k in range(d):
                v = lin_R[o, k] - lin_N[o, k]
                row += abs(v)
                jump[o, k] = fmpq_to_fraction(v)
            size = max(size, row)
        visible = bool(size > thr)
        jump_size = (float(fmpq_to_fraction(size)) / scale) if scale > 0 else 0.0
        pieces[(l, i)].append(
            BentPiece(
                region=ri,
                neighbor=-1,
                normal=np.array([fmpq_to_fraction(v) for v in a], dtype=object),
                offset=fmpq_to_fraction(c),
                point=yf,
                point_exact=tuple(fmpq_to_fraction(v) for v in yq),
                margin=float(margin),
                visible=visible,
                jump=jump,
                coincident=tuple(coincident),
                jump_size=jump_size,
                _neighbor_key=tuple(region_key(mm) for mm in new_pat),
            )
        )
