"""The table of docs/concepts_linear.md §3, computed row by row: is the NTK parameter-independent?

Every row is a :class:`Claim`: an architecture family, a condition, the seed's answer,
the architectures to test (cases) and candidate refinements (structural conditions on an
architecture). Nothing in the verdicts is stored: for every case and several random
instances the dependence test :func:`neuromanifold.ntk.ntk_dependence` computes the fiber
over ``(end_to_end(theta), invariants(theta))`` and the NTK at each of its points. A
witness it reports (two parameters with the same function and invariants and different
NTK) is re-verified here, independently, before it counts.

Aggregation. A case (one architecture) is ``dependent`` when some instance has a
re-verified witness (dependence on an open set of parameters already refutes generic
independence), ``independent`` when every instance is, and ``inconclusive`` otherwise. A
row is ``independent`` / ``dependent`` when all its cases are, ``mixed`` when they
differ. When a row is mixed or disagrees with the seed, its cases are grouped by the
first candidate refinement they satisfy and every group becomes a refined row, with its
own verdict and counterexample; ``evidence["explained"]`` says whether every group is
uniform, i.e. whether the candidate conditions explain the computed verdicts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._errors import InputError, short_repr
from .._results import Result, to_jsonable
from .._validation import as_seed_rng
from .._validation import check_bool, check_positive_float

__all__ = ["reproduce_linear", "Row", "Claim", "Case", "Refinement", "default_linear_claims",
           "verify_witness"]

INDEPENDENT, DEPENDENT, MIXED, INCONCLUSIVE = "independent", "dependent", "mixed", "inconclusive"


# --------------------------------------------------------------------------- inputs
@dataclasses.dataclass(frozen=True)
class Refinement:
    """A candidate condition on an architecture that may explain differing verdicts.

    Attributes:
        label: the condition in words (shown as the refined row's condition).
        predicate: ``predicate(net) -> bool`` on the case's architecture.
    """

    label: str
    predicate: Callable[[Any], bool]


@dataclasses.dataclass(frozen=True)
class Case:
    """One architecture of a row.

    Attributes:
        model: the model (linear network or shallow ReLU model) passed to ``ntk_dependence``.
        structure: the architecture the row's condition and refinements are read from
            (the model itself, or the linear network inside a shallow ReLU model).
        make_params: ``make_params(rng) -> params``, one random instance.
        fiber_options: keyword options for the fiber (e.g. ``num_starts`` for sampled fibers);
            a ``seed`` entry equal to ``"instance"`` is replaced by a per-instance seed.
    """

    model: Any
    structure: Any
    make_params: Callable[[np.random.Generator], Any]
    fiber_options: dict = dataclasses.field(default_factory=dict)

    @property
    def label(self) -> str:
        """The architecture's label in the table (``repr`` of the model)."""
        return repr(self.model)


@dataclasses.dataclass(frozen=True)
class Claim:
    """One row of the seed's table: the claim and how to test it.

    Attributes:
        architecture: the family (``"1D convolution"``, ...).
        condition: the row's condition in words.
        seed_claim: the seed's answer, ``"independent"`` or ``"dependent"``.
        cases: the architectures tested.
        condition_holds: ``condition_holds(structure) -> bool``; every case must satisfy it.
        refinements: candidate conditions, tried in order, to split a row whose cases differ.
        otherwise: the condition of the cases satisfying no refinement (default
            ``"none of: ..."``).
    """

    architecture: str
    condition: str
    seed_claim: str
    cases: Sequence[Case]
    condition_holds: Callable[[Any], bool] = lambda net: True
    refinements: Sequence[Refinement] = ()
    otherwise: str = ""


@dataclasses.dataclass(frozen=True, repr=False)
class Row(Result):
    """One row of the computed table.

    Attributes:
        architecture: the family.
        condition: the condition (refined rows append the refining condition).
        seed_claim: the seed's answer for this condition.
        computed: the computed verdict: ``independent``, ``dependent``, ``mixed`` or
            ``inconclusive``.
        agrees: ``computed == seed_claim``.
        evidence: largest NTK difference found, fiber sizes, whether every fiber was
            certified, numbers of architectures and instances, per-architecture verdicts
            and, for a dependent verdict, one re-verified witness.
    """

    architecture: str
    condition: str
    seed_claim: str
    computed: str
    agrees: bool
    evidence: dict

    def summary(self) -> str:
        """The evidence in one line, for the table."""
        e = self.evidence
        lo, hi = e["fiber_sizes"]
        parts = [f"max dK/K {e['max_relative_difference']:.1e}",
                 f"fiber {lo}" + (f"-{hi}" if hi != lo else "") + " pts",
                 "certified" if e["certified"] else "not certified",
                 f"{e['num_architectures']} arch, {e['num_instances']} inst"]
        w = e.get("witness")
        if w:
            parts.append(f"witness {w['architecture']} (dK/K {w['ntk_relative_difference']:.2g})")
        if "explained" in e and not e["explained"]:
            parts.append("candidate conditions do NOT explain the split")
        return "; ".join(parts)


# --------------------------------------------------------------------------- witnesses
def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b)) / max(float(np.linalg.norm(a)),
                                              float(np.linalg.norm(b)), 1e-300)


def verify_witness(model: Any, witnesses: Any, *, tol: float = 1e-6,
                   fiber_tol: float = 1e-8) -> dict:
    """Re-check a witness pair from scratch: same function, same invariants, different NTK.

    Args:
        model: the model.
        witnesses: a pair of parameters.
        tol: the NTK difference must exceed this (relative), and 100 times the residuals.
        fiber_tol: the function and invariant residuals must be below this (relative).

    Returns:
        A dict with ``function_residual``, ``invariant_residual``,
        ``ntk_relative_difference`` and ``verified``.
    """
    from ..fibers import invariant_scale, invariant_vector

    if isinstance(witnesses, (str, bytes)) or not hasattr(witnesses, "__len__") \
            or len(witnesses) != 2:
        raise InputError(f"witnesses must be a pair of parameters; got {short_repr(witnesses)}")
    p, q = witnesses
    p, q = model.check_params(p), model.check_params(q)
    fres = _rel(np.asarray(model.end_to_end(p)).ravel(), np.asarray(model.end_to_end(q)).ravel())
    ip, iq = invariant_vector(model, p), invariant_vector(model, q)
    ires = float(np.abs(ip - iq).max(initial=0.0)) / invariant_scale(ip, p)
    kdiff = _rel(model.ntk(p), model.ntk(q))
    ok = fres <= fiber_tol and ires <= fiber_tol and kdiff > max(tol, 100 * max(fres, ires))
    return {"function_residual": fres, "invariant_residual": ires,
            "ntk_relative_difference": kdiff, "verified": bool(ok)}


# --------------------------------------------------------------------------- computing
def _run_case(case: Case, num_instances: int, rng: np.random.Generator, tol: float,
              bar: Any) -> dict:
    from ..ntk import ntk_dependence

    instances, witness = [], None
    for _ in range(num_instances):
        params = case.make_params(rng)
        options = {k: (int(rng.integers(2 ** 31)) if isinstance(v, str) and v == "instance"
                       else v) for k, v in case.fiber_options.items()}
        dep = ntk_dependence(case.model, params, tol=tol, **options)
        check = None
        if dep.witnesses is not None:
            check = verify_witness(case.model, dep.witnesses)
            if check["verified"] and witness is None:
                witness = {"architecture": case.label,
                           "params": [to_jsonable(w) for w in dep.witnesses],
                           **check}
        instances.append({"independent": bool(dep.independent),
                          "max_relative_difference": float(dep.max_relative_difference),
                          "num_points": int(dep.num_points),
                          "certified": bool(dep.certified),
                          "witness_verified": bool(check and check["verified"])})
        if bar is not None:
            bar.update(1)
    if any(i["witness_verified"] for i in instances):
        verdict = DEPENDENT
    elif all(i["independent"] for i in instances):
        verdict = INDEPENDENT
    else:
        verdict = INCONCLUSIVE
    return {"architecture": case.label, "verdict": verdict, "instances": instances,
            "witness": witness}


def _aggregate(results: list[dict]) -> str:
    verdicts = {r["verdict"] for r in results}
    if verdicts == {INDEPENDENT}:
        return INDEPENDENT
    if verdicts == {DEPENDENT}:
        return DEPENDENT
    if verdicts <= {INDEPENDENT, INCONCLUSIVE} or verdicts <= {DEPENDENT, INCONCLUSIVE}:
        return INCONCLUSIVE
    return MIXED


def _evidence(results: list[dict]) -> dict:
    inst = [i for r in results for i in r["instances"]]
    witness = next((r["witness"] for r in results if r["witness"] is not None), None)
    return {
        "max_relative_difference": max((i["max_relative_difference"] for i in inst),
                                       default=0.0),
        "fiber_sizes": [min((i["num_points"] for i in inst), default=0),
                        max((i["num_points"] for i in inst), default=0)],
        "certified": all(i["certified"] for i in inst),
        "num_architectures": len(results),
        "num_instances": len(inst),
        "per_architecture": [
            {"architecture": r["architecture"], "verdict": r["verdict"],
             "max_relative_difference": max(i["max_relative_difference"]
                                            for i in r["instances"]),
             "fiber_sizes": sorted({i["num_points"] for i in r["instances"]}),
             "certified": all(i["certified"] for i in r["instances"])} for r in results],
        "witness": witness,
    }


def _rows_for(claim: Claim, results: list[dict]) -> list[Row]:
    computed = _aggregate(results)
    rows = [Row(architecture=claim.architecture, condition=claim.condition,
                seed_claim=claim.seed_claim, computed=computed,
                agrees=computed == claim.seed_claim, evidence=_evidence(results))]
    if (computed == claim.seed_claim and computed != MIXED) or not claim.refinements:
        return rows
    # group the cases by the first candidate condition they satisfy
    groups: dict[str, list[dict]] = {}
    for case, res in zip(claim.cases, results):
        label = next((r.label for r in claim.refinements if r.predicate(case.structure)),
                     claim.otherwise or "none of: " + "; ".join(
                         r.label for r in claim.refinements))
        groups.setdefault(label, []).append(res)
    if len(groups) < 2 and computed != MIXED:
        return rows
    explained = all(_aggregate(g) in (INDEPENDENT, DEPENDENT) for g in groups.values())
    rows[0].evidence["explained"] = bool(explained)
    for label, group in groups.items():
        verdict = _aggregate(group)
        ev = _evidence(group)
        ev["refines"] = claim.condition
        rows.append(Row(architecture=claim.architecture,
                        condition=f"{claim.condition}; {label}", seed_claim=claim.seed_claim,
                        computed=verdict, agrees=verdict == claim.seed_claim, evidence=ev))
    return rows


def reproduce_linear(*, seed: int = 0, quick: bool = False, progress: bool = False,
                     claims: Sequence[Claim] | None = None,
                     num_instances: int | None = None, tol: float = 1e-8) -> list[Row]:
    """Compute the table of docs/concepts_linear.md §3 (and its refinements) row by row.

    Args:
        seed: seed of every random draw (parameters, fiber sampling).
        quick: fewer architectures and instances (a few seconds; for tests).
        progress: show a progress bar over all instances on stderr.
        claims: the rows to compute (default :func:`default_linear_claims`).
        num_instances: random instances per architecture (default 5, quick 1).
        tol: relative NTK difference below which a fiber counts as independent.

    Returns:
        The rows, each a :class:`Row` (refined rows follow their parent).

    >>> rows = reproduce_linear(quick=True)
    >>> row = rows[0]
    >>> row.architecture, row.condition, row.seed_claim, row.computed, row.agrees
    ('fully connected linear', 'balanced (all Delta_l = 0)', 'independent', 'independent', True)
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"seed must be an int; got {seed!r}")
    tol = check_positive_float(tol, "tol")
    quick = check_bool(quick, "quick")
    progress = check_bool(progress, "progress")
    if claims is not None and (isinstance(claims, (str, bytes)) or not isinstance(claims, Sequence)
                               or not all(isinstance(c, Claim) for c in claims)):
        raise InputError(f"claims must be a list of Claim; got {short_repr(claims)}")
    claims = list(default_linear_claims(quick=quick) if claims is None else claims)
    n = num_instances if num_instances is not None else (1 if quick else 5)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"num_instances must be a positive int; got {n!r}")
    for claim in claims:
        if claim.seed_claim not in (INDEPENDENT, DEPENDENT):
            raise InputError(f"seed_claim must be {INDEPENDENT!r} or {DEPENDENT!r}; "
                             f"got {claim.seed_claim!r}")
        for case in claim.cases:
            if not claim.condition_holds(case.structure):
                raise InputError(f"{case.label} does not satisfy the condition "
                                 f"{claim.condition!r} of its row")
    rng = as_seed_rng(int(seed))
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=n * sum(len(c.cases) for c in claims), desc="reproduce linear",
                   unit="instance")
    rows: list[Row] = []
    try:
        for claim in claims:
            results = [_run_case(case, n, rng, tol, bar) for case in claim.cases]
            rows.extend(_rows_for(claim, results))
    finally:
        if bar is not None:
            bar.close()
    return rows


# --------------------------------------------------------------------------- default table
def _nontrivial(shape: tuple) -> bool:
    return int(np.prod(shape)) > 1


def _share_S(net: Any) -> bool:
    """Two layers with filter size > 1 and the same cumulative stride ``S_{l-1}``."""
    seen = [S for k, S in zip(net.filter_shapes, net.cumulative_strides) if _nontrivial(k)]
    return len(seen) != len(set(seen))


def _interchangeable(net: Any) -> bool:
    """Two layers with filter size > 1, the same filter shape and the same ``S_{l-1}``."""
    seen = [(k, S) for k, S in zip(net.filter_shapes, net.cumulative_strides) if _nontrivial(k)]
    return len(seen) != len(set(seen))


def _common_axis(net: Any) -> bool:
    """Two filters supported on one common axis (e.g. shapes (k,1), (k',1)) with the same
    stride ``S_{l-1}`` along it: their univariate factors can be reassigned as in 1D."""
    seen = []
    for k, S in zip(net.filter_shapes, net.cumulative_strides):
        axes = [a for a, n in enumerate(k) if n > 1]
        if len(axes) == 1:
            seen.append((axes[0], S[axes[0]]))
    return len(seen) != len(set(seen))


def _fc_finite(net: Any) -> bool:
    """Parameter count minus the number of equations ``W`` (dim M) and ``Delta_l``
    (symmetric ``d_l x d_l``) is <= 0: a finite fiber is expected at fixed (W, Delta)."""
    return net.num_params <= net.dimension + sum(d * (d + 1) // 2 for d in net.widths[1:-1])


def _all_strides_gt1(net: Any) -> bool:
    return net.ndim == 1 and all(s[0] > 1 for s in net.strides)


def _special_strided_params(net: Any) -> Callable[[np.random.Generator], Any]:
    """Adversarial instances for "1D, all strides > 1": layer 1's filter is a polynomial in
    ``t^{S_1}`` (its roots are closed under the S_1-th roots of unity, like layer 2's), at a
    smooth point (exact Jacobian rank = dim M). Such v are non-generic but in the smooth
    locus, where docs/concepts_linear.md §3 claims independence for any delta."""
    S1 = net.cumulative_strides[1][0]

    def make(rng: np.random.Generator) -> Any:
        for _ in range(100):
            params = net.random_params(rng)
            params[0][np.arange(params[0].size) % S1 != 0] = 0.0
            if net.is_smooth(params, exact=True):
                return params
        raise InputError(f"no smooth special point found for {net!r}")  # pragma: no cover
    return make


def default_linear_claims(*, quick: bool = False) -> list[Claim]:
    """The rows of docs/concepts_linear.md §3 with the architectures tested for each (inputs, not verdicts).

    Each row lists architectures satisfying its condition, chosen to cover the condition
    (several filter sizes, strides, depths) including structurally special ones (layers
    of filter size 1, same filter shapes, filters degenerate along an axis, one linear
    layer), and candidate refinements to explain differing verdicts.

    Args:
        quick: fewer architectures per row (for tests).

    Returns:
        A list of :class:`Claim`, one per row of docs/concepts_linear.md §3.
    """
    from ..linear import LinearConvNet, LinearFCNet, ShallowReLUCNN, ShallowReLUMLP
    quick = check_bool(quick, "quick")

    def conv(shapes, strides=None):
        net = LinearConvNet(shapes, strides)
        return Case(net, net, net.random_params)

    def conv_special(shapes, strides):
        net = LinearConvNet(shapes, strides)
        return Case(net, net, _special_strided_params(net))

    def fc_balanced(widths):
        net = LinearFCNet(widths)
        return Case(net, net, lambda rng: net.balanced_params(rng),
                    {"num_starts": 4 if quick else 6, "seed": "instance"})

    def fc_generic(widths):
        net = LinearFCNet(widths)
        return Case(net, net, net.random_params,
                    {"num_starts": 4 if quick else 6, "seed": "instance"})

    def relu_cnn(shapes, strides=None):
        model = ShallowReLUCNN.with_random_inputs(shapes, strides, seed=7)
        return Case(model, model.linear, model.random_params)

    def relu_mlp(widths):
        model = ShallowReLUMLP.with_random_inputs(widths, seed=7)
        opts = {} if len(widths) == 2 else {"num_starts": 4 if quick else 6, "seed": "instance"}
        return Case(model, model.linear, model.random_params, opts)

    is_conv_1d = lambda net: isinstance(net, LinearConvNet) and net.ndim == 1  # noqa: E731
    exchange = [Refinement("interchangeable layers (same shape, same S_{l-1})",
                           _interchangeable),
                Refinement("two filters on one common axis (1D or like (k,1)), same S_{l-1}",
                           _common_axis)]
    one_layer = Refinement("one linear layer (V = W_1)", lambda net: net.num_layers == 1)

    if quick:
        fc_b = [fc_balanced([2, 2, 2])]
        fc_g = [fc_generic([2, 2, 2]), fc_generic([2, 1, 2])]
        c1_strided = [conv([2, 2], [2]), conv([3, 2], [2])]
        c1_special = [conv_special([3, 2], [2])]
        c1_stride1 = [conv([2, 2], [1]), conv([2, 1, 2], [1, 2])]
        c2 = [conv([(2, 2), (3, 2)]), conv([(2, 2), (2, 2)]), conv([(2, 1), (4, 1)])]
        r_cnn = [relu_cnn([2, 2], [2]), relu_cnn([2, 2], [1])]
        r_mlp = [relu_mlp([2, 2, 2]), relu_mlp([2, 2])]
    else:
        fc_b = [fc_balanced([2, 2, 2]), fc_balanced([2, 3, 2]), fc_balanced([2, 2, 2, 2]),
                fc_balanced([3, 2, 3])]
        fc_g = [fc_generic([2, 2, 2]), fc_generic([2, 3, 2]), fc_generic([2, 2, 2, 2]),
                fc_generic([3, 2, 3]), fc_generic([1, 2, 1]), fc_generic([2, 1, 2])]
        c1_strided = [conv([2, 2], [2]), conv([3, 2], [2]), conv([2, 3], [3]),
                      conv([4, 2], [2]), conv([2, 2, 2], [2, 2]), conv([3, 2, 2], [2, 3]),
                      conv([5, 3], [2]), conv([3, 3, 3], [2, 2])]
        c1_special = [conv_special([3, 2], [2]), conv_special([5, 3], [2]),
                      conv_special([4, 2], [3]), conv_special([5, 2, 2], [2, 2]),
                      conv_special([3, 3], [2])]
        c1_stride1 = [conv([2, 2], [1]), conv([3, 3], [1]), conv([2, 3], [1]), conv([2, 4], [1]),
                      conv([2, 2, 2], [1, 2]), conv([2, 2, 2], [2, 1]),
                      conv([2, 1, 2], [1, 2]), conv([3, 1, 2], [1, 3]), conv([3, 3, 3], [1, 1])]
        c2 = [conv([(2, 2), (3, 2)]), conv([(2, 2), (2, 3)], [(2, 1)]),
              conv([(2, 2), (2, 2)], [(2, 2)]), conv([(3, 2), (2, 2), (2, 2)], [(2, 2), (1, 1)]),
              conv([(2, 2), (2, 2)]), conv([(2, 3), (2, 3)], [(1, 1)]),
              conv([(2, 1), (3, 1)]), conv([(2, 1), (4, 1)]), conv([(2, 1), (1, 2)]),
              conv([(2, 1), (2, 2)]),
              conv([(2, 2, 2), (2, 2, 2)]), conv([(2, 2), (2, 2), (2, 2)])]
        r_cnn = [relu_cnn([2, 2], [2]), relu_cnn([3, 2], [2]), relu_cnn([(2, 2), (2, 3)]),
                 relu_cnn([2, 2], [1]), relu_cnn([(2, 2), (2, 2)]), relu_cnn([2, 3], [1])]
        r_mlp = [relu_mlp([2, 2, 2]), relu_mlp([2, 3, 2]), relu_mlp([2, 2]), relu_mlp([3, 2])]

    return [
        Claim("fully connected linear", "balanced (all Delta_l = 0)", INDEPENDENT, fc_b,
              lambda net: isinstance(net, LinearFCNet)),
        Claim("fully connected linear", "generic Delta", DEPENDENT, fc_g,
              lambda net: isinstance(net, LinearFCNet),
              [Refinement("expected fiber dim <= 0 (#params <= dim M + sum d_l(d_l+1)/2)",
                          _fc_finite)],
              "expected fiber dim > 0"),
        Claim("1D convolution", "all strides s_1..s_{L-1} > 1", INDEPENDENT, c1_strided,
              _all_strides_gt1,
              [Refinement("two layers of size > 1 share S_{l-1}", _share_S)],
              "no two layers of size > 1 share S_{l-1}"),
        Claim("1D convolution",
              "all strides > 1; smooth but non-generic v (filter 1 a polynomial in t^{S_1})",
              INDEPENDENT, c1_special, _all_strides_gt1),
        Claim("1D convolution", "some stride = 1", DEPENDENT, c1_stride1,
              lambda net: is_conv_1d(net) and any(s[0] == 1 for s in net.strides),
              [Refinement("two layers of size > 1 share S_{l-1}", _share_S)],
              "no two layers of size > 1 share S_{l-1}"),
        Claim("D >= 2 convolution", "any strides", INDEPENDENT, c2,
              lambda net: isinstance(net, LinearConvNet) and net.ndim >= 2, exchange,
              "no interchangeable layers, no two filters on a common axis"),
        Claim("shallow ReLU CNN", "generic", INDEPENDENT, r_cnn,
              lambda net: isinstance(net, LinearConvNet), exchange,
              "no interchangeable layers, no two filters on a common axis"),
        Claim("shallow ReLU MLP", "generic", DEPENDENT, r_mlp,
              lambda net: isinstance(net, LinearFCNet), [one_layer],
              "L >= 2 linear layers (V = W_L ... W_1)"),
    ]
