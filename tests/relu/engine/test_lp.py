"""The HiGHS wrappers of the region engine: LPs and MILPs in one process."""

import subprocess
import sys

import numpy as np

from neuromanifold.relu._engine.lp import solve_lp, solve_milp

# max x + y over binaries with x + y <= 1.5: optimum 1
_MILP = (
    np.array([-1.0, -1.0]),
    np.array([[1.0, 1.0]]),
    np.array([1.5]),
    [0.0, 0.0],
    [1.0, 1.0],
    [1, 1],
)


def test_lp_after_milp_in_a_fresh_process():
    # HiGHS's thread scheduler is process-wide: a MILP solver that set it up with another
    # thread count made every later LP fail without solving
    code = (
        "import numpy as np\n"
        "from neuromanifold.relu._engine.lp import solve_lp, solve_milp\n"
        "m = solve_milp(np.array([-1.0]), np.array([[2.0]]), np.array([3.0]), [0.0], [5.0], [1])\n"
        "l = solve_lp(np.array([-1.0]), np.array([[1.0]]), np.array([2.0]), lb=[0.0], ub=[5.0])\n"
        "m2 = solve_milp(np.array([-1.0]), np.array([[2.0]]), np.array([3.0]), [0.0], [5.0], [1])\n"
        "print(m.status, l.status, m2.status)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["optimal", "optimal", "optimal"], out.stderr


def test_milp_infeasible_target_and_time_limit():
    assert solve_milp(*_MILP).fun == -1.0
    c, A, ub, lb, ubv, integer = _MILP
    # x + y >= 1.75 and x + y <= 1.5: no solution
    assert (
        solve_milp(c, np.vstack([A, -A]), np.append(ub, -1.75), lb, ubv, integer).status
        == "infeasible"
    )
    first = solve_milp(*_MILP, objective_target=-0.5)
    assert first.status in ("optimal", "target") and first.fun <= -0.5
    assert solve_milp(*_MILP, time_limit=10.0).status == "optimal"


def test_lp_still_solves_after_milps():
    solve_milp(*_MILP)
    s = solve_lp(np.array([-1.0]), np.array([[1.0]]), np.array([2.0]), lb=[0.0], ub=[5.0])
    assert s.status == "optimal" and s.x[0] == 2.0
