"""The generating vector fields of each model, as programs evaluated on jets.

For a model whose loss (for any data) factors through a polynomial map ``phi`` of the
parameters, the gradient flow moves along ``V = span{grad phi_i}`` (Marcotte, Gribonval,
Peyre, "Abide by the law and follow the flow", arXiv 2307.00144). A program here
evaluates ``grad psi_c(theta)`` for ``psi_c = sum_i c_i phi_i`` with coefficients ``c``
drawn at random; the set of such ``c`` spans all coefficient vectors, so random
``grad psi_c`` span ``V`` (and random nested brackets of them span the iterated
brackets). Every program is a polynomial in ``theta``, so it runs unchanged on jets
(:mod:`._field`), which gives the derivatives brackets need.

* ReLU networks, no data: ``phi`` is the path-lifting (one coordinate per path from an
  input or a bias to an output: the product of the weights along it). ``psi`` is the
  sum of the outputs, at input all ones, of the *linear* network with weights
  ``theta * r`` (one random factor per weight): every path appears with coefficient
  ``prod r``, distinct monomials in ``r``, so these ``psi`` span all combinations of
  paths.
* ReLU networks with data ``x_1..x_N``: ``phi`` is the outputs at the data points of the
  polynomial map that equals the network on the activation region of ``theta`` (the
  activation masks at the data are frozen at those of ``theta``); ``psi = sum_k g_k .
  f(x_k)`` with random cotangents ``g_k``.
* Linear fully connected networks: the entries of ``W_N ... W_1`` (with data: of
  ``W x_k``), ``psi = sum_k g_k . W x_k`` with ``x_k`` the unit vectors.
* Linear convolutional networks: the entries of the end-to-end filter ``v``,
  ``psi = <c, v>``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from .._errors import ArchitectureError
from ._field import Field

__all__ = ["DenseProgram", "ConvProgram"]

#: most index tuples the convolutional program enumerates (product of filter sizes)
MAX_CONV_TERMS = 200_000


class DenseProgram:
    """``grad psi`` for layered dense networks (ReLU on a fixed region, or linear).

    Args:
        field: the scalar field.
        widths: ``(n_0, ..., n_L)``.
        biases: whether every layer has a bias (ReLU networks) or none (linear FC).
        inputs: the input points as field scalars, shape ``(n_pts, n_0)``.
        masks: per hidden layer, the 0/1 activation masks at the input points (shape
            ``(n_pts, n_l)``), or None (no ReLU: all ones).
        path_lifting: multiply every weight by a random factor (the path-lifting
            generators; cotangents are then all ones).
        num_generators: the dimension of the span of the generators' coefficients
            (1 means V is spanned by a single field).
    """

    def __init__(
        self,
        field: Field,
        widths: tuple[int, ...],
        *,
        biases: bool,
        inputs: np.ndarray,
        masks: list[np.ndarray] | None,
        path_lifting: bool,
        num_generators: int,
    ):
        self.field, self.widths, self.biases = field, tuple(widths), biases
        self.inputs, self.masks, self.path_lifting = inputs, masks, path_lifting
        self.num_generators = num_generators
        self.slices = []
        pos = 0
        for n, m in zip(self.widths[:-1], self.widths[1:]):
            w = slice(pos, pos + m * n)
            pos += m * n
            b = slice(pos, pos + m) if biases else None
            pos += m if biases else 0
            self.slices.append((w, b))
        self.D = pos

    def random_coeffs(self, B: int, rng: np.random.Generator) -> np.ndarray:
        """Random coefficients of ``B`` generators: weight factors (path-lifting) or
        cotangents ``(B, n_pts, n_L)``."""
        if self.path_lifting:
            return self.field.random((B, self.D), rng)
        return self.field.random((B, self.inputs.shape[0], self.widths[-1]), rng)

    def gradient(self, z: np.ndarray, coeffs: np.ndarray) -> np.ndarray:
        """``grad psi_coeffs`` at the jet ``z`` (shape ``(2**m, B, D)``), same shape."""
        F = self.field
        J, B = z.shape[0], z.shape[1]
        if self.path_lifting:
            z = F.const_mul(coeffs, z)
            G = F.const(np.ones((B, self.inputs.shape[0], self.widths[-1]), dtype=np.int64))
        else:
            G = coeffs
        L = len(self.widths) - 1
        Ws, bs = [], []
        for l, (ws, bsl) in enumerate(self.slices):
            Ws.append(z[:, :, ws].reshape(J, B, self.widths[l + 1], self.widths[l]))
            bs.append(z[:, :, bsl] if bsl is not None else None)
        # forward: H[l] is the (masked) activation of layer l, H[0] the constant inputs
        H: list[Any] = [None]
        X = self.inputs
        for l in range(L - 1):
            WT = np.swapaxes(Ws[l], -1, -2)
            Z = F.const_matmul(X, WT) if l == 0 else F.jet_matmul(H[l], WT)
            if bs[l] is not None:
                Z = F.reduce(Z + bs[l][:, :, None, :])
            if self.masks is not None:
                Z = F.reduce(Z * self.masks[l])
            H.append(Z)
        grads_W: list[Any] = [None] * L
        grads_b: list[Any] = [None] * L
        # backward; Gz is the cotangent of layer l's pre-activation (a constant at l = L)
        Gz = G
        const = True
        for l in range(L - 1, -1, -1):
            GzT = np.swapaxes(Gz, -1, -2)
            if l == 0:
                grads_W[l] = (
                    F.const_matmul(X, GzT, left=False)
                    if not const
                    else self._const_outer(GzT, X, J)
                )
            else:
                grads_W[l] = F.const_matmul(GzT, H[l]) if const else F.jet_matmul(GzT, H[l])
            if self.biases:
                if const:
                    gb = F.zeros((J,) + Gz.shape[:-2] + Gz.shape[-1:])
                    gb[0] = F.reduce(Gz.sum(axis=-2))
                    grads_b[l] = gb
                else:
                    grads_b[l] = F.reduce(Gz.sum(axis=-2))
            if l > 0:
                Gh = F.const_matmul(Gz, Ws[l]) if const else F.jet_matmul(Gz, Ws[l])
                Gz = F.reduce(Gh * self.masks[l - 1]) if self.masks is not None else Gh
                const = False
        parts = []
        for l in range(L):
            parts.append(grads_W[l].reshape(J, B, -1))
            if self.biases:
                parts.append(grads_b[l].reshape(J, B, -1))
        out = np.concatenate(parts, axis=-1)
        if self.path_lifting:
            out = F.const_mul(coeffs, out)
        return out

    def _const_outer(self, GzT: np.ndarray, X: np.ndarray, J: int) -> np.ndarray:
        """``Gz^T X`` for a constant cotangent (a one-layer network), as a jet."""
        F = self.field
        val = F.reduce(np.matmul(GzT, X[None]))
        out = F.zeros((J,) + val.shape)
        out[0] = val
        return out


class ConvProgram:
    """``grad <c, v(theta)>`` for linear convolutional networks, by enumerating the
    index tuples ``(j_1, ..., j_L)`` of ``v = sum_tuples prod_l w_l[j_l]`` (at position
    ``sum_l j_l S_{l-1}``; docs/concepts_linear.md §1)."""

    def __init__(self, field: Field, net: Any):
        self.field = field
        sizes = [math.prod(k) for k in net.filter_shapes]
        if math.prod(sizes) > MAX_CONV_TERMS:
            raise ArchitectureError(
                f"the end-to-end filter of {net!r} is a sum of {math.prod(sizes)} products "
                f"of filter entries, more than {MAX_CONV_TERMS}"
            )
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        self.D = int(self.offsets[-1])
        tuples = np.array(list(itertools.product(*[range(s) for s in sizes])), dtype=int)
        tuples = tuples.reshape(-1, len(sizes))
        pos = np.zeros((tuples.shape[0], net.ndim), dtype=int)
        for l, (k, S) in enumerate(zip(net.filter_shapes, net.cumulative_strides)):
            idx = np.array(np.unravel_index(tuples[:, l], k)).T  # (T, ndim)
            pos += idx * np.asarray(S)[None, :]
        self.flat_pos = np.ravel_multi_index(pos.T, net.end_to_end_shape)
        self.tuples = tuples
        self.size = net.end_to_end_size
        self.num_generators = self.size

    def random_coeffs(self, B: int, rng: np.random.Generator) -> np.ndarray:
        """Random cotangents ``c`` of the end-to-end filter, shape ``(B, |v|)``."""
        return self.field.random((B, self.size), rng)

    def gradient(self, z: np.ndarray, coeffs: np.ndarray) -> np.ndarray:
        """``grad <c, v>`` at the jet ``z`` (shape ``(2**m, B, D)``), same shape."""
        F = self.field
        J, B = z.shape[0], z.shape[1]
        L = self.tuples.shape[1]
        gathered = [z[:, :, self.offsets[l] + self.tuples[:, l]] for l in range(L)]  # (J,B,T)
        one = F.zeros((J, B, self.tuples.shape[0]))
        one[0] = F.const(np.ones((B, self.tuples.shape[0]), dtype=np.int64))
        prefix = [one]
        for g in gathered[:-1]:
            prefix.append(F.jet_mul(prefix[-1], g))
        suffix = [one]
        for g in gathered[:0:-1]:
            suffix.append(F.jet_mul(suffix[-1], g))
        suffix = suffix[::-1]
        c = coeffs[:, self.flat_pos]  # (B, T)
        out = F.zeros((J, B, self.D))
        for l in range(L):
            term = F.const_mul(c, F.jet_mul(prefix[l], suffix[l]))  # (J, B, T)
            block = F.zeros((J, B, self.offsets[l + 1] - self.offsets[l]))
            for t_val in range(block.shape[-1]):
                sel = self.tuples[:, l] == t_val
                block[:, :, t_val] = F.reduce(term[:, :, sel].sum(axis=-1))
            out[:, :, self.offsets[l] : self.offsets[l + 1]] = block
        return out
