"""Pictures of 2D ReLU arrangements (matplotlib, Agg backend)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from neuromanifold import ArchitectureError, InputError  # noqa: E402
from neuromanifold.relu import ReLUNet, plot_arrangement, regions  # noqa: E402

HIDING = [(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), np.array([0.0, 0.0, -1.0])),
          (np.array([[1.0, -1.0, -1.0]]), np.array([-0.5])), (np.ones((1, 1)), np.zeros(1))]


def styles(ax):
    return [(line.get_linestyle(), line.get_color()) for line in ax.get_lines()]


@pytest.mark.parametrize("widths,domain", [([2, 4, 1], None), ([2, 3, 3, 1], "orthant"),
                                           ([2, 5, 2], (-1.0, 1.0))])
def test_renders_png(tmp_path, widths, domain):
    params = ReLUNet(widths).random_params(3)
    ax = plot_arrangement(params, domain)
    out = tmp_path / "arrangement.png"
    ax.figure.savefig(out, dpi=60)
    assert out.stat().st_size > 1000
    # one filled polygon per region of the window (the axes limits)
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    window = (np.array([x0, y0]), np.array([x1, y1]))
    assert len(ax.patches) == regions(params, window).num_regions
    assert len(ax.get_lines()) >= 1
    plt.close(ax.figure)


def test_one_patch_per_region_in_a_box():
    params = ReLUNet([2, 4, 3, 1]).random_params(1)
    ax = plot_arrangement(params, (-2.0, 2.0))
    assert len(ax.patches) == regions(params, (-2.0, 2.0)).num_regions
    assert ax.get_xlim() == (-2.0, 2.0)
    plt.close(ax.figure)


def test_hidden_pieces_are_dashed_and_visible_solid():
    ax = plot_arrangement(HIDING, annotate=True)
    st = styles(ax)
    assert ("--", "black") in st   # a first-layer piece hidden by the second layer
    assert ("-", "black") in st    # a visible first-layer piece
    assert ("-", "tab:red") in st  # the second layer's visible bend
    assert ax.texts  # the patterns
    plt.close(ax.figure)
    ax = plot_arrangement(HIDING, show_hidden=False)
    assert all(ls == "-" for ls, _ in styles(ax))
    plt.close(ax.figure)
    # a network where every piece is visible has no dashed line
    ax = plot_arrangement([(np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))])
    assert styles(ax) and all(ls == "-" for ls, _ in styles(ax))
    plt.close(ax.figure)


def test_draws_on_a_given_axes_with_bounds():
    fig, axs = plt.subplots(1, 2)
    out = plot_arrangement(ReLUNet([2, 3, 1]).random_params(0), ax=axs[1], bounds=(-3, 3),
                           legend=False)
    assert out is axs[1] and out.get_xlim() == (-3.0, 3.0) and out.get_legend() is None
    plt.close(fig)


def test_errors():
    with pytest.raises(ArchitectureError, match="input dimension 2"):
        plot_arrangement(ReLUNet([3, 2, 1]).random_params(0))
    with pytest.raises(ArchitectureError, match="input dimension 2"):
        plot_arrangement(ReLUNet([1, 2, 1]).random_params(0))
    with pytest.raises(InputError, match="bounds"):
        plot_arrangement(ReLUNet([2, 2, 1]).random_params(0), bounds=(1, -1))


def test_style_options_are_checked():
    from matplotlib.axes import Axes

    p = ReLUNet([2, 2, 1]).random_params(0)
    for kw, match in ((dict(ax=Axes), "ax"), (dict(ax="left"), "ax"), (dict(cmap="nope"), "cmap"),
                      (dict(cmap=3), "cmap"), (dict(alpha=1.5), "alpha"), (dict(alpha="x"), "alpha"),
                      (dict(tol=-1.0), "tol")):
        with pytest.raises(InputError, match=match):
            plot_arrangement(p, **kw)
    with pytest.raises(TypeError):
        plot_arrangement(p, None, None)  # ax is keyword-only
