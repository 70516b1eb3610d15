"""``neuromanifold demo``: a short, real computation on built-in default networks.

For each network: the neuromanifold's dimension (computed generic rank of the Jacobian,
and the docs/concepts_linear.md §1 bound), the NTK at a random parameter, and a gradient flow of a
square loss on random data whose invariants must stay constant.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

import numpy as np

from .._results import to_jsonable
from .._validation import as_seed_rng, check_positive_float
from ._common import nonnegative_int
from ._table import format_table, terminal_width


def default_nets() -> list:
    """The demonstration's networks: a strided 1D and a 2D linear convolutional network
    and a fully connected linear one."""
    from ..linear import LinearConvNet, LinearFCNet  # start-up: loaded when the demo runs

    return [
        LinearConvNet([3, 2, 2], strides=[2, 2]),
        LinearConvNet([(2, 2), (3, 2)], strides=[(2, 1)]),
        LinearFCNet([3, 4, 2]),
    ]


def demo_rows(*, seed: int = 0, t_final: float = 2.0) -> list[dict]:
    """One record per default network (plain dicts, JSON-ready).

    Args:
        seed: an int >= 0 (or a numpy Generator).
        t_final: the time horizon of the gradient flows.

    Returns:
        A list of dicts, one per network of :func:`default_nets`.
    """
    from ..flows import SquareLoss, gradient_flow  # start-up: loaded when the demo runs
    from ..linear import LinearConvNet, random_regression_data  # start-up: as above

    rows = []
    rng = as_seed_rng(seed)
    t_final = check_positive_float(t_final, "t_final")
    for net in default_nets():
        params = net.random_params(rng)
        K = net.ntk(params)
        X, Y = random_regression_data(net, rng, num_samples=8)
        loss = SquareLoss.from_data(net, X, Y)
        flow = gradient_flow(net, params, loss, t_final, num_times=11)
        bound = net.dimension_bound if isinstance(net, LinearConvNet) else net.dimension
        rows.append(
            {
                "network": repr(net),
                "end_to_end_shape": list(net.end_to_end_shape),
                "num_params": net.num_params,
                "dimension": net.dimension,
                "dimension_bound": bound,
                "ntk_rank": int(np.linalg.matrix_rank(K)),
                "ntk_trace": float(np.trace(K)),
                "loss_start": float(flow.loss[0]),
                "loss_end": float(flow.loss[-1]),
                "loss_monotone": flow.loss_monotone,
                "max_invariant_drift": flow.max_invariant_drift,
                "max_ntk_residual": flow.max_ntk_residual,
            }
        )
    return rows


def _short_name(network: str) -> str:
    """``LinearConvNet(filter_shapes=[3, 2, 2], strides=[2, 2])`` as ``conv 3,2,2 / 2,2``
    (filter sizes / strides; 2D sizes as 2x2), ``LinearFCNet(widths=[3, 4, 2])`` as
    ``fc 3-4-2``: the table's first column stays narrow (the JSON keeps the repr)."""
    nums = lambda text: re.findall(r"\((\d+), (\d+)\)|(\d+)", text)  # noqa: E731

    def join(text):
        return ",".join(f"{a}x{b}" if a else c for a, b, c in nums(text))

    if network.startswith("LinearConvNet"):
        shapes, _, strides = network.partition("strides=")
        return f"conv {join(shapes)} / {join(strides) or '-'}"
    if network.startswith("LinearFCNet"):
        return "fc " + "-".join(c for _, _, c in nums(network))
    return network


def run(args: argparse.Namespace) -> int:
    rows = demo_rows(seed=args.seed)
    table = [
        [
            _short_name(r["network"]),
            "x".join(map(str, r["end_to_end_shape"])),
            r["num_params"],
            f"{r['dimension']} (bound {r['dimension_bound']})",
            r["ntk_rank"],
            f"{r['loss_start']:.4g} -> {r['loss_end']:.4g}",
            "yes" if r["loss_monotone"] else "NO",
            f"{r['max_invariant_drift']:.1e}",
            f"{r['max_ntk_residual']:.1e}",
        ]
        for r in rows
    ]
    print("Linear networks: neuromanifold dimension, NTK and gradient flow (t in [0, 2])\n")
    print(
        format_table(
            table,
            [
                "network",
                "v",
                "params",
                "dim M",
                "rank K",
                "loss",
                "monotone",
                "invariant drift",
                "v'=-K grad l residual",
            ],
            width=terminal_width(),
        )
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(to_jsonable(rows), fh, indent=2)
        print(f"\nwrote {args.json}", file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "demo",
        help="run a short real computation on built-in default networks",
        description=__doc__,
    )
    p.add_argument(
        "--seed", type=nonnegative_int, default=0, help="random seed, an integer >= 0 (default 0)"
    )
    p.add_argument("--json", metavar="PATH", help="also write the records as JSON")
    p.set_defaults(func=run)
