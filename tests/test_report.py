"""The HTML report: written, self-contained, and rendered by a real browser (headless
Chromium) with its tables and images and no console errors."""

import json
import re
import shutil
import subprocess
import tempfile

import pytest

import neuromanifold as nm
from neuromanifold import report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=5000"]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    rows = nm.reproduce_linear(seed=0, quick=True)
    flows, flow_record = report.flow_section(seed=0)
    relu, relu_record = report.relu_picture_section(seed=0)
    sections = [report.reproduction_section("Paper A", rows), flows, relu]
    return report.write_report(folder, "neuromanifold report", sections,
                               {"linear": rows, "flows": flow_record, "relu": relu_record})


def test_files_and_self_contained(page):
    html = page.read_text()
    folder = page.parent
    assert json.loads((folder / "results.json").read_text())["linear"]
    assert sorted(p.name for p in (folder / "figures").iterdir())
    # nothing is fetched from the network or from other files
    assert not re.search(r'(src|href)="(https?:|//|file:)', html)
    assert html.count("<img") == len(list((folder / "figures").iterdir()))
    assert html.count("<tr") > len(nm.reproduce_linear(seed=0, quick=True))


def test_report_folder_errors(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(nm.InputError, match="cannot be written"):
        report.write_report(tmp_path / "file" / "sub", "t", [], {})


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it)")
def test_renders_in_headless_chromium(page, tmp_path):
    profile = tempfile.mkdtemp()
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr",
                          "--v=0", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    images = re.search(r'data-images="(\d+)" data-images-loaded="(\d+)"', dom.stdout)
    assert images and images.group(1) == images.group(2) and int(images.group(1)) >= 2
    assert dom.stdout.count("<table") >= 1 and dom.stdout.count("<tr") > 5
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tempfile.mkdtemp()}",
                    "--window-size=1280,2000", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 50_000
