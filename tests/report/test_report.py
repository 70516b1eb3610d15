"""The HTML report: written, self-contained, and rendered by a real browser (headless
Chromium) with its tables and images and no console errors; its figures (the fiber of a
linear network, a hiding translation) and what they claim, checked independently."""

import json
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import neuromanifold as nm
from neuromanifold import relu, report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--virtual-time-budget=5000",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    rows = nm.reproduce_linear(seed=0, quick=True)
    flows, flow_record = report.flow_section(seed=0)
    arrangement, relu_record = report.relu_picture_section(seed=0)
    fiber, fiber_record = report.fiber_section(seed=0)
    hiding, hiding_record = report.hiding_translation_section(seed=0)
    sections = [report.reproduction_section("Paper A", rows), flows, fiber, arrangement, hiding]
    return report.write_report(
        folder,
        "neuromanifold report",
        sections,
        {
            "linear": rows,
            "flows": flow_record,
            "relu": relu_record,
            "fiber": fiber_record,
            "hiding_translation": hiding_record,
        },
    )


def test_files_and_self_contained(page):
    html = page.read_text()
    folder = page.parent
    assert json.loads((folder / "results.json").read_text())["linear"]
    assert sorted(p.name for p in (folder / "figures").iterdir())
    # nothing is fetched from the network or from other files
    assert not re.search(r'(src|href)="(https?:|//|file:)', html)
    assert html.count("<img") == len(list((folder / "figures").iterdir()))
    for name in (
        "fiber_stride_1.png",
        "fiber_stride_2.png",
        "hiding_translation.png",
        "arrangement.png",
    ):
        assert (folder / "figures" / name).read_bytes()[:4] == b"\x89PNG"
    assert "Linear networks: the fiber of a function</h2>" in html
    assert "ReLU networks: a hidden hyperplane moves</h2>" in html
    assert html.count("<tr") > len(nm.reproduce_linear(seed=0, quick=True))
    # the records say what the figures show
    data = json.loads((folder / "results.json").read_text())
    fib = data["fiber"]
    # stride 1: the roots can change layers (two branches, NTK differs); stride 2: one branch
    assert (
        fib["stride_1"]["num_branches"] == 2
        and max(fib["stride_1"]["ntk_relative_differences"]) > 0.01
    )
    assert (
        fib["stride_2"]["num_branches"] == 1
        and max(fib["stride_2"]["ntk_relative_differences"]) < 1e-9
    )
    hid = data["hiding_translation"]
    assert hid["identifiable"] is False and hid["neuron"] in hid["hidden_hyperplanes"]
    for t, ok, diff in zip(hid["ts"], hid["valid"], hid["max_difference"]):
        lo, hi = (float(x) for x in hid["interval"])
        assert ok == (lo <= t <= hi)
        assert (diff < 1e-9) if ok else (diff > 1e-3)
    assert sum(hid["valid"]) >= 3 and not all(hid["valid"])


def test_report_folder_errors(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(nm.InputError, match="cannot be written"):
        report.write_report(tmp_path / "file" / "sub", "t", [], {})


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it)")
def test_renders_in_headless_chromium(page, tmp_path):
    profile = tempfile.mkdtemp()
    dom = subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    images = re.search(r'data-images="(\d+)" data-images-loaded="(\d+)"', dom.stdout)
    assert images and images.group(1) == images.group(2) and int(images.group(1)) >= 5
    assert dom.stdout.count("<table") >= 1 and dom.stdout.count("<tr") > 5
    assert "the fiber of a function" in dom.stdout and "a hidden hyperplane moves" in dom.stdout
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={tempfile.mkdtemp()}",
            "--window-size=1280,2000",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 50_000


# ------------------------------------------------------------------ the new sections


def test_hiding_family_against_exact_equivalence():
    """Ground truth: the translated networks are equivalent to the original on all of R^2
    (exact region-wise check) inside the interval, and not outside it."""
    params = report.hiding_example(seed=3)
    fam = report.hiding_family(params, num_panels=3)
    assert fam["ts"][1:] and 0.0 in fam["ts"]
    for t, ok, pt in zip(fam["ts"], fam["valid"], fam["params"]):
        assert relu.equivalent(params, pt).equivalent is ok, t
        np.testing.assert_array_equal(pt[0][0], params[0][0])  # only biases move
        np.testing.assert_allclose(pt[0][1][fam["neuron"]] - params[0][1][fam["neuron"]], t)


def test_hiding_translation_figure_panels_and_errors():
    params = report.hiding_example(seed=1)
    fig = report.hiding_translation_figure(params, ts=[-5.0, 0.0, 0.25])
    titles = [ax.get_title() for ax in fig.axes]
    assert len(titles) == 3 and titles[0].startswith("t = -5 (outside)")
    assert "valid for t in [" in fig._suptitle.get_text()
    assert all(float(t.split("= ")[-1]) < 1e-9 for t in titles[1:])
    assert float(titles[0].split("= ")[-1]) > 1e-3
    visible = [(W, b) for W, b in params]
    visible[1] = (np.abs(params[1][0]), params[1][1])  # all rows live everywhere: no hiding
    with pytest.raises(nm.InputError, match="no hidden first-layer hyperplane"):
        report.hiding_translation_figure(visible)
    with pytest.raises(nm.InputError, match="neuron must be a hidden"):
        report.hiding_translation_figure(params, neuron=1)


def test_fiber_figure_draws_every_branch_and_refuses_other_nets():
    net = nm.LinearConvNet([2, 2])
    params = [np.array([1.0, -1.0]), np.array([1.0, -2.0])]  # v = (1, -3, 2)
    fig = report.fiber_figure(net, params)
    a1, a2, a3 = fig.axes
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len([t for t in legend if t.startswith("branch")]) == 2 and "params" in legend
    # every fiber point (and its sign flip) is drawn, on the line of its branch
    for point in net.fiber(net.end_to_end(params), net.invariants(params)).points:
        for ax, w in ((a1, point[0]), (a2, point[1])):
            dots = np.vstack(
                [line.get_xydata() for line in ax.get_lines() if line.get_marker() == "o"]
            )
            assert np.min(np.abs(dots - w).sum(axis=1)) < 1e-9
            assert np.min(np.abs(dots + w).sum(axis=1)) < 1e-9
    assert any(abs(line.get_ydata()[0] - 3.0) < 1e-12 for line in a3.get_lines())  # delta = 3
    with pytest.raises(nm.ArchitectureError, match="two-layer"):
        report.fiber_figure(
            nm.LinearConvNet([2, 2, 2]), nm.LinearConvNet([2, 2, 2]).random_params(0)
        )
    with pytest.raises(nm.ArchitectureError, match="two-layer"):
        report.fiber_figure(nm.LinearFCNet([2, 2, 2]), nm.LinearFCNet([2, 2, 2]).random_params(0))
