"""Practitioners' sizes: the exact ReLU analyses on networks trained with scikit-learn,
each bounded by a budget.

Networks (``MLPRegressor``, ReLU, Adam, ``random_state=0``, loaded with
``neuromanifold.io.load``): 4-16-16-1 trained on 4-D data (analysed on all of R^4),
8-32-32-1 trained on 8-D data (analysed on the box [-1, 1]^8), 2-16-16-1 trained on 2-D
data. Every row runs under a ``time_limit`` and says "did not finish within N s" when it
runs out, with how far it got. The memory rows run in a fresh process and report its peak resident
memory (imports included, about 150-200 MB).

Baselines: where one runs on the same input in the same run (``method="regions"`` against
``method="auto"``), a ratio; every other row reports absolute figures only (time, regions,
rate, memory), since a figure from another run or another network is no baseline.

    python benchmarks/bench_practitioner.py [--quick]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _timing import suite_row

from neuromanifold import ComputationLimitError, io, relu

NONE = "-"  # no baseline run on this input: absolute figures only
SEED = 0


def trained(d: int, hidden: tuple, n: int = 2000, max_iter: int = 300):
    """``MLPRegressor(hidden)`` fitted on ``n`` points of a smooth target on [-1, 1]^d."""
    from sklearn.neural_network import MLPRegressor

    rng = np.random.default_rng(SEED)
    X = rng.uniform(-1.0, 1.0, (n, d))
    y = np.sin(X @ rng.standard_normal(d)) + 0.5 * np.cos(2 * X[:, 0]) * X[:, -1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at small max_iter
        mlp = MLPRegressor(hidden_layer_sizes=hidden, random_state=SEED, max_iter=max_iter).fit(
            X, y
        )
    return io.load(mlp).params


def permuted_rescaled(p, seed: int = 1):
    """A copy with every hidden layer permuted and rescaled by factors in [0.5, 2]."""
    rng = np.random.default_rng(seed)
    q = [(W.copy(), b.copy()) for W, b in p]
    for l in range(len(q) - 1):
        n = q[l][0].shape[0]
        perm, s = rng.permutation(n), rng.uniform(0.5, 2.0, n)
        (W, b), (W2, b2) = q[l], q[l + 1]
        q[l] = (W[perm] * s[:, None], b[perm] * s)
        q[l + 1] = (W2[:, perm] / s[None, :], b2)
    return q


def split_neuron(p, j: int = 3):
    """``p`` with first-layer neuron ``j`` split into two (weights 3/4 and 1/4, both
    feeding the next layer with its weights): the same function, one more neuron, so no
    permutation or rescaling relates the two (the sampled and symmetry checks cannot
    decide; before, ``auto`` then ran the MILP)."""
    (W1, b1), (W2, b2), *rest = p
    W1s, b1s = np.vstack([W1, 0.25 * W1[j : j + 1]]), np.append(b1, 0.25 * b1[j])
    W1s[j] *= 0.75
    b1s[j] *= 0.75
    return [(W1s, b1s), (np.hstack([W2, W2[:, j : j + 1]]), b2), *rest]


def dead_on_box(p, seed: int = 2):
    """``p`` with one more first-layer neuron whose hyperplane misses the box [-1, 1]^d
    (inactive on it) and whose outgoing weights are random: the same function on the box,
    not elsewhere; no symmetry or reduction relates the two."""
    rng = np.random.default_rng(seed)
    (W1, b1), (W2, b2), *rest = p
    w = rng.standard_normal(W1.shape[1])
    return [
        (np.vstack([W1, w]), np.append(b1, -(np.abs(w).sum() + 0.5))),
        (np.hstack([W2, rng.standard_normal((W2.shape[0], 1))]), b2),
        *rest,
    ]


def budgeted(fn):
    """Run ``fn`` (which has a budget); ``(seconds, result or None, error or None)``: a
    ComputationLimitError is caught and returned."""
    t0 = time.perf_counter()
    res = err = None
    try:
        res = fn()
    except ComputationLimitError as exc:
        err = exc
    return time.perf_counter() - t0, res, err


def _status(err, budget: float) -> str:
    if err is None:
        return "finished"
    return f"did not finish within {budget:g} s ({err.num_regions} regions, {err.num_lps} LPs)"


#: one analysis in a fresh process under a time limit; prints JSON with the peak RSS
CHILD = """
import json, pickle, sys, time
from neuromanifold import ComputationLimitError, relu
name, path, budget = sys.argv[1], sys.argv[2], float(sys.argv[3])
p, dom = pickle.load(open(path, "rb"))
out = {}
t = time.perf_counter()
try:
    if name == "functional_dimension":
        r = relu.functional_dimension(p, dom, time_limit=budget)
        out.update(rank=r.rank, bound=r.bound, regions=r.num_regions, method=r.method,
                   milps=r.num_milps, certified=r.certified)
    else:
        r = getattr(relu, name)(p, dom, time_limit=budget)
    out["finished"] = True
except ComputationLimitError as e:
    out.update(finished=False, regions=e.num_regions, lps=e.num_lps,
               families=getattr(e.partial, "num_subsets", None))
out["seconds"] = time.perf_counter() - t
# the peak of this process's own address space (getrusage's ru_maxrss keeps the parent's
# peak across fork and exec: 2 GB after the other benchmarks of run_all.py)
out["rss_mb"] = next(int(line.split()[1]) / 1024 for line in open("/proc/self/status")
                     if line.startswith("VmHWM:"))
print(json.dumps(out))
"""


def in_child(name: str, params, domain, budget: float) -> dict:
    """Run ``relu.<name>(params, domain, time_limit=budget)`` in a fresh process (its peak
    resident memory is then the analysis's, imports included); a process past ``budget``
    seconds and a 20 s margin is stopped (``{"timeout": True}``)."""
    import json
    import pickle
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "net.pkl"
        path.write_bytes(pickle.dumps((params, domain)))
        t0 = time.perf_counter()
        try:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, name, str(path), str(budget)],
                capture_output=True,
                text=True,
                timeout=budget + 20,
            )
        except subprocess.TimeoutExpired:
            return {"timeout": True, "seconds": time.perf_counter() - t0}
    if out.returncode != 0:
        return {
            "error": (out.stderr.strip().splitlines() or ["?"])[-1][:160],
            "seconds": time.perf_counter() - t0,
        }
    return json.loads(out.stdout.strip().splitlines()[-1])


def _child_note(r: dict, budget: float) -> str:
    if r.get("timeout"):
        return f"did not finish within {budget:g} s (stopped)"
    if "error" in r:
        return f"failed: {r['error']}"
    if r["finished"]:
        return f"finished; peak RSS {r['rss_mb']:.0f} MB"
    fam = f", {r['families']} families examined" if r.get("families") is not None else ""
    return (
        f"did not finish within {budget:g} s ({r['regions']} regions, {r['lps']} LPs"
        f"{fam}); peak RSS {r['rss_mb']:.0f} MB (imports included)"
    )


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small networks, 2 s budgets")
    args = parser.parse_args(argv)
    q = args.quick
    B = (lambda full: 2.0) if q else (lambda full: full)  # the budget of each row
    h4, h8, h2 = ((6, 6), (8, 8), (6, 6)) if q else ((16, 16), (32, 32), (16, 16))
    rows: list[dict] = []
    t_train = time.perf_counter()
    p4, p8, p2 = trained(4, h4), trained(8, h8), trained(2, h2)
    print(
        f"trained 4-{h4[0]}-{h4[1]}-1, 8-{h8[0]}-{h8[1]}-1, 2-{h2[0]}-{h2[1]}-1 in "
        f"{time.perf_counter() - t_train:.1f} s"
    )
    box8 = ([-1.0] * 8, [1.0] * 8)
    s4 = f"4-{h4[0]}-{h4[1]}-1 on R^4"
    s8 = f"8-{h8[0]}-{h8[1]}-1 on [-1,1]^8"
    s2 = f"2-{h2[0]}-{h2[1]}-1 pair"

    # the estimate before starting
    t, _, _ = budgeted(lambda: relu.estimate_regions(p4))
    est = relu.estimate_regions(p4)
    print(
        f"estimate_regions {s4}: ~{est.estimate:.0f} ({est.sampled_patterns} sampled "
        f"patterns), {t:.2f} s"
    )
    rows.append(
        suite_row(
            "relu estimate_regions (before enumerating)",
            s4,
            t,
            "-",
            None,
            note=f"~{est.estimate:.0f} regions expected, {est.sampled_patterns} "
            f"patterns at {est.samples} points",
        )
    )

    # 1. regions of 4-16-16-1 on R^4
    b = B(15.0)
    t, R, err = budgeted(lambda: relu.regions(p4, time_limit=b))
    n = R.num_regions if R is not None else err.num_regions
    print(f"regions {s4}: {n} regions in {t:.1f} s ({n / t:.0f}/s); {_status(err, b)}")
    rows.append(
        suite_row(
            "relu regions, certified (budget)",
            s4,
            t,
            NONE,
            None,
            note=f"{_status(err, b)}; {n} regions, {n / t:.0f} regions/s",
        )
    )

    # 2. bent hyperplanes of 4-16-16-1 on R^4
    b = B(10.0)
    t, Bh, err = budgeted(lambda: relu.bent_hyperplanes(p4, time_limit=b))
    n = len(Bh.regions) if Bh is not None else err.num_regions
    print(f"bent_hyperplanes {s4}: {n} regions in {t:.1f} s; {_status(err, b)}")
    rows.append(
        suite_row(
            "relu bent_hyperplanes (budget)",
            s4,
            t,
            NONE,
            None,
            note=f"{_status(err, b)}; {n / t:.0f} regions/s",
        )
    )

    # 3. bent hyperplanes and genericity of 8-32-32-1 on the box: memory stays bounded
    for name in ("bent_hyperplanes", "genericity"):
        b = B(15.0)
        r = in_child(name, p8, box8, b)
        note = _child_note(r, b)
        print(f"{name} {s8}: {note}")
        rows.append(
            suite_row(
                f"relu {name} (budget, own process)",
                s8,
                r["seconds"],
                NONE,
                None,
                peak_mb=r.get("rss_mb"),
                note=note,
            )
        )

    # 4. equivalence of a permuted and rescaled copy, 4-16-16-1 on R^4 (goal: < 60 s)
    t, r, err = budgeted(lambda: relu.equivalent(p4, permuted_rescaled(p4), time_limit=60))
    ok = r is not None and r.equivalent
    print(
        f"equivalent (permuted+rescaled copy) {s4}: {ok} by {r.method if r else '-'} in {t:.2f} s"
    )
    rows.append(
        suite_row(
            "relu equivalent, permuted+rescaled copy",
            s4,
            t,
            NONE,
            None,
            note=f"equivalent={ok}, method {r.method if r else '-'}, certified "
            f"{r.certified if r else '-'}; goal < 60 s",
        )
    )

    # 5. auto against regions (same run) on two 2-16-16-1 pairs that no symmetry relates
    b = B(45.0)
    box2 = ([-1.0, -1.0], [1.0, 1.0])
    for label, q, dom in (
        ("split-neuron copy, R^2", split_neuron(p2), None),
        ("copy + a neuron dead on [-1,1]^2", dead_on_box(p2), box2),
    ):
        t_reg, r_reg, e_reg = budgeted(
            lambda: relu.equivalent(p2, q, dom, method="regions", time_limit=b)
        )
        t_auto, r_auto, e_auto = budgeted(lambda: relu.equivalent(p2, q, dom, time_limit=b))
        verdict = (
            f"auto: {r_auto.method}, equivalent={r_auto.equivalent}, certified="
            f"{r_auto.certified}, {r_auto.num_milps} MILPs"
            if r_auto is not None
            else _status(e_auto, b)
        )
        reg = (
            f"regions: {r_reg.num_regions} joint regions"
            if r_reg is not None
            else f"regions: {_status(e_reg, b)}"
        )
        print(
            f"equivalent auto vs regions, {label}: {t_auto:.2f} s vs {t_reg:.1f} s; "
            f"{verdict}; {reg}"
        )
        rows.append(
            suite_row(
                f"relu equivalent auto ({label})",
                s2,
                t_auto,
                'method="regions", same run',
                t_reg,
                note=f"{verdict}; {reg}",
            )
        )

    # 6. regions streamed on 8-32-32-1 over the box, 30 s budget (goal: >= 1,000 regions/s)
    for certify in (True, False):
        b = B(15.0 if certify else 10.0)
        it = relu.iter_regions(p8, box8, certify=certify, time_limit=b)
        t0 = time.perf_counter()
        err = None
        try:
            for _ in it:
                pass
        except ComputationLimitError as exc:
            err = exc
        t = time.perf_counter() - t0
        rate = it.num_regions / t
        label = "certified" if certify else "certify=False"
        print(
            f"iter_regions {s8}, {label}: {it.num_regions} regions in {t:.1f} s "
            f"({rate:.0f}/s, {it.num_lps / max(it.num_regions, 1):.1f} LPs/region)"
        )
        rows.append(
            suite_row(
                f"relu regions streamed, {label} (budget)",
                s8,
                t,
                NONE,
                None,
                note=f"{_status(err, b)}; {it.num_regions} regions, {rate:.0f} "
                f"regions/s (goal >= 1,000/s)",
            )
        )

    # 7. functional dimension (own process: its peak resident memory)
    b = B(60.0)
    r = in_child("functional_dimension", p4, None, b)
    note = (
        f"finished by {r['method']}: rank {r['rank']} / bound {r['bound']}, "
        f"{r['regions']} regions used, {r['milps']} MILPs, certified={r['certified']}; "
        f"peak RSS {r['rss_mb']:.0f} MB (goal < 10 s, < 500 MB)"
        if r.get("finished")
        else _child_note(r, b)
    )
    print(f"functional_dimension {s4}: {note} ({r['seconds']:.1f} s)")
    rows.append(
        suite_row(
            "relu functional_dimension (own process)",
            s4,
            r["seconds"],
            NONE,
            None,
            peak_mb=r.get("rss_mb"),
            note=note,
        )
    )

    # 8. the neurons of a digits classifier, proved on its data, and the reduction
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPClassifier

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MLPClassifier(hidden_layer_sizes=(128, 64), max_iter=200, random_state=SEED)
        clf.fit(X, y)
    t0 = time.perf_counter()
    red = relu.reduce(clf, data=X)
    t = time.perf_counter() - t0
    w = "-".join(map(str, red.widths_before))
    print(f"reduce digits {w}: -> {'-'.join(map(str, red.widths_after))} in {t:.2f} s")
    rows.append(
        suite_row(
            "relu reduce, trained digits classifier (its data's box)",
            w,
            t,
            NONE,
            None,
            note=f"{'-'.join(map(str, red.widths_before))} -> "
            f"{'-'.join(map(str, red.widths_after))}, exact={red.exact}; "
            + "; ".join(red.moves)[:200],
        )
    )
    return rows


if __name__ == "__main__":
    main()
