"""Result objects: frozen, readable, JSON-ready."""

import dataclasses
import json
from fractions import Fraction

import numpy as np
import pytest

from neuromanifold import LinearConvNet, Result
from neuromanifold._errors import NeuromanifoldError
from neuromanifold._validation import as_seed_rng, check_positive_int


@dataclasses.dataclass(frozen=True, repr=False)
class Toy(Result):
    verdict: bool
    witness: np.ndarray
    ratio: Fraction
    gap: float


def test_result_repr_to_dict_frozen():
    r = Toy(True, np.arange(3.0), Fraction(1, 3), float("inf"))
    assert repr(r).startswith("Toy(verdict=True")
    d = r.to_dict()
    assert d == {"verdict": True, "witness": [0.0, 1.0, 2.0], "ratio": "1/3", "gap": "inf"}
    json.dumps(d)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.verdict = False


def test_jacobian_rank_result_json():
    net = LinearConvNet([2, 2])
    json.dumps(net.rank(net.random_params(0)).to_dict())


def test_validation_errors():
    with pytest.raises(NeuromanifoldError, match="positive integer"):
        check_positive_int(0, "n")
    with pytest.raises(NeuromanifoldError, match="seed"):
        as_seed_rng("abc")
    with pytest.raises(NeuromanifoldError, match="nonnegative"):
        as_seed_rng(-1)
