"""Base class of result objects: frozen dataclasses with a readable repr and ``to_dict``.

Every verdict in neuromanifold is such a result, carrying its evidence (witnesses,
measured differences, whether it is certified, the tolerance used).
"""

from __future__ import annotations

import ast
import dataclasses
import math
import re
import sys
import types
import typing
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from ._errors import InputError, NeuromanifoldError, short_repr

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
        # private fields (a cache) are not the value's: as Result.to_dict leaves them out
        return {
            f.name: to_jsonable(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")
        }
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
    if isinstance(value, Result) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    ):
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
            text = (
                f"({inner}{',' if len(value) == 1 else ''})"
                if isinstance(value, tuple)
                else f"[{inner}]"
            )
    else:
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Result:
    """Mixin for frozen result dataclasses: compact ``repr`` and JSON-ready ``to_dict``."""

    def to_dict(self) -> dict[str, Any]:
        """All public fields (names not starting with ``_``) as plain JSON types (see
        :func:`to_jsonable`).

        Returns:
            A dict that ``json.dumps`` accepts.
        """
        return {
            f.name: to_jsonable(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if not f.name.startswith("_")
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]):
        """The result whose :meth:`to_dict` is ``data``: the inverse of ``to_dict``, also
        after a JSON round trip (``json.loads(json.dumps(r.to_dict()))``).

        Every stored field is decoded by its type annotation: arrays from nested lists
        (``"inf"``/``"nan"`` strings back to floats, ``"p/q"`` strings to an object array
        of Fractions), ``Fraction`` from ``"p/q"``, tuples from lists, nested results from
        their dicts. Where an annotation says no more than ``list``, ``tuple`` or
        ``Any``, a dict holding exactly the stored fields of one result class becomes that
        result, a nested list a tuple and a string ``"p/q"`` a Fraction (what results
        hold there); under a bare ``dict`` (a JSON-like record) lists and strings stay as
        they are and integer keys come back as ints. Keys that are not fields (derived
        values a class adds to its ``to_dict``) are ignored. A class whose fields hold
        arrays in such places annotates them precisely (``list[np.ndarray]``,
        ``list[tuple[np.ndarray, np.ndarray]]``, ...).

        Not stored, hence not restored: private fields (names starting with ``_``, e.g.
        exact or symbolic context kept for methods), which come back as ``None``; the
        dtype of float32 arrays (float64 on return) and the shape of empty arrays (one
        dimension, length 0, unless the class restores it, as
        :class:`~neuromanifold.relu.Domain` does).

        Args:
            data: a mapping as returned by ``to_dict`` (or read back from its JSON).

        Returns:
            An instance of ``cls``; an :class:`InputError` naming the field when ``data``
            does not fit.

        >>> import dataclasses
        >>> @dataclasses.dataclass(frozen=True, repr=False)
        ... class Gap(Result):
        ...     witness: np.ndarray
        ...     ratio: Fraction
        ...     gap: float
        >>> r = Gap.from_dict({"witness": [0.5, 1.0], "ratio": "1/3", "gap": "inf"})
        >>> r.witness, r.ratio, r.gap
        (array([0.5, 1. ]), Fraction(1, 3), inf)
        >>> Gap.from_dict(r.to_dict()).to_dict() == r.to_dict()
        True
        """
        if not isinstance(data, Mapping):
            raise InputError(
                f"{cls.__name__}.from_dict needs a dict as returned by to_dict; "
                f"got {short_repr(data)}"
            )
        if cls.__dict__.get("_QUESTION", False):
            return _route_for(cls, data).from_dict(data)
        if not dataclasses.is_dataclass(cls):
            raise InputError(f"{cls.__name__} is not a result class with fields")
        hints = _field_hints(cls)
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            has_default = (
                f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            )
            if f.name.startswith("_"):
                if not has_default:
                    kwargs[f.name] = None
                continue
            if f.name not in data:
                if has_default:
                    continue
                raise InputError(
                    f"{cls.__name__}.from_dict: the field {f.name!r} is missing; "
                    f"got the keys {short_repr(sorted(map(str, data)))}"
                )
            kwargs[f.name] = _decode(
                data[f.name], hints.get(f.name, Any), f"{cls.__name__}.{f.name}"
            )
        try:
            return cls(**kwargs)
        except (TypeError, ValueError) as exc:
            if isinstance(exc, NeuromanifoldError):  # the class's own rule: keep its message
                raise
            raise InputError(
                f"{cls.__name__}.from_dict: the stored fields do not make a {cls.__name__}: {exc}"
            ) from None

    def __repr__(self) -> str:
        parts = [
            f"{f.name}={_short(getattr(self, f.name))}" for f in dataclasses.fields(self) if f.repr
        ]
        return f"{type(self).__name__}({', '.join(parts)})"


# --------------------------------------------------------------------------- loading back
_HINTS: dict[type, dict[str, Any]] = {}
_BY_KEYS: dict[Any, Any] = {}


def _route_for(question: type, data: Mapping[str, Any]) -> type:
    """The route class of a question's result (a subclass of ``question``, which sets
    ``_QUESTION = True``) whose fields ``data`` holds: every required field present and
    no key outside its fields."""
    keys = {str(k) for k in data}
    fitting = []
    for route in question.__subclasses__():
        fields = {f.name for f in dataclasses.fields(route) if not f.name.startswith("_")}
        required = {
            f.name
            for f in dataclasses.fields(route)
            if f.init
            and not f.name.startswith("_")
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        }
        if required <= keys <= fields:
            fitting.append(route)
    if len(fitting) != 1:
        routes = ", ".join(r.__name__ for r in question.__subclasses__())
        raise InputError(
            f"{question.__name__}.from_dict: the keys fit "
            f"{'none' if not fitting else 'more than one'} of its routes ({routes}); "
            f"got the keys {short_repr(sorted(keys))}"
        )
    return fitting[0]


_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _field_hints(cls: type) -> dict[str, Any]:
    """The resolved type hints of ``cls``'s fields; a hint that cannot be resolved (a name
    imported only for type checking) counts as ``Any``."""
    cached = _HINTS.get(cls)
    if cached is not None:
        return cached
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - resolve field by field below
        hints = {}
        module = sys.modules.get(cls.__module__)
        for klass in reversed(cls.__mro__):
            for name, ann in getattr(klass, "__annotations__", {}).items():
                if isinstance(ann, str):
                    try:
                        ann = eval(ann, vars(module) if module else {})  # noqa: S307
                    except Exception:  # noqa: BLE001
                        ann = Any
                hints[name] = ann
    _HINTS[cls] = hints
    return hints


def _fail(what: str, value: Any, where: str) -> InputError:
    return InputError(f"{where}: {what}; got {short_repr(value)}")


def _to_float(value: Any, where: str) -> float:
    if isinstance(value, str) and value in _NONFINITE:
        return _NONFINITE[value]
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise _fail("expected a number (or 'inf', '-inf', 'nan')", value, where)
    return float(value)


def _to_fraction(value: Any, where: str) -> Fraction:
    if isinstance(value, (bool, np.bool_)):
        raise _fail("expected a rational 'p/q'", value, where)
    try:
        return Fraction(value)
    except (TypeError, ValueError):
        raise _fail("expected a rational 'p/q'", value, where) from None


def _to_array(value: Any, where: str) -> np.ndarray:
    """A nested list from :func:`to_jsonable` back to an array: numbers keep their kind
    (bool, int, float), ``'inf'``/``'nan'`` strings become floats, ``'p/q'`` strings
    make an object array of Fractions."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        flat, stack = [], [value]
        while stack:
            v = stack.pop()
            if isinstance(v, (list, tuple)):
                stack.extend(v)
            else:
                flat.append(v)
        strings = [v for v in flat if isinstance(v, str)]
        if strings:
            exact = any(v not in _NONFINITE for v in strings)

            def conv(v):
                if isinstance(v, (list, tuple)):
                    return [conv(x) for x in v]
                if isinstance(v, str):
                    return (
                        _NONFINITE[v] if v in _NONFINITE and not exact else _to_fraction(v, where)
                    )
                return v

            value = conv(value)
            if exact:
                try:
                    arr = np.empty(np.shape(np.asarray(value, dtype=object)), dtype=object)
                    arr[...] = np.asarray(value, dtype=object)
                except ValueError:
                    raise _fail("expected a rectangular nested list", value, where) from None
                return arr
    try:
        arr = np.asarray(value)
    except ValueError:
        raise _fail("expected a rectangular nested list of numbers", value, where) from None
    if arr.dtype.kind not in "biuf":
        raise _fail("expected a nested list of numbers", value, where)
    return arr


def _result_class_for(keys: frozenset) -> type | None:
    """The one Result subclass whose stored fields are exactly ``keys`` (or None)."""
    classes = _all_result_classes()
    if _BY_KEYS.get(None) != len(classes):  # (re)build when new classes were defined
        _BY_KEYS.clear()
        for c in classes:
            if dataclasses.is_dataclass(c):
                k = frozenset(f.name for f in dataclasses.fields(c) if not f.name.startswith("_"))
                _BY_KEYS[k] = None if k in _BY_KEYS else c  # ambiguous: no class
        _BY_KEYS[None] = len(classes)
    return _BY_KEYS.get(keys)


def _all_result_classes() -> list[type]:
    out, stack = [], [Result]
    while stack:
        c = stack.pop()
        for s in c.__subclasses__():
            if s not in out:
                out.append(s)
                stack.append(s)
    return out


_RATIONAL = re.compile(r"-?\d+(/\d+)?")
_INTEGER = re.compile(r"-?\d+")


def _guess(value: Any, where: str, in_dict: bool = False) -> Any:
    """Decode where the annotation says no more than ``list``/``tuple``/``dict``/``Any``.

    A dict holding exactly the stored fields of one result class becomes that result;
    ``"inf"``/``"nan"`` become floats. Elsewhere in results such places hold tuples and
    exact rationals, so a list becomes a tuple and a string ``"p/q"`` (or ``"n"``) a
    Fraction. Inside a plain dict (a JSON-like record such as a row's evidence) lists stay
    lists and strings stay strings; integer keys come back as ints.
    """
    if isinstance(value, dict):
        cls = _result_class_for(frozenset(value)) if value else None
        return cls.from_dict(value) if cls is not None else _record(value, where)
    if isinstance(value, (list, tuple)):
        out = [_guess(v, f"{where}[{i}]", in_dict) for i, v in enumerate(value)]
        return out if in_dict else tuple(out)
    if isinstance(value, str):
        if value in _NONFINITE:
            return _NONFINITE[value]
        if not in_dict and _RATIONAL.fullmatch(value):
            return Fraction(value)
    return value


def _record(value: dict, where: str) -> dict:
    """A plain dict: integer keys back to ints, values decoded as JSON-like records."""
    return {
        (int(k) if isinstance(k, str) and _INTEGER.fullmatch(k) else k): _guess(
            v, f"{where}[{k!r}]", True
        )
        for k, v in value.items()
    }


def _decode(value: Any, hint: Any, where: str) -> Any:
    """``value`` (as stored by :func:`to_jsonable`) back to the type ``hint``."""
    if hint is Any or hint is object or hint is None:
        return _guess(value, where)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        arms = [a for a in args if a is not type(None)]
        errors = []
        for arm in arms:
            try:
                return _decode(value, arm, where)
            except InputError as exc:
                errors.append(exc)
        raise errors[0]
    if hint is type(None):
        if value is not None:
            raise _fail("expected None", value, where)
        return None
    if isinstance(hint, type) and issubclass(hint, Result):
        if isinstance(value, hint):
            return value
        if not isinstance(value, dict):
            raise _fail(f"expected a dict of {hint.__name__}'s fields", value, where)
        return hint.from_dict(value)
    if hint is np.ndarray or origin is np.ndarray:
        return _to_array(value, where)
    if hint is float:
        return _to_float(value, where)
    if hint is bool:
        if not isinstance(value, (bool, np.bool_)):
            raise _fail("expected true or false", value, where)
        return bool(value)
    if hint is int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise _fail("expected an integer", value, where)
        return int(value)
    if hint is str:
        if not isinstance(value, str):
            raise _fail("expected a string", value, where)
        return value
    if hint is Fraction:
        return _to_fraction(value, where)
    if origin in (list, tuple) or hint in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise _fail("expected a list", value, where)
        kind = origin or hint
        if kind is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(value):
                raise _fail(f"expected {len(args)} entries", value, where)
            return tuple(
                _decode(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args))
            )
        item = args[0] if args else Any
        out = [_decode(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(out) if kind is tuple else out
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise _fail("expected a dict", value, where)
        if not args:
            return _record(value, where)
        kt, vt = args
        return {
            (k if kt in (str, Any) else _decode(_parse_key(k), kt, f"{where} key")): _decode(
                v, vt, f"{where}[{k!r}]"
            )
            for k, v in value.items()
        }
    return _guess(value, where)


def _parse_key(key: str) -> Any:
    """A dict key stored as ``str(key)`` back to a number or a tuple of numbers."""
    try:
        return ast.literal_eval(key)
    except (ValueError, SyntaxError):
        return key
