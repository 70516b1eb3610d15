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
from typing import Any

import flint
import numpy as np

from .._errors import InputError, short_repr
from .._results import Result
from .._tolerance import DEFAULT_TOL, check_tol, path_norm_scale
from ..exact._lp import dot
from ..exact._rational import fmpq_to_fraction, to_fmpq
from ._domain import Domain
from ._engine import layer_maps, pow2_floats, progress_iter
from ._regions import Regions, _compute, _key

__all__ = ["BentPiece", "BentNeuron", "BentHyperplanes", "bent_hyperplanes"]


@dataclasses.dataclass(frozen=True, repr=False)
class BentPiece(Result):
    """One piece of a neuron's bent hyperplane.

    Attributes:
        region: index of the region on the active side (the neuron's pre-activation > 0).
        neighbor: index of the region across the piece (the neuron inactive).
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


@dataclasses.dataclass(frozen=True, repr=False)
class BentNeuron(Result):
    """A hidden neuron (``layer`` is 1-based like ``W_l``; ``index`` 0-based) and its pieces.

    ``status`` is ``"visible"``, ``"hidden"`` (pieces, none bends), ``"dead"`` (inactive
    on every region) or ``"linear"`` (active on every region).
    """

    layer: int
    index: int
    status: str
    visible: bool
    num_pieces: int
    num_visible_pieces: int
    pieces: list = dataclasses.field(repr=False)


@dataclasses.dataclass(frozen=True, repr=False)
class BentHyperplanes(Result):
    """The bent hyperplanes of every hidden neuron on a domain.

    Attributes:
        neurons: one :class:`BentNeuron` per hidden neuron, layer by layer.
        num_visible, num_hidden: neurons with status ``"visible"`` / ``"hidden"``.
        all_visible: every hidden neuron bends the function somewhere.
        regions: the :class:`Regions` the piece indices refer to.
        num_lps: LPs solved (regions included).
        certified: each piece's existence is decided exactly (see ``Regions.certified``),
            and its visibility exactly against ``tol * scale``.
        domain: the domain analysed.
        tol: the relative tolerance used (0.0 = exact).
        scale: the network's path norm.
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

    def neuron(self, layer: int, index: int) -> BentNeuron:
        """The entry of neuron ``index`` in hidden layer ``layer`` (1-based)."""
        if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer))
               for v in (layer, index)):
            raise InputError(f"layer and index must be ints; got {short_repr((layer, index))}")
        for nu in self.neurons:
            if nu.layer == layer and nu.index == index:
                return nu
        raise InputError(
            f"no hidden neuron (layer={short_repr(layer)}, index={short_repr(index)}): layer "
            f"is 1-based in 1..{max((n.layer for n in self.neurons), default=0)} and index "
            "0-based within the layer")


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


def bent_hyperplanes(params: Any, domain: Any = None, *, tol: Any = DEFAULT_TOL,
                     progress: bool = False) -> BentHyperplanes:
    """For each hidden neuron, the pieces of its bent hyperplane and whether f bends there.

    Args:
        params: list of ``(W, b)`` pairs, as for :func:`regions`.
        domain: only pieces meeting the interior of this domain count (accepted forms as
            for :func:`regions`).
        tol: relative tolerance deciding visibility (see the module docs); ``0`` = exact.
        progress: progress bars on stderr (regions, then pieces).

    Returns:
        A :class:`BentHyperplanes` result; its pieces index into its ``regions``.

    >>> W1 = np.array([[1.0], [1.0]]); b1 = np.array([0.0, -1.0])
    >>> B = bent_hyperplanes([(W1, b1), (np.array([[1.0, 0.0]]), np.zeros(1))])
    >>> [(n.index, n.status) for n in B.neurons]
    [(0, 'visible'), (1, 'hidden')]
    """
    tol = check_tol(tol)
    R, cells, net, engine = _compute(params, domain, progress)
    d = net.d
    scale = path_norm_scale(net.params)
    thr = to_fmpq(tol * scale)
    index = {tuple(_key(m) for m in cell.patterns[0]): i for i, cell in enumerate(cells)}
    hidden = [(l, i) for l in net.hidden_layers for i in range(net.widths[l + 1])]
    pieces: dict[tuple[int, int], list] = {nu: [] for nu in hidden}
    for ri, cell in enumerate(progress_iter(cells, progress, "bent hyperplanes", "region")):
        Zs = layer_maps(net, cell.patterns[0])
        ents = [Z.entries() for Z in Zs[:-1]]

        def fn(l, i):
            e = ents[l]
            return e[i * (d + 1): i * (d + 1) + d], e[i * (d + 1) + d]

        lin_R = Zs[-1]
        for l, i in hidden:
            if not cell.patterns[0][l][i]:
                continue
            a, c = fn(l, i)
            if all(v == 0 for v in a):
                continue
            own_row, own_off = [-v for v in a], c
            keep = [j for j, (row, off, ow) in enumerate(zip(cell.rows_q, cell.offs_q, cell.owners))
                    if ow is None or not _proportional_pos(row, off, own_row, own_off)]
            af, _ = pow2_floats(list(a) + [c], d)  # scaled by a power of two: no underflow
            res = engine.decide([cell.rows_q[j] for j in keep], [cell.offs_q[j] for j in keep],
                                cell.rows_f[keep], cell.offs_f[keep],
                                eq=(list(a), -c, af[:d], -float(af[d])))
            if res is None:
                continue
            yf, yq, margin = res
            # the pattern across the piece, layer by layer (see module docstring)
            new_pat = [m.copy() for m in cell.patterns[0]]
            coincident = []
            H = flint.fmpq_mat(d, d + 1, [1 if k == j else 0 for j in range(d) for k in range(d + 1)])
            for ll in net.hidden_layers:
                Z = net.Wq[ll] * H + net.Baugq[ll]
                e2 = Z.entries()
                for j in range(net.widths[ll + 1]):
                    aR, cR = fn(ll, j)
                    if dot(aR, yq) + cR != 0:
                        continue
                    aP = e2[j * (d + 1): j * (d + 1) + d]
                    new_pat[ll][j] = bool(dot(aP, a) < 0)
                    if (ll, j) != (l, i) and new_pat[ll][j] != cell.patterns[0][ll][j]:
                        coincident.append((ll + 1, j))
                n = net.widths[ll + 1]
                D = flint.fmpq_mat(n, n)
                for j in range(n):
                    if new_pat[ll][j]:
                        D[j, j] = 1
                H = D * Z
            if new_pat[l][i]:
                continue  # nu touches 0 here without switching
            key = tuple(_key(m) for m in new_pat)
            if key not in index:  # pragma: no cover - would contradict completeness
                raise RuntimeError(
                    f"internal error: the region across neuron {(l + 1, i)} at {yf} was not "
                    "enumerated; please report this network")
            ni = index[key]
            lin_N = layer_maps(net, cells[ni].patterns[0])[-1]
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
            pieces[(l, i)].append(BentPiece(
                region=ri, neighbor=ni,
                normal=np.array([fmpq_to_fraction(v) for v in a], dtype=object),
                offset=fmpq_to_fraction(c), point=yf,
                point_exact=tuple(fmpq_to_fraction(v) for v in yq), margin=float(margin),
                visible=visible, jump=jump, coincident=tuple(coincident),
                jump_size=jump_size))
    neurons = []
    for l, i in hidden:
        ps = pieces[(l, i)]
        nvis = sum(p.visible for p in ps)
        if nvis:
            status = "visible"
        elif ps:
            status = "hidden"
        elif all(cell.patterns[0][l][i] for cell in cells):
            status = "linear"
        elif not any(cell.patterns[0][l][i] for cell in cells):
            status = "dead"
        else:  # pragma: no cover - switching without a facet is impossible
            status = "hidden"
        neurons.append(BentNeuron(l + 1, i, status, nvis > 0, len(ps), nvis, ps))
    num_vis = sum(n.status == "visible" for n in neurons)
    num_hid = sum(n.status == "hidden" for n in neurons)
    return BentHyperplanes(neurons, num_vis, num_hid, num_vis == len(neurons), R,
                           engine.counter.count, True, R.domain, tol, float(scale))
