"""The digits example (examples/digits.py) in its quick version, and the claims it prints."""

import importlib.util
import os

import numpy as np
import pytest

from neuromanifold import relu
from neuromanifold.relu import symmetries

pytest.importorskip("sklearn")

from tests.support.common import ROOT  # noqa: E402

EXAMPLES = str(ROOT / "examples")


def _load_digits_example():
    spec = importlib.util.spec_from_file_location(
        "digits_example", os.path.join(EXAMPLES, "digits.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def example():
    return _load_digits_example()


@pytest.fixture(scope="module")
def report(example, tmp_path_factory):
    return example.run(quick=True, out_dir=str(tmp_path_factory.mktemp("digits")), fd_budget=300)


@pytest.fixture(scope="module")
def nets(example, report):
    from neuromanifold import io

    p = io.load(os.path.join(report["out_dir"], "digits.npz")).params
    q = io.load(os.path.join(report["out_dir"], "copy.npz")).params
    f = io.load(os.path.join(report["out_dir"], "finetuned.npz")).params
    return p, q, f


def test_trained_and_round_tripped(report):
    assert report["architecture"] == (64, 6, 12, 10)
    assert report["accuracy"] > 0.5
    assert report["roundtrip_difference"] == 0.0
    assert report["logit_difference"] == 0.0
    assert set(report["times"]) >= {"train", "identifiability", "canonical form"}


def test_identifiability_matches_sign_patterns(report, nets):
    p = nets[0]
    ident = report["identifiability"]
    S = np.asarray(ident.sign_patterns)
    assert S.shape == (12, 7)
    dead = tuple(j for j in range(S.shape[0]) if not (S[j] > 0).any())
    linear = tuple(j for j in range(S.shape[0]) if (S[j] != 0).any() and not (S[j] < 0).any())
    assert ident.dead_neurons == dead
    assert ident.linear_neurons == linear
    assert ident.identifiable == (not dead and not linear and not ident.hidden_hyperplanes)
    # the signs are those of [W2 | b2]
    W2, b2 = p[1]
    M = np.hstack([W2, b2[:, None]])
    big = np.abs(M) > 1e-6 * np.abs(M).max()
    assert np.array_equal(np.sign(M)[big], S[big])
    # a dead neuron never fires on inputs of the orthant of layer-1 outputs
    X = np.random.default_rng(0).uniform(-5, 5, (500, 64))
    H2 = relu.forward(p[:2], X)
    for j in dead:
        assert np.all(H2[:, j] == 0)


def test_canonical_form_is_a_point_of_the_same_function(report):
    assert "canonical_refused" not in report
    assert report["canonical_function_difference"] < 1e-9
    assert report["canonical_copy_difference"] < 1e-9
    eb = report["bottleneck_copy"]  # the polynomial-time test recovers the symmetry
    assert eb.applies and eb.equivalent and eb.certified and eb.symmetry


def test_permuted_copy_recognized_with_its_symmetry(report, nets):
    p, q, _ = nets
    eq = report["equivalence_copy"]
    assert eq.equivalent and eq.certified and eq.symmetry
    image = symmetries.apply_sequence(list(eq.symmetry), p)
    for (Wa, ba), (Wb, bb) in zip(image, q):
        np.testing.assert_allclose(Wa, Wb, atol=1e-9 * max(1, np.abs(Wb).max()))
        np.testing.assert_allclose(ba, bb, atol=1e-9 * max(1, np.abs(bb).max()))
    assert report["cli_copy"]["equivalent"] is True


def test_finetuned_copy_not_equivalent_with_witness(report, nets):
    p, _, f = nets
    assert report["finetune_param_change"] > 0
    eq = report["equivalence_finetuned"]
    assert not eq.equivalent and eq.witness is not None
    w = np.asarray(eq.witness, dtype=float)[None]
    diff = float(np.abs(relu.forward(p, w) - relu.forward(f, w)).max())
    assert diff == pytest.approx(eq.witness_difference, rel=1e-6)
    assert diff > eq.tol * eq.scale * max(1.0, float(np.abs(w).max()))
    assert report["cli_finetuned"]["equivalent"] is False


def test_functional_dimension_of_the_trained_network(report):
    # sampled regions and MILPs, no enumeration (examples/README.md)
    rank, bound, method, milps, certified = report["functional_dimension"]
    assert 0 < rank <= bound and method in ("sampling", "milp")
    assert certified == (rank == bound)
