"""``neuromanifold relu``: ReLU networks from model files (.npz, .safetensors, PyTorch
state_dict files), analysed exactly.

  regions MODEL     every linear region on the domain, with its activation pattern
  equiv A B         do A and B compute the same function on the domain? (a witness if not)
  plot MODEL        the linear regions and bent hyperplanes of a network on R^2, as a figure

Domains: ``--domain whole`` (R^d, the default), ``orthant`` (x >= 0), or a box
``box:LO,HI`` (the same bounds on every axis).
"""

from __future__ import annotations

import argparse

import numpy as np

from ._common import add_common, emit, load_model, writable_path
from ._table import format_table


def _domain(text: str):
    """argparse type for ``--domain``."""
    if text in ("whole", "orthant"):
        return None if text == "whole" else "orthant"
    if text.startswith("box:"):
        try:
            lo, hi = (float(t) for t in text[4:].split(","))
        except ValueError:
            lo = hi = float("nan")
        if lo < hi:
            return (lo, hi)
    raise argparse.ArgumentTypeError(
        f"must be 'whole', 'orthant' or 'box:LO,HI' with LO < HI; got {text!r}")


def _regions(args) -> int:
    from ..relu import regions
    model = load_model(args.model, "relu")
    res = regions(model.params, args.domain, progress=True)
    shown = [[i, "".join("".join("1" if b else "0" for b in layer) + " "
                         for layer in r.pattern).strip(), np.round(r.point, 4)]
             for i, r in enumerate(res.regions[:args.show])]
    text = (f"{len(res.regions)} linear regions of {model.describe()}\n\n"
            + format_table(shown, ["region", "activation pattern", "interior point"]))
    if len(res.regions) > args.show:
        text += f"\n... {len(res.regions) - args.show} more (--show N, or --json PATH for all)"
    return emit(args, text, res.to_dict())


def _equiv(args) -> int:
    from ..relu import equivalent
    a, b = load_model(args.model, "relu"), load_model(args.other, "relu")
    res = equivalent(a.params, b.params, args.domain, method=args.method)
    verdict = "EQUIVALENT" if res.equivalent else "NOT equivalent"
    return emit(args, f"{verdict} on {args.domain or 'R^d'} (method {res.method}, "
                f"certified={res.certified})\n{res!r}", res.to_dict())


def _plot(args) -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from .._errors import InputError
    from ..relu import plot_arrangement
    model = load_model(args.model, "relu")
    fig, ax = plt.subplots(figsize=(6, 6))
    plot_arrangement(model.params, args.domain, ax=ax)
    try:
        fig.savefig(args.out, dpi=120, bbox_inches="tight")
    except (OSError, ValueError) as exc:
        raise InputError(f"--out {args.out!r} cannot be written: {exc}") from None
    finally:
        plt.close(fig)
    return emit(args, f"wrote {args.out}", {"figure": args.out, "model": model.describe()})


_ACTIONS = {"regions": _regions, "equiv": _equiv, "plot": _plot}


def run(args: argparse.Namespace) -> int:
    if args.action == "equiv" and not args.other:
        args._parser.error("equiv needs two model files: relu equiv A B")
    if args.action != "equiv" and args.other:
        args._parser.error(f"{args.action} takes one model file; got a second: {args.other!r}")
    if args.action == "plot" and not args.out:
        args._parser.error("plot needs --out FILE.png")
    return _ACTIONS[args.action](args)


def register(sub) -> None:
    p = sub.add_parser("relu", help="ReLU networks from model files: regions, equivalence, "
                                    "pictures", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=sorted(_ACTIONS))
    p.add_argument("model", help="model file (.npz, .safetensors, .pt)")
    p.add_argument("other", nargs="?", help="second model file (equiv)")
    p.add_argument("--domain", type=_domain, default=None,
                   help="whole (default), orthant, or box:LO,HI")
    p.add_argument("--method", choices=["auto", "regions", "milp"], default="auto",
                   help="equiv: decision method (default auto)")
    p.add_argument("--show", type=int, default=20, help="regions: how many to list")
    p.add_argument("--out", metavar="FILE", type=writable_path, help="plot: the figure's path (.png, .svg, .pdf)")
    add_common(p, seed=False)
    p.set_defaults(func=run, _parser=p)
