"""The benchmarks run (quick mode), so they cannot rot; their timings are not asserted."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_ntk_quick(capsys):
    rows = _load("bench_ntk").main(["--quick", "--repeat", "1"])
    assert rows and all(r["diff"] < 1e-12 for r in rows)  # same NTK as the baseline
