"""Identifiability of three-layer bottleneck networks: the sign-pattern fast path against the
ground truth (exact functional dimension for continuous freedom, the exact equivalence
engine for the witnesses), on parameters drawn to hit each sign pattern."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuromanifold as nm
from neuromanifold import InputError, relu
from neuromanifold.relu import identifiability
from neuromanifold.relu.symmetries import Flip, HidingTranslation, RampFlip
from tests.support.symmetry import bottleneck, ground_truth_equivalent, same_orbit

ARCHS = [(2, 1, 2, 1), (2, 2, 2, 1), (2, 2, 3, 1), (3, 2, 2, 2), (3, 3, 2, 1), (2, 1, 3, 2)]


def _draw(rng, widths, dyadic):
    d, n1, n2, n3 = widths
    if rng.random() < 0.25:
        return bottleneck(rng, widths, dyadic=dyadic)
    opts = (
        (["mixed"] * 3 if n1 > 1 else ["ramp"] * 3)
        + ["dead", "linear"]
        + [("hiding", i) for i in range(n1)]
    )
    kinds = [opts[k] for k in rng.integers(0, len(opts), n2)]
    return bottleneck(rng, widths, kinds=kinds, dyadic=dyadic)


def _continuous(r):
    return bool(
        r.dead_neurons
        or r.linear_neurons
        or any(h.interval != (0.0, 0.0) for h in r.hidden_hyperplanes)
    )


@settings(max_examples=30)
@given(st.integers(0, 2**31), st.sampled_from(ARCHS), st.booleans())
def test_fast_path_matches_ground_truth(seed, widths, dyadic):
    rng = np.random.default_rng(seed)
    P = _draw(rng, widths, dyadic)
    r = identifiability(P)
    fd = relu.functional_dimension(P)
    if not r.generic:
        assert r.genericity_failures
        return
    # continuous freedom <=> the exact functional dimension is below P - #hidden
    assert _continuous(r) == (fd.rank < fd.bound), (r.reasons, fd)
    if r.identifiable:
        assert fd.at_bound and not r.witnesses and not r.flips
    else:
        assert r.witnesses and all(w.applies(P, tol=0) for w in r.witnesses) and r.certified
        # a witness: an exactly valid symmetry, equivalent by the ground truth and off the
        # permutation-scaling orbit
        w = r.witnesses[int(rng.integers(len(r.witnesses)))]
        Q = w.apply(P)
        assert not same_orbit(P, Q)
        assert ground_truth_equivalent(P, Q)


def test_each_sign_pattern(rng):
    P = bottleneck(rng, (3, 2, 4, 1), kinds=["mixed", "dead", "linear", "mixed"])
    r = identifiability(P)
    assert r.generic and not r.identifiable and r.certified
    assert r.dead_neurons == (1,) and r.linear_neurons == (2,) and r.hidden_hyperplanes == ()
    assert r.row_kinds == ("mixed", "dead", "linear", "mixed")
    assert any("dead" in s for s in r.reasons) and any("always active" in s for s in r.reasons)
    # one live row hiding neuron 1 plus a dead row: hidden with flips
    P = bottleneck(rng, (3, 3, 2, 1), kinds=[("hiding", 1), "dead"])
    r = identifiability(P)
    (h,) = r.hidden_hyperplanes
    assert h.neuron == 1 and h.hiding == (0,) and h.flippable == (0, 2)
    assert h.interval == HidingTranslation(1, 0.0).applies(P).valid_set
    assert set(r.flips) == {Flip(1, (0,)), Flip(1, (2,))}
    # two live rows hiding 0 with different ratios: hidden, but no flips
    P = bottleneck(rng, (2, 2, 2, 1), kinds=[("hiding", 0), ("hiding", 0)])
    r = identifiability(P)
    assert [h.hiding for h in r.hidden_hyperplanes] == [(0, 1)] and r.flips == ()
    # n1 = 1, ramps only: identifiable up to the discrete ramp flip
    P = bottleneck(rng, (2, 1, 2, 1), kinds=["ramp", "ramp"])
    r = identifiability(P)
    top = int(np.argmax(P[1][1] / -P[1][0][:, 0]))
    assert r.generic and not r.identifiable and r.flips == (RampFlip(top),)
    assert relu.functional_dimension(P).at_bound  # discrete only
    # a ramp and a hiding row (n1 = 1): identifiable
    P = bottleneck(rng, (2, 1, 2, 1), kinds=["ramp", ("hiding", 0)])
    assert identifiability(P).identifiable
    # mixed rows only: identifiable
    r = identifiability(bottleneck(rng, (3, 3, 3, 1), kinds=["mixed"] * 3))
    assert r.identifiable and r.generic and "permutation-scaling orbit" in r.reasons[0]


def test_genericity_failures(rng):
    P = bottleneck(rng, (3, 2, 3, 1), kinds=["mixed"] * 3)
    P[1][0][0, 1] = 0.0
    assert any(f.startswith("nonzero signs") for f in identifiability(P).genericity_failures)
    P = bottleneck(rng, (3, 2, 3, 1), kinds=["mixed"] * 3)
    P[1][0][2], P[1][1][2] = -2 * P[1][0][0], -2 * P[1][1][0]
    assert any(f.startswith("distinct hyperplanes") for f in identifiability(P).genericity_failures)
    P = bottleneck(rng, (3, 2, 3, 1), kinds=["mixed"] * 3)
    P[2][0][0, 1] = 0.0
    assert any(f.startswith("live outputs") for f in identifiability(P).genericity_failures)
    # two ramps whose kinks at the orthant's corner cancel (found by the ground truth: the
    # functional dimension drops although the sign patterns say identifiable-up-to-flip)
    P = [
        (np.array([[-1.5, 2.0]]), np.array([-1.0])),
        (np.array([[-1.0], [-0.75]]), np.array([0.75, 0.75])),
        (np.array([[-1.5, 2.0]]), np.array([1.0])),
    ]
    r = identifiability(P)
    assert not r.generic and r.genericity_failures[0].startswith("visible kinks")
    assert not relu.functional_dimension(P).at_bound
    # not a bottleneck
    P = bottleneck(rng, (3, 2, 2, 1))
    P[0][0][1] = 2 * P[0][0][0]
    r = identifiability(P)
    assert not r.bottleneck and not r.generic and "not a bottleneck" in r.reasons[-1]
    wide = [
        (rng.standard_normal((3, 2)), rng.standard_normal(3)),
        (rng.standard_normal((2, 3)), rng.standard_normal(2)),
        (np.ones((1, 2)), np.zeros(1)),
    ]
    assert not identifiability(wide).bottleneck


def test_tolerance_and_errors(rng):
    P = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -1.0]]), np.array([1e-13])),
        (np.ones((1, 1)), np.zeros(1)),
    ]
    loose, exact = identifiability(P), identifiability(P, tol=0)
    assert loose.hidden_hyperplanes and not loose.generic  # the bias counts as zero
    assert not exact.hidden_hyperplanes and exact.generic  # the bias is positive
    assert exact.identifiable and exact.tol == 0.0
    with pytest.raises(InputError, match="tol"):
        identifiability(P, tol=2)
    with pytest.raises(InputError, match="exact_genericity"):
        identifiability(P, exact_genericity="yes")
    deep = identifiability(P[:2] + P[2:] * 2)  # other depths: no characterization, no True
    assert type(deep).__name__ == "DeepIdentifiability" and deep.identifiable is not True
    r = identifiability(
        bottleneck(rng, (2, 2, 2, 1), kinds=["mixed", "mixed"]), exact_genericity=True
    )
    assert "exact genericity" in r.method
    d = r.to_dict()
    assert d["identifiable"] == r.identifiable and isinstance(d["sign_patterns"], list)
    assert r.describe().startswith(f"{r.verdict} (bottleneck=")
    assert "Identifiability(identifiable=" in repr(r)


def test_validation_script_quick(capsys):
    from tests.support.common import load_benchmark

    rows = load_benchmark("validate_identifiability").main(["--quick", "--seed", "3"])
    assert len(rows) == 12
    assert all(r["agree"] for r in rows if r["generic"])
    assert all(r["witness"] in (None, True) for r in rows)
    assert "fast path == functional dimension" in capsys.readouterr().out


def test_wide_faces_are_sampled(rng):
    P = bottleneck(rng, (8, 5, 20, 1), kinds=["mixed"] * 20)
    P[2][0][0, :10] = np.abs(P[2][0][0, :10])
    P[2][0][0, 10:] = -np.abs(P[2][0][0, 10:])  # jumps of both signs: no shortcut
    r = identifiability(P)
    # a genericity condition only sampled is not proven: undecided, never True
    assert r.generic and r.identifiable is None and "visible kinks sampled" in r.method
    assert "only sampled" in r.undecided_reason
    # same signs everywhere: a functional separates the jumps, nothing to enumerate
    P[2][0][0] = np.abs(P[2][0][0])
    P[1][0][:] = np.abs(P[1][0]) * np.array([1.0, -1.0, 1.0, -1.0, 1.0])  # signed columns
    assert "sampled" not in identifiability(P).method


def test_a_non_bottleneck_without_a_symmetry_is_undecided():
    p = nm.ReLUNet([2, 16, 16, 1]).random_params(seed=0)
    r = identifiability(p)
    assert r.identifiable is None and not r.bottleneck and not r.certified
    assert "not a bottleneck" in r.undecided_reason and r.verdict == "undecided"
    assert not any("permutation-scaling orbit" in x for x in r.reasons)


def test_the_reason_never_denies_a_hiding_row_it_lists():
    """net3 of the README has a row of the hiding kind whose hyperplane another row sees;
    the reason speaks of hidden hyperplanes, not of hiding rows."""
    r = identifiability(nm.ReLUNet([4, 3, 4, 1]).random_params(seed=3))
    assert "hiding" in r.row_kinds and r.identifiable is True
    assert not r.hidden_hyperplanes and not any("hiding" in x for x in r.reasons)


@settings(max_examples=40)
@given(
    widths=st.sampled_from(
        [(2, 2, 2, 1), (3, 2, 3, 1), (2, 3, 2, 1), (3, 3, 4, 2), (1, 2, 2, 1), (2, 4, 3, 1)]
    ),
    seed=st.integers(0, 10_000),
)
def test_true_only_where_the_characterization_applies_false_only_with_a_witness(widths, seed):
    """The three-valued rule: True needs a bottleneck with every genericity condition
    checked and holding (and then the exact functional dimension is at its bound, the
    ground truth of local identifiability); False needs a witness that applies; None
    carries its reason."""
    p = nm.ReLUNet(list(widths)).random_params(seed=seed)
    r = identifiability(p)
    if r.identifiable is True:
        assert r.bottleneck and r.generic and "sampled" not in r.method
        fd = nm.relu.functional_dimension(p, tol=0)
        assert fd.rank == fd.bound
    elif r.identifiable is False:
        assert any(w.applies(p, tol=r.tol).applies for w in r.witnesses)
        assert r.undecided_reason is None
    else:
        assert r.undecided_reason and not r.certified


def test_sampled_face_patterns_survive_cancellation():
    from neuromanifold.relu._identifiability.three_layer import _face_patterns, _face_sample

    rng = np.random.default_rng(0)
    W2, b2 = rng.standard_normal((11, 4)), rng.standard_normal(11)
    W2[0], b2[0] = [1e8, 1e-8, 0.0, 0.0], 0.0  # z_0's term dominates row 0
    sample = _face_sample(W2, b2)
    Z = sample[0].copy()
    Z[:, 0] = 0.0
    direct = {r.tobytes() for r in np.unique(Z @ W2.T + b2 > 0, axis=0)}
    assert {r.tobytes() for r in _face_patterns(W2, b2, 0, False, sample)} == direct
