"""NTK of linear convolutional networks against the tools a user would pick.

Ours: ``LinearConvNet.ntk`` (``J^T`` gathered by one fancy index from one flat partial
product ``P_l`` per layer, from index arrays built once per architecture; the ``P_l`` by
3L - 6 direct one-dimensional convolutions, or one batched FFT for large networks; then
one symmetric rank-k update, BLAS syrk).
Baselines, measured in the same run on the same parameters:

* the floor: ``J @ J.T`` for a Jacobian already given (no method can skip this product
  unless it avoids forming K through J);
* the Jacobian assembled column by column from the multilinear identity (column (l, j) =
  mu(w_1, ..., e_j, ..., w_L)), then ``J @ J.T``;
* ``torch.func``: ``jacfwd`` (forward mode, vmapped over the parameters: the right mode
  here, |theta| < |v|) of the end-to-end map written with torch convolutions, then
  ``J @ J.T``; ``jacrev`` (vmapped over the outputs) up to |v| = 1,000, beyond which
  it takes tens of seconds;
* JAX: ``jax.jacfwd`` of the same map (``lax.conv_general_dilated``) and ``J @ J.T``,
  together under ``jax.jit`` (compiled before timing; float64).

Every side runs on the same number of threads (``_timing.pin_threads``). The peers are
skipped with a note when torch or JAX is not installed. Sizes: |v| from about 300 to
4,500 in 1D and 2D.

Timing: every side gets about ``--budget`` seconds of calls (at least ``--repeat``, at
most :data:`MAX_REPEAT`; one warm-up call first; the column-by-column baseline half as
many), the median reported; the sides of a size take turns in five rounds of short
blocks of warm calls (:func:`alternating_medians`), so that a change of the machine's
load (it is shared) affects every ratio's two sides alike.

What bounds the ratio to the floor: ours ends in the same Gram product, so from about
1,000 entries on it is the floor plus a few percent; below, the fixed cost of about
twenty small numpy calls (the partial products, ~50 us at |v| = 300) is a fraction of
the product, and the product itself runs slower after them than the floor's, which
repeats on a J kept in cache (measured 2026-11-30: 1.6 - 1.7x the floor at |v| = 286
and 361, load 3 - 4 on 2 cores). (A structured O(L |v|^2) recurrence along the
diagonals of K exists, but written in numpy it streams several |v| x |v| arrays per
layer and loses to syrk at these filter sizes.)

    python benchmarks/bench_ntk.py [--quick] [--repeat N] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np
from _timing import peak_memory_mb, pin_threads, suite_row
from scipy import signal

from neuromanifold import LinearConvNet
from neuromanifold.linear import upsample

SIZES = [  # (filter_shapes, strides): |v| from ~300 to ~4,500, 1D then 2D
    ([20] * 5, [2, 2, 1, 1]),  # |v| = 286, P = 100
    ([40] * 5, [2, 2, 2, 1]),  # 898, 200
    ([60] * 5, [2, 2, 2, 2]),  # 1830, 300
    ([70] * 6, [2] * 5),  # 4348, 420
    ([(3, 3)] * 5, [(2, 2)] + [(1, 1)] * 3),  # 361, 45
    ([(5, 5)] * 4, [(2, 2)] + [(1, 1)] * 2),  # 841, 100
    ([(5, 5)] * 6, [(2, 2)] + [(1, 1)] * 4),  # 2025, 150
    ([(7, 7)] * 6, [(2, 2)] + [(1, 1)] * 4),  # 4489, 294
]
QUICK = [([5, 5, 5], [2, 2]), ([(3, 3)] * 2, [(2, 2)])]
JACREV_MAX = 1000  # torch.func.jacrev beyond this |v| takes tens of seconds
MAX_REPEAT = 50  # calls per measurement at most (small sizes)


def _repeats(fn, repeat: int, budget: float) -> int:
    """Calls for one measurement of ``fn``: about ``budget`` seconds of them, at least
    ``repeat`` and at most :data:`MAX_REPEAT` (one warm-up call, timed, decides)."""
    t = time.perf_counter()
    fn()
    t = time.perf_counter() - t
    return max(repeat, min(MAX_REPEAT, math.ceil(budget / max(t, 1e-9))))


def alternating_medians(fns: dict, repeats: dict, rounds: int = 5) -> dict:
    """``{name: (median, spread, last result)}`` of ``repeats[name]`` timed calls of each
    function, in ``rounds`` rounds: each round runs every function in turn, a block of
    ``ceil(repeats / rounds)`` timed calls, after one untimed call when the block has
    several (so that a fast function is timed warm, not right after another library's
    code has evicted its caches). Every side's calls are thus spread over the same
    stretch of time, and a change of the machine's load (it is shared) hits all sides
    alike; spread = (max - min) / median."""
    times = {k: [] for k in fns}
    out = {}
    for _ in range(rounds):
        for k, fn in fns.items():
            block = -(-repeats[k] // rounds)
            if block > 1:
                out[k] = fn()
            for _ in range(min(block, repeats[k] - len(times[k]))):
                t = time.perf_counter()
                out[k] = fn()
                times[k].append(time.perf_counter() - t)
    res = {}
    for k, ts in times.items():
        med = statistics.median(ts)
        res[k] = (med, (max(ts) - min(ts)) / med if med > 0 else 0.0, out[k])
    return res


def baseline_ntk(net: LinearConvNet, params: list[np.ndarray]) -> np.ndarray:
    """Column by column: column (l, j) of J is mu with w_l replaced by the unit e_j."""
    cols = []
    for l, w in enumerate(params):
        for j in np.ndindex(w.shape):
            e = np.zeros_like(w)
            e[j] = 1.0
            ups = [
                upsample(a, S)
                for a, S in zip(params[:l] + [e] + params[l + 1 :], net.cumulative_strides)
            ]
            v = ups[0]
            for u in ups[1:]:
                v = signal.convolve(v, u)
            cols.append(v.ravel())
    J = np.stack(cols, axis=1)
    return J @ J.T


def torch_ntk(net: LinearConvNet, params: list[np.ndarray], mode: str = "jacfwd"):
    """``torch.func.<mode>`` of the end-to-end map (torch convolutions), then J J^T, as a
    function of no arguments; None when torch is not installed."""
    try:
        import torch
        from torch import func
    except ImportError:
        return None
    pin_threads()
    D = net.ndim
    conv = torch.nn.functional.conv1d if D == 1 else torch.nn.functional.conv2d
    sizes = [w.size for w in params]

    def mu(theta):
        ws = torch.split(theta, sizes)
        v = ws[0].view(net.filter_shapes[0])
        for w, k, S in zip(ws[1:], net.filter_shapes[1:], net.cumulative_strides[1:]):
            kern = w.view(k).flip(tuple(range(D)))
            # full convolution with up(w, S): correlation with the flipped, dilated kernel
            v = conv(
                v.view((1, 1) + v.shape),
                kern.view((1, 1) + kern.shape),
                padding=tuple((a - 1) * s for a, s in zip(k, S)),
                dilation=S,
            )[0, 0]
        return v.reshape(-1)

    jac = getattr(func, mode)(mu)
    theta = torch.tensor(np.concatenate([w.ravel() for w in params]))

    def run():
        J = jac(theta)
        return (J @ J.T).numpy()

    return run


def jax_ntk(net: LinearConvNet, params: list[np.ndarray]):
    """``jax.jacfwd`` of the end-to-end map and J J^T under one ``jax.jit`` (compiled
    here, before any timing), as a function of no arguments; None without JAX."""
    pin_threads()  # XLA's flags must be in the environment before JAX loads
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    D = net.ndim
    cuts = np.cumsum([w.size for w in params])[:-1].tolist()
    dims = ("NCH", "OIH", "NCH") if D == 1 else ("NCHW", "OIHW", "NCHW")

    def mu(theta):
        ws = jnp.split(theta, cuts)
        v = ws[0].reshape(net.filter_shapes[0])
        for w, k, S in zip(ws[1:], net.filter_shapes[1:], net.cumulative_strides[1:]):
            kern = jnp.flip(w.reshape(k), tuple(range(D)))
            v = jax.lax.conv_general_dilated(
                v[None, None],
                kern[None, None],
                window_strides=(1,) * D,
                padding=[((a - 1) * s, (a - 1) * s) for a, s in zip(k, S)],
                rhs_dilation=S,
                dimension_numbers=dims,
            )[0, 0]
        return v.reshape(-1)

    @jax.jit
    def ntk(theta):
        J = jax.jacfwd(mu)(theta)
        return J @ J.T

    theta = jnp.asarray(np.concatenate([w.ravel() for w in params]))
    ntk(theta).block_until_ready()  # compile

    def run():
        return np.asarray(ntk(theta).block_until_ready())

    return run


def _rel(A: np.ndarray, B: np.ndarray) -> float:
    return float(np.abs(A - B).max() / np.abs(B).max())


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small sizes only")
    parser.add_argument("--repeat", type=int, default=5, help="least calls per measurement")
    parser.add_argument(
        "--budget",
        type=float,
        default=0.25,
        help="seconds of calls per measurement (0: exactly --repeat calls)",
    )
    args = parser.parse_args(argv)
    threads = pin_threads()
    rows = []
    print(
        f"{'network':<52} {'|v|':>5} {'P':>4} {'ours ms':>9} {'floor ms':>9} "
        f"{'vs floor':>8}  peers (ms)"
    )
    if args.quick:
        args.budget = 0.0
    for shapes, strides in QUICK if args.quick else SIZES:
        net = LinearConvNet(shapes, strides)
        params = net.random_params(0)

        def reps(fn):
            return _repeats(fn, args.repeat, args.budget)

        J = net.jacobian(params)
        fns = {
            "ours": lambda: net.ntk(params),
            "floor": lambda: J @ J.T,
            "columns": lambda: baseline_ntk(net, params),
        }
        skipped = {}
        for mode in ("jacfwd", "jacrev"):
            name = f"torch.func {mode} + vmap"
            run = None
            if mode == "jacrev" and net.end_to_end_size > JACREV_MAX:
                skipped[name] = f"not run above |v| = {JACREV_MAX} (tens of seconds)"
            elif (run := torch_ntk(net, params, mode)) is None:
                skipped[name] = "torch not installed: pip install 'neuromanifold[torch]'"
            if run is not None:
                fns[name] = run
        run = jax_ntk(net, params)
        if run is None:
            skipped["JAX jacfwd (jit)"] = "JAX not installed: pip install 'neuromanifold[jax]'"
        else:
            fns["JAX jacfwd (jit)"] = run
        repeats = {k: reps(fn) for k, fn in fns.items()}  # one warm-up call each
        repeats["columns"] = max(1, repeats["columns"] // 2)
        timed = alternating_medians(fns, repeats)
        (t_ours, spread, K), (t_floor, _, _) = timed["ours"], timed["floor"]
        t_base, _, K0 = timed["columns"]
        peak = peak_memory_mb(lambda: net.ntk(params))
        diff = _rel(K, K0)
        rows.append(
            {
                "network": repr(net),
                "size": net.end_to_end_size,
                "params": net.num_params,
                "ours": t_ours,
                "baseline": t_base,
                "floor": t_floor,
                "ratio": t_base / t_ours,
                "diff": diff,
            }
        )
        size = (
            f"{net.ndim}D {[k[0] if net.ndim == 1 else k for k in net.filter_shapes]}: "
            f"|v|={net.end_to_end_size}, P={net.num_params}"
        )
        rows.append(
            suite_row(
                "NTK",
                size,
                t_ours,
                "bare J @ J.T (floor, J given)",
                t_floor,
                spread,
                peak,
                f"{threads} thread(s) each side",
            )
        )
        rows.append(
            suite_row(
                "NTK",
                size,
                t_ours,
                "column-by-column Jacobian",
                t_base,
                spread,
                peak,
                f"rel. diff {diff:.1e}",
            )
        )
        peers = {}
        for name in ("torch.func jacfwd + vmap", "torch.func jacrev + vmap", "JAX jacfwd (jit)"):
            if name in skipped:
                rows.append(suite_row("NTK", size, t_ours, name, None, spread, peak, skipped[name]))
                continue
            t_p, _, K_p = timed[name]
            peers[name.split()[1] if name.startswith("torch") else "jax"] = t_p
            note = f"rel. diff {_rel(K_p, K):.1e}"
            rows.append(
                suite_row(
                    "NTK",
                    size,
                    t_ours,
                    name,
                    t_p,
                    spread,
                    peak,
                    ("compiled before timing; " if "JAX" in name else "") + note,
                )
            )
        print(
            f"{repr(net)[13:65]:<52} {net.end_to_end_size:>5} {net.num_params:>4} "
            f"{1e3 * t_ours:>9.2f} {1e3 * t_floor:>9.2f} {t_ours / t_floor:>7.2f}x  "
            + ", ".join(f"{k} {1e3 * v:.1f}" for k, v in peers.items())
            + f", columns {1e3 * t_base:.1f}",
            flush=True,
        )
    return rows


if __name__ == "__main__":
    main()
