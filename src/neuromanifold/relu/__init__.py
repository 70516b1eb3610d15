"""ReLU networks (paper B, docs/concepts_relu.md), one question per room.

Each question a user asks has one verb and one result class (``__all__`` below lists them
by question): regions and bent hyperplanes, neurons on a domain, functional dimension,
genericity, reduction, identifiability, fiber, canonical form, equivalence, distance,
verification of a two-network query, fingerprints, one hidden layer on the orthant,
non-localizability, gradient flow. Where theory gives several regimes (three layers, any
depth), the verb picks the route and the result names it in ``method``; the route's
result class subclasses the question's.
"""

from . import layers, symmetries
from ._canonical.canonical import canonical_form
from ._canonical.three_layer import BottleneckEquivalence, equivalent_bottleneck
from ._core.conv.network import ReLUConvNet
from ._core.domain import Domain, as_domain
from ._core.net import ReLUNet, check_params, forward
from ._distance.distance import Distance, Top1, distance
from ._equivalence.equivalence import Equivalence, equivalent
from ._fiber.fiber import DeepFiber, MoveFamily, fiber
from ._fiber.result import ReLUFiber
from ._fiber.search import SearchCluster, SymmetrySearch, search_symmetries
from ._fiber.three_layer import BottleneckFiber, FiberFamily
from ._fingerprint.fingerprint import Fingerprint, FunctionGroups, fingerprint, group_by_function
from ._flow.flow import ReLUFlowResult, active_blocks, block_law, gradient_flow
from ._fundim.fundim import FunctionalDimension, functional_dimension
from ._genericity.genericity import Genericity, GenericityFailure, genericity
from ._identifiability.conv import ChannelIdentifiability
from ._identifiability.identifiability import DeepIdentifiability, identifiability
from ._identifiability.three_layer import HiddenHyperplane, ThreeLayerIdentifiability
from ._identifiability.verdict import Identifiability
from ._neurons.neurons import NeuronStatus, neurons
from ._nonlocalizability.nonlocalizability import (
    Nonlocalizability,
    NonlocalizableSearch,
    PartIdentifiability,
    nonlocalizability,
    nonlocalizable_example,
    orbit_distance,
    search_nonlocalizable,
)
from ._orthant.arrangement import (
    ArrangementComparison,
    ArrangementHyperplane,
    WeightedArrangement,
    arrangements_equal,
    weighted_arrangement,
)
from ._orthant.fiber import FiberPiece, OrthantFiber, orthant_fiber
from ._reduction.reduction import Reduction, reduce
from ._regions.bent import BentHyperplanes, BentNeuron, BentPiece, bent_hyperplanes
from ._regions.plot import plot_arrangement
from ._regions.regions import (
    Region,
    RegionEstimate,
    Regions,
    RegionStream,
    activation_pattern,
    estimate_regions,
    iter_regions,
    regions,
)
from ._symmetries.channels import ChannelGroup, ChannelSpec, ChannelSymmetry, channel_spec
from ._verify.verify import DifferenceQuery, Verification, verify
from ._warm_up import warm_up

__all__ = [
    # networks and domains (the machinery every question reads)
    "ReLUNet",
    "ReLUConvNet",
    "layers",
    "forward",
    "check_params",
    "Domain",
    "as_domain",
    "warm_up",
    # what are its linear regions and bent hyperplanes? (docs/relu.md)
    "regions",
    "Region",
    "Regions",
    "activation_pattern",
    "iter_regions",
    "RegionStream",
    "estimate_regions",
    "RegionEstimate",
    "bent_hyperplanes",
    "BentHyperplanes",
    "BentNeuron",
    "BentPiece",
    "plot_arrangement",
    # which neurons are dead, linear or switching on a domain?
    "neurons",
    "NeuronStatus",
    # what is its functional dimension?
    "functional_dimension",
    "FunctionalDimension",
    # is the parameter generic?
    "genericity",
    "Genericity",
    "GenericityFailure",
    # the smallest network of the same function
    "reduce",
    "Reduction",
    # is the parameter identifiable up to permutation and scaling? (docs/relu_symmetries.md)
    "identifiability",
    "Identifiability",
    "ThreeLayerIdentifiability",
    "DeepIdentifiability",
    "ChannelIdentifiability",
    "HiddenHyperplane",
    "symmetries",
    # which channel permutations and scalings keep a convolutional network's function?
    "channel_spec",
    "ChannelSpec",
    "ChannelGroup",
    "ChannelSymmetry",
    # which parameters compute the same function?
    "fiber",
    "ReLUFiber",
    "BottleneckFiber",
    "FiberFamily",
    "DeepFiber",
    "MoveFamily",
    "search_symmetries",
    "SymmetrySearch",
    "SearchCluster",
    # one representative per orbit (docs/relu_equivalence.md)
    "canonical_form",
    # do two networks compute the same function?
    "equivalent",
    "Equivalence",
    "equivalent_bottleneck",
    "BottleneckEquivalence",
    # how far apart are two networks on a domain?
    "distance",
    "Distance",
    "Top1",
    # does a two-network query hold on a box? (a VNN-LIB solver's answer)
    "verify",
    "Verification",
    "DifferenceQuery",
    # which networks of a zoo compute one function?
    "fingerprint",
    "Fingerprint",
    "group_by_function",
    "FunctionGroups",
    # one hidden layer on the orthant (docs/relu_arrangement.md)
    "weighted_arrangement",
    "WeightedArrangement",
    "ArrangementHyperplane",
    "arrangements_equal",
    "ArrangementComparison",
    "orthant_fiber",
    "OrthantFiber",
    "FiberPiece",
    # is identifiability decided locally? (docs/concepts_relu.md §6)
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
