"""The fuzzer's machinery: catalogs of bad values per kind of argument, one-argument
mutations of a valid call, a per-call time limit, and the classification of outcomes.

An entry point is a valid call (a factory of its arguments) and the kind of each
argument. A *case* replaces one argument by a bad value and says whether the value is
invalid (it must raise a :class:`NeuromanifoldError`) or merely unusual (huge or tiny
magnitudes, exact rationals, tensors: the call may succeed, but then its result must
be finite everywhere). Outcomes:

* ``ok``: a result with no NaN or inf anywhere (arrays, floats, ``to_dict()``);
* ``error``: a :class:`NeuromanifoldError` (what bad input should give);
* ``leak``: any other exception;
* ``accepted``: an invalid value returned a result (e.g. complex truncated, "1.5" parsed);
* ``nonfinite``: a result holding NaN or inf;
* ``timeout``: the call ran over the time limit.

Run ``python tests/fuzz_support.py`` for the exhaustive sweep (every catalog value for
every argument of every entry point) and its counts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import signal
import tempfile
import time
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from neuromanifold import NeuromanifoldError

__all__ = [
    "Case",
    "Entry",
    "Outcome",
    "CallTimeout",
    "time_limit",
    "run_case",
    "cases_for",
    "FakeTensor",
    "has_nonfinite",
]


class CallTimeout(BaseException):
    """Raised by the alarm in the calling thread (a BaseException, so that a library's
    ``except Exception`` cannot swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise :class:`CallTimeout` in the main thread after ``seconds`` (SIGALRM)."""

    def handler(signum, frame):
        raise CallTimeout(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class FakeTensor:
    """Stands for a ``torch.Tensor`` that requires grad (torch is not a dependency):
    ``np.asarray`` on it fails as torch's does, ``detach().cpu().numpy()`` works."""

    def __init__(self, array, requires_grad=True):
        self._a = np.asarray(array, dtype=np.float32)
        self.requires_grad = requires_grad
        self.shape = self._a.shape

    def detach(self):
        return FakeTensor(self._a, requires_grad=False)

    def cpu(self):
        return self

    def numpy(self):
        if self.requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. "
                "Use tensor.detach().numpy() instead."
            )
        return self._a

    def __array__(self, dtype=None, copy=None):
        return self.numpy() if dtype is None else self.numpy().astype(dtype)

    def __len__(self):
        return len(self._a)

    def __repr__(self):
        return f"FakeTensor({self._a.tolist()}, requires_grad={self.requires_grad})"


# --------------------------------------------------------------------------- cases
@dataclasses.dataclass(frozen=True)
class Case:
    """One mutation of one argument: ``label`` names it, ``must_raise`` says it is invalid."""

    arg: str
    label: str
    make: Callable[[Any], Any]  # valid value -> bad value
    must_raise: bool

    def __repr__(self) -> str:
        return f"{self.arg}={self.label}{'!' if self.must_raise else '?'}"


def _arr(v):
    return np.asarray(v, dtype=float)


def _poke(v, x):
    """``v`` (an array-like of floats) with its first entry replaced by ``x``."""
    a = np.array(v, dtype=object if not isinstance(x, float) else float)
    if a.ndim == 0 or a.size == 0:
        return np.array(x, dtype=a.dtype)
    a.reshape(-1)[0] = x
    return a


def _fractions(v):
    a = _arr(v)
    return np.array([Fraction(x) for x in a.ravel()], dtype=object).reshape(a.shape)


def _ints(v):
    return np.round(_arr(v)).astype(np.int64)


# bad values of an array argument (the valid value is given to ``make``)
ARRAY_CASES = [
    ("complex", lambda v: _arr(v) + 0j, True),
    ("complex_imag", lambda v: _arr(v) + 1j, True),
    ("str_dtype", lambda v: _arr(v).astype(str), True),
    ("str_entry", lambda v: _poke(v, "1.5"), True),
    ("bool_dtype", lambda v: _arr(v) > 0, True),
    ("object_entry", lambda v: _poke(v, object()), True),
    ("none_entry", lambda v: _poke(v, None), True),
    ("nan", lambda v: _poke(v, float("nan")), True),
    ("inf", lambda v: _poke(v, float("inf")), True),
    ("string", lambda v: "1.0", True),
    ("bytes", lambda v: b"1.0", True),
    ("dict", lambda v: {"a": 1}, True),
    ("set", lambda v: {1.0, 2.0}, True),
    ("object", lambda v: object(), True),
    ("datetime", lambda v: np.array(["2020-01-01"], dtype="datetime64[D]"), True),
    ("huge_int_entry", lambda v: _poke(v, 10**400), True),
    ("ragged", lambda v: [[1.0, 2.0], [3.0]], True),
    # unusual but not invalid: must work with a finite result, or raise clearly
    ("scaled_2^-1000", lambda v: _arr(v) * 2.0**-1000, False),
    ("scaled_2^1000", lambda v: _arr(v) * 2.0**1000, False),
    ("near_float_max", lambda v: _poke(_arr(v), 1.7e308), False),  # finite, 1.7e308
    ("scaled_1e300", lambda v: _arr(v) * 1e300, False),
    ("scaled_1e-300", lambda v: _arr(v) * 1e-300, False),
    ("subnormal", lambda v: _arr(v) * 5e-324, False),
    ("zeros", lambda v: np.zeros_like(_arr(v)), False),
    ("ints", _ints, False),
    ("fractions", _fractions, False),
    ("float32", lambda v: _arr(v).astype(np.float32), False),
    ("list", lambda v: _arr(v).tolist(), False),
    ("tensor_requires_grad", lambda v: FakeTensor(v), False),
    ("empty", lambda v: np.zeros((0,)), False),
    ("empty_2d", lambda v: np.zeros((0, 3)), False),
    ("scalar", lambda v: 1.0, False),
    ("extra_axis", lambda v: _arr(v)[None], False),
    ("flattened", lambda v: _arr(v).ravel(), False),
    ("truncated", lambda v: _arr(v).ravel()[:-1], False),
    ("none", lambda v: None, False),
]

# positive integer counts (num_starts, num_times, widths, ...)
COUNT_CASES = [
    ("negative", lambda v: -1, True),
    ("zero", lambda v: 0, True),
    ("float", lambda v: 1.5, True),
    ("float_integral", lambda v: float(v), True),
    ("str", lambda v: str(v), True),
    ("bool", lambda v: True, True),
    ("nan", lambda v: float("nan"), True),
    ("complex", lambda v: 1j, True),
    ("object", lambda v: object(), True),
    ("list", lambda v: [v], True),
    ("huge", lambda v: 10**12, False),
    ("astronomical", lambda v: 10**30, False),  # a width of 10^30 must not allocate
    ("numpy_int", lambda v: np.int64(v), False),
    ("none", lambda v: None, False),
]

# real numbers (tolerances, horizons, margins)
REAL_CASES = [
    ("str", lambda v: "0.5", True),
    ("nan", lambda v: float("nan"), True),
    ("inf", lambda v: float("inf"), True),
    ("neg_inf", lambda v: float("-inf"), True),
    ("complex", lambda v: 1e-3 + 0j, True),
    ("bool", lambda v: True, True),
    ("object", lambda v: object(), True),
    ("list", lambda v: [v], True),
    ("array", lambda v: np.array([0.1, 0.2]), True),
    ("negative", lambda v: -abs(float(v)) - 1.0, False),
    ("zero", lambda v: 0.0, False),
    ("huge", lambda v: 1e300, False),
    ("tiny", lambda v: 1e-300, False),
    ("int", lambda v: 1, False),
    ("fraction", lambda v: Fraction(1, 8), False),
    ("numpy_float", lambda v: np.float64(v), False),
    ("none", lambda v: None, False),
]

BOOL_CASES = [
    ("str", lambda v: "yes", True),
    ("str_false", lambda v: "False", True),
    ("int", lambda v: 1, True),
    ("zero", lambda v: 0, True),
    ("none", lambda v: None, True),
    ("array", lambda v: np.array([True]), True),
    ("object", lambda v: object(), True),
    ("numpy_bool", lambda v: np.bool_(v), False),
]

SEED_CASES = [
    ("negative", lambda v: -3, True),
    ("str", lambda v: "0", True),
    ("float", lambda v: 1.5, True),
    ("bool", lambda v: True, True),
    ("complex", lambda v: 1j, True),
    ("object", lambda v: object(), True),
    ("list", lambda v: [1, 2], True),
    ("none", lambda v: None, False),
    ("big", lambda v: 2**70, False),
    ("numpy_int", lambda v: np.int64(5), False),
    ("generator", lambda v: np.random.default_rng(1), False),
]

CHOICE_CASES = [
    ("bogus", lambda v: "bogus", True),
    ("upper", lambda v: str(v).upper() + "_", True),
    ("int", lambda v: 1, True),
    ("bytes", lambda v: str(v).encode(), True),
    ("list", lambda v: [v], True),
    ("object", lambda v: object(), True),
]

# a network / model / loss object
OBJECT_CASES = [
    ("class", lambda v: type(v), True),
    ("str", lambda v: "net", True),
    ("int", lambda v: 3, True),
    ("object", lambda v: object(), True),
    ("list", lambda v: [v], True),
    ("array", lambda v: np.zeros(3), True),
]


def _extra_layer(v):
    """One more layer that does not fit: for (W, b) pairs one whose input size differs
    from the last layer's output size (repeating a square last layer would be valid)."""
    v = list(v)
    last = v[-1]
    if isinstance(last, (tuple, list)) and len(last) == 2 and np.ndim(last[0]) == 2:
        n = np.shape(last[0])[0]
        return v + [(np.ones((1, n + 2)), np.zeros(1))]
    return v + [last]


def _params_cases():
    """Mutations of a list of per-layer arrays (or of (W, b) pairs): one layer's array
    mutated by an array case, and mutations of the list itself."""
    out = []

    def on_first(fn):
        def make(v):
            v = list(v)
            first = v[0]
            if isinstance(first, (tuple, list)) and len(first) == 2 and np.ndim(first[0]) == 2:
                v[0] = (fn(first[0]), first[1])  # ReLU (W, b): mutate W_1
            else:
                v[0] = fn(first)
            return v

        return make

    def on_last(fn):
        def make(v):
            v = list(v)
            last = v[-1]
            if isinstance(last, (tuple, list)) and len(last) == 2 and np.ndim(last[0]) == 2:
                v[-1] = (last[0], fn(last[1]))  # ReLU: mutate b_L
            else:
                v[-1] = fn(last)
            return v

        return make

    for label, fn, must in ARRAY_CASES:
        out.append((f"first.{label}", on_first(fn), must))
    for label in (
        "complex",
        "str_entry",
        "nan",
        "scaled_1e300",
        "tensor_requires_grad",
        "fractions",
        "empty",
    ):
        fn, must = next((f, m) for l, f, m in ARRAY_CASES if l == label)
        out.append((f"last.{label}", on_last(fn), must))

    def scale_all(c):
        def make(v):
            out = []
            for p in v:
                if isinstance(p, (tuple, list)) and len(p) == 2 and np.ndim(p[0]) == 2:
                    out.append((_arr(p[0]) * c, _arr(p[1]) * c))
                else:
                    out.append(_arr(p) * c)
            return out

        return make

    out += [
        ("all.scaled_2^-500", scale_all(2.0**-500), False),
        ("all.scaled_2^500", scale_all(2.0**500), False),
        ("all.scaled_1e100", scale_all(1e100), False),
        ("all.scaled_1e300", scale_all(1e300), False),  # the scale leaves the float range
        ("missing_layer", lambda v: list(v)[:-1], True),
        ("extra_layer", _extra_layer, True),
        ("empty_list", lambda v: [], True),
        ("none", lambda v: None, True),
        ("str", lambda v: "params", True),
        ("dict", lambda v: {0: list(v)[0]}, True),
        ("number", lambda v: 1.0, True),
        ("generator", lambda v: (p for p in v), False),
        ("tuple", lambda v: tuple(v), False),
    ]
    return out


PARAMS_CASES = _params_cases()

DOMAIN_CASES = [
    ("bogus_str", lambda v: "bogus", True),
    ("wrong_dim_box", lambda v: ([0.0] * 7, [1.0] * 7), True),
    ("nan_box", lambda v: ([float("nan"), 0.0], [1.0, 1.0]), True),
    ("empty_box", lambda v: ([1.0, 1.0], [0.0, 0.0]), True),
    ("complex_box", lambda v: ([0j, 0j], [1 + 0j, 1 + 0j]), True),
    ("object", lambda v: object(), True),
    ("int", lambda v: 3, True),
    ("huge_box", lambda v: ([-1e300, -1e300], [1e300, 1e300]), False),
    ("tiny_box", lambda v: ([0.0, 0.0], [1e-300, 1e-300]), False),
    ("point_box", lambda v: ([0.5, 0.5], [0.5, 0.5]), False),
    ("none", lambda v: None, False),
]


def _with(cases, **changes):
    """``cases`` with the ``must_raise`` flag of some labels changed."""
    return [(l, f, changes.get(l, m)) for l, f, m in cases]


# one network or a list of networks (convergence_study): a list of junk is still invalid
NETS_CASES = _with(OBJECT_CASES, list=False) + [
    ("list_of_junk", lambda v: [v, "net"], True),
    ("empty_list", lambda v: [], True),
]
# exact routines take integers of any size
EXACT_ARRAY_CASES = _with(ARRAY_CASES, huge_int_entry=False)
# counts where 0 is valid (walk_steps, margin)
COUNT0_CASES = _with(COUNT_CASES, zero=False)
# ReLU parameters define their own architecture: a network without its last layer is valid
RELU_PARAMS_CASES = _with(PARAMS_CASES, missing_layer=False)

# command-line values (strings); only invalid ones (a valid run is a full computation)
CLI_SEED_CASES = [
    (label, (lambda v, t=text: t), True)
    for label, text in [
        ("negative", "-3"),
        ("word", "abc"),
        ("float", "1.5"),
        ("empty", ""),
        ("exponent", "1e3"),
        ("hex", "0x10"),
        ("spaces", " 1 2"),
    ]
]
CLI_PATH_CASES = [
    (label, (lambda v, t=text: t), True)
    for label, text in [
        ("missing_dir", "/nonexistent-dir-neuromanifold/out.json"),
        ("directory", "/"),
        ("unwritable", "/proc/neuromanifold.json"),
        ("empty", ""),
    ]
]
CLI_CHOICE_CASES = [
    (label, (lambda v, t=text: t), True)
    for label, text in [
        ("bogus", "bogus"),
        ("upper", "LINEAR"),
        ("empty", ""),
        ("option_like", "--quick"),
    ]
]
# a numeric command-line option (--tol, --t-final): junk, non-finite and negative text
CLI_REAL_CASES = [
    (label, (lambda v, t=text: t), True)
    for label, text in [
        ("word", "abc"),
        ("empty", ""),
        ("nan", "nan"),
        ("inf", "inf"),
        ("negative", "-1"),
        ("overflow", "1e400"),
        ("complex", "1j"),
    ]
]
# a count option (--show, --workers)
CLI_COUNT_CASES = [
    (label, (lambda v, t=text: t), True)
    for label, text in [
        ("zero", "0"),
        ("negative", "-1"),
        ("float", "1.5"),
        ("word", "abc"),
        ("empty", ""),
    ]
]
# free-form structured text (--filters, --strides, --domain)
CLI_TEXT_CASES = [
    (label, (lambda v, t=text: t), True)
    for label, text in [
        ("word", "bogus"),
        ("empty", ""),
        ("commas", ",,"),
        ("negative", "-1,2"),
        ("zero", "0,2"),
        ("float", "1.5,2"),
        ("nan", "nan"),
        ("huge", "99999999999"),
    ]
]


def _scratch(name: str, content: bytes | None = None) -> str:
    """A path in a scratch folder (with ``content`` written there, if given)."""
    folder = os.path.join(tempfile.gettempdir(), "neuromanifold-fuzz")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    if content is not None:
        with open(path, "wb") as fh:
            fh.write(content)
    return path


def _suffix(v) -> str:
    return os.path.splitext(str(v))[1]


def _hostile(v) -> str:
    """A file of ``v``'s format whose header asks for too much: an npz member or an ONNX
    initializer declaring 2**40 entries, a safetensors tensor of float8 (no numpy dtype), a sweep
    configuration
    with 10^12 seeds; any other format gets garbage."""
    import io as _io
    import json
    import zipfile

    suffix = _suffix(v)
    path = _scratch("hostile" + suffix)
    if suffix == ".npz":
        buf = _io.BytesIO()
        np.lib.format.write_array_header_1_0(
            buf, {"descr": "<f8", "fortran_order": False, "shape": (2**40,)}
        )
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("0.weight.npy", buf.getvalue() + b"\0" * 16)
    elif suffix == ".safetensors":
        raw = json.dumps(
            {"0.weight": {"dtype": "F8_E4M3", "shape": [2, 2], "data_offsets": [0, 4]}}
        ).encode()
        _scratch("hostile" + suffix, len(raw).to_bytes(8, "little") + raw + b"\0" * 4)
    elif suffix == ".onnx":
        import onnx

        huge = onnx.TensorProto(
            name="W", data_type=onnx.TensorProto.DOUBLE, dims=[2**20, 2**20], raw_data=b"\0" * 16
        )
        graph = onnx.helper.make_graph(
            [onnx.helper.make_node("MatMul", ["x", "W"], ["y"])], "g", [], [], initializer=[huge]
        )
        onnx.save(onnx.helper.make_model(graph), path)
    elif suffix == ".toml":
        _scratch(
            "hostile" + suffix,
            b"seeds = 1000000000000\n[[grid]]\nanalysis = "
            b'"relu_regions"\narchitectures = [{widths = [2, 1]}]\n',
        )
    else:
        _scratch("hostile" + suffix, b"\x00\xff" * 64)
    return path


def _corrupted(v) -> str:
    """``v``'s bytes with a stretch in the middle flipped (for a compressed npz: a
    corrupted deflate stream)."""
    data = bytearray(open(v, "rb").read())
    if _suffix(v) == ".npz":
        import io as _io

        with np.load(v, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        buf = _io.BytesIO()
        np.savez_compressed(buf, **arrays)
        data = bytearray(buf.getvalue())
    lo, hi = len(data) // 3, 2 * len(data) // 3
    for i in range(lo, hi):
        data[i] ^= 0x5A
    return _scratch("corrupted" + _suffix(v), bytes(data))


# an input file read by the library or the CLI: missing, a directory, empty, garbage,
# truncated, hostile, corrupted, or not a path at all
_FILE_CASES = [
    ("missing", lambda v: _scratch("missing" + _suffix(v)) + ".gone/x" + _suffix(v), True),
    ("directory", lambda v: os.path.dirname(_scratch("x")), True),
    ("empty_file", lambda v: _scratch("empty" + _suffix(v), b""), True),
    ("garbage", lambda v: _scratch("garbage" + _suffix(v), b"\x00\xffgarbage{[\n" * 8), True),
    (
        "truncated",
        lambda v: _scratch(
            "truncated" + _suffix(v), open(v, "rb").read()[: max(1, len(open(v, "rb").read()) // 2)]
        ),
        True,
    ),
    ("no_suffix", lambda v: _scratch("nosuffix", open(v, "rb").read()), False),
    ("hostile_header", _hostile, True),
    ("corrupted", _corrupted, True),
]
PATH_CASES = _FILE_CASES + [
    ("empty_str", lambda v: "", True),
    ("int", lambda v: 3, True),
    ("object", lambda v: object(), True),
    ("none", lambda v: None, True),
]
CLI_FILE_CASES = [
    (label, (lambda v, f=make: str(f(v))), must) for label, make, must in _FILE_CASES
] + [("empty_str", lambda v: "", True)]

# an output file written by the library
OUT_PATH_CASES = [
    ("missing_dir", lambda v: "/nonexistent-dir-neuromanifold/out" + _suffix(v), True),
    ("directory", lambda v: os.path.dirname(_scratch("x")), True),
    ("unwritable", lambda v: "/proc/neuromanifold" + _suffix(v), True),
    ("bad_suffix", lambda v: _scratch("out.txt"), True),
    ("empty_str", lambda v: "", True),
    ("int", lambda v: 3, True),
    ("object", lambda v: object(), True),
]


# a mapping (a configuration, a result's to_dict): not a mapping, empty, or one value broken
def _dict_with(v, key_fn, value):
    d = dict(v)
    if d:
        d[key_fn(d)] = value
    return d


MAPPING_CASES = [
    ("str", lambda v: "config", True),
    ("int", lambda v: 3, True),
    ("list", lambda v: [v], True),
    ("object", lambda v: object(), True),
    ("empty", lambda v: {}, True),
    ("first_value_object", lambda v: _dict_with(v, lambda d: next(iter(d)), object()), True),
    ("first_value_nan_str", lambda v: _dict_with(v, lambda d: next(iter(d)), "nan"), False),
    ("extra_key", lambda v: _dict_with(v, lambda d: "bogus_key", 1), False),
]


KIND_CASES = {
    "exact_array": EXACT_ARRAY_CASES,
    "count0": COUNT0_CASES,
    "relu_params": RELU_PARAMS_CASES,
    "cli_seed": CLI_SEED_CASES,
    "cli_path": CLI_PATH_CASES,
    "cli_choice": CLI_CHOICE_CASES,
    "array": ARRAY_CASES,
    "count": COUNT_CASES,
    "real": REAL_CASES,
    "bool": BOOL_CASES,
    "seed": SEED_CASES,
    "choice": CHOICE_CASES,
    "object": OBJECT_CASES,
    "params": PARAMS_CASES,
    "domain": DOMAIN_CASES,
    "nets": NETS_CASES,
    "cli_real": CLI_REAL_CASES,
    "cli_count": CLI_COUNT_CASES,
    "cli_text": CLI_TEXT_CASES,
    "cli_file": CLI_FILE_CASES,
    "path": PATH_CASES,
    "out_path": OUT_PATH_CASES,
    "mapping": MAPPING_CASES,
}


@dataclasses.dataclass
class Entry:
    """A public entry point: ``setup()`` returns the valid arguments (a dict, computed
    once), ``call(**args)`` makes the call, ``kinds`` maps each fuzzed argument to its
    kind (a key of ``KIND_CASES``), ``extra`` adds entry-specific cases, ``optional``
    lists arguments for which ``None`` is a valid value, ``options`` says the call
    forwards ``**options`` (an unknown keyword must raise)."""

    name: str
    setup: Callable[[], dict]
    call: Callable[..., Any]
    kinds: dict[str, str]
    extra: list = dataclasses.field(default_factory=list)
    optional: tuple = ()
    options: bool = False
    skip: tuple = ()  # (arg, label) pairs not to run (e.g. legitimately slow)
    inf_ok: tuple = ()  # result keys where +-inf is a value (an interval's open end)
    _args: dict | None = None

    def args(self) -> dict:
        if self._args is None:
            self._args = self.setup()
        return self._args


def cases_for(entry: Entry) -> list[Case]:
    out = []
    for arg, kind in entry.kinds.items():
        for label, make, must in KIND_CASES[kind]:
            if (arg, label) in entry.skip:
                continue
            if label == "none" and kind not in ("bool",):
                must = arg not in entry.optional and kind != "seed"
            out.append(Case(arg, label, make, must))
    for arg, label, make, must in entry.extra:
        out.append(Case(arg, label, make, must))
    if entry.options:
        out.append(Case("**options", "unknown_option", lambda v: 1, True))
    return out


# --------------------------------------------------------------------------- outcomes
class Outcome:
    OK, ERROR, LEAK, ACCEPTED, NONFINITE, TIMEOUT = (
        "ok",
        "error",
        "leak",
        "accepted",
        "nonfinite",
        "timeout",
    )
    BAD = ("leak", "accepted", "nonfinite", "timeout")


def has_nonfinite(value: Any, _depth: int = 0, allow: tuple = ()) -> str | None:
    """A path to a NaN or inf inside ``value`` (arrays, floats, containers, results and
    their ``to_dict()``), or None; under a key in ``allow`` an infinite float is fine
    (e.g. the open end of an interval), a NaN is not."""
    if _depth > 12:
        return None
    from neuromanifold import Result

    if allow:
        return _nonfinite_allowing(value, _depth, allow)
    if isinstance(value, Result) and hasattr(type(value), "reached"):
        # flows that stopped early: NaN exactly at the samples they did not reach
        mask = value.reached
        for name in ("end_to_end", "loss", "invariants"):
            if not np.all(np.isfinite(getattr(value, name)[mask])):
                return f"{name}.reached.nan"
        rest = {
            k: v
            for k, v in value.to_dict().items()
            if k not in ("end_to_end", "loss", "invariants")
        }
        return has_nonfinite(rest, _depth + 1)
    if isinstance(value, Result):
        return has_nonfinite(value.to_dict(), _depth + 1)
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fc":
            return (
                None
                if np.all(np.isfinite(value))
                else ("array.nan" if np.any(np.isnan(value)) else "array.inf")
            )
        if value.dtype == object:
            return has_nonfinite(value.tolist(), _depth + 1)
        return None
    if isinstance(value, (float, np.floating, complex)):
        return None if np.isfinite(value) else repr(value)
    if isinstance(value, str):
        return value if value in ("nan", "inf", "-inf") else None
    if isinstance(value, dict):
        for k, v in value.items():
            p = has_nonfinite(v, _depth + 1)
            if p is not None:
                return f"{k}.{p}"
        return None
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            p = has_nonfinite(v, _depth + 1)
            if p is not None:
                return f"[{i}].{p}"
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return has_nonfinite(
            {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, _depth + 1
        )
    return None


def _nonfinite_allowing(value, depth, allow):
    from neuromanifold import Result

    if depth > 12:
        return None
    if isinstance(value, Result):
        value = value.to_dict()
    if isinstance(value, dict):
        for k, v in value.items():
            p = _nonfinite_allowing(v, depth + 1, allow)
            if p is not None and not (k in allow and "nan" not in p):
                return f"{k}.{p}"
        return None
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            p = _nonfinite_allowing(v, depth + 1, allow)
            if p is not None:
                return f"[{i}].{p}"
        return None
    return has_nonfinite(value, depth + 1)


def run_case(entry: Entry, case: Case, timeout: float = 3.0) -> tuple[str, str]:
    """Run one mutated call; returns ``(outcome, detail)``."""
    args = dict(entry.args())
    if case.arg == "**options":
        args["bogus_option"] = 1
    else:
        args[case.arg] = case.make(args[case.arg])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"), time_limit(timeout):
                result = entry.call(**args)
    except CallTimeout as exc:
        return Outcome.TIMEOUT, str(exc)
    except NeuromanifoldError as exc:
        return Outcome.ERROR, f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - that is the point
        return Outcome.LEAK, f"{type(exc).__name__}: {exc}"[:300]
    if case.must_raise:
        return Outcome.ACCEPTED, f"returned {type(result).__name__}"
    where = has_nonfinite(result, allow=entry.inf_ok)
    if where is not None:
        return Outcome.NONFINITE, f"non-finite at {where}"
    return Outcome.OK, ""


def sweep(entries, timeout: float = 3.0, verbose: bool = True):
    """Every case of every entry; returns ``{(entry, case): (outcome, detail)}``."""
    results = {}
    for entry in entries:
        t0 = time.time()
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            entry.call(**entry.args())  # warm-up (imports, caches)
        for case in cases_for(entry):
            out = run_case(entry, case, timeout)
            results[(entry.name, repr(case))] = out
            if verbose and out[0] in Outcome.BAD:
                print(f"  {out[0]:9s} {entry.name}: {case!r}: {out[1][:160]}")
        if verbose:
            print(
                f"{entry.name}: {len(cases_for(entry))} cases, {time.time() - t0:.1f} s", flush=True
            )
    return results


if __name__ == "__main__":  # pragma: no cover - the exhaustive sweep, by hand
    import sys
    from collections import Counter

    from tests.test_fuzz import ENTRIES

    only = sys.argv[1:]
    res = sweep([e for e in ENTRIES if not only or any(o in e.name for o in only)])
    print(Counter(o for o, _ in res.values()))
    print(f"{len({e for e, _ in res})} entry points, {len(res)} cases")
    _ = math
