"""``neuromanifold verify``: a VNN-LIB 2.0 query about two networks, answered as the
verification community's solvers answer it.

    neuromanifold verify QUERY.vnnlib --network f=A.onnx --network g=B.onnx --timeout 100

The first line printed is the answer: ``sat`` (a counterexample exists: it follows,
re-checked in exact arithmetic), ``unsat`` (proven: none on the box) or ``unknown`` (the
time ran out). Then the certified interval of the largest margin of the query's output
constraints over the box (``unsat`` when its upper end is below 0). ``--result FILE``
writes the answer in VNN-COMP's result format (the status line, and for ``sat`` the
counterexample as ``((X_0 v) ... (Y_0 v) ...)``). Exit status 0 whatever the answer.
"""

from __future__ import annotations

import argparse
import sys

from ._common import emit, load_model, positive_float, positive_int, writable_path

#: the default time limit, VNN-COMP's per-instance timeout
TIMEOUT = 100.0


def register(sub) -> None:
    p = sub.add_parser(
        "verify",
        help="answer a two-network VNN-LIB 2.0 query: sat, unsat or unknown",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("query", help="the VNN-LIB 2.0 query (.vnnlib)")
    p.add_argument(
        "--network",
        action="append",
        default=[],
        metavar="NAME=MODEL",
        help="a network the query declares, and its model file (ONNX, safetensors, .npz, "
        "...); once per declared network",
    )
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=TIMEOUT,
        help=f"seconds (default {TIMEOUT:g}); the answer is unknown when it ends first",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the search for counterexamples")
    p.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        metavar="N",
        help="processes for the branch and bound (default 1)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the branch and bound on this Dask cluster (tcp://HOST:8786), or 'local' "
        "for a LocalCluster of --workers processes",
    )
    p.add_argument(
        "--result", type=writable_path, metavar="FILE", help="write VNN-COMP's result file"
    )
    p.add_argument("--json", metavar="PATH", help="also write the result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .. import io, relu  # start-up: loaded when the command runs
    from .._errors import InputError  # start-up: as above

    query = io.read_vnnlib(args.query)
    given = {}
    for item in args.network:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InputError(f"--network takes NAME=MODEL (as f=A.onnx); got {item!r}")
        if name in given:
            raise InputError(f"--network {name} given twice")
        given[name] = path
    missing = [n for n in query.names if n not in given]
    extra = [n for n in given if n not in query.names]
    if missing or extra:
        raise InputError(
            f"the query declares the networks {', '.join(query.names)}; "
            + (f"no --network for {', '.join(missing)}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"--network {', '.join(extra)} is not declared" if extra else "")
        )
    f = load_model(given[query.names[0]], kind="relu")
    g = load_model(given[query.names[1]], kind="relu")
    res = relu.verify(
        f,
        g,
        query,
        time_limit=args.timeout,
        seed=args.seed,
        workers=args.workers,
        scheduler=args.scheduler,
    )
    lines = [res.status, _describe(res, query)]
    if args.result:
        with open(args.result, "w") as fh:
            fh.write(_result_file(res))
        print(f"wrote {args.result}", file=sys.stderr)
    return emit(args, "\n".join(lines), res)


def _describe(res, query) -> str:
    f, g = query.names
    out = [
        f"  max over the box of the query's margins: [{res.lower:.6g}, {res.upper:.6g}] "
        f"(certified; a counterexample needs a margin above 0)",
        f"  {res.note}; {res.seconds:.1f} s",
    ]
    if res.status == "sat":
        x = ", ".join(f"{v:.9g}" for v in res.counterexample)
        out.insert(0, f"  counterexample x = [{x}]")
        out.insert(1, f"  meets {query.text[res.violated]} with margin {res.margin:.6g}")
        out.insert(2, f"  {f}(x) = {_vec(res.f_outputs)}, {g}(x) = {_vec(res.g_outputs)}")
    return "\n".join(out)


def _vec(v) -> str:
    return "[" + ", ".join(f"{float(a):.9g}" for a in v) + "]"


def _result_file(res) -> str:
    """VNN-COMP's result file: the status, and for ``sat`` the input and the first
    network's output as ``((X_i v) ... (Y_j v))``."""
    if res.status != "sat":
        return res.status + "\n"
    parts = [f"(X_{i} {float(v)!r})" for i, v in enumerate(res.counterexample)]
    parts += [f"(Y_{j} {float(v)!r})" for j, v in enumerate(res.f_outputs)]
    return "sat\n(" + "\n ".join(parts) + ")\n"
