"""A convolutional ReLU network: an input shape and a chain of layers, read through one
interface (:mod:`~neuromanifold.relu._core.conv.layer`).

Three views of one network:

* the structured forward pass (:meth:`ReLUConvNet.forward`), on float or exact inputs;
* the **dense view** (:meth:`ReLUConvNet.dense_params`): the same function as a fully
  connected ReLU network ``[(W_1, b_1), ..., (W_L, b_L)]``, which every analysis of fully
  connected networks reads. Affine layers between two ReLUs (convolutions, average
  pooling, flattening, dense layers) are composed into one matrix; max pooling is written
  in its exact ReLU form, one layer of ReLUs per halving of the window:
  ``max(a, b) = b + relu(a - b)``, with ``b`` carried as ``relu(b)`` when ``b >= 0`` is
  known (after a ReLU) and as ``relu(b) - relu(-b)`` otherwise. A max pooling right before
  a ReLU is moved after it (the two commute), so its entries are known nonnegative. A
  residual block's input is carried through the ReLU layers of its body the same way
  and added at its end;
* the bounds (:func:`path_norm`, :func:`difference_bound`): per layer, ``|z| <= r`` and
  ``|z_p - z_q| <= e`` carried through the layers: a network's scale, and the parameter
  bound of two networks of one architecture.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ...._errors import ArchitectureError, ComputationLimitError, InputError, short_repr
from ...._validation import as_finite_array
from .elementwise import ReLU
from .layer import AffineLayer, Layer, exact_array, same_kind
from .pool import MaxPool
from .residual import Residual

__all__ = [
    "ReLUConvNet",
    "difference_bound",
    "path_norm",
    "symmetry_rounding",
    "MAX_DENSE_ENTRIES",
]

#: the largest dense view built (entries of all its matrices): 400 MB of float64
MAX_DENSE_ENTRIES = 50_000_000
_U = 2.0**-53


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class ReLUConvNet:
    """A convolutional ReLU network with its parameters.

    Args:
        input_shape: the shape of one input, channels first: ``(C, H, W)`` for images,
            ``(C, L)`` for sequences, ``(n,)`` for vectors. Inputs of the analyses are
            flat vectors of ``prod(input_shape)`` entries in C order.
        layers: the layers in order (:mod:`neuromanifold.relu.layers`).

    >>> import numpy as np
    >>> from neuromanifold.relu import layers as nl
    >>> net = ReLUConvNet(
    ...     input_shape=(1, 4, 4),
    ...     layers=[nl.Conv(np.ones((2, 1, 3, 3)), np.zeros(2)), nl.ReLU(), nl.Flatten(),
    ...             nl.Dense(np.ones((1, 8)), np.zeros(1))],
    ... )
    >>> net.forward(np.ones((1, 16)))
    array([[72.]])
    >>> [W.shape for W, _ in net.dense_params()]
    [(8, 16), (1, 8)]
    """

    input_shape: tuple[int, ...]
    layers: tuple[Layer, ...]
    notes: tuple[str, ...] = ()
    _cache: dict = dataclasses.field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        shape = self.input_shape
        if (
            isinstance(shape, (str, bytes))
            or not isinstance(shape, Sequence)
            or not 1 <= len(shape) <= 3
            or not all(isinstance(n, (int, np.integer)) and n >= 1 for n in shape)
        ):
            raise ArchitectureError(
                f"input_shape must be 1 to 3 positive integers (channels first); got "
                f"{short_repr(shape)}"
            )
        layers = self.layers
        if isinstance(layers, Layer) or not isinstance(layers, Sequence) or not layers:
            raise ArchitectureError(
                f"layers must be a non-empty list of layers; got {short_repr(layers)}"
            )
        for i, layer in enumerate(layers):
            if not isinstance(layer, Layer):
                raise ArchitectureError(
                    f"layer {i} must be a layer of neuromanifold.relu.layers; got "
                    f"{short_repr(layer)}"
                )
        object.__setattr__(self, "input_shape", tuple(int(n) for n in shape))
        object.__setattr__(self, "layers", tuple(layers))
        object.__setattr__(self, "notes", tuple(self.notes))
        shapes = [self.input_shape]
        for i, layer in enumerate(self.layers):
            try:
                shapes.append(tuple(layer.out_shape(shapes[-1])))
            except ArchitectureError as err:
                raise ArchitectureError(f"layer {i} ({layer.describe()}): {err}") from None
        if not any(isinstance(layer, AffineLayer) for layer in self.layers):
            raise ArchitectureError("a network needs at least one convolution or dense layer")
        self._cache["shapes"] = tuple(shapes)

    # -- shapes -------------------------------------------------------------------------
    @property
    def shapes(self) -> tuple[tuple[int, ...], ...]:
        """The tensor shapes: the input's, then after each layer."""
        return self._cache["shapes"]

    @property
    def input_dim(self) -> int:
        """Entries of one input (``prod(input_shape)``)."""
        return int(np.prod(self.input_shape))

    @property
    def output_dim(self) -> int:
        """Entries of one output."""
        return int(np.prod(self.shapes[-1]))

    @property
    def num_params(self) -> int:
        """The number of parameters (every weight and bias)."""
        return sum(a.size for _, layer, _ in self.leaves() for a in layer.arrays().values())

    def leaves(self) -> tuple[tuple[str, Layer, tuple[int, ...]], ...]:
        """Every layer that is not a residual block, in order, as ``(path, layer,
        in_shape)``: ``path`` is the layer's index, within a residual block
        ``"<block>.body.<j>"`` or ``"<block>.skip.<j>"``."""
        if "leaves" not in self._cache:
            out: list = []

            def visit(prefix: str, layers: Sequence[Layer], shapes: Sequence) -> None:
                for j, (layer, shape) in enumerate(zip(layers, shapes)):
                    if isinstance(layer, Residual):
                        for branch, sub in layer.branches():
                            visit(f"{prefix}{j}.{branch}.", sub, layer.branch_shapes(shape, branch))
                    else:
                        out.append((f"{prefix}{j}", layer, tuple(shape)))

            visit("", self.layers, self.shapes)
            self._cache["leaves"] = tuple(out)
        return self._cache["leaves"]

    def layer_at(self, path: str) -> Layer:
        """The layer at ``path`` (see :meth:`leaves`)."""
        parts = str(path).split(".")
        layer: Any = self.layers[int(parts[0])]
        for branch, j in zip(parts[1::2], parts[2::2]):
            layer = dict(layer.branches())[branch][int(j)]
        return layer

    def layer_name(self, path: str) -> str:
        """The name of the layer at ``path`` in files, specs and reports: its own, else its
        path."""
        return getattr(self.layer_at(path), "name", "") or str(path)

    def with_leaves(self, replaced: dict[str, Layer]) -> ReLUConvNet:
        """The network with the layers at the given paths replaced (same shapes)."""

        def rebuild(prefix: str, layers: Sequence[Layer]) -> list[Layer]:
            out = []
            for j, layer in enumerate(layers):
                path = f"{prefix}{j}"
                if isinstance(layer, Residual):
                    for branch, sub in layer.branches():
                        new = rebuild(f"{path}.{branch}.", sub)
                        layer = dataclasses.replace(layer, **{branch: tuple(new)})
                out.append(replaced.get(path, layer))
            return out

        return self.with_layers(rebuild("", self.layers))

    def describe(self) -> str:
        """One line for people: the input shape and the layers."""
        inner = " -> ".join(layer.describe() for layer in self.layers)
        shape = "x".join(map(str, self.input_shape))
        return f"convolutional ReLU network on {shape} inputs: {inner}"

    def __repr__(self) -> str:
        return (
            f"ReLUConvNet(input_shape={self.input_shape}, {len(self.layers)} layers, "
            f"{self.num_params} parameters)"
        )

    # -- the forward pass ---------------------------------------------------------------
    def _batch(self, x: Any) -> np.ndarray:
        arr = np.asarray(x) if isinstance(x, np.ndarray) and x.dtype == object else None
        if arr is None:
            arr = as_finite_array(x, "inputs", error=InputError)
        if arr.ndim == 1:
            arr = arr[None]
        if arr.shape[1:] == self.input_shape:
            return arr
        if arr.ndim == 2 and arr.shape[1] == self.input_dim:
            return arr.reshape(arr.shape[0], *self.input_shape)
        raise InputError(
            f"inputs must have shape (batch, {self.input_dim}) or (batch, "
            f"{', '.join(map(str, self.input_shape))}); got {arr.shape}"
        )

    def forward(self, x: Any) -> np.ndarray:
        """The outputs ``(batch, output_dim)`` at inputs ``(batch, input_dim)`` (or
        ``(batch, *input_shape)``)."""
        z = self._batch(x)
        if z.shape[0] == 0:
            return np.zeros((0, self.output_dim))
        for layer in self.layers:
            z = layer.forward(z)
        return z.reshape(z.shape[0], -1)

    def exact_forward(self, x: Any) -> np.ndarray:
        """The outputs at ``x`` in exact rational arithmetic (an object array of
        ``Fraction``; floats are read as the binary rationals they are)."""
        z = self._batch(x)
        z = exact_array(z)
        for layer in self.layers:
            z = layer.forward(z)
        return z.reshape(z.shape[0], -1)

    # -- the dense view -----------------------------------------------------------------
    def dense_params(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The same function as a fully connected ReLU network (see the module docs);
        an ArchitectureError when it would hold more than :data:`MAX_DENSE_ENTRIES`."""
        if "dense" not in self._cache:
            self._cache["dense"] = _DenseView(self).build()
        return [(W.copy(), b.copy()) for W, b in self._cache["dense"]]

    def with_layers(self, layers: Sequence[Layer]) -> ReLUConvNet:
        """The same network shape with other layers (of the same shapes)."""
        return ReLUConvNet(input_shape=self.input_shape, layers=tuple(layers), notes=self.notes)


class _DenseView:
    """The unrolling of :meth:`ReLUConvNet.dense_params`: the current tensor as an affine
    map ``A z + c`` of the last ReLU layer's outputs ``z`` (the input at first), and the
    inputs of the open residual blocks (``carried``) as maps of ``z`` too."""

    def __init__(self, net: ReLUConvNet):
        self.net = net
        n = net.input_dim
        self.A = sp.identity(n, format="csr")
        self.c = np.zeros(n)
        self.nonneg = np.zeros(n, dtype=bool)
        self.carried: list[tuple[sp.csr_matrix, np.ndarray, np.ndarray]] = []
        self.width = n  # the number of columns of A: the last ReLU layer's size
        self.params: list[tuple[np.ndarray, np.ndarray]] = []
        self.entries = 0

    def build(self) -> list[tuple[np.ndarray, np.ndarray]]:
        self.run(self.net.layers, self.net.shapes)
        self.emit()
        return self.params

    def run(self, layers: Sequence[Layer], shapes: Sequence) -> None:
        layers, shapes = list(layers), list(shapes)
        for i in range(len(layers) - 1):  # max pooling before a ReLU: after it (they commute)
            if isinstance(layers[i], MaxPool) and isinstance(layers[i + 1], ReLU):
                layers[i], layers[i + 1] = layers[i + 1], layers[i]
                shapes[i + 1] = shapes[i]
        for layer, shape in zip(layers, shapes):
            if isinstance(layer, ReLU):
                self.emit()
            elif isinstance(layer, MaxPool):
                self.max_pool(layer, shape)
            elif isinstance(layer, Residual):
                self.residual(layer, shape)
            else:
                M, t = layer.linear_map(shape)
                self.affine(sp.csr_matrix(M), np.asarray(t, dtype=np.float64))

    def residual(self, block: Residual, shape: tuple[int, ...]) -> None:
        """The body with the block's input carried through its ReLUs, then the skip on
        that input, then their sum."""
        self.carried.append((self.A, self.c, self.nonneg))
        self.run(block.body, block.branch_shapes(shape, "body"))
        body = (self.A, self.c, self.nonneg)
        self.A, self.c, self.nonneg = self.carried.pop()
        self.run(block.skip, block.branch_shapes(shape, "skip"))
        self.A = (body[0] + self.A).tocsr()
        self.c = body[1] + self.c
        self.nonneg = body[2] & self.nonneg

    def affine(self, M: sp.csr_matrix, t: np.ndarray) -> None:
        bad_rows = (abs(M) @ (~self.nonneg).astype(np.float64)) > 0
        negative = (M.minimum(0) @ np.ones(M.shape[1])) < 0
        self.nonneg = ~bad_rows & ~negative & (t >= 0)
        self.A = (M @ self.A).tocsr()
        self.c = M @ self.c + t

    def emit(self, E: sp.csr_matrix | None = None) -> None:
        """A layer of the fully connected network: ``W = E A``, ``b = E c`` (``E = None``:
        the current map itself: a ReLU's input, or the output layer), then the carried
        tensors (``x`` as ``relu(x)`` where ``x >= 0`` is known, else ``relu(x)`` and
        ``relu(-x)``); ReLU after it unless it is the last."""
        Ws = [self.A if E is None else (E @ self.A)]
        bs = [self.c if E is None else E @ self.c]
        n = Ws[0].shape[0]
        at = n
        carried = []
        for A, c, nonneg in self.carried:
            neg = np.flatnonzero(~nonneg)
            Ws += [A, -A[neg]]
            bs += [c, -c[neg]]
            k = A.shape[0]
            carried.append((at, k, neg, nonneg))
            at += k + neg.size
        W = sp.vstack(Ws).tocsr() if len(Ws) > 1 else Ws[0]
        b = np.concatenate(bs)
        self.entries += W.shape[0] * W.shape[1]
        if self.entries > MAX_DENSE_ENTRIES:
            raise ComputationLimitError(
                f"the dense view of this network (the same function as a fully connected "
                f"ReLU network) would hold more than {MAX_DENSE_ENTRIES:,} weights; this "
                f"analysis needs it (channel_spec, and equivalent by matching channels or "
                f"by a witness, do not)"
            )
        self.params.append((np.asarray(W.todense()), np.asarray(b, dtype=np.float64)))
        self.width = at
        self.A = sp.eye(n, at, format="csr")
        self.c = np.zeros(n)
        self.nonneg = np.ones(n, dtype=bool)
        for idx, (start, k, neg, nonneg) in enumerate(carried):
            S = sp.lil_matrix((k, at))
            S[np.arange(k), start + np.arange(k)] = 1.0
            S[neg, start + k + np.arange(neg.size)] = -1.0
            self.carried[idx] = (S.tocsr(), np.zeros(k), nonneg)

    def max_pool(self, pool: MaxPool, shape: tuple[int, ...]) -> None:
        flat, valid = pool.windows(shape)
        C, P = shape[0], flat.shape[0]
        n_in = int(np.prod(shape[1:]))
        # candidates: for every output entry, the rows of A it takes the max of
        cand = [
            [c * n_in + int(f) for f, v in zip(flat[p], valid[p]) if v]
            for c in range(C)
            for p in range(P)
        ]
        nonneg = self.nonneg.copy()
        while any(len(k) > 1 for k in cand):
            neurons: list[dict[int, float]] = []  # each new ReLU's input, as row -> coefficient
            exprs: list[list[dict[int, float]]] = []  # each candidate, as neuron -> coefficient
            new_nonneg: list[list[bool]] = []

            def carry(row: int, out: dict[int, float]) -> None:
                neurons.append({row: 1.0})
                out[len(neurons) - 1] = 1.0
                if not nonneg[row]:
                    neurons.append({row: -1.0})
                    out[len(neurons) - 1] = -1.0

            for k in cand:
                level, signs = [], []
                for j in range(0, len(k), 2):
                    expr: dict[int, float] = {}
                    if j + 1 < len(k):
                        a, b = k[j], k[j + 1]
                        neurons.append({a: 1.0, b: -1.0} if a != b else {a: 0.0})
                        expr[len(neurons) - 1] = 1.0
                        carry(b, expr)
                        signs.append(bool(nonneg[a] or nonneg[b]))
                    else:
                        carry(k[j], expr)
                        signs.append(bool(nonneg[k[j]]))
                    level.append(expr)
                exprs.append(level)
                new_nonneg.append(signs)
            E = _sparse_rows(neurons, self.A.shape[0])
            self.emit(E)
            flat_exprs = [e for level in exprs for e in level]
            self.A = _sparse_rows(flat_exprs, self.width)
            self.c = np.zeros(len(flat_exprs))
            nonneg = np.array([s for signs in new_nonneg for s in signs], dtype=bool)
            at, cand = 0, []
            for level in exprs:
                cand.append(list(range(at, at + len(level))))
                at += len(level)
        order = [k[0] for k in cand]
        self.A = self.A[order]
        self.c = self.c[order]
        self.nonneg = nonneg[order]


def _sparse_rows(rows: list[dict[int, float]], width: int) -> sp.csr_matrix:
    """A sparse matrix from its rows given as ``{column: value}``."""
    data, cols, ptr = [], [], [0]
    for row in rows:
        cols += list(row)
        data += list(row.values())
        ptr.append(len(cols))
    return sp.csr_matrix((data, cols, ptr), shape=(len(rows), width))


def _margin(net: ReLUConvNet) -> float:
    """``1 + 2 u N`` with ``N`` the sum of the affine layers' fan-ins: the float sums of
    nonnegative terms in the bounds below are rounded by at most ``n u`` relative each
    (``n`` the fan-in), and this factor covers them along the chain."""
    fan = sum(
        layer.weight[0].size + 1 for _, layer, _ in net.leaves() if isinstance(layer, AffineLayer)
    )
    return 1.0 + 2 * _U * (fan + 8)


def _finite(value: float) -> float:
    return value if math.isfinite(value) else math.inf


def path_norm(net: ReLUConvNet) -> float:
    """``scale`` with ``|f(x)| <= scale * max(1, ||x||_inf)`` for every output and input:
    the layers with absolute weights applied to ones (computed once per network)."""
    if "path_norm" not in net._cache:
        r = np.ones(net.input_shape)
        with np.errstate(over="ignore", invalid="ignore"):
            for layer in net.layers:
                r, _ = layer.bound_step(r, np.zeros_like(r), layer)
        net._cache["path_norm"] = _finite(float(np.max(r)) * _margin(net))
    return net._cache["path_norm"]


def difference_bound(p: ReLUConvNet, q: ReLUConvNet) -> float:
    """``bound`` with ``|f_p(x) - f_q(x)| <= bound * max(1, ||x||_inf)`` for every output
    and input. Both networks must have the same layers up to their parameters."""
    if len(p.layers) != len(q.layers) or p.input_shape != q.input_shape:
        raise ArchitectureError(
            "the two networks must have the same layers and input shape (up to parameters)"
        )
    r = np.ones(p.input_shape)
    e = np.zeros(p.input_shape)
    with np.errstate(over="ignore", invalid="ignore"):
        for lp, lq in zip(p.layers, q.layers):
            same_kind(lp, lq)
            r, e = lp.bound_step(r, e, lq)
    return _finite(float(np.max(e)) * _margin(p))


def symmetry_rounding(net: ReLUConvNet) -> float:
    """A bound on the change of ``f_net`` made by rounding the image of a channel
    symmetry (``|f_image - f_exact image| <= bound * max(1, |x|_inf)``): ``4 u L`` times
    the network's scale, L its layers with parameters."""
    L = sum(1 for _, layer, _ in net.leaves() if layer.arrays())
    return 4 * _U * L * path_norm(net)
