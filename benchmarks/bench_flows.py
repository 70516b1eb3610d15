"""Many gradient flows at once against a loop of ``solve_ivp``, and one flow against the
same ``solve_ivp`` driven by torch autograd.

* Batched: ``neuromanifold.linear.gradient_flows`` integrates B initializations of a
  strided 1D network together (vectorized DOP853, step control per trajectory, the
  velocity of the whole batch from BLAS products over the network's monomials).
  Baseline: what a user writes otherwise, a loop of ``neuromanifold.gradient_flow``
  (``solve_ivp``'s DOP853 stepper with our fast velocity, same tolerances), run on the
  same B initializations. Accuracy: the largest difference of the final end-to-end
  filters.
* Convergence study: ``neuromanifold.convergence_study`` with its runs integrated in
  batches (the default, one loss per run) against the same study run by run
  (``batched=False``, LSODA per run, the reference): same data and initializations;
  accuracy: the verdicts that differ and the largest relative difference of final losses.
* Single flow: ``gradient_flow`` against ``solve_ivp`` (same method and tolerances)
  with the gradient from torch autograd on the same loss (skipped with a note when torch
  is not installed), torch pinned to the same thread count.

    python benchmarks/bench_flows.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import median_time, peak_memory_mb, pin_threads, suite_row
from scipy.integrate import solve_ivp

import neuromanifold as nm
from neuromanifold.linear import gradient_flows, random_regression_data

NET = ([3, 2, 2], [2, 2])


def _setup():
    net = nm.LinearConvNet(*NET)
    X, Y = random_regression_data(net, seed=0)
    return net, nm.SquareLoss.from_data(net, X, Y)


def torch_flow(net, loss, params, t_final):
    """solve_ivp with the gradient of the same loss from torch autograd (a user's recipe)."""
    import torch

    pin_threads()
    A = torch.tensor(loss.A)
    target = torch.tensor(loss.target)
    sizes = [w.size for w in params]
    shapes, S = net.filter_shapes, net.cumulative_strides

    def mu(theta):
        ws = torch.split(theta, sizes)
        v = ws[0]
        for w, k, s in zip(ws[1:], shapes[1:], S[1:]):
            up = torch.zeros((k[0] - 1) * s[0] + 1, dtype=theta.dtype)
            up[:: s[0]] = w
            # full convolution of v and up (flip for conv1d, which correlates)
            v = torch.nn.functional.conv1d(
                v.view(1, 1, -1), up.flip(0).view(1, 1, -1), padding=up.numel() - 1
            ).view(-1)
        return v

    def rhs(t, theta_np):
        theta = torch.tensor(theta_np, requires_grad=True)
        r = mu(theta) - target
        (0.5 * r @ A @ r).backward()
        return -theta.grad.numpy()

    theta0 = np.concatenate([w.ravel() for w in params])
    return solve_ivp(rhs, (0, t_final), theta0, method="DOP853", rtol=1e-10, atol=1e-12)


def _study_row(args) -> dict:
    """convergence_study batched against per run (one timing of the reference: it is
    long and each run is independent of the others)."""
    net = nm.LinearConvNet([2, 2], [2])
    n = 20 if args.quick else 200
    kw = dict(seed=0, max_time=80.0 if args.quick else 640.0)
    t_ours, spread, fast = median_time(
        lambda: nm.convergence_study(net, n, **kw), 1 if args.quick else args.repeat
    )
    t_ref, _, ref = median_time(lambda: nm.convergence_study(net, n, batched=False, **kw), 1)
    verdicts = sum(
        (a.converged, a.smooth, a.at_zero) != (b.converged, b.smooth, b.at_zero)
        for a, b in zip(fast.runs, ref.runs)
    )
    dloss = max(
        abs(a.final_loss - b.final_loss) / max(1.0, abs(b.final_loss))
        for a, b in zip(fast.runs, ref.runs)
    )
    handed = sum("+" in r.solver for r in fast.runs)
    peak = peak_memory_mb(lambda: nm.convergence_study(net, n, **kw))
    print(
        f"convergence study, {n} runs: batched {t_ours:.2f} s, per run {t_ref:.2f} s, "
        f"ratio {t_ref / t_ours:.1f}x, {verdicts} verdicts differ, final losses {dloss:.1e}"
    )
    return suite_row(
        "convergence study, batched",
        f"{n} runs of {net!r}, max_time={kw['max_time']:g}",
        t_ours,
        "same study run by run (LSODA, batched=False)",
        t_ref,
        spread,
        peak,
        f"verdicts differing = {verdicts}; max relative final-loss difference "
        f"{dloss:.1e}; {handed} stiff runs finished by LSODA; max drift "
        f"{max(r.max_invariant_drift for r in fast.runs):.1e}",
    )


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small batch")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    pin_threads()
    net, loss = _setup()
    t_final = 0.5 if args.quick else 5.0
    rows = []
    for B in [20] if args.quick else [100, 1000]:
        starts = [net.random_params(seed=s) for s in range(B)]
        t_ours, spread, res = median_time(
            lambda: gradient_flows(net, starts, loss, t_final, num_times=2), args.repeat
        )
        t_base, _, singles = median_time(
            lambda: [nm.gradient_flow(net, p, loss, t_final, num_times=2) for p in starts], 1
        )
        err = max(
            float(np.abs(res.end_to_end[i, -1] - s.end_to_end[-1]).max())
            for i, s in enumerate(singles)
        )
        peak = peak_memory_mb(lambda: gradient_flows(net, starts, loss, t_final, num_times=2))
        rows.append(
            suite_row(
                "gradient flows, batched",
                f"{B} flows of {net!r}, t={t_final:g}",
                t_ours,
                "loop of gradient_flow (solve_ivp), the same flows",
                t_base,
                spread,
                peak,
                f"max |v_batched - v_loop| = {err:.1e}; drift {res.max_invariant_drift.max():.1e}",
            )
        )
        print(
            f"{B:>5} flows: batched {t_ours:.2f} s, loop {t_base:.2f} s, "
            f"ratio {t_base / t_ours:.0f}x, agreement {err:.1e}"
        )
    rows.append(_study_row(args))
    # one flow: ours against solve_ivp + torch autograd
    p = net.random_params(seed=0)
    t_one, spread, flow = median_time(
        lambda: nm.gradient_flow(net, p, loss, t_final, num_times=2), args.repeat
    )
    try:
        torch_flow(net, loss, p, 0.01)  # warm-up: torch's first autograd call takes seconds
        t_torch, _, sol = median_time(lambda: torch_flow(net, loss, p, t_final), args.repeat)
        err = float(np.abs(net.end_to_end(net.unflatten(sol.y[:, -1])) - flow.end_to_end[-1]).max())
        note = (
            f"same solver and tolerances; max |v difference| = {err:.1e}; our "
            f"invariant drift {flow.max_invariant_drift:.1e}"
        )
    except ImportError:
        t_torch, note = None, "torch not installed (pip install 'neuromanifold[torch]')"
    rows.append(
        suite_row(
            "gradient flow, one",
            f"{net!r}, t={t_final:g}",
            t_one,
            "solve_ivp + torch autograd",
            t_torch,
            spread,
            None,
            note,
        )
    )
    print(
        f"one flow: ours {t_one * 1e3:.0f} ms, torch autograd "
        f"{'skipped' if t_torch is None else f'{t_torch * 1e3:.0f} ms'}"
    )
    return rows


if __name__ == "__main__":
    main()
