"""The report's sections, computed: the reproduction tables with their counterexamples,
gradient flows in parameter space against the Riemannian flow on the neuromanifold, and
ReLU pictures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import NeuromanifoldError
from ._figures import flow_figure, ntk_difference_figure, to_png
from ._html import Figure, Section, Table

__all__ = ["reproduction_section", "flow_section", "relu_picture_section"]

_OUTCOME_CLASS = {"agrees": "agrees", "disagrees": "disagrees", "outside the hypotheses": "outside",
                  "inconclusive": "inconclusive"}


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
        table_rows.append([d.get("architecture", ""), d.get("condition", ""), claim,
                           d.get("computed", ""), outcome, summary])
        classes.append(_OUTCOME_CLASS.get(outcome, ""))
        model = getattr(row, "_witness_model", None)
        witness = (d.get("evidence") or {}).get("witness")
        if model is not None and witness and repr(witness["params"]) not in drawn:
            drawn.add(repr(witness["params"]))
            params = [model.check_params(p) for p in witness["params"]]
            fig = ntk_difference_figure(model, params[0], params[1],
                                        title=f"{witness['architecture']}")
            figures.append(Figure(f"ntk_difference_{i}.png", to_png(fig),
                                  f"Row {i + 1} ({d.get('condition', '')}): two parameters with "
                                  f"the same end-to-end filter and invariants, different NTK."))
    counts = {k: sum(_outcome(r.to_dict()) == k for r in rows)
              for k in ("agrees", "disagrees", "outside the hypotheses", "inconclusive")}
    lines = list(intro) + [
        f"{len(rows)} rows: {counts['agrees']} agree with the paper, {counts['disagrees']} "
        f"disagree with a re-verified witness that meets every hypothesis, "
        f"{counts['outside the hypotheses']} fall outside the paper's hypotheses, "
        f"{counts['inconclusive']} are inconclusive."]
    table = Table(["architecture", "condition", "paper's claim", "computed", "outcome",
                   "evidence"], table_rows, classes)
    return Section(title, lines, [table], figures)


def flow_section(*, seed: int = 0) -> tuple[Section, dict]:
    """Gradient flows of a square loss for a strided 1D network: loss, invariants and v(t),
    the parameter flow against the Riemannian flow in function space."""
    from ..flows import SquareLoss, gradient_flow, riemannian_flow
    from ..linear import LinearConvNet, random_regression_data
    net = LinearConvNet([3, 2, 2], strides=[2, 2])
    params = net.random_params(seed=seed)
    X, Y = random_regression_data(net, seed=seed)
    loss = SquareLoss.from_data(net, X, Y)
    flow = gradient_flow(net, params, loss, 2.0, num_times=41)
    paragraphs = [
        f"{net!r}, square loss on random data, t in [0, 2]. Gradient flow in parameter space "
        f"conserves the invariants delta_l = ||w_(l+1)||^2 - ||w_l||^2 (largest relative drift "
        f"{flow.max_invariant_drift:.1e}) and moves v = mu(theta) by v' = -K grad l(v) "
        f"(largest residual {flow.max_ntk_residual:.1e})."]
    riem, record = None, {"network": repr(net), "parameter_flow": {
        "loss": flow.loss, "max_invariant_drift": flow.max_invariant_drift}}
    try:
        riem = riemannian_flow(net, flow.end_to_end[0], net.invariants(params), loss, 2.0,
                               num_times=41)
        gap = float(np.abs(np.asarray(riem.end_to_end) - np.asarray(flow.end_to_end)).max())
        paragraphs.append(
            f"The Riemannian flow on the neuromanifold, integrated from (v(0), delta) alone, "
            f"follows the same curve: largest difference in v(t) {gap:.1e}.")
        record["riemannian_flow"] = {"max_difference_from_parameter_flow": gap}
    except NeuromanifoldError as exc:
        paragraphs.append(f"The Riemannian flow stopped: {exc}")
        record["riemannian_flow"] = {"error": str(exc)}
    fig = flow_figure(flow, riem, title=repr(net))
    return Section("Gradient flows", paragraphs, (),
                   [Figure("flow.png", to_png(fig),
                           "Loss, invariant drift, and v(t): parameter flow (colors) and "
                           "Riemannian flow on M (dashed).", wide=True)]), record


def relu_picture_section(*, seed: int = 0) -> tuple[Section, dict]:
    """A two-input ReLU network's linear regions and bent hyperplanes, visible and hidden."""
    from ..relu import ReLUNet, bent_hyperplanes, plot_arrangement
    from ._figures import _figure
    params = ReLUNet([2, 4, 3, 1]).random_params(seed=seed)
    bent = bent_hyperplanes(params)
    fig = _figure(figsize=(5.5, 5.5))
    ax = fig.subplots()
    plot_arrangement(params, ax=ax)
    record = {"widths": [2, 4, 3, 1], "bent_hyperplanes": bent.to_dict()}
    text = (f"A random ReLU network 2-4-3-1: its linear regions (colors) and bent hyperplanes, "
            f"drawn solid where the function bends and dashed where the bend is hidden.")
    return Section("ReLU networks: linear regions", [text], (),
                   [Figure("arrangement.png", to_png(fig), "Linear regions and bent hyperplanes "
                           "of a 2-4-3-1 ReLU network.")]), record
