"""Base class of result objects: frozen dataclasses with a readable repr and ``to_dict``.

Every verdict in neuromanifold is such a result, carrying its evidence (witnesses,
measured differences, whether it is certified, the tolerance used).
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["Result", "to_jsonable"]


def to_jsonable(value: Any) -> Any:
    """Convert ``value`` to plain JSON types.

    Arrays become nested lists, rationals become strings ``"p/q"``, dataclasses and
    results become dicts, non-finite floats become the strings ``"inf"``/``"nan"``.

    >>> to_jsonable({"a": np.arange(3), "b": Fraction(1, 3), "c": (1.5, None)})
    {'a': [0, 1, 2], 'b': '1/3', 'c': [1.5, None]}
    """
    if isinstance(value, Result):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return [to_jsonable(x) for x in value.tolist()]
        return to_jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if value is None or isinstance(value, str):
        return value
    return str(value)


def _short(value: Any, limit: int = 60) -> str:
    """One line of at most about ``limit`` characters describing ``value`` (for reprs)."""
    if isinstance(value, Result) or (dataclasses.is_dataclass(value)
                                     and not isinstance(value, type)):
        text = f"{type(value).__name__}(...)"
    elif isinstance(value, np.ndarray):
        if value.size <= 6 and value.dtype != object:
            text = np.array2string(value, precision=4, separator=", ")
        else:
            text = f"array(shape={value.shape}, dtype={value.dtype})"
    elif isinstance(value, (float, np.floating)):
        text = f"{float(value):.4g}"
    elif isinstance(value, Fraction):
        text = str(value)
    elif isinstance(value, (list, tuple)):
        if len(value) > 4:
            text = f"[{len(value)} items]"
        else:
            inner = ", ".join(_short(v, limit) for v in value)
            text = f"({inner}{',' if len(value) == 1 else ''})" if isinstance(value, tuple) \
                else f"[{inner}]"
    else:
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclasses.dataclass(frozen=True, repr=False)
class Result:
    """Mixin for frozen result dataclasses: compact ``repr`` and JSON-ready ``to_dict``."""

    def to_dict(self) -> dict[str, Any]:
        """All public fields (names not starting with ``_``) as plain JSON types (see
        :func:`to_jsonable`).

        Returns:
            A dict that ``json.dumps`` accepts.
        """
        return {f.name: to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)
                if not f.name.startswith("_")}

    def __repr__(self) -> str:
        parts = [
            f"{f.name}={_short(getattr(self, f.name))}"
            for f in dataclasses.fields(self)
            if f.repr
        ]
        return f"{type(self).__name__}({', '.join(parts)})"
