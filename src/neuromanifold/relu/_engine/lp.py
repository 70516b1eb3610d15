"""Small dense linear programs solved by HiGHS, with a call counter.

The region engine solves thousands of tiny LPs; ``scipy.optimize.linprog`` spends most
of its ~1 ms per call on input checking. We therefore talk to HiGHS directly through its
public Python binding ``highspy`` (the same solver ``linprog(method="highs")`` wraps),
reusing one solver object per thread, which is about 5x faster, and fall back to
``linprog`` if ``highspy`` is unavailable. Both paths return the same
:class:`LPSolution`; floating-point answers are certified afterwards by the callers (see
:mod:`neuromanifold.exact._lp`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
import sys
import threading

import numpy as np
from scipy.optimize import linprog

try:  # pragma: no cover - exercised implicitly; the fallback is tested explicitly
    import highspy as _highs_core
except ImportError:  # pragma: no cover
    _highs_core = None

__all__ = ["LPSolution", "solve_lp", "LPCounter", "MILPSolution", "solve_milp"]


@dataclasses.dataclass
class LPSolution:
    """Outcome of :func:`solve_lp`.

    status: ``"optimal"``, ``"infeasible"``, ``"unbounded"`` or ``"error"``.
    x: primal solution; fun: objective value (of the minimization);
    dual_ub / dual_eq: multipliers of the inequality / equality rows in scipy's sign
    convention (``d fun / d rhs``; <= 0 for binding ``<=`` rows of a minimization).
    """

    status: str
    x: np.ndarray | None = None
    fun: float | None = None
    dual_ub: np.ndarray | None = None
    dual_eq: np.ndarray | None = None


class LPCounter:
    """Counts LPs solved (a mutable counter shared by one computation)."""

    def __init__(self) -> None:
        self.count = 0


_USE_CORE = _highs_core is not None


#: Options of the LP solver object. The LPs are tiny (a few columns, tens of rows): one
#: thread (HiGHS's worker pool costs more than the solve, ~10x on 2 shared cores), no
#: presolve (~1.5x) and the primal simplex (~1.4x against the default dual simplex).
#: Warm starts (keeping the cell's model and adding/removing the candidate's row) saved
#: only ~20% of a solve at these sizes and are not used.
_LP_OPTIONS = (("threads", 1), ("presolve", "off"), ("simplex_strategy", 4))
_LOCAL = threading.local()  # one solver per thread: a Highs object is not thread-safe


_INDEX_CACHE: dict = {}


def _dense_index(m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row starts and column indices of a dense row-wise ``m x n`` matrix (cached)."""
    key = (m, n)
    out = _INDEX_CACHE.get(key)
    if out is None:
        if len(_INDEX_CACHE) > 4096:
            _INDEX_CACHE.clear()
        out = _INDEX_CACHE[key] = (
            np.arange(0, m * n, n, dtype=np.int32),
            np.tile(np.arange(n, dtype=np.int32), m),
        )
    return out


def _solve_core(c, A_ub, b_ub, A_eq, b_eq, lb, ub) -> LPSolution:
    h = _highs_core
    solver = getattr(_LOCAL, "solver", None)
    if solver is None:
        # the low-level class: highspy.Highs adds callbacks we do not need and prints a
        # banner on stdout when constructed
        solver = _LOCAL.solver = h._core._Highs()
        solver.setOptionValue("output_flag", False)
        for name, value in _LP_OPTIONS:
            solver.setOptionValue(name, value)
    n = c.size
    A = A_ub if A_eq is None else np.vstack([A_ub, A_eq])
    m = A.shape[0]
    inf = h.kHighsInf
    lo = np.full(m, -inf)
    hi = np.empty(m)
    nub = A_ub.shape[0]
    hi[:nub] = b_ub
    if A_eq is not None:
        lo[nub:] = b_eq
        hi[nub:] = b_eq
    col_lo = np.where(np.isfinite(lb), lb, -inf)
    col_hi = np.where(np.isfinite(ub), ub, inf)
    start, index = _dense_index(m, n)
    solver.clearModel()
    # passModel(num_col, num_row, num_nz, a_format (2 = row-wise), sense (1 = minimize),
    #           offset, costs, column bounds, row bounds, matrix, integrality)
    solver.passModel(
        n,
        m,
        m * n,
        2,
        1,
        0.0,
        np.ascontiguousarray(c, dtype=float),
        col_lo,
        col_hi,
        lo,
        hi,
        start,
        index,
        np.ascontiguousarray(A, dtype=float).ravel(),
        np.zeros(n, dtype=np.int32),
    )
    solver.run()
    status = solver.getModelStatus()
    S = h.HighsModelStatus
    if status == S.kOptimal:
        sol = solver.getSolution()
        duals = np.asarray(sol.row_dual, dtype=float)
        x = np.asarray(sol.col_value, dtype=float)
        return LPSolution(
            "optimal", x, float(c @ x), duals[:nub], duals[nub:] if A_eq is not None else None
        )
    if status == S.kInfeasible:
        return LPSolution("infeasible")
    if status in (S.kUnbounded, S.kUnboundedOrInfeasible):
        return LPSolution("unbounded")
    return LPSolution("error")


def _solve_linprog(c, A_ub, b_ub, A_eq, b_eq, lb, ub) -> LPSolution:
    bounds = [
        (None if not np.isfinite(l) else l, None if not np.isfinite(u) else u)
        for l, u in zip(lb, ub)
    ]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs-ds")
    if res.status == 0:
        return LPSolution(
            "optimal",
            np.asarray(res.x),
            float(res.fun),
            np.asarray(res.ineqlin.marginals),
            None if A_eq is None else np.asarray(res.eqlin.marginals),
        )
    if res.status == 2:
        return LPSolution("infeasible")
    if res.status == 3:
        return LPSolution("unbounded")
    return LPSolution("error")


def solve_lp(
    c,
    A_ub,
    b_ub,
    A_eq=None,
    b_eq=None,
    *,
    lb=None,
    ub=None,
    counter: LPCounter | None = None,
    use_core: bool | None = None,
) -> LPSolution:
    """Minimize ``c.x`` subject to ``A_ub x <= b_ub``, ``A_eq x = b_eq``, ``lb <= x <= ub``.

    ``lb``/``ub`` default to free variables (``-inf``/``inf``). Dense inputs.

    >>> s = solve_lp(np.array([-1.0]), np.array([[1.0]]), np.array([2.0]))
    >>> s.status, s.x
    ('optimal', array([2.]))
    """
    c = np.asarray(c, dtype=float)
    n = c.size
    A_ub = np.asarray(A_ub, dtype=float).reshape(-1, n)
    b_ub = np.asarray(b_ub, dtype=float).reshape(-1)
    if A_eq is not None:
        A_eq = np.asarray(A_eq, dtype=float).reshape(-1, n)
        b_eq = np.asarray(b_eq, dtype=float).reshape(-1)
        if A_eq.shape[0] == 0:
            A_eq = b_eq = None
    lb = np.full(n, -np.inf) if lb is None else np.asarray(lb, dtype=float)
    ub = np.full(n, np.inf) if ub is None else np.asarray(ub, dtype=float)
    global _USE_CORE
    if counter is not None:
        counter.count += 1
    core = _USE_CORE if use_core is None else (use_core and _highs_core is not None)
    if core and A_ub.shape[0] + (0 if A_eq is None else A_eq.shape[0]) > 0:
        try:
            return _solve_core(c, A_ub, b_ub, A_eq, b_eq, lb, ub)
        except (AttributeError, TypeError):  # binding API changed: use linprog from now on
            # (only these: a time limit or an interrupt raised inside the solve must not
            # switch the fast path off for the rest of the process)
            _USE_CORE = False
    return _solve_linprog(c, A_ub, b_ub, A_eq, b_eq, lb, ub)


@dataclasses.dataclass
class MILPSolution:
    """Outcome of :func:`solve_milp`: ``status`` (``"optimal"``, ``"infeasible"``,
    ``"target"``: stopped at a solution reaching ``objective_target``, ``"time_limit"``:
    stopped by the clock with a finite proven bound, the incumbent ``x`` if there is one,
    or ``"error"``),
    the solution ``x``, its objective
    ``fun`` and the solver's proven bound ``dual_bound`` on the optimum (of the
    minimization; ``fun`` when not reported)."""

    status: str
    x: np.ndarray | None = None
    fun: float | None = None
    dual_bound: float | None = None


#: Feasibility tolerances of the MILP (HiGHS's smallest allowed values; its defaults,
#: 1e-6 on integrality and 1e-7 on rows, move a big-M ReLU by 1e-6 times its bound).
MILP_FEAS = 1e-9


@contextlib.contextmanager
def _stdout_silenced():
    """Redirect file descriptor 1 to the null device: HiGHS's MIP solver writes some
    diagnostics with C ``printf``, past its ``output_flag`` option. Nothing of ours may
    reach stdout (a CLI's ``--json`` output goes there)."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):  # pragma: no cover - no real stdout
        pass
    try:
        saved = os.dup(1)
    except OSError:  # pragma: no cover - no file descriptor 1
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


@functools.cache
def _probing_rule_off() -> tuple[str, object]:
    """The option that switches off HiGHS's presolve probing: ``("presolve_rule_off",
    bit)``, the bit read from HiGHS's own rule list (its numbering is not part of the
    API), else ``("presolve", "off")``. With feasibility tolerances at
    :data:`MILP_FEAS`, HiGHS 1.16's probing declared optimal a program whose optimum it
    had cut off (a tangent MILP of a 1-3-1-1 network: optimum 0 reported, -625 feasible
    and found with probing off)."""
    import tempfile  # start-up: needed once per process, on the first MILP

    with tempfile.TemporaryDirectory() as folder:
        log = os.path.join(folder, "highs.log")
        solver = _highs_core._core._Highs()
        for name, value in (
            ("threads", 1),  # the first solver sets the scheduler (see below)
            ("output_flag", True),
            ("log_to_console", False),
            ("log_file", log),
            ("presolve_rule_logging", True),
            ("presolve_rule_off", (1 << 30) - 1),
        ):
            solver.setOptionValue(name, value)
        solver.addVars(1, np.zeros(1), np.ones(1))
        with _stdout_silenced():
            solver.presolve()
        solver.setOptionValue("output_flag", False)  # closes the log file
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                found = re.search(r"set bit\s+(\d+)\s*=\s*\d+\):\s*Probing\s*$", line)
                if found:
                    return "presolve_rule_off", 1 << int(found.group(1))
    return "presolve", "off"  # pragma: no cover - another HiGHS: no presolve at all


def _solve_milp_core(
    c, A, ub, lb_v, ub_v, integer, *, time_limit=None, objective_target=None
) -> MILPSolution:
    h = _highs_core
    solver = h._core._Highs()
    # one thread, as the LP solver: HiGHS's thread scheduler is process-wide and set by
    # the first solver that runs, and a later solver asking for another thread count
    # fails without solving (status "not set")
    for name, value in (
        ("output_flag", False),
        ("log_to_console", False),
        ("threads", 1),
        ("mip_feasibility_tolerance", MILP_FEAS),
        ("primal_feasibility_tolerance", MILP_FEAS),
        ("mip_rel_gap", 1e-9),
        ("mip_abs_gap", MILP_FEAS),
        _probing_rule_off(),
    ):
        solver.setOptionValue(name, value)
    if time_limit is not None:
        solver.setOptionValue("time_limit", float(max(time_limit, 1e-3)))
    if objective_target is not None:
        solver.setOptionValue("objective_target", float(objective_target))
    n = c.size
    m = A.shape[0]
    inf = h.kHighsInf
    rows = [np.nonzero(A[i])[0] for i in range(m)]
    start = (
        np.cumsum([0] + [len(r) for r in rows[:-1]]).astype(np.int32)
        if m
        else np.zeros(0, dtype=np.int32)
    )
    index = np.concatenate(rows).astype(np.int32) if m else np.zeros(0, dtype=np.int32)
    value = np.concatenate([A[i, r] for i, r in enumerate(rows)]) if m else np.zeros(0)
    solver.passModel(
        n,
        m,
        int(index.size),
        2,
        1,
        0.0,
        np.ascontiguousarray(c, dtype=float),
        np.asarray(lb_v, float),
        np.asarray(ub_v, float),
        np.full(m, -inf),
        np.asarray(ub, float),
        start,
        index,
        np.ascontiguousarray(value, float),
        np.asarray(integer, dtype=np.int32),
    )
    with _stdout_silenced():
        solver.run()
    status = solver.getModelStatus()
    info = solver.getInfo()
    if status == h.HighsModelStatus.kInfeasible:
        return MILPSolution("infeasible")
    if status == h.HighsModelStatus.kOptimal:
        kind = "optimal"
    elif (
        objective_target is not None
        and status == h.HighsModelStatus.kObjectiveTarget
        and info.primal_solution_status == 2
    ):
        kind = "target"
    elif status == h.HighsModelStatus.kTimeLimit and np.isfinite(
        float(getattr(info, "mip_dual_bound", np.inf))
    ):
        # stopped by the clock: the proven bound still holds (and the incumbent, if any)
        bound = float(info.mip_dual_bound)
        if info.primal_solution_status != 2:
            return MILPSolution("time_limit", None, None, bound)
        x = np.asarray(solver.getSolution().col_value, dtype=float)
        return MILPSolution("time_limit", x, float(info.objective_function_value), bound)
    else:
        return MILPSolution("error")
    x = np.asarray(solver.getSolution().col_value, dtype=float)
    fun = float(info.objective_function_value)
    bound = float(getattr(info, "mip_dual_bound", fun))
    return MILPSolution(kind, x, fun, bound if np.isfinite(bound) else fun)


def solve_milp(
    c,
    A,
    ub,
    lb_v,
    ub_v,
    integer,
    *,
    time_limit: float | None = None,
    objective_target: float | None = None,
) -> MILPSolution:
    """Minimize ``c.x`` subject to ``A x <= ub``, ``lb_v <= x <= ub_v``, ``x_j`` integer
    where ``integer[j]``; HiGHS with tight feasibility tolerances (:data:`MILP_FEAS`),
    silent (nothing is printed). Past ``time_limit`` seconds the status is ``"error"``.
    With ``objective_target`` it stops at the first solution reaching it (status
    ``"target"``; needs the ``highspy`` binding, else it is ignored). HiGHS's
    ``objective_bound`` option is not offered: with presolve on, HiGHS 1.16 reported a wrong
    optimum under it; bound a variable instead.

    >>> s = solve_milp(np.array([-1.0]), np.array([[2.0]]), np.array([3.0]), [0.0], [5.0], [1])
    >>> s.status, s.x
    ('optimal', array([1.]))
    """
    c = np.asarray(c, dtype=float)
    A = np.asarray(A, dtype=float).reshape(-1, c.size)
    if _USE_CORE:
        try:
            return _solve_milp_core(
                c,
                A,
                np.asarray(ub, float),
                lb_v,
                ub_v,
                integer,
                time_limit=time_limit,
                objective_target=objective_target,
            )
        except Exception:  # pragma: no cover - binding API changed: use scipy
            pass
    from scipy.optimize import Bounds, LinearConstraint, milp  # start-up: slow  # pragma: no cover

    cons = [LinearConstraint(A, -np.inf, ub)] if A.shape[0] else []  # pragma: no cover
    with _stdout_silenced():  # pragma: no cover
        res = milp(
            c,
            integrality=np.asarray(integer),
            bounds=Bounds(lb_v, ub_v),
            constraints=cons,
            options={
                "mip_rel_gap": 1e-9,
                **({"time_limit": time_limit} if time_limit is not None else {}),
            },
        )
    if res.status != 0 or res.x is None:  # pragma: no cover
        return MILPSolution("error")
    dual = getattr(res, "mip_dual_bound", None)  # pragma: no cover
    return MILPSolution(
        "optimal",
        np.asarray(res.x),
        float(res.fun),
        float(dual) if dual is not None and np.isfinite(dual) else float(res.fun),
    )
