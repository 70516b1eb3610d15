"""``neuromanifold sweep CONFIG.toml``: run a grid of analyses x architectures x seeds.

Tasks run on all local cores by default, or on a Dask cluster with ``--scheduler
tcp://HOST:PORT``. Results stream to a JSON Lines file (``--out``, else the
configuration's ``output``); a rerun skips the tasks already there, so nothing is lost
after a crash; a failing task is recorded with its error. Example configuration::

    seeds = 5
    output = "dependence.jsonl"

    [[grid]]
    analysis = "ntk_dependence"
    architectures = [{filters = [2, 2], strides = [1]},
                     {filters = [3, 2, 2], strides = [2, 2]}]

Analyses: conservation, linear_dimension, ntk_dependence, relu_functional_dimension,
relu_regions.
"""

from __future__ import annotations

import argparse

from ._common import emit


def run(args: argparse.Namespace) -> int:
    from ..sweep import load_config, run_sweep  # start-up: loaded when the subcommand runs

    config = load_config(args.config)
    summary = run_sweep(
        config, args.out, scheduler=args.scheduler, workers=args.workers, progress=True
    )
    text = (
        f"{summary.total} tasks: {summary.skipped} already done, {summary.ran} run now "
        f"({summary.failed} failed) in {summary.seconds:.1f} s -> {summary.output}"
    )
    return emit(args, text, summary.to_dict())


def register(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a grid of analyses on local cores or a Dask cluster",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("config", help="the sweep's TOML configuration")
    p.add_argument("--out", help="JSON Lines output (default: the configuration's 'output')")
    p.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://HOST:8786")
    p.add_argument("--workers", type=int, default=None, help="local processes (default: all cores)")
    p.add_argument("--json", metavar="PATH", help="also write the summary as JSON")
    p.set_defaults(func=run)
