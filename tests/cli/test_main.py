"""The command line: thin layer over the library."""

import json
import subprocess
import sys

from neuromanifold.cli import main


def test_demo_prints_table_and_json(tmp_path, capsys):
    path = tmp_path / "demo.json"
    assert main(["demo", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "conv" in out and "fc" in out and "invariant" in out
    rows = json.loads(path.read_text())
    assert len(rows) == 3
    for row in rows:
        assert row["loss_monotone"] is True
        assert row["max_invariant_drift"] < 1e-8
        assert row["dimension"] <= row["dimension_bound"]


def test_module_entry_point_and_version():
    res = subprocess.run(
        [sys.executable, "-m", "neuromanifold", "--version"], capture_output=True, text=True
    )
    assert res.returncode == 0 and "neuromanifold" in res.stdout


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "usage" in capsys.readouterr().out


# ------------------------------------------------------------------ bad input: messages
import pytest  # noqa: E402

from neuromanifold import InputError  # noqa: E402
from neuromanifold.cli import _demo  # noqa: E402


@pytest.fixture
def no_compute(monkeypatch):
    """Fail if the demo starts computing (bad usage must be refused before)."""

    def boom(**kwargs):
        raise AssertionError("computed before refusing the arguments")

    monkeypatch.setattr(_demo, "demo_rows", boom)


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--seed=-3"],
        ["demo", "--seed", "1.5"],
        ["demo", "--seed", "x"],
        ["demo", "--json", "/nonexistent-neuromanifold-dir/out.json"],
        ["demo", "--json", "/"],
        ["demo", "--json", ""],
    ],
)
def test_bad_usage_exits_2_before_computing(argv, no_compute, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err


def test_library_and_os_errors_exit_1_with_one_line(monkeypatch, tmp_path, capsys):
    def refuse(**kwargs):
        raise InputError("seed must be a nonnegative int")

    monkeypatch.setattr(_demo, "demo_rows", refuse)
    assert main(["demo"]) == 1
    assert capsys.readouterr().err.strip() == "neuromanifold: error: seed must be a nonnegative int"

    def disk_full(**kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_demo, "demo_rows", disk_full)
    assert main(["demo", "--json", str(tmp_path / "x.json")]) == 1
    assert "No space left" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()  # the writability probe left nothing


def test_help_and_version_load_no_heavy_library():
    """--help and --version build the parser without scipy, flint, numba or matplotlib
    (about 1.5 s of imports before): each subcommand loads what it uses when it runs."""
    import subprocess
    import sys

    code = (
        "import sys; from neuromanifold.cli._main import build_parser; build_parser(); "
        "import neuromanifold; neuromanifold.__version__; "
        "print(sorted(m for m in ('scipy', 'flint', 'numba', 'matplotlib', 'sympy') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_facade_still_serves_every_public_name_on_first_use():
    import neuromanifold as nm

    for name in nm.__all__:
        assert getattr(nm, name) is not None, name
    assert nm.relu.ReLUNet is nm.ReLUNet


def test_sweep_help_lists_every_analysis():
    from neuromanifold.cli import _sweep
    from neuromanifold.sweep import ANALYSES

    listed = _sweep.__doc__.split("Analyses:", 1)[1].replace("\n", " ").strip(" .")
    assert sorted(a.strip() for a in listed.split(",")) == sorted(ANALYSES)
