"""Linear convolutional networks in any dimension D (docs/concepts_linear.md §1, 1.2).

Layer l correlates its input with a filter ``w_l`` (shape ``(k_{l,1}, ..., k_{l,D})``)
at stride ``s_l``: ``(alpha_{w,s} x)_i = sum_j w_j x_{i*s + j}`` (per axis), no padding,
no bias; layer 1 acts first. The composition is again such a map, with end-to-end
filter ``v = w_1 * up(w_2, S_1) * ... * up(w_L, S_{L-1})`` where ``*`` is full
convolution and ``up(w, S)`` spreads ``w`` on the lattice ``S Z^D``; equivalently
``pi(v)(t) = prod_l pi(w_l)(t^{S_{l-1}})`` (docs/concepts_linear.md §1).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import flint
import numpy as np
from scipy import fft as sp_fft
from scipy import signal

from .._errors import ArchitectureError, InputError, short_repr
from .._tolerance import RESIDUAL_TOL
from .._validation import (
    as_finite_array,
    as_real_array,
    as_seed_rng,
    check_finite_result,
    check_param_count,
    check_positive_int,
)
from ..exact import to_fmpq
from ._base import LinearNetBase, finite_result
from ._fiber_conv import conv_fiber

__all__ = ["LinearConvNet", "correlate", "upsample"]


#: the largest array (entries) a linear-network computation may allocate; beyond it the
#: strides or filters are absurd for this machine and a clear error beats a MemoryError
MAX_ENTRIES = 10**8


def upsample(w: np.ndarray, stride: Sequence[int]) -> np.ndarray:
    """``up(w, S)``: insert ``S - 1`` zeros between consecutive entries along each axis.

    Args:
        w: an array with one axis per entry of ``stride``.
        stride: positive ints, one per axis.

    Returns:
        The upsampled array, of shape ``S * (k - 1) + 1`` along each axis.

    >>> upsample(np.array([1.0, 2.0, 3.0]), (2,))
    array([1., 0., 2., 0., 3.])
    """
    w = as_finite_array(w, "w", error=InputError)
    if w.ndim == 0 or w.size == 0:
        raise InputError(
            f"w must have at least one axis and one entry per axis; got shape {w.shape}"
        )
    stride = _as_tuple(stride, w.ndim, "stride", InputError)
    if all(s == 1 for s in stride):
        return w
    shape = tuple((k - 1) * s + 1 for k, s in zip(w.shape, stride))
    if math.prod(shape) > MAX_ENTRIES:
        raise InputError(
            f"upsample would create {math.prod(shape)} entries (filter shape "
            f"{w.shape}, stride {stride}); the limit is {MAX_ENTRIES}"
        )
    out = np.zeros(shape, dtype=w.dtype)
    out[tuple(slice(None, None, s) for s in stride)] = w
    return out


def correlate(x: Any, filt: Any, stride: int | Sequence[int] = 1) -> np.ndarray:
    """Valid strided correlation ``y_i = sum_j filt_j x_{i*stride + j}`` over the last D axes.

    Args:
        x: signal(s), shape ``(..., n_1, ..., n_D)`` with D = ``filt.ndim``.
        filt: the filter, shape ``(k_1, ..., k_D)``.
        stride: an int or a D-tuple.

    Returns:
        Array of shape ``(..., m_1, ..., m_D)`` with ``m_a = (n_a - k_a) // s_a + 1``.

    >>> correlate([1.0, 2.0, 3.0, 4.0, 5.0], [1.0, -1.0], stride=2)
    array([-1., -1.])
    """
    x = as_finite_array(x, "x", error=InputError)
    filt = as_finite_array(filt, "filter", error=InputError)
    D = filt.ndim
    if D == 0 or filt.size == 0:
        raise InputError(
            f"filter must have at least one axis and one entry per axis; got shape {filt.shape}"
        )
    stride = _as_tuple(stride, D, "stride", InputError)
    if x.ndim < D:
        raise InputError(
            f"signal must have at least {D} axes for a {D}D filter; got shape {x.shape}"
        )
    spatial = x.shape[x.ndim - D :]
    if any(n < k for n, k in zip(spatial, filt.shape)):
        raise InputError(
            f"signal of spatial shape {spatial} is shorter than the filter {filt.shape}"
        )
    axes = tuple(range(x.ndim - D, x.ndim))
    # entries beyond 2**500 are scaled by a power of two first (exact), so that a sum of
    # products near the float range is formed in range; the result is checked, not inf
    ex = _big_exponent(x)
    ef = _big_exponent(filt)
    x, filt = np.ldexp(x, -ex), np.ldexp(filt, -ef)
    windows = np.lib.stride_tricks.sliding_window_view(x, filt.shape, axis=axes)
    windows = windows[
        (Ellipsis,) + tuple(slice(None, None, s) for s in stride) + (slice(None),) * D
    ]
    out = np.tensordot(windows, filt, axes=D)
    if ex or ef:
        with np.errstate(over="ignore"):
            out = check_finite_result(np.ldexp(out, ex + ef), "the correlation")
    return out


def _big_exponent(a: np.ndarray) -> int:
    """The binary exponent of ``max |a|`` when it exceeds ``2**500``, else 0."""
    peak = float(np.max(np.abs(a))) if a.size else 0.0
    return int(np.frexp(peak)[1]) if peak > 2.0**500 else 0


def _as_tuple(
    value: Any, D: int, name: str, error: type[Exception], broadcast: bool = True
) -> tuple[int, ...]:
    """An int (when ``broadcast`` or D == 1) or a D-sequence of ints, as a D-tuple of
    positive ints."""
    if (
        isinstance(value, (int, np.integer))
        and not isinstance(value, bool)
        and (broadcast or D == 1)
    ):
        vals = (int(value),) * D
    elif (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) == D
        and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
    ):
        vals = tuple(int(v) for v in value)
    else:
        raise error(
            f"{name} must be a positive int or a tuple of {D} positive ints; "
            f"got {short_repr(value)}"
        )
    if any(v < 1 for v in vals):
        raise error(f"{name} must be positive in every axis; got {value!r}")
    return vals


class LinearConvNet(LinearNetBase):
    """A linear convolutional network: filter shapes and strides (docs/concepts_linear.md §1).

    Args:
        filter_shapes: one entry per layer (layer 1 acts first): ints for 1D, or
            D-tuples of ints for D-dimensional filters.
        strides: one entry per layer except the last (ints or D-tuples); a list with one
            entry per layer is accepted and its last entry ignored (the last stride does
            not affect the end-to-end filter). ``None`` means all strides 1.

    >>> net = LinearConvNet([3, 2, 2], strides=[2, 2])
    >>> net.end_to_end_shape, net.dimension
    ((9,), 5)
    >>> params = net.random_params(seed=0)
    >>> net.end_to_end(params).shape
    (9,)
    """

    def __init__(self, filter_shapes: Sequence[Any], strides: Sequence[Any] | None = None):
        if (
            isinstance(filter_shapes, (str, bytes))
            or not isinstance(filter_shapes, Sequence)
            or len(filter_shapes) == 0
        ):
            raise ArchitectureError(
                f"filter_shapes must be a non-empty list of ints (1D) or of D-tuples; "
                f"got {short_repr(filter_shapes)}"
            )
        first = filter_shapes[0]
        D = (
            1
            if isinstance(first, (int, np.integer))
            else (len(first) if isinstance(first, Sequence) else 0)
        )
        if D == 0:
            raise ArchitectureError(
                f"filter_shapes must be a list of ints (1D) or of D-tuples; got "
                f"{short_repr(filter_shapes)}"
            )
        shapes = []
        for l, k in enumerate(filter_shapes, start=1):
            try:
                shapes.append(
                    _as_tuple(
                        k, D, f"filter shape of layer {l}", ArchitectureError, broadcast=False
                    )
                )
            except ArchitectureError as exc:
                raise ArchitectureError(
                    f"{exc} (all filters must have the same number of axes D={D}; "
                    f"filter_shapes={short_repr(filter_shapes)})"
                ) from None
        check_param_count(sum(math.prod(k) for k in shapes), "filter shapes (their weights)")
        L = len(shapes)
        if strides is None:
            strides = [1] * (L - 1)
        if isinstance(strides, (str, bytes)) or not isinstance(strides, Sequence):
            raise ArchitectureError(f"strides must be a list; got {short_repr(strides)}")
        if len(strides) not in (L - 1, L):
            raise ArchitectureError(
                f"strides must have one entry per layer except the last ({L - 1}) "
                f"or one per layer ({L}); got {len(strides)}: {short_repr(strides)}"
            )
        st = [
            _as_tuple(s, D, f"stride of layer {l}", ArchitectureError)
            for l, s in enumerate(list(strides)[: L - 1], start=1)
        ]
        self.ndim = D
        self.filter_shapes: tuple[tuple[int, ...], ...] = tuple(shapes)
        self.strides: tuple[tuple[int, ...], ...] = tuple(st)
        # S_0 = 1, S_l = s_1 * ... * s_l (per axis)
        cum = [(1,) * D]
        for s in st:
            cum.append(tuple(a * b for a, b in zip(cum[-1], s)))
        self.cumulative_strides: tuple[tuple[int, ...], ...] = tuple(cum)
        self.end_to_end_shape: tuple[int, ...] = tuple(
            shapes[0][a] + sum((shapes[l][a] - 1) * cum[l][a] for l in range(1, L))
            for a in range(D)
        )
        if math.prod(self.end_to_end_shape) > MAX_ENTRIES:
            raise ArchitectureError(
                f"the end-to-end filter would have shape {self.end_to_end_shape}, more than "
                f"{MAX_ENTRIES} entries (filter_shapes={short_repr(filter_shapes)}, "
                f"strides={short_repr(strides)}); no computation on it could fit in memory"
            )

    # ------------------------------------------------------------------ basics
    def __repr__(self) -> str:
        def fmt(t):
            return str(t[0]) if self.ndim == 1 else str(t)

        shapes = ", ".join(fmt(k) for k in self.filter_shapes)
        strides = ", ".join(fmt(s) for s in self.strides)
        return f"LinearConvNet(filter_shapes=[{shapes}], strides=[{strides}])"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LinearConvNet) and (other.filter_shapes, other.strides) == (
            self.filter_shapes,
            self.strides,
        )

    def __hash__(self) -> int:
        return hash((self.filter_shapes, self.strides))

    @property
    def layer_sizes(self) -> tuple[int, ...]:
        """Number of entries ``|w_l|`` of each filter."""
        return tuple(math.prod(k) for k in self.filter_shapes)

    @property
    def end_to_end_size(self) -> int:
        """Number of entries of the end-to-end filter."""
        return math.prod(self.end_to_end_shape)

    @property
    def end_to_end_stride(self) -> tuple[int, ...]:
        """Stride of the end-to-end map ``S_L`` (the last layer has stride 1)."""
        return self.cumulative_strides[-1]

    @property
    def dimension(self) -> int:
        """Dimension of the neuromanifold: the generic rank of the Jacobian.

        Computed as the exact rank of the Jacobian at a random integer point (a lower
        bound on the generic rank, equal to it with probability one), which never
        exceeds the bound ``min(sum_l |w_l| - (L - 1), prod k)`` of docs/concepts_linear.md §1.
        """
        if not hasattr(self, "_dimension"):
            rng = np.random.default_rng(12345)
            best = 0
            for _ in range(2):
                params = [rng.integers(-9, 10, size=k).astype(float) for k in self.filter_shapes]
                best = max(best, self.exact_jacobian(params).rank())
                if best == self.dimension_bound:
                    break
            self._dimension = best
        return self._dimension

    @property
    def dimension_bound(self) -> int:
        """The upper bound ``min(sum_l |w_l| - (L - 1), prod k)`` (docs/concepts_linear.md §1)."""
        return min(self.num_params - (self.num_layers - 1), self.end_to_end_size)

    @property
    def is_full_dimensional(self) -> bool:
        """Whether the neuromanifold is full-dimensional in R^k (``dimension == prod k``).

        Full-dimensional does not mean filling: ``[2, 2]`` is full-dimensional in R^3
        but misses every quadratic without real roots."""
        return self.dimension == self.end_to_end_size

    # ------------------------------------------------------------- parameters
    @property
    def param_shapes(self) -> tuple[tuple[int, ...], ...]:
        """The filter shapes, one D-tuple per layer (the shapes of ``params``)."""
        return self.filter_shapes

    def _layer_name(self, l: int) -> str:
        return f"filter of layer {l}"

    def random_params(self, seed: Any = 0) -> list[np.ndarray]:
        """Standard Gaussian filters, one per layer, in each filter's shape.

        Args:
            seed: an int, None (fresh entropy) or a numpy Generator.
        """
        rng = as_seed_rng(seed)
        return [rng.standard_normal(k) for k in self.filter_shapes]

    # ------------------------------------------------------------- the map mu
    def _upsampled(self, params: list[np.ndarray]) -> list[np.ndarray]:
        return [upsample(w, S) for w, S in zip(params, self.cumulative_strides)]

    @finite_result("the end-to-end filter")
    def end_to_end(self, params: Any) -> np.ndarray:
        """The end-to-end filter ``v = mu(params)`` (docs/concepts_linear.md §1), of shape
        ``end_to_end_shape``."""
        ups = self._upsampled(self.check_params(params))
        v = ups[0]
        for u in ups[1:]:
            v = signal.convolve(v, u, method="direct")
        return v

    def _partial_products(self, params: list[np.ndarray]) -> list[np.ndarray]:
        """``P_l``: the convolution of every upsampled filter except layer l's
        (docs/concepts_linear.md §2)."""
        ups = self._upsampled(params)
        L = len(ups)
        one = np.ones((1,) * self.ndim)
        # scipy picks direct or FFT convolution by size; either is accurate to rounding
        prefix = [one]
        for u in ups[:-1]:
            prefix.append(signal.convolve(prefix[-1], u))
        suffix = [one]
        for u in ups[:0:-1]:
            suffix.append(signal.convolve(suffix[-1], u))
        suffix = suffix[::-1]
        return [signal.convolve(prefix[l], suffix[l]) for l in range(L)]

    def _jacobian_blocks(self, params: list[np.ndarray]) -> list[np.ndarray]:
        """``J_l`` (|v| x |w_l|): column j is ``P_l`` shifted by ``j * S_{l-1}``
        (docs/concepts_linear.md §2).

        The reference construction (one scatter per layer from the D-dimensional ``P_l``);
        :meth:`jacobian` and :meth:`ntk` use the flat construction of
        :meth:`_GramPlan.jacobian_transpose`, which tests check against this one."""
        vshape = self.end_to_end_shape
        blocks = []
        for P, k, S in zip(
            self._partial_products(params), self.filter_shapes, self.cumulative_strides
        ):
            # flat positions of P's entries inside v, and the flat offset of each shift
            p_pos = np.ravel_multi_index(np.indices(P.shape).reshape(self.ndim, -1), vshape)
            shifts = np.indices(k).reshape(self.ndim, -1) * np.asarray(S)[:, None]
            s_pos = np.ravel_multi_index(shifts, vshape)
            J = np.zeros((self.end_to_end_size, math.prod(k)))
            J[p_pos[:, None] + s_pos[None, :], np.arange(s_pos.size)[None, :]] = P.ravel()[:, None]
            blocks.append(J)
        return blocks

    def _flat_plan(self) -> tuple[list[np.ndarray], list[tuple[tuple, tuple]]]:
        """Computed once per network: per layer, the flat (C-order) positions inside v of
        the taps of ``up(w_l, S_{l-1})`` (entry ``j`` of ``w_l`` sits at
        ``ravel(j * S_{l-1})``), and the shape and byte strides of the view of ``J^T``'s
        rows of layer l in which ``P_l`` can be written once (row ``j`` starts at its
        tap's flat position; the layer-by-layer construction the tests keep as a
        reference, :class:`_GramPlan` gathers instead)."""
        if not hasattr(self, "_plan"):
            vshape, n = self.end_to_end_shape, self.end_to_end_size
            vstrides = [math.prod(vshape[a + 1 :]) for a in range(self.ndim)]
            offsets, views = [], []
            for k, S in zip(self.filter_shapes, self.cumulative_strides):
                o = np.ravel_multi_index(
                    np.indices(k).reshape(self.ndim, -1) * np.asarray(S)[:, None], vshape
                )
                offsets.append(o)
                # moving one tap along axis a: math.prod(k[a+1:]) rows down, S_a v-strides on
                rows = [math.prod(k[a + 1 :]) for a in range(self.ndim)]
                views.append(
                    (tuple(k), tuple(8 * (r * n + s * vs) for r, s, vs in zip(rows, S, vstrides)))
                )
            self._plan = (offsets, views)
        return self._plan

    def _gram_plan(self) -> "_GramPlan":
        """The per-architecture constants of the flat construction of ``J^T`` (built once
        per architecture, shared by equal networks)."""
        plan = self.__dict__.get("_gram")
        if plan is None:
            n = self.end_to_end_size
            check_param_count(n * max(n, self.num_params), f"{self!r}: its Jacobian and NTK")
            plan = self._gram = _gram_plan(self)
        return plan

    def _checked_theta(self, params: Any) -> np.ndarray:
        """``params`` validated as :meth:`check_params` does, flattened into one vector.

        The common case (a list of float64 arrays of the right shapes) is checked in one
        pass: shapes and types per layer, finiteness once on the flattened vector; anything
        else, or a non-finite entry, goes through :meth:`check_params`, which converts or
        raises with its message naming the layer."""
        shapes = self.filter_shapes
        if type(params) in (list, tuple) and len(params) == len(shapes):
            for w, k in zip(params, shapes):
                if type(w) is not np.ndarray or w.dtype != np.float64 or w.shape != k:
                    break
            else:
                theta = np.concatenate([w.ravel() for w in params])
                if np.isfinite(theta).all():
                    return theta
        return _concat(self.check_params(params))

    @finite_result("the Jacobian")
    def jacobian(self, params: Any) -> np.ndarray:
        """The Jacobian of mu: rows = entries of v (C order), columns = all filter entries
        layer by layer (each filter in C order)."""
        theta, plan = self._checked_theta(params), self._gram_plan()
        Jt = plan.jacobian_transpose(theta)
        if plan.nfft and not np.isfinite(Jt).all():
            Jt = plan.jacobian_transpose(theta, direct=True)  # spectra overflowed
        return np.ascontiguousarray(Jt.T)

    def exact_jacobian(self, params: Any) -> flint.fmpq_mat:
        """The Jacobian computed exactly over the rationals from the (exact binary) float
        filters, as a ``flint.fmpq_mat``: column j of block l holds the coefficients of
        ``t^{j S_{l-1}} prod_{m != l} pi(w_m)(t^{S_{m-1}})`` (docs/concepts_linear.md §2)."""
        return self._exact_jacobian_at(self.layer_polynomials(params))

    def _exact_jacobian_at(self, polys: Sequence[flint.fmpq_mpoly]) -> flint.fmpq_mat:
        """The exact Jacobian at the point whose layer polynomials (in the variables of
        :meth:`polynomial_context`, already in ``t^{S_{l-1}}``) are ``polys``, as a
        ``flint.fmpq_mat`` (used for fiber points known only as polynomials)."""
        vshape = self.end_to_end_shape
        J = flint.fmpq_mat(self.end_to_end_size, self.num_params)
        col = 0
        for l, (k, S) in enumerate(zip(self.filter_shapes, self.cumulative_strides)):
            P = self.polynomial_context().from_dict({(0,) * self.ndim: 1})
            for m, q in enumerate(polys):
                if m != l:
                    P = P * q
            terms = list(P.to_dict().items())
            for j in np.ndindex(k):
                shift = tuple(a * s for a, s in zip(j, S))
                for exps, c in terms:
                    J[
                        int(
                            np.ravel_multi_index(
                                tuple(int(e) + o for e, o in zip(exps, shift)), vshape
                            )
                        ),
                        col,
                    ] = c
                col += 1
        return J

    def ntk(self, params: Any) -> np.ndarray:
        """The neural tangent kernel ``K = J J^T = sum_l J_l J_l^T`` (docs/concepts_linear.md §2).

        Built from the structure: ``J^T`` is gathered from one flat partial product
        ``P_l`` per layer (by 3L - 6 direct one-dimensional convolutions for small
        networks, by one batched FFT beyond; none per column; index arrays computed once
        per architecture), then one symmetric rank-k update (BLAS syrk), which dominates
        from a few hundred entries of v on.

        Raises:
            ParameterError: a filter of the wrong shape or not finite (as
                :meth:`check_params`), or ("overflow: ...") K not finite in float64.

        >>> net = LinearConvNet([2, 2])
        >>> net.ntk([[1.0, 1.0], [1.0, 0.0]])
        array([[1., 1., 0.],
               [1., 2., 1.],
               [0., 1., 1.]])
        """
        theta = self._checked_theta(params)
        plan = self._gram_plan()
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            K = _gram_rows(plan.jacobian_transpose(theta))
            # |K_ij| <= sqrt(K_ii K_jj) <= trace: a finite, moderate trace means every
            # entry is finite (NaN or inf anywhere in J reaches the diagonal)
            tr = float(np.trace(K))
            if not (np.isfinite(tr) and tr < 1e300) and plan.nfft:
                # near the float64 range the spectra may overflow where the direct
                # convolutions do not: decide on the direct route
                K = _gram_rows(plan.jacobian_transpose(theta, direct=True))
                tr = float(np.trace(K))
        if not (np.isfinite(tr) and tr < 1e300):
            check_finite_result(K, f"the NTK of {self!r}")
        return K

    @finite_result("the vector-Jacobian product")
    def vjp(self, params: Any, cotangent: Any) -> list[np.ndarray]:
        """``J^T g`` split per layer, each in its filter's shape: the gradient of
        ``<g, mu(theta)>`` w.r.t. each filter."""
        params = self.check_params(params)
        g = as_finite_array(cotangent, "cotangent", error=InputError)
        if g.shape != self.end_to_end_shape and g.shape != (self.end_to_end_size,):
            raise InputError(
                f"cotangent must have the end-to-end shape {self.end_to_end_shape}; got {g.shape}"
            )
        g = g.reshape(self.end_to_end_shape)
        out = []
        for P, S, k in zip(
            self._partial_products(params), self.cumulative_strides, self.filter_shapes
        ):
            # d<g, v>/d w_l[j] = sum_i g[i + j*S] P[i]: correlate g with P at stride S
            out.append(correlate(g, P, stride=S).reshape(k))
        return out

    @finite_result("the invariants")
    def invariants(self, params: Any) -> np.ndarray:
        """``delta_l = ||w_{l+1}||^2 - ||w_l||^2`` for l = 1..L-1 (docs/concepts_linear.md §2)."""
        norms = np.array([np.sum(w * w) for w in self.check_params(params)])
        return np.diff(norms)

    @finite_result("the invariant Jacobian")
    def invariant_jacobian(self, params: Any) -> np.ndarray:
        """``d delta / d theta`` (L - 1 rows, one column per filter entry): row l holds
        ``-2 w_l`` and ``2 w_{l+1}`` in the columns of those filters."""
        params = self.check_params(params)
        offsets = np.concatenate([[0], np.cumsum(self.layer_sizes)])
        out = np.zeros((self.num_layers - 1, self.num_params))
        for l in range(self.num_layers - 1):
            out[l, offsets[l] : offsets[l + 1]] = -2.0 * params[l].ravel()
            out[l, offsets[l + 1] : offsets[l + 2]] = 2.0 * params[l + 1].ravel()
        return out

    def exact_invariants(self, params: Any) -> list[flint.fmpq]:
        """The invariants computed exactly over the rationals from the (exact binary)
        float filters."""
        norms = []
        for w in self.check_params(params):
            n = flint.fmpq(0)
            for c in w.ravel():
                q = to_fmpq(float(c))
                n += q * q
            norms.append(n)
        return [norms[l + 1] - norms[l] for l in range(len(norms) - 1)]

    def exact_target(self, params: Any) -> tuple[flint.fmpq_mpoly, list[flint.fmpq]]:
        """``(polynomial(params), exact_invariants(params))``: the exact description of the
        fiber through ``params``, which :meth:`fiber` enumerates with a certificate (the
        route :func:`neuromanifold.ntk.ntk_dependence` takes)."""
        return self.polynomial(params), self.exact_invariants(params)

    # ------------------------------------------------------------- polynomials
    def layer_polynomials(self, params: Any) -> list[flint.fmpq_mpoly]:
        """``pi(w_l)(t^{S_{l-1}})`` for each layer, exactly, in variables ``t1..tD``."""
        ctx = self.polynomial_context()
        polys = []
        for w, S in zip(self.check_params(params), self.cumulative_strides):
            terms = {
                tuple(int(j) * s for j, s in zip(idx, S)): to_fmpq(float(c))
                for idx, c in np.ndenumerate(w)
                if c != 0
            }
            polys.append(ctx.from_dict(terms) if terms else ctx.from_dict({}))
        return polys

    def polynomial(self, params: Any) -> flint.fmpq_mpoly:
        """The exact end-to-end polynomial ``pi(v)(t) = prod_l pi(w_l)(t^{S_{l-1}})``.

        Float filters are converted to the exact rationals they represent, so the
        coefficients of the result are the exact end-to-end filter.

        >>> net = LinearConvNet([2, 2])
        >>> net.polynomial([[1.0, -1.0], [1.0, -0.5]])
        1/2*t^2 - 3/2*t + 1
        """
        polys = self.layer_polynomials(params)
        out = polys[0]
        for p in polys[1:]:
            out = out * p
        return out

    def polynomial_context(self) -> flint.fmpq_mpoly_ctx:
        """The python-flint context of the polynomial view: variables ``t`` (1D) or ``t1..tD``."""
        names = ("t",) if self.ndim == 1 else tuple(f"t{a + 1}" for a in range(self.ndim))
        return flint.fmpq_mpoly_ctx.get(names, "lex")

    def coefficients(self, poly: flint.fmpq_mpoly) -> np.ndarray:
        """The coefficient array (object dtype, exact ``fmpq``) of a polynomial in v's shape."""
        if not isinstance(poly, flint.fmpq_mpoly) or poly.context().nvars() != self.ndim:
            raise InputError(
                f"poly must be a python-flint fmpq_mpoly in {self.ndim} "
                f"variable(s) (see polynomial_context()); got {short_repr(poly)}"
            )
        out = np.empty(self.end_to_end_shape, dtype=object)
        out.fill(flint.fmpq(0))
        for exps, c in poly.to_dict().items():
            exps = tuple(int(e) for e in exps)
            if any(e >= n for e, n in zip(exps, self.end_to_end_shape)):
                raise InputError(
                    f"polynomial has degree {exps} outside the filter shape {self.end_to_end_shape}"
                )
            out[tuple(exps)] = c
        return out

    # ------------------------------------------------------------- apply
    @finite_result("the output")
    def apply(self, params: Any, x: Any) -> np.ndarray:
        """Apply the network to signal(s) ``x`` by strided correlation, layer after layer.

        Args:
            params: one filter per layer.
            x: shape ``(..., n_1, ..., n_D)``; leading axes are batch axes.

        Returns:
            The output signal(s); equal to ``correlate(x, end_to_end(params), stride=S_L)``.
        """
        params = self.check_params(params)
        x = as_finite_array(x, "x", error=InputError)
        strides = list(self.strides) + [(1,) * self.ndim]
        for w, s in zip(params, strides):
            x = correlate(x, w, stride=s)
        return x

    def end_to_end_operator(self, x: Any) -> np.ndarray:
        """The matrix ``M`` with ``M @ v.ravel() == correlate(x, v, stride=S_L).ravel()`` for one
        signal ``x`` (shape ``(n_1..n_D)``): each row is a flattened window of ``x``."""
        x = as_finite_array(x, "x", error=InputError)
        if x.ndim != self.ndim:
            raise InputError(f"x must be one {self.ndim}D signal; got shape {x.shape}")
        if any(n < k for n, k in zip(x.shape, self.end_to_end_shape)):
            raise InputError(
                f"signal of shape {x.shape} is shorter than the end-to-end "
                f"filter {self.end_to_end_shape}"
            )
        win = np.lib.stride_tricks.sliding_window_view(x, self.end_to_end_shape)
        win = win[tuple(slice(None, None, s) for s in self.end_to_end_stride)]
        return win.reshape(-1, self.end_to_end_size)

    # ------------------------------------------------------------- fibers
    def fiber(
        self,
        v: Any,
        invariants: Any,
        *,
        method: str = "auto",
        tol: float = RESIDUAL_TOL,
        num_starts: int = 20,
        seed: Any = 0,
        start: Any = None,
        progress: bool = False,
    ):
        """All filters with end-to-end filter ``v`` and invariants ``delta``, one per class
        modulo sign flips (docs/concepts_linear.md §2); see docs/fibers.md for the algorithms.

        Args:
            v: the end-to-end filter: a float array of shape ``end_to_end_shape``, an array
                of exact rationals (Fraction / fmpq / int), or the exact polynomial
                ``self.polynomial(params)`` (the exact route, used by ``ntk_dependence``).
            invariants: the ``L - 1`` values ``delta_l`` (floats or rationals).
            method: "auto" (exact, and for a float v that is only near the neuromanifold,
                or whose factors the exact route cannot split over R, a numerical
                fallback), "exact" or "numerical".
            tol: relative distance from v accepted by the numerical fallback.
            num_starts: least-squares starts of the numerical fallback (at most 10000).
            seed: seed of those starts.
            start: parameters used as one more start of the numerical fallback.
            progress: show a progress bar on stderr.

        Returns:
            A :class:`~neuromanifold.ntk.Fiber` (``certified`` when the enumeration is
            proven complete).

        Raises:
            NotInNeuromanifoldError: v has no real factorization fitting the layers.

        >>> net = LinearConvNet([2, 2])
        >>> fib = net.fiber([1.0, -3.0, 2.0], [1.0])   # roots 1 and 1/2, either layer
        >>> fib.num_points, fib.certified, fib.num_sign_patterns
        (2, True, 2)
        """
        if not isinstance(v, flint.fmpq_mpoly):
            v = _real_or_exact(v, "end-to-end filter v")
        invariants = _real_or_exact(invariants, "invariants")
        num_starts = check_positive_int(num_starts, "num_starts", maximum=10_000)
        return conv_fiber(
            self,
            v,
            invariants,
            method=method,
            tol=tol,
            num_starts=num_starts,
            seed=seed,
            start=start,
            progress=progress,
        )


def _real_or_exact(value: Any, name: str) -> np.ndarray:
    """``value`` as real numbers (float64, or an object array of exact values kept
    exact), refusing complex, string, boolean and other entries and, for exact entries,
    values out of the float64 range. Strings are left to the fiber's own parser (which
    refuses them with its own message)."""
    if isinstance(value, (str, bytes)):
        return value
    arr = as_real_array(value, name, error=InputError, exact=True)
    if arr.dtype == object:
        as_real_array(arr, name, error=InputError)  # range check of exact entries
    return arr


def _gram_rows(Jt: np.ndarray) -> np.ndarray:
    """``Jt.T @ Jt`` (one BLAS syrk, exactly symmetric)."""
    return Jt.T @ Jt


def _concat(params: Sequence[np.ndarray]) -> np.ndarray:
    """The filters as one float64 vector, layer by layer (each in C order)."""
    return np.concatenate([w.ravel() for w in params]).astype(np.float64, copy=False)


class _GramPlan:
    """What the flat construction of ``J^T`` needs of an architecture, computed once:
    where each filter entry sits in the rows of the upsampled filters (``rows``, ``cols``),
    each row's length, the start of each row of ``J^T`` in the padded buffer of the
    ``P_l`` (``starts``), and how the ``P_l`` are computed.

    Row ``(l, j)`` of ``J^T`` is the partial product ``P_l`` (the convolution of every
    upsampled filter but layer l's) shifted to the flat position of ``j * S_{l-1}``
    (docs/concepts_linear.md §2). Every partial product fits inside v's box, and on that
    box the flat (C-order) index is linear and one-to-one, so a D-dimensional full
    convolution of arrays placed in v's grid is the 1D full convolution of their flat
    forms: 1D convolutions only, whatever D.

    Two ways to the flat partial products ``P_l``, chosen once by size: direct
    convolutions (3L - 6 of them, exact for integer filters) when their multiply-adds
    are few (at most :data:`_BATCH_FFT_MIN_WORK`), else all layers at once in the
    frequency domain: one batched real FFT of the upsampled filters, the products of all
    spectra but one from running prefix and suffix products (no division), one batched
    inverse FFT. The FFT leaves rounding noise (about 1e-16 of the largest entry) where
    ``P_l`` is zero; ``support`` (computed once, by direct convolutions of 0/1 filters,
    clipped to 0/1 after each one, so exact) zeroes it outside the structural support of
    ``P_l``, so that ``J`` has the same zero pattern as by direct convolution."""

    __slots__ = ("L", "n", "P", "rows", "cols", "starts", "lengths", "width", "nfft", "support")

    def __init__(self, net: LinearConvNet):
        offsets = net._flat_plan()[0]
        self.L, self.n, self.P = net.num_layers, net.end_to_end_size, net.num_params
        self.rows = np.repeat(np.arange(self.L), [o.size for o in offsets])
        self.cols = np.concatenate(offsets)
        self.lengths = [int(o[-1]) + 1 for o in offsets]
        self.width = max(self.lengths)
        self.starts = self.n - self.cols
        self.nfft, self.support = 0, None
        if self.L >= 3 and _direct_work(self.lengths) > _BATCH_FFT_MIN_WORK:
            self.nfft = sp_fft.next_fast_len(self.n, real=True)
            self.support = np.zeros((self.L, self.nfft))
            for l, S in enumerate(self._direct_partial_products(np.ones(self.P), clip=True)):
                self.support[l, : S.size] = S

    def upsampled(self, theta: np.ndarray) -> list[np.ndarray]:
        """The flat ``up(w_l, S_{l-1})`` of every layer (one scatter for all layers)."""
        U = np.zeros((self.L, self.width))
        U[self.rows, self.cols] = theta
        return [U[l, :m] for l, m in enumerate(self.lengths)]

    def partial_products(self, theta: np.ndarray, *, direct: bool = False) -> list[np.ndarray]:
        """The flat ``P_l = conv_{m != l} up(w_m)``, each of length ``n - len(up(w_l)) + 1``
        (by FFT when the plan says so and ``direct`` is False)."""
        if self.nfft and not direct:
            R = self._fft_partial_products(theta) * self.support
            return [R[l, : self.n - m + 1] for l, m in enumerate(self.lengths)]
        return self._direct_partial_products(theta)

    def _direct_partial_products(
        self, theta: np.ndarray, *, clip: bool = False
    ) -> list[np.ndarray]:
        """Prefix and suffix products by direct convolution (``numpy.convolve``: exact
        on small integers): for L >= 2, 3L - 6 convolutions (``P_1`` and ``P_L`` are the
        outer products themselves, no convolution with a unit). With ``clip`` (for 0/1
        filters) every product is clipped to 1: the supports, exactly."""
        ups = self.upsampled(theta)
        L = self.L
        if L == 1:
            return [np.ones(1)]

        def conv(a, b):
            c = np.convolve(a, b)
            return np.minimum(c, 1.0, out=c) if clip else c

        pre = [ups[0]]  # pre[i] = up_0 * ... * up_i, i <= L - 2
        for u in ups[1 : L - 1]:
            pre.append(conv(pre[-1], u))
        suf = [ups[L - 1]]  # suf[i] = up_{L-1-i} * ... * up_{L-1}
        for u in ups[L - 2 : 0 : -1]:
            suf.append(conv(suf[-1], u))
        suf = suf[::-1]  # now suf[i] = up_{i+1} * ... * up_{L-1}
        return [suf[0]] + [conv(pre[l - 1], suf[l]) for l in range(1, L - 1)] + [pre[L - 2]]

    def _fft_partial_products(self, theta: np.ndarray) -> np.ndarray:
        """All ``P_l`` as the rows of one (L, nfft) array (L >= 3; nfft >= n, so the
        cyclic convolutions do not wrap), zeros past each ``P_l`` up to rounding."""
        L, nfft = self.L, self.nfft
        U = np.zeros((L, nfft))
        U[self.rows, self.cols] = theta
        F = sp_fft.rfft(U, axis=1)
        out = np.empty_like(F)
        acc = F[0].copy()  # out[l] = F_0 ... F_{l-1}, then times F_{l+1} ... F_{L-1}
        for l in range(1, L):
            out[l] = acc
            if l < L - 1:
                acc *= F[l]
        acc = F[L - 1].copy()
        for l in range(L - 2, 0, -1):
            out[l] *= acc
            acc *= F[l]
        out[0] = acc
        return sp_fft.irfft(out, nfft, axis=1)

    def jacobian_transpose(self, theta: np.ndarray, *, direct: bool = False) -> np.ndarray:
        """``J^T`` (|theta| x |v|) at the flat parameter vector ``theta``: ``P_l`` is
        placed after ``n`` zeros in row l of a small buffer ``Z``, and row ``(l, j)`` of
        ``J^T`` is the window of ``Z``'s row l starting ``offset_j`` before ``P_l``; all
        rows are gathered by one fancy index of the (strided) view of those windows."""
        n, L = self.n, self.L
        if self.nfft and not direct:
            width = n + self.nfft
            Z = np.zeros((L, width))
            np.multiply(self._fft_partial_products(theta), self.support, out=Z[:, n:])
        else:
            width = 2 * n
            Z = np.zeros((L, width))
            for l, P in enumerate(self._direct_partial_products(theta)):
                Z[l, n : n + P.size] = P
        windows = np.ndarray(
            (L, width - n + 1, n), dtype=np.float64, buffer=Z, strides=(8 * width, 8, 8)
        )
        return windows[self.rows, self.starts]


def _direct_work(lengths: Sequence[int]) -> int:
    """Multiply-adds of the 3L - 6 direct convolutions of :class:`_GramPlan` for flat
    upsampled filters of these lengths."""
    L = len(lengths)
    pre = [lengths[0]]
    for m in lengths[1 : L - 1]:
        pre.append(pre[-1] + m - 1)
    suf = [lengths[-1]]
    for m in lengths[L - 2 : 0 : -1]:
        suf.append(suf[-1] + m - 1)
    suf = suf[::-1]
    work = sum(a * m for a, m in zip(pre[:-1], lengths[1 : L - 1]))
    work += sum(a * m for a, m in zip(suf[1:], lengths[1 : L - 1]))
    return work + sum(pre[l - 1] * suf[l] for l in range(1, L - 1))


#: above this many multiply-adds of direct convolutions, :class:`_GramPlan` computes the
#: partial products by one batched FFT. Measured inside the NTK (partial products, then
#: the Gram product), the direct route is the faster one up to about a million: the FFT
#: route alone is quicker from ~1e5 on, but leaves the Gram product that follows it
#: slower by more than it saves (|v| of 300 to 500: ~35 us slower in all).
_BATCH_FFT_MIN_WORK = 1 << 20


@functools.lru_cache(maxsize=256)
def _gram_plan(net: LinearConvNet) -> _GramPlan:
    """One :class:`_GramPlan` per architecture (networks compare and hash by filter shapes
    and strides)."""
    return _GramPlan(net)
