"""ReLU networks (paper B, docs/concepts_relu.md): the exact piecewise-linear engine.

Networks and domains (docs/concepts_relu.md §1), linear regions and bent hyperplanes, ground-truth
functional equivalence, functional dimension, one hidden layer on the orthant
(docs/concepts_relu.md §2), genericity (docs/concepts_relu.md §3), non-localizability (§6) and
pictures.
"""

from . import symmetries
from ._analysis.bent import BentHyperplanes, BentNeuron, BentPiece, bent_hyperplanes
from ._analysis.flow import ReLUFlowResult, active_blocks, block_law, gradient_flow
from ._analysis.fundim import FunctionalDimension, functional_dimension
from ._analysis.genericity import Genericity, GenericityFailure, genericity
from ._analysis.neurons import NeuronStatus, neurons
from ._analysis.plot import plot_arrangement
from ._analysis.reduction import Reduction, reduce
from ._analysis.regions import (
    Region,
    RegionEstimate,
    Regions,
    RegionStream,
    activation_pattern,
    estimate_regions,
    iter_regions,
    regions,
    warm_up,
)
from ._bottleneck.canonical import BottleneckEquivalence, equivalent_bottleneck
from ._bottleneck.fiber import BottleneckFiber, FiberFamily
from ._bottleneck.identifiability import HiddenHyperplane, Identifiability
from ._bottleneck.nonlocalizability import (
    Nonlocalizability,
    NonlocalizableSearch,
    PartIdentifiability,
    nonlocalizability,
    nonlocalizable_example,
    orbit_distance,
    search_nonlocalizable,
)
from ._bottleneck.search import SearchCluster, SymmetrySearch, search_symmetries
from ._compare.distance import Distance, Top1, distance
from ._compare.equivalence import Equivalence, equivalent
from ._compare.fingerprint import Fingerprint, FunctionGroups, fingerprint, group_by_function
from ._core.domain import Domain, as_domain
from ._core.net import ReLUNet, check_params, forward
from ._deep.canonical import canonical_form
from ._deep.fiber import DeepFiber, MoveFamily, fiber
from ._deep.identifiability import DeepIdentifiability, identifiability
from ._orthant.arrangement import (
    ArrangementComparison,
    ArrangementHyperplane,
    WeightedArrangement,
    arrangements_equal,
    weighted_arrangement,
)
from ._orthant.fiber import FiberPiece, OrthantFiber, orthant_fiber

__all__ = [
    # networks and domains
    "ReLUNet",
    "forward",
    "check_params",
    "Domain",
    "as_domain",
    # regions, bent hyperplanes, equivalence, functional dimension
    "regions",
    "Region",
    "Regions",
    "activation_pattern",
    "iter_regions",
    "RegionStream",
    "estimate_regions",
    "RegionEstimate",
    "warm_up",
    "bent_hyperplanes",
    "BentHyperplanes",
    "BentNeuron",
    "BentPiece",
    "equivalent",
    "Equivalence",
    "distance",
    "Distance",
    "Top1",
    "neurons",
    "NeuronStatus",
    "reduce",
    "Reduction",
    "fingerprint",
    "Fingerprint",
    "group_by_function",
    "FunctionGroups",
    "functional_dimension",
    "FunctionalDimension",
    # one hidden layer on the orthant
    "weighted_arrangement",
    "WeightedArrangement",
    "ArrangementHyperplane",
    "arrangements_equal",
    "ArrangementComparison",
    "orthant_fiber",
    "OrthantFiber",
    "FiberPiece",
    # genericity, pictures
    "genericity",
    "Genericity",
    "GenericityFailure",
    "plot_arrangement",
    # symmetries and identifiability (docs/relu_symmetries.md; any depth: docs/relu_depth.md)
    "symmetries",
    "identifiability",
    "Identifiability",
    "DeepIdentifiability",
    "HiddenHyperplane",
    "fiber",
    "BottleneckFiber",
    "FiberFamily",
    "DeepFiber",
    "MoveFamily",
    # canonical form, polynomial-time equivalence, fiber search (docs/relu_equivalence.md)
    "canonical_form",
    "equivalent_bottleneck",
    "BottleneckEquivalence",
    "search_symmetries",
    "SymmetrySearch",
    "SearchCluster",
    # non-localizability of identifiability (docs/concepts_relu.md §6)
    "nonlocalizability",
    "nonlocalizable_example",
    "search_nonlocalizable",
    "Nonlocalizability",
    "PartIdentifiability",
    "NonlocalizableSearch",
    "orbit_distance",
    # gradient flow and its conservation laws (docs/conservation.md)
    "gradient_flow",
    "ReLUFlowResult",
    "block_law",
    "active_blocks",
]
