"""Symmetries of ReLU networks as transformations (docs/concepts_relu.md §4).

Public re-export of the symmetry objects: those of three-layer networks (definitions and
validity sets in ``docs/relu_symmetries.md``) and those of any depth, a three-layer
symmetry lifted to three consecutive layers among them (``docs/relu_depth.md``).

>>> from neuromanifold.relu import symmetries
>>> symmetries.Permutation(1, (1, 0)).name
'permutation'
"""

from ._symmetries.any_depth import (
    ActiveBiasShift,
    DeadNeuronOutgoing,
    ParallelNeuronSplit,
    SilentNeuronIncoming,
    WindowSymmetry,
)
from ._symmetries.flips import NeuronFlip
from ._symmetries.three_layer import (
    ORBIT_MOVES,
    Applicability,
    BlockRefactor,
    DeadNeuronMove,
    Flip,
    HidingTranslation,
    LinearBlockMixing,
    Permutation,
    RampFlip,
    Scaling,
    SecondLayerFlip,
    Symmetry,
    apply_sequence,
    random_orbit_point,
)

__all__ = [
    "Applicability",
    "Symmetry",
    "Permutation",
    "Scaling",
    "DeadNeuronMove",
    "LinearBlockMixing",
    "HidingTranslation",
    "Flip",
    "RampFlip",
    "SecondLayerFlip",
    "BlockRefactor",
    "WindowSymmetry",
    "DeadNeuronOutgoing",
    "SilentNeuronIncoming",
    "ActiveBiasShift",
    "ParallelNeuronSplit",
    "NeuronFlip",
    "apply_sequence",
    "random_orbit_point",
    "ORBIT_MOVES",
]
