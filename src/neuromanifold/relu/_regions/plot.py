"""Pictures of a ReLU network with input dimension 2: its linear regions and its bent
hyperplanes (visible solid, hidden dashed), with matplotlib."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from ..._errors import ArchitectureError, InputError, short_repr
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import as_finite_array, check_bool
from .._bounds.parameters import path_norm_scale
from .._core.domain import Domain, as_domain
from .._core.net import check_params
from .._engine.budget import check_budget
from .regions import regions as _regions

__all__ = ["plot_arrangement"]

_LAYER_COLORS = ["black", "tab:red", "tab:blue", "tab:green", "tab:purple", "tab:brown"]


def _clip(poly: np.ndarray, a: np.ndarray, c: float) -> np.ndarray:
    """Sutherland-Hodgman: the convex polygon ``poly`` (k, 2) cut by ``a . x <= c``."""
    if len(poly) == 0:
        return poly
    out = []
    vals = poly @ a - c
    for i in range(len(poly)):
        p, q = poly[i], poly[(i + 1) % len(poly)]
        vp, vq = vals[i], vals[(i + 1) % len(poly)]
        if vp <= 0:
            out.append(p)
        if (vp < 0 < vq) or (vq < 0 < vp):
            t = vp / (vp - vq)
            out.append(p + t * (q - p))
    return np.array(out).reshape(-1, 2)


def _region_polygon(A: np.ndarray, c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    poly = np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]], float)
    for a, cc in zip(A, c):
        if np.linalg.norm(a) == 0:
            continue
        poly = _clip(poly, np.asarray(a, float), float(cc))
    return poly


def _preacts(params, pattern):
    """Float ``(alpha, beta)`` of every hidden neuron on a region with ``pattern``."""
    d = params[0][0].shape[1]
    H = np.hstack([np.eye(d), np.zeros((d, 1))])
    out = []
    for (W, b), mask in zip(params[:-1], pattern):
        Z = W @ H
        Z[:, d] += b
        out.append(Z)
        H = Z * np.asarray(mask, dtype=bool)[:, None]
    return out


def _output_map(params, pattern) -> np.ndarray:
    d = params[0][0].shape[1]
    H = np.hstack([np.eye(d), np.zeros((d, 1))])
    for l, (W, b) in enumerate(params):
        Z = W @ H
        Z[:, d] += b
        H = Z if l == len(params) - 1 else Z * np.asarray(pattern[l], dtype=bool)[:, None]
    return H


def _check_window(window: Any) -> tuple[np.ndarray, np.ndarray]:
    b = as_finite_array(window, "window", error=InputError)
    if b.shape == (2,):
        b = np.array([[b[0], b[0]], [b[1], b[1]]])
    if b.shape != (2, 2) or not np.all(b[0] < b[1]):
        raise InputError(
            "window (bounds) must be (lower, upper) with lower < upper, as scalars or "
            f"2-vectors; got {short_repr(window)}"
        )
    return b[0].astype(float), b[1].astype(float)


def _vertices(params, dom: Domain, budget: dict | None = None) -> tuple[np.ndarray, int]:
    """The vertices of the arrangement in the domain (corners of the linear regions:
    where bent hyperplanes cross or bend, or meet the domain's boundary) and the number
    of regions. Each region is ``{A x <= c}``; its corners are the points where two of
    its constraint lines meet and every constraint holds."""

    R = _regions(params, dom, **_left(budget))
    pts = []
    for reg in R:
        A, c = np.asarray(reg.A, float), np.asarray(reg.c, float)
        norms = np.linalg.norm(A, axis=1)
        keep = norms > 0
        A, c = A[keep] / norms[keep, None], c[keep] / norms[keep]
        i, j = np.triu_indices(len(A), 1)
        det = A[i, 0] * A[j, 1] - A[i, 1] * A[j, 0]
        ok = np.abs(det) >= 1e-12
        i, j, det = i[ok], j[ok], det[ok]
        # the corner of lines i and j (Cramer's rule), kept when every constraint holds
        X = np.column_stack(
            [(c[i] * A[j, 1] - c[j] * A[i, 1]) / det, (A[i, 0] * c[j] - A[j, 0] * c[i]) / det]
        )
        slack = 1e-9 * (1.0 + np.abs(c)[None, :] + np.abs(X).max(axis=1)[:, None])
        inside = np.all(X @ A.T <= c[None, :] + slack, axis=1)
        if inside.any():
            pts.append(X[inside])
    if not pts:
        return np.zeros((0, 2)), R.num_regions
    V = np.vstack(pts)
    V = V[np.all(np.isfinite(V), axis=1)]
    scale = 1e-9 * (1.0 + np.abs(V).max())
    return np.unique(np.round(V / scale) * scale, axis=0), R.num_regions


def _left(budget: dict | None) -> dict:
    """The keywords ``max_regions``/``time_limit`` for the next enumeration of a plot with
    budget ``{"max_regions", "end"}`` (``end``: a ``time.monotonic()`` deadline or None)."""
    if budget is None:
        return {}

    left = None if budget["end"] is None else max(budget["end"] - time.monotonic(), 1e-3)
    return {"max_regions": budget["max_regions"], "time_limit": left}


def _default_window(
    params, dom: Domain, budget: dict | None = None
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The default window: where the bent hyperplanes cross, and the origin.

    The candidates are the arrangement's vertices, the origin and the foot of every
    first-layer hyperplane (its point nearest the origin, so that a network without
    crossings still shows its lines). Far outliers (a crossing of two nearly parallel
    hyperplanes) would shrink everything else to a dot: when there are a dozen
    candidates or more, those beyond a gap (more than twice as far from the median
    candidate as every closer one) are left out, keeping at least three quarters. The window frames
    the rest with a margin, no side shorter than 0.6 of the other.

    Returns:
        ``(lower, upper, vertices outside the window, regions of the whole domain)``.
    """
    V, total = _vertices(params, dom, budget)
    W1, b1 = params[0]
    # each row divided by its largest entry first: the foot is the same, and no square
    # of a weight near the float range overflows
    peak = np.maximum(np.max(np.abs(np.hstack([W1, b1[:, None]])), axis=1), 1e-300)
    W1, b1 = W1 / peak[:, None], b1 / peak
    feet = -(b1[:, None] * W1) / np.maximum((W1**2).sum(axis=1), 1e-300)[:, None]
    if dom.kind == "orthant":
        feet = np.maximum(feet, 0.0)
    P = np.vstack([V, np.zeros((1, 2)), feet])
    center = np.median(P, axis=0)
    dist = np.abs(P - center).max(axis=1)
    order = np.sort(dist)
    cut = order[-1]
    first = int(np.ceil(0.75 * len(order))) - 1 if len(order) >= 12 else len(order)
    for k in range(first, len(order) - 1):
        if order[k] > 0 and order[k + 1] > 2.0 * order[k]:
            cut = order[k]  # a gap: everything beyond is 2x farther than what is kept
            break
    keep = P[dist <= cut]
    plo, phi = keep.min(axis=0), keep.max(axis=0)
    mid, half = (plo + phi) / 2, (phi - plo) / 2
    longest = float(half.max())
    half = np.maximum(half, 0.6 * longest) if longest > 0 else np.ones(2)
    half = 1.2 * half + 0.05 * longest
    lo, hi = mid - half, mid + half
    if dom.kind == "orthant":
        lo = np.maximum(lo, 0.0)
    outside = int(np.sum(np.any((V < lo) | (V > hi), axis=1)))
    return lo, hi, outside, total


def _chebyshev(poly: np.ndarray) -> tuple[np.ndarray, float]:
    """Center and radius of the largest disc inside a convex polygon (counterclockwise)."""
    from scipy.optimize import linprog  # start-up: a slow import

    edges = np.roll(poly, -1, axis=0) - poly
    normals = np.column_stack([edges[:, 1], -edges[:, 0]])
    norms = np.linalg.norm(normals, axis=1)
    ok = norms > 0
    n, p = normals[ok] / norms[ok, None], poly[ok]
    res = linprog(
        [0.0, 0.0, -1.0],
        A_ub=np.column_stack([n, np.ones(len(n))]),
        b_ub=(n * p).sum(axis=1),
        bounds=[(None, None)] * 2 + [(0, None)],
        method="highs",
    )
    if res.status != 0:
        return poly.mean(axis=0), 0.0
    return res.x[:2], float(res.x[2])


def _check_style(ax: Any, cmap: Any, alpha: Any):
    """The Axes (or None), the colormap object and alpha, checked."""
    import matplotlib  # start-up: a slow import
    import matplotlib.pyplot as plt  # start-up: a slow import
    from matplotlib.axes import Axes  # start-up: a slow import

    if ax is not None and not isinstance(ax, Axes):
        raise InputError(f"ax must be a matplotlib Axes instance (or None); got {short_repr(ax)}")
    if isinstance(cmap, matplotlib.colors.Colormap):
        colors = cmap
    elif isinstance(cmap, str):
        try:
            colors = plt.get_cmap(cmap)
        except ValueError as exc:
            raise InputError(
                f"cmap must be a matplotlib colormap or its name; got {short_repr(cmap)}"
            ) from exc
    else:
        raise InputError(f"cmap must be a matplotlib colormap or its name; got {short_repr(cmap)}")
    if (
        isinstance(alpha, (bool, np.bool_))
        or not isinstance(alpha, (int, float, np.integer, np.floating))
        or not 0.0 <= float(alpha) <= 1.0
    ):
        raise InputError(f"alpha must be a number in [0, 1]; got {short_repr(alpha)}")
    return colors, float(alpha)


def plot_arrangement(
    params: Any,
    domain: Any = None,
    *,
    ax: Any = None,
    window: Any = None,
    show_hidden: bool = True,
    annotate: bool = False,
    cmap: Any = "tab20",
    alpha: float = 0.35,
    legend: bool = True,
    tol: Any = DEFAULT_TOL,
    color_by: str = "region",
    bounds: Any = None,
    max_regions: int | None = None,
    time_limit: float | None = None,
):
    """Draw the linear regions and bent hyperplanes of a network with input dimension 2.

    Regions are filled, one colour each; every hidden neuron's bent hyperplane is drawn
    piece by piece (colour by layer), solid where the network's function bends there
    (visible: the jump of the slope exceeds ``tol`` relative to the path norm, as in
    :func:`bent_hyperplanes`) and dashed where it does not (hidden).

    The default window is the box domain, or else the part of the plane where the bent
    hyperplanes cross: it frames the vertices of the arrangement and the origin with a
    margin, leaving out far outliers (the crossing of two nearly parallel hyperplanes)
    that would shrink the rest to a dot; the title then says how many regions the window
    shows out of all of them.

    Args:
        params: list of ``(W, b)`` pairs with ``W_1`` of shape ``(n1, 2)``.
        domain: ``None`` (all of R^2), ``"orthant"``, a ``(lower, upper)`` box or a Domain.
        ax: matplotlib Axes to draw on (default: a new pyplot figure).
        window: the window ``(lower, upper)`` (scalars or 2-vectors), overriding the
            default; it is intersected with the domain.
        show_hidden: also draw hidden pieces (dashed).
        annotate: write each region's activation pattern (layers separated by ``|``) at
            the center of the largest disc inside the region's visible part, for the
            regions large enough on screen to hold it.
        cmap, alpha: region colours (a colormap or its name; opacity in [0, 1]).
        legend: add a legend (below the axes).
        tol: relative tolerance of "visible" (``0``: any non-zero jump, in floats).
        color_by: ``"region"`` (one colour per region, in enumeration order) or
            ``"map"`` (the colour is a function of the region's affine map, its
            coefficients rounded to 6 decimals: regions on which the network computes the
            same map share a colour, also across pictures of equivalent networks;
            different maps may share one of the colormap's colours).
        bounds: the former name of ``window``.
        max_regions, time_limit: the budget of the region enumerations (see
            :func:`regions`; the time limit counts for the whole call): reaching it
            raises a :class:`~neuromanifold.ComputationLimitError`.

    Returns:
        The matplotlib Axes (its figure is ``ax.figure``).

    >>> from matplotlib.figure import Figure
    >>> p = [(np.eye(2), np.array([0.0, -1.0])), (np.ones((1, 2)), np.zeros(1))]
    >>> ax = plot_arrangement(p, ax=Figure().subplots())
    >>> ax.get_title()
    'widths (2, 2, 1): 4 regions in the window'
    >>> [float(x) for x in plot_arrangement(p, ax=Figure().subplots(), window=(-1, 3)).get_xlim()]
    [-1.0, 3.0]
    """
    # Whole: check the options, draw region by region, then the title: a figure's steps in order
    max_regions, time_limit = check_budget(max_regions, time_limit)
    budget = {
        "max_regions": max_regions,
        "end": None if time_limit is None else time.monotonic() + time_limit,
    }
    colors, alpha = _check_style(ax, cmap, alpha)
    tol = check_tol(tol)
    show_hidden = check_bool(show_hidden, "show_hidden")
    annotate = check_bool(annotate, "annotate")
    legend = check_bool(legend, "legend")
    if color_by not in ("region", "map"):
        raise InputError(f"color_by must be 'region' or 'map'; got {short_repr(color_by)}")
    layers = check_params(params)
    d = layers[0][0].shape[1]
    if d != 2:
        raise ArchitectureError(
            f"plot_arrangement draws networks with input dimension 2; got input dimension {d}"
        )
    if window is not None and bounds is not None:
        raise InputError("give the window once: window= (bounds= is its former name)")
    dom = as_domain(domain, 2)
    lo, hi, outside, total = _window(layers, dom, bounds if window is None else window, budget)
    R = _regions(layers, Domain.box(lo, hi), **_left(budget))
    if ax is None:
        import matplotlib.pyplot as plt  # start-up: a slow import

        _, ax = plt.subplots(figsize=(6, 6))
    pen = _Pen(
        ax=ax,
        layers=layers,
        lo=lo,
        hi=hi,
        thr=tol * path_norm_scale(layers),
        scale=float(np.max(np.abs(np.concatenate([lo, hi])))) + 1.0,
        show_hidden=show_hidden,
    )
    labels = []
    for i, reg in enumerate(R):
        poly = _region_polygon(reg.A, reg.c, lo, hi)
        if len(poly) < 3:
            continue
        if color_by == "map":
            coeffs = np.round(_output_map(layers, reg.pattern).ravel(), 6) + 0.0
            index = hash(tuple(coeffs.tolist())) % colors.N
        else:
            index = i % colors.N
        pen.fill(poly, colors(index), alpha)
        if annotate:
            key = "|".join("".join("1" if v else "0" for v in p) for p in reg.pattern)
            labels.append((key, poly))
        pen.draw_kinks(reg.pattern, poly)
    if dom.kind == "orthant":
        ax.plot([lo[0], hi[0]], [0.0, 0.0], color="0.4", linewidth=0.8)
        ax.plot([0.0, 0.0], [lo[1], hi[1]], color="0.4", linewidth=0.8)
    _frame(ax, lo, hi, labels)
    widths = (2,) + tuple(W.shape[0] for W, _ in layers)
    shown = len(R)
    if total is not None and shown < total:
        title = f"widths {widths}: {shown} of {total} regions in the window"
        if outside:
            title += f"\n({outside} crossing{'s' if outside > 1 else ''} farther out)"
    else:
        title = f"widths {widths}: {shown} regions in the window"
    ax.set_title(title, fontsize=10)
    if legend:
        pen.legend()
    return ax


def _window(layers: list, dom: Domain, window: Any, budget: dict) -> tuple:
    """``(lo, hi, outside, total)``: the window asked for, the box, or the default one
    (:func:`_default_window`), cut to the domain."""
    outside, total = 0, None
    if window is not None:
        lo, hi = _check_window(window)
    elif dom.kind == "box":
        lo, hi = np.asarray(dom.lower, float), np.asarray(dom.upper, float)
    else:
        lo, hi, outside, total = _default_window(layers, dom, budget)
    if dom.kind == "box":
        lo, hi = np.maximum(lo, dom.lower), np.minimum(hi, dom.upper)
    if not np.all(lo < hi):
        raise InputError(f"the window {lo}..{hi} does not meet the domain")
    if dom.kind == "orthant":
        lo = np.maximum(lo, 0.0)
        if not np.all(lo < hi):
            raise InputError(f"the window {lo}..{hi} does not meet the orthant")
    return lo, hi, outside, total


def _frame(ax: Any, lo: np.ndarray, hi: np.ndarray, labels: list) -> None:
    """Limits, aspect, axis labels and the regions' pattern labels."""
    ax.set_xlim(float(lo[0]), float(hi[0]))
    ax.set_ylim(float(lo[1]), float(hi[1]))
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    _write_labels(ax, labels, lo, hi)


@dataclasses.dataclass
class _Pen:
    """What draws the regions and the pieces of the bent hyperplanes, and remembers what
    it drew (each piece once, the layers seen, whether a hidden piece appeared)."""

    ax: Any
    layers: list
    lo: np.ndarray
    hi: np.ndarray
    thr: float
    scale: float
    show_hidden: bool
    drawn: set = dataclasses.field(default_factory=set)
    layers_seen: set = dataclasses.field(default_factory=set)
    any_hidden: bool = False

    def fill(self, poly: np.ndarray, color: Any, alpha: float) -> None:
        from matplotlib.patches import Polygon  # start-up: a slow import

        self.ax.add_patch(
            Polygon(poly, closed=True, facecolor=color, alpha=alpha, edgecolor="none")
        )

    def draw_kinks(self, pattern: tuple, poly: np.ndarray) -> None:
        """The pieces of the bent hyperplanes on the boundary of one region, solid where
        the function bends there, dashed where it does not."""
        layers, scale = self.layers, self.scale
        out_here = _output_map(layers, pattern)
        for l, Z in enumerate(_preacts(layers, pattern)):
            for j in range(Z.shape[0]):
                if not pattern[l][j]:
                    continue  # draw each piece once, from the side where the neuron is active
                alpha_, beta = Z[j, :2], Z[j, 2]
                nrm = float(np.linalg.norm(alpha_))
                if nrm == 0:
                    continue
                vals = (poly @ alpha_ + beta) / nrm
                on = poly[np.abs(vals) <= 1e-9 * scale]
                if len(on) < 2:
                    continue
                direction = np.array([-alpha_[1], alpha_[0]]) / nrm
                t = on @ direction
                p0, p1 = on[np.argmin(t)], on[np.argmax(t)]
                if np.linalg.norm(p1 - p0) <= 1e-9 * scale:
                    continue
                key = (l, j, tuple(np.round(np.concatenate([p0, p1]), 9)))
                if key in self.drawn:
                    continue
                self.drawn.add(key)
                flipped = [np.array(p, dtype=bool) for p in pattern]
                flipped[l][j] = False
                jump = _output_map(layers, flipped)[:, :2] - out_here[:, :2]
                visible = bool(np.max(np.abs(jump).sum(axis=1)) > self.thr)
                if not visible:
                    self.any_hidden = True
                    if not self.show_hidden:
                        continue
                self.layers_seen.add(l)
                self.ax.plot(
                    [p0[0], p1[0]],
                    [p0[1], p1[1]],
                    color=_LAYER_COLORS[l % len(_LAYER_COLORS)],
                    linestyle="-" if visible else "--",
                    linewidth=2.0 if visible else 1.4,
                )

    def legend(self) -> None:
        """One entry per layer drawn, and one for hidden pieces (below the axes)."""
        from matplotlib.lines import Line2D  # start-up: a slow import

        handles = [
            Line2D(
                [],
                [],
                color=_LAYER_COLORS[l % len(_LAYER_COLORS)],
                linewidth=2,
                label=f"layer {l + 1}",
            )
            for l in sorted(self.layers_seen)
        ]
        if self.any_hidden and self.show_hidden:
            handles.append(Line2D([], [], color="gray", linestyle="--", label="hidden (no bend)"))
        if handles:
            self.ax.legend(
                handles=handles,
                loc="upper center",
                bbox_to_anchor=(0.5, -0.17),
                ncol=len(handles),
                fontsize=8,
                frameon=False,
                handlelength=2.2,
            )


def _write_labels(ax: Any, labels: list, lo: np.ndarray, hi: np.ndarray) -> None:
    """Each label at the center of the largest disc inside its polygon, when that disc
    holds the text on screen (estimated from the axes' size), else no label."""
    if not labels:
        return
    fig = ax.figure
    box = ax.get_position()
    width_in = max(box.width * fig.get_figwidth(), 1e-3)
    height_in = max(box.height * fig.get_figheight(), 1e-3)
    span = hi - lo
    # with equal aspect, one data unit is the smaller of the two scales
    inch_per_unit = min(width_in / span[0], height_in / span[1])
    size = 7.0
    for key, poly in labels:
        center, radius = _chebyshev(poly)
        text_half_width = 0.5 * len(key) * 0.6 * size / 72.0  # inches
        text_half_height = 0.5 * size / 72.0 * 1.4
        if radius * inch_per_unit < np.hypot(text_half_width, text_half_height):
            continue
        ax.annotate(
            key, center, fontsize=size, ha="center", va="center", color="0.1", family="monospace"
        )
