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


# ------------------------------------------------------------------ input rules
from hypothesis import given, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from neuromanifold import InputError, ParameterError  # noqa: E402
from neuromanifold._validation import (as_finite_array, as_real_array,  # noqa: E402
                                       check_finite_result, check_nonnegative_int)


class _Tensor:
    """A stand-in for a torch.Tensor that requires grad."""

    def __init__(self, a, grad=True):
        self.a, self.grad = np.asarray(a, dtype=np.float32), grad

    def detach(self):
        return _Tensor(self.a, grad=False)

    def cpu(self):
        return self

    def numpy(self):
        if self.grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad")
        return self.a

    def __array__(self, dtype=None, copy=None):
        return self.numpy()


@pytest.mark.parametrize("bad, match", [
    (np.array([1.0 + 0j]), "complex"),
    ([1.0, 2j], "complex"),
    (np.array([True, False]), "booleans"),
    ("1.5", "real numbers"),
    (["1.5", 2.0], "dtype"),
    (np.array([1.0, "2"], dtype=object), "entry '2'"),
    ([1.0, None], "entry None"),
    (None, "real numbers"),
    ([[1.0, 2.0], [3.0]], "rectangular"),
    ({"a": 1}, "real numbers"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), "dtype"),
    ([10 ** 400], "float64 range"),
])
def test_as_real_array_refuses_what_only_looks_like_numbers(bad, match):
    with pytest.raises(ParameterError, match=match):
        as_real_array(bad, "w")


def test_as_real_array_accepts_ints_fractions_and_tensors():
    assert as_real_array([1, 2], "w").dtype == np.float64
    np.testing.assert_array_equal(as_real_array([Fraction(1, 4), 2], "w"), [0.25, 2.0])
    exact = as_real_array([Fraction(1, 3), 10 ** 400], "w", exact=True)
    assert exact.dtype == object and exact[0] == Fraction(1, 3) and exact[1] == 10 ** 400
    np.testing.assert_array_equal(as_real_array(_Tensor([1.5, -2.0]), "w"), [1.5, -2.0])
    net = LinearConvNet([2, 2])
    assert net.end_to_end([_Tensor([1.0, 2.0]), _Tensor([1.0, -1.0])]).tolist() == [1, 1, -2]


@given(hnp.arrays(st.sampled_from([np.float64, np.float32, np.int64]),
                  hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
                  elements=st.integers(-1000, 1000)))
def test_as_finite_array_keeps_the_values_of_real_arrays(arr):
    out = as_finite_array(arr, "w")
    assert out.dtype == np.float64 and out.shape == arr.shape
    np.testing.assert_array_equal(out, arr.astype(np.float64))


def test_overflow_is_a_parameter_error():
    with pytest.raises(ParameterError, match="overflow"):
        check_finite_result([np.ones(2), np.array([np.inf])], "the NTK")
    net = LinearConvNet([2, 2], strides=[2])
    big = [np.array([1e200, 1.0]), np.array([1e200, 1.0])]
    for method in (net.end_to_end, net.ntk, net.invariants):
        with pytest.raises(ParameterError, match="overflow"):
            method(big)


def test_size_caps_are_clear_errors():
    with pytest.raises(InputError, match="at most 10 .*size limit"):
        check_positive_int(11, "n", maximum=10)
    assert check_nonnegative_int(0, "walk_steps") == 0
    with pytest.raises(InputError, match="integer >= 0"):
        check_nonnegative_int(-1, "walk_steps")
