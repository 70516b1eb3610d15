"""The fiber benchmark runs in quick mode and agrees with its baseline (no timing asserted)."""

import importlib.util
from pathlib import Path


def test_bench_fibers_quick(capsys):
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_fibers.py"
    spec = importlib.util.spec_from_file_location("bench_fibers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.main(["--quick"])
    first = rows[0]
    assert first["points"] == first["baseline_points"] == 90      # 6! / 2!^3
    assert first["max_set_distance"] < 1e-8 and first["certified"]
    assert "ratio" in capsys.readouterr().out
