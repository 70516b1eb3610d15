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
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from neuromanifold import InputError, ParameterError  # noqa: E402
from neuromanifold._validation import (  # noqa: E402
    as_finite_array,
    as_real_array,
    check_finite_result,
    check_nonnegative_int,
)


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


@pytest.mark.parametrize(
    "bad, match",
    [
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
        ([10**400], "float64 range"),
    ],
)
def test_as_real_array_refuses_what_only_looks_like_numbers(bad, match):
    with pytest.raises(ParameterError, match=match):
        as_real_array(bad, "w")


def test_as_real_array_accepts_ints_fractions_and_tensors():
    assert as_real_array([1, 2], "w").dtype == np.float64
    np.testing.assert_array_equal(as_real_array([Fraction(1, 4), 2], "w"), [0.25, 2.0])
    exact = as_real_array([Fraction(1, 3), 10**400], "w", exact=True)
    assert exact.dtype == object and exact[0] == Fraction(1, 3) and exact[1] == 10**400
    np.testing.assert_array_equal(as_real_array(_Tensor([1.5, -2.0]), "w"), [1.5, -2.0])
    net = LinearConvNet([2, 2])
    assert net.end_to_end([_Tensor([1.0, 2.0]), _Tensor([1.0, -1.0])]).tolist() == [1, 1, -2]


@given(
    hnp.arrays(
        st.sampled_from([np.float64, np.float32, np.int64]),
        hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
        elements=st.integers(-1000, 1000),
    )
)
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


# ------------------------------------------------------------------ loading back
import importlib  # noqa: E402
import inspect  # noqa: E402
import pkgutil  # noqa: E402

import neuromanifold as nm  # noqa: E402
from neuromanifold import relu  # noqa: E402
from tests.support.results import build_results, more_results, nested_results, same  # noqa: E402


def _result_classes():
    """Every Result subclass defined in the package (all modules but the CLI entry)."""
    found = set()
    for info in pkgutil.walk_packages(nm.__path__, "neuromanifold."):
        if info.name.endswith("__main__"):
            continue
        for obj in vars(importlib.import_module(info.name)).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, Result)
                and obj is not Result
                and obj.__module__.startswith("neuromanifold")
                and dataclasses.fields(obj)
            ):
                found.add(obj)
    return sorted(found, key=lambda c: (c.__module__, c.__name__))


@pytest.fixture(scope="module")
def instances():
    by_class = {}
    for r in nested_results(build_results() + more_results()):
        by_class.setdefault(type(r), []).append(r)
    return by_class


def _without_symbolic(d):
    if isinstance(d, dict):
        return {
            k: _without_symbolic(v) for k, v in d.items() if k not in ("equations", "inequalities")
        }
    return [_without_symbolic(v) for v in d] if isinstance(d, list) else d


def _json_round_trip(r):
    return json.loads(json.dumps(r.to_dict(), allow_nan=False))


@pytest.mark.parametrize("klass", _result_classes(), ids=lambda c: c.__name__)
def test_every_result_class_loads_back_from_its_dict_and_json(klass, instances):
    # a question's class (its routes subclass it) reads back every route's dict as that route
    question = klass.__dict__.get("_QUESTION", False)
    routes = [c for c in instances if question and issubclass(c, klass)] or [klass]
    assert all(c in instances for c in routes), f"no instance of {klass.__name__} to round-trip"
    if question:
        assert len(routes) >= 2, f"{klass.__name__}: every route needs an instance"
    for r in (r for c in routes for r in instances[c]):
        d = r.to_dict()
        for data in (d, json.loads(json.dumps(d, allow_nan=False))):
            back = klass.from_dict(data)
            assert type(back) is type(r)
            diff = same(r, back, klass.__name__)
            assert diff is None, diff
            if klass in (relu.FiberPiece, relu.OrthantFiber):  # documented: no symbolic text
                assert back.to_dict() == _without_symbolic(d)
            else:
                assert back.to_dict() == d
        if not any(isinstance(getattr(r, f.name), np.ndarray) for f in dataclasses.fields(r)):
            try:
                equal = back == r
            except ValueError:  # arrays deeper down: compared field by field above
                continue
            assert equal is True or klass.__dataclass_params__.eq is False


def test_from_dict_restores_arrays_fractions_and_nonfinite_floats():
    r = Toy(False, np.array([[1.5, -np.inf], [np.nan, 0.0]]), Fraction(-7, 3), float("-inf"))
    back = Toy.from_dict(_json_round_trip(r))
    assert back.witness.shape == (2, 2) and back.witness.dtype == np.float64
    np.testing.assert_array_equal(back.witness, r.witness)
    assert back.ratio == Fraction(-7, 3) and back.gap == -np.inf and back.verdict is False
    exact = Toy(True, np.array([Fraction(1, 3), 2], dtype=object), Fraction(5), 0.0)
    back = Toy.from_dict(_json_round_trip(exact))
    assert back.witness.dtype == object and list(back.witness) == [Fraction(1, 3), 2]
    assert back.ratio == 5 and isinstance(back.ratio, Fraction)
    ints = Toy.from_dict({"verdict": True, "witness": [[1, 2]], "ratio": "1/2", "gap": 1})
    assert ints.witness.dtype.kind == "i" and ints.gap == 1.0 and isinstance(ints.gap, float)


@given(
    hnp.arrays(
        st.sampled_from([np.float64, np.int64, np.bool_]),
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3),
    ),
    st.fractions(),
    st.floats(),
)
def test_toy_results_round_trip_for_all_values(arr, ratio, gap):
    r = Toy(True, arr, ratio, gap)
    back = Toy.from_dict(_json_round_trip(r))
    assert same(r, back) is None


@dataclasses.dataclass(frozen=True, repr=False)
class Nest(Result):
    inner: Toy
    items: tuple[Toy, ...]
    params: list[tuple[np.ndarray, np.ndarray]]
    table: dict[int, float]
    maybe: Fraction | None = None


def test_nested_results_typed_containers_and_defaults():
    t = Toy(True, np.zeros(2), Fraction(1, 2), 1.0)
    r = Nest(t, (t, t), [(np.eye(2), np.ones(2))], {3: float("inf")})
    back = Nest.from_dict(_json_round_trip(r))
    assert same(r, back) is None and back.table == {3: np.inf} and back.maybe is None
    assert Nest.from_dict({**r.to_dict(), "maybe": "2/4"}).maybe == Fraction(1, 2)


@pytest.mark.parametrize(
    "data, match",
    [
        ([1, 2], "needs a dict"),
        ({"verdict": True, "witness": [1.0], "ratio": "1/2"}, "'gap' is missing"),
        (
            {"verdict": "yes", "witness": [1.0], "ratio": "1/2", "gap": 1.0},
            r"Toy.verdict: expected true",
        ),
        (
            {"verdict": True, "witness": [[1.0], [2.0, 3.0]], "ratio": "1/2", "gap": 1.0},
            r"Toy.witness: expected a rectangular",
        ),
        ({"verdict": True, "witness": ["a"], "ratio": "1/2", "gap": 1.0}, r"Toy.witness"),
        (
            {"verdict": True, "witness": [1.0], "ratio": "one half", "gap": 1.0},
            r"Toy.ratio: expected a rational",
        ),
        (
            {"verdict": True, "witness": [1.0], "ratio": "1/2", "gap": "big"},
            r"Toy.gap: expected a number",
        ),
    ],
)
def test_from_dict_errors_name_the_field(data, match):
    with pytest.raises(InputError, match=match):
        Toy.from_dict(data)


def test_symmetry_rules_still_apply_when_loading():
    with pytest.raises(InputError, match="scales must be positive"):
        relu.symmetries.Scaling.from_dict({"layer": 1, "scales": [1.0, -2.0]})


def test_domain_keeps_the_shape_of_an_empty_constraint_matrix():
    whole = relu.Domain.whole(3)
    back = relu.Domain.from_dict(_json_round_trip(whole))
    assert back.A.shape == (0, 3) and same(whole, back) is None


def test_a_loaded_orthant_fiber_has_no_symbolic_context():
    p = relu.ReLUNet([2, 3, 1]).random_params(0)
    fib = relu.orthant_fiber(p)
    back = relu.OrthantFiber.from_dict(_json_round_trip(fib))
    assert same(fib, back) is None
    assert back.contains(p)  # needs only the stored arrangement
    with pytest.raises(InputError, match="loaded with from_dict"):
        back.sample(0)
    with pytest.raises(InputError, match="loaded with from_dict"):
        back.pieces[0].equations
    d = back.pieces[0].to_dict()  # the stored fields, without the symbolic conditions
    assert "equations" not in d and d.items() <= fib.pieces[0].to_dict().items()


def test_scales_survive_chains_of_tiny_then_huge_layers():
    """A product of layers 2**-600, 2**-600, 2**600, 2**600 is 1: neither the path norm nor
    the parameter bound may underflow on the way (tolerances are relative to them)."""
    import numpy as np

    from neuromanifold.relu import equivalent
    from neuromanifold.relu._bounds.parameters import function_distance_bound, path_norm_scale

    L = lambda w: (np.array([[w]]), np.zeros(1))  # noqa: E731
    a, A = 2.0**-600, 2.0**600
    p = [L(a), L(a), L(A), L(A)]
    assert path_norm_scale(p) == 1.0
    assert 1.0 <= function_distance_bound(p, [L(a), L(2 * a), L(A), L(A)]) <= 1.0 + 1e-8
    assert equivalent(p, [L(a), L(3 * a), L(A / 3), L(A)], tol=1e-6).equivalent
