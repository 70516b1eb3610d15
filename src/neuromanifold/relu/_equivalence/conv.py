"""Equivalence of two convolutional ReLU networks by their channels.

Each channel group (:func:`~neuromanifold.relu._symmetries.channels.channel_spec`) is
matched in order: the rows of the producing layers (a channel's kernel and bias, with
the earlier groups' permutation and scaling already applied to its input channels) are
normalized and matched by one assignment, the scale of each pair is the ratio of their
norms. The certificate is a bound, as for fully connected networks: with ``p*`` the
image of ``p`` under the matched symmetry (the same function as ``p``, up to the float
rounding of applying it, at most ``4 u L scale``), ``|f_p* - f_q|`` is bounded from the
parameters layer by layer (:func:`~neuromanifold.relu._core.conv.network.difference_bound`).
With ``tol = 0`` the verdict needs ``p* = q`` exactly and scales that are powers of two
(then ``p*`` is exactly the image).

When the match does not certify, sampled inputs are searched for a difference above the
threshold, re-checked in exact rational arithmetic on the structured network; else the
caller decides on the dense views.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linear_sum_assignment

from ..._errors import ArchitectureError
from ...exact import to_fmpq
from .._core.conv.network import ReLUConvNet, difference_bound, path_norm, symmetry_rounding
from .._core.domain import Domain, sample_points
from .._engine.joint_regions import Equivalence
from .._symmetries.channels import (
    ChannelSymmetry,
    apply_channel_symmetries,
    channel_spec,
    ready_producers,
)

__all__ = ["by_channels", "conv_witness"]

_NUM_SAMPLES = 512


def _same_layout(p: ReLUConvNet, q: ReLUConvNet) -> bool:
    return (
        p.input_shape == q.input_shape
        and len(p.leaves()) == len(q.leaves())
        and all(
            pa == pb
            and type(a) is type(b)
            and a.config() == b.config()
            and all(x.shape == y.shape for x, y in zip(a.arrays().values(), b.arrays().values()))
            for (pa, a, _), (pb, b, _) in zip(p.leaves(), q.leaves())
        )
    )


def match_channels(p: ReLUConvNet, q: ReLUConvNet) -> tuple[ReLUConvNet, tuple]:
    """``(p*, symmetries)``: ``p`` moved by the channel permutations and positive scalings
    that bring each group's producing rows closest to ``q``'s."""
    spec = channel_spec(p)
    syms = []
    matched: set[str] = set()
    current = p
    for g in spec.groups:
        producers = ready_producers(spec, g, matched)
        rows_p = np.concatenate([current.layer_at(i).out_rows() for i in producers], 1)
        rows_q = np.concatenate([q.layer_at(i).out_rows() for i in producers], 1)
        with np.errstate(all="ignore"):
            n_p = np.linalg.norm(rows_p, axis=1)
            n_q = np.linalg.norm(rows_q, axis=1)
            u_p = rows_p / np.where(n_p > 0, n_p, 1)[:, None]
            u_q = rows_q / np.where(n_q > 0, n_q, 1)[:, None]
            cost = ((u_q[:, None, :] - u_p[None, :, :]) ** 2).sum(axis=2)
        cost = np.where(np.isfinite(cost), cost, 1e300)
        _, perm = linear_sum_assignment(cost)  # q's channel j <- p's channel perm[j]
        with np.errstate(all="ignore"):
            scale = np.where((n_p[perm] > 0) & (n_q > 0), n_q / n_p[perm], 1.0)
        scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
        # a ratio of norms within rounding of a power of two is that power: its image is
        # then exact (the certificate checks it either way)
        two = np.exp2(np.round(np.log2(scale)))
        scale = np.where(np.abs(scale / two - 1) < 1e-12, two, scale)
        sym = ChannelSymmetry(group=g.name, perm=tuple(perm.tolist()), scale=tuple(scale.tolist()))
        current = apply_channel_symmetries(current, (sym,), spec)
        syms.append(sym)
        matched.add(g.name)
    return current, tuple(syms)


def _powers_of_two(syms: tuple) -> bool:
    return all(s > 0 and math.frexp(s)[0] == 0.5 for sym in syms for s in sym.scale)


def by_channels(p: ReLUConvNet, q: ReLUConvNet, dom: Domain, tol: float) -> Equivalence | None:
    """Equivalent (certified) by a matched channel symmetry and the parameter bound, or
    ``None`` when the two networks differ in their layers or the bound is above
    ``tol * scale``."""
    if not _same_layout(p, q):
        return None
    image, syms = match_channels(p, q)
    bound = difference_bound(image, q)
    scale = max(path_norm(p), path_norm(q))

    exact = tol == 0 and bound == 0 and _powers_of_two(syms) and _finite_normal(image)
    rounding = 0.0 if exact else symmetry_rounding(p)
    total = bound + rounding
    if not (math.isfinite(total) and scale > 0):
        return None
    if not (exact or (tol > 0 and total <= tol * scale)):
        return None
    return Equivalence(
        equivalent=True,
        witness=None,
        witness_difference=None,
        max_difference=total / scale,
        method="matching",
        certified=True,
        tol=tol,
        scale=float(scale),
        num_regions=None,
        num_lps=0,
        num_milps=0,
        domain=dom,
        symmetry=syms,
        note=(
            "q is p with its channels permuted and scaled by powers of two, exactly"
            if exact
            else f"q is p with its channels permuted and positively rescaled (matched in "
            f"floats, group by group) up to a difference of the functions of at most "
            f"{total / scale:.3g} relative (bound from the parameters layer by layer, the "
            f"rounding of the match included)"
        ),
    )


def _finite_normal(net: ReLUConvNet) -> bool:
    for _, layer, _ in net.leaves():
        for a in layer.arrays().values():
            if not np.all(np.isfinite(a)) or np.any((a != 0) & (np.abs(a) < 2.0**-1022)):
                return False
    return True


def conv_witness(
    p: ReLUConvNet, q: ReLUConvNet, dom: Domain, tol: float, rng: np.random.Generator
) -> Equivalence | None:
    """Not equivalent, with an input where the exact relative difference exceeds ``tol``
    (the structured networks evaluated in rational arithmetic), or ``None`` when no
    sampled input shows one."""
    if p.input_dim != q.input_dim or p.output_dim != q.output_dim:
        raise ArchitectureError(
            f"the two networks must have the same input and output dimensions; got "
            f"{p.input_dim} -> {p.output_dim} and {q.input_dim} -> {q.output_dim}"
        )
    scale = max(path_norm(p), path_norm(q))
    X = sample_points(dom, p.input_dim, rng, _NUM_SAMPLES)
    with np.errstate(all="ignore"):
        diff = np.abs(p.forward(X) - q.forward(X)).max(axis=1)
        rel = diff / np.maximum(1.0, np.abs(X).max(axis=1))
    order = np.argsort(-np.nan_to_num(rel, nan=-1.0))[:2]
    for i in order:
        if not rel[i] > tol * scale:
            break
        x = X[i]
        exact = np.abs(p.exact_forward(x[None])[0] - q.exact_forward(x[None])[0])
        norm = max(1.0, float(np.abs(x).max()))
        worst = max(exact)
        if worst > to_fmpq(tol * scale * norm):  # against the float threshold, exactly
            return Equivalence(
                equivalent=False,
                witness=x.copy(),
                witness_difference=float(worst),
                max_difference=float(worst) / (scale * norm),
                method="sampling",
                certified=True,
                tol=tol,
                scale=float(scale),
                num_regions=None,
                num_lps=0,
                num_milps=0,
                domain=dom,
                note=f"the networks differ by {float(worst):.3g} at a sampled input (checked "
                "in exact rational arithmetic on the convolutional networks), more than "
                f"tol * scale * max(1, |x|_inf) = {tol * scale * norm:.3g}",
            )
    return None
