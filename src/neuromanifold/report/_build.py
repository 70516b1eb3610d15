"""The report's sections, computed: the reproduction tables with their counterexamples,
gradient flows in parameter space against the Riemannian flow on the neuromanifold, and
ReLU pictures, the fiber of a linear convolutional network and a hiding translation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import NeuromanifoldError
from .._validation import as_seed_rng
from ..flows import SquareLoss, gradient_flow, riemannian_flow
from ..linear import LinearConvNet, random_regression_data
from ..relu import ReLUNet, bent_hyperplanes, identifiability, plot_arrangement
from ._figures import (
    fiber_figure,
    flow_figure,
    hiding_family,
    hiding_translation_figure,
    new_figure,
    ntk_difference_figure,
    to_png,
)
from ._html import Figure, Section, Table

__all__ = [
    "reproduction_section",
    "flow_section",
    "relu_picture_section",
    "fiber_section",
    "hiding_translation_section",
    "hiding_example",
]

_OUTCOME_CLASS = {
    "agrees": "agrees",
    "disagrees": "disagrees",
    "outside the hypotheses": "outside",
    "inconclusive": "inconclusive",
}


def _outcome(row: dict) -> str:
    if "outcome" in row:
        return str(row["outcome"])
    return "agrees" if row.get("agrees") else "disagrees"


def reproduction_section(title: str, rows: Sequence[Any], intro: Sequence[str] = ()) -> Section:
    """A reproduction table (rows of :func:`neuromanifold.reproduce_linear` or the like),
    one line per row colored by its outcome, and a heatmap of the NTK difference for every
    row whose counterexample carries its model."""
    table_rows, classes, figures, drawn = [], [], [], set()
    for i, row in enumerate(rows):
        d = row.to_dict()
        outcome = _outcome(d)
        summary = row.summary() if hasattr(row, "summary") else ""
        claim = d.get("claim", d.get("paper_claim", ""))
        table_rows.append(
            [
                d.get("architecture", ""),
                d.get("condition", ""),
                claim,
                d.get("computed", ""),
                outcome,
                summary,
            ]
        )
        classes.append(_OUTCOME_CLASS.get(outcome, ""))
        model = getattr(row, "_witness_model", None)
        witness = (d.get("evidence") or {}).get("witness")
        if model is not None and witness and repr(witness["params"]) not in drawn:
            drawn.add(repr(witness["params"]))
            params = [model.check_params(p) for p in witness["params"]]
            fig = ntk_difference_figure(
                model, params[0], params[1], title=f"{witness['architecture']}"
            )
            figures.append(
                Figure(
                    f"ntk_difference_{i}.png",
                    to_png(fig),
                    f"Row {i + 1} ({d.get('condition', '')}): two parameters with "
                    f"the same end-to-end filter and invariants, different NTK.",
                )
            )
    counts = {
        k: sum(_outcome(r.to_dict()) == k for r in rows)
        for k in ("agrees", "disagrees", "outside the hypotheses", "inconclusive")
    }
    lines = list(intro) + [
        f"{len(rows)} rows: {counts['agrees']} agree with the paper, {counts['disagrees']} "
        f"disagree with a re-verified witness that meets every hypothesis, "
        f"{counts['outside the hypotheses']} fall outside the paper's hypotheses, "
        f"{counts['inconclusive']} are inconclusive."
    ]
    table = Table(
        ["architecture", "condition", "paper's claim", "computed", "outcome", "evidence"],
        table_rows,
        classes,
    )
    return Section(title, lines, [table], figures)


def flow_section(*, seed: int = 0) -> tuple[Section, dict]:
    """Gradient flows of a square loss for a strided 1D network: loss, invariants and v(t),
    the parameter flow against the Riemannian flow in function space."""
    net = LinearConvNet([3, 2, 2], strides=[2, 2])
    params = net.random_params(seed=seed)
    X, Y = random_regression_data(net, seed=seed)
    loss = SquareLoss.from_data(net, X, Y)
    flow = gradient_flow(net, params, loss, 2.0, num_times=41)
    paragraphs = [
        f"{net!r}, square loss on random data, t in [0, 2]. Gradient flow in parameter space "
        f"conserves the invariants delta_l = ||w_(l+1)||^2 - ||w_l||^2 (largest relative drift "
        f"{flow.max_invariant_drift:.1e}) and moves v = mu(theta) by v' = -K grad l(v) "
        f"(largest residual {flow.max_ntk_residual:.1e})."
    ]
    riem, record = (
        None,
        {
            "network": repr(net),
            "parameter_flow": {"loss": flow.loss, "max_invariant_drift": flow.max_invariant_drift},
        },
    )
    try:
        riem = riemannian_flow(
            net, flow.end_to_end[0], net.invariants(params), loss, 2.0, num_times=41
        )
        gap = float(np.abs(np.asarray(riem.end_to_end) - np.asarray(flow.end_to_end)).max())
        paragraphs.append(
            f"The Riemannian flow on the neuromanifold, integrated from (v(0), delta) alone, "
            f"follows the same curve: largest difference in v(t) {gap:.1e}."
        )
        record["riemannian_flow"] = {"max_difference_from_parameter_flow": gap}
    except NeuromanifoldError as exc:
        paragraphs.append(f"The Riemannian flow stopped: {exc}")
        record["riemannian_flow"] = {"error": str(exc)}
    fig = flow_figure(flow, riem, title=repr(net))
    return Section(
        "Gradient flows",
        paragraphs,
        (),
        [
            Figure(
                "flow.png",
                to_png(fig),
                "Loss, invariant drift, and v(t): parameter flow (colors) and "
                "Riemannian flow on M (dashed).",
                wide=True,
            )
        ],
    ), record


def relu_picture_section(*, seed: int = 0) -> tuple[Section, dict]:
    """A two-input ReLU network's linear regions and bent hyperplanes, visible and hidden."""
    params = ReLUNet([2, 4, 3, 1]).random_params(seed=seed)
    bent = bent_hyperplanes(params)
    fig = new_figure(figsize=(5.5, 5.5))
    ax = fig.subplots()
    plot_arrangement(params, ax=ax)
    record = {"widths": [2, 4, 3, 1], "bent_hyperplanes": bent.to_dict()}
    text = (
        "A random ReLU network 2-4-3-1: its linear regions (colors) and bent hyperplanes, "
        "drawn solid where the function bends and dashed where the bend is hidden."
    )
    return Section(
        "ReLU networks: linear regions",
        [text],
        (),
        [
            Figure(
                "arrangement.png",
                to_png(fig),
                "Linear regions and bent hyperplanes of a 2-4-3-1 ReLU network.",
            )
        ],
    ), record


def fiber_section(*, seed: int = 0) -> tuple[Section, dict]:
    """The fiber of a two-layer linear convolutional network, with stride 1 and stride 2:
    its branches, the points with the same invariant, and their NTKs
    (docs/concepts_linear.md §2-3).

    Returns:
        ``(Section, record)``: the section (text and two figures) and a JSON-ready dict of
        what was computed (per network: v, delta, branches, NTK differences, certified).
    """
    figures, record, lines = [], {}, []
    for name, net in (
        ("stride_1", LinearConvNet([2, 2])),
        ("stride_2", LinearConvNet([2, 2], strides=[2])),
    ):
        params = net.random_params(seed=seed)
        v, delta = net.end_to_end(params), net.invariants(params)
        fib = net.fiber(v, delta)
        K0 = net.ntk(params)
        diffs = [float(np.linalg.norm(net.ntk(p) - K0) / np.linalg.norm(K0)) for p in fib.points]
        record[name] = {
            "network": repr(net),
            "params": params,
            "v": v,
            "delta": delta,
            "num_branches": fib.num_points,
            "num_sign_patterns": fib.num_sign_patterns,
            "certified": fib.certified,
            "ntk_relative_differences": diffs,
        }
        figures.append(
            Figure(
                f"fiber_{name}.png",
                to_png(fiber_figure(net, params)),
                f"{net!r}: the fiber of v = mu(theta) (theta: star). "
                f"{fib.num_points} branch{'es' if fib.num_points != 1 else ''}, "
                f"each a line through 0 cut into two sign components; dots: the "
                f"points with the invariant of theta; largest relative NTK "
                f"difference between them {max(diffs):.2g}.",
                wide=True,
            )
        )
        lines.append(
            f"{net!r}: v = {np.array2string(np.ravel(v), precision=3)}, "
            f"delta = {float(delta[0]):.3g}; the fiber has {fib.num_points} "
            f"branch{'es' if fib.num_points != 1 else ''} "
            f"({'certified' if fib.certified else 'not certified'} complete), "
            f"and the NTK at its points with the same delta differs from the NTK at "
            f"theta by at most {max(diffs):.2g} (relative)."
        )
    text = (
        "Every parameter realizing v is (c u_1, u_2 / c) for a factorization (u_1, u_2) "
        "of v and a scale c != 0. With stride 1 the roots of pi(v) can go to either "
        "layer, so the fiber has several branches; with stride 2 the factorization is "
        "unique up to scale. Along a branch the invariant delta = ||w_2||^2 - ||w_1||^2 "
        "takes each value once per sign, so fixing delta leaves one point per branch and "
        "sign, and the NTK is a function of (v, delta) exactly when those points share "
        "it (Achour, Kohn, Rauhut, arXiv 2507.06367)."
    )
    return Section("Linear networks: the fiber of a function", [text] + lines, (), figures), record


def hiding_example(*, seed: int = 0) -> list:
    """A random two-input three-layer ReLU network (widths 2-2-2-1) whose first-layer
    hyperplane 0 is hidden: both second-layer rows are positive in column 0 and negative
    elsewhere, biases included (docs/concepts_relu.md §4).

    >>> from neuromanifold.relu import identifiability
    >>> [h.neuron for h in identifiability(hiding_example(seed=0)).hidden_hyperplanes]
    [0]
    """
    rng = as_seed_rng(seed)
    angles = np.array([0.0, 0.5 * np.pi]) + rng.uniform(-0.35, 0.35, 2) * np.pi
    W1 = np.column_stack([np.cos(angles), np.sin(angles)]) * rng.uniform(0.8, 1.5, (2, 1))
    b1 = rng.uniform(-0.5, 0.5, 2)
    W2 = np.column_stack([rng.uniform(0.8, 1.6, 2), -rng.uniform(0.3, 1.2, 2)])
    b2 = -rng.uniform(0.3, 1.0, 2)
    W3 = rng.choice([-1.0, 1.0], (1, 2)) * rng.uniform(0.5, 1.5, (1, 2))
    return [(W1, b1), (W2, b2), (W3, np.zeros(1))]


def hiding_translation_section(*, seed: int = 0) -> tuple[Section, dict]:
    """A hidden first-layer hyperplane of a two-input ReLU network, translated along its
    valid interval while the function stays the same (docs/concepts_relu.md §4).

    Returns:
        ``(Section, record)``: the section (text and one figure) and a JSON-ready dict
        (the network, the interval, the translations and ``max |f_t - f_0|`` for each).
    """
    params = hiding_example(seed=seed)
    ident = identifiability(params)
    fam = hiding_family(params)
    fig = hiding_translation_figure(params, fam["neuron"], ts=fam["ts"], window=fam["window"])
    lo, hi = fam["interval"]
    inside = [d for d, ok in zip(fam["max_difference"], fam["valid"]) if ok]
    outside = [(t, d) for t, d, ok in zip(fam["ts"], fam["max_difference"], fam["valid"]) if not ok]
    record = {
        "widths": [2, 2, 2, 1],
        "params": params,
        "identifiable": ident.identifiable,
        "hidden_hyperplanes": [h.neuron for h in ident.hidden_hyperplanes],
        "neuron": fam["neuron"],
        "interval": [lo, hi],
        "ts": fam["ts"],
        "valid": fam["valid"],
        "max_difference": fam["max_difference"],
        "grid": "101 x 101 over the window",
    }
    i = fam["neuron"]
    text = [
        f"A random 2-2-2-1 ReLU network whose second-layer neurons are active only where "
        f"first-layer neuron {i} is: every row of [W2 | b2] is positive in column {i} and "
        f"negative elsewhere. Its hyperplane is hidden (the function does not bend there; "
        f"drawn dashed), and the network is "
        f"{ident.verdict}: the hiding "
        f"translation b1[{i}] -> b1[{i}] + t, b2 -> b2 - t W2[:, {i}] keeps the function for "
        f"every t in [{lo:.3g}, {hi:.3g}] (Gegenfurtner, Grillo, Montufar, arXiv 2605.18319).",
        f"Checked on a 101 x 101 grid over the window: max |f_t - f_0| = {max(inside):.1e} "
        f"over the {len(inside)} translations inside the interval"
        + (
            f"; outside it (t = {outside[0][0]:.3g}) the function changes by {outside[0][1]:.2g}."
            if outside
            else "."
        ),
    ]
    caption = (
        "The hidden hyperplane (dashed) moves with t; the bends of the function "
        "(solid) and the colours (one per affine piece of the function) stay; "
        "outside the interval (red title) both change. max |f_t - f_0| on the grid: "
        + ", ".join(f"t = {t:.3g}: {d:.1e}" for t, d in zip(fam["ts"], fam["max_difference"]))
        + "."
    )
    return Section(
        "ReLU networks: a hidden hyperplane moves",
        text,
        (),
        [Figure("hiding_translation.png", to_png(fig), caption, wide=True)],
    ), record
