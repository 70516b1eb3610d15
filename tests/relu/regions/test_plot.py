"""Pictures of 2D ReLU arrangements (matplotlib, Agg backend)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from neuromanifold import ArchitectureError, InputError  # noqa: E402
from neuromanifold.relu import ReLUNet, plot_arrangement, regions  # noqa: E402

HIDING = [
    (np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), np.array([0.0, 0.0, -1.0])),
    (np.array([[1.0, -1.0, -1.0]]), np.array([-0.5])),
    (np.ones((1, 1)), np.zeros(1)),
]


def styles(ax):
    return [(line.get_linestyle(), line.get_color()) for line in ax.get_lines()]


@pytest.mark.parametrize(
    "widths,domain", [([2, 4, 1], None), ([2, 3, 3, 1], "orthant"), ([2, 5, 2], (-1.0, 1.0))]
)
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
    assert ("--", "black") in st  # a first-layer piece hidden by the second layer
    assert ("-", "black") in st  # a visible first-layer piece
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
    out = plot_arrangement(
        ReLUNet([2, 3, 1]).random_params(0), ax=axs[1], bounds=(-3, 3), legend=False
    )
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
    for kw, match in (
        (dict(ax=Axes), "ax"),
        (dict(ax="left"), "ax"),
        (dict(cmap="nope"), "cmap"),
        (dict(cmap=3), "cmap"),
        (dict(alpha=1.5), "alpha"),
        (dict(alpha="x"), "alpha"),
        (dict(tol=-1.0), "tol"),
    ):
        with pytest.raises(InputError, match=match):
            plot_arrangement(p, **kw)
    with pytest.raises(TypeError):
        plot_arrangement(p, None, None)  # ax is keyword-only


# ------------------------------------------------------------------ the default window
from itertools import combinations  # noqa: E402

from matplotlib.figure import Figure  # noqa: E402


def _axes():
    return Figure(figsize=(6, 6)).subplots()


def _window(ax):
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    return np.array([x0, y0]), np.array([x1, y1])


def _crossings(params):
    """Ground truth for one hidden layer: the vertices are the pairwise intersections of
    the first-layer lines (all of them, in general position)."""
    W, b = params[0]
    out = []
    for i, j in combinations(range(W.shape[0]), 2):
        M = W[[i, j]]
        if abs(np.linalg.det(M)) > 1e-12:
            out.append(np.linalg.solve(M, -b[[i, j]]))
    return np.array(out)


@pytest.mark.parametrize("seed", range(4))
def test_default_window_shows_every_region_near_the_crossings(seed):
    params = ReLUNet([2, 5, 1]).random_params(seed)
    ax = plot_arrangement(params, ax=_axes())
    lo, hi = _window(ax)
    V = _crossings(params)
    inside = np.all((V >= lo) & (V <= hi), axis=1)
    total = regions(params).num_regions  # every region of the plane
    shown = regions(params, (lo, hi)).num_regions
    assert len(ax.patches) == shown
    title = ax.get_title()
    if inside.all():
        assert shown == total and title.endswith(f": {total} regions in the window")
    else:  # the title says what is left out, and only far outliers are left out
        assert f"{shown} of {total} regions" in title
        assert f"({(~inside).sum()} crossing" in title
        mid, half = (lo + hi) / 2, (hi - lo) / 2
        assert np.abs(V[~inside] - mid).max(axis=1).min() > 0.75 * half.max()
    # the window frames the crossings it shows: they do not all sit in a small corner
    if inside.sum() >= 2:
        spread = V[inside].max(axis=0) - V[inside].min(axis=0)
        assert spread.max() >= 0.3 * (hi - lo).max()


def test_a_far_crossing_does_not_shrink_the_picture():
    eps = 1e-4  # two nearly parallel lines crossing near x1 = 1e4, five lines near the origin
    W1 = np.array(
        [[0.0, 1.0], [eps, 1.0], [1.0, 0.0], [1.0, 1.0], [1.0, -2.0], [2.0, 1.0], [-1.0, 3.0]]
    )
    b1 = np.array([0.0, -1.0, 0.5, -0.3, 0.7, 1.1, -0.4])
    params = [(W1, b1), (np.arange(1.0, 8.0)[None, :], np.zeros(1))]
    ax = plot_arrangement(params, ax=_axes())
    lo, hi = _window(ax)
    assert (hi - lo).max() < 20
    total = regions(params).num_regions
    assert total == 1 + 7 + 21  # seven lines in general position
    assert f"{total - 1} of {total} regions" in ax.get_title()
    assert "(1 crossing farther out)" in ax.get_title()


def test_deep_network_vertices_are_inside_the_window_unless_announced():
    for seed in range(2):
        params = ReLUNet([2, 4, 3, 1]).random_params(seed)
        ax = plot_arrangement(params, ax=_axes())
        lo, hi = _window(ax)
        if "of" not in ax.get_title():
            assert regions(params, (lo, hi)).num_regions == regions(params).num_regions


def test_labels_sit_inside_their_regions_away_from_the_edges():
    from matplotlib.path import Path

    params = ReLUNet([2, 4, 3, 1]).random_params(0)
    ax = plot_arrangement(params, ax=_axes(), annotate=True)
    lo, hi = _window(ax)
    assert 0 < len(ax.texts) <= len(ax.patches)
    for text in ax.texts:
        x = np.array(text.xy)
        owners = [p for p in ax.patches if Path(p.get_xy()).contains_point(x)]
        assert len(owners) == 1
        poly = (
            owners[0].get_xy()[:-1]
            if np.allclose(owners[0].get_xy()[0], owners[0].get_xy()[-1])
            else owners[0].get_xy()
        )
        edges = np.roll(poly, -1, axis=0) - poly
        n = np.column_stack([edges[:, 1], -edges[:, 0]])
        n /= np.linalg.norm(n, axis=1)[:, None]
        dist = np.abs(((poly - x) * n).sum(axis=1)).min()
        assert dist > 0.02 * (hi - lo).max()


def test_small_regions_get_no_label():
    W1 = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    params = [(W1, np.array([0.0, -0.01, 0.0])), (np.ones((1, 3)), np.zeros(1))]
    ax = plot_arrangement(params, ax=_axes(), annotate=True, window=(-1, 1))
    assert len(ax.patches) == 6 and len(ax.texts) == 4  # the two slivers carry no label


def test_window_overrides_and_bounds_is_its_former_name():
    params = ReLUNet([2, 3, 1]).random_params(0)
    assert plot_arrangement(params, ax=_axes(), window=([-1, 0], [2, 5])).get_ylim() == (0.0, 5.0)
    assert plot_arrangement(params, ax=_axes(), bounds=(-2, 2)).get_xlim() == (-2.0, 2.0)
    with pytest.raises(InputError, match="window"):
        plot_arrangement(params, ax=_axes(), window=(-1, 1), bounds=(-1, 1))
    with pytest.raises(InputError, match="window"):
        plot_arrangement(params, ax=_axes(), window=(1, 1))
    # in the orthant the window starts at 0
    ax = plot_arrangement(params, "orthant", ax=_axes())
    assert _window(ax)[0].tolist() == [0.0, 0.0]


def _color_at(ax, x):
    from matplotlib.path import Path

    owners = [p for p in ax.patches if Path(p.get_xy()).contains_point(x)]
    return tuple(np.round(owners[0].get_facecolor(), 6)) if len(owners) == 1 else None


def test_color_by_map_gives_equivalent_networks_the_same_picture():
    from neuromanifold.relu import symmetries as S

    p = ReLUNet([2, 4, 3, 1]).random_params(2)
    q = S.apply_sequence(
        [
            S.Permutation(1, (2, 0, 3, 1)),
            S.Scaling(1, (0.5, 2.0, 3.0, 0.25)),
            S.Scaling(2, (4.0, 0.5, 1.5)),
        ],
        p,
    )
    window = (-3.0, 3.0)
    axes = [plot_arrangement(r, ax=_axes(), window=window, color_by="map") for r in (p, q)]
    pts = np.random.default_rng(0).uniform(-2.9, 2.9, (200, 2))
    same = [_color_at(axes[0], x) == _color_at(axes[1], x) for x in pts]
    assert np.mean(same) > 0.97  # points on a region's edge may fall in no patch
    # by region (the default), the permuted network's regions are enumerated differently
    by_region = [plot_arrangement(r, ax=_axes(), window=window) for r in (p, q)]
    assert np.mean([_color_at(by_region[0], x) == _color_at(by_region[1], x) for x in pts]) < 0.9
    with pytest.raises(InputError, match="color_by"):
        plot_arrangement(p, ax=_axes(), color_by="layer")


def test_weights_near_the_float_range_draw_or_are_refused_with_the_limit():
    import neuromanifold as nm

    p = nm.ReLUNet([2, 3, 1]).random_params(seed=0)
    fig = nm.relu.plot_arrangement([(W * 1e150, b * 1e150) for W, b in p])
    assert fig is not None
    with pytest.raises(nm.ParameterError, match="beyond the float range"):
        nm.relu.plot_arrangement([(W * 1e300, b * 1e300) for W, b in p])
