"""Conservation laws of gradient flow, counted exactly (docs/conservation.md).

:func:`conservation_laws` computes the number of independent conserved quantities of
the gradient flow of ReLU and linear networks near a parameter, ``D - dim Lie(V)(theta)``
(Marcotte, Gribonval, Peyre, arXiv 2307.00144), and checks it against the laws known in
closed form (rescaling laws, ``W_{l+1}^T W_{l+1} - W_l W_l^T``, the invariants of linear
convolutional networks, block laws of always-active blocks).
"""

from ._laws import ConservationLaws, KnownLaw, conservation_laws

__all__ = ["conservation_laws", "ConservationLaws", "KnownLaw"]
