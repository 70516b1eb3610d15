"""The command line: thin layer over the library."""

import json
import subprocess
import sys

from neuromanifold.cli import main


def test_demo_prints_table_and_json(tmp_path, capsys):
    path = tmp_path / "demo.json"
    assert main(["demo", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "LinearConvNet" in out and "invariant drift" in out
    rows = json.loads(path.read_text())
    assert len(rows) == 3
    for row in rows:
        assert row["loss_monotone"] is True
        assert row["max_invariant_drift"] < 1e-8
        assert row["dimension"] <= row["dimension_bound"]


def test_module_entry_point_and_version():
    res = subprocess.run([sys.executable, "-m", "neuromanifold", "--version"],
                         capture_output=True, text=True)
    assert res.returncode == 0 and "neuromanifold" in res.stdout


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "usage" in capsys.readouterr().out
