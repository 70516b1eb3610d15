"""The exact test of one row being a multiple of another (``_core/rows.py``), which the
parallel-neuron symmetry, the channel reduction and the one-hidden-layer theorem share."""

from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from neuromanifold.relu._core.rows import exact_multiple

dyadic = st.integers(-64, 64).map(lambda k: k / 8)


@given(st.lists(dyadic, min_size=1, max_size=6), st.sampled_from([-4.0, -0.5, 0.25, 3.0]))
def test_a_dyadic_multiple_is_found_with_its_factor(row, lam):
    a = np.array(row)
    got = exact_multiple(a, lam * a)
    if not np.any(a):
        assert got is None  # a zero row is nobody's multiple
    else:
        assert got == Fraction(lam)


def test_rows_that_differ_in_the_last_bit_are_not_multiples():
    a = np.array([1.0, 3.0, -2.0])
    b = 2 * a
    b[1] = np.nextafter(b[1], np.inf)
    assert exact_multiple(a, b) is None
    assert exact_multiple(a, np.array([2.0, 0.0, -4.0])) is None  # another support
    assert exact_multiple(a, np.zeros(3)) is None
