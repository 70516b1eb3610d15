"""ReLU networks (paper B, docs/concepts_relu.md): the exact piecewise-linear engine.

Networks and domains (docs/concepts_relu.md §1), linear regions and bent hyperplanes, ground-truth
functional equivalence, functional dimension, one hidden layer on the orthant
(docs/concepts_relu.md §2), genericity (docs/concepts_relu.md §3), non-localizability (§6) and pictures.
"""

from ._arrangement import (ArrangementComparison, ArrangementHyperplane, WeightedArrangement,
                           arrangements_equal, weighted_arrangement)
from ._bottleneck_fiber import BottleneckFiber, FiberFamily, fiber
from ._bent import BentHyperplanes, BentNeuron, BentPiece, bent_hyperplanes
from ._canonical import BottleneckEquivalence, canonical_form, equivalent_bottleneck
from ._domain import Domain, as_domain
from ._equivalence import Equivalence, equivalent
from ._flow import ReLUFlowResult, active_blocks, block_law, gradient_flow
from ._fundim import FunctionalDimension, functional_dimension
from ._genericity import Genericity, GenericityFailure, genericity
from ._identifiability import HiddenHyperplane, Identifiability, identifiability
from ._net import ReLUNet, check_params, forward
from ._nonlocal import (NonlocalizableSearch, Nonlocalizability, PartIdentifiability,
                        nonlocalizability, nonlocalizable_example, orbit_distance,
                        search_nonlocalizable)
from ._orthant_fiber import FiberPiece, OrthantFiber, orthant_fiber
from ._plot import plot_arrangement
from ._regions import (Region, RegionEstimate, Regions, RegionStream, activation_pattern,
                       estimate_regions, iter_regions, regions)
from ._symmetry_search import SearchCluster, SymmetrySearch, search_symmetries
from . import symmetries

__all__ = [
    # networks and domains
    "ReLUNet", "forward", "check_params", "Domain", "as_domain",
    # regions, bent hyperplanes, equivalence, functional dimension
    "regions", "Region", "Regions", "activation_pattern",
    "iter_regions", "RegionStream", "estimate_regions", "RegionEstimate",
    "bent_hyperplanes", "BentHyperplanes", "BentNeuron", "BentPiece",
    "equivalent", "Equivalence", "functional_dimension", "FunctionalDimension",
    # one hidden layer on the orthant
    "weighted_arrangement", "WeightedArrangement", "ArrangementHyperplane",
    "arrangements_equal", "ArrangementComparison", "orthant_fiber", "OrthantFiber",
    "FiberPiece",
    # genericity, pictures
    "genericity", "Genericity", "GenericityFailure", "plot_arrangement",
    # three-layer bottleneck networks: symmetries (docs/relu_symmetries.md)
    "symmetries", "identifiability", "Identifiability", "HiddenHyperplane",
    "fiber", "BottleneckFiber", "FiberFamily",
    # canonical form, polynomial-time equivalence, fiber search (docs/relu_equivalence.md)
    "canonical_form", "equivalent_bottleneck", "BottleneckEquivalence",
    "search_symmetries", "SymmetrySearch", "SearchCluster",
    # non-localizability of identifiability (docs/concepts_relu.md §6)
    "nonlocalizability", "nonlocalizable_example", "search_nonlocalizable",
    "Nonlocalizability", "PartIdentifiability", "NonlocalizableSearch", "orbit_distance",
    # gradient flow and its conservation laws (docs/conservation.md)
    "gradient_flow", "ReLUFlowResult", "block_law", "active_blocks",
]
