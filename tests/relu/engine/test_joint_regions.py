"""The balanced copies of a pair: the float fast path (exponents and ldexp from the float
copies) against the exact route, on random networks over many magnitudes."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold.relu._core.numbers import to_float
from neuromanifold.relu._engine import joint_regions as J
from neuromanifold.relu._engine.cells import ExactNet


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.integers(-300, 300), st.booleans())
def test_fast_balancing_is_the_exact_one_rounded(seed, shift, zero):
    rng = np.random.default_rng(seed)
    widths = (3, 4, 3, 2)
    P = [
        (
            np.ldexp(rng.standard_normal((m, n)), rng.integers(-40, 40) + shift // 3),
            rng.standard_normal(m),
        )
        for n, m in zip(widths[:-1], widths[1:])
    ]
    if zero:
        P[1][0][0] = 0.0
    net = ExactNet(P)
    out = J.balanced(net, 5)
    for (W, b), (Wq, bq) in zip(out.params, zip(out.Wq, out.bq)):
        exact = np.array(
            [[to_float(Wq[i, j]) for j in range(Wq.ncols())] for i in range(Wq.nrows())]
        ).reshape(W.shape)
        assert np.array_equal(W, exact) and np.array_equal(b, [to_float(v) for v in bq])
    # the same function divided by 2**5, exactly: compare at a point in exact arithmetic
    from neuromanifold.exact import to_fmpq
    from neuromanifold.relu._engine.cells import exact_forward

    x = [to_fmpq(v) for v in rng.standard_normal(3)]
    a, _ = exact_forward(net, x)
    c, _ = exact_forward(out, x)
    assert all(u == v * 32 for u, v in zip(a, c))
