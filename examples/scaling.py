"""How far each analysis of examples/digits.py scales: widths doubled, each step capped.

For each hidden width pair ``(n1, n2)`` (default 8-16, 16-32, 32-64, 64-128, then n1 kept
at 64 and n2 doubled, since n1 <= 64 is the bottleneck condition) a 64-n1-n2-10 network is
trained on the digits exactly as in digits.py, and each analysis runs in a child process
stopped after ``--cap`` seconds (default 60). Prints one line per network: the seconds of
each step, or ``>cap`` when it did not finish, or the error it raised.

Run:  python examples/scaling.py [--cap SECONDS] [--widths 8,16 16,32 ...]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import digits  # noqa: E402

from neuromanifold import (
    io,
    relu,  # noqa: E402
)

DEFAULT_WIDTHS = [(8, 16), (16, 32), (32, 64), (64, 128), (64, 256), (64, 512)]


def _analyses(p, pf):
    q, _ = digits.permuted_copy(p)
    return {
        "identifiability": lambda: relu.identifiability(p),
        "canonical_form": lambda: relu.canonical_form(p),
        "equiv_copy": lambda: relu.equivalent(p, q),
        "equiv_finetuned": lambda: relu.equivalent(p, pf),
        "fiber": lambda: relu.fiber(p),
        "functional_dim_R64": lambda: relu.functional_dimension(p),
    }


def _worker(p, pf, name, queue):
    t0 = time.perf_counter()
    try:
        res = _analyses(p, pf)[name]()
        extra = ""
        if name.startswith("equiv"):
            extra = f" ({'eq' if res.equivalent else 'not eq'}, {res.method})"
        queue.put(f"{time.perf_counter() - t0:.2f}s{extra}")
    except Exception as exc:  # reported, not hidden
        queue.put(
            f"{type(exc).__name__} after {time.perf_counter() - t0:.2f}s: "
            f"{str(exc).split('here: ')[-1][:110]}"
        )


def timed(p, pf, name, cap):
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_worker, args=(p, pf, name, queue))
    proc.start()
    proc.join(cap)
    if proc.is_alive():
        proc.terminate()
        proc.join()
        return f">{cap:g}s"
    return queue.get() if not queue.empty() else f"exit {proc.exitcode}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cap", type=float, default=60.0, help="seconds per step (default 60)")
    ap.add_argument("--widths", nargs="*", help="hidden widths as n1,n2 (default: doubling)")
    ap.add_argument("--max-iter", type=int, default=300, help="training iterations (as digits.py)")
    ap.add_argument("--skip", nargs="*", default=[], help="analyses not to run")
    args = ap.parse_args(argv)
    widths = (
        [tuple(int(v) for v in w.split(",")) for w in args.widths]
        if args.widths
        else DEFAULT_WIDTHS
    )
    for n1, n2 in widths:
        t0 = time.perf_counter()
        mlp = digits.train((n1, n2), args.max_iter)
        t_train = time.perf_counter() - t0
        p = io.load(mlp).params
        pf = io.load(digits.fine_tune(mlp)).params
        cells = [f"train {t_train:.1f}s"]
        for name in _analyses(p, pf):
            if name in args.skip:
                continue
            cells.append(f"{name} {timed(p, pf, name, args.cap)}")
        print(f"64-{n1}-{n2}-10: " + "; ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
