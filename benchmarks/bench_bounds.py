"""The bound engine on the verification community's own networks: ACAS Xu (VNN-COMP's
ONNX files) against its pruned and perturbed copies, and checkpoints at MNIST size.

Rows, each pair measured in one run:

* **ACAS Xu equivalence queries** ("is ``|f(x) - g(x)|_inf <= 0.05`` on the box?", the
  question of VNN-COMP's equivalence benchmarks; the box of ACAS Xu property 1 with the
  last input fixed at -0.45): ``relu.verify`` with VNN-COMP's 100 s timeout, its answer
  and time; then ``relu.distance`` for 30 s on 2 processes, its certified interval (and
  whether it is within 10 % of the difference). Beside them, in the same run on the same
  pair: the interval bound the library gave before the bound engine (interval arithmetic
  over the box, the two networks' difference carried through the layers) and dense
  uniform sampling for the same time (a lower bound only). The networks are read from
  ``--acas DIR`` or ``$NEUROMANIFOLD_ACAS_DIR`` (files ``ACASXU_run2a_I_J_batch_2000.onnx``),
  else downloaded once from VNN-COMP 2021's public repository into
  ``~/.cache/neuromanifold/acasxu``; rows are skipped (and say why) when neither works.
* **Scale-out**: the branch and bound of the hardest ACAS Xu pair (2_2 against its
  perturbed copy) on 2 processes against the serial one, the same budget each: boxes
  bounded and the upper end reached (the parallel efficiency is the ratio of boxes per
  second over the number of processes).
* **Checkpoints at MNIST size**: 784-64-32-10 on [0, 1]^784 and 64-32-16-10 on [0, 1]^64,
  every weight moved by a relative N(0, 1e-3): ``relu.distance`` for 30 s, against the
  interval bound and sampling.

* **Against alpha-CROWN** (auto_LiRPA, the bound engine of alpha-beta-CROWN; only where it
  is installed, as ``make bench-peers`` does, see ``benchmarks/_lirpa_peer.py``): on every
  pair above, alpha-CROWN's bound of the distance on the product network (100 optimization
  steps) and its time, then ``relu.distance`` for that same time on the same pair: the two
  upper ends side by side. alpha-beta-CROWN itself (its branch and bound, and the time to a
  decided instance) is not run here: its command line needs its own configuration files and
  VNN-LIB 1.0 single-network queries.

    python benchmarks/bench_bounds.py [--quick] [--acas DIR]
"""

from __future__ import annotations

import argparse
import os
import time
import urllib.request
from pathlib import Path

import numpy as np
from _timing import suite_row

import neuromanifold as nm
from neuromanifold import relu
from neuromanifold.relu._bounds.interval import box_bounds, difference_bounds
from neuromanifold.relu._core.domain import Domain

#: the ACAS Xu networks of VNN-COMP 2021 (public repository, MIT-licensed benchmarks)
_URL = (
    "https://raw.githubusercontent.com/stanleybak/vnncomp2021/main/benchmarks/acasxu/"
    "ACASXU_run2a_{}_batch_2000.onnx"
)
#: ACAS Xu property 1's box, the last input fixed (as VNN-COMP's equivalence instances)
LOWER = np.array([0.6, -0.5, -0.5, 0.45, -0.45])
UPPER = np.array([0.679857769, 0.5, 0.5, 0.5, -0.45])
EPS = 0.05
TIMEOUT = 100.0
DISTANCE_BUDGET = 30.0
#: processes of the distance rows' branch and bound (the goal's machine has 2 cores)
WORKERS = 2


def acas_network(name: str, folder: str | None) -> list | None:
    """The ACAS Xu network ``name`` (as ``"1_1"``), or ``None`` when it cannot be had."""
    file = f"ACASXU_run2a_{name}_batch_2000.onnx"
    for d in (folder, os.environ.get("NEUROMANIFOLD_ACAS_DIR")):
        if d and (Path(d) / file).is_file():
            return nm.io.load(Path(d) / file).params
    cache = Path.home() / ".cache" / "neuromanifold" / "acasxu"
    path = cache / file
    if not path.is_file():
        try:
            cache.mkdir(parents=True, exist_ok=True)
            with urllib.request.urlopen(_URL.format(name), timeout=30) as resp:
                path.write_bytes(resp.read())
        except OSError:
            return None
    return nm.io.load(path).params


def pruned(params: list, fraction: float) -> list:
    """Each layer's smallest ``fraction`` of weights (by magnitude) set to zero."""
    out = []
    for W, b in params:
        t = np.quantile(np.abs(W), fraction)
        out.append((np.where(np.abs(W) < t, 0.0, W), b.copy()))
    return out


def perturbed(params: list, size: float, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [
        (
            W * (1 + size * rng.standard_normal(W.shape)),
            b * (1 + size * rng.standard_normal(b.shape)),
        )
        for W, b in params
    ]


def interval_bound(p: list, q: list, lo: np.ndarray, hi: np.ndarray) -> float:
    """The library's upper bound before the bound engine: interval arithmetic."""
    dom = Domain.box(lo, hi)
    with np.errstate(all="ignore"):
        lp, hp = box_bounds(p, dom)[-1]
        lq, hq = box_bounds(q, dom)[-1]
        width = float(np.max(np.maximum(hp - lq, hq - lp)))
        dlo, dhi = difference_bounds(p, q, dom)[0][-1]
    return min(width, float(np.max(np.maximum(-dlo, dhi))))


def sampled(p: list, q: list, lo, hi, seconds: float, seed: int = 0) -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    best, n, t0 = 0.0, 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        X = rng.uniform(lo, hi, (4096, lo.size))
        best = max(best, float(np.abs(relu.forward(p, X) - relu.forward(q, X)).max()))
        n += len(X)
    return best, n


def _distance_row(task: str, size: str, p, q, lo, hi, budget: float) -> tuple[dict, str]:
    t0 = time.perf_counter()
    r = relu.distance(p, q, (lo, hi), gap=0.0, method="bounds", time_limit=budget, workers=WORKERS)
    t = time.perf_counter() - t0
    # the interval narrows to 10 % of the difference: stop there (a second call with that
    # gap would measure the same work again, so the first call's history is not split)
    within = r.upper - r.lower <= 0.1 * r.lower
    old = interval_bound(p, q, lo, hi)
    best, n = sampled(p, q, lo, hi, t)
    note = (
        f"[{r.lower:.4g}, {r.upper:.4g}] in {t:.1f} s on {WORKERS} processes "
        f"({'within' if within else 'not within'} "
        f"10 %); interval arithmetic (the previous upper end) {old:.4g}; dense sampling for "
        f"the same time ({n:,} points) {best:.4g}"
    )
    return suite_row(task, size, t, "-", None, note=note), note


def _parallel_row(p, q, seconds: float, size: str) -> tuple[dict, str]:
    """Serial and 2-process branch and bound of ``q - p`` on the ACAS Xu box, ``seconds``
    each, on the difference chain as ``distance`` runs it (on a pair neither closes in that
    time: once the interval has closed, the boxes left are small and cheap to bound, and
    boxes per second no longer measure the work)."""
    from neuromanifold.relu._bounds.branch import branch_and_bound
    from neuromanifold.relu._bounds.linear import difference_chain
    from neuromanifold.relu._bounds.parallel import parallel_branch_and_bound
    from neuromanifold.relu._equivalence.alignment import DifferenceAt

    args = (difference_chain(p, q), LOWER, UPPER, DifferenceAt(p, q))
    serial = branch_and_bound(*args, gap=0.0, deadline=time.monotonic() + seconds)
    two = parallel_branch_and_bound(*args, workers=2, gap=0.0, deadline=time.monotonic() + seconds)
    eff = two.num_boxes / (2 * serial.num_boxes)
    note = (
        f"{seconds:g} s each: 2 processes bounded {two.num_boxes:,} boxes (upper "
        f"{two.upper:.4g}), serial {serial.num_boxes:,} (upper {serial.upper:.4g}); "
        f"parallel efficiency {eff:.0%}"
    )
    row = suite_row(
        f"branch and bound on 2 processes (ACAS Xu {size})",
        "5-50x6-5",
        seconds,
        "serial, same budget",
        None,
        note=note,
    )
    return row, note


def _peer_row(size: str, p, q, lo, hi) -> tuple[dict, str]:
    """alpha-CROWN's bound of the distance (product network, auto_LiRPA) and ours after the
    same time, on the same pair; a row saying why when auto_LiRPA is missing."""
    import _lirpa_peer  # optional peer: its module imports auto_LiRPA only when called

    task = "relu distance vs alpha-CROWN, same time (upper end)"
    missing = _lirpa_peer.available()
    if missing:
        return suite_row(task, size, 0.0, "alpha-CROWN", None, note=f"skipped: {missing}"), missing
    theirs, t_peer = _lirpa_peer.alpha_crown_distance(p, q, lo, hi)
    t0 = time.perf_counter()
    r = relu.distance(p, q, (lo, hi), gap=0.0, method="bounds", time_limit=t_peer)
    t = time.perf_counter() - t0
    note = (
        f"upper end after {t_peer:.1f} s (alpha-CROWN's time; ours stopped after {t:.1f} s): "
        f"ours {r.upper:.4g} (certified {r.certified}), "
        f"alpha-CROWN {theirs:.4g} ({theirs / r.upper:,.0f}x looser; auto_LiRPA 0.7.1, "
        f"CROWN-Optimized, 100 steps, float32, product network); our lower end {r.lower:.4g}"
    )
    # the comparison is the upper end at one time, not a time: no ratio of times
    row = suite_row(task, size, t, "alpha-CROWN (auto_LiRPA), same time", None, note=note)
    return row, note


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (for tests)")
    parser.add_argument("--acas", help="folder holding the ACAS Xu ONNX files")
    args = parser.parse_args(argv)
    rows = []
    names = ["1_1"] if args.quick else ["1_1", "2_2", "5_2"]
    copies = (
        [("5 %-pruned", lambda p: pruned(p, 0.05))]
        if args.quick
        else [
            ("5 %-pruned", lambda p: pruned(p, 0.05)),
            ("30 %-pruned", lambda p: pruned(p, 0.30)),
            ("N(0, 1e-3)-perturbed", lambda p: perturbed(p, 1e-3)),
        ]
    )
    timeout = 2.0 if args.quick else TIMEOUT
    budget = 1.0 if args.quick else DISTANCE_BUDGET
    for name in names:
        p = acas_network(name, args.acas)
        if p is None:
            rows.append(
                suite_row(
                    "relu verify, ACAS Xu equivalence",
                    f"ACAS Xu {name}",
                    0.0,
                    "-",
                    None,
                    note="skipped: the ONNX file could not be read or downloaded (--acas DIR)",
                )
            )
            continue
        for label, make in copies:
            q = make(p)
            query = relu.DifferenceQuery.within(LOWER, UPPER, EPS, 5)
            t0 = time.perf_counter()
            v = relu.verify(p, q, query, time_limit=timeout)
            t = time.perf_counter() - t0
            size = f"ACAS Xu {name} vs {label}, eps {EPS:g}"
            rows.append(
                suite_row(
                    "relu verify, ACAS Xu equivalence (VNN-COMP box)",
                    size,
                    t,
                    "-",
                    None,
                    note=f"{v.status} in {t:.1f} s (timeout {timeout:g} s); largest margin "
                    f"in [{v.lower:.4g}, {v.upper:.4g}]; {v.num_boxes:,} boxes",
                )
            )
            print(f"{size}: {v.status} in {t:.1f} s")
            row, note = _distance_row(
                "relu distance, ACAS Xu (certified interval)",
                f"ACAS Xu {name} vs {label}",
                p,
                q,
                LOWER,
                UPPER,
                budget,
            )
            rows.append(row)
            print(f"  distance: {note}")
            row, note = _peer_row(f"ACAS Xu {name} vs {label}", p, q, LOWER, UPPER)
            rows.append(row)
            print(f"  alpha-CROWN: {note}")
            if name == "2_2" and label.startswith("N(0") and not args.quick:
                row, note = _parallel_row(p, q, budget, f"{name} vs {label}")
                rows.append(row)
                print(f"  scale-out: {note}")
    sizes = [[64, 32, 16, 10]] if args.quick else [[64, 32, 16, 10], [784, 64, 32, 10]]
    for widths in sizes:
        p = relu.ReLUNet(widths).random_params(seed=0)
        q = perturbed(p, 1e-3, seed=1)
        d = widths[0]
        row, note = _distance_row(
            "relu distance, checkpoints (certified interval)",
            f"{'-'.join(map(str, widths))} vs N(0, 1e-3) copy on [0, 1]^{d}",
            p,
            q,
            np.zeros(d),
            np.ones(d),
            budget,
        )
        rows.append(row)
        print(f"{'-'.join(map(str, widths))}: {note}")
        size = f"{'-'.join(map(str, widths))} vs N(0, 1e-3) copy on [0, 1]^{d}"
        row, note = _peer_row(size, p, q, np.zeros(d), np.ones(d))
        rows.append(row)
        print(f"  alpha-CROWN: {note}")
    return rows


if __name__ == "__main__":
    main()
