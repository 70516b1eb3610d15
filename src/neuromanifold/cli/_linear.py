"""``neuromanifold linear``: linear convolutional networks from the command line.

The architecture comes from ``--filters`` / ``--strides`` (1D as ``3,2,4`` and ``2,3``; 2D
as ``2x2,3x3`` and ``1x1``) or from a model file (``--params FILE``: .npz, .safetensors,
.onnx or a PyTorch state_dict of single-channel convolutions); parameters from that file or
random from ``--seed``. ``linear ACTION --help`` lists the options of one action; each
action takes only its own.
"""

from __future__ import annotations

import argparse

import numpy as np

from ._common import add_actions, add_seed, emit, load_model, nonnegative_int, parse_shapes
from ._common import positive_float as _positive_float
from ._table import format_table, short_array, terminal_width


def _network(args: argparse.Namespace):
    """(net, params) from --params FILE or from --filters/--strides and --seed."""
    from ..linear import LinearConvNet  # start-up: loaded when the subcommand runs

    if args.params:
        model = load_model(args.params, "linear_conv", strides=args.strides)
        return model.network(), model.params
    if not args.filters:
        args._parser.error("give --filters (and --strides) or --params FILE")
    net = LinearConvNet(args.filters, strides=args.strides)
    return net, net.random_params(seed=args.seed)


def _fmt(x):
    return np.array2string(np.asarray(x), precision=4, separator=", ", max_line_width=100)


def run(args: argparse.Namespace) -> int:
    # Whole: one short branch per action (dimension, ntk, fiber, dependence, flow): a menu
    from .. import (  # start-up: loaded when the subcommand runs
        SquareLoss,
        gradient_flow,
        ntk_dependence,
    )
    from ..linear import random_regression_data  # start-up: loaded when the subcommand runs

    net, params = _network(args)
    head = f"{net}\n"
    if args.action == "dimension":
        rec = {
            "network": repr(net),
            "end_to_end_shape": net.end_to_end_shape,
            "num_params": net.num_params,
            "dimension": net.dimension,
            "dimension_bound": net.dimension_bound,
            "full_dimensional": net.is_full_dimensional,
        }
        return emit(
            args,
            head
            + format_table(
                [
                    [
                        rec["end_to_end_shape"],
                        rec["num_params"],
                        rec["dimension"],
                        rec["dimension_bound"],
                        "yes" if rec["full_dimensional"] else "no",
                    ]
                ],
                ["end-to-end shape", "params", "dim M", "bound sum|w_l|-(L-1)", "fills R^k"],
            ),
            rec,
        )
    if args.action == "ntk":
        K = net.ntk(params)
        eig = np.linalg.eigvalsh(K)[::-1]
        rec = {
            "network": repr(net),
            "params": params,
            "rank": int(np.linalg.matrix_rank(K)),
            "trace": float(np.trace(K)),
            "eigenvalues": eig,
            "ntk": K,
        }
        return emit(
            args,
            head + f"NTK of size {K.shape[0]}x{K.shape[1]}: rank {rec['rank']}, "
            f"trace {rec['trace']:.6g}\nlargest eigenvalues {_fmt(eig[:6])}",
            rec,
        )
    if args.action == "fiber":
        v, delta = net.end_to_end(params), net.invariants(params)
        fiber = net.fiber(v, delta)
        rec = {"network": repr(net), "end_to_end": v, "invariants": delta, "fiber": fiber.to_dict()}
        rows = [
            [k, short_array(np.concatenate([np.ravel(w) for w in p]))]
            for k, p in enumerate(fiber.points[: args.show])
        ]
        text = (
            head + f"end-to-end filter {short_array(v)}\ninvariants {short_array(delta)}\n"
            f"fiber: {len(fiber.points)} point(s) up to the sign and rescaling orbits "
            f"({fiber.num_sign_patterns} sign patterns each), dimension {fiber.dimension}, "
            f"certified={fiber.certified}, method {fiber.method}\n\n"
            + format_table(rows, ["point", "filters, layer after layer"], width=terminal_width())
        )
        if len(fiber.points) > args.show:
            text += f"\n... {len(fiber.points) - args.show} more (--json PATH for all)"
        return emit(args, text, rec)
    if args.action == "dependence":
        dep = ntk_dependence(net, params)
        verdict = "independent" if dep.independent else "DEPENDENT"
        return emit(
            args,
            head + f"NTK along the fiber: {verdict} (largest relative "
            f"difference {dep.max_relative_difference:.3g} over {dep.num_points} "
            f"points, certified={dep.certified})",
            dep.to_dict(),
        )
    X, Y = random_regression_data(net, seed=args.seed)
    loss = SquareLoss.from_data(net, X, Y)
    flow = gradient_flow(net, params, loss, args.t_final)
    return emit(
        args,
        head + f"loss {flow.loss[0]:.6g} -> {flow.loss[-1]:.6g} over t in "
        f"[0, {args.t_final}] (monotone: {flow.loss_monotone}); largest invariant "
        f"drift {flow.max_invariant_drift:.2e}",
        flow.to_dict(),
    )


def _opt(*flags, **kw):
    return lambda p: p.add_argument(*flags, **kw)


_OPTIONS = {
    "filters": _opt(
        "--filters",
        type=lambda s: parse_shapes(s, "filters"),
        help="filter sizes, e.g. 3,2,4 (1D) or 2x2,3x3 (2D)",
    ),
    "strides": _opt(
        "--strides",
        type=lambda s: parse_shapes(s, "strides"),
        help="strides, one per layer but the last, e.g. 2,3 or 1x1",
    ),
    "params": _opt("--params", metavar="FILE", help="read filters (and strides) from a model file"),
    "seed": add_seed,
    "show": _opt(
        "--show",
        type=nonnegative_int,
        default=10,
        help="how many points to list (default 10; --json has all)",
    ),
    "t_final": _opt(
        "--t-final", type=_positive_float, default=5.0, help="time horizon (default 5)"
    ),
}
_NETWORK = ["filters", "strides", "params", "seed"]

#: action -> (help, description, positionals, options)
_SUBCOMMANDS = {
    "dimension": (
        "the neuromanifold's dimension against the parameter count bound",
        "The neuromanifold's dimension against the parameter count bound.",
        [],
        _NETWORK,
    ),
    "ntk": (
        "the neural tangent kernel at the parameters: rank, trace, spectrum",
        "The neural tangent kernel at the parameters: rank, trace, spectrum.",
        [],
        _NETWORK,
    ),
    "fiber": (
        "every parameter with the same end-to-end filter and invariants",
        "Every parameter with the same end-to-end filter and invariants.",
        [],
        _NETWORK + ["show"],
    ),
    "dependence": (
        "is the NTK the same at every such parameter?",
        "Is the NTK the same at every parameter of the fiber?",
        [],
        _NETWORK,
    ),
    "flow": (
        "a gradient flow of a square loss on random data: loss, invariant drift",
        "A gradient flow of a square loss on random data (from --seed): loss, invariant drift.",
        [],
        _NETWORK + ["t_final"],
    ),
}


def register(sub) -> None:
    p = sub.add_parser(
        "linear",
        help="linear convolutional networks: dimension, NTK, fiber, dependence, flow",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_actions(p, "linear", _SUBCOMMANDS, _OPTIONS)
    p.set_defaults(func=run, _parser=p)
