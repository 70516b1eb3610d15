"""Optional peer for the linear-region benchmark: ``relucent`` (PyPI ``relucent``, AGPL-3.0,
"Explore the polyhedral complexes of ReLU neural networks").

relucent is not a dependency of neuromanifold and is never imported at module level: install
it in a separate environment (``pip install relucent``; it pulls ``gurobipy``, whose bundled
size-limited licence is enough for small networks, plus scipy, networkx, plotly and tqdm; it
does not need torch for a network given as plain weight matrices).

relucent builds its network from :class:`relucent.model.model.LinearLayer` (``weight`` of
shape ``(out, in)``, ``bias`` of shape ``(1, out)``) and ``ReLULayer`` objects, and
enumerates the top-dimensional cells of the whole of R^d with ``Complex.bfs()``: a
breadth-first walk from the cell of a start point that crosses every supporting hyperplane
(one Gurobi LP per candidate facet, on a pool of worker processes), then certifies the
complex (``verify=True``). Each cell's sign sequence ``ss`` has one entry in {-1, 0, 1} per
hidden neuron, layer 1 first, in row order, which is the order of
``np.concatenate(region.pattern)``; +1 means pre-activation > 0.
"""

from __future__ import annotations

import time

import numpy as np

_MISSING = "relucent not installed (pip install relucent, in a separate environment)"


def available() -> str | None:
    """None when ``import relucent`` works, else a one-line reason."""
    try:
        import relucent  # optional peer: only this benchmark uses it
    except ImportError as exc:  # pragma: no cover - depends on the environment
        return _MISSING if exc.name == "relucent" else f"relucent unusable: {exc}"
    del relucent
    return None


def _network(params):
    """relucent's canonical network for the MLP ``params`` (ReLU after every layer but the last)."""
    # optional peer: only this benchmark uses it
    from relucent.model.model import LinearLayer, ReLULayer, ReLUNetwork

    layers = {}
    for i, (W, b) in enumerate(params):
        W = np.ascontiguousarray(W, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64).reshape(1, -1)
        layers[f"fc{i}"] = LinearLayer(weight=W, bias=b)
        if i < len(params) - 1:
            layers[f"relu{i}"] = ReLULayer()
    return ReLUNetwork(layers, input_shape=(int(np.shape(params[0][0])[1]),))


def _start_point(params, d: int) -> np.ndarray:
    """The origin, unless it lies on a bent hyperplane (relucent refuses such a start);
    then a seeded random point off every hyperplane."""
    rng = np.random.default_rng(0)
    x = np.zeros(d)
    for _ in range(100):
        h, on_plane = x, False
        for W, b in params[:-1]:
            z = W @ h + b
            on_plane |= bool(np.any(z == 0))
            h = np.maximum(z, 0)
        if not on_plane:
            return x
        x = rng.standard_normal(d) * 1e-3
    return x


def relucent_regions(
    params, time_limit: float, *, nworkers: int = 1, verify: bool = True
) -> tuple[set[tuple[bool, ...]], float, bool]:
    """Enumerate the linear regions of the MLP ``params`` (a list of ``(W, b)``) on all of
    R^d with relucent's ``Complex.bfs``.

    Returns ``(patterns, seconds, finished)``: the activation patterns as flat tuples of
    bools over all hidden neurons (layer 1 first, True = pre-activation > 0), the wall
    seconds of the ``bfs`` call, and whether it completed (relucent's own
    ``SearchResult.complete``) within ``time_limit``. relucent offers no wall-clock limit on
    a search (only ``max_polys`` / ``max_depth`` caps), so it always runs to the end and
    ``finished`` is False when it took longer than ``time_limit``.

    ``nworkers`` is the size of relucent's process pool (its default is the CPU count; 1
    here, so the row compares one solving process). ``verify=True`` (relucent's default)
    includes its certification of the finished complex in the timed call.
    """
    from relucent import Complex  # optional peer: only this benchmark uses it

    d = int(np.shape(params[0][0])[1])
    net = _network(params)
    cplx = Complex(net)
    start = _start_point(params, d)
    # Timed: only cplx.bfs(...), i.e. relucent's search proper: its worker pool start-up
    # (fork), the start cell, every neighbour LP (Gurobi), the dual graph and, with
    # verify=True, the certification. Not timed: imports, network and Complex construction,
    # reading the patterns back.
    t0 = time.perf_counter()
    result = cplx.bfs(start, nworkers=nworkers, verify=verify, verbose=0)
    seconds = time.perf_counter() - t0
    patterns = {tuple(bool(s > 0) for s in np.asarray(p.ss_np).ravel()) for p in cplx}
    finished = bool(result.complete) and seconds <= time_limit
    return patterns, seconds, finished
