"""VNN-LIB 2.0 queries about two networks, read with the standard's own parser (the
``vnnlib`` package, the VNN-LIB project's Python bindings of its C++ parser).

The fragment read is the one of the equivalence benchmarks: two declared networks, the
second ``equal-to`` the first (one shared input), box constraints on the input (each
assertion a conjunction of bounds ``lo <= X[i]``, ``X[i] <= hi``, ``X[i] = v``), and
output constraints that each compare one linear function of the output *difference*
``sum_i c_i (Y[i] - Y2[i])`` with a constant, joined by ``or`` (the counterexample region,
as VNN-LIB states it). Anything else is refused by name: a third network, hidden-node
variables, an input constraint across coordinates, a conjunction of output constraints,
an output term not paired with the other network's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError, ModelFileError, short_repr
from ..relu import DifferenceQuery

__all__ = ["read_vnnlib"]


def _parser() -> Any:
    try:
        import vnnlib  # optional extra: only VNN-LIB queries need it
    except ImportError:
        raise ModelFileError(
            "reading VNN-LIB queries needs the standard's parser: pip install "
            "'neuromanifold[vnnlib]' (the vnnlib package)"
        ) from None
    return vnnlib


def read_vnnlib(path: Any) -> DifferenceQuery:
    """The two-network query of a VNN-LIB 2.0 file (see the module docs) as a
    :class:`~neuromanifold.relu.DifferenceQuery` (the networks' names in ``names``).

    Raises:
        ModelFileError: the file is missing, does not parse, or uses a construct outside
            the fragment read (named in the message).
    """
    vnnlib = _parser()
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"path must be a file name (str or os.PathLike); got {short_repr(path)}")
    path = Path(path)
    if path.is_dir():
        raise ModelFileError(f"{path}: a folder, not a VNN-LIB query")
    if not path.is_file():
        raise ModelFileError(f"{path}: no such file")
    text = path.read_text(errors="replace")
    if "declare-const" in text and "declare-network" not in text:
        raise ModelFileError(
            f"{path}: a VNN-LIB 1.0 query (declare-const); verify reads VNN-LIB 2.0 queries "
            f"about two networks (declare-network f ..., declare-network g (equal-to f) ...)"
        )
    try:
        query = vnnlib.parse_query_string(text)
    except vnnlib.VNNLibException as exc:
        raise ModelFileError(f"{path}: not a valid VNN-LIB 2.0 query: {_first_line(exc)}") from None
    return _difference_query(query, path)


def _first_line(exc: Exception) -> str:
    msg = str(exc).strip()
    if '"message"' in msg:  # the parser's JSON report: its message and offending symbol
        import json  # start-up: only on this error path

        try:
            err = json.loads(msg)["errors"][0]
            return (
                f"{err.get('message')} {err.get('offendingSymbol', '')!r} "
                f"at line {err.get('line')} ({err.get('hint', '')})"
            )
        except (ValueError, KeyError, IndexError, TypeError):
            pass
    return msg.splitlines()[0] if msg else type(exc).__name__


def _difference_query(query: Any, path: Path) -> DifferenceQuery:
    # Whole: one pass over the assertions fills the box and the output rows; each check by its error
    nets = list(query.networks)
    if len(nets) != 2:
        raise ModelFileError(
            f"{path}: {len(nets)} declared network(s); verify reads queries about two "
            f"networks (declare-network f ..., declare-network g (equal-to f) ...)"
        )
    f, g = nets
    if g.equal_to != f.name:
        how = f"isometric-to {g.isometric_to}" if g.isometric_to else "no equal-to"
        raise ModelFileError(
            f"{path}: network {g.name!r} has {how}; verify reads two networks on one "
            f"shared input: declare it (equal-to {f.name})"
        )
    for net in nets:
        if len(net.inputs) != 1 or len(net.outputs) != 1 or len(net.hidden):
            raise ModelFileError(
                f"{path}: network {net.name!r} declares {len(net.inputs)} input(s), "
                f"{len(net.outputs)} output(s) and {len(net.hidden)} hidden node(s); "
                f"one input and one output, no hidden nodes, are read"
            )
    in_shape = list(f.inputs[0].shape)
    out_shape = list(f.outputs[0].shape)
    d = int(np.prod(in_shape))
    inputs = {f.inputs[0].name, g.inputs[0].name}
    lower, upper = np.full(d, -np.inf), np.full(d, np.inf)
    rows, thresholds, strict, texts = [], [], [], []
    for assertion in query.assertions:
        dnf = assertion.expr.to_dnf()
        where = f"{path}: {assertion}"
        terms = [
            [
                _Comparison(
                    c=c, lin=c.lhs.to_linear_expr(), rhs=c.rhs.to_linear_expr(), where=where
                )
                for c in conj
            ]
            for conj in dnf
        ]
        kinds = {
            _kind([t.var.name in inputs for t in list(cmp.lin.terms) + list(cmp.rhs.terms)])
            for conj in terms
            for cmp in conj
        }
        if kinds == {"input"}:
            if len(dnf) != 1:
                raise ModelFileError(
                    f"{path}: {assertion}: a disjunction of input constraints; a box "
                    f"(a conjunction of bounds on single coordinates) is read"
                )
            for cmp in terms[0]:
                _input_bound(cmp, in_shape, lower, upper)
        elif kinds == {"output"}:
            for conj in terms:
                if len(conj) != 1:
                    raise ModelFileError(
                        f"{path}: {assertion}: a conjunction of output constraints in one "
                        f"case; each case of the counterexample region must be one "
                        f"comparison of the output difference with a constant"
                    )
                row, t, s = _output_row(conj[0], f, g, out_shape)
                rows.append(row)
                thresholds.append(t)
                strict.append(s)
                texts.append(str(conj[0].c).strip())
        else:  # a comparison of both kinds, or assertions of both kinds joined
            raise ModelFileError(
                f"{path}: {assertion}: an assertion mixing input and output variables; "
                f"input boxes and output constraints are read in separate assertions"
            )
    missing = [i for i in range(d) if not (np.isfinite(lower[i]) and np.isfinite(upper[i]))]
    if missing:
        raise ModelFileError(
            f"{path}: input coordinate(s) {missing[:8]} of {f.inputs[0].name} have no lower "
            f"or no upper bound; verify reads queries on a box"
        )
    bad = np.flatnonzero(lower > upper)
    if bad.size:
        i = int(bad[0])
        raise ModelFileError(
            f"{path}: input coordinate {i} has lower bound {lower[i]} above its upper "
            f"bound {upper[i]}: the box is empty"
        )
    if not rows:
        raise ModelFileError(f"{path}: no output constraint: nothing to verify")
    return DifferenceQuery(
        lower=lower,
        upper=upper,
        rows=np.array(rows),
        thresholds=np.array(thresholds),
        strict=tuple(strict),
        names=(f.name, g.name),
        text=tuple(texts),
    )


def _kind(is_input: list) -> str:
    """``"input"``, ``"output"`` or ``"mixed"`` for a comparison's variables."""
    if all(is_input):
        return "input"
    return "output" if not any(is_input) else "mixed"


def _flat(indices: list, shape: list) -> int:
    return int(np.ravel_multi_index(tuple(indices), tuple(shape))) if shape else 0


def _linear(lin: Any, rhs: Any) -> tuple[list, float]:
    """``lhs - rhs`` as ``(terms, constant)``, ``terms`` a list of ``(coeff, var)``."""
    terms = [(t.coeff, t.var) for t in lin.terms] + [(-t.coeff, t.var) for t in rhs.terms]
    return terms, lin.constant - rhs.constant


@dataclass(frozen=True, kw_only=True)
class _Comparison:
    """One comparison ``c`` of an assertion, its sides ``lin`` and ``rhs`` as linear
    expressions, and ``where`` it was read (the file and the assertion, for messages)."""

    c: Any
    lin: Any
    rhs: Any
    where: str


def _input_bound(cmp: _Comparison, shape, lower, upper) -> None:
    c, where = cmp.c, cmp.where
    terms, const = _linear(cmp.lin, cmp.rhs)
    if len(terms) != 1 or terms[0][0] == 0:
        raise ModelFileError(
            f"{where}: an input constraint across coordinates; a box (bounds "
            f"on single coordinates) is read"
        )
    coeff, var = terms[0]
    i = _flat(list(var.indices), shape)
    value = -const / coeff  # coeff * x + const (op) 0  <=>  x (op') -const / coeff
    kind = type(c).__name__
    if kind == "Equal":
        lower[i], upper[i] = max(lower[i], value), min(upper[i], value)
        return
    if kind == "NotEqual":
        raise ModelFileError(f"{where}: '!=' on an input; a box is read")
    below = kind in ("LessEqual", "LessThan")  # coeff * x + const <= 0
    if coeff < 0:
        below = not below
    # a strict bound is read as the closed one: the supremum over the box is the same
    if below:
        upper[i] = min(upper[i], value)
    else:
        lower[i] = max(lower[i], value)


def _output_row(cmp: _Comparison, f, g, shape) -> tuple:
    """One output comparison as ``(row, threshold, strict)`` of ``row . (Y - Y2) > t``."""
    c, where = cmp.c, cmp.where
    terms, const = _linear(cmp.lin, cmp.rhs)
    m = int(np.prod(shape))
    cf, cg = np.zeros(m), np.zeros(m)
    for coeff, var in terms:
        if var.name == f.outputs[0].name:
            cf[_flat(list(var.indices), shape)] += coeff
        elif var.name == g.outputs[0].name:
            cg[_flat(list(var.indices), shape)] += coeff
        else:
            raise ModelFileError(f"{where}: variable {var.name!r} is not an output")
    if not np.array_equal(cf, -cg):
        raise ModelFileError(
            f"{where}: an output constraint that is not on the difference "
            f"{f.outputs[0].name} - {g.outputs[0].name} (each term needs its partner with "
            f"the opposite coefficient)"
        )
    kind = type(c).__name__
    # lin - rhs = cf . (Y - Y2) + const  (op)  0
    if kind in ("GreaterThan", "GreaterEqual"):
        return cf, -const, kind == "GreaterThan"
    if kind in ("LessThan", "LessEqual"):
        return -cf, const, kind == "LessThan"
    raise ModelFileError(
        f"{where}: {kind} on outputs; the counterexample region is read as comparisons >, >=, <, <="
    )
