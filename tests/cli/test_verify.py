"""``neuromanifold verify``: a VNN-LIB 2.0 query answered as a solver answers it (the
status first, VNN-COMP's result file, JSON), and its usage errors."""

import json

import pytest

import neuromanifold as nm
from neuromanifold.cli import main

QUERY = (
    "(vnnlib-version <2.0>)\n"
    "(declare-network f (declare-input X float32 [2]) (declare-output Y float32 [1]))\n"
    "(declare-network g (equal-to f) (declare-input X2 float32 [2])"
    " (declare-output Y2 float32 [1]))\n"
    "(assert (and (>= X[0] -1.0) (<= X[0] 1.0)))\n"
    "(assert (and (>= X[1] 0.0) (<= X[1] 0.0)))\n"
    "(assert (or (> (- Y[0] Y2[0]) EPS) (< (- Y[0] Y2[0]) -EPS)))\n"
)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("verify")
    p = nm.ReLUNet([2, 3, 2, 1]).random_params(seed=3)
    nm.io.save(p, d / "f.npz")
    perm = [2, 0, 1]
    q = [(p[0][0][perm] * 3.0, p[0][1][perm] * 3.0), (p[1][0][:, perm] / 3.0, p[1][1]), p[2]]
    nm.io.save(q, d / "permuted.onnx")
    r = [(W.copy(), b.copy()) for W, b in p]
    r[2][1][0] += 0.5
    nm.io.save(r, d / "shifted.npz")
    for eps in ("0.1", "0.6"):
        (d / f"q{eps}.vnnlib").write_text(QUERY.replace("EPS", eps))
    return d


def _verify(files, query, g, *extra):
    return main(
        [
            "verify",
            str(files / query),
            "--network",
            f"f={files / 'f.npz'}",
            "--network",
            f"g={files / g}",
            *map(str, extra),
        ]
    )


def test_the_answers_and_the_result_file(files, tmp_path, capsys):
    assert _verify(files, "q0.1.vnnlib", "permuted.onnx", "--result", tmp_path / "r.txt") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "unsat" and "certified" in out
    assert (tmp_path / "r.txt").read_text() == "unsat\n"
    # the shifted copy differs by exactly 0.5 everywhere: > 0.1 is met, > 0.6 is not
    assert (
        _verify(
            files,
            "q0.1.vnnlib",
            "shifted.npz",
            "--result",
            tmp_path / "s.txt",
            "--json",
            tmp_path / "s.json",
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "sat" and "counterexample x = [" in out
    text = (tmp_path / "s.txt").read_text()
    assert text.startswith("sat\n((X_0 ") and "(X_1 0.0)" in text and "(Y_0 " in text
    data = json.loads((tmp_path / "s.json").read_text())
    assert data["status"] == "sat" and data["margin"] > 0
    assert _verify(files, "q0.6.vnnlib", "shifted.npz") == 0
    assert capsys.readouterr().out.splitlines()[0] == "unsat"


def _err(capsys):
    return " ".join(capsys.readouterr().err.split())  # unwrapped


def test_usage_errors_name_the_networks(files, capsys):
    assert main(["verify", str(files / "q0.1.vnnlib"), "--network", f"f={files / 'f.npz'}"]) == 1
    assert "no --network for g" in _err(capsys)
    assert _verify(files, "q0.1.vnnlib", "shifted.npz", "--network", "h=x.npz") == 1
    assert "--network h is not declared" in _err(capsys)
    assert main(["verify", str(files / "q0.1.vnnlib"), "--network", "f"]) == 1
    assert "NAME=MODEL" in _err(capsys)
    assert main(["verify", str(files / "missing.vnnlib")]) == 3
    with pytest.raises(SystemExit) as exc:
        main(["verify", str(files / "q0.1.vnnlib"), "--timeout", "-1"])
    assert exc.value.code == 2
