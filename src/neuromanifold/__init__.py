"""neuromanifold: the geometry of neural-network parameterizations.

The public surface is re-exported here explicitly; implementation modules are private
(leading underscore). Domains: :mod:`neuromanifold.linear` (linear convolutional and
fully connected networks, docs/concepts_linear.md) and :mod:`neuromanifold.relu` (ReLU networks,
docs/concepts_relu.md). Outer layers (:mod:`neuromanifold.cli`) call the library, never the
other way round.
"""

from ._errors import (
    ArchitectureError,
    ComputationLimitError,
    DomainError,
    InputError,
    InputFileError,
    ModelFileError,
    NeuromanifoldError,
    NotInNeuromanifoldError,
    ParameterError,
    SingularPointError,
    SymmetryError,
    UndecidedFactorizationError,
    WorkerError,
)
from ._results import Result
from ._version import __version__

# The rest of the public surface is imported on first use (PEP 562): ``import
# neuromanifold`` and the command line's --help and --version need none of numpy, scipy,
# flint or numba. ``from neuromanifold import ReLUNet`` and ``nm.relu`` work as usual.
_SUBPACKAGES = (
    "exact",
    "fibers",
    "flows",
    "io",
    "linear",
    "ntk",
    "relu",
    "reproduce",
    "conservation",
)
_LAZY = {
    **{n: "conservation" for n in ("ConservationLaws", "KnownLaw", "conservation_laws")},
    **{
        n: "flows"
        for n in (
            "GradientFlowResult",
            "QuadraticLoss",
            "SquareLoss",
            "compare_lifts",
            "gradient_flow",
            "riemannian_flow",
        )
    },
    **{
        n: "linear"
        for n in (
            "JacobianRank",
            "LinearConvNet",
            "LinearFCNet",
            "ShallowReLUCNN",
            "ShallowReLUMLP",
            "balanced_ntk_operator",
            "convergence_study",
            "correlate",
            "RegularPoint",
            "is_regular_point",
        )
    },
    **{n: "ntk" for n in ("Fiber", "NTKDependence", "ntk_dependence")},
    "ReLUNet": "relu",
    **{n: "reproduce" for n in ("reproduce_linear", "reproduce_relu")},
}


def __getattr__(name: str):
    import importlib  # start-up: the subpackages load on first use

    if name in _SUBPACKAGES:
        module = importlib.import_module(f"{__name__}.{name}")
    elif name in _LAZY:
        module = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = module
    return module


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "NeuromanifoldError",
    "ArchitectureError",
    "ParameterError",
    "InputError",
    "InputFileError",
    "NotInNeuromanifoldError",
    "DomainError",
    "ModelFileError",
    "UndecidedFactorizationError",
    "SymmetryError",
    "Result",
    "linear",
    "relu",
    "flows",
    "ntk",
    "fibers",
    "exact",
    "reproduce",
    "io",
    "LinearConvNet",
    "LinearFCNet",
    "JacobianRank",
    "correlate",
    "balanced_ntk_operator",
    "QuadraticLoss",
    "SquareLoss",
    "gradient_flow",
    "GradientFlowResult",
    "riemannian_flow",
    "compare_lifts",
    "convergence_study",
    "ShallowReLUCNN",
    "ShallowReLUMLP",
    "Fiber",
    "ntk_dependence",
    "NTKDependence",
    "reproduce_linear",
    "reproduce_relu",
    "ReLUNet",
    "is_regular_point",
    "RegularPoint",
]
__all__ += ["SingularPointError", "ComputationLimitError", "WorkerError"]
__all__ += ["conservation", "conservation_laws", "ConservationLaws", "KnownLaw"]
