"""Symmetry recovery for three-layer bottleneck ReLU networks against Git Re-Basin.

A generic bottleneck network ``p`` is transformed into ``q`` by a random symmetry
(``neuromanifold.relu.symmetries.random_orbit_point``): permutations of both hidden layers,
positive rescalings (log-uniform in [1/4, 4]) and, where they apply, dead-neuron moves,
mixing of the always-active block, a hiding translation and flips (the ``planted`` rows draw
second-layer rows with those sign patterns on purpose). Then the symmetry is recovered from ``(p,
q)`` alone.

* Ours: ``neuromanifold.relu._canonical.three_layer.equivalent_bottleneck`` (canonical forms,
polynomial
  time). Recovered iff the returned list of named symmetries, applied to ``p``, gives ``q``
  up to ``1e-9`` times the path-norm scale.
* Baseline (same run): Git Re-Basin weight matching (Ainsworth et al. 2022): coordinate
  descent over the hidden layers, each step a ``scipy.optimize.linear_sum_assignment`` on
  ``W_l^q P_{l-1} (W_l^p)^T + b_l^q (b_l^p)^T + (W_{l+1}^q)^T P_{l+1} W_{l+1}^p``, until no
  permutation changes (at most 50 sweeps), from the identity. It recovers permutations
  only, so it counts as recovered iff it finds the true permutation of layer 1 and of the
  live neurons of layer 2. Run as published (raw weights) and after normalizing every
  hidden neuron's incoming row to unit norm layer by layer ("normalized", which undoes
  the rescalings and makes the baseline much stronger).

Second table, networks of any depth: a generic network and a copy with every hidden
layer permuted and positively rescaled (log-uniform in [1/4, 4]), as a retrained or
re-exported checkpoint would be.

* Ours: ``neuromanifold.relu.equivalent(p, q)`` (``method="auto"``, which matches the
  normalized rows in floats and certifies the match with ``function_distance_bound``).
  Recovered iff it answers equivalent, certified, and its symmetry maps p onto q.
* Baseline (same run, same pairs): weight matching on normalized weights, the plain
  recipe: every hidden neuron's incoming weights and bias scaled to unit length (the
  factor pushed into the next layer), then one ``linear_sum_assignment`` per hidden layer,
  layer by layer. Recovered iff it finds every true permutation. It certifies nothing.
* Second baseline (same run, same pairs, when installed: ``make bench-peers``): the
  ``rebasin`` package's ``PermutationCoordinateDescent`` on the two networks as torch
  ``Sequential`` models, tracing included. Recovered iff every hidden neuron of the
  permuted copy lands on its neuron of p (permutations only; it certifies nothing).

    python benchmarks/bench_symmetry_recovery.py [--quick] [--trials N]
"""

from __future__ import annotations

import os

# one BLAS thread: on a shared machine a multi-threaded BLAS oversubscribes the cores and a
# 160 x 128 SVD takes seconds (set before numpy is imported; no effect inside the tests)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import time

import numpy as np
from _timing import suite_row
from scipy.optimize import linear_sum_assignment

from neuromanifold import relu
from neuromanifold.relu._bounds.parameters import path_norm_scale
from neuromanifold.relu._canonical.three_layer import equivalent_bottleneck, fast_path_reason
from neuromanifold.relu.symmetries import apply_sequence, random_orbit_point


def draw(rng, widths, planted: bool):
    """Generic bottleneck parameters; ``planted``: one second-layer row hiding first-layer
    neuron 0 and the others dead (translation and flips apply), else Gaussian rows."""
    d, n1, n2, n3 = widths
    while True:
        W1, b1 = rng.standard_normal((n1, d)), rng.standard_normal(n1)
        if planted:
            R = -rng.uniform(0.3, 2.0, (n2, n1 + 1))
            R[0, 0] = -R[0, 0]
        else:
            R = rng.standard_normal((n2, n1 + 1))
        p = [
            (W1, b1),
            (R[:, :-1].copy(), R[:, -1].copy()),
            (rng.standard_normal((n3, n2)), rng.standard_normal(n3)),
        ]
        if fast_path_reason(p) is None:
            return p


#: the moves of the random symmetry: those under which the true permutations stay meaningful
#: for the Re-Basin baseline (turning second-layer neurons around and refactoring the
#: always-active block change rows, which no permutation matches)
MOVES = (
    "scaling",
    "dead_neuron_move",
    "linear_block_mixing",
    "hiding_translation",
    "flip",
    "permutation",
)


def transform(rng, p):
    """A random symmetry (``random_orbit_point``, with the true permutations) and ``q``."""
    q, syms = random_orbit_point(p, seed=rng, moves=MOVES)
    perm1, perm2 = np.array(syms[-2].perm), np.array(syms[-1].perm)
    R = np.hstack([p[1][0], p[1][1][:, None]])
    live2 = [j for j in range(R.shape[0]) if not np.all(R[j] <= 0)]
    return syms, q, perm1, perm2, live2


def _normalized(params):
    out, prev = [], None
    for l, (W, b) in enumerate(params):
        W, b = W.copy(), b.copy()
        if prev is not None:
            W = W * prev[None, :]
        if l < len(params) - 1:
            s = 1.0 / np.sqrt(np.sum(W**2, axis=1) + b**2)
            W, b, prev = W * s[:, None], b * s, 1.0 / s
        out.append((W, b))
    return out


def weight_matching(p, q, max_sweeps: int = 50):
    """Re-Basin weight matching of ``p`` onto ``q``: permutations ``perm[l]`` with
    ``q``'s neuron ``j`` matched to ``p``'s neuron ``perm[l][j]``."""
    L = len(p)
    perms = [np.arange(W.shape[0]) for W, _ in p[:-1]]
    for _ in range(max_sweeps):
        changed = False
        for l in range(L - 1):
            Wq, bq = q[l]
            Wp, bp = p[l]
            Wp_in = Wp[:, perms[l - 1]] if l > 0 else Wp
            C = Wq @ Wp_in.T + np.outer(bq, bp)
            Wq_out, Wp_out = q[l + 1][0], p[l + 1][0]
            Wp_out = Wp_out[perms[l + 1]] if l + 1 < L - 1 else Wp_out
            C += Wq_out.T @ Wp_out
            _, col = linear_sum_assignment(C, maximize=True)
            if np.any(col != perms[l]):
                perms[l], changed = col, True
        if not changed:
            break
    return perms


def planted_copy(rng, p):
    """``q``: every hidden layer of ``p`` permuted and rescaled; and the permutations."""
    q = [(W.copy(), b.copy()) for W, b in p]
    perms = []
    for l in range(len(q) - 1):
        n = q[l][0].shape[0]
        perm, s = rng.permutation(n), np.exp(rng.uniform(-np.log(4), np.log(4), n))
        q[l] = (q[l][0][perm] * s[:, None], q[l][1][perm] * s)
        q[l + 1] = (q[l + 1][0][:, perm] / s[None, :], q[l + 1][1])
        perms.append(perm)
    return q, perms


def normalized_matching(p, q):
    """The plain recipe: normalize both networks' hidden neurons, then one assignment per
    hidden layer, layer by layer (q's neuron j matched to p's neuron ``perm[l][j]``)."""
    P, Q = _normalized(p), _normalized(q)
    perms, prev = [], None
    for l in range(len(P) - 1):
        Wp, bp = P[l]
        Wp = Wp[:, prev] if prev is not None else Wp
        Rp, Rq = np.hstack([Wp, bp[:, None]]), np.hstack([Q[l][0], Q[l][1][:, None]])
        _, col = linear_sum_assignment(Rq @ Rp.T, maximize=True)
        perms.append(col)
        prev = col
    return perms


def _rebasin_peer():
    """The ``rebasin`` package's Git Re-Basin weight matching when it (and torch) is
    installed (``make bench-peers``), else ``None``."""
    try:
        import torch
        from rebasin import PermutationCoordinateDescent
    except ImportError:
        return None

    def run(p, q, perms):
        """Time rebasin's matching of q onto p (tracing the models included, as a user runs
        it); recovered iff every hidden neuron of the permuted q lands on its p neuron."""

        def sequential(params):
            layers = []
            for l, (W, b) in enumerate(params):
                lin = torch.nn.Linear(W.shape[1], W.shape[0]).double()
                with torch.no_grad():
                    lin.weight.copy_(torch.from_numpy(W))
                    lin.bias.copy_(torch.from_numpy(b))
                layers += [lin] + ([torch.nn.ReLU()] if l < len(params) - 1 else [])
            return torch.nn.Sequential(*layers)

        model_a, model_b = sequential(p), sequential(q)
        x = torch.randn(4, p[0][0].shape[1], dtype=torch.float64)
        t = time.perf_counter()
        pcd = PermutationCoordinateDescent(model_a, model_b, x)
        pcd.rebasin()
        elapsed = time.perf_counter() - t
        ok = True
        for l, perm in enumerate(perms):
            # neuron j of the permuted q is q's neuron k (its bias moves with it, and the
            # random biases are distinct); q's neuron k is p's neuron perm[k]
            new = model_b[2 * l].bias.detach().numpy()
            for j in range(new.size):
                k = np.flatnonzero(q[l][1] == new[j])
                ok &= len(k) == 1 and perm[k[0]] == j
        return elapsed, bool(ok)

    return run


def _any_depth(args, rows):
    sizes = (
        [(8, 6, 8, 1), (64, 32, 16, 10)]
        if args.quick
        else [
            (8, 6, 8, 1),
            (16, 12, 16, 2),
            (48, 32, 48, 4),
            (64, 32, 16, 10),
            (256, 128, 64, 10),
            (784, 256, 128, 10),
            (784, 256, 256, 128, 10),
        ]
    )
    trials = args.trials or (5 if args.quick else 30)
    rng = np.random.default_rng(1)
    rebasin = _rebasin_peer()
    print(f"\nany depth: {trials} planted (permuted, rescaled) copies per size")
    if rebasin is None:
        print(
            "(the rebasin package is not installed: its rows are skipped; make bench-peers "
            "installs it)"
        )
    print(
        f"{'widths':<24} {'ours':>7} {'matching':>9} {'ours ms':>8} {'match ms':>9} {'ratio':>6}"
        + ("  rebasin  rb ms" if rebasin else "")
    )
    for widths in sizes:
        ok = hit = rb_hit = 0
        t_ours, t_match, t_rb = [], [], []
        for _ in range(trials):
            p = relu.ReLUNet(list(widths)).random_params(int(rng.integers(2**31)))
            q, perms = planted_copy(rng, p)
            t = time.perf_counter()
            r = relu.equivalent(p, q)
            t_ours.append(time.perf_counter() - t)
            if r.equivalent and r.certified and r.symmetry is not None:
                s = path_norm_scale(q)
                ok += all(
                    np.max(np.abs(a - b)) <= 1e-9 * s
                    for (Wa, ba), (Wb, bb) in zip(apply_sequence(r.symmetry, p), q)
                    for a, b in ((Wa, Wb), (ba, bb))
                )
            t = time.perf_counter()
            P = normalized_matching(p, q)
            t_match.append(time.perf_counter() - t)
            hit += all(np.array_equal(a, b) for a, b in zip(P, perms))
            if rebasin is not None:
                t, got = rebasin(p, q, perms)
                t_rb.append(t)
                rb_hit += got
        mo, mm = float(np.median(t_ours)), float(np.median(t_match))
        size = "-".join(map(str, widths))
        row = {
            "widths": list(widths),
            "trials": trials,
            "ours": ok,
            "matching": hit,
            "ours_ms": 1e3 * mo,
            "matching_ms": 1e3 * mm,
        }
        rows.append(
            {
                **row,
                **suite_row(
                    "symmetry recovery, certified (relu.equivalent)",
                    size,
                    mo,
                    "weight matching on normalized weights",
                    mm,
                    spread=(max(t_ours) - min(t_ours)) / mo,
                    note=f"recovered: ours {ok}/{trials} (certified), matching "
                    f"{hit}/{trials} (uncertified); medians over the trials",
                ),
            }
        )
        line = (
            f"{size:<24} {ok:>3}/{trials:<3} {hit:>5}/{trials:<3} {1e3 * mo:>8.2f} "
            f"{1e3 * mm:>9.2f} {mm / mo:>5.2f}x"
        )
        if rebasin is not None:
            mr = float(np.median(t_rb))
            line += f"  {rb_hit:>3}/{trials:<3} {1e3 * mr:>6.2f}"
            rows.append(
                {
                    **row,
                    "rebasin": rb_hit,
                    "rebasin_ms": 1e3 * mr,
                    **suite_row(
                        "symmetry recovery, certified (relu.equivalent)",
                        size,
                        mo,
                        "rebasin (PermutationCoordinateDescent, tracing included)",
                        mr,
                        spread=(max(t_ours) - min(t_ours)) / mo,
                        note=f"recovered: ours {ok}/{trials} (certified), "
                        f"rebasin {rb_hit}/{trials} "
                        f"(permutations only, uncertified); medians over the trials",
                    ),
                }
            )
        print(line)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (for tests)")
    parser.add_argument("--trials", type=int, default=None)
    args = parser.parse_args(argv)
    trials = args.trials or (5 if args.quick else 100)
    configs = (
        [((4, 3, 4, 1), False), ((5, 3, 4, 1), True)]
        if args.quick
        else [
            ((4, 3, 4, 1), False),
            ((8, 6, 8, 1), False),
            ((16, 12, 16, 2), False),
            ((48, 32, 48, 4), False),
            ((6, 4, 6, 1), True),
            ((12, 8, 12, 2), True),
        ]
    )
    rows = []
    print(
        f"symmetry recovery, {trials} trials per row, seed 0 (rows 'planted': a hidden "
        f"hyperplane, translations and flips)"
    )
    print(
        f"{'widths':<18} {'planted':>7} {'ours':>6} {'Re-Basin':>9} {'RB normalized':>14} "
        f"{'ours ms':>8} {'RB ms':>7} {'RBn ms':>7}"
    )
    rng = np.random.default_rng(0)
    for widths, planted in configs:
        ok = rb = rbn = 0
        t_ours = t_rb = t_rbn = 0.0
        for _ in range(trials):
            p = draw(rng, widths, planted)
            syms, q, perm1, perm2, live2 = transform(rng, p)
            t = time.perf_counter()
            r = equivalent_bottleneck(p, q)
            t_ours += time.perf_counter() - t
            if r.equivalent and r.symmetry is not None:
                got = apply_sequence(r.symmetry, p)
                s = path_norm_scale(q)
                ok += all(
                    np.max(np.abs(a - b)) <= 1e-9 * s
                    for (Wa, ba), (Wb, bb) in zip(got, q)
                    for a, b in ((Wa, Wb), (ba, bb))
                )
            for norm in (False, True):
                t = time.perf_counter()
                P = (
                    weight_matching(_normalized(p), _normalized(q))
                    if norm
                    else weight_matching(p, q)
                )
                dt = time.perf_counter() - t
                hit = np.array_equal(P[0], perm1) and all(
                    P[1][j] == perm2[j] for j in range(len(perm2)) if perm2[j] in live2
                )
                if norm:
                    rbn += hit
                    t_rbn += dt
                else:
                    rb += hit
                    t_rb += dt
        row = {
            "widths": list(widths),
            "planted": planted,
            "trials": trials,
            "ours": ok,
            "rebasin": rb,
            "rebasin_normalized": rbn,
            "ours_ms": 1e3 * t_ours / trials,
            "rebasin_ms": 1e3 * t_rb / trials,
            "rebasin_normalized_ms": 1e3 * t_rbn / trials,
        }
        # the suite's row: time per recovery, and how often each side recovers the symmetry
        # (Re-Basin is a local search: faster, but it recovers only a fraction)
        rows.append(
            {
                **row,
                **suite_row(
                    "symmetry recovery (exact) vs Git Re-Basin weight matching",
                    "-".join(map(str, widths)) + (" planted" if planted else ""),
                    t_ours / trials,
                    "Re-Basin weight matching",
                    t_rb / trials,
                    note=f"recovered: ours {ok}/{trials}, Re-Basin {rb}/{trials}, Re-Basin on "
                    f"normalized weights {rbn}/{trials}",
                ),
            }
        )
        print(
            f"{str(list(widths)):<18} {str(planted):>7} {ok:>3}/{trials:<3}{rb:>5}/{trials:<3}"
            f"{rbn:>10}/{trials:<3} {row['ours_ms']:>8.1f} {row['rebasin_ms']:>7.1f} "
            f"{row['rebasin_normalized_ms']:>7.1f}"
        )
    _any_depth(args, rows)
    return rows


if __name__ == "__main__":
    main()
