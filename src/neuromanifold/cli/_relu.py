"""``neuromanifold relu ACTION``: ReLU networks from model files (.npz, .safetensors,
.onnx, PyTorch state_dict files), analysed exactly. ``relu ACTION --help`` lists the
options of one action; each action takes only its own.

Domains: ``--domain whole`` (R^d, the default), ``orthant`` (x >= 0), a box
``box:LO,HI`` (the same bounds on every axis), or a box with one interval per axis,
``box:LO1:HI1,LO2:HI2,...`` (as many intervals as the network has inputs; ``LO:LO``
fixes that input, as VNN-COMP properties do).

Budgets: the actions that enumerate linear regions (whose number grows exponentially
with the widths) take ``--max-regions N`` and ``--time-limit SECONDS``, and stop with a
message saying how far they got (exit status 1); ``regions`` first lists the regions
found, and prints an estimate of their number before it starts. ``identify``, ``distance``,
``neurons``, ``reduce`` and ``fiber`` answer with what is proved after 60 seconds unless
``--time-limit`` says otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

import numpy as np

from .._errors import NeuromanifoldError
from .._tolerance import DEFAULT_TOL
from ._common import (
    add_actions,
    emit,
    load_model,
    nonnegative_int,
    positive_float,
    positive_int,
    writable_path,
)
from ._table import format_table, short_array, terminal_width


class _Box(tuple):
    """A ``--domain box:...`` as ``(lower, upper)`` (what the analyses take as a box),
    printed as it was written."""

    text: str

    def __str__(self) -> str:
        return self.text


def _domain(text: str):
    """argparse type for ``--domain``: ``whole``, ``orthant``, ``box:LO,HI`` (one interval
    for every coordinate, LO < HI) or ``box:LO1:HI1,LO2:HI2,...`` (one interval per
    coordinate, LO <= HI: an interval LO:LO fixes that coordinate)."""
    if text in ("whole", "orthant"):
        return None if text == "whole" else "orthant"
    usage = (
        "must be 'whole', 'orthant', 'box:LO,HI' (every coordinate, LO < HI) or "
        "'box:LO1:HI1,LO2:HI2,...' (one interval per coordinate, LO <= HI)"
    )
    if not text.startswith("box:"):
        raise argparse.ArgumentTypeError(f"{usage}; got {text!r}")
    body = text[4:]
    if ":" not in body:  # one interval for every coordinate
        try:
            lo, hi = (float(t) for t in body.split(","))
        except ValueError:
            lo = hi = float("nan")
        if not lo < hi:
            raise argparse.ArgumentTypeError(f"{usage}; got {text!r}")
        box = _Box((lo, hi))
    else:
        lows, highs = [], []
        for i, part in enumerate(body.split(",")):
            try:
                lo, hi = (float(t) for t in part.split(":"))
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"{usage}; coordinate {i} is {part!r}, not LO:HI, in {text!r}"
                ) from None
            if not lo <= hi:  # NaN too
                raise argparse.ArgumentTypeError(
                    f"a box needs LO <= HI in every coordinate; coordinate {i} is "
                    f"{part!r} (LO={lo:g} > HI={hi:g}) in {text!r}"
                    if lo > hi
                    else f"{usage}; coordinate {i} is {part!r} in {text!r}"
                )
            lows.append(lo)
            highs.append(hi)
        box = _Box((np.array(lows), np.array(highs)))
    box.text = text
    return box


def _tol(text: str) -> float:
    """argparse type for ``--tol``."""
    from .._tolerance import check_tol  # start-up: loaded when the subcommand runs

    try:
        return check_tol(float(text))
    except (ValueError, NeuromanifoldError):
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1); got {text!r}") from None


def _budget(args) -> dict:
    return {"max_regions": args.max_regions, "time_limit": args.time_limit}


def _regions(args) -> int:
    from .._errors import ComputationLimitError  # start-up: loaded when the subcommand runs
    from ..relu import estimate_regions, regions  # start-up: loaded when the subcommand runs

    model = load_model(args.model, "relu")
    est = estimate_regions(model.params, args.domain, num_samples=5000)
    print(
        f"expect about {est.estimate:.0f} linear regions ({est.sampled_patterns} patterns "
        f"seen at {est.samples} random points; at most {est.upper_bound})",
        file=sys.stderr,
    )
    try:
        res = regions(
            model.params, args.domain, progress=True, workers=args.workers, **_budget(args)
        )
    except ComputationLimitError as err:
        if err.partial is not None:  # list what was found, then report the budget
            emit(
                args, "INCOMPLETE: " + _regions_text(args, err.partial, model), err.partial.to_dict
            )
        raise
    return emit(args, _regions_text(args, res, model), res.to_dict)


def _regions_text(args, res, model) -> str:
    shown = [
        [
            i,
            "".join("".join("1" if b else "0" for b in layer) + " " for layer in r.pattern).strip(),
            short_array(r.point),
        ]
        for i, r in enumerate(res.regions[: args.show])
    ]
    text = f"{len(res.regions)} linear regions of {model.describe()}\n\n" + format_table(
        shown, ["region", "activation pattern", "interior point"], width=terminal_width()
    )
    if len(res.regions) > args.show:
        text += f"\n... {len(res.regions) - args.show} more (--show N, or --json PATH for all)"
    return text


def _equiv(args) -> int:
    from ..relu import equivalent  # start-up: loaded when the subcommand runs

    a, b = load_model(args.model, "relu"), load_model(args.other[0], "relu")
    res = equivalent(
        a.params,
        b.params,
        args.domain,
        method=args.method,
        tol=args.tol,
        progress=True,
        **_budget(args),
    )
    verdict = "EQUIVALENT" if res.equivalent else "NOT equivalent"
    lines = [
        f"{verdict} on {args.domain or 'R^d'} (method {res.method}, certified="
        f"{res.certified}, tol {res.tol:g} relative to the path-norm scale {res.scale:.4g})",
        _as_a_and_b(res.note),
    ]
    if res.max_difference is not None:
        lines.append(
            f"largest difference found: {res.max_difference:.3g} (relative: per unit "
            f"of max(1, |x|) and of the scale)"
        )
    if res.symmetry:
        lines.append("symmetry taking A to B:")
        lines += ["  " + _symmetry_words(s) for s in res.symmetry]
    if res.witness is not None:
        lines.append(
            f"witness input x = {short_array(res.witness, precision=6)}: outputs of "
            f"A and B differ by {res.witness_difference:.6g} (absolute)"
        )
    return emit(args, "\n".join(lines), res.to_dict())


def _as_a_and_b(text: str) -> str:
    """The library's note with its argument names p and q read as the command's A and B."""
    return re.sub(r"\b[pq]\b", lambda m: "A" if m.group() == "p" else "B", text)


def _distance(args) -> int:
    from ..relu import distance  # start-up: loaded when the subcommand runs

    a, b = load_model(args.model, "relu"), load_model(args.other[0], "relu")
    budget = _budget(args)
    res = distance(
        a.params,
        b.params,
        args.domain,
        tol=args.tol,
        gap=args.gap,
        method=args.method,
        progress=True,
        top1=args.top1,
        workers=args.workers,
        scheduler=args.scheduler,
        **budget,
    )
    where = args.domain or "R^d"
    unit = "per unit of max(1, |x|_inf)" if res.relative else "absolute"
    lines = [
        f"distance of A and B on {where} (largest output difference, {unit}):",
        f"  {res.lower:.6g} <= D <= {res.upper:.6g}  (upper bound by {res.upper_method}, "
        f"certified={res.certified}, "
        + ("converged" if res.converged else f"gap {res.upper - res.lower:.3g} > {res.gap:.3g}")
        + ")",
        _as_a_and_b(res.note),
    ]
    if res.point is not None:
        lines.append(
            f"attained at x = {short_array(res.point, precision=6)} (exact difference "
            f"{res.lower:.6g})"
        )
    verdict = {True: "within", False: "beyond", None: "undecided against"}[res.within_tol]
    lines.append(f"{verdict} tol {res.tol:g} x scale {res.scale:.4g} (the equivalence threshold)")
    if res.top1 is not None:
        t = res.top1
        head = {
            True: "the same class first at every point of the box (proved)",
            False: "different classes first",
            None: "undecided",
        }[t.same]
        lines.append(f"top-1: A and B rank {head}" if t.same is not None else f"top-1: {head}")
        if t.witness is not None:
            at = f"at x = {short_array(t.witness, precision=6)}"
            if t.classes is not None:
                at += (
                    f": A ranks class {t.classes[0]} first, B class {t.classes[1]} "
                    f"(a top class falls {t.margin:.3g} below the other's largest output)"
                )
            lines.append(f"  {at}")
        lines.append(f"  {_as_a_and_b(t.note)}")
    return emit(args, "\n".join(lines), res.to_dict())


def _read_data(path: str) -> np.ndarray:
    """The rows of a ``.npy`` array (never unpickled)."""
    from .._errors import InputFileError  # start-up: loaded when the subcommand runs

    if os.path.isdir(path):
        raise InputFileError(f"{path}: a folder, not a .npy file")
    try:
        X = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except (OSError, ValueError, EOFError):
        # numpy's own message for a text file advises allow_pickle, which is never done
        raise InputFileError(
            f"{path}: not a .npy array of numbers (the file numpy.save "
            f"writes; a CSV converts with numpy.save(path, "
            f"numpy.loadtxt(csv, delimiter=','))"
        ) from None
    if not isinstance(X, np.ndarray) or X.ndim != 2:
        raise InputFileError(
            f"{path}: --data must hold one 2D array (n points x d inputs); "
            f"got {getattr(X, 'shape', type(X).__name__)}"
        )
    if X.shape[0] == 0:
        raise InputFileError(f"{path}: --data holds no points (shape {X.shape})")
    return X


def _neurons(args) -> int:
    from ..relu import neurons  # start-up: loaded when the subcommand runs

    model = load_model(args.model, "relu")
    X = _read_data(args.data) if args.data else None
    res = neurons(
        model.network() if model.kind == "relu_conv" else model.params,
        args.domain,
        data=X,
        method=args.method,
        seed=args.seed,
        tol=args.tol,
        **_budget(args),
    )
    return emit(args, res.describe(), res.to_dict())


def _reduce(args) -> int:
    from .. import io  # start-up: loaded when the subcommand runs
    from ..relu import reduce  # start-up: loaded when the subcommand runs

    model = load_model(args.model, "relu")
    X = _read_data(args.data) if args.data else None
    source = model.network() if model.kind == "relu_conv" else model.params
    res = reduce(source, args.domain, tol=args.tol, data=X, time_limit=args.time_limit)
    w = lambda ws: "-".join(map(str, ws))  # noqa: E731
    lines = [
        f"reduced {w(res.widths_before)} -> {w(res.widths_after)} on "
        f"{args.domain or ('the data box' if X is not None else 'R^d')} "
        f"({len(res.moves)} move{'' if len(res.moves) == 1 else 's'}; the function kept "
        + (
            "exactly"
            if res.exact
            else f"within {res.bound:.3g} per unit of max(1, |x|_inf), the float rounding included"
        )
        + ")"
    ]
    shown = list(res.moves[:12]) + (
        [f"... {len(res.moves) - 12} more (--json)"] if len(res.moves) > 12 else []
    )
    lines += ["  " + m for m in shown] + [res.note]
    if args.out:
        io.save(res.params if res.network is None else res.network, args.out)
        lines.append(f"wrote {args.out}")
    return emit(args, "\n".join(lines), res.to_dict())


def _fingerprint(args) -> int:
    from ..relu import fingerprint, group_by_function  # start-up: loaded when it runs

    paths = [args.model] + list(args.other)
    models = [load_model(path, "relu") for path in paths]
    fps = [fingerprint(m.params, tol=args.tol) for m in models]
    groups = group_by_function([m.params for m in models], tol=args.tol, time_limit=args.time_limit)
    width = max(len(p) for p in paths)
    lines = [
        f"{p:<{width}}  {fp.digest}" + ("" if fp.complete else "  (modulo permutation and scaling)")
        for p, fp in zip(paths, fps)
    ]
    lines.append(
        f"{len(groups.groups)} function(s) among {len(paths)} file(s) (every member "
        + (
            "proved equivalent to its group's first):"
            if groups.certified
            else "checked against its group's first; not every verdict certified):"
        )
    )
    for k, g in enumerate(groups.groups, start=1):
        lines.append(f"  {k}. " + ", ".join(paths[i] for i in g))
    lines.append(groups.note)
    data = {
        "files": paths,
        "fingerprints": [fp.to_dict() for fp in fps],
        "groups": [[paths[i] for i in g] for g in groups.groups],
        "certified": groups.certified,
        "note": groups.note,
    }
    return emit(args, "\n".join(lines), data)


def _symmetry_words(s) -> str:
    """A named symmetry in a line: permutations as the neuron each one moves to, scalings
    as their factors (abbreviated past six), the rest by name."""
    if hasattr(s, "group"):  # a convolutional network's channel group
        moved = [f"{i}->{j}" for j, i in enumerate(s.perm) if i != j]
        return (
            f"channels of {s.group}: "
            + (", ".join(moved) if moved else "identity")
            + f"; scaled by {short_array(np.asarray(s.scale), precision=4)}"
        )
    if s.name == "permutation":
        moved = [f"{i}->{j}" for j, i in enumerate(s.perm) if i != j]
        return f"permutation of hidden layer {s.layer}: " + (
            ", ".join(moved) if moved else "identity"
        )
    if s.name == "scaling":
        return f"scaling of hidden layer {s.layer} by {short_array(s.scales, precision=4)}"
    return repr(s)


def _spec(args) -> int:
    from ..relu import channel_spec  # start-up: loaded when the subcommand runs

    model = load_model(args.model, "relu")
    if model.kind != "relu_conv":
        text = (
            "a fully connected network: one group per hidden layer (its neurons' "
            "permutation and positive scaling); see relu identify for every symmetry"
        )
        return emit(args, text, {"model": model.describe(), "groups": []})
    spec = channel_spec(model.params)
    return emit(args, spec.describe(), spec.to_dict())


def _identify(args) -> int:
    from ..relu import identifiability  # start-up: loaded when the subcommand runs

    model = load_model(args.model, "relu")
    X = _read_data(args.data) if args.data else None
    res = identifiability(
        model.params, args.domain, data=X, tol=args.tol, local=args.local, **_budget(args)
    )
    return emit(args, res.describe(), res.to_dict())


def _canonical(args) -> int:
    from .. import io  # start-up: loaded when the subcommand runs
    from ..relu import canonical_form  # start-up: loaded when the subcommand runs

    model = load_model(args.model, "relu")
    canon = canonical_form(model.params, tol=args.tol, quotient=args.quotient)
    if model.kind == "relu_conv":  # a convolutional network, modulo its channel symmetries
        arrays = {
            f"{canon.layer_name(path)}.{role}": a
            for path, layer, _ in canon.leaves()
            for role, a in layer.arrays().items()
        }
        text = (
            "canonical form modulo channel permutation and scaling (the full arrays with "
            "--out FILE.onnx or --json PATH):\n"
            + "\n".join(f"  {name} {short_array(a)}" for name, a in arrays.items())
        )
        payload = {"canonical_form": arrays, "model": model.describe()}
    else:
        text = "canonical form (the full matrices with --out FILE or --json PATH):\n" + "\n".join(
            f"  W{l} {short_array(W)}\n  b{l} {short_array(b)}"
            for l, (W, b) in enumerate(canon, start=1)
        )
        payload = {"canonical_form": canon, "model": model.describe()}
    if args.out:
        io.save(canon, args.out)
        text += f"\nwrote {args.out}"
    return emit(args, text, payload)


def _fiber(args) -> int:
    from ..relu import fiber  # start-up: loaded when the subcommand runs

    model = load_model(args.model, "relu")
    X = _read_data(args.data) if args.data else None
    res = fiber(model.params, args.domain, data=X, tol=args.tol, **_budget(args))
    return emit(args, res.describe(max_families=args.show), res.to_dict)


def _plot(args) -> int:
    import matplotlib  # start-up: a slow import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # start-up: a slow import

    from .._errors import InputError  # start-up: loaded when the subcommand runs
    from ..relu import plot_arrangement  # start-up: loaded when the subcommand runs

    model = load_model(args.model, "relu")
    fig, ax = plt.subplots(figsize=(6, 6))
    try:
        plot_arrangement(model.params, args.domain, ax=ax, **_budget(args))
    except NeuromanifoldError:
        plt.close(fig)
        raise
    try:
        fig.savefig(args.out, dpi=120, bbox_inches="tight")
    except (OSError, ValueError) as exc:
        raise InputError(f"--out {args.out!r} cannot be written: {exc}") from None
    finally:
        plt.close(fig)
    return emit(args, f"wrote {args.out}", {"figure": args.out, "model": model.describe()})


def _fundim(args) -> int:
    from ..relu import functional_dimension  # start-up: loaded when the subcommand runs

    model = load_model(args.model, "relu")
    res = functional_dimension(
        model.params, args.domain, tol=args.tol, progress=True, **_budget(args)
    )
    lines = [
        f"functional dimension {res.rank} of at most {res.bound} "
        f"({res.num_params} parameters, {res.num_hidden} hidden neurons): "
        + ("at the bound" if res.at_bound else f"{res.bound - res.rank} below it"),
        f"method {res.method}, certified={res.certified}, tol {res.tol:g}; "
        f"{res.num_regions} regions, {res.num_milps} MILPs, {res.num_lps} LPs",
    ]
    if res.layered:
        lines.append(
            "rank of the sampled regions layer by layer: "
            + " + ".join(f"{v:,}" for v in res.levels)
            + " (first layer, second layer per first-layer neuron, the rest)"
        )
    if res.smallest_counted is not None or res.largest_dropped is not None:
        lines.append(
            f"gap of the rank: smallest singular value counted "
            f"{_g(res.smallest_counted)}, largest dropped {_g(res.largest_dropped)}"
        )
    if res.note:
        lines.append(res.note)
    return emit(args, "\n".join(lines), res.to_dict())


def _g(value) -> str:
    """A number in 3 significant digits, None as None."""
    return "None" if value is None else f"{value:.3g}"


def _genericity(args) -> int:
    from ..relu import genericity  # start-up: loaded when the subcommand runs

    model = load_model(args.model, "relu")
    res = genericity(model.params, args.domain, tol=args.tol, progress=True, **_budget(args))
    return emit(args, res.describe(), res.to_dict())


#: the largest Jacobian or NTK ``relu ntk`` forms (entries; 8 bytes each)
_NTK_MAX_ENTRIES = 50_000_000


def _ntk(args) -> int:
    from .._errors import InputError  # start-up: loaded when the subcommand runs
    from .._validation import as_seed_rng  # start-up: loaded when the subcommand runs
    from ..relu import ReLUNet, as_domain  # start-up: loaded when the subcommand runs

    model = load_model(args.model, "relu")
    net = ReLUNet(model.architecture)
    dom = as_domain(args.domain, net.input_dim)
    rng = as_seed_rng(args.seed)
    rows = args.points * net.widths[-1]
    if rows * max(rows, net.num_params) > _NTK_MAX_ENTRIES:
        raise InputError(
            f"--points {args.points}: the Jacobian would have {rows:,} x "
            f"{net.num_params:,} entries and the NTK {rows:,} x {rows:,}, more "
            f"than {_NTK_MAX_ENTRIES:,}; take fewer points"
        )
    X = rng.standard_normal((args.points, net.input_dim))
    if dom.kind == "orthant":
        X = np.abs(X)
    elif dom.kind == "box":
        X = rng.uniform(dom.lower, dom.upper, (args.points, net.input_dim))
    with np.errstate(over="ignore", invalid="ignore"):
        J = net.jacobian(model.params, X)
        K = J @ J.T
    if not np.all(np.isfinite(K)):
        raise InputError(
            "the NTK overflows float64 at these inputs (weights or domain too "
            "large); take a smaller --domain box"
        )
    eig = np.linalg.eigvalsh(K)[::-1]
    rank = int(np.sum(eig > max(args.tol, 1e-12) * max(eig[0], 1e-300))) if eig.size else 0
    rec = {
        "architecture": list(model.architecture),
        "inputs": X,
        "ntk": K,
        "eigenvalues": eig,
        "rank": rank,
        "tol": args.tol,
    }
    text = (
        f"empirical NTK at {args.points} random inputs of "
        f"{args.domain or 'R^d (standard normal)'}: size {K.shape[0]}x{K.shape[1]} "
        f"(inputs x outputs), rank {rank} (eigenvalues above tol {args.tol:g} of the "
        f"largest), trace {float(np.trace(K)):.6g}\n"
        f"largest eigenvalues {short_array(eig[:6])}"
    )
    return emit(args, text, rec)


_ACTIONS = {
    "regions": _regions,
    "identify": _identify,
    "equiv": _equiv,
    "distance": _distance,
    "neurons": _neurons,
    "reduce": _reduce,
    "fingerprint": _fingerprint,
    "canonical": _canonical,
    "fiber": _fiber,
    "plot": _plot,
    "fundim": _fundim,
    "genericity": _genericity,
    "ntk": _ntk,
    "spec": _spec,
}


def _gap(text: str) -> float:
    """argparse type for ``--gap``: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0; got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    out = getattr(args, "out", None)
    if (
        args.action in ("canonical", "reduce")
        and out
        and not out.endswith((".npz", ".safetensors", ".onnx"))
    ):
        args._parser.error(f"{args.action} --out must end in .npz, .safetensors or .onnx")
    if args.action == "plot" and not out:
        args._parser.error("plot needs --out FILE.png")
    if getattr(args, "top1", False) and not isinstance(args.domain, tuple):
        args._parser.error(
            "--top1 compares the top classes of two networks on a box: "
            "relu distance A B --domain box:LO,HI --top1"
        )
    return _ACTIONS[args.action](args)


# -- the options, each added to the actions that read it ---------------------------------


def _opt(*flags, **kw):
    return lambda p: p.add_argument(*flags, **kw)


_OPTIONS = {
    "domain": _opt(
        "--domain",
        type=_domain,
        default=None,
        metavar="DOMAIN",
        help="whole (R^d, the default), orthant, box:LO,HI (the same interval on every "
        "input), or box:LO1:HI1,LO2:HI2,... (one interval per input, as many as the "
        "network has inputs; LO:LO fixes that input)",
    ),
    "method": _opt(
        "--method",
        choices=["auto", "regions", "milp"],
        default="auto",
        help="the algorithm (default auto)",
    ),
    "distance_method": _opt(
        "--method",
        choices=["auto", "regions", "bounds", "milp"],
        default="auto",
        help="the upper end's algorithm: auto (the region engine when few joint regions "
        "are expected, else the bound engine on a box, else the MILP), regions (exact), "
        "bounds (linear bound propagation and branch and bound, a box), milp",
    ),
    "neurons_method": _opt(
        "--method",
        choices=["auto", "regions", "bounds"],
        default="auto",
        help="auto (the region engine when at most 5,000 regions are "
        "expected, else bounds), regions (exact), bounds",
    ),
    "gap": _opt(
        "--gap",
        type=_gap,
        default=None,
        help="stop once upper - lower <= GAP (default tol x scale; 0 = the exact maximum)",
    ),
    "top1": _opt(
        "--top1",
        action="store_true",
        help="also decide whether A and B rank the same class first at every "
        "point of the box (a counterexample when not)",
    ),
    "tol": _opt(
        "--tol",
        type=_tol,
        default=DEFAULT_TOL,
        help="relative tolerance (default 1e-9; 0 = exact; 1e-5 for float32 weights)",
    ),
    "show": _opt(
        "--show",
        type=nonnegative_int,
        default=20,
        help="how many regions to list (default 20; --json has all)",
    ),
    "show_families": _opt(
        "--show",
        type=nonnegative_int,
        default=5,
        help="how many families to list (default 5; --json has all)",
    ),
    "max_regions": _opt(
        "--max-regions",
        metavar="N",
        type=positive_int,
        default=None,
        help="stop after N (joint) regions (default: no limit)",
    ),
    "time_limit": _opt(
        "--time-limit",
        metavar="SECONDS",
        type=positive_float,
        default=None,
        help="stop after this many seconds (default: no limit)",
    ),
    "time_limit_60": _opt(
        "--time-limit",
        metavar="SECONDS",
        type=positive_float,
        default=60.0,
        help="answer after this many seconds with what is proved by then (default 60)",
    ),
    "data": _opt(
        "--data",
        metavar="X.npy",
        help="data points (n x d, .npy); their bounding box is the domain unless --domain is given",
    ),
    "data_values": _opt(
        "--data",
        metavar="X.npy",
        help="data points (n x d, .npy): the question asked of the network's values at "
        "them (not with --domain)",
    ),
    "points": _opt(
        "--points",
        metavar="N",
        type=positive_int,
        default=8,
        help="how many random inputs (default 8)",
    ),
    "seed": _opt(
        "--seed", type=nonnegative_int, default=0, help="seed of the random inputs (default 0)"
    ),
    "workers": _opt(
        "--workers",
        metavar="N",
        type=positive_int,
        default=1,
        help="processes that enumerate (default 1; worth it from some thousands of regions on)",
    ),
    "bound_workers": _opt(
        "--workers",
        metavar="N",
        type=positive_int,
        default=1,
        help="processes for the bound engine's branch and bound (default 1)",
    ),
    "scheduler": _opt(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="run the bound engine's branch and bound on this Dask cluster (tcp://HOST:8786), "
        "or 'local' for a LocalCluster of --workers processes",
    ),
    "local": _opt(
        "--local",
        action="store_true",
        help="also decide local identifiability: is the fiber near the parameter the "
        "orbit of the neuron scalings? (proved from the exact rank of the parameter "
        "Jacobian; at trained sizes it costs what fundim --tol 0 costs)",
    ),
    "quotient": _opt(
        "--quotient",
        choices=["auto", "all", "permutation-scaling"],
        default="auto",
        help="which symmetries to quotient out (default auto: every known one "
        "for three-layer networks, permutation and scaling after a "
        "lossless reduction otherwise)",
    ),
    "out_model": _opt(
        "--out",
        metavar="FILE",
        type=writable_path,
        help="write the network to a model file (.npz, .safetensors, .onnx)",
    ),
    "out_figure": _opt(
        "--out", metavar="FILE", type=writable_path, help="the figure (.png, .svg, .pdf; required)"
    ),
}

_MODEL = [("model", None, "model file (.npz, .safetensors, .onnx, .pt)")]
_PAIR = [("model", None, "model file A"), ("other", 1, "model file B")]
_BUDGET = ["max_regions", "time_limit"]

#: action -> (help, description, positionals, options)
_SUBCOMMANDS = {
    "regions": (
        "every linear region on the domain",
        "Every linear region on the domain, with its activation pattern and an "
        "interior point; an estimate of their number is printed first.",
        _MODEL,
        ["domain", "show", *_BUDGET, "workers"],
    ),
    "identify": (
        "identifiability up to permutation and scaling",
        "Identifiability up to permutation and scaling, at any depth: 'not "
        "identifiable' with a witness symmetry (dead, always-active, silent or "
        "parallel neurons, hidden hyperplanes, flips), 'identifiable' only where a "
        "theorem applies (generic three-layer bottlenecks), else 'undecided' with "
        "the reason. With --local (or --domain, or --data) also the local verdict: is "
        "the parameter determined near itself by the function on R^d (on the domain, "
        "or by its values at the data points)?",
        _MODEL,
        ["domain", "data_values", "tol", "local", "max_regions", "time_limit_60"],
    ),
    "equiv": (
        "do A and B compute the same function on the domain?",
        "Do A and B compute the same function on the domain? A witness input if not, "
        "the symmetry taking A to B if so.",
        _PAIR,
        ["domain", "method", "tol", *_BUDGET],
    ),
    "distance": (
        "the largest output difference of A and B, certified",
        "The largest output difference of A and B on the domain, as a certified "
        "interval [lower, upper] with the input attaining lower; with --top1 on a "
        "box, whether A and B rank the same class first everywhere.",
        _PAIR,
        [
            "domain",
            "distance_method",
            "gap",
            "top1",
            "tol",
            "max_regions",
            "time_limit_60",
            "bound_workers",
            "scheduler",
        ],
    ),
    "neurons": (
        "which neurons are dead, linear, hidden or visible",
        "Per hidden layer, which neurons are dead, linear (always active), hidden or "
        "visible on the domain (or on the bounding box of --data X.npy), each "
        "proved.",
        _MODEL,
        ["domain", "data", "neurons_method", "tol", "seed", "max_regions", "time_limit_60"],
    ),
    "reduce": (
        "a smaller network computing the same function",
        "A network with fewer neurons computing the same function on the domain "
        "(dead, duplicate, constant and linear-block neurons removed; --out FILE "
        "writes it).",
        _MODEL,
        ["domain", "data", "tol", "time_limit_60", "out_model"],
    ),
    "fingerprint": (
        "one string per model, equal for symmetric networks; files grouped",
        "A short string per model, equal for networks related by the symmetries; "
        "the files grouped by the function they compute.",
        [("model", None, "model file"), ("other", "*", "more model files")],
        ["tol", "time_limit_60"],
    ),
    "canonical": (
        "one canonical representative of the network's fiber",
        "One canonical representative of the network's fiber (written with "
        "--out): every symmetry for generic three-layer bottlenecks, permutation "
        "and scaling after a lossless reduction at other depths (or with "
        "--quotient permutation-scaling).",
        _MODEL,
        ["tol", "quotient", "out_model"],
    ),
    "fiber": (
        "the fiber: its families, or its local dimension",
        "The whole fiber of a generic bottleneck network, as semi-algebraic families; "
        "at other depths the moves through the parameter and the fiber's local "
        "dimension where two proven bounds meet; with --domain the parameters of the "
        "same function on that domain, with --data of the same values at the points.",
        _MODEL,
        ["domain", "data_values", "tol", "max_regions", "time_limit_60", "show_families"],
    ),
    "plot": (
        "the regions and bent hyperplanes of a network on R^2, as a figure",
        "The linear regions and bent hyperplanes of a network on R^2, as a figure (--out FILE).",
        _MODEL,
        ["domain", *_BUDGET, "out_figure"],
    ),
    "fundim": (
        "the functional dimension against its bound",
        "The functional dimension (the rank of the parameter Jacobian over the "
        "domain) against its bound, certified or with the gap that decided it.",
        _MODEL,
        ["domain", "tol", *_BUDGET],
    ),
    "genericity": (
        "the genericity conditions, each failure with its witness",
        "The genericity conditions (supertransversality, masked-product ranks) "
        "on the domain, each failure with its witness.",
        _MODEL,
        ["domain", "tol", *_BUDGET],
    ),
    "spec": (
        "the channel symmetries of a convolutional network, as a permutation spec",
        "The channel groups of a convolutional network, derived from its layers: "
        "which weight axes each permutation and positive scaling acts on (Git "
        "Re-Basin's permutation spec, written for you).",
        _MODEL,
        [],
    ),
    "ntk": (
        "the empirical NTK at random inputs of the domain",
        "The empirical NTK K = J J^T of the network at random inputs of the domain "
        "(--points N), with its rank and spectrum.",
        _MODEL,
        ["domain", "points", "seed", "tol"],
    ),
}


def register(sub) -> None:
    p = sub.add_parser(
        "relu",
        help="ReLU networks from model files: regions, equivalence, pictures",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_actions(p, "relu", _SUBCOMMANDS, _OPTIONS)
    p.set_defaults(func=run, _parser=p)
