"""Which discrete symmetries exist, and where: the fiber search over small bottleneck
architectures (d <= 3, n1 <= 3, n2 <= 3).

For every architecture, random Gaussian targets ("generic") and targets whose second-layer
rows are drawn with chosen sign patterns ("planted": a single live row hiding a
first-layer neuron; always-active rows; ramps for n1 = 1) are searched with
``neuromanifold.relu._fiber.search.search_symmetries`` (many starts minimizing the
output difference on points of every region, candidates confirmed on a dense sample,
classified by the polynomial equivalence test). The table lists every cluster of
confirmed fiber points: which symmetries explain them, or what is new.

    python benchmarks/bench_symmetry_search.py [--quick] [--targets N] [--starts N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from neuromanifold.relu._fiber.search import search_symmetries


def planted(rng, widths, pattern):
    d, n1, n2, n3 = widths
    W1, b1 = rng.standard_normal((n1, d)), rng.standard_normal(n1)
    mag = lambda k: rng.uniform(0.3, 2.0, k)  # noqa: E731
    rows = []
    for j in range(n2):
        kind = pattern[j] if j < len(pattern) else "dead"
        if kind == "hiding":
            r = -mag(n1 + 1)
            r[0] = -r[0]
        elif kind == "linear":
            r = mag(n1 + 1)
        elif kind == "ramp":
            r = np.array([-mag(1)[0], mag(1)[0]])
        elif kind == "dead":
            r = -mag(n1 + 1)
        else:
            r = rng.standard_normal(n1 + 1)
        rows.append(r)
    R = np.array(rows)
    return [
        (W1, b1),
        (R[:, :-1].copy(), R[:, -1].copy()),
        (rng.standard_normal((n3, n2)), rng.standard_normal(n3)),
    ]


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small case (for tests)")
    parser.add_argument("--targets", type=int, default=None)
    parser.add_argument("--starts", type=int, default=None)
    args = parser.parse_args(argv)
    targets = args.targets or (1 if args.quick else 4)
    starts = args.starts or (6 if args.quick else 30)
    if args.quick:
        cases = [((2, 2, 2, 1), "generic", None)]
    else:
        archs = [
            (1, 1, 2, 1),
            (2, 1, 2, 1),
            (2, 2, 2, 1),
            (2, 2, 3, 1),
            (3, 2, 3, 1),
            (3, 3, 2, 1),
            (3, 3, 3, 1),
        ]
        cases = [(w, "generic", None) for w in archs]
        cases += [
            ((2, 1, 2, 1), "planted", ("ramp", "ramp")),
            ((2, 1, 3, 1), "planted", ("ramp", "ramp", "mixed")),
            ((3, 2, 3, 1), "planted", ("hiding", "dead", "dead")),
            ((3, 3, 3, 1), "planted", ("hiding", "dead", "dead")),
            ((3, 2, 3, 1), "planted", ("mixed", "linear", "dead")),
            ((3, 2, 3, 1), "planted", ("mixed", "linear", "linear")),
            ((3, 2, 3, 2), "planted", ("mixed", "linear", "linear")),
        ]
    rng = np.random.default_rng(0)
    rows = []
    print(f"fiber search: {targets} target(s) per case, {starts} starts each, seed 0")
    for widths, how, pattern in cases:
        t = time.perf_counter()
        clusters: dict = {}
        conf = 0
        for k in range(targets):
            if how == "generic":
                target = None
                S = search_symmetries(widths=widths, num_starts=starts, seed=rng)
            else:
                target = planted(rng, widths, pattern)
                S = search_symmetries(target, num_starts=starts, seed=rng)
            conf += S.confirmed
            for c in S.clusters:
                key = (c.kind, c.signature)
                clusters[key] = clusters.get(key, 0) + c.count
        label = how if pattern is None else f"{how} {list(pattern)}"
        print(
            f"{str(list(widths)):<14} {label:<40} confirmed {conf:>4}  "
            f"({time.perf_counter() - t:.0f} s)"
        )
        for (kind, sig), n in sorted(clusters.items(), key=lambda kv: -kv[1]):
            print(f"    {n:>4} x {kind}: {sig}")
        rows.append(
            {
                "widths": list(widths),
                "case": label,
                "confirmed": conf,
                "clusters": [
                    {"kind": k, "signature": s, "count": n} for (k, s), n in clusters.items()
                ],
            }
        )
    return rows


if __name__ == "__main__":
    main()
