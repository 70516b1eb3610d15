"""The visual report: a self-contained HTML page with the reproduction tables, gradient
flows, NTK counterexamples, the fiber of a linear network and ReLU pictures (regions, a
hiding translation), plus ``results.json`` and the figures.

The report calls the library; the library never imports it.
"""

from ._build import (
    fiber_section,
    flow_section,
    hiding_example,
    hiding_translation_section,
    relu_picture_section,
    reproduction_section,
)
from ._figures import (
    fiber_figure,
    flow_figure,
    hiding_family,
    hiding_translation_figure,
    ntk_difference_figure,
    to_png,
)
from ._html import Figure, Section, Table, render, write_report

__all__ = [
    "write_report",
    "render",
    "Section",
    "Table",
    "Figure",
    "reproduction_section",
    "flow_section",
    "relu_picture_section",
    "fiber_section",
    "hiding_translation_section",
    "hiding_example",
    "flow_figure",
    "ntk_difference_figure",
    "fiber_figure",
    "hiding_translation_figure",
    "hiding_family",
    "to_png",
]
