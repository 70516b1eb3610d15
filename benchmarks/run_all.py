"""Run every benchmark and write the suite's table: ``benchmarks/RESULTS.md`` and its
JSON twin ``benchmarks/RESULTS.json``.

Each ``bench_*.py`` exposes ``main(argv) -> rows``; rows carrying the suite's columns
(``_timing.suite_row``: task, size, ours, baseline, ratio, spread, peak memory) go into
the table. Studies that time nothing against a baseline (:data:`STUDIES`) are left to be
run on their own. Threads are pinned to the same number for both sides of every row: the
environment variables below are set before numpy loads (and XLA's flags before JAX
does); ``_timing.pin_threads`` also limits torch.

    python benchmarks/run_all.py [--quick] [--render] [--only bench_x,bench_y]
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import re
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")
if os.environ["OPENBLAS_NUM_THREADS"] == "1":
    os.environ.setdefault(
        "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    )

#: benchmarks that are studies (what exists, counted), not timings against a baseline
STUDIES = {"bench_symmetry_search"}

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _fmt(x, unit=""):
    if x is None:
        return "-"
    if unit == "s":
        return f"{x * 1e3:.1f} ms" if x < 1 else f"{x:.2f} s"
    return f"{x:.3g}"


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _cell(x) -> str:
    """A table cell: pipes escaped (sizes such as |v| and notes such as |v_a - v_b|)."""
    return str(x).replace("|", "\\|")


def render(report: dict) -> str:
    """RESULTS.md from the JSON report (measured, machine, quick, elapsed_s, rows)."""
    lines = [
        "# Benchmark results\n",
        f"Measured {report['measured']} on {report['machine']}"
        f"{' (quick mode)' if report['quick'] else ''}, in {report['elapsed_s']:.0f} s. "
        f"Both sides of every row ran in the same run; times are medians over repeats; "
        f"ratio = baseline / ours (> 1: ours is faster); spread = (max - min) / median "
        f"of our repeats; peak = Python-heap peak of ours."
        f"{(' Rows of ' + report['rerun'] + '.') if report.get('rerun') else ''}\n",
        "| task | size | ours | baseline | baseline time | ratio | spread | peak MB | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.1f}x"
        lines.append(
            f"| {_cell(r['task'])} | {_cell(r['size'])} | {_fmt(r['ours_s'], 's')} | "
            f"{_cell(r['baseline'])} | {_fmt(r['baseline_s'], 's')} | {ratio} | "
            f"{_fmt(r['spread'])} | {_fmt(r['peak_mb'])} | {_cell(r['note'])} |"
        )
    return "\n".join(lines) + "\n"


README = HERE.parent / "README.md"
_README_BLOCK = re.compile(r"(<!-- bench: summary -->\n)(.*?)(<!-- /bench -->)", re.S)


def summary(report: dict) -> str:
    """The README's summary of RESULTS.json: one line per (task, baseline) with the sizes
    measured, our time at the largest size and the range of the ratio (computed, never
    edited by hand; tests/test_benchmarks.py checks the README against it)."""
    groups: dict = {}
    for r in report["rows"]:
        groups.setdefault((r["task"], r["baseline"]), []).append(r)
    lines = [
        f"Measured {report['measured']}, {report['machine']}, in "
        f"{report['elapsed_s']:.0f} s"
        f"{('; rows of ' + report['rerun']) if report.get('rerun') else ''} "
        f"(`benchmarks/RESULTS.md` has every row).\n",
        "| task | baseline | sizes | ours, largest size | ratio (min - max) |",
        "|---|---|---|---|---|",
    ]
    for (task, baseline), rows in groups.items():
        ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
        rng = (
            "-"
            if not ratios
            else (
                f"{min(ratios):.3g}x"
                if len(ratios) == 1
                else f"{min(ratios):.3g}x - {max(ratios):.3g}x"
            )
        )
        last = rows[-1]
        sizes = (
            _cell(last["size"])
            if len(rows) == 1
            else f"{len(rows)} ({_cell(rows[0]['size'])} to {_cell(last['size'])})"
        )
        lines.append(
            f"| {_cell(task)} | {_cell(baseline)} | {sizes} | {_fmt(last['ours_s'], 's')} | {rng} |"
        )
    return "\n".join(lines) + "\n"


def readme_with_summary(text: str, report: dict) -> str:
    """``text`` (the README) with its marked benchmark block rewritten from ``report``."""
    return _README_BLOCK.sub(lambda m: m.group(1) + summary(report) + m.group(3), text)


def _write(report: dict) -> None:
    (HERE / "RESULTS.md").write_text(render(report))
    if README.exists():
        text = README.read_text()
        README.write_text(readme_with_summary(text, report))


def _reruns(previous: dict, only: set, when: str) -> dict:
    """When each benchmark not measured in the full run was rerun: the previous partial
    reruns, less the benchmarks rerun now, plus these (``{when: [names]}``)."""
    out: dict = {}
    for earlier, names in previous.get("reruns", {}).items():
        kept = [n for n in names if n not in only]
        if kept:
            out[earlier] = kept
    out[when] = sorted(only)
    return out


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="quick mode of every benchmark")
    parser.add_argument(
        "--render", action="store_true", help="only rewrite RESULTS.md from RESULTS.json"
    )
    parser.add_argument(
        "--only",
        metavar="NAMES",
        help="rerun these benchmarks (comma-separated stems) and keep the other "
        "rows of RESULTS.json; the note says which rows were rerun when",
    )
    args = parser.parse_args(argv)
    if args.render:
        report = json.loads((HERE / "RESULTS.json").read_text())
        _write(report)
        return report["rows"]
    rows, started = [], time.time()
    only = set(args.only.split(",")) if args.only else None
    previous = json.loads((HERE / "RESULTS.json").read_text()) if only else None
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    for path in sorted(HERE.glob("bench_*.py")):
        if path.stem in STUDIES:
            continue
        if only is not None and path.stem not in only:
            rows += [r for r in previous["rows"] if r.get("benchmark") == path.stem]
            continue
        module = importlib.import_module(path.stem)
        print(f"== {path.stem}", flush=True)
        t = time.perf_counter()
        out = module.main(["--quick"] if args.quick else [])
        suite = [dict(r, benchmark=path.stem) for r in out if "task" in r]
        rows += suite
        print(f"   {len(suite)} suite rows in {time.perf_counter() - t:.1f} s", flush=True)
    machine = (
        f"{_cpu_name()} ({platform.machine()}), {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, threads per side {os.environ['OPENBLAS_NUM_THREADS']}, "
        f"load average {load:.1f} at the start (shared machine)"
    )
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    report = {
        "measured": stamp,
        "machine": machine,
        "quick": args.quick,
        "elapsed_s": time.time() - started,
        "rows": rows,
    }
    if only is not None:  # a partial rerun: the rest was measured in earlier runs
        report.update(
            measured=previous["measured"],
            machine=previous["machine"],
            elapsed_s=previous["elapsed_s"],
            reruns=_reruns(previous, only, f"{stamp} ({machine})"),
        )
        report["rerun"] = "; ".join(
            f"{', '.join(names)} rerun {when}" for when, names in report["reruns"].items()
        )
    (HERE / "RESULTS.json").write_text(json.dumps(report, indent=2))
    if not args.quick:
        _write(report)
    else:
        (HERE / "RESULTS.md").write_text(render(report))
    print(f"wrote {HERE / 'RESULTS.md'}")
    return rows


if __name__ == "__main__":
    main()
