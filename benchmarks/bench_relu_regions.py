"""Linear-region enumeration of ReLU networks against the naive all-patterns baseline.

* Ours: ``neuromanifold.relu.iter_regions`` / ``regions`` (layer-by-layer refinement, a
  binary space partition per layer, streamed depth first; each cell carries a pool of
  interior points, a hyperplane with points on both sides crosses without any solve, the
  others are decided by a float walk across the cell (an active-set ascent) whose far
  point or emptiness certificate is checked exactly, with an LP only when that fails;
  non-crossing hyperplanes dropped from a sub-tree; every region and every discarded side
  certified in exact rational arithmetic). ``certify=False`` rows trust the floating-point
  walks and LPs instead (numerically checked regions). "LPs" counts HiGHS solves, "walks"
  the float walks that replace them.
* Baselines, run on the same network in the same run:
  - the textbook breadth-first search over regions (:func:`bfs_regions`): from the region
    of one point, try every neighbour pattern that differs in one neuron with one
    Chebyshev-centre LP (the same HiGHS binding, floats only, no certification); a pattern
    is a region iff the LP radius exceeds 1e-7. Adjacent regions of a generic network differ
    in exactly one neuron, so this finds every region. Run at every size, stopped at
    ``BFS_BUDGET`` seconds (the row then says how far it got and gives no ratio);
  - where 2^n is small, every one of the 2^n activation patterns, one LP each;
  - ``relucent`` (PyPI), a peer library, where it is installed (its own environment:
    ``benchmarks/_relucent_peer.py``); skipped with a note otherwise.
  Patterns found are compared with ours (same set, checked) wherever a baseline finished.

Rows: ours vs the baselines; growth with the width (2-w-w-1, with the fitted exponent
of time against width for both sides) and with the depth; throughput when streaming
~10^5-region networks in one process (4-20-20-1 on R^4, 87,698 regions; 30 s budget
certified, 20 s with ``certify=False``: the rate over what was streamed when the budget
ends first) and on two worker processes (4-21-21-1 on R^4, 120,438 regions, in full), and
8-32-32-1 on the box [-1, 1]^8 (20 s budget, one process and two workers), with the
process's resident memory after the first 2,000 regions and at the end (flat: the stream
keeps one path of the split tree); these report absolute figures only (no baseline
finishes at these sizes: the BFS makes one LP per region and neuron, 87,698 x 40 LPs);
the functional dimension.
Suite rows go to ``benchmarks/RESULTS.md``. Nothing is asserted on time.

    python benchmarks/bench_relu_regions.py [--quick] [--large] [--repeat N]

``--large`` adds 4-12-12-1 (13,689 regions) streamed in full.
"""

from __future__ import annotations

import argparse
import itertools
import os
import time

import numpy as np
from _timing import median_time, memory_mb, peak_memory_mb, suite_row

from neuromanifold import ComputationLimitError
from neuromanifold.relu import ReLUNet, functional_dimension, iter_regions, regions
from neuromanifold.relu._engine.cells import LP_TOL, RADIUS_CAP
from neuromanifold.relu._engine.lp import LPCounter, solve_lp

BASELINE = "all 2^n patterns, one LP each"
BFS = "textbook BFS, one LP per neighbour (HiGHS)"
#: seconds after which the BFS baseline is stopped (its row then has no ratio)
BFS_BUDGET = 120.0


def _pattern_lp(params, bits, d, sizes, counter):
    rows, offs = [], []
    H = np.hstack([np.eye(d), np.zeros((d, 1))])
    pos = 0
    for (W, b), n in zip(params[:-1], sizes):
        Z = W @ H
        Z[:, d] += b
        mask = np.array(bits[pos : pos + n])
        for j in range(n):
            a, c = Z[j, :d], Z[j, d]
            if not np.any(a):
                if mask[j] != (c > 0):
                    return False
            elif mask[j]:
                rows.append(-a)
                offs.append(c)
            else:
                rows.append(a)
                offs.append(-c)
        H = Z * mask[:, None]
        pos += n
    A = np.array(rows)
    nrm = np.linalg.norm(A, axis=1)
    k = len(rows)
    A_ub = np.zeros((k + 1, d + 1))
    A_ub[:k, :d] = A / nrm[:, None]
    A_ub[:k, d] = 1.0
    A_ub[k, d] = 1.0
    b_ub = np.append(np.array(offs) / nrm, RADIUS_CAP)
    obj = np.zeros(d + 1)
    obj[d] = -1.0
    sol = solve_lp(obj, A_ub, b_ub, counter=counter)
    return sol.status == "optimal" and sol.x[d] > LP_TOL


def naive_regions(params, limit: int | None = None) -> tuple[set, int, float]:
    """All 2^n patterns (or the first ``limit``), one LP each; returns the
    full-dimensional ones, the LP count and the seconds per pattern."""
    d = params[0][0].shape[1]
    sizes = [W.shape[0] for W, _ in params[:-1]]
    counter = LPCounter()
    found = set()
    t = time.perf_counter()
    patterns = itertools.product([False, True], repeat=sum(sizes))
    tried = 0
    for bits in itertools.islice(patterns, limit):
        tried += 1
        if _pattern_lp(params, bits, d, sizes, counter):
            found.add(bits)
    return found, counter.count, (time.perf_counter() - t) / max(tried, 1)


def _pattern_of(params, x) -> tuple[bool, ...]:
    """The activation pattern of the point ``x`` (every hidden neuron, layer by layer)."""
    bits, h = [], x
    for W, b in params[:-1]:
        z = W @ h + b
        bits += [bool(v > 0) for v in z]
        h = np.maximum(z, 0.0)
    return tuple(bits)


def bfs_regions(params, budget: float = BFS_BUDGET) -> tuple[set, int, float, bool]:
    """The textbook region search: breadth first from the region of a random point, one
    LP per candidate neighbour (the pattern with one neuron flipped) not seen before.
    Returns the patterns found, the LP count, the seconds, and whether it finished
    within ``budget``."""
    d = params[0][0].shape[1]
    sizes = [W.shape[0] for W, _ in params[:-1]]
    counter = LPCounter()
    t0 = time.perf_counter()
    start = _pattern_of(params, np.random.default_rng(0).standard_normal(d))
    found, seen, queue = {start}, {start}, [start]
    while queue:
        bits = queue.pop(0)
        for j in range(len(bits)):
            if time.perf_counter() - t0 > budget:
                return found, counter.count, time.perf_counter() - t0, False
            flipped = bits[:j] + (not bits[j],) + bits[j + 1 :]
            if flipped in seen:
                continue
            seen.add(flipped)
            if _pattern_lp(params, flipped, d, sizes, counter):
                found.add(flipped)
                queue.append(flipped)
    return found, counter.count, time.perf_counter() - t0, True


def _patterns(R) -> set:
    return {tuple(bool(v) for v in np.concatenate(r.pattern)) for r in R}


def _bfs_row(task, size, t_ours, spread, ours: set, bfs, note) -> dict:
    found, lps, t_bfs, finished = bfs
    if finished:
        return suite_row(
            task,
            size,
            t_ours,
            BFS,
            t_bfs,
            spread,
            note=f"{note}; BFS {lps} LPs, same set: {found == ours}",
        )
    return suite_row(
        task,
        size,
        t_ours,
        BFS,
        None,
        spread,
        note=f"{note}; BFS stopped at its {BFS_BUDGET:g} s budget after "
        f"{len(found)} regions and {lps} LPs (no ratio)",
    )


def _relucent_row(task, size, t_ours, ours: set, p) -> dict:
    """ours against relucent on ``p`` when relucent is installed, else a row that says so."""
    import _relucent_peer

    missing = _relucent_peer.available()
    if missing:
        return suite_row(task, size, t_ours, "relucent", None, note=missing)
    found, t_peer, finished = _relucent_peer.relucent_regions(p, BFS_BUDGET)
    if not finished:
        return suite_row(
            task,
            size,
            t_ours,
            "relucent",
            None,
            note=f"relucent stopped at {BFS_BUDGET:g} s (no ratio)",
        )
    return suite_row(
        task,
        size,
        t_ours,
        "relucent",
        t_peer,
        note=f"{len(found)} regions, same set: {found == ours}",
    )


def growth_exponent(widths: list[int], seconds: list[float]) -> float | None:
    """The slope of log(time) against log(width), least squares (None below two sizes)."""
    if len(widths) < 2:
        return None
    return float(np.polyfit(np.log(widths), np.log(seconds), 1)[0])


def _stream(p, certify=True):
    it = iter_regions(p, certify=certify)
    n = sum(1 for _ in it)
    return n, it.num_lps, it.num_exact_fallbacks, it.num_walks


def _rss_mb() -> float | None:
    """Resident memory of this process now (MB): flat while streaming means the stream
    holds nothing per region (the peak would carry earlier benchmarks of the same run)."""
    return memory_mb("VmRSS")


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the workers, once the
    stream has stopped and joined them)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def stream_rate(p, domain, certify: bool, budget: float, workers: int = 1) -> dict:
    """Stream the regions of ``p`` for at most ``budget`` seconds: regions, rate, LPs and
    walks per region, whether it finished, and the resident memory after 2,000 regions
    and at the end (of this process: the workers' memory is their own)."""
    it = iter_regions(p, domain, certify=certify, time_limit=budget, workers=workers)
    rss_early = None
    t0, c0 = time.perf_counter(), _cpu()
    try:
        for _ in it:
            if it.num_regions == 2000:
                rss_early = _rss_mb()
    except ComputationLimitError:
        pass
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    n = max(it.num_regions, 1)
    return {
        "regions": it.num_regions,
        "finished": it.finished,
        "seconds": wall,
        "rate": it.num_regions / wall,
        "cpu_rate": it.num_regions / max(cpu, 1e-9),
        "lps_per_region": it.num_lps / n,
        "walks_per_region": it.num_walks / n,
        "exact_fallbacks": it.num_exact_fallbacks,
        "rss_early_mb": rss_early,
        "rss_end_mb": _rss_mb(),
    }


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (for tests)")
    parser.add_argument("--large", action="store_true", help="add the ~10^5-region network")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    rows: list[dict] = []

    # 1. ours vs every baseline, in full, where 2^n is small enough to try every pattern
    vs = [[2, 3, 3, 1], [2, 4, 3, 1]] if args.quick else [[2, 6, 6, 1], [3, 8, 6, 1]]
    print("ours vs the textbook BFS and all 2^n patterns, on all of R^d, seed 0")
    print(
        f"{'widths':<16} {'2^n':>7} {'regions':>8} {'same':>5} {'LPs ours':>9} "
        f"{'LPs naive':>10} {'ours s':>8} {'BFS s':>8} {'naive s':>8}"
    )
    for w in vs:
        p = ReLUNet(w).random_params(0)
        size = "-".join(map(str, w))
        t_ours, spread, R = median_time(lambda: regions(p), args.repeat)
        t_naive, _, (found, n_lps, _) = median_time(lambda: naive_regions(p), 1)
        bfs = bfs_regions(p)
        ours = _patterns(R)
        row = {
            "widths": w,
            "patterns": 2 ** sum(w[1:-1]),
            "regions": R.num_regions,
            "same": ours == found and (ours == bfs[0] or not bfs[3]),
            "lps_ours": R.num_lps,
            "walks_ours": R.num_walks,
            "lps_naive": n_lps,
            "lps_bfs": bfs[1],
            "ours_s": t_ours,
            "baseline_s": t_naive,
            "bfs_s": bfs[2],
        }
        rows.append(row)
        note = f"{R.num_regions} regions; LPs {R.num_lps} (+ {R.num_walks} walks)"
        rows.append(
            suite_row(
                "relu regions, certified",
                size,
                t_ours,
                BASELINE,
                t_naive,
                spread,
                note=f"{note} vs {n_lps}; same set: {ours == found}",
            )
        )
        rows.append(_bfs_row("relu regions, certified", size, t_ours, spread, ours, bfs, note))
        rows.append(_relucent_row("relu regions, certified", size, t_ours, ours, p))
        print(
            f"{str(w):<16} {row['patterns']:>7} {R.num_regions:>8} {str(row['same']):>5} "
            f"{R.num_lps:>9} {n_lps:>10} {t_ours:>8.3f} {bfs[2]:>8.3f} {t_naive:>8.3f}"
        )

    # 2. growth with the width (2-w-w-1) and the depth, against the BFS run on each
    widths = (
        [[2, 6, 6, 1], [2, 8, 8, 1]]
        if args.quick
        else [
            [2, 8, 8, 1],
            [2, 16, 16, 1],
            [2, 24, 24, 1],
            [2, 32, 32, 1],
            [2, 8, 8, 8, 1],
            [2, 8, 8, 8, 8, 1],
        ]
    )
    print()
    print(
        f"growth: certified and certify=False, against the textbook BFS (stopped at "
        f"{BFS_BUDGET:g} s)"
    )
    print(
        f"{'widths':<18} {'regions':>8} {'LP/reg':>7} {'walk/reg':>7} {'ms/reg':>7} "
        f"{'ms/reg unc':>10} {'BFS s':>8}"
    )
    grow: dict[str, list] = {"w": [], "ours": [], "bfs": []}
    for w in widths:
        p = ReLUNet(w).random_params(0)
        t, spread, R = median_time(lambda: regions(p), args.repeat)
        t_u, _, R_u = median_time(lambda: regions(p, certify=False), 1)
        bfs = bfs_regions(p)
        ours, n, n_u = _patterns(R), R.num_regions, R_u.num_regions
        rows.append(
            {
                "widths": w,
                "regions": n,
                "lps_ours": R.num_lps,
                "walks_ours": R.num_walks,
                "ours_s": t,
                "uncertified_s": t_u,
                "same_count_uncertified": n == n_u,
                "bfs_s": bfs[2],
                "bfs_finished": bfs[3],
                "same": ours == bfs[0] or not bfs[3],
            }
        )
        size = "-".join(map(str, w))
        if len(w) == 4 and w[1] == w[2] and bfs[3]:
            grow["w"].append(w[1])
            grow["ours"].append(t)
            grow["bfs"].append(bfs[2])
        note = (
            f"{n} regions, {R.num_lps / n:.3f} LPs + {R.num_walks / n:.2f} walks/region, "
            f"{1e3 * t / n:.2f} ms/region"
        )
        rows.append(_bfs_row("relu regions, certified", size, t, spread, ours, bfs, note))
        if sum(w[1:-1]) <= 32:  # relucent has no time limit: the sizes it finishes in ~1 min
            rows.append(_relucent_row("relu regions, certified", size, t, ours, p))
        rows.append(
            _bfs_row(
                "relu regions, certify=False",
                size,
                t_u,
                0.0,
                _patterns(R_u),
                bfs,
                f"{n_u} regions, {1e3 * t_u / n_u:.2f} ms/region (numerically checked)",
            )
        )
        print(
            f"{size:<18} {n:>8} {R.num_lps / n:>7.3f} {R.num_walks / n:>7.2f} "
            f"{1e3 * t / n:>7.2f} {1e3 * t_u / n_u:>10.2f} {bfs[2]:>8.2f}"
            + ("" if bfs[3] else " (stopped)")
        )
    e_ours = growth_exponent(grow["w"], grow["ours"])
    e_bfs = growth_exponent(grow["w"], grow["bfs"])
    if e_ours is not None:
        fitted = f"w = {', '.join(map(str, grow['w']))}"
        print(
            f"time ~ width^{e_ours:.2f} (ours, certified) vs width^{e_bfs:.2f} (BFS), "
            f"2-w-w-1 at {fitted}"
        )
        rows.append(
            {
                "growth_exponent_ours": e_ours,
                "growth_exponent_bfs": e_bfs,
                "widths_fitted": grow["w"],
            }
        )
        rows.append(
            suite_row(
                "relu regions, growth in the width (2-w-w-1)",
                fitted,
                grow["ours"][-1],
                BFS,
                grow["bfs"][-1],
                note=f"time ~ width^{e_ours:.2f} (ours, certified) vs "
                f"width^{e_bfs:.2f} (BFS), least squares over the sizes "
                f"where the BFS finished; times at the largest",
            )
        )

    # 3. streaming memory: peak while streaming vs collecting the list
    w = [2, 8, 8, 1] if args.quick else [4, 8, 8, 1]
    p = ReLUNet(w).random_params(0)
    peak_stream = peak_memory_mb(lambda: _stream(p, False))
    peak_list = peak_memory_mb(lambda: regions(p, certify=False))
    rows.append({"widths": w, "peak_stream_mb": peak_stream, "peak_list_mb": peak_list})
    print(f"\nPython-heap peak, {w}: streamed {peak_stream:.2f} MB, as a list {peak_list:.2f} MB")

    # 4. throughput, streamed under a time budget: ~10^5-region networks on R^4 and
    # 8-32-32-1 on the box [-1, 1]^8, in one process and on two worker processes
    # (--large adds 4-12-12-1 streamed in full)
    runs = (
        [
            ([3, 6, 6, 1], None, True, 5.0, 1),
            ([3, 6, 6, 1], None, False, 5.0, 1),
            ([3, 8, 8, 1], None, True, 5.0, 2),
        ]
        if args.quick
        else [
            ([4, 20, 20, 1], None, True, 30.0, 1),
            ([4, 20, 20, 1], None, False, 20.0, 1),
            ([4, 21, 21, 1], None, True, 120.0, 2),
            ([8, 32, 32, 1], (-1.0, 1.0), True, 20.0, 1),
            ([8, 32, 32, 1], (-1.0, 1.0), True, 20.0, 2),
        ]
    )
    if args.large:
        runs += [([4, 12, 12, 1], None, True, 600.0, 1), ([4, 12, 12, 1], None, False, 600.0, 1)]
    for w, domain, certify, budget, workers in runs:
        p = ReLUNet(w).random_params(0)
        res = stream_rate(p, domain, certify, budget, workers)
        label = ("certified" if certify else "certify=False") + (
            "" if workers == 1 else f", {workers} workers"
        )
        where = "R^%d" % w[0] if domain is None else "[-1, 1]^%d" % w[0]
        done = "all" if res["finished"] else f"first (budget {budget:g} s)"
        mem = (
            f"; resident {res['rss_early_mb']:.0f} MB after 2,000 regions, "
            f"{res['rss_end_mb']:.0f} MB at the end"
            if res["rss_early_mb"]
            else ""
        )
        rows.append(
            dict(res, widths=w, domain=where, certify=certify, budget_s=budget, workers=workers)
        )
        rows.append(
            suite_row(
                f"relu regions streamed, {label}",
                "-".join(map(str, w)) + (f" on {where}" if domain else ""),
                res["seconds"],
                "-",
                None,
                note=f"{done} {res['regions']} regions, {res['rate']:.0f} "
                f"regions/s ({res['cpu_rate']:.0f} per CPU second, "
                f"workers included), {res['lps_per_region']:.4f} LPs + "
                f"{res['walks_per_region']:.2f} walks/region{mem}",
            )
        )
        print(
            f"{w} on {where} {label}: {done} {res['regions']} regions in "
            f"{res['seconds']:.1f} s ({res['rate']:.0f}/s, {res['cpu_rate']:.0f} per CPU "
            f"second, workers included, {res['lps_per_region']:.4f} LPs + "
            f"{res['walks_per_region']:.2f} walks per region){mem}"
        )

    # 5. functional dimension: sampled regions first, then a MILP per open kernel direction
    # (the default at tol > 0), against enumerating every region (method="regions")
    fds = (
        [([2, 4, 4, 1], 1)]
        if args.quick
        else [([3, 4, 4, 1], 0), ([3, 8, 8, 1], 1), ([4, 16, 16, 1], 0), ([4, 16, 16, 1], 1)]
    )
    for w, seed in fds:
        p = ReLUNet(w).random_params(seed)
        t, spread, fd = median_time(lambda: functional_dimension(p), 1)
        peak = peak_memory_mb(lambda: functional_dimension(p)) if args.quick else None
        small = sum(w[1:-1]) <= 16
        t_reg, _, fr = (
            median_time(lambda: functional_dimension(p, method="regions"), 1)
            if small
            else (None, 0.0, None)
        )
        same = "" if fr is None else f"; same rank as every region: {fr.rank == fd.rank}"
        base_note = "" if small else "; every region (32,739 at seed 0): not run here"
        rows.append(
            suite_row(
                "relu functional dimension (tol 1e-9)",
                f"{'-'.join(map(str, w))} seed {seed}",
                t,
                "every region, exact rows (method='regions')",
                t_reg,
                spread=spread,
                peak_mb=peak,
                note=f"rank {fd.rank} / bound {fd.bound} by {fd.method}: "
                f"{fd.num_sampled_regions} sampled regions, "
                f"{fd.num_milps} MILPs, certified={fd.certified}{same}"
                f"{base_note}",
            )
        )
        print(
            f"functional dimension {w} seed {seed}: rank {fd.rank}/{fd.bound} by "
            f"{fd.method} in {t:.2f} s ({fd.num_milps} MILPs)"
            + ("" if t_reg is None else f"; every region {t_reg:.2f} s")
        )
    return rows


if __name__ == "__main__":
    main()
