"""Pictures of a ReLU network with input dimension 2: its linear regions and its bent
hyperplanes (visible solid, hidden dashed), with matplotlib."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import ArchitectureError, InputError, short_repr
from .._tolerance import DEFAULT_TOL, check_tol, path_norm_scale
from .._validation import as_finite_array, check_bool
from ._domain import Domain, as_domain
from ._net import check_params

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


def _view_box(params, dom: Domain, bounds: Any) -> tuple[np.ndarray, np.ndarray]:
    from ._regions import regions as _regions

    if bounds is not None:
        b = as_finite_array(bounds, "bounds", error=InputError)
        if b.shape == (2,):
            b = np.array([[b[0], b[0]], [b[1], b[1]]])
        if b.shape != (2, 2) or not np.all(b[0] < b[1]):
            raise InputError(
                "bounds must be (lower, upper) with lower < upper, as scalars or 2-vectors; "
                f"got {short_repr(bounds)}")
        return b[0].astype(float), b[1].astype(float)
    if dom.kind == "box":
        return np.asarray(dom.lower, float), np.asarray(dom.upper, float)
    # unbounded domain: frame every vertex of the regions found in a large box
    big = 1e3 * (1.0 + max(float(np.max(np.abs(b))) for _, b in params))
    lo = np.array([0.0 if dom.kind == "orthant" else -big] * 2)
    hi = np.array([big, big])
    R = _regions(params, Domain.box(lo, hi))
    pts = [np.zeros(2)]
    for reg in R:
        P = _region_polygon(reg.A, reg.c, lo, hi)
        inner = P[np.all(np.abs(P) < 0.999 * big, axis=1)]
        if len(inner):
            pts.append(inner)
    pts = np.vstack(pts)
    plo, phi = pts.min(axis=0), pts.max(axis=0)
    span = max(float(np.max(phi - plo)), 1.0)
    plo, phi = plo - 0.25 * span, phi + 0.25 * span
    if dom.kind == "orthant":
        plo = np.maximum(plo, 0.0)
        phi = np.maximum(phi, plo + 1.0)
    return plo, phi


def _check_style(ax: Any, cmap: Any, alpha: Any):
    """The Axes (or None), the colormap object and alpha, checked."""
    import matplotlib
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    if ax is not None and not isinstance(ax, Axes):
        raise InputError(f"ax must be a matplotlib Axes instance (or None); got {short_repr(ax)}")
    if isinstance(cmap, matplotlib.colors.Colormap):
        colors = cmap
    elif isinstance(cmap, str):
        try:
            colors = plt.get_cmap(cmap)
        except ValueError as exc:
            raise InputError(f"cmap must be a matplotlib colormap or its name; "
                             f"got {short_repr(cmap)}") from exc
    else:
        raise InputError(f"cmap must be a matplotlib colormap or its name; got {short_repr(cmap)}")
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(
            alpha, (int, float, np.integer, np.floating)) or not 0.0 <= float(alpha) <= 1.0:
        raise InputError(f"alpha must be a number in [0, 1]; got {short_repr(alpha)}")
    return colors, float(alpha)


def plot_arrangement(params: Any, domain: Any = None, *, ax: Any = None, bounds: Any = None,
                     show_hidden: bool = True, annotate: bool = False, cmap: Any = "tab20",
                     alpha: float = 0.35, legend: bool = True, tol: Any = DEFAULT_TOL):
    """Draw the linear regions and bent hyperplanes of a network with input dimension 2.

    Regions are filled, one colour each; every hidden neuron's bent hyperplane is drawn
    piece by piece (colour by layer), solid where the network's function bends there
    (visible: the jump of the slope exceeds ``tol`` relative to the path norm, as in
    :func:`bent_hyperplanes`) and dashed where it does not (hidden).

    Args:
        params: list of ``(W, b)`` pairs with ``W_1`` of shape ``(n1, 2)``.
        domain: ``None`` (all of R^2), ``"orthant"``, a ``(lower, upper)`` box or a Domain.
        ax: matplotlib Axes to draw on (default: a new figure).
        bounds: the window ``(lower, upper)``; by default the box domain, or a window
            framing every vertex of the arrangement.
        show_hidden: also draw hidden pieces (dashed).
        annotate: write each region's activation pattern at its interior point.
        cmap, alpha: region colours (a colormap or its name; opacity in [0, 1]).
        legend: add a legend.
        tol: relative tolerance of "visible" (``0``: any non-zero jump, in floats).

    Returns:
        The matplotlib Axes (its figure is ``ax.figure``).
    """
    from ._regions import regions as _regions

    colors, alpha = _check_style(ax, cmap, alpha)
    tol = check_tol(tol)
    show_hidden = check_bool(show_hidden, "show_hidden")
    annotate = check_bool(annotate, "annotate")
    legend = check_bool(legend, "legend")
    layers = check_params(params)
    d = layers[0][0].shape[1]
    if d != 2:
        raise ArchitectureError(
            f"plot_arrangement draws networks with input dimension 2; got input dimension {d}")
    dom = as_domain(domain, 2)
    lo, hi = _view_box(layers, dom, bounds)
    if dom.kind == "box":
        lo, hi = np.maximum(lo, dom.lower), np.minimum(hi, dom.upper)
    elif dom.kind == "orthant":
        lo = np.maximum(lo, 0.0)
    if not np.all(lo < hi):
        raise InputError(f"the window {lo}..{hi} does not meet the domain")
    window = Domain.box(lo, hi)
    R = _regions(layers, window)
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Polygon

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 6))
    thr = tol * path_norm_scale(layers)
    scale = float(np.max(np.abs(np.concatenate([lo, hi])))) + 1.0
    drawn: set = set()
    layers_seen: set = set()
    any_hidden = False
    for i, reg in enumerate(R):
        poly = _region_polygon(reg.A, reg.c, lo, hi)
        if len(poly) < 3:
            continue
        ax.add_patch(Polygon(poly, closed=True, facecolor=colors(i % colors.N), alpha=alpha,
                             edgecolor="none"))
        if annotate:
            key = "|".join("".join("1" if v else "0" for v in p) for p in reg.pattern)
            ax.annotate(key, reg.point, fontsize=7, ha="center", va="center")
        pre = _preacts(layers, reg.pattern)
        out_here = _output_map(layers, reg.pattern)
        for l, Z in enumerate(pre):
            for j in range(Z.shape[0]):
                if not reg.pattern[l][j]:
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
                if key in drawn:
                    continue
                drawn.add(key)
                flipped = [np.array(p, dtype=bool) for p in reg.pattern]
                flipped[l][j] = False
                jump = _output_map(layers, flipped)[:, :2] - out_here[:, :2]
                visible = bool(np.max(np.abs(jump).sum(axis=1)) > thr)
                if not visible:
                    any_hidden = True
                    if not show_hidden:
                        continue
                layers_seen.add(l)
                ax.plot([p0[0], p1[0]], [p0[1], p1[1]],
                        color=_LAYER_COLORS[l % len(_LAYER_COLORS)],
                        linestyle="-" if visible else "--", linewidth=2.0 if visible else 1.4)
    if dom.kind == "orthant":
        ax.plot([lo[0], hi[0]], [0.0, 0.0], color="0.4", linewidth=0.8)
        ax.plot([0.0, 0.0], [lo[1], hi[1]], color="0.4", linewidth=0.8)
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    widths = (2,) + tuple(W.shape[0] for W, _ in layers)
    ax.set_title(f"widths {widths}: {len(R)} regions in the window")
    if legend:
        handles = [Line2D([], [], color=_LAYER_COLORS[l % len(_LAYER_COLORS)], linewidth=2,
                          label=f"layer {l + 1} (visible)") for l in sorted(layers_seen)]
        if any_hidden and show_hidden:
            handles.append(Line2D([], [], color="gray", linestyle="--", label="hidden"))
        if handles:
            ax.legend(handles=handles, loc="best", fontsize=8)
    return ax
