"""Figures of what the library computes: gradient flows, NTK differences along a fiber,
the fiber of a linear convolutional network, and a hiding translation of a ReLU network.

Each function returns a matplotlib ``Figure`` (the caller saves or shows it);
:func:`to_png` turns one into PNG bytes for the report.
"""

from __future__ import annotations

import io as _io
from typing import Any

import numpy as np

from .._errors import ArchitectureError, InputError
from .._validation import check_positive_int
from ..linear import LinearConvNet
from ..relu import forward, identifiability, plot_arrangement
from ..relu.symmetries import HidingTranslation

__all__ = [
    "flow_figure",
    "ntk_difference_figure",
    "fiber_figure",
    "hiding_translation_figure",
    "hiding_family",
    "to_png",
]

_BRANCH_COLORS = [
    "#2855c5",
    "#d2433a",
    "#2e9e5b",
    "#c9a227",
    "#8e44ad",
    "#17a2b8",
    "#e67e22",
    "#555555",
]


def new_figure(**kwargs: Any) -> Any:
    """A matplotlib Figure not registered with pyplot: it draws with any backend (the
    library never switches the user's backend) and needs no closing."""
    from matplotlib.figure import Figure  # start-up: a slow import

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
    fig = new_figure(figsize=(13, 3.6))
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
    from matplotlib import colormaps  # start-up: a slow import

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
    fig = new_figure(figsize=(10, 3.2))
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


def fiber_figure(net: Any, params: Any, *, title: str = "") -> Any:
    """The fiber of ``v = mu(params)`` of a two-layer linear convolutional network, and
    where the invariant cuts it (docs/concepts_linear.md §2).

    Every parameter with end-to-end filter ``v`` is ``(c u_1, u_2 / c)`` for one of
    finitely many factorizations ``(u_1, u_2)`` of ``v`` (branches: the ways of sharing
    the roots of ``pi(v)`` between the layers) and a scale ``c != 0``. So in the plane of
    the first filter's first two entries, each branch is a line through the origin, and
    the origin splits it into two sign components (``c > 0``, ``c < 0``). Along a branch
    the invariant ``delta = ||w_2||^2 - ||w_1||^2`` falls from ``+inf`` to ``-inf`` as
    ``||w_1||`` grows: it takes the value ``delta(params)`` exactly once per sign
    component (the rescaling lemma), at the points that :meth:`LinearConvNet.fiber`
    returns.

    Panels: (1) first filter ``w_1`` (entries 0 and 1), (2) second filter ``w_2``
    (entries 0 and 1), each with the branches (lines), the points with the invariant of
    ``params`` (dots, ``params`` itself a star); (3) ``delta`` against ``||w_1||`` along
    each branch, with the level ``delta(params)``. The legend gives the relative
    difference of each point's NTK from the NTK at ``params``.

    Args:
        net: a :class:`~neuromanifold.LinearConvNet` with two layers whose filters have
            at least two entries.
        params: its parameters ``[w_1, w_2]``.
        title: the figure's title.

    Returns:
        A matplotlib Figure.

    >>> from neuromanifold import LinearConvNet
    >>> net = LinearConvNet([2, 2])
    >>> fig = fiber_figure(net, [np.array([1.0, -1.0]), np.array([1.0, -2.0])])
    >>> [ax.get_title() for ax in fig.axes]
    ['first filter w₁', 'second filter w₂', 'invariant along each branch']
    """
    # Whole: one figure drawn panel by panel; its axes, branch colours and norms are shared

    if (
        not isinstance(net, LinearConvNet)
        or net.num_layers != 2
        or any(int(np.prod(k)) < 2 for k in net.filter_shapes)
    ):
        raise ArchitectureError(
            f"fiber_figure draws two-layer linear convolutional networks whose filters have "
            f"at least two entries; got {net!r}"
        )
    params = net.check_params(params)
    v, delta = net.end_to_end(params), net.invariants(params)
    fib = net.fiber(v, delta)
    K0 = net.ntk(params)
    fig = new_figure(figsize=(13, 4.8))
    axes = fig.subplots(1, 3)
    w1_0, w2_0 = (np.ravel(w) for w in params)
    big, norms = 0.0, []
    for k, point in enumerate(fib.points):
        color = _BRANCH_COLORS[k % len(_BRANCH_COLORS)]
        w1, w2 = (np.ravel(w) for w in point)
        rel = float(np.linalg.norm(net.ntk(point) - K0) / max(np.linalg.norm(K0), 1e-300))
        label = f"branch {k + 1}: NTK differs by {rel:.2g}"
        for ax, w in ((axes[0], w1), (axes[1], w2)):
            d = w[:2] / max(np.linalg.norm(w[:2]), 1e-300)
            r = 3.0 * max(np.linalg.norm(w[:2]), 1e-300)
            big = max(big, r)
            ax.plot(
                [-r * d[0], r * d[0]],
                [-r * d[1], r * d[1]],
                color=color,
                lw=1.6,
                label=label if ax is axes[0] else None,
            )
            ax.plot([w[0], -w[0]], [w[1], -w[1]], "o", color=color, ms=6)
        n1, n2 = float(np.sum(w1**2)), float(np.sum(w2**2))
        norms.append((n1, n2))
        x = np.sqrt(n1) * np.geomspace(0.25, 4.0, 200)
        axes[2].plot(x, n1 * n2 / x**2 - x**2, color=color, lw=1.6)
        axes[2].plot([np.sqrt(n1)], [float(delta[0])], "o", color=color, ms=6)
    for ax, w in ((axes[0], w1_0), (axes[1], w2_0)):
        ax.plot([w[0]], [w[1]], "*", color="k", ms=13, zorder=5, label="params")
        ax.plot([0.0], [0.0], "o", mfc="white", mec="k", ms=6, zorder=5)
        lim = 1.15 * max(np.abs(w[:2]).max() * 2.2, 1e-12)
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal", adjustable="box")
        ax.axhline(0, color="0.85", lw=0.8, zorder=0)
        ax.axvline(0, color="0.85", lw=0.8, zorder=0)
    axes[0].set(title="first filter w₁", xlabel="w₁[0]", ylabel="w₁[1]")
    axes[1].set(title="second filter w₂", xlabel="w₂[0]", ylabel="w₂[1]")
    axes[2].axhline(
        float(delta[0]), color="k", ls=(0, (4, 3)), lw=1, label=f"δ(params) = {float(delta[0]):.3g}"
    )
    axes[2].plot([np.linalg.norm(w1_0)], [float(delta[0])], "*", color="k", ms=13, zorder=5)
    spread = max(abs(float(delta[0])), float(np.sum(w1_0**2)), float(np.sum(w2_0**2)))
    axes[2].set_ylim(float(delta[0]) - 3 * spread, float(delta[0]) + 3 * spread)
    axes[2].set(
        title="invariant along each branch",
        xlabel="||w₁|| (rescaling c)",
        ylabel="δ = ||w₂||² − ||w₁||²",
    )
    axes[2].legend(loc="upper right", fontsize=8, frameon=False)
    same = [
        k + 1
        for k in range(len(norms))
        if any(j != k and np.allclose(norms[j], norms[k], rtol=1e-9) for j in range(len(norms)))
    ]
    if same:
        axes[2].text(
            0.97,
            0.82,
            f"branches {', '.join(map(str, same))}: same norms,\ntheir curves coincide",
            transform=axes[2].transAxes,
            ha="right",
            va="top",
            fontsize=8,
            color="0.3",
        )
    handles, labels = axes[0].get_legend_handles_labels()
    fig.suptitle(
        title
        or f"fiber of v = {np.array2string(np.ravel(v), precision=3)} "
        f"for {net!r}: {fib.num_points} branch"
        f"{'es' if fib.num_points != 1 else ''} x 2 signs",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.legend(
        handles, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=9, frameon=False
    )
    return fig


def hiding_family(
    params: Any,
    neuron: int | None = None,
    *,
    ts: Any = None,
    num_panels: int = 4,
    window: Any = None,
    grid: int = 101,
) -> dict:
    """A hiding translation family of a two-input three-layer ReLU network, checked.

    Chooses the translations ``t`` (``num_panels`` values in the valid interval, ``0``
    among them, spread so that the hidden hyperplane sweeps the window; one more value
    just outside the interval when it is bounded below) unless ``ts`` is given, and
    measures ``max |f_t - f_0|`` on a ``grid x grid`` grid over the window.

    Args:
        params: ``[(W1, b1), (W2, b2), (W3, b3)]`` with two inputs and a hidden
            first-layer hyperplane.
        neuron: which hidden hyperplane (default: the first one).
        ts: the translations to draw (default: chosen as above).
        num_panels: how many valid translations to choose.
        window: the drawing window ``(lower, upper)`` (default: that of
            :func:`~neuromanifold.relu.plot_arrangement` for ``params``).
        grid: points per axis of the check.

    Returns:
        A dict: ``neuron``, ``interval`` (the valid closed interval of ``t``), ``window``,
        ``ts``, ``valid`` (per ``t``), ``params`` (per ``t``) and ``max_difference`` (per
        ``t``, ``max |f_t - f_0|`` on the grid).
    """

    num_panels = check_positive_int(num_panels, "num_panels", maximum=12)
    grid = check_positive_int(grid, "grid", maximum=1001)
    ident = identifiability(params)
    hidden = [h.neuron for h in ident.hidden_hyperplanes]
    if not hidden:
        raise InputError(
            "the network has no hidden first-layer hyperplane to translate "
            "(docs/concepts_relu.md §4)"
        )
    neuron = hidden[0] if neuron is None else int(neuron)
    if neuron not in hidden:
        raise InputError(f"neuron must be a hidden first-layer hyperplane {hidden}; got {neuron}")
    lo_t, hi_t = HidingTranslation(neuron, 0.0).applies(params).valid_set
    if window is None:
        from matplotlib.figure import Figure  # start-up: a slow import

        ax = plot_arrangement(params, ax=Figure().subplots(), legend=False)
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        window = (np.array([x0, y0]), np.array([x1, y1]))
    lo, hi = (np.asarray(w, dtype=float) for w in window)
    W1 = np.asarray(params[0][0], dtype=float)
    # how far t moves the line across the window: |t| / ||w_i|| in x-space
    sweep = 0.3 * float(np.max(hi - lo)) * float(np.linalg.norm(W1[neuron]))
    if ts is None:
        a, b = max(lo_t, -sweep), min(hi_t, sweep)
        grid_t = [float(t) for t in np.linspace(a, b, num_panels)]
        near = min(range(num_panels), key=lambda k: abs(grid_t[k]))
        if a <= 0.0 <= b:  # the original network among the panels
            grid_t[near] = 0.0
        ts = sorted(set(grid_t))
        if np.isfinite(lo_t):
            ts = [lo_t - max(0.5 * sweep, 0.5)] + ts
    ts = [float(t) for t in ts]
    xs = np.linspace(lo[0], hi[0], grid)
    ys = np.linspace(lo[1], hi[1], grid)
    X = np.array(np.meshgrid(xs, ys)).reshape(2, -1).T
    f0 = forward(params, X)
    family, diffs, valid = [], [], []
    for t in ts:
        move = HidingTranslation(neuron, t)
        valid.append(bool(move.applies(params)))
        pt = move._transform(
            [(np.array(W, dtype=float), np.array(b, dtype=float)) for W, b in params], 0.0
        )
        family.append(pt)
        diffs.append(float(np.max(np.abs(forward(pt, X) - f0))))
    return {
        "neuron": neuron,
        "interval": (float(lo_t), float(hi_t)),
        "window": (lo, hi),
        "ts": ts,
        "valid": valid,
        "params": family,
        "max_difference": diffs,
    }


def hiding_translation_figure(
    params: Any,
    neuron: int | None = None,
    *,
    ts: Any = None,
    num_panels: int = 4,
    window: Any = None,
    title: str = "",
) -> Any:
    """A hidden first-layer hyperplane moving while the function stays the same.

    For a two-input three-layer ReLU network whose first-layer hyperplane ``i`` is
    hidden (every second-layer neuron that sees it is active only on one side of it:
    docs/concepts_relu.md §4), the hiding translation ``b1_i -> b1_i + t``,
    ``b2 -> b2 - t W2[:, i]`` keeps the function for every ``t`` in a closed interval.
    One panel per ``t`` (:func:`hiding_family` chooses them) shows the regions and bent
    hyperplanes of the translated network in one window: the dashed hidden hyperplane
    moves, the solid bends of the function stay, and the colours (one per affine map of
    the function) stay too. Each panel's title gives
    ``max |f_t - f_0|`` measured on a grid over the window; a last-left panel with ``t``
    just outside the interval (red title) shows the function changing there.

    Args:
        params: ``[(W1, b1), (W2, b2), (W3, b3)]`` with two inputs.
        neuron: which hidden hyperplane (default: the first one).
        ts, num_panels, window: see :func:`hiding_family`.
        title: the figure's title (default: the move and its valid interval).

    Returns:
        A matplotlib Figure.

    >>> P = [(np.eye(2), np.zeros(2)), (np.array([[1.0, -1.0]]), np.array([-0.5])),
    ...      (np.ones((1, 1)), np.zeros(1))]
    >>> fig = hiding_translation_figure(P, num_panels=3)
    >>> [ax.get_title().splitlines()[0] for ax in fig.axes]
    ['t = -1 (outside)', 't = -0.187', 't = 0', 't = 0.187']
    """

    fam = hiding_family(params, neuron, ts=ts, num_panels=num_panels, window=window)
    n = len(fam["ts"])
    lo, hi = fam["window"]
    aspect = float((hi - lo)[1] / (hi - lo)[0])
    fig = new_figure(figsize=(2.9 * n, min(2.7 * aspect, 5.0) + 1.2), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, n))
    for k, (ax, t, ok, pt, diff) in enumerate(
        zip(axes, fam["ts"], fam["valid"], fam["params"], fam["max_difference"])
    ):
        plot_arrangement(pt, ax=ax, window=(lo, hi), legend=k == n - 1, color_by="map")
        ax.set_title(
            f"t = {t:.3g}{'' if ok else ' (outside)'}\nmax |f_t - f_0| = {diff:.1e}",
            fontsize=9,
            color="black" if ok else "#d2433a",
        )
        if k:
            ax.set_ylabel("")
    a, b = fam["interval"]
    fig.suptitle(
        title
        or f"hiding translation of first-layer hyperplane {fam['neuron']}: "
        f"b1[{fam['neuron']}] -> b1[{fam['neuron']}] + t, "
        f"b2 -> b2 - t W2[:, {fam['neuron']}], valid for t in "
        f"[{a:.3g}, {b:.3g}]",
        fontsize=11,
    )
    return fig
