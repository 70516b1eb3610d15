"""The analyses a sweep can run: each takes an architecture (a dict) and a seed and
returns a small JSON-ready dict.

Only these registered names can be asked for in a sweep configuration: a configuration
file selects computations, it never names code to import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._errors import InputError, short_repr
from .._results import to_jsonable
from .._validation import check_positive_int
from ..conservation import conservation_laws
from ..linear import LinearConvNet
from ..ntk import ntk_dependence as dependence
from ..relu import ReLUNet, functional_dimension, regions

__all__ = ["ANALYSES", "run_analysis", "architecture_of"]


def _conv(arch: dict):
    return LinearConvNet(arch["filters"], strides=arch.get("strides"))


def _relu(arch: dict):
    return ReLUNet(arch["widths"])


def linear_dimension(arch: dict, seed: int) -> dict:
    """Dimension of the neuromanifold of a linear convolutional network, and its bound."""
    net = _conv(arch)
    return {
        "dimension": net.dimension,
        "bound": net.dimension_bound,
        "num_params": net.num_params,
        "end_to_end_size": net.end_to_end_size,
    }


def ntk_dependence(arch: dict, seed: int) -> dict:
    """Is the NTK the same at every parameter with the same end-to-end filter and
    invariants? (one random parameter of a linear convolutional network)"""
    net = _conv(arch)
    dep = dependence(net, net.random_params(seed=seed))
    return {
        "independent": dep.independent,
        "max_relative_difference": dep.max_relative_difference,
        "num_points": dep.num_points,
        "certified": dep.certified,
    }


def relu_functional_dimension(arch: dict, seed: int) -> dict:
    """Functional dimension of a random ReLU network against the bound P - #hidden."""
    net = _relu(arch)
    res = functional_dimension(net.random_params(seed=seed), arch.get("domain"))
    return {
        key: value for key, value in res.to_dict().items() if not isinstance(value, (list, dict))
    }


def relu_regions(arch: dict, seed: int) -> dict:
    """Number of linear regions of a random ReLU network on its domain."""
    net = _relu(arch)
    res = regions(net.random_params(seed=seed), arch.get("domain"))
    return {"num_regions": len(res.regions)}


def conservation(arch: dict, seed: int) -> dict:
    """Number of conservation laws of gradient flow at a random ReLU parameter
    (docs/conservation.md): path-lifting, or the outputs at ``data_points`` random
    Gaussian inputs; with the known laws' count and the number of hidden neurons."""
    net = _relu(arch)
    n = arch.get("data_points")
    X = (
        None
        if n is None
        else np.random.default_rng(seed).standard_normal(
            (check_positive_int(n, "data_points", maximum=4096), net.input_dim)
        )
    )
    res = conservation_laws(net, net.random_params(seed=seed), data=X, seed=seed)
    return {
        "count": res.count,
        "known_count": res.known_count,
        "hidden": net.num_hidden,
        "dimension": res.dimension,
        "lie_dimension": res.lie_dimension,
        "lie_rank_trace": list(res.lie_rank_trace),
        "certified": res.certified,
        "reason": res.reason,
    }


#: name -> function(architecture dict, seed) -> JSON-ready dict
ANALYSES: dict[str, Callable[[dict, int], dict]] = {
    "linear_dimension": linear_dimension,
    "ntk_dependence": ntk_dependence,
    "relu_functional_dimension": relu_functional_dimension,
    "relu_regions": relu_regions,
    "conservation": conservation,
}

_KEYS = {
    "linear_dimension": ("filters", "strides"),
    "ntk_dependence": ("filters", "strides"),
    "relu_functional_dimension": ("widths", "domain"),
    "relu_regions": ("widths", "domain"),
    "conservation": ("widths", "data_points"),
}


def architecture_of(analysis: str, arch: Any) -> dict:
    """Check that ``arch`` names an architecture ``analysis`` understands.

    Returns:
        The architecture as a plain dict; an :class:`InputError` naming the rule otherwise.
    """
    if analysis not in ANALYSES:
        raise InputError(f"unknown analysis {analysis!r}; known: {sorted(ANALYSES)}")
    if not isinstance(arch, dict):
        raise InputError(f"an architecture must be a table (dict); got {short_repr(arch)}")
    allowed = _KEYS[analysis]
    unknown = sorted(set(arch) - set(allowed))
    if unknown or allowed[0] not in arch:
        raise InputError(
            f"analysis {analysis!r} takes architectures with keys {list(allowed)} "
            f"({allowed[0]!r} required); got {short_repr(arch)}"
        )
    # build it once here, so that a bad architecture is refused before the sweep starts
    (_conv if allowed[0] == "filters" else _relu)(arch)
    return dict(arch)


def run_analysis(analysis: str, arch: dict, seed: int) -> dict:
    """Run one task; the result is JSON-ready (this runs in worker processes)."""
    return to_jsonable(ANALYSES[analysis](arch, seed))
