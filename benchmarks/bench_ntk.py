"""Structured NTK of linear convolutional networks against a generic baseline.

Baseline (measured in the same run): the Jacobian assembled column by column from the
multilinear identity (column (l, j) = mu(w_1, ..., e_j, ..., w_L)), then ``J @ J.T``.
Ours: ``LinearConvNet.ntk`` (J_l scattered from one partial product P_l per layer, then
one symmetric rank-k update). Prints a table with the time ratio; no assertion on time.

What bounds the ratio: both methods end in the same Gram product ``J @ J.T``
(|v|^2 P / 2 flops, BLAS syrk); ours removes only the per-column assembly. At about
2,000 entries and 300 parameters that product dominates, so the ratio falls to about 4x
(it peaks near 10x at a few hundred entries). A structured O(L |v|^2) recurrence along
the diagonals of K exists (K_l[i, i'] - K_l[i - S, i' - S] is a rank-2 term), but
written in numpy, or JIT-compiled with numba (tried), it was no faster than syrk at
these sizes.

    python benchmarks/bench_ntk.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import signal

from neuromanifold import LinearConvNet
from neuromanifold.linear import upsample
from _timing import best_time, median_time, peak_memory_mb, suite_row

SIZES = [  # (filter_shapes, strides): growing to ~2,000 end-to-end entries, ~300 params
    ([5, 5, 5], [2, 2]),
    ([20, 20, 20, 20, 20], [2, 2, 1, 1]),
    ([40, 40, 40, 40, 40], [2, 2, 2, 1]),
    ([60, 60, 60, 60, 60], [2, 2, 2, 2]),
    ([(3, 3)] * 3, [(2, 2), (1, 1)]),
    ([(5, 5)] * 6, [(2, 2)] + [(1, 1)] * 4),
    ([(7, 7)] * 6, [(2, 2)] + [(1, 1)] * 4),
]
QUICK = SIZES[:1] + SIZES[4:5]


def baseline_ntk(net: LinearConvNet, params: list[np.ndarray]) -> np.ndarray:
    cols = []
    for l, w in enumerate(params):
        for j in np.ndindex(w.shape):
            e = np.zeros_like(w)
            e[j] = 1.0
            ups = [upsample(a, S) for a, S in
                   zip(params[:l] + [e] + params[l + 1:], net.cumulative_strides)]
            v = ups[0]
            for u in ups[1:]:
                v = signal.convolve(v, u)
            cols.append(v.ravel())
    J = np.stack(cols, axis=1)
    return J @ J.T


def torch_ntk(net: LinearConvNet, params: list[np.ndarray]):
    """The recipe users run today: torch.func.jacrev of the end-to-end map (convolutions
    in torch), then J J^T. Returns None when torch is not installed."""
    try:
        import torch
        from torch.func import jacrev
    except ImportError:
        return None
    D = net.ndim
    conv = torch.nn.functional.conv1d if D == 1 else torch.nn.functional.conv2d
    sizes = [w.size for w in params]

    def mu(theta):
        ws = torch.split(theta, sizes)
        v = ws[0].view(net.filter_shapes[0])
        for w, k, S in zip(ws[1:], net.filter_shapes[1:], net.cumulative_strides[1:]):
            up = torch.zeros(tuple((a - 1) * s + 1 for a, s in zip(k, S)), dtype=theta.dtype)
            up[tuple(slice(None, None, s) for s in S)] = w.view(k)
            kern = up.flip(tuple(range(D)))
            v = conv(v.view((1, 1) + v.shape), kern.view((1, 1) + kern.shape),
                     padding=tuple(n - 1 for n in kern.shape)).view(
                         tuple(a + b - 1 for a, b in zip(v.shape, kern.shape)))
        return v.reshape(-1)

    theta = torch.tensor(np.concatenate([w.ravel() for w in params]))

    def run():
        J = jacrev(mu)(theta)
        return (J @ J.T).numpy()
    return run


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small sizes only")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    print(f"{'network':<62} {'|v|':>6} {'P':>5} {'ours ms':>9} {'base ms':>9} {'ratio':>7} {'rel.diff':>9}")
    for shapes, strides in (QUICK if args.quick else SIZES):
        net = LinearConvNet(shapes, strides)
        params = net.random_params(0)
        K = net.ntk(params)
        K0 = baseline_ntk(net, params)
        diff = float(np.abs(K - K0).max() / np.abs(K0).max())
        t_ours, _ = best_time(lambda: net.ntk(params), args.repeat)
        t_base, _ = best_time(lambda: baseline_ntk(net, params), args.repeat)
        rows.append({"network": repr(net), "size": net.end_to_end_size, "params": net.num_params,
                     "ours": t_ours, "baseline": t_base, "ratio": t_base / t_ours, "diff": diff})
        # the suite's rows: against the floor (the bare Gram product of a given J), the
        # column-by-column Jacobian, and torch.func; JAX when installed
        size = f"{net!r}: |v|={net.end_to_end_size}, P={net.num_params}"
        t_med, spread, _ = median_time(lambda: net.ntk(params), args.repeat)
        peak = peak_memory_mb(lambda: net.ntk(params))
        J = net.jacobian(params)
        t_floor, _, _ = median_time(lambda: J @ J.T, args.repeat)
        rows.append(suite_row("NTK", size, t_med, "bare J @ J.T (floor, J given)", t_floor,
                              spread, peak))
        rows.append(suite_row("NTK", size, t_med, "column-by-column Jacobian", t_base, spread,
                              peak))
        run = torch_ntk(net, params)
        if run is None:
            rows.append(suite_row("NTK", size, t_med, "torch.func jacrev", None, spread, peak,
                                  "torch not installed: pip install 'neuromanifold[torch]'"))
        else:
            t_torch, _, K_t = median_time(run, args.repeat)
            rows.append(suite_row("NTK", size, t_med, "torch.func jacrev", t_torch, spread, peak,
                                  f"rel. diff {np.abs(K_t - K).max() / np.abs(K).max():.1e}"))
        try:
            import jax  # noqa: F401
            note = "JAX installed but not wired yet"
        except ImportError:
            note = "JAX not installed: pip install jax"
        rows.append(suite_row("NTK", size, t_med, "JAX jacfwd (jit)", None, spread, peak, note))
        print(f"{repr(net)[:62]:<62} {net.end_to_end_size:>6} {net.num_params:>5} "
              f"{1e3 * t_ours:>9.2f} {1e3 * t_base:>9.2f} {t_base / t_ours:>6.1f}x {diff:>9.1e}")
    return rows


if __name__ == "__main__":
    main()
