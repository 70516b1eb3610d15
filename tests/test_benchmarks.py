"""The benchmarks of the linear domain run (quick mode), so they cannot rot, and agree with
their baselines; their timings are not asserted."""

from support import load_benchmark


def test_bench_ntk_quick(capsys):
    rows = load_benchmark("bench_ntk").main(["--quick", "--repeat", "1"])
    assert rows and all(r["diff"] < 1e-12 for r in rows)  # same NTK as the baseline


def test_bench_fibers_quick(capsys):
    rows = load_benchmark("bench_fibers").main(["--quick"])
    first = rows[0]
    assert first["points"] == first["baseline_points"] == 90      # 6! / 2!^3
    assert first["max_set_distance"] < 1e-8 and first["certified"]
    assert "ratio" in capsys.readouterr().out
