"""The public API as a whole: every exported name documented, every result a frozen
dataclass that serializes to JSON and prints on one short line, and the shared checks
of boolean options, seeds and tolerances at the entry points."""

import dataclasses
import importlib
import inspect
import json
import pkgutil

import numpy as np
import pytest

import neuromanifold as nm
from neuromanifold import InputError, NeuromanifoldError, Result, flows, linear, relu
from neuromanifold._validation import check_bool
from neuromanifold.relu import symmetries as S
from tests.support.results import build_results, more_results, nested_results  # noqa: E402

MODULES = [
    "neuromanifold",
    "neuromanifold.relu",
    "neuromanifold.linear",
    "neuromanifold.flows",
    "neuromanifold.ntk",
    "neuromanifold.fibers",
    "neuromanifold.exact",
    "neuromanifold.reproduce",
    "neuromanifold.io",
    "neuromanifold.sweep",
    "neuromanifold.report",
    "neuromanifold.conservation",
    "neuromanifold.relu.symmetries",
    "neuromanifold.relu.layers",
]

PUBLIC = sorted({(m, n) for m in MODULES for n in importlib.import_module(m).__all__})


def _all_modules():
    yield nm
    for info in pkgutil.walk_packages(nm.__path__, "neuromanifold."):
        if not info.name.endswith("__main__"):  # running it would start the CLI
            yield importlib.import_module(info.name)


def _result_classes():
    found = set()
    for mod in _all_modules():
        for obj in vars(mod).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, Result)
                and obj.__module__.startswith("neuromanifold")
            ):
                found.add(obj)
    return sorted(found, key=lambda c: (c.__module__, c.__name__))


# ------------------------------------------------------------------ (a) docstrings
@pytest.mark.parametrize("module,name", PUBLIC)
def test_every_public_name_is_documented(module, name):
    obj = getattr(importlib.import_module(module), name)
    assert (inspect.getdoc(obj) or "").strip(), f"{module}.{name} has no docstring"


def test_public_methods_and_properties_are_documented():
    missing = []
    for module, name in PUBLIC:
        obj = getattr(importlib.import_module(module), name)
        if not inspect.isclass(obj) or issubclass(obj, BaseException):
            continue
        for klass in obj.__mro__:
            if not klass.__module__.startswith("neuromanifold"):
                continue
            for attr, value in vars(klass).items():
                if attr.startswith("_"):
                    continue
                func = (
                    value.fget if isinstance(value, property) else getattr(value, "__func__", value)
                )
                if (
                    inspect.isfunction(func)
                    and func.__name__ != "<lambda>"
                    and not (func.__doc__ or "").strip()
                ):
                    missing.append(f"{obj.__name__}.{attr}")
    assert not missing, f"undocumented public methods/properties: {sorted(set(missing))}"


def test_public_functions_document_args_and_returns():
    """Module-level functions of the main namespaces state their Args and Returns."""
    missing = []
    for module in (
        "neuromanifold",
        "neuromanifold.relu",
        "neuromanifold.linear",
        "neuromanifold.flows",
        "neuromanifold.ntk",
        "neuromanifold.fibers",
        "neuromanifold.reproduce",
    ):
        mod = importlib.import_module(module)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                doc = inspect.getdoc(obj) or ""
                takes = bool(inspect.signature(obj).parameters)
                if ("Args:" not in doc and takes) or "Returns:" not in doc:
                    missing.append(f"{module}.{name}")
    assert not missing, f"no Args:/Returns: section: {missing}"


# ------------------------------------------------------------------ (b) frozen results
def test_result_classes_found():
    names = {c.__name__ for c in _result_classes()}
    assert {"Fiber", "Equivalence", "Regions", "GradientFlowResult", "Row"} <= names


@pytest.mark.parametrize("klass", _result_classes(), ids=lambda c: c.__name__)
def test_every_result_is_a_frozen_dataclass(klass):
    assert dataclasses.is_dataclass(klass)
    assert klass.__dataclass_params__.frozen, f"{klass.__name__} is not frozen"
    assert "__repr__" not in vars(klass) or klass.__repr__ is Result.__repr__


# ------------------------------------------------------------------ (c) real instances
@pytest.fixture(scope="module")
def results():
    """One real instance of every result type, from small real computations."""
    return build_results()


@pytest.fixture(scope="module")
def all_instances(results):
    return nested_results(results + more_results())


def test_every_public_result_type_has_an_instance(all_instances):
    public = [getattr(importlib.import_module(m), n) for m, n in PUBLIC]
    wanted = {
        c for c in _result_classes() if c in public and c is not Result and c is not S.Symmetry
    }  # the abstract base of the symmetry classes
    have = {c for r in all_instances for c in type(r).__mro__}  # a route builds its question
    assert not wanted - have, (
        f"no real instance built of {sorted(c.__name__ for c in wanted - have)}"
    )


def test_results_serialize_to_json_and_print_on_one_short_line(all_instances):
    for r in all_instances:
        d = r.to_dict()
        public = {f.name for f in dataclasses.fields(r) if not f.name.startswith("_")}
        assert public <= set(d), f"{type(r).__name__}.to_dict() misses {public - set(d)}"
        text = json.dumps(d)  # raises on anything not JSON-serializable
        assert json.loads(text) == d
        line = repr(r)
        assert "\n" not in line, f"{type(r).__name__} repr spans lines: {line!r}"
        assert line.startswith(type(r).__name__ + "(") and len(line) <= 500, (
            f"{type(r).__name__} repr is {len(line)} chars: {line[:200]}..."
        )
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(r, dataclasses.fields(r)[0].name, None)


def test_results_carry_the_computed_values(results):
    """The instances are real computations, not placeholders."""
    by_type = {}
    for r in results:
        by_type.setdefault(type(r).__name__, []).append(r)
    assert by_type["JacobianRank"][0].is_smooth
    assert by_type["NTKDependence"][0].independent
    eq = by_type["Equivalence"]
    assert eq[0].equivalent and not eq[1].equivalent and eq[1].witness is not None
    assert [row.computed for row in by_type["Row"]] == ["dependent", "independent"]
    assert not by_type["Genericity"][1].generic


# ------------------------------------------------------------------ boolean options
def test_check_bool():
    assert check_bool(True, "x") is True and check_bool(np.False_, "x") is False
    for bad in ("yes", 1, 0, None, 1.0, np.array([True]), "False"):
        with pytest.raises(InputError, match=r"flag must be True or False; got"):
            check_bool(bad, "flag")
    with pytest.raises(InputError, match="'yes'"):  # echoes the value
        check_bool("yes", "progress")


@pytest.fixture(scope="module")
def small():
    conv = nm.LinearConvNet([2, 2], [2])
    theta = conv.random_params(0)
    fc = nm.LinearFCNet([2, 2, 2])
    tf = fc.random_params(0)
    p = relu.ReLUNet([2, 3, 1]).random_params(0)
    return dict(
        conv=conv,
        theta=theta,
        v=conv.end_to_end(theta),
        delta=conv.invariants(theta),
        fc=fc,
        tf=tf,
        p=p,
        loss=nm.QuadraticLoss(np.eye(4), np.ones(4)),
        orthant=relu.orthant_fiber(p),
    )


BOOL_OPTIONS = {
    "LinearConvNet.rank(exact)": ("exact", lambda s, **k: s["conv"].rank(s["theta"], **k)),
    "LinearConvNet.is_smooth(exact)": (
        "exact",
        lambda s, **k: s["conv"].is_smooth(s["theta"], **k),
    ),
    "LinearConvNet.fiber(progress)": (
        "progress",
        lambda s, **k: s["conv"].fiber(s["v"], s["delta"], **k),
    ),
    "LinearFCNet.fiber(progress)": (
        "progress",
        lambda s, **k: s["fc"].fiber(
            s["fc"].end_to_end(s["tf"]), s["fc"].invariants(s["tf"]), num_starts=1, **k
        ),
    ),
    "gradient_flow(progress)": (
        "progress",
        lambda s, **k: nm.gradient_flow(s["conv"], s["theta"], s["loss"], 0.1, num_times=2, **k),
    ),
    "riemannian_flow(progress)": (
        "progress",
        lambda s, **k: nm.riemannian_flow(
            s["conv"], s["v"], s["delta"], s["loss"], 0.1, lift=s["theta"], num_times=2, **k
        ),
    ),
    "convergence_study(progress)": (
        "progress",
        lambda s, **k: nm.convergence_study(s["conv"], 1, t_final=0.1, max_time=0.1, **k),
    ),
    "convergence_study(exact)": (
        "exact",
        lambda s, **k: nm.convergence_study(s["conv"], 1, t_final=0.1, max_time=0.1, **k),
    ),
    "reproduce_linear(quick)": ("quick", lambda s, **k: nm.reproduce_linear(claims=[], **k)),
    "reproduce_linear(progress)": ("progress", lambda s, **k: nm.reproduce_linear(claims=[], **k)),
    "default_linear_claims(quick)": (
        "quick",
        lambda s, **k: nm.reproduce.default_linear_claims(**k),
    ),
    "regions(progress)": ("progress", lambda s, **k: relu.regions(s["p"], **k)),
    "bent_hyperplanes(progress)": ("progress", lambda s, **k: relu.bent_hyperplanes(s["p"], **k)),
    "functional_dimension(progress)": (
        "progress",
        lambda s, **k: relu.functional_dimension(s["p"], **k),
    ),
    "equivalent(progress)": ("progress", lambda s, **k: relu.equivalent(s["p"], s["p"], **k)),
    "genericity(progress)": ("progress", lambda s, **k: relu.genericity(s["p"], **k)),
    "orthant_fiber(degenerate)": ("degenerate", lambda s, **k: relu.orthant_fiber(s["p"], **k)),
    "orthant_fiber(progress)": ("progress", lambda s, **k: relu.orthant_fiber(s["p"], **k)),
    "OrthantFiber.sample(exact)": ("exact", lambda s, **k: s["orthant"].sample(0, **k)),
    "OrthantFiber.sample(permute)": ("permute", lambda s, **k: s["orthant"].sample(0, **k)),
    "FiberPiece.sample(exact)": ("exact", lambda s, **k: s["orthant"].pieces[0].sample(0, **k)),
    "plot_arrangement(show_hidden)": (
        "show_hidden",
        lambda s, **k: relu.plot_arrangement(s["p"], **k),
    ),
    "plot_arrangement(annotate)": ("annotate", lambda s, **k: relu.plot_arrangement(s["p"], **k)),
    "plot_arrangement(legend)": ("legend", lambda s, **k: relu.plot_arrangement(s["p"], **k)),
}


@pytest.mark.parametrize("label", sorted(BOOL_OPTIONS))
def test_boolean_options_reject_truthy_non_bools(small, label):
    name, call = BOOL_OPTIONS[label]
    for bad in ("yes", 1):
        with pytest.raises(InputError, match=rf"{name} must be True or False; got {bad!r}"):
            call(small, **{name: bad})


def test_boolean_options_accept_numpy_bools(small):
    assert small["conv"].rank(small["theta"], exact=np.True_).certified
    assert relu.regions(small["p"], progress=np.False_).num_regions >= 1


# ------------------------------------------------------------------ seeds and tolerances
SEEDED = {
    "LinearConvNet.random_params": lambda s, **k: s["conv"].random_params(**k),
    "LinearFCNet.balanced_params": lambda s, **k: s["fc"].balanced_params(**k),
    "ReLUNet.random_params": lambda s, **k: relu.ReLUNet([2, 3, 1]).random_params(**k),
    "LinearConvNet.fiber": lambda s, **k: s["conv"].fiber(s["v"], s["delta"], **k),
    "LinearFCNet.fiber": lambda s, **k: s["fc"].fiber(
        s["fc"].end_to_end(s["tf"]), s["fc"].invariants(s["tf"]), num_starts=1, **k
    ),
    "ShallowReLUMLP.with_random_inputs": lambda s, **k: nm.ShallowReLUMLP.with_random_inputs(
        [2, 2, 1], **k
    ),
    "convergence_study": lambda s, **k: nm.convergence_study(
        s["conv"], 1, t_final=0.1, max_time=0.1, **k
    ),
    "reproduce_linear": lambda s, **k: nm.reproduce_linear(claims=[], **k),
    "random_regression_data": lambda s, **k: linear.random_regression_data(s["conv"], **k),
    "OrthantFiber.sample": lambda s, **k: s["orthant"].sample(**k),
    "exact.real_irreducible": lambda s, **k: nm.exact.real_irreducible(
        s["conv"].polynomial(s["theta"]), **k
    ),
    "exact.absolute_factor_count": lambda s, **k: nm.exact.absolute_factor_count(
        s["conv"].polynomial(s["theta"]), **k
    ),
}


@pytest.mark.parametrize("label", sorted(SEEDED))
def test_wrong_type_seed_is_an_input_error(small, label):
    for bad in ("x", 1.5, True, -1):
        with pytest.raises(InputError, match="seed"):
            SEEDED[label](small, seed=bad)


TOLERANT = {
    "LinearConvNet.rank": lambda s, **k: s["conv"].rank(s["theta"], **k),
    "LinearConvNet.fiber": lambda s, **k: s["conv"].fiber(s["v"], s["delta"], **k),
    "LinearFCNet.fiber": lambda s, **k: s["fc"].fiber(
        s["fc"].end_to_end(s["tf"]), s["fc"].invariants(s["tf"]), num_starts=1, **k
    ),
    "ntk_dependence": lambda s, **k: nm.ntk_dependence(s["conv"], s["theta"], **k),
    "convergence_study": lambda s, **k: nm.convergence_study(
        s["conv"], 1, t_final=0.1, max_time=0.1, **k
    ),
    "reproduce_linear": lambda s, **k: nm.reproduce_linear(claims=[], **k),
    "lift_to_fiber": lambda s, **k: flows.lift_to_fiber(
        s["conv"], s["v"], s["delta"], s["theta"], **k
    ),
    "path_lifting_check": lambda s, **k: linear.path_lifting_check(
        [np.ones((2, 2)), np.ones(2)], np.ones((3, 2)), **k
    ),
}


@pytest.mark.parametrize("label", sorted(TOLERANT))
def test_bad_tol_is_an_input_error(small, label):
    for bad in (0.0, -1.0, float("nan"), float("inf"), "a", True):
        with pytest.raises(InputError, match="tol"):
            TOLERANT[label](small, tol=bad)


@pytest.mark.parametrize(
    "call",
    [
        lambda s, **k: relu.arrangements_equal(s["p"], s["p"], **k),
        lambda s, **k: s["orthant"].contains(s["p"], **k),
        lambda s, **k: relu.as_domain("orthant", 2).contains([[1.0, 1.0]], **k),
    ],
)
def test_nonnegative_tolerances(small, call):
    """Where ``tol = 0`` means an exact comparison, 0 is accepted and negative or
    non-finite values are not."""
    assert bool(np.all(call(small, tol=0.0)))
    for bad in (-1.0, float("nan"), "a", True):
        with pytest.raises(
            InputError,
            match="tol must be a (nonnegative finite number|relative "
            "tolerance, a finite number in \\[0, 1\\))",
        ):
            call(small, tol=bad)


def test_domain_contains_checks_its_points():
    with pytest.raises(NeuromanifoldError, match=r"shape \(N, 2\)"):
        relu.as_domain("orthant", 2).contains([[1.0, 1.0, 1.0]])
    with pytest.raises(NeuromanifoldError, match="finite"):
        relu.as_domain("orthant", 2).contains([[np.nan, 1.0]])


def test_fiber_options_with_a_given_lift_are_an_error(small):
    """Options for ``net.fiber`` used to be silently ignored when the lift was given."""
    s = small
    with pytest.raises(InputError, match=r"fiber options .* \['seed'\]"):
        nm.riemannian_flow(s["conv"], s["v"], s["delta"], s["loss"], 0.1, lift=s["theta"], seed="x")
    with pytest.raises(InputError, match=r"fiber options .* \['num_starts'\]"):
        flows.compare_with_parameter_flow(
            s["conv"], s["theta"], s["loss"], 0.1, lift=s["theta"], num_starts=3
        )
    with pytest.raises(InputError, match=r"fiber options .* \['tol'\]"):
        nm.compare_lifts(
            s["conv"], s["v"], s["delta"], s["loss"], 0.1, lifts=[s["theta"]], tol=1e-3
        )


def test_random_regression_data_takes_seed_and_its_former_name_rng(small):
    X1, Y1 = linear.random_regression_data(small["conv"], seed=4)
    with pytest.warns(DeprecationWarning, match="rng=.*use seed="):
        X2, Y2 = linear.random_regression_data(small["conv"], rng=4)
    X3, _ = linear.random_regression_data(small["conv"], 4)
    assert np.array_equal(X1, X2) and np.array_equal(Y1, Y2) and np.array_equal(X1, X3)
    with pytest.raises(InputError, match="pass seed= only"):
        linear.random_regression_data(small["conv"], seed=1, rng=2)


# ------------------------------------------------------------------ one convention
# Options (anything with a default that tunes a computation) are keyword-only, and a
# seed defaults to 0, everywhere, methods of result classes included. A random
# generator's seed may stay positional (it is the method's only input). One name per
# concept: the names on the left are spelled as on the right in every public signature.
_OPTION_NAMES = {
    "seed",
    "tol",
    "progress",
    "num_starts",
    "num_times",
    "method",
    "exact",
    "max_iter",
    "walk_steps",
    "margin",
    "num_inputs",
    "rtol",
    "atol",
    "lift_tol",
    "max_lift_residual",
    "quick",
    "degenerate",
    "max_types",
    "min_prec",
    "prec",
    "rel",
    "num_samples",
    "max_time",
    "time_limit",
    "max_regions",
    "workers",
    "min_thickness",
}
_SEED_POSITIONAL_OK = {
    "random_params",
    "balanced_params",
    "sample",
    "sample_one",
    "random_regression_data",
}
_ONE_NAME = {
    "t_end": "t_final",
    "trials": "num_samples",
    "starts": "num_starts",
    "samples": "num_samples",
    "n_samples": "num_samples",
    "n_starts": "num_starts",
    "rng": "seed",
    "random_state": "seed",
    "timeout": "time_limit",
    "verbose": "progress",
}


def _public_callables():
    seen = set()
    for module in MODULES:
        mod = importlib.import_module(module)
        short = module.split(".")[-1] if module != "neuromanifold" else "nm"
        for name in mod.__all__:
            obj = getattr(mod, name)
            if (
                id(obj) in seen
                or inspect.ismodule(obj)
                or (inspect.isclass(obj) and issubclass(obj, BaseException))
            ):
                continue
            seen.add(id(obj))
            if inspect.isfunction(obj):
                yield f"{short}.{name}", name, obj
            elif inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    func = getattr(value, "__func__", value)
                    if not attr.startswith("_") and inspect.isfunction(func):
                        yield f"{name}.{attr}", attr, func


def _convention_violations():
    out = []
    for label, name, func in _public_callables():
        for p in inspect.signature(func).parameters.values():
            if p.name in _ONE_NAME:
                out.append(f"{label}({p.name}): call it {_ONE_NAME[p.name]}")
            if p.name not in _OPTION_NAMES or p.default is inspect.Parameter.empty:
                continue
            if p.kind is not inspect.Parameter.KEYWORD_ONLY and not (
                # a sampler's count and seed may come first, as numpy's size and seed
                p.name in ("seed", "num_samples") and name in _SEED_POSITIONAL_OK
            ):
                out.append(f"{label}({p.name})")
            if p.name == "seed" and p.default != 0:
                out.append(f"{label}(seed={p.default!r})")
    return out


def test_the_convention_test_sees_result_methods():
    labels = {label for label, _, _ in _public_callables()}
    assert "OrthantFiber.sample" in labels and "FiberFamily.sample_one" in labels


@pytest.mark.parametrize("violation", _convention_violations() or ["none"])
def test_options_are_keyword_only_and_seeds_default_to_0(violation):
    assert violation == "none", f"option not keyword-only or seed default not 0: {violation}"


@pytest.mark.parametrize(
    "call, old, new",
    [
        (
            lambda **kw: relu.estimate_regions(
                [(np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))], **kw
            ),
            "samples",
            "num_samples",
        ),
        (
            lambda **kw: relu.search_symmetries(
                nm.ReLUNet([2, 2, 1, 1]).random_params(seed=0), initial=[], **kw
            ),
            "starts",
            "num_starts",
        ),
    ],
)
def test_a_renamed_keyword_still_works_with_a_deprecation_warning(call, old, new):
    with pytest.warns(DeprecationWarning, match=f"{old}=.*use {new}="):
        a = call(**{old: 0 if old == "starts" else 100})
    b = call(**{new: 0 if old == "starts" else 100})
    assert type(a) is type(b)
    with pytest.raises(nm.InputError, match=f"pass {new}= only"):
        call(**{old: 1, new: 1})


def test_relu_gradient_flow_takes_t_final_like_every_other_flow():
    p = nm.ReLUNet([1, 2, 1]).random_params(seed=0)
    X, Y = np.array([[0.5], [-1.0]]), np.array([[1.0], [0.0]])
    new = relu.gradient_flow(p, X, Y, t_final=0.1, num_times=3)
    with pytest.warns(DeprecationWarning, match="t_end=.*use t_final="):
        old = relu.gradient_flow(p, X, Y, t_end=0.1, num_times=3)
    assert np.array_equal(new.loss, old.loss)


@pytest.mark.parametrize(
    "make",
    [
        lambda: nm.ReLUNet([2, 10**9, 1]),
        lambda: nm.ReLUNet([2, 10**30, 1]),
        lambda: nm.LinearFCNet([10**9, 2]),
        lambda: nm.LinearConvNet([10**8, 2]),
    ],
)
def test_a_network_too_large_to_allocate_is_refused_with_the_limit(make):
    with pytest.raises(nm.ArchitectureError, match="more than the limit of 100,000,000"):
        make()


def test_mnist_scale_widths_are_accepted():
    assert nm.ReLUNet([784, 256, 128, 10]).widths == (784, 256, 128, 10)


@pytest.mark.parametrize(
    "name",
    [
        "neuromanifold.relu",
        "neuromanifold.flows",
        "neuromanifold.exact",
        "neuromanifold.linear",
        "neuromanifold.io",
        "neuromanifold.fibers",
    ],
)
def test_a_public_module_shows_its_all_and_its_documented_submodules_only(name):
    """Names the library's other packages need live behind each package's _library door,
    so tab completion shows the API and nothing else."""
    import importlib
    import types

    module = importlib.import_module(name)
    shown = {n for n in dir(module) if not n.startswith("_")}
    submodules = {n for n in shown if isinstance(getattr(module, n), types.ModuleType)}
    assert shown - submodules == set(module.__all__) - submodules
    assert submodules <= {"symmetries", "layers"}
