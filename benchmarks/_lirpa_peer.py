"""Optional peer for the bound benchmark: alpha-CROWN through ``auto_LiRPA`` (BSD-3,
"Automatic Linear Relaxation based Perturbation Analysis"), the bound engine inside
alpha-beta-CROWN, the winner of several VNN-COMPs.

auto_LiRPA is not a dependency of neuromanifold and is never imported at module level. Its
release on the package index (0.3, 2022) predates current torch; ``make bench-peers``
installs its public repository's current release (0.7.1) into ``.venv-peers`` with
``--no-deps`` beside the CPU torch the project's own tests use (the release pins
``torch<2.9``; on this machine's torch it imports and bounds these networks unchanged) and
the few pure-Python packages it imports (see the Makefile).

A single-network verifier bounds two networks' distance through their **product network**:
one network whose hidden layers hold both networks' neurons side by side (block-diagonal
weights) and whose output is ``f_q(x) - f_p(x)``. ``method="CROWN-Optimized"`` is
alpha-CROWN (the lower relaxation slopes of every unstable ReLU optimized by gradient
steps); the distance bound is the larger of ``max(upper)`` and ``-min(lower)`` over the
outputs.
"""

from __future__ import annotations

import time

import numpy as np

_MISSING = "auto_LiRPA not installed (make bench-peers installs it into .venv-peers)"


def available() -> str | None:
    """None when ``import auto_LiRPA`` works, else a one-line reason."""
    try:
        import auto_LiRPA  # optional peer: only this benchmark uses it
    except ImportError as exc:  # pragma: no cover - depends on the environment
        return _MISSING if exc.name in ("auto_LiRPA", "torch") else f"auto_LiRPA unusable: {exc}"
    del auto_LiRPA
    return None


def _product_module(p: list, q: list):
    """The product network of two MLPs of one depth (the bound engine's
    :func:`~neuromanifold.relu._bounds.linear.product_chain`, its output rows folded into
    the last layer) as a ``torch.nn.Sequential`` in float32 (alpha-CROWN's working
    precision; its optimized bounds refuse float64 here), its output ``f_q - f_p``."""
    import torch  # optional peer: only this benchmark uses it

    from neuromanifold.relu._bounds.linear import product_chain

    chain = product_chain(p, q)
    affine = list(chain.affine)
    A, c = affine[-1]
    affine[-1] = (chain.outputs @ A, chain.outputs @ c)
    layers: list = []
    for W, b in affine:
        lin = torch.nn.Linear(W.shape[1], W.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(np.asarray(W, np.float32)))
            lin.bias.copy_(torch.from_numpy(np.asarray(b, np.float32)))
        layers += [lin, torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def alpha_crown_distance(
    p: list, q: list, lo: np.ndarray, hi: np.ndarray, iterations: int = 100
) -> tuple[float, float]:
    """alpha-CROWN's upper bound of ``max_x |f_p(x) - f_q(x)|_inf`` over the box
    ``[lo, hi]`` on the product network (``iterations`` optimization steps, auto_LiRPA's
    default learning rates), and the seconds it took (building the bounded module
    included)."""
    import torch  # optional peer: only this benchmark uses it
    from auto_LiRPA import BoundedModule, BoundedTensor
    from auto_LiRPA.perturbations import PerturbationLpNorm

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    model = _product_module(p, q)
    x_lo = torch.from_numpy(np.asarray(lo, np.float32))[None]
    x_hi = torch.from_numpy(np.asarray(hi, np.float32))[None]
    centre = (x_lo + x_hi) / 2
    bounded = BoundedModule(model, centre, device="cpu", verbose=0)
    bounded.set_bound_opts({"optimize_bound_args": {"iteration": iterations}, "verbosity": 0})
    ptb = PerturbationLpNorm(norm=float("inf"), x_L=x_lo, x_U=x_hi)
    x = BoundedTensor(centre, ptb)
    lb, ub = bounded.compute_bounds(x=(x,), method="CROWN-Optimized")
    bound = max(float(ub.max()), float(-lb.min()))
    return bound, time.perf_counter() - t0
