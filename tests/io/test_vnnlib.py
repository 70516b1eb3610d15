"""VNN-LIB 2.0 two-network queries: the box and the output rows read as written, a
fixed coordinate kept, and every construct outside the fragment refused by name."""

import numpy as np
import pytest

from neuromanifold import InputError, ModelFileError
from neuromanifold.io import read_vnnlib

HEAD = (
    "(vnnlib-version <2.0>)\n"
    "(declare-network f (declare-input X float32 [3]) (declare-output Y float32 [2]))\n"
    "(declare-network g (equal-to f) (declare-input X2 float32 [3])"
    " (declare-output Y2 float32 [2]))\n"
)
BOX = (
    "(assert (and (>= X[0] -1.0) (<= X[0] 1.0)))\n"
    "(assert (and (<= 0.5 X[1]) (<= X[1] 0.75)))\n"
    "(assert (and (>= X[2] -0.45) (<= X[2] -0.45)))\n"
)


def _write(tmp_path, text):
    path = tmp_path / "q.vnnlib"
    path.write_text(text)
    return path


def test_the_box_and_the_rows_are_read_as_written(tmp_path):
    q = read_vnnlib(
        _write(
            tmp_path,
            HEAD + BOX + "(assert (or (> (- Y[0] Y2[0]) 0.05) (<= (- Y[1] Y2[1]) -0.1)"
            " (>= (* 2.0 (- Y[1] Y2[1])) 0.3)))\n",
        )
    )
    assert q.names == ("f", "g")
    assert np.array_equal(q.lower, [-1.0, 0.5, -0.45])
    assert np.array_equal(q.upper, [1.0, 0.75, -0.45])
    assert np.array_equal(q.rows, [[1, 0], [0, -1], [0, 2]])
    assert np.allclose(q.thresholds, [0.05, 0.1, 0.3])
    assert q.strict == (True, False, False)


@pytest.mark.parametrize(
    "text, words",
    [
        (
            HEAD.replace("(equal-to f) ", "") + BOX + "(assert (> (- Y[0] Y2[0]) 0.1))\n",
            "no equal-to",
        ),
        (HEAD + BOX.replace("(>= X[0] -1.0) ", ""), "no lower or no upper bound"),
        (HEAD + BOX + "(assert (<= (+ X[0] X[1]) 1.0))\n", "across coordinates"),
        (HEAD + BOX + "(assert (or (<= X[0] 0.0) (>= X[1] 0.7)))\n", "disjunction of input"),
        (HEAD + BOX + "(assert (> Y[0] 0.05))\n", "not on the difference"),
        (
            HEAD + BOX + "(assert (and (> (- Y[0] Y2[0]) 0.1) (> (- Y[1] Y2[1]) 0.1)))\n",
            "conjunction of output constraints",
        ),
        (HEAD + BOX + "(assert (> (- Y[0] Y2[0]) X[0]))\n", "mixing input and output"),
        (
            HEAD
            + "(assert (and (>= X[0] 1.0) (<= X[0] 0.0)))\n"
            + BOX.split("\n", 1)[1]
            + "(assert (> (- Y[0] Y2[0]) 0.1))\n",
            "the box is empty",
        ),
        (HEAD + BOX, "no output constraint"),
        (HEAD + BOX + "(assert (> (- Y[0] Y2[0]) Z))\n", "Undeclared variable 'Z'"),
        ("(declare-const X_0 Real)\n(assert (<= X_0 1.0))\n", "VNN-LIB 1.0"),
    ],
)
def test_constructs_outside_the_fragment_are_refused_by_name(tmp_path, text, words):
    with pytest.raises(ModelFileError, match=words):
        read_vnnlib(_write(tmp_path, text))


def test_bad_paths(tmp_path):
    with pytest.raises(ModelFileError, match="no such file"):
        read_vnnlib(tmp_path / "missing.vnnlib")
    with pytest.raises(ModelFileError, match="a folder"):
        read_vnnlib(tmp_path)
    with pytest.raises(InputError, match="file name"):
        read_vnnlib(None)
