"""The one exception family of neuromanifold.

Every error a user can provoke is a :class:`NeuromanifoldError`. Messages state the
rule that was broken and echo the offending value, in the style of einops.
Subclasses also derive from the matching builtin (``ValueError``) so that generic
handlers keep working.
"""

from __future__ import annotations

__all__ = [
    "NeuromanifoldError",
    "ArchitectureError",
    "ParameterError",
    "InputError",
    "NotInNeuromanifoldError",
    "UndecidedFactorizationError",
    "DomainError",
    "ModelFileError",
    "SymmetryError",
]


class NeuromanifoldError(Exception):
    """Base class of every error raised by neuromanifold."""


class ArchitectureError(NeuromanifoldError, ValueError):
    """An architecture description (filter shapes, strides, widths) is invalid."""


class ParameterError(NeuromanifoldError, ValueError):
    """Parameters do not match the architecture, or are not finite."""


class InputError(NeuromanifoldError, ValueError):
    """Data, signals, losses or options passed to a computation are invalid."""


class InputFileError(InputError):
    """An input file other than a model (a sweep configuration) is missing, unreadable or
    malformed. The message names the file; the command line exits with status 3."""


class NotInNeuromanifoldError(NeuromanifoldError, ValueError):
    """A function (e.g. an end-to-end filter) is not in the image of the parameterization."""


class UndecidedFactorizationError(NeuromanifoldError):
    """An exact route cannot decide whether a function is in the neuromanifold (e.g. no
    grouping of the rational factors fits, but some factor might split further over R);
    ``method="auto"`` then tries a numerical route."""


class DomainError(NeuromanifoldError, ValueError):
    """An input domain (box, orthant, ...) is invalid or does not match the network."""


class ModelFileError(NeuromanifoldError, ValueError):
    """A model file or object cannot be read or written: missing, malformed, truncated,
    inconsistent layer shapes, an unsupported activation, or contents that would have to
    be unpickled. The message names the file."""


class SymmetryError(NeuromanifoldError, ValueError):
    """A symmetry transformation was applied to parameters where it does not apply (e.g. a
    hiding translation of a first-layer hyperplane that is not hidden, or a translation
    outside its valid interval)."""


# The classes live here but belong to the public namespace: tracebacks and reprs say
# ``neuromanifold.InputError``, the name users import and catch.
for _cls in (
    NeuromanifoldError,
    ArchitectureError,
    ParameterError,
    InputError,
    NotInNeuromanifoldError,
    UndecidedFactorizationError,
    DomainError,
    ModelFileError,
    SymmetryError,
):
    _cls.__module__ = "neuromanifold"
del _cls


def short_repr(value: object, limit: int = 120) -> str:
    """``repr`` of ``value`` on one line, cut to ``limit`` characters, for error messages."""
    text = " ".join(repr(value).split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


class SingularPointError(NeuromanifoldError, ArithmeticError):
    """A flow on the neuromanifold reached a singular point (the Jacobian of the
    parameterization dropped rank), where the function-space flow is not determined by
    ``(v, delta)``. Attributes ``t``, ``v`` and ``sigma`` say where; ``partial`` holds the
    result computed up to there (when the raising function has one)."""


class ComputationLimitError(NeuromanifoldError, RuntimeError):
    """A long computation reached its limit (a step count or a time budget, e.g.
    ``max_steps`` or ``time_limit``) before finishing. Attribute ``t`` says how far a flow
    got; ``partial`` holds the result computed up to there (when there is one)."""


class WorkerError(NeuromanifoldError, RuntimeError):
    """A worker process of a parallel computation (``workers > 1``) died before it
    finished its task (killed, out of memory, or unable to start); the message says what
    is known and how to run without workers."""


__all__ += ["SingularPointError", "ComputationLimitError", "WorkerError"]
SingularPointError.__module__ = ComputationLimitError.__module__ = "neuromanifold"
WorkerError.__module__ = "neuromanifold"
