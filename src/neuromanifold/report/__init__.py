"""The visual report: a self-contained HTML page with the reproduction tables, gradient
flows, NTK counterexamples and ReLU pictures, plus ``results.json`` and the figures.

The report calls the library; the library never imports it.
"""

from ._build import flow_section, relu_picture_section, reproduction_section
from ._figures import flow_figure, ntk_difference_figure, to_png
from ._html import Figure, Section, Table, render, write_report

__all__ = ["write_report", "render", "Section", "Table", "Figure", "reproduction_section",
           "flow_section", "relu_picture_section", "flow_figure", "ntk_difference_figure",
           "to_png"]
