"""The benchmarks run (quick mode), so they cannot rot, and agree with their baselines;
their timings are not asserted."""

from tests.support.common import load_benchmark


def test_bench_ntk_quick(capsys):
    rows = load_benchmark("bench_ntk").main(["--quick", "--repeat", "1"])
    own = [r for r in rows if "task" not in r]
    assert own and all(r["diff"] < 1e-12 for r in own)  # same NTK as the baseline
    suite = [r for r in rows if "task" in r]
    assert {r["baseline"] for r in suite} == {
        "bare J @ J.T (floor, J given)",
        "column-by-column Jacobian",
        "torch.func jacfwd + vmap",
        "torch.func jacrev + vmap",
        "JAX jacfwd (jit)",
    }
    # every peer either ran (agreeing with ours) or says why not
    for r in suite:
        assert r["baseline_s"] is not None or "not installed" in r["note"]
        if r["baseline_s"] is not None and "rel. diff" in r["note"]:
            assert float(r["note"].split("rel. diff ")[1]) < 1e-12


def test_bench_fibers_quick(capsys):
    rows = load_benchmark("bench_fibers").main(["--quick"])
    first = rows[0]
    assert first["points"] == first["baseline_points"] == 90  # 6! / 2!^3
    assert first["max_set_distance"] < 1e-8 and first["certified"]
    assert "ratio" in capsys.readouterr().out
    suite = [r for r in rows if "task" in r]
    assert len(suite) == 3 and all(r["baseline_s"] > 0 and r["ours_s"] > 0 for r in suite)


def test_bench_relu_regions_quick(capsys):
    rows = load_benchmark("bench_relu_regions").main(["--quick"])
    compared = [r for r in rows if "same" in r]
    assert compared and all(r["same"] for r in compared)  # same regions as the baselines
    assert all(r["lps_ours"] < r["lps_naive"] for r in compared if "lps_naive" in r)
    assert all(r["lps_ours"] < r["lps_bfs"] for r in compared if "lps_bfs" in r)
    assert any("growth_exponent_bfs" in r for r in rows)
    suite = [r for r in rows if "task" in r]
    # relucent either ran (and found the same regions) or the row says why not
    peer = [r for r in suite if r["baseline"] == "relucent"]
    assert peer and all(
        "same set: True" in r["note"] if r["baseline_s"] else "not installed" in r["note"]
        for r in peer
    )


def test_bench_distance_quick(capsys):
    rows = load_benchmark("bench_distance").main(["--quick"])
    own = [r for r in rows if "task" not in r]
    assert own and all(r["lower"] <= r["upper"] and r["sampled"] <= r["upper"] for r in own)


def test_every_ratio_in_the_table_is_measured_side_by_side():
    """A ratio divides by a baseline run on the same input in the same run: never by an
    extrapolation or a figure from another run (those rows report absolute numbers)."""
    import json

    run_all = load_benchmark("run_all")
    report = json.loads((run_all.HERE / "RESULTS.json").read_text())
    words = ("extrapolat", "other run", "issue", "before:", "not run", "timed on")
    for r in report["rows"]:
        said = (r["baseline"] + " " + r["note"]).lower()
        if r["ratio"] is not None:
            assert r["baseline_s"] is not None and not any(w in said for w in words), r
        assert "extrapolat" not in said and "other run" not in said, r


def test_the_side_by_side_rule_can_fail():
    import json

    run_all = load_benchmark("run_all")
    report = json.loads((run_all.HERE / "RESULTS.json").read_text())
    row = dict(report["rows"][0], baseline="figure (other run)", ratio=2.0, baseline_s=1.0)
    assert "other run" in (row["baseline"] + " " + row["note"]).lower()


def test_bench_flows_quick(capsys):
    rows = load_benchmark("bench_flows").main(["--quick", "--repeat", "1"])
    batched = rows[0]
    assert batched["baseline_s"] > 0 and "max |v_batched - v_loop|" in batched["note"]
    assert float(batched["note"].split("= ")[1].split(";")[0]) < 1e-7  # same flows
    one = rows[-1]
    assert one["task"] == "gradient flow, one"
    assert one["baseline_s"] is not None or "torch not installed" in one["note"]


def test_readme_quotes_the_last_benchmark_run():
    """The README's benchmark summary is rendered from benchmarks/RESULTS.json (never
    edited by hand); `make bench` or `run_all.py --render` rewrites it."""
    import json

    run_all = load_benchmark("run_all")
    report = json.loads((run_all.HERE / "RESULTS.json").read_text())
    text = run_all.README.read_text()
    assert "<!-- bench: summary -->" in text
    assert run_all.readme_with_summary(text, report) == text, (
        "README's benchmark summary differs from RESULTS.json: run benchmarks/run_all.py --render"
    )
    stale = text.replace("<!-- bench: summary -->\n", "<!-- bench: summary -->\n| stale |\n")
    assert run_all.readme_with_summary(stale, report) == text


def test_bench_depth_quick(capsys):
    rows = load_benchmark("bench_depth").main(["--quick"])
    notes = {r["size"].split(":")[0]: r["note"] for r in rows}
    assert notes["equivalent, permuted copy"].startswith("True, certified=True")
    assert notes["equivalent, near miss"].startswith("False, certified=True")
    assert "the copy's form equal: True" in notes["canonical form"]
    assert all(r["baseline_s"] for r in rows if r["baseline"] != "-")


def test_bench_bounds_quick(tmp_path, capsys):
    import neuromanifold as nm

    # a network of ACAS Xu's shape under ACAS Xu's file name: no download in the tests
    net = nm.ReLUNet([5, 50, 50, 50, 50, 50, 50, 5]).random_params(seed=0)
    nm.io.save(net, tmp_path / "ACASXU_run2a_1_1_batch_2000.onnx")
    rows = load_benchmark("bench_bounds").main(["--quick", "--acas", str(tmp_path)])
    # alpha-CROWN's rows: skipped (and saying why) without auto_LiRPA, else both measured
    peers = [r for r in rows if r["baseline"].startswith("alpha-CROWN")]
    rows = [r for r in rows if r not in peers]
    assert len(peers) == 2
    for r in peers:
        assert r["note"].startswith("skipped: auto_LiRPA") or "alpha-CROWN" in r["note"]
    assert len(rows) == 3 and all(r["ours_s"] > 0 for r in rows)
    verdict = rows[0]["note"].split(" in ")[0]
    assert verdict in ("sat", "unsat", "unknown")
    for r in rows[1:]:  # the certified interval holds the sampled maximum
        lower, upper = map(float, r["note"][1:].split("]")[0].split(", "))
        assert lower <= upper
        assert float(r["note"].rsplit(" ", 1)[1]) <= upper


def test_bench_conv_quick(capsys):
    rows = load_benchmark("bench_conv").main(["--quick"])
    assert len(rows) == 6
    zoo = rows[0]
    assert "every member proven equivalent: True" in zoo["note"]
    assert "found the planted groups: True" in zoo["note"]
    pairs = [r for r in rows[1:] if r["baseline_s"] is not None]
    assert len(pairs) == 2
    for r in pairs:  # ours certified and recovered; the baseline recovered too
        assert "symmetry maps p to q: True" in r["note"]
        assert "recovered every permutation: True" in r["note"]
    assert "derived spec equals the hand-written one: True" in pairs[1]["note"]
    reduced = [r for r in rows if r["task"].startswith("CNN: reduce")]
    assert len(reduced) == 1 and "12 channels removed (12 planted)" in reduced[0]["note"]
    shown = [r for r in rows if r["baseline_s"] is None and r not in reduced]
    assert shown and all("not equivalent: True" in r["note"] for r in shown)
