"""Symmetries of three-layer ReLU networks as transformations (docs/concepts_relu.md §4).

Public re-export of the symmetry objects; definitions and validity sets are in
``docs/relu_symmetries.md``.

>>> from neuromanifold.relu import symmetries
>>> symmetries.Permutation(1, (1, 0)).name
'permutation'
"""

from ._bottleneck.symmetries import (ORBIT_MOVES, Applicability, BlockRefactor, DeadNeuronMove,
                                     Flip, HidingTranslation, LinearBlockMixing, Permutation,
                                     RampFlip, Scaling, SecondLayerFlip, Symmetry,
                                     apply_sequence, random_orbit_point)

__all__ = ["Applicability", "Symmetry", "Permutation", "Scaling", "DeadNeuronMove",
           "LinearBlockMixing", "HidingTranslation", "Flip", "RampFlip", "SecondLayerFlip", "BlockRefactor", "apply_sequence", "random_orbit_point", "ORBIT_MOVES"]
