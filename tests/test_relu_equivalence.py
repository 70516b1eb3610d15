"""Ground-truth functional equivalence: symmetries, perturbations, SPEC 2.4, agreement."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from neuromanifold import ArchitectureError, InputError
from neuromanifold.relu import ReLUNet, equivalent, forward, regions

from relu_support import dyadic_net


def _permuted_rescaled(p, rng):
    """A copy with hidden neurons permuted and rescaled by powers of two (exact in floats)."""
    q = [(W.copy(), b.copy()) for W, b in p]
    for l in range(len(q) - 1):
        n = q[l][0].shape[0]
        perm = rng.permutation(n)
        s = 2.0 ** rng.integers(-3, 4, n)
        W, b = q[l]
        q[l] = (W[perm] * s[:, None], b[perm] * s)
        Wn, bn = q[l + 1]
        q[l + 1] = (Wn[:, perm] / s[None, :], bn)
    return q


def _confirmed(p, q, r):
    assert r.witness is not None and r.witness_difference > 0
    assert r.domain.contains(r.witness[None, :])[0]
    diff = np.abs(forward(p, r.witness) - forward(q, r.witness)).max()
    assert diff > 0 and diff == pytest.approx(r.witness_difference, rel=1e-6)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10**6), widths=st.sampled_from([[2, 3, 2, 1], [3, 3, 2], [1, 2, 2, 2]]),
       domain=st.sampled_from([None, "orthant", (-1, 2)]))
def test_permuted_rescaled_copies_are_equivalent(seed, widths, domain):
    rng = np.random.default_rng(seed)
    p = ReLUNet(widths).random_params(seed)
    q = _permuted_rescaled(p, rng)
    for method in ("regions", "milp"):
        r = equivalent(p, q, domain=domain, method=method)
        assert r.equivalent and r.witness is None and r.method == method
    assert equivalent(p, q, domain=domain, method="regions").certified


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10**6), domain=st.sampled_from([None, "orthant", (-1, 2)]))
def test_perturbing_one_weight_breaks_equivalence_with_witness(seed, domain):
    rng = np.random.default_rng(seed)
    p = ReLUNet([2, 3, 2, 1]).random_params(seed)
    # perturb the outgoing weight of a second-layer neuron that is active on some region:
    # there its activation is > 0, so the output moves by 0.25 times it
    active = [j for j in range(2) if any(r.pattern[1][j] for r in regions(p, domain))]
    assume(active)
    q = [(W.copy(), b.copy()) for W, b in p]
    q[2][0][0, active[int(rng.integers(0, len(active)))]] += 0.25
    for method in ("regions", "milp", "auto"):
        r = equivalent(p, q, domain=domain, method=method)
        assert not r.equivalent and r.certified
        _confirmed(p, q, r)


def _hiding(t):
    return [(np.array([[1.0]]), np.array([t])), (np.array([[1.0]]), np.array([-1.0 - t])),
            (np.array([[1.0]]), np.array([0.0]))]


RELU_X_MINUS_1 = [(np.array([[1.0]]), np.array([-1.0])), (np.array([[1.0]]), np.array([0.0]))]


@pytest.mark.parametrize("method", ["regions", "milp", "auto"])
@pytest.mark.parametrize("t", [-1.0, -0.75, 0.0, 0.5, 3.0, -1.5, -2.0])
def test_spec_hiding_family(t, method):
    """SPEC 2.4: theta_t realizes relu(x - 1) exactly for t >= -1 (d = n1 = n2 = n3 = 1)."""
    r = equivalent(_hiding(t), RELU_X_MINUS_1, method=method)
    assert r.equivalent == (t >= -1)
    if not r.equivalent:
        _confirmed(_hiding(t), RELU_X_MINUS_1, r)


def _random_pair(rng):
    d = int(rng.integers(1, 3))
    wp = [d, int(rng.integers(1, 3)), int(rng.integers(1, 3)), 1]
    p = dyadic_net(rng, wp)
    kind = int(rng.integers(0, 5))
    if kind == 0:          # a symmetric copy: equivalent
        q = _permuted_rescaled(p, rng)
    elif kind == 1:        # one dyadic change: equivalent iff it does not show on the domain
        q = [(W.copy(), b.copy()) for W, b in p]
        l = int(rng.integers(0, 3))
        W, b = q[l]
        if rng.random() < 0.5:
            W[tuple(rng.integers(0, s) for s in W.shape)] += 0.5
        else:
            b[int(rng.integers(0, b.size))] -= 0.5
    elif kind == 2:        # an unrelated network of another architecture
        q = dyadic_net(rng, [d, int(rng.integers(1, 3)), 1])
    elif kind == 3:        # the hiding translation with a dyadic t, sometimes too far
        t = float(rng.integers(-8, 8)) / 4
        p, q = _hiding(t), RELU_X_MINUS_1
    else:                  # drop all but one hidden neuron's outgoing weight
        q = [(W.copy(), b.copy()) for W, b in p]
        W, b = q[-1]
        W[:, 1:] = 0.0
    return p, q


def test_the_two_exact_methods_agree_on_random_pairs():
    rng = np.random.default_rng(2026)
    verdicts = []
    for _ in range(220):
        p, q = _random_pair(rng)
        d = p[0][0].shape[1]
        domain = [None, "orthant", (-1.0, 1.0), (np.full(d, 0.5), np.full(d, 2.0))][int(rng.integers(0, 4))]
        a = equivalent(p, q, domain=domain, method="regions")
        b = equivalent(p, q, domain=domain, method="milp")
        assert a.equivalent == b.equivalent, (p, q, domain, a, b)
        for r in (a, b):
            if not r.equivalent:
                _confirmed(p, q, r)
        if a.max_difference is not None and b.max_difference is not None and not a.equivalent:
            assert a.max_difference == pytest.approx(b.max_difference, rel=1e-6, abs=1e-9)
        verdicts.append(a.equivalent)
    # the sample exercises both verdicts substantially
    assert 40 <= sum(verdicts) <= 180


def test_bad_inputs():
    p = ReLUNet([2, 3, 1]).random_params(0)
    with pytest.raises(ArchitectureError, match="input dimension"):
        equivalent(p, ReLUNet([3, 3, 1]).random_params(0))
    with pytest.raises(ArchitectureError, match="output dimension"):
        equivalent(p, ReLUNet([2, 3, 2]).random_params(0))
    with pytest.raises(InputError, match="method"):
        equivalent(p, p, method="sampling")
