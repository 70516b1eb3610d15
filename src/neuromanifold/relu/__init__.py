"""ReLU networks (paper B, SPEC section 2): the exact piecewise-linear engine."""

from ._domain import Domain, as_domain
from ._net import ReLUNet, check_params, forward
from ._regions import Region, Regions, activation_pattern, regions
from ._equivalence import Equivalence, equivalent
from ._fundim import FunctionalDimension, functional_dimension
from ._bent import BentHyperplanes, BentNeuron, BentPiece, bent_hyperplanes

__all__ = ["ReLUNet", "forward", "check_params", "Domain", "as_domain",
           "regions", "Region", "Regions", "activation_pattern",
           "bent_hyperplanes", "BentHyperplanes", "BentNeuron", "BentPiece",
           "equivalent", "Equivalence", "functional_dimension", "FunctionalDimension"]

# one hidden layer on the orthant (SPEC 2.2), genericity (SPEC 2.3), pictures
from ._arrangement import (ArrangementComparison, ArrangementHyperplane, FiberPiece,
                           OrthantFiber, WeightedArrangement, arrangements_equal,
                           orthant_fiber, weighted_arrangement)
from ._genericity import Genericity, GenericityFailure, genericity
from ._plot import plot_arrangement

__all__ += ["weighted_arrangement", "WeightedArrangement", "ArrangementHyperplane",
            "arrangements_equal", "ArrangementComparison", "orthant_fiber", "OrthantFiber",
            "FiberPiece", "genericity", "Genericity", "GenericityFailure", "plot_arrangement"]
