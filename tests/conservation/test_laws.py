"""neuromanifold.conservation: the number of conservation laws, D - dim Lie(V)(theta),
against the symbolic ground truth (sympy brackets, function-level closure) and an
independent float path (torch.func), the linear facts, the known laws, and errors."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuromanifold as nm
from neuromanifold import InputError, LinearConvNet, LinearFCNet, ParameterError
from neuromanifold.conservation import ConservationLaws, KnownLaw, conservation_laws
from neuromanifold.conservation._naive import naive_lie_trace
from neuromanifold.relu import ReLUNet, block_law
from tests.support.common import ROOT
from tests.support.conservation import torch_lie_trace


def _hidden(widths):
    return sum(widths[1:-1])


# ------------------------------------------------------------------ the linear facts
def test_linear_1_2_2_1_has_seven_laws_where_the_formula_says_six():
    net = LinearFCNet([1, 2, 2, 1])
    res = conservation_laws(net, net.random_params(seed=0))
    assert len(res.known_laws) == sum(n * (n + 1) // 2 for n in (2, 2)) == 6
    assert (res.count, res.known_count, res.dimension) == (7, 6, 8)
    assert res.certified and res.reason == "single generator" and not res.known_span_ok


def test_linear_1_3_1_has_five_laws_where_the_formula_says_six():
    net = LinearFCNet([1, 3, 1])
    res = conservation_laws(net, net.random_params(seed=0))
    assert len(res.known_laws) == 6
    assert (res.count, res.known_count) == (5, 5)
    assert res.certified and res.known_span_ok


# ------------------------------------------------------------------ ground truth
CASES = [
    ("relu", [1, 1, 1], None),
    ("relu", [2, 2, 1], None),
    ("relu", [1, 2, 1, 1], None),
    ("relu", [2, 2, 1], 2),
    ("relu", [1, 1, 1, 1], 2),
    ("relu", [2, 1, 2], 3),
    ("fc", [2, 2, 2], None),
    ("fc", [2, 1, 2], None),
    ("fc", [1, 2, 1, 1], None),
    ("fc", [2, 2, 1], 1),
    ("conv", ([3, 2], [2]), None),
    ("conv", ([2, 2, 2], [1, 1]), None),
]


def _case(kind, arch, n, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "relu":
        net = ReLUNet(arch)
    elif kind == "fc":
        net = LinearFCNet(arch)
    else:
        net = LinearConvNet(arch[0], strides=arch[1])
    X = None if n is None else rng.standard_normal((n, arch[0]))
    return net, net.random_params(seed=seed), X


@pytest.mark.parametrize("kind, arch, n", CASES)
def test_count_matches_symbolic_brackets(kind, arch, n):
    net, p, X = _case(kind, arch, n)
    ours = conservation_laws(net, p, data=X)
    truth = naive_lie_trace(net, p, data=X)
    assert ours.count == truth["count"]
    assert ours.lie_dimension == truth["rank"]
    assert ours.lie_rank_trace == tuple(truth["trace"][: len(ours.lie_rank_trace)])


@pytest.mark.parametrize(
    "widths, n",
    [
        ([3, 1, 2, 1], None),
        ([2, 3, 1, 2], None),
        ([3, 2, 2, 2, 1], None),
        ([2, 6, 1, 1], 4),
        ([1, 2, 2, 1], 6),
        ([4, 1, 3, 1], 5),
    ],
)
def test_count_matches_torch_autodiff(widths, n):
    pytest.importorskip("torch")
    rng = np.random.default_rng(sum(widths))
    p = ReLUNet(widths).random_params(seed=1)
    X = None if n is None else rng.standard_normal((n, widths[0]))
    ours = conservation_laws(p, data=X)
    trace, D = torch_lie_trace(p, X)
    assert ours.dimension == D
    assert ours.lie_dimension == trace[-1]


@settings(max_examples=12)
@given(
    widths=st.lists(st.integers(1, 6), min_size=3, max_size=4),
    seed=st.integers(0, 99),
    n=st.sampled_from([None, 1, 2, 5]),
)
def test_modular_rational_and_float_agree(widths, seed, n):
    p = ReLUNet(widths).random_params(seed=seed)
    X = None if n is None else np.random.default_rng(seed).standard_normal((n, widths[0]))
    a = conservation_laws(p, data=X, seed=seed)
    c = conservation_laws(p, data=X, exact=False, seed=seed)
    assert a.count == c.count
    if a.dimension <= 40:
        b = conservation_laws(p, data=X, exact="rational", seed=seed)
        assert a.count == b.count and a.lie_rank_trace == b.lie_rank_trace


@settings(max_examples=15)
@given(widths=st.lists(st.integers(1, 6), min_size=3, max_size=5), seed=st.integers(0, 99))
def test_path_lifting_count_is_the_number_of_hidden_neurons_at_random_points(widths, seed):
    res = conservation_laws(ReLUNet(widths).random_params(seed=seed), seed=seed)
    assert res.count == res.known_count == _hidden(widths)
    assert res.certified and res.known_span_ok and res.laws_verified


@settings(max_examples=10)
@given(
    widths=st.lists(st.integers(1, 4), min_size=3, max_size=4),
    seed=st.integers(0, 99),
    scale=st.sampled_from([0.25, 2.0, 8.0]),
    n=st.sampled_from([None, 3]),
)
def test_count_is_invariant_under_neuron_rescaling_and_permutation(widths, seed, scale, n):
    """A positive rescaling of a hidden neuron and a permutation of a hidden layer map
    the fields onto each other, so the count at theta and at the moved point agree."""
    rng = np.random.default_rng(seed)
    p = ReLUNet(widths).random_params(seed=seed)
    X = None if n is None else rng.standard_normal((n, widths[0]))
    q = [(W.copy(), b.copy()) for W, b in p]
    perm = rng.permutation(widths[1])
    q[0] = (q[0][0][perm] * scale, q[0][1][perm] * scale)  # powers of two: exact
    q[1] = (q[1][0][:, perm] / scale, q[1][1])
    assert conservation_laws(p, data=X).count == conservation_laws(q, data=X).count


@settings(max_examples=10)
@given(widths=st.lists(st.integers(1, 4), min_size=2, max_size=4), seed=st.integers(0, 99))
def test_fc_count_is_at_least_the_known_count(widths, seed):
    net = LinearFCNet(widths)
    res = conservation_laws(net, net.random_params(seed=seed))
    assert res.laws_verified and res.count >= res.known_count
    assert res.certified == (res.reason in ("upper bound", "single generator"))


def test_rational_and_integer_params_are_exact_and_not_rationalized():
    p = [([[Fraction(1, 3), 2]], [Fraction(-1, 7)]), ([[3]], [1])]
    res = conservation_laws(p, exact="rational")
    assert not res.rationalized and res.count == 1 and res.certified
    assert conservation_laws(
        [(np.array([[0.5, 2.0]]), np.array([1.0])), (np.array([[3.0]]), np.array([1.0]))]
    ).rationalized


def test_float_method_reports_its_gap():
    res = conservation_laws(ReLUNet([2, 3, 1]).random_params(seed=0), exact=False, tol=1e-9)
    assert res.method == "float" and res.tol == 1e-9 and not res.certified
    assert res.smallest_counted is not None and res.smallest_counted > 1e-9


def test_a_zero_weight_drops_the_rank_of_V_and_brackets_restore_it():
    """At a zero outgoing weight V(theta) loses two dimensions; depth-1 brackets bring
    them back, and the count is the number of hidden neurons again (as in the symbolic
    ground truth)."""
    p = ReLUNet([2, 2, 1]).random_params(seed=0)
    p[1] = (np.array([[0.0, 1.5]]), p[1][1])
    res = conservation_laws(p)
    truth = naive_lie_trace(p)
    assert res.lie_rank_trace == (5, 7) == tuple(truth["trace"][:2])
    assert res.count == truth["count"] == 2 and res.certified


# ------------------------------------------------------------------ known laws
def test_known_laws_are_callables_with_names():
    p = ReLUNet([2, 2, 1]).random_params(seed=3)
    res = conservation_laws(p)
    assert [law.name for law in res.known_laws] == ["rescaling[1, 0]", "rescaling[1, 1]"]
    law = res.known_laws[1]
    expected = np.sum(p[0][0][1] ** 2) + p[0][1][1] ** 2 - p[1][0][0, 1] ** 2
    assert law(p) == pytest.approx(expected)
    assert law(ReLUNet([2, 2, 1]).flatten(p)) == pytest.approx(expected)
    assert isinstance(law, KnownLaw) and "rescaling" in repr(law)


def test_known_law_gradients_are_the_derivatives_of_their_values():
    """For a quadratic the central difference with a unit step is the exact derivative."""
    rng = np.random.default_rng(4)
    p = [
        (rng.standard_normal((3, 2)), rng.standard_normal(3)),
        (np.abs(rng.standard_normal((2, 3))), np.array([3.0, 3.0])),
        (rng.standard_normal((1, 2)), np.zeros(1)),
    ]
    laws = conservation_laws(p, data=rng.standard_normal((4, 2))).known_laws
    assert {law.kind for law in laws} == {"rescaling", "block"}
    theta = ReLUNet([2, 3, 2, 1]).flatten(p)
    for law in laws:
        fd = [(law(theta + e) - law(theta - e)) / 2 for e in np.eye(theta.size)]
        assert np.allclose(law.gradient(list(theta)), fd, atol=1e-12)


def test_fc_and_conv_known_laws_are_the_models_invariants():
    net = LinearFCNet([2, 3, 2])
    p = net.random_params(seed=0)
    res = conservation_laws(net, p)
    Delta = net.invariants(p)[0]
    values = {law.name: law(p) for law in res.known_laws}
    assert values["Delta_1[0, 2]"] == pytest.approx(Delta[0, 2])
    conv = LinearConvNet([3, 2, 2], strides=[2, 1])
    q = conv.random_params(seed=0)
    res = conservation_laws(conv, q)
    assert [law(q) for law in res.known_laws] == pytest.approx(list(conv.invariants(q)))
    assert res.count == res.known_count == 2 and res.certified


def test_block_laws_of_an_always_active_block_are_known_and_counted():
    """Three-layer network, two second-layer neurons active at every data point: the
    off-diagonal block law joins the rescaling laws, and the computed count equals the
    rank of all of them."""
    rng = np.random.default_rng(1)
    W1, b1 = rng.standard_normal((3, 2)), rng.standard_normal(3)
    W2, b2 = np.abs(rng.standard_normal((2, 3))), np.array([2.5, 2.0])
    p = [(W1, b1), (W2, b2), (rng.standard_normal((1, 2)), np.zeros(1))]
    X = rng.standard_normal((30, 2))
    res = conservation_laws(p, data=X)
    block = [law for law in res.known_laws if law.kind == "block"]
    assert [law.name for law in block] == ["block[2; 0, 1]"]
    assert block[0](p) == pytest.approx(block_law(p, [0, 1])[0, 1])
    assert res.count == res.known_count == 3 + 2 + 1
    assert res.certified and res.known_span_ok
    # without data the block law is not a law of the path-lifting
    assert conservation_laws(p).count == 5


def test_a_hidden_hyperplane_adds_no_law():
    """First-layer neuron 0 is hidden by the only second-layer neuron (row (+, -; -)):
    its bias can be translated without changing the function, yet the count equals
    the number of rescaling laws, with and without data."""
    rng = np.random.default_rng(2)
    W1, b1 = rng.standard_normal((2, 2)), rng.standard_normal(2)
    W2, b2 = np.array([[1.3, -0.7]]), np.array([-0.4])
    p = [(W1, b1), (W2, b2), (np.array([[1.1]]), np.array([0.2]))]
    assert nm.relu.identifiability(p).identifiable is False
    for X in (None, 3 * rng.standard_normal((1000, 2))):
        res = conservation_laws(p, data=X)
        assert res.count == res.known_count == 3 and res.certified


def test_result_is_a_frozen_result_with_a_dict():
    res = conservation_laws(ReLUNet([1, 2, 1]).random_params(seed=0))
    assert isinstance(res, ConservationLaws) and "count=2" in repr(res)
    d = res.to_dict()
    assert d["count"] == 2 and d["known_laws"][0]["name"] == "rescaling[1, 0]"
    with pytest.raises(Exception):
        res.count = 3


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: conservation_laws("net"), "model must be"),
        (lambda: conservation_laws(ReLUNet([1, 1]), None), "params are required"),
        (lambda: conservation_laws(ReLUNet([1, 1]).random_params(), [1]), "either a model"),
        (lambda: conservation_laws(ReLUNet([1, 1]).random_params(), exact="yes"), "exact must"),
        (lambda: conservation_laws(ReLUNet([1, 1]).random_params(), max_depth=11), "max_depth"),
        (lambda: conservation_laws(ReLUNet([1, 1]).random_params(), tol=-1), "tol must"),
        (
            lambda: conservation_laws(ReLUNet([2, 1]).random_params(), data=np.ones((3, 3))),
            "data must be inputs of shape",
        ),
        (
            lambda: conservation_laws(ReLUNet([2, 1]).random_params(), data=np.ones((10**4, 2))),
            "at most",
        ),
        (
            lambda: conservation_laws(
                LinearConvNet([2, 2]), [[1.0, 2.0], [1.0, 1.0]], data=[[1.0]]
            ),
            "not supported",
        ),
    ],
)
def test_bad_input_is_an_input_error(call, match):
    with pytest.raises(InputError, match=match):
        call()


def test_bad_params_are_parameter_errors():
    with pytest.raises(ParameterError):
        conservation_laws([(np.array([[np.nan]]), np.zeros(1))])
    with pytest.raises(ParameterError):
        conservation_laws(LinearFCNet([1, 2, 1]), [np.ones((2, 1))])
    with pytest.raises(ParameterError):
        conservation_laws(ReLUNet([1, 2, 1]), ReLUNet([1, 3, 1]).random_params())


# ------------------------------------------------------------------ sweep, benchmark
def test_sweep_analysis_conservation():
    from neuromanifold.sweep._analyses import architecture_of, run_analysis

    assert architecture_of("conservation", {"widths": [2, 3, 1], "data_points": 5})
    out = run_analysis("conservation", {"widths": [2, 3, 1]}, 0)
    assert out["count"] == out["known_count"] == out["hidden"] == 3 and out["certified"]
    with_data = run_analysis("conservation", {"widths": [2, 3, 1], "data_points": 40}, 0)
    assert with_data["count"] >= 3
    with pytest.raises(InputError, match="takes architectures"):
        architecture_of("conservation", {"filters": [2]})
    with pytest.raises(InputError, match="data_points"):
        run_analysis("conservation", {"widths": [2, 1], "data_points": 0}, 0)


def test_bench_conservation_quick(capsys):
    from tests.support.common import load_benchmark

    rows = load_benchmark("bench_conservation").main(["--quick"])
    per_arch = [r for r in rows if "widths" in r]
    assert per_arch and all(r["count"] == r["hidden"] and r["certified"] for r in per_arch)
    suite = [r for r in rows if "task" in r]
    assert suite[-1]["baseline_s"] > 0 and "same counts: True" in suite[-1]["note"]


def test_docs_conservation_tables_are_what_the_code_prints():
    """docs/conservation.md: every python block (doctests) reproduces its shown output."""

    from tests.docs.test_readme import code_blocks, run_block

    page = ROOT / "docs" / "conservation.md"
    ns: dict = {"__name__": "conservation_doc"}
    failures = []
    for lineno, code in code_blocks(page.read_text(encoding="utf-8")):
        failures += run_block(code, ns, "docs/conservation.md", lineno)
    assert not failures, "\n".join(failures)


def test_the_identity_test_refuses_a_law_that_is_not_conserved():
    from neuromanifold.conservation._laws import _verify_laws, model_of

    p = ReLUNet([2, 2, 1]).random_params(seed=0)
    m = model_of(p, None, None)
    rng = np.random.default_rng(0)
    real = [KnownLaw(name=n, kind=k, _terms=t, _flatten=m.flatten) for n, k, t in m.laws]
    assert _verify_laws(m, real, rng)
    fake = KnownLaw(
        name="w^2", kind="x", _terms=((0, 0, 1),), _flatten=m.flatten
    )  # one weight squared
    assert not _verify_laws(m, real + [fake], rng)
    # a block law of a block that is not active at the data is not conserved there
    q = [(np.eye(2), np.zeros(2)), (np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]
    mq = model_of(q, None, [[1.0, -1.0], [-1.0, 1.0]])
    from neuromanifold.relu._flow.flow import block_law_terms

    ((name, terms),) = block_law_terms((2, 2, 2, 1), 2, [0, 1])
    assert not _verify_laws(
        mq, [KnownLaw(name=name, kind="block", _terms=terms, _flatten=mq.flatten)], rng
    )


def test_a_bracket_that_cancels_in_floats_adds_no_direction():
    """One of two data points active: the fields are grad f(x_1) and e_b2, whose bracket
    is 0 (grad f(x_1) does not depend on b2). In floats the two bracket terms cancel to a
    rounding residue, which must not count as a third direction."""
    p = ReLUNet([1, 1, 1]).random_params(seed=3)
    X = np.random.default_rng(3).standard_normal((2, 1))
    exact = conservation_laws(p, data=X, seed=3)
    floats = conservation_laws(p, data=X, exact=False, seed=3)
    assert exact.count == floats.count == 2
    assert floats.lie_rank_trace == exact.lie_rank_trace == (2, 2)
