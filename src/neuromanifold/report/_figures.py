"""Figures of what the library computes: gradient flows, NTK differences along a fiber.

Each function returns a matplotlib ``Figure`` (the caller saves or shows it);
:func:`to_png` turns one into PNG bytes for the report.
"""

from __future__ import annotations

import io as _io
from typing import Any

import numpy as np

__all__ = ["flow_figure", "ntk_difference_figure", "to_png"]


def _figure(**kwargs: Any) -> Any:
    """A matplotlib Figure not registered with pyplot: it draws with any backend (the
    library never switches the user's backend) and needs no closing."""
    from matplotlib.figure import Figure
    return Figure(**kwargs)


def to_png(fig: Any, dpi: int = 110) -> bytes:
    """The figure as PNG bytes."""
    buf = _io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def flow_figure(flow: Any, riemannian: Any = None, *, title: str = "") -> Any:
    """Three panels of a gradient flow: the loss, the drift of the invariants (which
    gradient flow conserves, docs/concepts_linear.md §2), and the end-to-end filter v(t),
    with the Riemannian flow in function space overlaid when given.

    Args:
        flow: a :class:`neuromanifold.GradientFlowResult`.
        riemannian: optionally the matching Riemannian flow result (same times).
        title: the figure's title.

    Returns:
        A matplotlib Figure.
    """
    fig = _figure(figsize=(13, 3.6))
    axes = fig.subplots(1, 3)
    t = np.asarray(flow.times)
    axes[0].semilogy(t, np.maximum(np.asarray(flow.loss), 1e-300), color="#2855c5")
    axes[0].set(title="loss (decreasing)", xlabel="t")
    inv = np.asarray(flow.invariants)
    drift = np.abs(inv - inv[:1]).max(axis=1) if inv.size else np.zeros_like(t)
    axes[1].plot(t, drift, color="#2e9e5b")
    axes[1].set(title="invariant drift |delta(t) - delta(0)|", xlabel="t")
    axes[1].ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    v = np.asarray(flow.end_to_end).reshape(len(t), -1)
    from matplotlib import colormaps
    colors = colormaps["viridis"](np.linspace(0, 0.9, v.shape[1]))
    for i in range(v.shape[1]):
        axes[2].plot(t, v[:, i], color=colors[i], lw=1.6)
    if riemannian is not None:
        tr = np.asarray(riemannian.times)
        vr = np.asarray(riemannian.end_to_end).reshape(len(tr), -1)
        for i in range(vr.shape[1]):
            axes[2].plot(tr, vr[:, i], color="k", lw=1, ls=(0, (3, 3)))
        axes[2].plot([], [], color="k", ls=(0, (3, 3)), label="Riemannian flow on M")
        axes[2].plot([], [], color=colors[0], label="parameter flow")
        axes[2].legend(loc="best", fontsize=8, frameon=False)
    axes[2].set(title="end-to-end filter v(t)", xlabel="t")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def ntk_difference_figure(net: Any, theta_a: Any, theta_b: Any, *, title: str = "") -> Any:
    """Heatmaps of the NTK at two parameters with the same end-to-end function and the
    same invariants, and of their difference (a witness of NTK dependence,
    docs/concepts_linear.md §3).

    Returns:
        A matplotlib Figure.
    """
    Ka, Kb = net.ntk(theta_a), net.ntk(theta_b)
    D = Ka - Kb
    fig = _figure(figsize=(10, 3.2))
    axes = fig.subplots(1, 3)
    lim = max(np.abs(Ka).max(), np.abs(Kb).max())
    for ax, K, name in ((axes[0], Ka, "K at theta_a"), (axes[1], Kb, "K at theta_b")):
        im = ax.imshow(K, cmap="RdBu_r", vmin=-lim, vmax=lim)
        ax.set_title(name)
        fig.colorbar(im, ax=ax, fraction=0.046)
    dl = np.abs(D).max() or 1.0
    im = axes[2].imshow(D, cmap="PuOr", vmin=-dl, vmax=dl)
    rel = np.linalg.norm(D) / max(np.linalg.norm(Ka), 1e-300)
    axes[2].set_title(f"difference (relative {rel:.2g})")
    fig.colorbar(im, ax=axes[2], fraction=0.046)
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig
