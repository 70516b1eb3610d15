"""The tolerance contract: the float rank never counts the rounding."""

import numpy as np
import pytest


@pytest.mark.parametrize("tol", [1e-300, 1e-200, 1e-30])
def test_numerical_rank_never_counts_the_rounding(tol):
    """A product of a 60 x 5 and a 5 x 40 matrix has rank 5; its other singular values are
    float rounding, which a tolerance below the rounding counted (fundim then returned a
    rank above its proven bound)."""
    from neuromanifold._tolerance import numerical_rank

    rng = np.random.default_rng(0)
    A = rng.standard_normal((60, 5)) @ rng.standard_normal((5, 40))
    assert numerical_rank(A, tol)[0] == 5


def test_functional_dimension_at_a_tiny_tol_stays_within_its_bound():
    import neuromanifold as nm

    p = nm.ReLUNet([1, 4, 4, 4, 4, 4, 1]).random_params(seed=88)
    try:
        r = nm.relu.functional_dimension(p, tol=1e-300, time_limit=2)
    except nm.ComputationLimitError as err:
        assert "a lower bound" in str(err)
    else:
        assert r.rank <= r.bound


def test_svd_falls_back_to_gesvd_where_gesdd_does_not_converge(monkeypatch):
    import numpy as np

    from neuromanifold import _tolerance

    A = np.random.default_rng(0).standard_normal((5, 3))
    want = np.linalg.svd(A, compute_uv=False)

    def fails(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge")

    monkeypatch.setattr(np.linalg, "svd", fails)
    np.testing.assert_allclose(_tolerance.svd(A, compute_uv=False), want)
    U, s, Vt = _tolerance.svd(A)
    np.testing.assert_allclose(U * s @ Vt, A, atol=1e-12)
    assert _tolerance.numerical_rank(A, 1e-9)[0] == 3
