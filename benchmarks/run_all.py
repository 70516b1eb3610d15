"""Run every benchmark and write the suite's table: ``benchmarks/RESULTS.md`` and its
JSON twin ``benchmarks/RESULTS.json``.

Each ``bench_*.py`` exposes ``main(argv) -> rows``; rows carrying the suite's columns
(``_timing.suite_row``: task, size, ours, baseline, ratio, spread, peak memory) go into
the table. BLAS threads are pinned to the same number for both sides of every row (the
environment variables below are set before numpy loads).

    python benchmarks/run_all.py [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _fmt(x, unit=""):
    if x is None:
        return "-"
    if unit == "s":
        return f"{x * 1e3:.1f} ms" if x < 1 else f"{x:.2f} s"
    return f"{x:.3g}"


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="quick mode of every benchmark")
    args = parser.parse_args(argv)
    rows, started = [], time.time()
    for path in sorted(HERE.glob("bench_*.py")):
        module = importlib.import_module(path.stem)
        print(f"== {path.stem}", flush=True)
        t = time.perf_counter()
        out = module.main(["--quick"] if args.quick else [])
        suite = [dict(r, benchmark=path.stem) for r in out if "task" in r]
        rows += suite
        print(f"   {len(suite)} suite rows in {time.perf_counter() - t:.1f} s", flush=True)
    machine = (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
               f"BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# Benchmark results\n",
             f"Measured {stamp} on {machine}{' (quick mode)' if args.quick else ''}, in "
             f"{time.time() - started:.0f} s. Both sides of every row ran in the same run; "
             f"times are medians over repeats; ratio = baseline / ours (> 1: ours is faster); "
             f"spread = (max - min) / median of our repeats; peak = Python-heap peak of ours.\n",
             "| task | size | ours | baseline | baseline time | ratio | spread | peak MB | note |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.1f}x"
        lines.append(f"| {r['task']} | {r['size']} | {_fmt(r['ours_s'], 's')} | {r['baseline']} "
                     f"| {_fmt(r['baseline_s'], 's')} | {ratio} | {_fmt(r['spread'])} | "
                     f"{_fmt(r['peak_mb'])} | {r['note']} |")
    (HERE / "RESULTS.md").write_text("\n".join(lines) + "\n")
    (HERE / "RESULTS.json").write_text(json.dumps({"measured": stamp, "machine": machine,
                                                   "quick": args.quick, "rows": rows}, indent=2))
    print(f"wrote {HERE / 'RESULTS.md'}")
    return rows


if __name__ == "__main__":
    main()
