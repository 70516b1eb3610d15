"""An independent path to ``dim Lie(V)(theta)`` for ReLU networks: float64 autodiff with
torch.func (``grad`` for the fields, ``jvp`` for the directional derivatives of a bracket)
and a numerical rank. It shares no code with ``neuromanifold.conservation``: the
networks, the generators, the brackets and the rank are written here from scratch."""

from __future__ import annotations

import numpy as np


def torch_lie_trace(params, X=None, *, max_depth=4, seed=0, tol=1e-7):
    """Ranks of ``V_k(theta)`` (k = 0, 1, ...) from random right-nested brackets,
    stopping when a depth adds nothing; returns ``(trace, D)``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: threads only contend
    try:
        return _torch_lie_trace(params, X, max_depth, seed, tol)
    finally:
        torch.set_num_threads(threads)


def _torch_lie_trace(params, X, max_depth, seed, tol):
    import torch
    from torch.func import grad, jvp

    torch.manual_seed(seed)
    widths = [params[0][0].shape[1]] + [W.shape[0] for W, _ in params]
    theta = torch.tensor(
        np.concatenate([np.concatenate([np.ravel(W), np.ravel(b)]) for W, b in params]),
        dtype=torch.float64,
    )
    D = theta.numel()
    if X is not None:
        Xt = torch.tensor(np.asarray(X, dtype=float))
        masks, H = [], Xt
        for l, (W, b) in enumerate(params[:-1]):
            Z = H @ torch.tensor(np.asarray(W, dtype=float)).T + torch.tensor(
                np.asarray(b, dtype=float)
            )
            masks.append((Z > 0).double())
            H = Z * masks[-1]

    def layers(th):
        out, pos = [], 0
        for n, m in zip(widths[:-1], widths[1:]):
            W = th[pos : pos + m * n].reshape(m, n)
            pos += m * n
            out.append((W, th[pos : pos + m]))
            pos += m
        return out

    def generator():
        if X is None:  # a random combination of path monomials
            r = torch.randn(D, dtype=torch.float64)

            def psi(th):
                h = torch.ones(widths[0], dtype=torch.float64)
                for W, b in layers(th * r):
                    h = W @ h + b
                return h.sum()
        else:  # a random combination of the outputs on the frozen region
            g = torch.randn(Xt.shape[0], widths[-1], dtype=torch.float64)

            def psi(th):
                h = Xt
                for l, (W, b) in enumerate(layers(th)):
                    h = h @ W.T + b
                    if l < len(widths) - 2:
                        h = h * masks[l]
                return (g * h).sum()

        return grad(psi)

    def bracket(Fx, Fy):
        def field(th):
            return jvp(Fy, (th,), (Fx(th),))[1] - jvp(Fx, (th,), (Fy(th),))[1]

        return field

    def sample(depth):
        F = generator()
        for _ in range(depth):
            F = bracket(generator(), F)
        return F(theta).detach().numpy()

    vecs, trace = [], []
    for depth in range(max_depth + 1):
        while True:
            batch = [sample(depth) for _ in range(D + 2 - _rank(vecs, tol))]
            before = _rank(vecs, tol)
            vecs += batch
            if _rank(vecs, tol) - before <= len(batch) - 2:
                break
        trace.append(_rank(vecs, tol))
        if len(trace) > 1 and trace[-1] == trace[-2]:
            break
    return trace, D


def _rank(vecs, tol):
    if not vecs:
        return 0
    A = np.array(vecs)
    n = np.linalg.norm(A, axis=1)
    A = A[n > 0] / n[n > 0, None]
    if A.shape[0] == 0:
        return 0
    s = np.linalg.svd(A, compute_uv=False)
    return int(np.sum(s > tol * s[0]))
