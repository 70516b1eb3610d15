"""The table of docs/concepts_linear.md §3, computed row by row: is the NTK parameter-independent?

Every row is a :class:`Claim`: an architecture family, a condition, the paper's answer,
the architectures to test (cases) and candidate refinements (structural conditions on an
architecture). Nothing in the verdicts is stored: for every case and several random
instances the dependence test :func:`neuromanifold.ntk.ntk_dependence` computes the fiber
over ``(end_to_end(theta), invariants(theta))`` and the NTK at each of its points. A
witness it reports (two parameters with the same function and invariants and different
NTK) is re-verified here, independently, before it counts.

Hypotheses. Every claim lists the hypotheses it is made under (:class:`Hypothesis`):
paper A's standing assumptions (every filter has more than one entry; the last stride is
ignored), the row's condition, the smooth locus for the independence theorems (``v`` a
regular point of the neuromanifold, :func:`neuromanifold.linear.is_regular_point`),
genericity for the dependence claims. Each is checked on every instance. The row's
**outcome** is computed, never stored:

* ``agrees``: the computed verdict is the claim's, or it is on every instance that meets
  every hypothesis (the contradicting instances are outside and are listed);
* ``disagrees``: instances meeting every hypothesis contradict the claim with verified
  evidence. An independence claim: one re-verified witness pair. A dependence claim (an
  existence statement: some fibers carry different NTKs) is refuted by an architecture,
  not by one instance: every instance of it meeting the hypotheses has a certified
  complete fiber with a constant NTK, recomputed from the stored parameters. The
  evidence is ``evidence["counterexample"]``;
* ``outside the hypotheses``: every contradicting instance breaks a hypothesis, and no
  instance meets them all (the reason says which hypothesis fails);
* ``inconclusive``: the instances meeting every hypothesis contradict the claim only
  with evidence that proves nothing (e.g. independence on a sampled, uncertified fiber).

Aggregation. A case (one architecture) is ``dependent`` when some instance has a
re-verified witness (dependence on an open set of parameters already refutes generic
independence), ``independent`` when every instance is, and ``inconclusive`` otherwise. A
row is ``independent`` / ``dependent`` when all its cases are, ``mixed`` when they
differ. When a row is mixed or disagrees with the paper, its cases are grouped by the
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
from .._progress import progress_bar
from .._results import to_jsonable
from .._tolerance import NTK_TOL, RESIDUAL_TOL, check_tol
from .._validation import as_seed_rng, check_bool, check_positive_float, check_positive_int
from ..fibers import invariant_scale, invariant_vector
from ..linear import LinearConvNet, LinearFCNet, ShallowReLUCNN, ShallowReLUMLP
from ..ntk import ntk_dependence
from ._common import AGREES, DISAGREES, INCONCLUSIVE, OUTCOMES, OUTSIDE, Row, summarize  # noqa: F401


def _check_model(model: Any) -> None:
    """A network or model object (with ``check_params``, ``end_to_end``, ``ntk``)."""
    if isinstance(model, type) or not all(
        callable(getattr(model, m, None)) for m in ("check_params", "end_to_end", "ntk")
    ):
        raise InputError(
            f"model must be a network or model instance (e.g. LinearConvNet); "
            f"got {short_repr(model)}"
        )


#: most random instances per architecture in one reproduction run
MAX_NUM_INSTANCES = 10_000

__all__ = [
    "reproduce_linear",
    "Row",
    "Claim",
    "Case",
    "Refinement",
    "Hypothesis",
    "default_linear_claims",
    "verify_witness",
    "verify_independence",
    "summarize",
    "architecture_hypothesis",
    "standing_hypothesis",
]

INDEPENDENT, DEPENDENT, MIXED = "independent", "dependent", "mixed"

#: labels of the standing hypotheses reported by :func:`neuromanifold.ntk.ntk_dependence`
SIZES = "every filter has more than one entry"
REGULAR = "v is a regular point of the neuromanifold (smooth locus)"


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
class Hypothesis:
    """One hypothesis of a claim, checked on every instance.

    Attributes:
        label: the hypothesis in words (listed in the row and in docs/reproduction.md).
        check: ``check(case, params, dependence) -> (holds, detail)`` with ``holds``
            True, False or None (undecided, which does not count as met), ``dependence``
            the :class:`~neuromanifold.ntk.NTKDependence` of the instance.
    """

    label: str
    check: Callable[[Any, Any, Any], tuple]


def _check_label(label: Any) -> None:
    if not isinstance(label, str):
        raise InputError(f"a hypothesis label must be a string; got {short_repr(label)}")


def architecture_hypothesis(label: str, predicate: Callable[[Any], bool]) -> Hypothesis:
    """A hypothesis on the architecture: ``predicate(case.structure) -> bool``.

    Args:
        label: the hypothesis in words.
        predicate: the test on the case's architecture.

    Returns:
        A :class:`Hypothesis`.
    """
    _check_label(label)
    return Hypothesis(
        label, lambda case, params, dep: (bool(predicate(case.structure)), case.label)
    )


def standing_hypothesis(label: str) -> Hypothesis:
    """One of the standing hypotheses :func:`neuromanifold.ntk.ntk_dependence` reports
    (``SIZES`` or ``REGULAR``), looked up by label; undecided when not reported.

    Args:
        label: the label reported by ``ntk_dependence``.

    Returns:
        A :class:`Hypothesis`.
    """
    _check_label(label)

    def check(case, params, dep):
        for name, holds, detail in getattr(dep, "hypotheses", ()):
            if name == label:
                return holds, detail
        return None, f"not checked for {case.label}"

    return Hypothesis(label, check)


GENERIC = Hypothesis(
    "generic parameters (a Gaussian random draw)",
    lambda case, params, dep: (
        bool(case.generic),
        "random draw" if case.generic else "non-generic by construction",
    ),
)


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
        generic: the instances are generic (plain random draws), not special points.
    """

    model: Any
    structure: Any
    make_params: Callable[[np.random.Generator], Any]
    fiber_options: dict = dataclasses.field(default_factory=dict)
    generic: bool = True

    @property
    def label(self) -> str:
        """The architecture's label in the table (``repr`` of the model)."""
        return repr(self.model)


@dataclasses.dataclass(frozen=True)
class Claim:
    """One row of the paper's table: the claim and how to test it.

    Attributes:
        architecture: the family (``"1D convolution"``, ...).
        condition: the row's condition in words.
        paper_claim: the paper's answer, ``"independent"`` or ``"dependent"``.
        cases: the architectures tested.
        condition_holds: ``condition_holds(structure) -> bool``; every case must satisfy it.
        refinements: candidate conditions, tried in order, to split a row whose cases differ.
        otherwise: the condition of the cases satisfying no refinement (default
            ``"none of: ..."``).
        hypotheses: the hypotheses the claim is made under, checked on every instance
            (docs/reproduction.md lists them for every row).
    """

    architecture: str
    condition: str
    paper_claim: str
    cases: Sequence[Case]
    condition_holds: Callable[[Any], bool] = lambda net: True
    refinements: Sequence[Refinement] = ()
    otherwise: str = ""
    hypotheses: Sequence[Hypothesis] = ()


def _ntk_summary(row: Row) -> str:
    """The evidence of a linear row in one line, for the table."""
    e = row.evidence
    lo, hi = e["fiber_sizes"]
    parts = [
        f"max dK/K {e['max_relative_difference']:.1e}",
        f"fiber {lo}" + (f"-{hi}" if hi != lo else "") + " pts",
        "certified" if e["certified"] else "not certified",
        f"{e['num_architectures']} arch, {e['num_instances']} inst",
    ]
    w = e.get("witness")
    if w:
        parts.append(f"witness {w['architecture']} (dK/K {w['ntk_relative_difference']:.2g})")
    if "explained" in e and not e["explained"]:
        parts.append("candidate conditions do NOT explain the split")
    parts.append(f"{e['num_within']} inst within hypotheses")
    if row.reason:
        parts.append(row.reason)
    return "; ".join(parts)


# --------------------------------------------------------------------------- witnesses
def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b)) / max(
        float(np.linalg.norm(a)), float(np.linalg.norm(b)), 1e-300
    )


def verify_witness(
    model: Any, witnesses: Any, *, tol: float = 1e-6, fiber_tol: float = RESIDUAL_TOL
) -> dict:
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

    _check_model(model)
    tol, fiber_tol = check_tol(tol), check_tol(fiber_tol, "fiber_tol")
    if (
        isinstance(witnesses, (str, bytes, type))
        or not hasattr(witnesses, "__len__")
        or len(witnesses) != 2
    ):
        raise InputError(f"witnesses must be a pair of parameters; got {short_repr(witnesses)}")
    p, q = witnesses
    p, q = model.check_params(p), model.check_params(q)
    fres = _rel(np.asarray(model.end_to_end(p)).ravel(), np.asarray(model.end_to_end(q)).ravel())
    ip, iq = invariant_vector(model, p), invariant_vector(model, q)
    ires = float(np.abs(ip - iq).max(initial=0.0)) / invariant_scale(ip, p)
    kdiff = _rel(model.ntk(p), model.ntk(q))
    ok = fres <= fiber_tol and ires <= fiber_tol and kdiff > max(tol, 100 * max(fres, ires))
    return {
        "function_residual": fres,
        "invariant_residual": ires,
        "ntk_relative_difference": kdiff,
        "verified": bool(ok),
    }


# --------------------------------------------------------------------------- computing
def verify_independence(model: Any, params: Any, *, tol: float = NTK_TOL) -> dict:
    """Re-check a counterexample to a dependence claim from scratch (without
    :func:`neuromanifold.ntk.ntk_dependence`): the fiber through ``params`` is recomputed
    and must be certified complete, every point must realize the function and the
    invariants, and the NTK must be the same at every point and at ``params``.

    Args:
        model: the model.
        params: the parameters of the instance.
        tol: relative NTK difference below which the NTK counts as constant.

    Returns:
        A dict with ``certified``, ``num_points``, ``max_relative_difference``,
        ``max_residual`` and ``verified``.
    """

    _check_model(model)
    tol = check_tol(tol)
    params = model.check_params(params)
    if callable(getattr(model, "exact_target", None)):
        fib = model.fiber(*model.exact_target(params))
    else:
        fib = model.fiber(model.end_to_end(params), model.invariants(params))
    v, inv = np.asarray(model.end_to_end(params)).ravel(), invariant_vector(model, params)
    worst, diff = 0.0, 0.0
    Ks = [model.ntk(q) for q in fib.points]
    for q, K in zip(fib.points, Ks):
        worst = max(
            worst,
            _rel(v, np.asarray(model.end_to_end(q)).ravel()),
            float(np.abs(invariant_vector(model, q) - inv).max(initial=0.0))
            / invariant_scale(inv, q),
        )
        diff = max([diff] + [_rel(K, K2) for K2 in Ks])
    diff = max(diff, _rel(model.ntk(params), Ks[0]) if Ks else np.inf)
    ok = bool(fib.certified and Ks and diff <= tol and worst <= 1e-8)
    return {
        "certified": bool(fib.certified),
        "num_points": len(fib.points),
        "max_relative_difference": float(diff),
        "max_residual": float(worst),
        "verified": ok,
    }


def _check_hypotheses(claim: Claim, case: Case, params: Any, dep: Any) -> list:
    out = []
    for h in claim.hypotheses:
        holds, detail = h.check(case, params, dep)
        out.append([h.label, None if holds is None else bool(holds), str(detail)])
    return out


def _run_case(
    claim: Claim, case: Case, num_instances: int, rng: np.random.Generator, tol: float, bar: Any
) -> dict:

    instances, witness = [], None
    for _ in range(num_instances):
        params = case.make_params(rng)
        options = {
            k: (int(rng.integers(2**31)) if isinstance(v, str) and v == "instance" else v)
            for k, v in case.fiber_options.items()
        }
        dep = ntk_dependence(case.model, params, tol=tol, **options)
        hyps = _check_hypotheses(claim, case, params, dep)
        within = all(h[1] is True for h in hyps)
        check = None
        record = {
            "independent": bool(dep.independent),
            "max_relative_difference": float(dep.max_relative_difference),
            "num_points": int(dep.num_points),
            "certified": bool(dep.certified),
            "within": bool(within),
            "hypotheses": hyps,
            "witness_verified": False,
            "architecture": case.label,
        }
        if dep.witnesses is not None:
            check = verify_witness(case.model, dep.witnesses)
            record["witness_verified"] = bool(check["verified"])
            if check["verified"]:
                record["witness"] = {
                    "architecture": case.label,
                    "params": [to_jsonable(w) for w in dep.witnesses],
                    "within_hypotheses": bool(within),
                    "hypotheses": hyps,
                    **check,
                }
                if witness is None:
                    witness = record["witness"]
        elif claim.paper_claim == DEPENDENT and within and dep.independent and dep.certified:
            # a candidate counterexample to a dependence claim: re-verify from scratch
            record["independence"] = {
                "architecture": case.label,
                "params": to_jsonable(params),
                "hypotheses": hyps,
                **verify_independence(case.model, params, tol=tol),
            }
        instances.append(record)
        if bar is not None:
            bar.update(1)
    verdict = _case_verdict(instances)
    return {
        "architecture": case.label,
        "verdict": verdict,
        "instances": instances,
        "witness": witness,
        "model": case.model,
    }


def _case_verdict(instances: list[dict]) -> str:
    if any(i["witness_verified"] for i in instances):
        return DEPENDENT
    if instances and all(i["independent"] for i in instances):
        return INDEPENDENT
    return INCONCLUSIVE


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
    failed: dict[str, dict] = {}
    for i in inst:
        for label, holds, detail in i["hypotheses"]:
            if holds is not True:
                f = failed.setdefault(
                    label,
                    {"instances": 0, "undecided": 0, "example": f"{i['architecture']}: {detail}"},
                )
                f["instances"] += 1
                f["undecided"] += holds is None
    return {
        "max_relative_difference": max((i["max_relative_difference"] for i in inst), default=0.0),
        "fiber_sizes": [
            min((i["num_points"] for i in inst), default=0),
            max((i["num_points"] for i in inst), default=0),
        ],
        "certified": all(i["certified"] for i in inst),
        "num_architectures": len(results),
        "num_instances": len(inst),
        "num_within": sum(i["within"] for i in inst),
        "failed_hypotheses": failed,
        "per_architecture": [
            {
                "architecture": r["architecture"],
                "verdict": r["verdict"],
                "max_relative_difference": max(
                    i["max_relative_difference"] for i in r["instances"]
                ),
                "fiber_sizes": sorted({i["num_points"] for i in r["instances"]}),
                "certified": all(i["certified"] for i in r["instances"]),
                "num_within": sum(i["within"] for i in r["instances"]),
            }
            for r in results
        ],
        "witness": witness,
    }


def _failing(evidence: dict) -> str:
    parts = []
    for label, f in evidence["failed_hypotheses"].items():
        what = "undecided" if f["undecided"] == f["instances"] else "fails"
        parts.append(
            f"'{label}' {what} on {f['instances']} of {evidence['num_instances']} "
            f"instances (e.g. {f['example']})"
        )
    return "; ".join(parts)


def _outcome(
    paper_claim: str, computed: str, results: list[dict], evidence: dict
) -> tuple[str, str]:
    """The row's outcome and its reason (module docs)."""
    inst = [i for r in results for i in r["instances"]]
    if computed == paper_claim:
        note = _failing(evidence)
        return AGREES, (f"instances outside the hypotheses (not needed): {note}" if note else "")
    within = [i for i in inst if i["within"]]
    if paper_claim == INDEPENDENT:
        counter = [i for i in within if i["witness_verified"]]
        if counter:
            w = counter[0]["witness"]
            evidence["counterexample"] = {"kind": "re-verified witness pair", **w}
            return DISAGREES, (
                f"re-verified witness on {w['architecture']} meets every "
                f"hypothesis (dK/K {w['ntk_relative_difference']:.2g})"
            )
    else:
        # a dependence claim is refuted by an architecture, not by one instance: every
        # instance of it meeting the hypotheses has a certified fiber with a constant NTK
        archs: dict[str, list] = {}
        for i in within:
            archs.setdefault(i["architecture"], []).append(i)
        for name, items in archs.items():
            if all(i.get("independence", {}).get("verified") for i in items):
                c = items[0]["independence"]
                evidence["counterexample"] = {
                    "kind": "certified fibers with a constant NTK",
                    "num_instances": len(items),
                    **c,
                }
                return DISAGREES, (
                    f"{name}: on all {len(items)} instances meeting every "
                    f"hypothesis the fiber is certified complete and the NTK "
                    f"constant (recomputed from the stored parameters)"
                )
    if not within:
        return OUTSIDE, f"no instance meets every hypothesis: {_failing(evidence)}"
    by_case: dict[str, list] = {}
    for i in within:
        by_case.setdefault(i["architecture"], []).append(i)
    verdict_within = _aggregate([{"verdict": _case_verdict(v)} for v in by_case.values()])
    evidence["computed_within"] = verdict_within
    if verdict_within == paper_claim:
        return AGREES, (
            f"{verdict_within} on the {len(within)} instances meeting every "
            f"hypothesis; the others are outside: {_failing(evidence)}"
        )
    if paper_claim == DEPENDENT:
        why = (
            "independence found only on fibers that are not certified complete "
            "(sampled), which refutes no dependence claim"
        )
    else:
        why = "the contradicting evidence within the hypotheses is not verified"
    return INCONCLUSIVE, why


def _make_row(claim: Claim, condition: str, results: list[dict], refines: str | None = None) -> Row:
    computed = _aggregate(results)
    ev = _evidence(results)
    if refines is not None:
        ev["refines"] = refines
    outcome, reason = _outcome(claim.paper_claim, computed, results, ev)
    return Row(
        architecture=claim.architecture,
        condition=condition,
        paper_claim=claim.paper_claim,
        computed=computed,
        outcome=outcome,
        agrees=outcome == AGREES,
        hypotheses=tuple(h.label for h in claim.hypotheses),
        reason=reason,
        evidence=ev,
        _witness_model=next((r["model"] for r in results if r["witness"] is not None), None),
        _summarizer=_ntk_summary,
    )


def _rows_for(claim: Claim, results: list[dict]) -> list[Row]:
    rows = [_make_row(claim, claim.condition, results)]
    computed = rows[0].computed
    if (computed == claim.paper_claim and computed != MIXED) or not claim.refinements:
        return rows
    # group the cases by the first candidate condition they satisfy
    groups: dict[str, list[dict]] = {}
    for case, res in zip(claim.cases, results):
        label = next(
            (r.label for r in claim.refinements if r.predicate(case.structure)),
            claim.otherwise or "none of: " + "; ".join(r.label for r in claim.refinements),
        )
        groups.setdefault(label, []).append(res)
    if len(groups) < 2 and computed != MIXED:
        return rows
    explained = all(_aggregate(g) in (INDEPENDENT, DEPENDENT) for g in groups.values())
    rows[0].evidence["explained"] = bool(explained)
    for label, group in groups.items():
        rows.append(_make_row(claim, f"{claim.condition}; {label}", group, refines=claim.condition))
    return rows


def reproduce_linear(
    *,
    seed: int = 0,
    quick: bool = False,
    progress: bool = False,
    claims: Sequence[Claim] | None = None,
    num_instances: int | None = None,
    tol: float = 1e-8,
) -> list[Row]:
    """Compute the table of docs/concepts_linear.md §3 (and its refinements) row by row,
    each judged within its claim's hypotheses (docs/reproduction.md).

    Args:
        seed: seed of every random draw (parameters, fiber sampling).
        quick: fewer architectures and instances (a few seconds; for tests).
        progress: show a progress bar over all instances on stderr.
        claims: the rows to compute (default :func:`default_linear_claims`).
        num_instances: random instances per architecture (default 5, quick 1).
        tol: relative NTK difference below which a fiber counts as independent.

    Returns:
        The rows, each a :class:`Row` (refined rows follow their parent), with its computed
        verdict and its outcome (agrees, disagrees, outside the hypotheses, inconclusive).

    >>> rows = reproduce_linear(quick=True)
    >>> row = rows[0]
    >>> row.architecture, row.condition, row.paper_claim, row.computed, row.outcome
    ('fully connected linear', 'balanced (all Delta_l = 0)', 'independent', 'independent', 'agrees')
    >>> summarize(rows)["rows"]["disagrees"] == sum(r.outcome == "disagrees" for r in rows)
    True
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"seed must be an int; got {seed!r}")
    tol = check_positive_float(tol, "tol")
    quick = check_bool(quick, "quick")
    progress = check_bool(progress, "progress")
    if claims is not None and (
        isinstance(claims, (str, bytes))
        or not isinstance(claims, Sequence)
        or not all(isinstance(c, Claim) for c in claims)
    ):
        raise InputError(f"claims must be a list of Claim; got {short_repr(claims)}")
    claims = list(default_linear_claims(quick=quick) if claims is None else claims)
    n = num_instances if num_instances is not None else (1 if quick else 5)
    n = check_positive_int(n, "num_instances", maximum=MAX_NUM_INSTANCES)
    for claim in claims:
        if claim.paper_claim not in (INDEPENDENT, DEPENDENT):
            raise InputError(
                f"paper_claim must be {INDEPENDENT!r} or {DEPENDENT!r}; got {claim.paper_claim!r}"
            )
        for case in claim.cases:
            if not claim.condition_holds(case.structure):
                raise InputError(
                    f"{case.label} does not satisfy the condition {claim.condition!r} of its row"
                )
    rng = as_seed_rng(int(seed))
    bar = None
    if progress:
        bar = progress_bar(
            total=n * sum(len(c.cases) for c in claims), desc="reproduce linear", unit="instance"
        )
    rows: list[Row] = []
    try:
        for claim in claims:
            results = [_run_case(claim, case, n, rng, tol, bar) for case in claim.cases]
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


def _balanced(case: Case, params: Any, dep: Any) -> tuple[bool, str]:
    """Every Delta_l vanishes, relative to the parameters' size (1e-10)."""
    inv = invariant_vector(case.model, params)
    rel = float(np.abs(inv).max(initial=0.0)) / invariant_scale(np.zeros_like(inv), params)
    return rel <= 1e-10, f"max |Delta_l| / max ||W_l||^2 = {rel:.1e}"


def _all_strides_gt1(net: Any) -> bool:
    return net.ndim == 1 and all(s[0] > 1 for s in net.strides)


def _special_strided_params(net: Any) -> Callable[[np.random.Generator], Any]:
    """Adversarial instances for "1D, all strides > 1": layer 1's filter is a polynomial in
    ``t^{S_1}`` (its roots are closed under the S_1-th roots of unity, like layer 2's), with
    a full-rank Jacobian (exact rank = dim M). Such v are non-generic; when factors can
    trade layers, v is a crossing of two branches with different tangent spaces, hence not
    in the smooth locus (:func:`neuromanifold.linear.is_regular_point`), which the row's
    hypotheses detect instance by instance."""
    S1 = net.cumulative_strides[1][0]

    def make(rng: np.random.Generator) -> Any:
        for _ in range(100):
            params = net.random_params(rng)
            params[0][np.arange(params[0].size) % S1 != 0] = 0.0
            if net.is_smooth(params, exact=True):
                return params
        raise InputError(f"no smooth special point found for {net!r}")  # pragma: no cover

    return make


def _claim_cases(quick: bool) -> dict[str, list]:
    """The architectures tested for each row of :func:`default_linear_claims`, by row:
    ``fc_b``, ``fc_g``, ``c1_strided``, ``c1_special``, ``c1_stride1``, ``c2``, ``r_cnn``,
    ``r_mlp`` (fewer with ``quick``)."""
    # Whole: a table of architectures per row; splitting it would only cut the table

    def conv(shapes, strides=None):
        net = LinearConvNet(shapes, strides)
        return Case(net, net, net.random_params)

    def conv_special(shapes, strides):
        net = LinearConvNet(shapes, strides)
        return Case(net, net, _special_strided_params(net), generic=False)

    def fc_balanced(widths):
        net = LinearFCNet(widths)
        return Case(
            net,
            net,
            lambda rng: net.balanced_params(rng),
            {"num_starts": 4 if quick else 6, "seed": "instance"},
        )

    def fc_generic(widths):
        net = LinearFCNet(widths)
        return Case(
            net, net, net.random_params, {"num_starts": 4 if quick else 6, "seed": "instance"}
        )

    def relu_cnn(shapes, strides=None):
        model = ShallowReLUCNN.with_random_inputs(shapes, strides, seed=7)
        return Case(model, model.linear, model.random_params)

    def relu_mlp(widths):
        model = ShallowReLUMLP.with_random_inputs(widths, seed=7)
        opts = {} if len(widths) == 2 else {"num_starts": 4 if quick else 6, "seed": "instance"}
        return Case(model, model.linear, model.random_params, opts)

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
        fc_b = [
            fc_balanced([2, 2, 2]),
            fc_balanced([2, 3, 2]),
            fc_balanced([2, 2, 2, 2]),
            fc_balanced([3, 2, 3]),
        ]
        fc_g = [
            fc_generic([2, 2, 2]),
            fc_generic([2, 3, 2]),
            fc_generic([2, 2, 2, 2]),
            fc_generic([3, 2, 3]),
            fc_generic([1, 2, 1]),
            fc_generic([2, 1, 2]),
        ]
        c1_strided = [
            conv([2, 2], [2]),
            conv([3, 2], [2]),
            conv([2, 3], [3]),
            conv([4, 2], [2]),
            conv([2, 2, 2], [2, 2]),
            conv([3, 2, 2], [2, 3]),
            conv([5, 3], [2]),
            conv([3, 3, 3], [2, 2]),
        ]
        c1_special = [
            conv_special([3, 2], [2]),
            conv_special([5, 3], [2]),
            conv_special([4, 2], [3]),
            conv_special([5, 2, 2], [2, 2]),
            conv_special([3, 3], [2]),
        ]
        c1_stride1 = [
            conv([2, 2], [1]),
            conv([3, 3], [1]),
            conv([2, 3], [1]),
            conv([2, 4], [1]),
            conv([2, 2, 2], [1, 2]),
            conv([2, 2, 2], [2, 1]),
            conv([2, 1, 2], [1, 2]),
            conv([3, 1, 2], [1, 3]),
            conv([3, 3, 3], [1, 1]),
        ]
        c2 = [
            conv([(2, 2), (3, 2)]),
            conv([(2, 2), (2, 3)], [(2, 1)]),
            conv([(2, 2), (2, 2)], [(2, 2)]),
            conv([(3, 2), (2, 2), (2, 2)], [(2, 2), (1, 1)]),
            conv([(2, 2), (2, 2)]),
            conv([(2, 3), (2, 3)], [(1, 1)]),
            conv([(2, 1), (3, 1)]),
            conv([(2, 1), (4, 1)]),
            conv([(2, 1), (1, 2)]),
            conv([(2, 1), (2, 2)]),
            conv([(2, 2, 2), (2, 2, 2)]),
            conv([(2, 2), (2, 2), (2, 2)]),
        ]
        r_cnn = [
            relu_cnn([2, 2], [2]),
            relu_cnn([3, 2], [2]),
            relu_cnn([(2, 2), (2, 3)]),
            relu_cnn([2, 2], [1]),
            relu_cnn([(2, 2), (2, 2)]),
            relu_cnn([2, 3], [1]),
        ]
        r_mlp = [relu_mlp([2, 2, 2]), relu_mlp([2, 3, 2]), relu_mlp([2, 2]), relu_mlp([3, 2])]

    return dict(
        fc_b=fc_b,
        fc_g=fc_g,
        c1_strided=c1_strided,
        c1_special=c1_special,
        c1_stride1=c1_stride1,
        c2=c2,
        r_cnn=r_cnn,
        r_mlp=r_mlp,
    )


def default_linear_claims(*, quick: bool = False) -> list[Claim]:
    """The rows of docs/concepts_linear.md §3 with the architectures tested for each (inputs, not
    verdicts).

    Each row lists architectures satisfying its condition, chosen to cover the condition
    (several filter sizes, strides, depths) including structurally special ones (layers
    of filter size 1, same filter shapes, filters degenerate along an axis, one linear
    layer), candidate refinements to explain differing verdicts, and the hypotheses each
    claim is made under (paper A's standing assumptions, the row's condition, the smooth
    locus for the independence theorems, genericity; docs/reproduction.md).

    Args:
        quick: fewer architectures per row (for tests).

    Returns:
        A list of :class:`Claim`, one per row of docs/concepts_linear.md §3.
    """
    # Whole: the table of claims, one row each with its hypotheses; only the table is here
    quick = check_bool(quick, "quick")
    cases = _claim_cases(quick)
    fc_b, fc_g, c1_strided = cases["fc_b"], cases["fc_g"], cases["c1_strided"]
    c1_special, c1_stride1, c2 = cases["c1_special"], cases["c1_stride1"], cases["c2"]
    r_cnn, r_mlp = cases["r_cnn"], cases["r_mlp"]

    is_conv_1d = lambda net: isinstance(net, LinearConvNet) and net.ndim == 1  # noqa: E731
    exchange = [
        Refinement("interchangeable layers (same shape, same S_{l-1})", _interchangeable),
        Refinement("two filters on one common axis (1D or like (k,1)), same S_{l-1}", _common_axis),
    ]
    one_layer = Refinement("one linear layer (V = W_1)", lambda net: net.num_layers == 1)

    fc_net = architecture_hypothesis(
        "fully connected linear network", lambda net: isinstance(net, LinearFCNet)
    )
    balanced = Hypothesis("balanced: every Delta_l = 0", _balanced)
    d1 = architecture_hypothesis("1D convolution", is_conv_1d)
    strided = architecture_hypothesis(
        "all strides s_1..s_{L-1} > 1 (the last stride is ignored)", _all_strides_gt1
    )
    some1 = architecture_hypothesis(
        "some stride s_1..s_{L-1} = 1", lambda net: any(s[0] == 1 for s in net.strides)
    )
    d2 = architecture_hypothesis(
        "D >= 2", lambda net: isinstance(net, LinearConvNet) and net.ndim >= 2
    )
    relu_lin = architecture_hypothesis(
        "the linear part meets paper A's theorem: D >= 2, or 1D with all strides > 1",
        lambda net: isinstance(net, LinearConvNet) and (net.ndim >= 2 or _all_strides_gt1(net)),
    )
    sizes, regular = standing_hypothesis(SIZES), standing_hypothesis(REGULAR)

    return [
        Claim(
            "fully connected linear",
            "balanced (all Delta_l = 0)",
            INDEPENDENT,
            fc_b,
            lambda net: isinstance(net, LinearFCNet),
            hypotheses=[fc_net, balanced],
        ),
        Claim(
            "fully connected linear",
            "generic Delta",
            DEPENDENT,
            fc_g,
            lambda net: isinstance(net, LinearFCNet),
            [
                Refinement(
                    "expected fiber dim <= 0 (#params <= dim M + sum d_l(d_l+1)/2)", _fc_finite
                )
            ],
            "expected fiber dim > 0",
            hypotheses=[fc_net, GENERIC],
        ),
        Claim(
            "1D convolution",
            "all strides s_1..s_{L-1} > 1",
            INDEPENDENT,
            c1_strided,
            _all_strides_gt1,
            [Refinement("two layers of size > 1 share S_{l-1}", _share_S)],
            "no two layers of size > 1 share S_{l-1}",
            hypotheses=[d1, sizes, strided, regular],
        ),
        Claim(
            "1D convolution",
            "all strides > 1; full-rank Jacobian but non-generic v (filter 1 a polynomial in "
            "t^{S_1})",
            INDEPENDENT,
            c1_special,
            _all_strides_gt1,
            hypotheses=[d1, sizes, strided, regular],
        ),
        Claim(
            "1D convolution",
            "some stride = 1",
            DEPENDENT,
            c1_stride1,
            lambda net: is_conv_1d(net) and any(s[0] == 1 for s in net.strides),
            [Refinement("two layers of size > 1 share S_{l-1}", _share_S)],
            "no two layers of size > 1 share S_{l-1}",
            hypotheses=[d1, sizes, some1, GENERIC],
        ),
        Claim(
            "D >= 2 convolution",
            "any strides",
            INDEPENDENT,
            c2,
            lambda net: isinstance(net, LinearConvNet) and net.ndim >= 2,
            exchange,
            "no interchangeable layers, no two filters on a common axis",
            hypotheses=[d2, sizes, regular],
        ),
        Claim(
            "shallow ReLU CNN",
            "generic",
            INDEPENDENT,
            r_cnn,
            lambda net: isinstance(net, LinearConvNet),
            exchange,
            "no interchangeable layers, no two filters on a common axis",
            hypotheses=[relu_lin, sizes, regular, GENERIC],
        ),
        Claim(
            "shallow ReLU MLP",
            "generic",
            DEPENDENT,
            r_mlp,
            lambda net: isinstance(net, LinearFCNet),
            [one_layer],
            "L >= 2 linear layers (V = W_L ... W_1)",
            hypotheses=[
                architecture_hypothesis(
                    "fully connected linear part", lambda net: isinstance(net, LinearFCNet)
                ),
                GENERIC,
            ],
        ),
    ]
