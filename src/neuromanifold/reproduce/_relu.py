"""Paper B's claims on three-layer ReLU networks, computed row by row
(docs/reproduction.md, "The ReLU reproduction").

Gegenfurtner, Grillo, Montufar, "The Symmetries of Three-Layer ReLU Networks"
(arXiv 2605.18319), read as in docs/concepts_relu.md. Every row is produced by a
:class:`ReLUClaim` (a claim and the function computing its rows), so that a new claim is
one more entry of :func:`default_relu_claims`. Nothing in the verdicts is stored: the
instances are random parameters (Gaussian, and drawn to hit each sign pattern of the rows
of ``[W2 | b2]`` on purpose: dead, always active, hiding, ramp, mixed), and for each one the
claim's prediction is compared with a ground truth:

* **identifiability**: the exact functional dimension (``rank == P - #hidden`` means no
  continuous symmetry beyond scalings) and, for a "not identifiable" verdict, a fiber point
  off the permutation-scaling orbit verified by the exact region engine;
* **symmetries**: every move applied and checked by the exact region engine
  (``relu.equivalent(method="regions")``);
* **fiber dimension**: the symmetry-generated fiber (``relu.fiber``) against
  ``P - functional dimension``;
* **flips**: every subset of flips applied and checked, distinct points counted;
* **non-localizability**: :func:`neuromanifold.relu.nonlocalizable_example` and the rate
  of :func:`neuromanifold.relu.search_nonlocalizable`;
* **polynomial-time equivalence**: ``relu.equivalent_bottleneck`` against the exact
  engine on equivalent and non-equivalent pairs.

Hypotheses (checked on every instance; docs/reproduction.md): the architecture is a
bottleneck (``n1 <= d``), ``W1`` has full row rank (exactly), the parameter passes the
genericity conditions of ``relu.identifiability``, and a contradicting instance must also
pass the exact genericity test ``relu.genericity`` before it counts as a disagreement.
Outcomes are those of :mod:`neuromanifold.reproduce._common`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import relu
from .._errors import ComputationLimitError, InputError, NeuromanifoldError, short_repr
from .._progress import progress_bar
from .._results import to_jsonable
from .._tolerance import DEFAULT_TOL, check_tol
from .._validation import as_seed_rng, check_bool
from ..conservation import conservation_laws
from ..relu import genericity, identifiability
from ..relu._library import (
    OFF_ORBIT,
    fast_genericity,
    is_bottleneck,
    path_norm_scale,
    three_layer,
    verify_point,
)
from ..relu.symmetries import (
    DeadNeuronMove,
    Flip,
    HidingTranslation,
    LinearBlockMixing,
    Permutation,
    RampFlip,
    Scaling,
    SecondLayerFlip,
)
from ._common import AGREES, DISAGREES, INCONCLUSIVE, OUTSIDE, Row

__all__ = [
    "reproduce_relu",
    "ReLUClaim",
    "ReLUContext",
    "default_relu_claims",
    "relu_hypotheses",
    "verdict_row",
]

H_BOTTLENECK = "bottleneck: n1 <= d"
H_RANK = "W1 has full row rank (exact)"
H_GENERIC = (
    "generic: the conditions of relu.identifiability (nonzero signs, live outputs, "
    "distinct hyperplanes, visible kinks)"
)
H_EXACT = (
    "a contradicting instance is also exactly generic (relu.genericity: "
    "supertransversality, maximal rank of masked products)"
)
#: the hypotheses of the claims on generic bottleneck parameters
STANDARD = (H_BOTTLENECK, H_RANK, H_GENERIC, H_EXACT)


# --------------------------------------------------------------------------- claims
@dataclasses.dataclass(frozen=True)
class ReLUClaim:
    """One claim of paper B and how to compute its rows.

    Attributes:
        name: a short identifier (``"identifiability"``, ...).
        paper_claim: the claim in words (shown in every row it produces).
        hypotheses: the labels of the hypotheses the claim is made under
            (docs/reproduction.md).
        compute: ``compute(context, claim) -> list[Row]``; :func:`verdict_row` judges a
            list of instance records into a row. Progress: call ``context.tick()``.
        units: progress units this claim reports (for the progress bar's total).
    """

    name: str
    paper_claim: str
    hypotheses: Sequence[str]
    compute: Callable[["ReLUContext"], list]
    units: int = 1


class ReLUContext:
    """What the claims of one run share: the random generator, the run's size, the
    tolerance, the progress bar and a cache (e.g. the identifiability instances, computed
    once and used by several claims).

    Args:
        seed: the seed of every draw.
        quick: a smaller run (for tests).
        tol: the relative tolerance of the sign decisions and equivalence checks.
        bar: a tqdm bar or ``None``.
    """

    def __init__(self, seed: int, quick: bool, tol: float, bar: Any = None):
        self.seed, self.quick, self.tol, self.bar = (
            seed,
            check_bool(quick, "quick"),
            check_tol(tol),
            bar,
        )
        self.rng = as_seed_rng(seed)
        self.cache: dict = {}

    def tick(self, n: int = 1) -> None:
        """Advance the progress bar by ``n`` units."""
        if self.bar is not None:
            self.bar.update(n)

    def draw(self, widths: Sequence[int], kinds: Sequence | None = None) -> list:
        """Random bottleneck parameters ``d -> n1 -> n2 -> n3`` (``W1`` of full row rank):
        Gaussian entries, or with row ``j`` of ``[W2 | b2]`` of the sign kind ``kinds[j]``:
        ``"dead"``, ``"linear"``, ``("hiding", i)``, ``"ramp"`` (n1 = 1) or ``"mixed"``
        (magnitudes uniform in [0.3, 2])."""
        try:
            ws = None if isinstance(widths, (str, bytes)) else list(widths)
        except TypeError:
            ws = None
        if (
            ws is None
            or len(ws) != 4
            or any(
                isinstance(w, (bool, np.bool_))
                or not isinstance(w, (int, np.integer))
                or not 1 <= w <= 10_000
                for w in ws
            )
        ):
            raise InputError(
                f"widths must be four positive ints d, n1, n2, n3 (bottleneck "
                f"n1 <= d); got {short_repr(widths)}"
            )
        if widths[1] > widths[0]:
            raise InputError(f"widths must be a bottleneck (n1 <= d); got {short_repr(widths)}")
        return _draw(self.rng, widths, kinds)

    def instances(self) -> list[dict]:
        """The identifiability instances (cached): module docs."""
        if "instances" not in self.cache:
            self.cache["instances"] = _identifiability_instances(self)
        return self.cache["instances"]


def _draw(rng: np.random.Generator, widths: Sequence[int], kinds: Sequence | None) -> list:
    d, n1, n2, n3 = widths
    while True:
        W1 = rng.standard_normal((n1, d))
        if np.linalg.matrix_rank(W1) == n1:
            break
    b1 = rng.standard_normal(n1)
    if kinds is None:
        R = rng.standard_normal((n2, n1 + 1))
    else:
        R = np.array([_row(rng, n1, k) for k in kinds])
    return [
        (W1, b1),
        (R[:, :-1].copy(), R[:, -1].copy()),
        (rng.standard_normal((n3, n2)), rng.standard_normal(n3)),
    ]


def _row(rng: np.random.Generator, n1: int, kind: Any) -> np.ndarray:
    mag = rng.uniform(0.3, 2.0, n1 + 1)
    if isinstance(kind, tuple):  # ("hiding", i)
        r = -mag
        r[kind[1]] = mag[kind[1]]
        return r
    if kind == "dead":
        return -mag
    if kind == "linear":
        return mag
    if kind == "ramp":
        return np.array([-mag[0], mag[1]])
    while True:  # mixed: none of the above patterns
        s = rng.choice([-1.0, 1.0], n1 + 1)
        if (
            np.all(s > 0)
            or np.all(s < 0)
            or (s[-1] < 0 and np.sum(s[:-1] > 0) == 1)
            or (n1 == 1 and s[0] < 0 < s[1])
        ):
            continue
        return s * mag


def _arch(widths: Sequence[int]) -> str:
    return "-".join(str(int(w)) for w in widths)


def relu_hypotheses(params: Any, *, tol: float = DEFAULT_TOL) -> list:
    """The standing hypotheses of the ReLU claims checked on one parameter:
    ``[[label, holds, detail], ...]`` for ``n1 <= d``, exact full row rank of ``W1`` and
    the genericity conditions of ``relu.identifiability``.

    Args:
        params: three-layer parameters.
        tol: tolerance of the genericity conditions.

    Returns:
        A list of ``[label, holds, detail]``.

    >>> P = [(np.eye(2), np.zeros(2)), (np.array([[1.0, -1.0]]), np.array([0.5])),
    ...      (np.ones((1, 1)), np.zeros(1))]
    >>> [h[1] for h in relu_hypotheses(P)]
    [True, True, True]
    """
    params = three_layer(params, "relu_hypotheses")
    n1, d = params[0][0].shape
    fails = list(fast_genericity(params, tol=tol))
    return [
        [H_BOTTLENECK, bool(n1 <= d), f"n1 = {n1}, d = {d}"],
        [H_RANK, bool(n1 <= d and is_bottleneck(params, tol=0)), f"W1 of shape {(n1, d)}"],
        [H_GENERIC, not fails, "; ".join(fails) or "all hold"],
    ]


def _exactly_generic(params: list) -> tuple[bool, str]:
    g = genericity(params, tol=0)
    return bool(g.generic), (
        "generic (exact)" if g.generic else "; ".join(f.kind for f in g.failures[:3])
    )


# --------------------------------------------------------------------------- judging
def verdict_row(
    claim: ReLUClaim,
    architecture: str,
    condition: str,
    records: list[dict],
    *,
    computed: str,
    summary: str,
    extra: dict | None = None,
    refines: str | None = None,
) -> Row:
    """Judge instance records into a :class:`Row`.

    Every record has ``within`` (meets the claim's hypotheses), ``agree`` (the claim holds
    on it), ``proof`` (a contradiction with verified evidence), ``hypotheses`` (``[label,
    holds, detail]``), ``params`` and ``architecture``. A proved contradiction within the
    hypotheses is re-verified against exact genericity (``relu.genericity``) before it
    counts (when the claim lists that hypothesis).

    Args:
        claim: the claim.
        architecture, condition: the row's first columns.
        records: the instance records.
        computed: the computed verdict in words.
        summary: the evidence in one line.
        extra: more evidence.
        refines: the parent condition for a refined row.

    Returns:
        The :class:`Row`.
    """
    # Whole: tally the records, re-check proved contradictions, then the one ladder of verdicts
    keys = ("within", "agree", "proof", "hypotheses", "params", "architecture")
    if (
        isinstance(records, (str, bytes))
        or not isinstance(records, Sequence)
        or not all(isinstance(r, dict) and all(k in r for k in keys) for r in records)
    ):
        raise InputError(
            f"records must be a list of dicts with keys {list(keys)}; got {short_repr(records)}"
        )
    ev: dict = {
        "summary": summary,
        "num_instances": len(records),
        "num_within": sum(bool(r["within"]) for r in records),
        "num_agree": sum(bool(r["agree"]) for r in records),
        **(extra or {}),
    }
    failed: dict = {}
    for r in records:
        for label, holds, detail in r["hypotheses"]:
            if holds is not True:
                f = failed.setdefault(
                    label, {"instances": 0, "example": f"{r['architecture']}: {detail}"}
                )
                f["instances"] += 1
    ev["failed_hypotheses"] = failed
    within = [r for r in records if r["within"]]
    contra = [r for r in within if not r["agree"]]
    proved = [r for r in contra if r["proof"]]
    outcome, reason = None, ""
    for r in proved:
        if H_EXACT in claim.hypotheses:
            ok, detail = _exactly_generic([(np.asarray(W), np.asarray(b)) for W, b in r["params"]])
            r["hypotheses"].append([H_EXACT, ok, detail])
            if not ok:
                r["within"] = False
                continue
        ev["counterexample"] = r
        outcome = DISAGREES
        reason = f"verified counterexample on {r['architecture']} meeting every hypothesis" + (
            f": {r['why']}" if r.get("why") else ""
        )
        break
    within = [r for r in records if r["within"]]
    contra = [r for r in within if not r["agree"]]
    outside = [r for r in records if not r["within"] and not r["agree"]]
    note = "; ".join(
        f"'{k}' fails on {v['instances']} (e.g. {v['example']})" for k, v in failed.items()
    )
    if outcome is None:
        if not records:
            outcome, reason = INCONCLUSIVE, "no instance"
        elif not within:
            outcome, reason = OUTSIDE, f"no instance meets every hypothesis: {note}"
        elif not contra:
            outcome = AGREES
            reason = (
                f"{len(outside)} contradicting instance(s) outside the hypotheses: {note}"
                if outside
                else ""
            )
        else:
            outcome = INCONCLUSIVE
            reason = (
                f"{len(contra)} instance(s) within the hypotheses contradict the claim "
                f"without verified evidence"
            )
    ev["num_within"] = len(within)
    if refines is not None:
        ev["refines"] = refines
    return Row(
        architecture=architecture,
        condition=condition,
        paper_claim=claim.paper_claim,
        computed=computed,
        outcome=outcome,
        agrees=outcome == AGREES,
        hypotheses=tuple(claim.hypotheses),
        reason=reason,
        evidence=to_jsonable(ev),
    )


# --------------------------------------------------------------------------- instances
def _archs(quick: bool) -> list[tuple]:
    if quick:
        return [(2, 1, 2, 1), (2, 2, 2, 1)]
    return [(2, 1, 2, 1), (3, 1, 2, 1), (2, 2, 2, 1), (3, 2, 3, 1), (3, 2, 2, 2), (3, 3, 2, 1)]


def _pattern_draws(widths: tuple, quick: bool, rng: np.random.Generator) -> list:
    """The kinds of the rows of [W2 | b2] to draw, one list per instance: Gaussian (None)
    and every sign pattern on purpose."""
    d, n1, n2, n3 = widths
    base = "ramp" if n1 == 1 else "mixed"
    plans = [
        ("gaussian", None),
        ("gaussian", None),
        ("all " + base, [base] * n2),
        ("one dead", ["dead"] + [base] * (n2 - 1)),
        ("one always active", ["linear"] + [base] * (n2 - 1)),
        ("hidden hyperplane", [("hiding", 0)] * n2),
    ]
    if not quick:
        plans += [("gaussian", None)] * 3 + [("all " + base, [base] * n2)]
        opts = [base] * 3 + ["dead", "linear"] + [("hiding", i) for i in range(n1)]
        for _ in range(3):
            plans.append(("random kinds", [opts[k] for k in rng.integers(0, len(opts), n2)]))
    else:
        plans = plans[1:]
    return plans


def _witness_check(params: list, syms: Sequence, tol: float) -> dict | None:
    for sym in syms:
        try:
            q = sym.apply(params, tol=tol)
        except NeuromanifoldError:
            continue
        res = verify_point(params, q, tol, exact=False)
        if res["verified"]:
            return {"symmetry": sym.name, "point": to_jsonable(q), **res}
    return None


def _identifiability_instances(ctx: ReLUContext) -> list[dict]:
    out = []
    for widths in _archs(ctx.quick):
        for label, kinds in _pattern_draws(widths, ctx.quick, ctx.rng):
            P = ctx.draw(widths, kinds)
            ident = relu.identifiability(P, tol=ctx.tol)
            fd = relu.functional_dimension(P, tol=0)
            hyps = relu_hypotheses(P, tol=ctx.tol)
            hidden = bool(ident.hidden_hyperplanes)
            wit = None
            if not ident.identifiable or fd.rank < fd.bound:
                wit = _witness_check(P, tuple(ident.witnesses) + tuple(ident.flips), ctx.tol)
            gt_ident = fd.rank == fd.bound and wit is None
            try:
                fib = relu.fiber(P, tol=ctx.tol).dimension
            except NeuromanifoldError:  # pragma: no cover - the draws are bottlenecks
                fib = None
            out.append(
                {
                    "architecture": _arch(widths),
                    "widths": list(widths),
                    "draw": label,
                    "params": to_jsonable(P),
                    "hypotheses": hyps,
                    "within": all(h[1] is True for h in hyps),
                    "row_kinds": list(ident.row_kinds),
                    "dead": bool(ident.dead_neurons),
                    "linear": bool(ident.linear_neurons),
                    "hidden": hidden,
                    "fast_path": ident.identifiable,
                    "rank": int(fd.rank),
                    "bound": int(fd.bound),
                    "num_params": int(fd.num_params),
                    "num_hidden": int(fd.num_hidden),
                    "witness": wit,
                    "ground_truth": "identifiable" if gt_ident else "not identifiable",
                    "fiber_dimension": fib,
                }
            )
            ctx.tick()
    return out


# --------------------------------------------------------------------------- claim rows
def _groups(instances: list[dict]) -> list[tuple[str, list]]:
    g2 = [i for i in instances if i["widths"][1] >= 2]
    g1 = [i for i in instances if i["widths"][1] == 1]
    return [(name, g) for name, g in (("n1 >= 2", g2), ("n1 = 1", g1)) if g]


def _identifiability_rows(
    ctx: ReLUContext,
    claim: ReLUClaim,
    predicate: Callable,
    predicate_words: str,
    refines: str | None = None,
) -> list[Row]:
    rows = []
    for group, inst in _groups(ctx.instances()):
        records = []
        for i in inst:
            pred = bool(predicate(i))
            gt = i["ground_truth"] == "identifiable"
            rec = {
                "architecture": i["architecture"],
                "params": i["params"],
                "hypotheses": [list(h) for h in i["hypotheses"]],
                "within": i["within"],
                "predicted_identifiable": pred,
                "ground_truth": i["ground_truth"],
                "rank": i["rank"],
                "bound": i["bound"],
                "agree": pred == gt,
                # predicted identifiable, but a verified fiber point off the orbit exists
                "proof": bool(pred and not gt and i["witness"] is not None),
                "witness": i["witness"],
                "draw": i["draw"],
                "row_kinds": i["row_kinds"],
            }
            if rec["proof"]:
                rec["why"] = (
                    f"{predicate_words} holds, yet the {i['witness']['symmetry']} gives "
                    f"an equivalent parameter off the orbit (orbit distance "
                    f"{i['witness']['orbit_distance']:.3g}; exact region engine)"
                )
            records.append(rec)
        within = [r for r in records if r["within"]]
        agree = sum(r["agree"] for r in within)
        decided = [i for i in inst if i["fast_path"] is not None]
        fast = sum(i["fast_path"] == (i["ground_truth"] == "identifiable") for i in decided)
        gt_ident = sum(i["ground_truth"] == "identifiable" for i in inst)
        computed = f"holds on {agree} of {len(within)} within the hypotheses"
        summary = (
            f"{len(inst)} inst ({len(within)} within); ground truth: {gt_ident} "
            f"identifiable (exact rank at the bound, no witness), "
            f"{len(inst) - gt_ident} not; library fast path agrees on {fast}/{len(decided)} "
            f"it decides ({len(inst) - len(decided)} undecided)"
        )
        rows.append(
            verdict_row(
                claim,
                f"three-layer bottleneck, {group}",
                claim.name.split(": ", 1)[-1],
                records,
                computed=computed,
                summary=summary,
                extra={
                    "fast_path_agreement": [fast, len(decided)],
                    "fast_path_undecided": len(inst) - len(decided),
                    "architectures": sorted({i["architecture"] for i in inst}),
                    "instances": records,
                },
                refines=refines,
            )
        )
    return rows


def _literal_rows(ctx: ReLUContext, claim: ReLUClaim) -> list[Row]:
    # A refinement of the sign-pattern claim: the paper decides identifiability by the sign
    # patterns of [W2 | b2] (dead, always-active and hiding rows); this row reads the short
    # statement literally, ignoring the dead and always-active rows.
    return _identifiability_rows(
        ctx,
        claim,
        lambda i: not i["hidden"],
        "no first-layer hyperplane is hidden",
        refines="sign patterns (no dead, always-active or hiding rows)",
    )


def _sign_rows(ctx: ReLUContext, claim: ReLUClaim) -> list[Row]:
    return _identifiability_rows(
        ctx,
        claim,
        lambda i: not (i["hidden"] or i["dead"] or i["linear"]),
        "no dead or always-active row and no hidden hyperplane",
    )


def _fiber_rows(ctx: ReLUContext, claim: ReLUClaim) -> list[Row]:
    rows = []
    for group, inst in _groups(ctx.instances()):
        records = []
        for i in inst:
            fdim = i["num_params"] - i["rank"]
            records.append(
                {
                    "architecture": i["architecture"],
                    "params": i["params"],
                    "hypotheses": [list(h) for h in i["hypotheses"]],
                    "within": i["within"],
                    "fiber_dimension": i["fiber_dimension"],
                    "num_params": i["num_params"],
                    "rank": i["rank"],
                    "agree": i["fiber_dimension"] == fdim,
                    "proof": False,
                    "draw": i["draw"],
                }
            )
        within = [r for r in records if r["within"]]
        agree = sum(r["agree"] for r in within)
        dims = sorted({r["fiber_dimension"] for r in records if r["fiber_dimension"] is not None})
        rows.append(
            verdict_row(
                claim,
                f"three-layer bottleneck, {group}",
                "generic",
                records,
                computed=f"equal on {agree} of {len(within)} within the hypotheses",
                summary=f"{len(records)} inst; fiber dimensions {dims}",
                extra={"instances": records},
            )
        )
    return rows


# --------------------------------------------------------------------------- symmetries
_SYMMETRY_CLAIMS = {
    "permutation": "permuting the neurons of a hidden layer keeps the function",
    "scaling": "rescaling a hidden neuron by c > 0 (outgoing weights by 1/c) keeps the function",
    "dead_neuron_move": "a dead second-layer neuron's row (among dead rows) and outgoing "
    "weights are free",
    "linear_block_mixing": "always-active second-layer neurons mix by an invertible matrix "
    "(rows kept nonnegative), the constant moving into b3",
    "hiding_translation": "a hidden first-layer hyperplane translates: b1_i + t, b2 - t W2[:, i]",
    "flip": "one live second-layer neuron hiding i: another first-layer neuron flips, "
    "neuron i absorbing its linear term",
    "ramp_flip": "(derived here, docs/concepts_relu.md §4) n1 = 1, every live row a ramp: the "
    "first-layer neuron turns around",
    "second_layer_flip": "(found here, docs/relu_equivalence.md) crossing second-layer neurons "
    "turn around through the always-active block",
}


def _symmetry_cases(ctx: ReLUContext, name: str, n: int) -> list[tuple[list, Any]]:
    """``n`` (parameter, symmetry) pairs for the symmetry ``name``, drawn on purpose."""
    rng = ctx.rng
    out: list = []
    archs2 = [(2, 2, 2, 1), (3, 2, 3, 1), (3, 3, 2, 2)]
    tries = 0
    while len(out) < n and tries < 20 * n:
        tries += 1
        w = archs2[len(out) % len(archs2)]
        d, n1, n2, n3 = w
        if name == "permutation":
            P = ctx.draw(w)
            layer = 1 + len(out) % 2
            size = n1 if layer == 1 else n2
            out.append((P, Permutation(layer, tuple(int(v) for v in rng.permutation(size)))))
        elif name == "scaling":
            P = ctx.draw(w)
            layer = 1 + len(out) % 2
            size = n1 if layer == 1 else n2
            out.append((P, Scaling(layer, tuple(float(v) for v in rng.uniform(0.2, 5.0, size)))))
        elif name == "dead_neuron_move":
            P = ctx.draw(w, ["dead"] + ["mixed"] * (n2 - 1))
            out.append(
                (P, DeadNeuronMove(0, tuple(_row(rng, n1, "dead")), tuple(rng.standard_normal(n3))))
            )
        elif name == "linear_block_mixing":
            k = min(2, n2)
            P = ctx.draw(w, ["linear"] * k + ["mixed"] * (n2 - k))
            M = np.eye(k) + 0.2 * rng.standard_normal((k, k))
            sym = LinearBlockMixing(tuple(range(k)), M, tuple(rng.uniform(0.0, 1.0, k)))
            if sym.applies(P, tol=ctx.tol).applies:
                out.append((P, sym))
        elif name == "hiding_translation":
            i = int(rng.integers(n1))
            P = ctx.draw(w, [("hiding", i)] * (n2 - 1) + ["dead"])
            r = identifiability(P, tol=ctx.tol)
            h = next(h for h in r.hidden_hyperplanes if h.neuron == i)
            lo, hi = h.interval
            t = (
                float(lo + rng.uniform(0.1, 2.0))
                if not np.isfinite(hi)
                else float(lo + rng.uniform(0.1, 0.9) * (hi - lo))
            )
            out.append((P, HidingTranslation(i, t)))
        elif name == "flip":
            wf = (n1 + 1, n1, 1 + len(out) % 2, n3)  # one live hiding row (+ a dead one)
            kinds = [("hiding", 0)] + ["dead"] * (wf[2] - 1)
            P = ctx.draw(wf, kinds)
            k = tuple(int(v) for v in range(1, n1) if rng.random() < 0.7) or (1,)
            out.append((P, Flip(0, k)))
        elif name == "ramp_flip":
            wr = ((2, 1, 2, 1), (3, 1, 3, 2), (1, 1, 1, 1))[len(out) % 3]
            P = ctx.draw(wr, ["ramp"] * wr[2])
            R = P[1]
            top = int(np.argmax(R[1] / -R[0][:, 0]))
            out.append((P, RampFlip(top)))
        elif name == "second_layer_flip":
            wl = (3, 2, 4, 2)
            P = ctx.draw(wl, ["linear", "linear", "mixed", "mixed"])
            sym = SecondLayerFlip.construct(P, (2,), (0, 1), tol=ctx.tol)
            if sym is not None:
                out.append((P, sym))
    return out


def _symmetry_rows(ctx: ReLUContext, claim: ReLUClaim) -> list[Row]:
    n = 2 if ctx.quick else 5
    rows = []
    for name, words in _SYMMETRY_CLAIMS.items():
        records = []
        for P, sym in _symmetry_cases(ctx, name, n):
            app = sym.applies(P, tol=ctx.tol)
            hyps = [
                [H_BOTTLENECK, True, "drawn as a bottleneck"],
                [f"the move applies ({name})", bool(app.applies), str(app.reason)],
            ]
            rec = {
                "architecture": _arch([P[0][0].shape[1]] + [W.shape[0] for W, _ in P]),
                "params": to_jsonable(P),
                "symmetry": to_jsonable(sym),
                "hypotheses": hyps,
                "within": bool(app.applies),
                "agree": False,
                "proof": False,
            }
            if app.applies:
                q = sym.apply(P, tol=ctx.tol)
                chk = verify_point(P, q, ctx.tol, exact=False)
                rec.update(
                    {
                        "point": to_jsonable(q),
                        "equivalent": chk["equivalent"],
                        "certified": chk["equivalence_certified"],
                        "orbit_distance": chk["orbit_distance"],
                        "agree": chk["equivalent"],
                    }
                )
                if not chk["equivalent"]:
                    eq = relu.equivalent(P, q, method="regions", tol=ctx.tol)
                    if eq.witness is not None:
                        x = np.asarray(eq.witness, dtype=float)
                        diff = float(np.max(np.abs(relu.forward(P, x) - relu.forward(q, x))))
                        rec["proof"] = diff > ctx.tol * path_norm_scale(P) * max(
                            1.0, float(np.max(np.abs(x)))
                        )
                        rec["why"] = f"outputs differ by {diff:.3g} at {x.tolist()}"
            records.append(rec)
            ctx.tick()
        within = [r for r in records if r["within"]]
        ok = sum(r["agree"] for r in within)
        off = sum(r.get("orbit_distance", 0.0) > 1e-6 for r in within)
        arch = "three-layer bottleneck" + (", n1 = 1" if name == "ramp_flip" else "")
        rows.append(
            verdict_row(
                dataclasses.replace(claim, paper_claim=words),
                arch,
                name.replace("_", " "),
                records,
                computed=f"function kept on {ok} of {len(within)}",
                summary=(
                    f"{len(records)} moves, {len(within)} apply; exact region engine; "
                    f"{off} moved off the permutation-scaling orbit"
                ),
                extra={"symmetry": name, "instances": records},
            )
        )
    return rows


def _flip_rows(ctx: ReLUContext, claim: ReLUClaim) -> list[Row]:
    rows = []
    for n1 in (2, 3):
        records = []
        for extra_dead in (False,) if ctx.quick else (False, True):
            w = (n1, n1, 2 if extra_dead else 1, 1)
            P = ctx.draw(w, [("hiding", 0)] + (["dead"] if extra_dead else []))
            hyps = relu_hypotheses(P, tol=ctx.tol)
            live = relu.identifiability(P, tol=ctx.tol)
            one = [j for j, k in enumerate(live.row_kinds) if k != "dead"]
            hyps.append(
                [
                    "exactly one live second-layer neuron, with the hiding pattern",
                    len(one) == 1 and live.row_kinds[one[0]] == "hiding",
                    f"row kinds {list(live.row_kinds)}",
                ]
            )
            points, checks = [], []
            for k in range(n1):
                for S in itertools.combinations(range(1, n1), k):
                    q = Flip(0, S).apply(P, tol=ctx.tol) if S else P
                    chk = verify_point(P, q, ctx.tol, exact=False) if S else {"equivalent": True}
                    checks.append({"flipped": list(S), "equivalent": chk["equivalent"]})
                    points.append(q)
            distinct = all(
                relu.orbit_distance(a, b) > OFF_ORBIT for a, b in itertools.combinations(points, 2)
            )
            size = len(points) if distinct and all(c["equivalent"] for c in checks) else 0
            # control: a second live hiding row with another ratio breaks the flip
            Pc = ctx.draw((n1, n1, 2, 1), [("hiding", 0), ("hiding", 0)])
            ctrl = Flip(0, (1,)).applies(Pc, tol=ctx.tol).applies
            ctrl_eq = relu.equivalent(
                Pc,
                Flip(0, (1,))._transform([(W.copy(), b.copy()) for W, b in Pc], ctx.tol),
                method="regions",
                tol=ctx.tol,
            ).equivalent
            records.append(
                {
                    "architecture": _arch(w),
                    "params": to_jsonable(P),
                    "hypotheses": hyps,
                    "within": all(h[1] is True for h in hyps),
                    "group_size": size,
                    "expected": 2 ** (n1 - 1),
                    "checks": checks,
                    "points": to_jsonable(points),
                    "distinct": bool(distinct),
                    "agree": size == 2 ** (n1 - 1),
                    "proof": False,
                    "control": {
                        "params": to_jsonable(Pc),
                        "flip_applies": bool(ctrl),
                        "forced_flip_equivalent": bool(ctrl_eq),
                    },
                }
            )
            ctx.tick()
        sizes = sorted({r["group_size"] for r in records})
        broken = sum(not r["control"]["forced_flip_equivalent"] for r in records)
        rows.append(
            verdict_row(
                claim,
                f"three-layer bottleneck, n1 = {n1}, n2 = 1 live",
                "hiding row",
                records,
                computed=f"group of {sizes} distinct equivalent points "
                f"(2^(n1-1) = {2 ** (n1 - 1)})",
                summary=(
                    f"every subset of flips checked by the exact engine; {broken} of "
                    f"{len(records)} controls with two live hiding rows change the function"
                ),
                extra={"instances": records},
            )
        )
    return rows


def _nonlocal_rows(ctx: ReLUContext, claim: ReLUClaim) -> list[Row]:
    records = []
    for kind in ("always-active", "ramp"):
        r = relu.nonlocalizable_example(kind=kind)
        records.append(
            {
                "architecture": _arch(r.widths),
                "kind": kind,
                "params": to_jsonable(r.params),
                "hypotheses": relu_hypotheses(r.params)[:2],
                "within": True,
                "agree": bool(r.nonlocalizable and r.certified),
                "proof": False,
                "mechanism": r.mechanism,
                "ranks": {x.part: [x.rank, x.bound] for x in (r.first_two, r.last_two, r.whole)},
                "witness": to_jsonable(r.whole.witness),
                "reason": r.reason,
            }
        )
        ctx.tick()
    archs = (
        [(2, 2, 2, 1), (2, 1, 2, 1)]
        if ctx.quick
        else [(2, 2, 2, 1), (3, 2, 3, 1), (2, 1, 2, 1), (3, 3, 2, 1)]
    )
    s = relu.search_nonlocalizable(
        archs, num_samples=2 if ctx.quick else 10, seed=ctx.rng, tol=ctx.tol
    )
    ctx.tick()
    rate = ", ".join(
        f"{_arch(a['widths'])} {a['nonlocalizable']}/{a['num_samples']}" for a in s.architectures
    )
    return [
        verdict_row(
            claim,
            "three-layer network",
            "f2 o f1 and f3 o f2 identifiable, the whole not",
            records,
            computed=f"{sum(r['agree'] for r in records)} proved examples "
            f"({', '.join(r['mechanism'] for r in records if r['agree'])})",
            summary=f"random Gaussian parameters: {rate} nonlocalizable",
            extra={"instances": records, "search": s.to_dict()},
        )
    ]


def _equivalence_rows(ctx: ReLUContext, claim: ReLUClaim) -> list[Row]:
    records = []
    pool = [i for i in ctx.instances() if i["within"]]
    step = max(1, len(pool) // (4 if ctx.quick else 14))
    for i in pool[::step]:
        P = [(np.asarray(W, float), np.asarray(b, float)) for W, b in i["params"]]
        pairs = []
        try:
            pairs.append(("fiber sample", relu.fiber(P, tol=ctx.tol).sample(1, ctx.rng)[0]))
        except NeuromanifoldError:  # pragma: no cover - within instances are bottlenecks
            pass
        Q = [(W.copy(), b.copy()) for W, b in P]
        Q[2][0][0, int(ctx.rng.integers(Q[2][0].shape[1]))] += 0.05
        pairs.append(("output weight moved by 0.05", Q))
        for what, Q in pairs:
            fast = relu.equivalent_bottleneck(P, Q, tol=ctx.tol)
            exact = relu.equivalent(P, Q, method="regions", tol=ctx.tol)
            hyps = [list(h) for h in i["hypotheses"]] + [
                [f"q: {h[0]}", h[1], h[2]] for h in relu_hypotheses(Q, tol=ctx.tol)
            ]
            rec = {
                "architecture": i["architecture"],
                "pair": what,
                "params": i["params"],
                "other": to_jsonable(Q),
                "hypotheses": hyps,
                "within": all(h[1] is True for h in hyps) and bool(fast.applies),
                "fast_applies": bool(fast.applies),
                "fast": fast.equivalent,
                "exact": bool(exact.equivalent),
                "exact_certified": bool(exact.certified),
                "agree": (not fast.applies) or fast.equivalent == exact.equivalent,
            }
            rec["proof"] = bool(fast.applies and not rec["agree"] and exact.certified)
            if rec["proof"]:
                rec["why"] = (
                    f"equivalent_bottleneck says {fast.equivalent}, the exact region "
                    f"engine (certified) {exact.equivalent}"
                )
            if not fast.applies:
                rec["hypotheses"].append(["the fast path applies", False, fast.note])
            records.append(rec)
        ctx.tick()
    within = [r for r in records if r["within"]]
    agree = sum(r["agree"] for r in within)
    nequiv = sum(r["exact"] for r in records)
    return [
        verdict_row(
            claim,
            "three-layer bottleneck",
            "generic",
            records,
            computed=f"agrees with the exact engine on {agree} of {len(within)}",
            summary=(
                f"{len(records)} pairs ({nequiv} equivalent by the exact engine); fast path "
                f"applies on {sum(r['fast_applies'] for r in records)}"
            ),
            extra={"instances": records},
        )
    ]


H_CERTIFIED = "the count is certified (exact ranks meeting the known laws' bound)"
H_FLOW = (
    "the flow integrates (to t_end, or up to where it stalls along a kink: the "
    "laws are judged on the part integrated)"
)
DRIFT_TOL = 1e-8  # relative drift of a conserved law along a flow (docs/conservation.md)


def _conservation_instances(ctx: ReLUContext) -> list[tuple[str, tuple, list]]:
    """(condition, widths, params): Gaussian draws, and draws where every second-layer
    row hides first-layer neuron 0 (hiding translations act)."""
    out = []
    per = 1 if ctx.quick else 2
    for w in _archs(ctx.quick):
        for _ in range(per):
            out.append(("Gaussian parameters", w, ctx.draw(w)))
            out.append(("a hidden first-layer hyperplane", w, ctx.draw(w, [("hiding", 0)] * w[2])))
    return out


def _conservation_count_rows(ctx: ReLUContext, claim: ReLUClaim) -> list[Row]:
    groups: dict = {}
    for condition, w, P in _conservation_instances(ctx):
        res = conservation_laws(P, seed=ctx.rng)
        hidden = int(sum(w[1:-1]))
        groups.setdefault(condition, []).append(
            {
                "architecture": _arch(w),
                "params": to_jsonable(P),
                "hypotheses": [[H_CERTIFIED, bool(res.certified), res.reason]],
                "within": bool(res.certified),
                "count": res.count,
                "hidden": hidden,
                "dimension": res.dimension,
                "lie_rank_trace": list(res.lie_rank_trace),
                "known_count": res.known_count,
                "agree": res.count == hidden,
                "proof": bool(res.certified and res.count != hidden),
            }
        )
        ctx.tick()
    rows = []
    for condition, records in groups.items():
        within = [r for r in records if r["within"]]
        agree = sum(r["agree"] for r in within)
        rows.append(
            verdict_row(
                claim,
                "three-layer bottleneck",
                condition,
                records,
                computed=f"count = hidden neurons on {agree} of {len(within)} certified",
                summary=(
                    f"{len(records)} inst; counts "
                    f"{sorted({(r['architecture'], r['count']) for r in records})}; "
                    f"D - dim Lie(V)(theta), exact modular ranks"
                ),
                extra={"instances": records},
            )
        )
    return rows


def _flow_data(ctx: ReLUContext, w: Sequence[int], n: int = 8) -> tuple[np.ndarray, np.ndarray]:
    return ctx.rng.standard_normal((n, w[0])), ctx.rng.standard_normal((n, w[-1]))


def _run_flow(P: list, X: np.ndarray, Y: np.ndarray, t_end: float, laws: Any) -> tuple:
    """The flow's result (the partial one if it stalls) and whether it reached t_end."""
    try:
        return relu.gradient_flow(P, X, Y, t_end, num_times=21, laws=laws), True
    except ComputationLimitError as exc:
        return getattr(exc, "partial", None), False


def _flow_records(
    ctx: ReLUContext, archs: list, kinds: Callable, t_end: float, laws: Any, judged: Callable
) -> tuple[list[dict], int]:
    """Flows from random parameters (``ctx.draw(w, kinds(w))``) on random data, one record
    per flow: ``judged(flow) -> (drift, extra fields)``, the drift held against
    ``DRIFT_TOL``. Flows that stall at t = 0 give no evidence and are only counted."""
    records, stalled = [], 0
    for w in archs:
        for _ in range(1 if ctx.quick else 2):
            P = ctx.draw(w, kinds(w))
            X, Y = _flow_data(ctx, w)
            flow, done = _run_flow(P, X, Y, t_end, laws)
            ctx.tick()
            if flow is None or len(flow.times) < 2:
                stalled += 1
                continue
            drift, extra = judged(flow)
            records.append(
                {
                    "architecture": _arch(w),
                    "params": to_jsonable(P),
                    "data": to_jsonable([X, Y]),
                    "hypotheses": [[H_FLOW, True, "to t_end" if done else "stalled"]],
                    "within": drift is not None,
                    "reached_end": done,
                    "t_reached": float(flow.times[-1]),
                    "params_end": to_jsonable(flow.params[-1]),
                    **extra,
                    "agree": drift is not None and drift <= DRIFT_TOL,
                    "proof": drift is not None and drift > DRIFT_TOL,
                }
            )
    return records, stalled


def _conservation_flow_rows(ctx: ReLUContext, claim: ReLUClaim) -> list[Row]:
    def rescaling(flow):
        return float(flow.max_law_drift), {"drift": float(flow.max_law_drift)}

    def block(flow):
        return flow.max_block_drift_while_active, {
            "drift_while_active": flow.max_block_drift_while_active,
            "drift": flow.max_block_drift,
            "leave_time": flow.blocks_leave_time,
        }

    rows = []
    # the rescaling laws, on Gaussian parameters
    records, stalled = _flow_records(
        ctx, _archs(ctx.quick), lambda w: None, 1.0, "rescaling", rescaling
    )
    worst = max((r["drift"] for r in records), default=None)
    rows.append(
        verdict_row(
            claim,
            "three-layer bottleneck",
            "rescaling laws along gradient flow",
            records,
            computed=f"drift <= {DRIFT_TOL:g} on {sum(r['agree'] for r in records if r['within'])} "
            f"of {sum(r['within'] for r in records)}",
            summary=f"square loss, 8 random points, t in [0, 1] "
            f"({sum(not r['reached_end'] for r in records)} "
            f"stalled at a kink earlier, {stalled} at t = 0: left out); largest relative drift "
            f"{worst if worst is None else f'{worst:.1e}'}",
            extra={"instances": records},
        )
    )
    # the block law: the first two second-layer rows always active on the orthant
    records, stalled = _flow_records(
        ctx,
        [x for x in _archs(ctx.quick) if x[2] >= 2],
        lambda w: ["linear", "linear"] + ["mixed"] * (w[2] - 2),
        3.0,
        [(2, [0, 1])],
        block,
    )
    left = [r for r in records if r["leave_time"] is not None]
    rows.append(
        verdict_row(
            claim,
            "three-layer bottleneck",
            "an always-active block: its local law",
            records,
            computed=f"conserved while active on {sum(r['agree'] for r in records if r['within'])} "
            f"of {sum(r['within'] for r in records)}",
            summary=(
                f"block of 2 second-layer neurons, t in [0, 3] ({stalled} flows stalled at "
                f"t = 0: left out); the block left activity on "
                f"{len(left)} flows, after which the law drifted by up to "
                f"{max((r['drift'] for r in left), default=0.0):.1e}"
            ),
            extra={"instances": records},
        )
    )
    return rows


def default_relu_claims(*, quick: bool = False) -> list[ReLUClaim]:
    """Paper B's claims as computed here (docs/reproduction.md lists their hypotheses).

    Args:
        quick: fewer instances (only changes the progress units; the size of the run is
            the context's).

    Returns:
        A list of :class:`ReLUClaim`; append one to compute one more row family.
    """
    quick = check_bool(quick, "quick")
    nid = len(_archs(quick)) * (5 if quick else 13)
    nsym = len(_SYMMETRY_CLAIMS) * (2 if quick else 5)
    return [
        ReLUClaim(
            "identifiability: sign patterns (no dead, always-active or hiding rows)",
            "identifiable iff no row of [W2 | b2] is dead (<= 0) or always active (>= 0) "
            "and no first-layer hyperplane is hidden (sign patterns)",
            STANDARD,
            _sign_rows,
            nid,
        ),
        ReLUClaim(
            "identifiability: no first-layer hyperplane hidden",
            "(the short statement read literally, dead and always-active rows ignored) "
            "a generic bottleneck parameter is identifiable iff no first-layer "
            "hyperplane is hidden",
            STANDARD,
            _literal_rows,
        ),
        ReLUClaim(
            "fiber dimension",
            "the fiber generated by the symmetries has dimension P - functional dimension",
            STANDARD,
            _fiber_rows,
        ),
        ReLUClaim(
            "symmetries",
            "each move keeps the function",
            (H_BOTTLENECK, "the move applies (its sign conditions)"),
            _symmetry_rows,
            nsym,
        ),
        ReLUClaim(
            "flips",
            "one live second-layer neuron hiding i: the flips of the other "
            "first-layer neurons form a group (Z/2)^(n1-1)",
            (
                H_BOTTLENECK,
                H_RANK,
                H_GENERIC,
                "exactly one live second-layer neuron, with the hiding pattern",
            ),
            _flip_rows,
            4,
        ),
        ReLUClaim(
            "non-localizability",
            "some network has f2 o f1 and f3 o f2 identifiable and f3 o f2 o f1 not",
            (H_BOTTLENECK, H_RANK),
            _nonlocal_rows,
            3,
        ),
        ReLUClaim(
            "polynomial-time equivalence",
            "equivalence of generic bottleneck parameters "
            "is decided in polynomial time (canonical forms)",
            (H_BOTTLENECK, H_RANK, H_GENERIC, "the fast path applies"),
            _equivalence_rows,
            5 if quick else 15,
        ),
        ReLUClaim(
            "conservation laws: count",
            "the conservation laws of gradient flow are the rescaling laws, one per "
            "hidden neuron; hiding translations give none (count = hidden neurons)",
            (H_CERTIFIED,),
            _conservation_count_rows,
            len(_archs(quick)) * (2 if quick else 4),
        ),
        ReLUClaim(
            "conservation laws: flows",
            "the rescaling laws are conserved along gradient flow; an always-active "
            "block A gives the local law R_A R_A^T - W3[:, A]^T W3[:, A], conserved "
            "while A stays active",
            (H_FLOW,),
            _conservation_flow_rows,
            2 * len(_archs(quick)) * (1 if quick else 2),
        ),
    ]


def reproduce_relu(
    *,
    seed: int = 0,
    quick: bool = False,
    progress: bool = False,
    claims: Sequence[ReLUClaim] | None = None,
    tol: Any = DEFAULT_TOL,
) -> list[Row]:
    """Compute paper B's claims row by row, each judged within its hypotheses
    (docs/reproduction.md, "The ReLU reproduction").

    Args:
        seed: seed of every random draw.
        quick: fewer architectures and instances (for tests; about 9 s of CPU, the
            default run about 40 s).
        progress: a progress bar on stderr.
        claims: the claims to compute (default :func:`default_relu_claims`).
        tol: relative tolerance of the sign decisions and equivalence checks (ranks are
            exact).

    Returns:
        The rows (:class:`~neuromanifold.reproduce.Row`), claim by claim.

    >>> rows = reproduce_relu(quick=True, claims=default_relu_claims()[5:6])
    >>> rows[0].condition, rows[0].outcome
    ('f2 o f1 and f3 o f2 identifiable, the whole not', 'agrees')
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a nonnegative int; got {short_repr(seed)}")
    quick = check_bool(quick, "quick")
    progress = check_bool(progress, "progress")
    tol = check_tol(tol)
    if claims is not None and (
        isinstance(claims, (str, bytes))
        or not isinstance(claims, Sequence)
        or not all(isinstance(c, ReLUClaim) for c in claims)
    ):
        raise InputError(f"claims must be a list of ReLUClaim; got {short_repr(claims)}")
    claims = list(default_relu_claims(quick=quick) if claims is None else claims)
    bar = None
    if progress:
        bar = progress_bar(total=sum(c.units for c in claims), desc="reproduce relu", unit="step")
    ctx = ReLUContext(int(seed), quick, tol, bar)
    rows: list[Row] = []
    try:
        for claim in claims:
            rows.extend(claim.compute(ctx, claim))
    finally:
        if bar is not None:
            bar.close()
    return rows
