"""The region benchmark runs in quick mode and ours agrees with the naive baseline."""

import importlib.util
from pathlib import Path


def test_bench_relu_regions_quick(capsys):
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_relu_regions.py"
    spec = importlib.util.spec_from_file_location("bench_relu_regions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.main(["--quick"])
    compared = [r for r in rows if "same" in r]
    assert compared and all(r["same"] for r in compared)
    assert all(r["lps_ours"] < r["lps_naive"] for r in compared)
