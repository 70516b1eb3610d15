"""The compiled substitution against its definition: the upper relaxation where a
coefficient is positive, the lower one where it is negative, with dense matrices."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold.relu._bounds.linear import Relaxation, _gamma


def _relaxation(rng, B, n, P) -> Relaxation:
    def block(i, j):
        # p's own block and the difference's blocks, as the chains have them
        return None if (P == 2 and i == 0 and j == 1) else rng.uniform(-1, 1, (B, n))

    return Relaxation(
        U=[[block(i, j) for j in range(P)] for i in range(P)],
        u0=rng.uniform(-1, 1, (B, P * n)),
        L=[[block(i, j) for j in range(P)] for i in range(P)],
        l0=rng.uniform(-1, 1, (B, P * n)),
        post_abs=rng.uniform(0, 2, (B, P * n)),
        pre_abs=rng.uniform(0, 2, (B, P * n)),
    )


def _dense(blocks, b, n, P):
    D = np.zeros((P * n, P * n))
    for i in range(P):
        for j in range(P):
            if blocks[i][j] is not None:
                D[i * n : (i + 1) * n, j * n : (j + 1) * n] = np.diag(blocks[i][j][b])
    return D


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    B=st.integers(1, 3),
    n=st.integers(1, 5),
    P=st.sampled_from([1, 2]),
    r=st.integers(1, 4),
)
def test_substitute_is_the_sign_split_relaxation(seed, B, n, P, r):
    rng = np.random.default_rng(seed)
    rel = _relaxation(rng, B, n, P)
    M = rng.standard_normal((B, r, P * n)) * (rng.random((B, r, P * n)) < 0.7)
    lam, const, err = rel.substitute(M)
    for b in range(B):
        U, L = _dense(rel.U, b, n, P), _dense(rel.L, b, n, P)
        Mp, Mn = np.maximum(M[b], 0), np.minimum(M[b], 0)
        np.testing.assert_allclose(lam[b], Mp @ U + Mn @ L, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(const[b], Mp @ rel.u0[b] + Mn @ rel.l0[b], atol=1e-12)
        diag = np.abs(Mp) @ np.abs(U) @ rel.pre_abs[b] + np.abs(Mn) @ np.abs(L) @ rel.pre_abs[b]
        consts = np.abs(Mp) @ np.abs(rel.u0[b]) + np.abs(Mn) @ np.abs(rel.l0[b])
        want = _gamma(2 * P + 1) * diag + _gamma(P * n + 1) * consts
        np.testing.assert_allclose(err[b], want, rtol=1e-9, atol=1e-300)
