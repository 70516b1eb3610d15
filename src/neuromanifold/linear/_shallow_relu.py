"""Shallow ReLU models built on linear networks (docs/concepts_linear.md §6).

The reading implemented here [derived, docs/concepts_linear.md §6]: a shallow ReLU model is

    f_theta(x) = a^T relu(V_theta x),

where ``V_theta`` is the linear map of a linear network and ``a`` the output weights:

* :class:`ShallowReLUCNN`: ``V_theta x = alpha_{v,S} x``, the strided correlation of the
  signal ``x`` with the end-to-end filter ``v = mu(w_1..w_L)`` of a
  :class:`LinearConvNet` (one channel; the hidden units are the output positions).
* :class:`ShallowReLUMLP`: ``V_theta = W = W_L ... W_1`` of a :class:`LinearFCNet`; the
  hidden units are the ``d_L`` rows of ``W``.

Parameters are ``theta = (w_1, ..., w_L, a)``. The NTK is taken w.r.t. ``theta`` at a finite
set of inputs ``X`` stored in the model: ``K[n, n'] = <grad_theta f(x_n), grad_theta f(x_n')>``.

**Function and its fiber.** ``relu(c z) = c relu(z)`` for ``c > 0``, so the function is
unchanged by ``v -> c v, a -> a / c`` (CNN) and by ``W_j -> c_j W_j, a_j -> a_j / c_j`` per
hidden unit (MLP); generically it determines ``(v, a)`` up to that rescaling (the kinks of
f locate the hidden units) and nothing more. ``end_to_end`` returns the canonical
*balanced representative* of the function (the rescaling with equal norms on both sides),
so two parameters realize the same function on generic inputs iff their representatives
agree. The conserved quantities of gradient flow are the linear network's invariants and
the output ones: ``||a||^2 - ||w_L||^2`` (CNN) or ``a_j^2 - ||row j of W_L||^2`` per unit
(MLP). ``fiber(representative, invariants)`` returns the parameters with that function and
those invariants, as a :class:`neuromanifold.ntk.Fiber`:

* CNN: the linear network's fiber for ``v`` (one point per class modulo sign flips), each
  point rescaled together with ``a`` as an (L+1)-layer network by the rescaling lemma of
  docs/concepts_linear.md §2 (one point per class); certified when the linear fiber is.
* MLP with one linear layer (L = 1): the path-lifting closed form, one point.
* MLP with L >= 2: numerical sampling (Levenberg-Marquardt from random starts on the
  polynomial equations ``diag(a) W_L ... W_1 = P``, invariants fixed), not certified.

Limits of the reading: points are listed modulo permutations of hidden units (MLP; they
change neither f nor the NTK), and the function is identified with its representative,
which is exact only for generic inputs (a hidden unit that is never active on the input
space, or a degenerate ``v``, makes the function fiber larger than computed here).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import InputError, NotInNeuromanifoldError, ParameterError, short_repr
from .._results import Result
from .._validation import (
    as_finite_array,
    as_seed_rng,
    check_finite_result,
    check_nonnegative_int,
    check_options,
    check_positive_float,
    check_positive_int,
)
from ..exact._library import apply_rescaling
from ..fibers import Fiber, invariant_scale, invariant_vector
from ._base import LinearNetBase, finite_result
from ._conv import LinearConvNet
from ._fc import LinearFCNet

#: Largest number of input entries a model with random inputs may allocate.
_MAX_INPUT_ENTRIES = 10**7
#: Weighted (relative) residual below which a Levenberg-Marquardt run counts as a fiber point.
_ACCEPT = 1e-10

__all__ = ["ShallowReLUCNN", "ShallowReLUMLP", "path_lifting_check", "PathLiftingCheck"]


def _relu(z: np.ndarray) -> np.ndarray:
    return np.maximum(z, 0.0)


# --------------------------------------------------------------------------- common base
class _ShallowBase(LinearNetBase):
    """What both shallow models share: parameters ``[*linear params, a]``, the NTK at the
    stored inputs, and residual checks."""

    linear: Any
    inputs: np.ndarray

    def _layer_name(self, l: int) -> str:
        return "a" if l == self.num_layers else self.linear._layer_name(l)

    @property
    def num_inputs(self) -> int:
        """Number N of stored inputs (the NTK is N x N)."""
        return self.inputs.shape[0]

    def rank(self, params: Any, *, exact: bool = False, tol: float | None = None):
        """Not defined for the ReLU models: always an :class:`InputError`."""
        raise InputError(
            f"rank() is defined for linear networks; {self!r} has no "
            f"neuromanifold dimension here (use ntk() / jacobian())"
        )

    def random_params(self, seed: Any = 0) -> list[np.ndarray]:
        """Gaussian parameters: the linear network's, then Gaussian output weights ``a``.

        Args:
            seed: an int, None (fresh entropy) or a numpy Generator.
        """
        rng = as_seed_rng(seed)
        return self.linear.random_params(rng) + [rng.standard_normal(self.param_shapes[-1])]

    @finite_result("the NTK")
    def ntk(self, params: Any) -> np.ndarray:
        """``K = J J^T`` with ``J[n] = grad_theta f(x_n)``: the NTK at the stored inputs."""
        J = self.jacobian(params)
        return J @ J.T

    @finite_result("the pre-activations")
    def hidden(self, params: Any, x: Any = None) -> np.ndarray:
        """Pre-activations ``V_theta x`` of the hidden units, shape ``(N, num_hidden)``
        (default: at the stored inputs)."""
        params = self.check_params(params)
        return self._hidden(self._linear_map(params[:-1]), self._as_inputs(x))

    @finite_result("the output")
    def apply(self, params: Any, x: Any = None) -> np.ndarray:
        """``f(x) = a^T relu(V_theta x)`` for a batch ``x`` (default: the stored inputs)."""
        params = self.check_params(params)
        h = self._hidden(self._linear_map(params[:-1]), self._as_inputs(x))
        return _relu(h) @ params[-1]

    @finite_result("the Jacobian")
    def jacobian(self, params: Any) -> np.ndarray:
        """``J[n] = grad_theta f(x_n)`` at the stored inputs, shape ``(N, num_params)``.

        Analytic: with ``h_n = V x_n`` and ``g_n = d f / d V = (a * H(h_n)) (x) x_n`` (H the
        Heaviside step), ``d f / d w = J_lin^T g_n`` and ``d f / d a = relu(h_n)``.
        """
        params = self.check_params(params)
        lin, a = params[:-1], params[-1]
        V = self._linear_map(lin)
        H = self._hidden(V, self.inputs)
        G = self._map_gradient((a[None, :] * (H > 0)), self.inputs)
        return np.hstack([G @ self.linear.jacobian(lin), _relu(H)])

    def _as_inputs(self, x: Any) -> np.ndarray:
        if x is None:
            return self.inputs
        return self._check_inputs(x)

    def _residual(self, params: list, rep: np.ndarray, inv: np.ndarray) -> float:
        r = float(np.linalg.norm(self.end_to_end(params) - rep)) / max(
            float(np.linalg.norm(rep)), 1e-300
        )
        d = invariant_vector(self, params)
        return max(r, float(np.abs(d - inv).max(initial=0.0)) / invariant_scale(inv, params))


# --------------------------------------------------------------------------- ReLU CNN
class ShallowReLUCNN(_ShallowBase):
    """``f(x) = sum_i a_i relu((alpha_{v,S} x)_i)`` with ``v = mu(w_1..w_L)``
    (docs/concepts_linear.md §6).

    Args:
        filter_shapes, strides: the linear convolutional network (as for
            :class:`LinearConvNet`); its end-to-end stride is the stride of the hidden layer.
        inputs: the signals at which the NTK is taken, shape ``(N, n_1, ..., n_D)`` with
            ``n_a >=`` the end-to-end filter size; they fix the number of hidden units
            (the output positions of the correlation).

    >>> net = ShallowReLUCNN.with_random_inputs([2, 2], [2], num_inputs=6, seed=0)
    >>> params = net.random_params(1)
    >>> net.ntk(params).shape, net.invariants(params).shape
    ((6, 6), (2,))
    """

    def __init__(
        self, filter_shapes: Sequence[Any], strides: Sequence[Any] | None = None, inputs: Any = None
    ):
        self.linear = LinearConvNet(filter_shapes, strides)
        if inputs is None:
            raise InputError(
                "inputs are required: the signals at which the NTK is taken "
                "(use ShallowReLUCNN.with_random_inputs for random ones)"
            )
        self.inputs = _nonempty(self._check_inputs(inputs, batch_only=True))
        self.hidden_shape = tuple(
            (n - k) // s + 1
            for n, k, s in zip(
                self.inputs.shape[1:], self.linear.end_to_end_shape, self.linear.end_to_end_stride
            )
        )
        self.num_hidden = math.prod(self.hidden_shape)
        self.param_shapes = tuple(self.linear.filter_shapes) + ((self.num_hidden,),)

    @classmethod
    def with_random_inputs(
        cls,
        filter_shapes: Sequence[Any],
        strides: Sequence[Any] | None = None,
        *,
        num_inputs: int | None = None,
        margin: int = 1,
        seed: Any = 0,
    ) -> "ShallowReLUCNN":
        """A model with Gaussian input signals of spatial size ``k + margin * S`` per axis
        (``k`` the end-to-end filter size, ``S`` its stride), and by default enough of them
        for the NTK to see every function parameter (``|v| + #hidden + 2``)."""
        lin = LinearConvNet(filter_shapes, strides)
        margin = check_nonnegative_int(
            margin,
            "margin (extra strides of signal beyond the end-to-end filter)",
            maximum=_MAX_INPUT_ENTRIES,
        )
        rng = as_seed_rng(seed)
        shape = tuple(k + margin * s for k, s in zip(lin.end_to_end_shape, lin.end_to_end_stride))
        hidden = math.prod(
            (n - k) // s + 1 for n, k, s in zip(shape, lin.end_to_end_shape, lin.end_to_end_stride)
        )
        n = num_inputs if num_inputs is not None else lin.end_to_end_size + hidden + 2
        n = check_positive_int(n, "num_inputs", maximum=_MAX_INPUT_ENTRIES)
        _check_size(n, shape)
        return cls(filter_shapes, strides, rng.standard_normal((n,) + shape))

    def __repr__(self) -> str:
        inner = repr(self.linear)[len("LinearConvNet(") : -1]
        return f"ShallowReLUCNN({inner}, inputs={self.inputs.shape})"

    def _check_inputs(self, x: Any, batch_only: bool = False) -> np.ndarray:
        x = as_finite_array(x, "inputs", error=InputError)
        D = self.linear.ndim
        if x.ndim != D + 1 or any(n < k for n, k in zip(x.shape[1:], self.linear.end_to_end_shape)):
            raise InputError(
                f"inputs must have shape (N, n_1..n_{D}) with n_a >= the end-to-end filter "
                f"size {self.linear.end_to_end_shape}; got shape {x.shape}"
            )
        if not batch_only and x.shape[1:] != self.inputs.shape[1:]:
            raise InputError(
                f"inputs must have spatial shape {self.inputs.shape[1:]} (the "
                f"model's hidden layer has {self.num_hidden} units); got {x.shape}"
            )
        return x

    def _linear_map(self, lin: list) -> np.ndarray:
        return self.linear.end_to_end(lin)

    def _hidden(self, v: np.ndarray, X: np.ndarray) -> np.ndarray:
        ops = [self.linear.end_to_end_operator(x) for x in X]  # (m, |v|) each
        return np.array([M @ v.ravel() for M in ops])

    def _map_gradient(self, weights: np.ndarray, X: np.ndarray) -> np.ndarray:
        # d f / d v = sum_i a_i H(h_i) window_i(x): rows of the correlation operator
        return np.array([w @ self.linear.end_to_end_operator(x) for w, x in zip(weights, X)])

    # ---- function, invariants, fiber
    @finite_result("the function representative")
    def end_to_end(self, params: Any) -> np.ndarray:
        """The balanced representative of the function: ``(c v, a / c)`` flattened and
        concatenated, ``c = sqrt(||a|| / ||v||)`` (zeros for the zero function)."""
        params = self.check_params(params)
        v, a = self.linear.end_to_end(params[:-1]).ravel(), params[-1]
        nv, na = float(np.linalg.norm(v)), float(np.linalg.norm(a))
        if nv == 0 or na == 0:
            return np.zeros(v.size + a.size)
        c = math.sqrt(na / nv)
        return np.concatenate([c * v, a / c])

    @finite_result("the invariants")
    def invariants(self, params: Any) -> np.ndarray:
        """``delta_l = ||w_{l+1}||^2 - ||w_l||^2`` (l < L) and ``||a||^2 - ||w_L||^2``."""
        params = self.check_params(params)
        return np.diff([float(np.sum(p * p)) for p in params])

    def fiber(
        self, end_to_end: Any, invariants: Any, *, start: Any = None, **linear_options: Any
    ) -> Fiber:
        """All parameters with this function representative and these invariants.

        The linear fiber of ``v`` (``LinearConvNet.fiber``, with ``linear_options``) gives
        one point per class modulo sign flips; each is rescaled with ``a`` as an
        (L+1)-layer product by the rescaling lemma (docs/concepts_linear.md §2).

        Args:
            end_to_end: the function representative (see :meth:`end_to_end`).
            invariants: the L invariants (see :meth:`invariants`).
            start: parameters realizing this function (as ``ntk_dependence`` passes them).
                When given and matching ``end_to_end`` and ``invariants`` (to 1e-8
                relative), the exact route is taken: the linear fiber is computed from the
                exact end-to-end polynomial and exact rational invariants of ``start``'s
                float filters (certified as for linear networks). Otherwise the float
                ``v`` of the representative is used (certified in 1D; numerical and not
                certified in D >= 2, where a float v does not factor exactly).
            **linear_options: passed to ``LinearConvNet.fiber``.

        Returns:
            A :class:`~neuromanifold.ntk.Fiber`.
        """
        check_options(self.linear.fiber, linear_options, "LinearConvNet.fiber")
        rep = as_finite_array(end_to_end, "end_to_end", error=InputError).ravel()
        nv = self.linear.end_to_end_size
        if rep.size != nv + self.num_hidden:
            raise InputError(
                f"end_to_end must have {nv + self.num_hidden} entries (v and a) "
                f"for {self!r}; got {rep.size}"
            )
        inv = as_finite_array(invariants, "invariants", ndim=1, error=InputError)
        L = self.linear.num_layers
        if inv.size != L:
            raise InputError(f"invariants must have {L} entries for {self!r}; got {inv.size}")
        v, a = rep[:nv].reshape(self.linear.end_to_end_shape), rep[nv:]
        if not np.any(v) or not np.any(a):
            raise NotInNeuromanifoldError(
                "the zero function: its fiber is not finite (every theta with v = 0 or a = 0)"
            )
        notes: tuple = ()
        if L == 1:
            lin_points, certified, signs, count = [[v]], True, 1, 1
            method = "one linear layer: the rescaling lemma only"
        else:
            target_v, target_d, route = v, inv[:-1], "float v"
            if start is not None:
                start = self.check_params(start)
                if self._residual(start, rep, inv) <= 1e-8:
                    # start's own (v, a): its linear part realizes v, not the
                    # representative's c v, so its output weights go with it
                    target_v, target_d = self.linear.exact_target(start[:-1])
                    a = start[-1]
                    route = "exact polynomial of start"
            lin_fiber = self.linear.fiber(target_v, target_d, **linear_options)
            lin_points, certified = list(lin_fiber.points), bool(lin_fiber.certified)
            signs = int(getattr(lin_fiber, "num_sign_patterns", 2 ** (L - 1)))
            count = int(getattr(lin_fiber, "num_assignments", 0) or len(lin_points))
            notes = tuple(getattr(lin_fiber, "notes", ()))
            method = (
                f"linear fiber from the {route} ({getattr(lin_fiber, 'method', '?')}) "
                f"+ rescaling lemma with the output layer"
            )
        points = []
        for lin in lin_points:
            stacked = [np.array(p, dtype=float)[None] for p in self.linear.check_params(lin) + [a]]
            apply_rescaling(stacked, inv)  # in log space: tiny layers do not underflow
            points.append([p[0] for p in stacked])
        res = max((self._residual(p, rep, inv) for p in points), default=0.0)
        check_finite_result([res, points], f"the fiber of {self!r}")
        return Fiber(
            points=points,
            num_sign_patterns=signs,
            certified=certified,
            method=method,
            dimension=0,
            num_assignments=count,
            max_residual=res,
            notes=notes,
        )


# --------------------------------------------------------------------------- ReLU MLP
class ShallowReLUMLP(_ShallowBase):
    """``f(x) = a^T relu(W_L ... W_1 x)``: a one-hidden-layer ReLU MLP whose first layer is
    a linear fully connected network (docs/concepts_linear.md §6).

    Args:
        widths: ``(d_0, ..., d_L)`` of the linear network; ``d_L`` hidden units. L = 1 is
            the ordinary one-hidden-layer ReLU network ``sum_j a_j relu(b_j^T x)``.
        inputs: the inputs at which the NTK is taken, shape ``(N, d_0)``.

    >>> net = ShallowReLUMLP.with_random_inputs([2, 3, 2], num_inputs=5, seed=0)
    >>> params = net.random_params(1)
    >>> net.ntk(params).shape, [d.shape for d in net.invariants(params)]
    ((5, 5), [(3, 3), (2,)])
    """

    def __init__(self, widths: Sequence[int], inputs: Any = None):
        self.linear = LinearFCNet(widths)
        if inputs is None:
            raise InputError(
                "inputs are required: the points at which the NTK is taken "
                "(use ShallowReLUMLP.with_random_inputs for random ones)"
            )
        self.inputs = _nonempty(self._check_inputs(inputs))
        self.num_hidden = self.linear.widths[-1]
        self.param_shapes = tuple(self.linear.shapes) + ((self.num_hidden,),)

    @classmethod
    def with_random_inputs(
        cls, widths: Sequence[int], *, num_inputs: int | None = None, seed: Any = 0
    ) -> "ShallowReLUMLP":
        """A model with Gaussian inputs, by default ``(d_0 + 1) d_L + 2`` of them."""
        lin = LinearFCNet(widths)
        rng = as_seed_rng(seed)
        n = num_inputs if num_inputs is not None else (lin.widths[0] + 1) * lin.widths[-1] + 2
        n = check_positive_int(n, "num_inputs", maximum=_MAX_INPUT_ENTRIES)
        _check_size(n, (lin.widths[0],))
        return cls(widths, rng.standard_normal((n, lin.widths[0])))

    def __repr__(self) -> str:
        return f"ShallowReLUMLP(widths={list(self.linear.widths)}, inputs={self.inputs.shape})"

    def _check_inputs(self, x: Any, batch_only: bool = False) -> np.ndarray:
        x = as_finite_array(x, "inputs", error=InputError)
        d0 = self.linear.widths[0]
        if x.ndim != 2 or x.shape[1] != d0:
            raise InputError(f"inputs must have shape (N, {d0}); got shape {x.shape}")
        return x

    def _linear_map(self, lin: list) -> np.ndarray:
        return self.linear.end_to_end(lin)

    def _hidden(self, W: np.ndarray, X: np.ndarray) -> np.ndarray:
        return X @ W.T

    def _map_gradient(self, weights: np.ndarray, X: np.ndarray) -> np.ndarray:
        # d f / d W = (a * H(W x)) x^T, row-major
        return (weights[:, :, None] * X[:, None, :]).reshape(X.shape[0], -1)

    # ---- function, invariants, fiber
    @finite_result("the function representative")
    def end_to_end(self, params: Any) -> np.ndarray:
        """The balanced representative of the function, shape ``(d_L, d_0 + 1)``: row j is
        ``(c_j W_j, a_j / c_j)`` with ``c_j = sqrt(|a_j| / ||W_j||)`` (zero for a unit with
        ``a_j = 0`` or ``W_j = 0``). Units are not sorted (points are modulo permutations)."""
        params = self.check_params(params)
        W, a = self.linear.end_to_end(params[:-1]), params[-1]
        out = np.zeros((W.shape[0], W.shape[1] + 1))
        for j in range(W.shape[0]):
            nw, na = float(np.linalg.norm(W[j])), abs(float(a[j]))
            if nw > 0 and na > 0:
                c = math.sqrt(na / nw)
                out[j, :-1], out[j, -1] = c * W[j], a[j] / c
        return out

    @finite_result("the invariants")
    def invariants(self, params: Any) -> list[np.ndarray]:
        """``Delta_l = W_{l+1}^T W_{l+1} - W_l W_l^T`` (l < L) and, per hidden unit,
        ``a_j^2 - ||row j of W_L||^2``."""
        params = self.check_params(params)
        return self.linear.invariants(params[:-1]) + [
            params[-1] ** 2 - np.sum(params[-2] ** 2, axis=1)
        ]

    def _check_fiber_args(self, end_to_end: Any, invariants: Any):
        rep = as_finite_array(end_to_end, "end_to_end", error=InputError)
        d0, dL = self.linear.widths[0], self.num_hidden
        if rep.size != dL * (d0 + 1):
            raise InputError(
                f"end_to_end must have shape ({dL}, {d0 + 1}) for {self!r}; got shape {rep.shape}"
            )
        rep = rep.reshape(dL, d0 + 1)
        if not isinstance(invariants, (list, tuple)) or len(invariants) != self.linear.num_layers:
            raise InputError(
                f"invariants must be a list of {self.linear.num_layers - 1} "
                f"matrices and the per-unit vector; got {short_repr(invariants)}"
            )
        shapes = [(d, d) for d in self.linear.widths[1:-1]] + [(dL,)]
        inv = [
            as_finite_array(d, f"invariant {i + 1}", shape=s, error=InputError)
            for i, (d, s) in enumerate(zip(invariants, shapes))
        ]
        if np.any(np.all(rep == 0, axis=1)):
            raise NotInNeuromanifoldError(
                "a hidden unit of the function is zero: its fiber is not finite-dimensional "
                "in the direction of that unit"
            )
        return rep, inv

    def fiber(
        self,
        end_to_end: Any,
        invariants: Any,
        *,
        num_starts: int = 20,
        seed: Any = 0,
        max_iter: int = 200,
        start: Any = None,
    ) -> Fiber:
        """Parameters with this function representative and these invariants.

        L = 1: per unit, with ``z_j = a_j b_j`` and ``delta_j = a_j^2 - ||b_j||^2``:
        ``a_j^2 = (delta_j + sqrt(delta_j^2 + 4 ||z_j||^2)) / 2`` (the sign of ``a_j`` is the
        function's), ``b_j = z_j / a_j``: one point, certified.
        L >= 2: Levenberg-Marquardt from ``num_starts`` random starts on
        ``diag(a) W_L ... W_1 = P`` and the invariants, then the sign of each ``a_j`` set
        to the function's by flipping ``(a_j, row j of W_L)``; not certified. Every
        equation is relative (unit j's divided by ``||P_j||``, the invariants by their
        size), so a unit with a small output weight counts as much as the others; the
        starts are Gaussian layers with the squared norms whose differences the traces of
        the invariants prescribe. A ``start`` (parameters, as ``ntk_dependence`` passes
        them) that lies on the fiber is kept as the first point.

        Args:
            end_to_end: the function representative (see :meth:`end_to_end`).
            invariants: the L - 1 matrices and the per-unit vector (see :meth:`invariants`).
            num_starts: random starts of the search (L >= 2; at most 10000).
            seed: seed of the starts (int, None or a numpy Generator).
            max_iter: iterations per start (at most 100000).
            start: parameters to keep as a point when they lie on the fiber.

        Returns:
            A :class:`~neuromanifold.ntk.Fiber`.

        Raises:
            NotInNeuromanifoldError: a zero hidden unit, or (L >= 2) no start converged.
                The message gives the starts, the iterations and the best residual reached;
                a failed search does not show that the fiber is empty (more starts, another
                seed or a ``start`` are the remedies).

        >>> net = ShallowReLUMLP.with_random_inputs([3, 2, 2], seed=2)
        >>> p = net.random_params(782)
        >>> fib = net.fiber(net.end_to_end(p), net.invariants(p), num_starts=3, seed=0)
        >>> len(fib.points), fib.max_residual < 1e-10, fib.certified
        (3, True, False)
        """
        rep, inv = self._check_fiber_args(end_to_end, invariants)
        max_iter = check_positive_int(max_iter, "max_iter", maximum=100_000)
        num_starts = check_positive_int(num_starts, "num_starts", maximum=10_000)
        rng = as_seed_rng(seed)
        if start is not None:
            start = self.check_params(start)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            fib = self._fiber(rep, inv, num_starts, rng, max_iter, start)
        check_finite_result([fib.points, fib.max_residual], f"the fiber of {self!r}")
        return fib

    def _fiber(self, rep, inv, num_starts, rng, max_iter, start) -> Fiber:
        P = rep[:, :-1] * rep[:, -1:]  # rows a_j W_j
        signs = np.sign(rep[:, -1])
        flat_inv = np.concatenate([d.ravel() for d in inv])
        if self.linear.num_layers == 1:
            delta = inv[-1]
            z2 = np.sum(P * P, axis=1)
            a2 = (delta + np.sqrt(delta * delta + 4 * z2)) / 2
            a = signs * np.sqrt(a2)
            point = [P / a[:, None], a]
            return Fiber(
                points=[point],
                num_sign_patterns=1,
                certified=True,
                method="path-lifting closed form (docs/concepts_linear.md §6)",
                dimension=0,
                num_assignments=1,
                max_residual=self._residual(point, rep, flat_inv),
            )
        norms = self._start_norms(P, inv)
        weights = self._equation_weights(P, flat_inv)
        points, residuals, nullities = [], [], []
        if start is not None:
            if self._residual(start, rep, flat_inv) <= 1e-10:
                points.append(start)
                residuals.append(self._residual(start, rep, flat_inv))
                F = self._constraints(self.flatten(start), P, flat_inv, weights)[1]
                sv = np.linalg.svd(F, compute_uv=False)
                nullities.append(int(F.shape[1] - np.sum(sv > 1e-8 * sv[0])))
        best = math.inf
        for _ in range(num_starts):
            theta0 = self._random_start(rng, norms)
            theta, rel, F = self._solve(theta0, P, flat_inv, max_iter, weights)
            best = min(best, rel)
            if rel > _ACCEPT:
                continue
            params = self.unflatten(theta)
            flip = np.sign(params[-1]) != signs
            params[-1][flip] *= -1
            params[-2][flip] *= -1
            points.append(params)
            residuals.append(self._residual(params, rep, flat_inv))
            sv = np.linalg.svd(F, compute_uv=False)
            nullities.append(int(F.shape[1] - np.sum(sv > 1e-8 * sv[0])))
        if not points:
            raise NotInNeuromanifoldError(
                f"no parameter found with this function and these invariants: "
                f"Levenberg-Marquardt from {num_starts} random start(s) of at most {max_iter} "
                f"iterations each reached a best relative residual of {best:.1e} (a point "
                f"needs <= {_ACCEPT:.0e}). The search is numerical and can miss a non-empty "
                f"fiber: try more starts (num_starts), another seed or more iterations "
                f"(max_iter), or pass start= parameters that realize the function"
            )
        return Fiber(
            points=points,
            num_sign_patterns=1,
            certified=False,
            method=f"Levenberg-Marquardt from {num_starts} random starts",
            dimension=max(nullities),
            num_assignments=num_starts,
            max_residual=max(residuals),
        )

    def _start_norms(self, P: np.ndarray, inv: list) -> np.ndarray:
        """Squared layer norms ``n_1..n_{L+1}`` (the last for ``a``) for the random starts.

        The traces of the invariants fix their differences, ``n_{l+1} - n_l = tr Delta_l``
        and ``n_{L+1} - n_L = sum_j delta_j``; the free offset is chosen so that a product
        of Gaussian layers with these norms has the size of ``P`` (``E ||A B||^2 =
        ||A||^2 ||B||^2 / d`` for Gaussian ``A``, ``B`` with inner width ``d``):
        ``prod_l n_l = ||P||^2 prod_{l=1..L} d_l``. Starts on the scale of ``P`` alone
        miss a fiber whose layers are much larger than ``||P||^(1 / (L + 1))`` (large
        invariants): there Levenberg-Marquardt mostly ends in local minima.
        """
        C = np.concatenate(
            [[0.0], np.cumsum([float(np.trace(d)) for d in inv[:-1]] + [float(np.sum(inv[-1]))])]
        )
        C -= C.min()
        target = 2 * math.log(max(float(np.linalg.norm(P)), 1e-300)) + sum(
            math.log(d) for d in self.linear.widths[1:]
        )
        # sum_l log(C_l + c) is increasing in c >= 0: bisect in log(c)
        lo, hi = -700.0, 700.0
        for _ in range(100):
            mid = (lo + hi) / 2
            if float(np.sum(np.log(C + math.exp(mid)))) < target:
                lo = mid
            else:
                hi = mid
        return C + math.exp(hi)

    def _random_start(self, rng: np.random.Generator, norms: np.ndarray) -> np.ndarray:
        """Gaussian parameters, each layer rescaled to the squared norm ``norms[l]``."""
        theta = rng.standard_normal(self.num_params)
        pos = 0
        for shape, n in zip(self.param_shapes, norms):
            k = math.prod(shape)
            block = theta[pos : pos + k]
            block *= math.sqrt(n) / max(float(np.linalg.norm(block)), 1e-300)
            pos += k
        return theta

    def _equation_weights(self, P: np.ndarray, inv: np.ndarray) -> tuple[np.ndarray, float]:
        """Row weights that make every equation relative: ``1 / ||P_j||`` for unit j's
        equations ``a_j W_j = P_j`` and ``1 / s`` for the invariants, with ``s`` the larger
        of ``||inv||`` and the squared parameter scale ``||P||^(2 / (L + 1))``.

        Unweighted, a unit with a small ``P_j`` (e.g. a tiny output weight next to O(1)
        invariants) contributes almost nothing to the cost, and Levenberg-Marquardt stalls
        with that unit unfitted (relative residual ~1e-4, seen on realizable instances).
        """
        norms = np.linalg.norm(P, axis=1)
        floor = 1e-8 * float(norms.max(initial=0.0))
        w = 1.0 / np.maximum(norms, max(floor, 1e-300))
        s = max(
            float(np.linalg.norm(P)) ** (2.0 / (self.linear.num_layers + 1)),
            float(np.linalg.norm(inv)),
            1e-300,
        )
        return w, s

    def _constraints(self, theta: np.ndarray, P: np.ndarray, inv: np.ndarray, weights):
        """Weighted residual of ``diag(a) W = P`` and the invariants, and its Jacobian
        (``weights`` from :meth:`_equation_weights`). Unvalidated and analytic (this is
        the solver's inner loop); ``tests/linear/test_shallow_relu.py`` checks it against
        ``invariants`` and ``invariant_jacobian``."""
        w, s = weights
        params, pos = [], 0
        for shape in self.param_shapes:
            n = math.prod(shape)
            params.append(theta[pos : pos + n].reshape(shape))
            pos += n
        lin, a = params[:-1], params[-1]
        outer_inner = self.linear._outer_inner(lin)
        W = lin[-1] @ outer_inner[-1][1]
        offsets = np.cumsum([0] + [math.prod(shape) for shape in self.param_shapes])
        # invariants Delta_l = A^T A - B B^T (A = W_{l+1}, B = W_l) and a_j^2 - ||W_L[j]||^2
        values, rows = [], []
        for l in range(len(lin) - 1):
            A, B = lin[l + 1], lin[l]
            d = B.shape[0]
            values.append((A.T @ A - B @ B.T).ravel())
            I = np.eye(d)
            dA = np.einsum("jp,iq->pqij", I, A) + np.einsum("ip,jq->pqij", A, I)
            dB = -(np.einsum("ip,qj->pqij", I, B) + np.einsum("pj,iq->pqij", B, I))
            block = np.zeros((d * d, theta.size))
            block[:, offsets[l + 1] : offsets[l + 2]] = dA.reshape(d * d, -1)
            block[:, offsets[l] : offsets[l + 1]] = dB.reshape(d * d, -1)
            rows.append(block)
        WL = lin[-1]
        values.append(a * a - np.sum(WL * WL, axis=1))
        block = np.zeros((a.size, theta.size))
        block[:, offsets[-3] : offsets[-2]] = -2 * (np.eye(a.size)[:, :, None] * WL[None]).reshape(
            a.size, -1
        )
        block[:, offsets[-2] :] = 2 * np.diag(a)
        rows.append(block)
        r = np.concatenate(
            [(w[:, None] * (a[:, None] * W - P)).ravel(), (np.concatenate(values) - inv) / s]
        )
        # d(diag(a) W)/d W_l = (diag(a) A_l) kron B_l^T ; d/d a_j = e_j (x) W_j
        blocks = [np.kron((w * a)[:, None] * A, B.T) for A, B in outer_inner]
        da = np.zeros((P.size, a.size))
        for j in range(a.size):
            da[j * P.shape[1] : (j + 1) * P.shape[1], j] = w[j] * W[j]
        F = np.vstack([np.hstack(blocks + [da]), np.vstack(rows) / s])
        return r, F

    def _solve(self, theta: np.ndarray, P: np.ndarray, inv: np.ndarray, max_iter: int, weights):
        """Damped Gauss-Newton on the weighted (relative) equations: each iteration tries
        the minimal-norm Gauss-Newton step (the system is underdetermined), shortened up
        to five times; if none decreases the cost, a Levenberg-Marquardt step damped with
        the diagonal of ``F^T F`` (Marquardt's scaling: layers of very different sizes).
        Plain Levenberg-Marquardt crawled for hundreds of iterations in the curved valleys
        of instances with one large layer. Returns the point, its weighted residual norm
        and the Jacobian there."""
        r, F = self._constraints(theta, P, inv, weights)
        lam = 1e-2
        cost = float(r @ r)
        for _ in range(max_iter):
            if math.sqrt(cost) <= 1e-14:
                break
            # the minimal-norm Gauss-Newton step, quartered until it decreases the cost
            gn, *_ = np.linalg.lstsq(F, -r, rcond=None)
            t, moved = 1.0, False
            for _ in range(6):
                r2, F2 = self._constraints(theta + t * gn, P, inv, weights)
                c2 = float(r2 @ r2)
                if c2 < cost:
                    theta, r, F, cost, moved = theta + t * gn, r2, F2, c2, True
                    break
                t /= 4
            if moved:
                continue
            if math.sqrt(cost) <= 1e-12:  # rounding level: Gauss-Newton cannot improve
                break
            g = F.T @ r
            FtF = F.T @ F
            D = np.maximum(np.diag(FtF), 1e-12 * max(float(np.trace(FtF)), 1e-300))
            step = np.linalg.solve(FtF + lam * np.diag(D), -g)
            r2, F2 = self._constraints(theta + step, P, inv, weights)
            c2 = float(r2 @ r2)
            if c2 < cost:
                theta, r, F, cost = theta + step, r2, F2, c2
                lam = max(lam / 5, 1e-15)
            else:
                lam *= 4
                if lam > 1e20:
                    break
        return theta, math.sqrt(cost), F


# --------------------------------------------------------------------------- path lifting
@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class PathLiftingCheck(Result):
    """The path-lifting reading of docs/concepts_linear.md §6, computed.

    For ``f(x) = sum_j a_j relu(b_j^T x)`` with ``z_j = a_j b_j`` and
    ``delta_j = a_j^2 - ||b_j||^2``, the kernel of unit j in z-coordinates is
    ``K_j = J_j J_j^T = b_j b_j^T + a_j^2 I`` (from theta), and equals
    ``a_j^2 I + z_j z_j^T / a_j^2`` with ``a_j^2 = (delta_j + sqrt(delta_j^2 + 4||z_j||^2))/2``
    (from ``(z_j, delta_j)`` only). The NTK at inputs ``x_n`` is then
    ``sum_j H(b_j x_n) H(b_j x_n') x_n^T K_j x_n'``.

    Attributes:
        max_kernel_difference: ``max_j ||K_j(theta) - K_j(z, delta)|| / ||K_j(theta)||``.
        max_ntk_difference: relative difference between the model's NTK (from theta) and
            the NTK assembled from ``(z, delta)`` and the activation pattern.
        num_units: number of hidden units.
        independent: both differences are below ``tol``.
        tol: the tolerance.
    """

    max_kernel_difference: float
    max_ntk_difference: float
    num_units: int
    independent: bool
    tol: float


def _nonempty(inputs: np.ndarray) -> np.ndarray:
    if inputs.shape[0] == 0:
        raise InputError(
            f"inputs must hold at least one input (the NTK is taken at them); "
            f"got shape {inputs.shape}"
        )
    return inputs


def _check_size(n: int, shape: tuple[int, ...]) -> None:
    if n * math.prod(shape) > _MAX_INPUT_ENTRIES:
        raise InputError(
            f"{n} random inputs of shape {shape} exceed the size limit of "
            f"{_MAX_INPUT_ENTRIES} entries"
        )


def path_lifting_check(params: Any, inputs: Any, *, tol: float = 1e-10) -> PathLiftingCheck:
    """Check that the NTK of a one-hidden-layer ReLU net depends on ``(z_j, delta_j)`` only.

    Args:
        params: ``[B, a]`` with ``B`` of shape ``(m, d)`` (rows ``b_j``) and ``a`` of shape
            ``(m,)``, i.e. parameters of ``ShallowReLUMLP([d, m], inputs)``.
        inputs: shape ``(N, d)``.
        tol: relative tolerance of the verdict.

    Returns:
        A :class:`PathLiftingCheck` (``.independent`` and the measured differences).

    >>> rng = np.random.default_rng(0)
    >>> chk = path_lifting_check([rng.standard_normal((3, 2)), rng.standard_normal(3)],
    ...                          rng.standard_normal((5, 2)))
    >>> chk.independent
    True
    """
    if not isinstance(params, (list, tuple)) or len(params) != 2:
        raise ParameterError(
            f"params must be [B, a] (one linear layer and the output "
            f"weights); got {short_repr(params)}"
        )
    tol = check_positive_float(tol, "tol")
    B = as_finite_array(params[0], "B", ndim=2)
    if B.size == 0:
        raise ParameterError(f"B must have at least one row and one column; got shape {B.shape}")
    model = ShallowReLUMLP([B.shape[1], B.shape[0]], inputs)
    B, a = model.check_params(params)
    if np.any(a == 0):
        # z_j = 0 and delta_j = -||b_j||^2 leave the direction of b_j free: K_j = b_j b_j^T
        # is then not a function of (z_j, delta_j)
        raise ParameterError(
            f"path lifting needs every output weight a_j != 0 (with "
            f"a_j = 0 the direction of b_j is not determined by "
            f"(z_j, delta_j)); got a = {short_repr(a)}"
        )
    # every quantity compared is homogeneous: scale B, a and the inputs by powers of two
    # (exact) to unit size, so that extreme magnitudes neither overflow nor underflow
    e = int(np.frexp(max(np.abs(B).max(), np.abs(a).max()))[1])
    ex = int(np.frexp(np.abs(model.inputs).max())[1]) if np.any(model.inputs) else 0
    B, a = np.ldexp(B, -e), np.ldexp(a, -e)
    model = ShallowReLUMLP([B.shape[1], B.shape[0]], np.ldexp(model.inputs, -ex))
    if np.any(a == 0):
        raise ParameterError(
            f"the output weights span more than the float64 range "
            f"(relative sizes below 2^-1074); got a = {short_repr(params[1])}"
        )
    z = a[:, None] * B
    delta = a**2 - np.sum(B * B, axis=1)
    # a_j^2 is the positive root of x^2 - delta_j x - ||z_j||^2; for delta_j < 0 the
    # textbook formula cancels (||b_j|| >> |a_j|), so use the equivalent stable form
    zz = np.sum(z * z, axis=1)
    root = np.sqrt(delta**2 + 4 * zz)
    with np.errstate(divide="ignore", invalid="ignore"):
        a2 = np.where(delta >= 0, (delta + root) / 2, 2 * zz / (root - delta))
    d = B.shape[1]
    worst = 0.0
    kernels = []
    for j in range(B.shape[0]):
        from_theta = np.outer(B[j], B[j]) + a[j] ** 2 * np.eye(d)
        from_inv = a2[j] * np.eye(d) + np.outer(z[j], z[j]) / a2[j]
        kernels.append(from_inv)
        worst = max(
            worst,
            float(np.linalg.norm(from_theta - from_inv) / max(np.linalg.norm(from_theta), 1e-300)),
        )
    X = model.inputs
    H = (X @ B.T > 0).astype(float)  # (N, m); sign(a) B x = z x / |a|
    K = sum(np.outer(H[:, j], H[:, j]) * (X @ kernels[j] @ X.T) for j in range(B.shape[0]))
    K_model = model.ntk([B, a])
    ntk_diff = float(np.linalg.norm(K - K_model) / max(np.linalg.norm(K_model), 1e-300))
    if not (np.isfinite(worst) and np.isfinite(ntk_diff)):
        raise ParameterError(
            f"overflow: the sizes of B and a differ by more than the float64 "
            f"range allows (a_j^2 and ||b_j||^2 cannot both be represented "
            f"at the scale 2^{e} of the parameters)"
        )
    return PathLiftingCheck(
        max_kernel_difference=worst,
        max_ntk_difference=ntk_diff,
        num_units=int(B.shape[0]),
        independent=bool(worst <= tol and ntk_diff <= tol),
        tol=tol,
    )
