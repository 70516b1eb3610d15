"""What every subcommand shares: common options, architecture parsing, model files, JSON.

Exit statuses: 0 success, 1 a computation refused its input (a NeuromanifoldError),
2 bad usage (argparse), 3 a bad input file (a ModelFileError).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .._errors import InputError, short_repr
from .._results import to_jsonable
from ._table import fit

__all__ = [
    "add_common",
    "add_seed",
    "nonnegative_int",
    "positive_int",
    "parse_shapes",
    "positive_float",
    "writable_path",
    "write_json",
    "emit",
    "load_model",
]


def add_seed(p: argparse.ArgumentParser) -> None:
    """``--seed N`` (a nonnegative int, default 0) on a subcommand parser."""
    p.add_argument("--seed", type=nonnegative_int, default=0, help="random seed (default 0)")


def add_common(p: argparse.ArgumentParser, *, seed: bool = True) -> None:
    """``--json PATH`` and (optionally) ``--seed N`` on a subcommand parser."""
    if seed:
        add_seed(p)
    p.add_argument(
        "--json",
        metavar="PATH",
        help="also write the result as JSON to PATH (checked writable before computing)",
    )


def nonnegative_int(text: str) -> int:
    """argparse type of ``--seed`` and other counts: an int >= 0 (else a usage error,
    exit status 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0; got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0; got {text!r}")
    return value


def positive_int(text: str) -> int:
    """argparse type of budgets such as ``--max-regions``: an int >= 1 (else a usage
    error, exit status 2)."""
    value = nonnegative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1; got {text!r}")
    return value


def writable_path(text: str) -> str:
    """An argparse type: a file path whose folder exists and is writable, checked before
    any computation so that no result is lost at the end."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a file path; got an empty string")
    folder = os.path.dirname(os.path.abspath(text))
    if os.path.isdir(text) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(
            f"{text!r} cannot be written (its folder must exist and be writable)"
        )
    return text


def positive_float(text: str) -> float:
    """An argparse type: a positive finite float."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive finite number; got {text!r}")
    return value


def parse_shapes(text: str, what: str) -> list:
    """``"3,2,4"`` -> ``[3, 2, 4]``; ``"2x2,3x3"`` -> ``[(2, 2), (3, 3)]``.

    >>> parse_shapes("2x2,3x1", "filters")
    [(2, 2), (3, 1)]
    """
    out = []
    for item in text.split(","):
        try:
            parts = tuple(int(t) for t in item.strip().lower().split("x"))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{what} must be comma-separated ints (1D) or AxB (2D) like 3,2 or 2x2,3x3; "
                f"got {text!r}"
            ) from None
        out.append(parts[0] if len(parts) == 1 else parts)
    return out


def write_json(path: str, payload: Any) -> None:
    """Write ``payload`` (made JSON-ready) to ``path``; an unwritable path is an
    :class:`InputError`, not a traceback."""
    try:
        with open(path, "w") as fh:
            json.dump(to_jsonable(payload), fh, indent=2)
    except OSError as exc:
        raise InputError(
            f"--json path {short_repr(path)} cannot be written: {exc.strerror or exc}"
        ) from None
    print(f"wrote {path}", file=sys.stderr)


#: the library's hints that name a Python call, as the command line says them
_HINTS = (
    ("method='regions'", "--method regions"),
    ('method="regions"', "--method regions"),
    (
        "see estimate_regions for the expected number of regions",
        "see the estimate 'relu regions' prints first",
    ),
    ("relu.search_symmetries", "the Python function neuromanifold.relu.search_symmetries"),
)


def for_the_command(text: str) -> str:
    """``text`` with the library's hints that name Python calls (``method='regions'``,
    ``estimate_regions``) put as the options and commands that do the same."""
    for python, command in _HINTS:
        text = text.replace(python, command)
    return text


def emit(args: argparse.Namespace, text: str, payload: Any) -> int:
    """Print ``text`` for people (lines wrapped to the terminal's width), write
    ``payload`` to ``--json`` when asked; exit 0. A callable ``payload`` is called only
    then (the JSON of thousands of exact regions takes longer than finding them)."""
    print(fit(for_the_command(text)))
    if getattr(args, "json", None):
        write_json(args.json, payload() if callable(payload) else payload)
    return 0


def load_model(path: str, kind: str | None = None, strides: Any = None):
    """Read a model file through :func:`neuromanifold.io.load` and print its architecture
    on stderr; ``kind`` ("relu" / "linear_conv") is checked."""
    from .. import io  # start-up: loaded when the subcommand runs
    from .._errors import ModelFileError  # start-up: loaded when the subcommand runs

    model = io.load(path, strides=strides)
    if kind is not None and model.kind != kind and (kind, model.kind) != ("relu", "relu_conv"):
        raise ModelFileError(f"{path}: holds a {model.kind} model; this command needs {kind}")
    full = "\n".join([f"read {model.describe()}"] + [f"  {n}" for n in model.notes])
    # a folder of one architecture (a zoo): its description once, then the paths
    text = full.replace(str(model.source), "")
    same = text == LAST_READ.get("text")
    LAST_READ["text"] = text
    print(
        fit(f"read {path} (the same architecture as the file before)" if same else full),
        file=sys.stderr,
    )
    return model


#: what :func:`load_model` printed last in this command, without its path (cleared by
#: ``main`` for each command, so that a second command in one process prints in full)
LAST_READ: dict[str, str] = {}


class ActionParser(argparse.ArgumentParser):
    """The parser of one action of a command (``relu identify``, ``linear flow``): it takes
    only its own options. An option that only another action reads is a usage error
    (exit status 2) naming the actions that read it, never accepted and ignored."""

    #: option string -> the actions of this command that read it (set by add_actions)
    readers: dict[str, list[str]]
    command: str

    def parse_known_args(self, args=None, namespace=None):
        ns, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(self._foreign(extras))
        return ns, extras

    def _foreign(self, extras: list[str]) -> str:
        options = [e.split("=", 1)[0] for e in extras if e.startswith("-") and len(e) > 1]
        parts = []
        for opt in dict.fromkeys(options):
            readers = getattr(self, "readers", {}).get(opt)
            parts.append(
                f"{opt} is an option of {self.command} {', '.join(readers)} only"
                if readers
                else f"{opt} is no option of any {self.command} action"
            )
        if not options:
            parts.append(f"unexpected argument(s) {' '.join(extras)}")
        return f"{'; '.join(parts)} (see {self.prog} --help)"


def add_actions(p: argparse.ArgumentParser, command: str, actions: dict, options: dict) -> None:
    """One subparser (an :class:`ActionParser`) per action of ``command`` on ``p``.

    ``actions`` maps each action to ``(help, description, positionals, option names)``,
    where ``positionals`` is a list of ``(name, nargs, help)`` and each option name is a
    key of ``options``, a function adding that option to a parser. ``--json`` is added to
    every action."""
    sub = p.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=ActionParser
    )
    readers: dict[str, list[str]] = {}
    for name, (short, description, positionals, names) in actions.items():
        q = sub.add_parser(
            name,
            help=short,
            description=description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        q.readers, q.command = readers, command
        for pos, nargs, text in positionals:
            q.add_argument(pos, nargs=nargs, help=text)
        for opt in names:
            options[opt](q)
        add_common(q, seed=False)
        for action in q._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help", "--json"):
                    readers.setdefault(flag, []).append(name)
