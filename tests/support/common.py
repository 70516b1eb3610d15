"""Hypothesis strategies and helpers shared by the test files."""

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import strategies as st

from neuromanifold import LinearConvNet, LinearFCNet

#: the repository's root folder
ROOT = Path(__file__).resolve().parents[2]


def run_cli(*argv, cwd=None, env=None) -> subprocess.CompletedProcess:
    """``python -m neuromanifold ARGV...`` as a user runs it (a subprocess, warnings off,
    2 minutes at most): its exit status, stdout and stderr."""
    env = dict(env or os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run(
        [sys.executable, "-m", "neuromanifold", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


@st.composite
def conv_nets(draw, ndim=None, max_layers=4, max_k=4, max_stride=3):
    """Random LinearConvNet architectures in 1, 2 or 3 dimensions."""
    D = draw(st.sampled_from([1, 2, 3])) if ndim is None else ndim
    L = draw(st.integers(1, max_layers if D < 3 else 3))
    mk = max_k if D == 1 else (3 if D == 2 else 2)
    shapes = [tuple(draw(st.integers(1, mk)) for _ in range(D)) for _ in range(L)]
    strides = [
        tuple(draw(st.integers(1, max_stride if D < 3 else 2)) for _ in range(D))
        for _ in range(L - 1)
    ]
    if D == 1:
        shapes = [s[0] for s in shapes]
        strides = [s[0] for s in strides]
    return LinearConvNet(shapes, strides)


@st.composite
def fc_nets(draw, max_layers=4, max_width=4):
    L = draw(st.integers(1, max_layers))
    return LinearFCNet([draw(st.integers(1, max_width)) for _ in range(L + 1)])


def fd_jacobian(net, params, eps=1e-6):
    """Central finite differences of ``net.end_to_end`` w.r.t. the flattened parameters."""
    import numpy as np

    theta = net.flatten(params)
    cols = []
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = eps
        cols.append(
            (
                net.end_to_end(net.unflatten(theta + e)) - net.end_to_end(net.unflatten(theta - e))
            ).ravel()
            / (2 * eps)
        )
    return np.stack(cols, axis=1)


def load_benchmark(name):
    """Import ``benchmarks/<name>.py`` (the scripts are not a package) and return it."""
    import importlib.util
    import sys

    folder = ROOT / "benchmarks"
    if str(folder) not in sys.path:  # the scripts import their shared _timing module
        sys.path.insert(0, str(folder))
    path = folder / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
