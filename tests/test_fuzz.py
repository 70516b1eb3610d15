"""No leaks on bad input: a fuzzer over every public entry point and CLI subcommand.

Each entry point is a valid call and the kind of each argument; the fuzzer replaces
one argument at a time by a bad value drawn from the catalogs of ``fuzz_support``
(wrong types and shapes, NaN/inf, complex/string/bool/object dtypes, empty arrays,
huge and tiny magnitudes, exact rationals, tensors that require grad, classes instead
of instances, unknown options) and classifies the outcome: a finite result or a
``NeuromanifoldError`` is fine; any other exception (a leak), an invalid value
silently accepted, a result holding NaN/inf, or a call over the time limit fails.

Cases that still fail in modules owned by other engineers are listed in ``KNOWN``
below (xfail, not strict): remove an entry once its module is fixed.
"""

from __future__ import annotations

import functools
import os
from fractions import Fraction
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import neuromanifold as nm
from neuromanifold import exact, flows, linear, relu
from neuromanifold.cli import main as cli_main

sys.path.insert(0, os.path.dirname(__file__))
from fuzz_support import (Case, Entry, Outcome, cases_for, has_nonfinite,  # noqa: E402
                          run_case, time_limit)

_OUT = os.path.join(tempfile.gettempdir(), "neuromanifold-fuzz-out.json")
TIMEOUT = 2.0          # seconds per call (valid calls here take well under 0.5 s)
KNOWN_TIMEOUT = 1.0    # for the known cases (some of them hang)


# --------------------------------------------------------------------------- valid calls
@functools.cache
def _conv():
    net = nm.LinearConvNet([2, 2], strides=[2])
    p = net.random_params(seed=0)
    return net, p


@functools.cache
def _fc():
    net = nm.LinearFCNet([2, 2, 2])
    p = net.balanced_params(seed=0)
    return net, p


@functools.cache
def _cnn():
    net = nm.ShallowReLUCNN.with_random_inputs([2, 2], [2], num_inputs=4, seed=0)
    return net, net.random_params(seed=1)


@functools.cache
def _mlp():
    net = nm.ShallowReLUMLP.with_random_inputs([2, 2], num_inputs=4, seed=0)
    return net, net.random_params(seed=1)


@functools.cache
def _relu_params():
    return [(np.array([[1.0, -0.5], [0.3, 0.8], [-0.7, 0.2]]), np.array([0.1, -0.2, 0.05])),
            (np.array([[1.0, -2.0, 0.5]]), np.array([0.3]))]


def _relu_params_b():
    (W1, b1), (W2, b2) = _relu_params()
    return [(W1[[1, 0, 2]] * 2.0, b1[[1, 0, 2]] * 2.0), (W2[:, [1, 0, 2]] / 2.0, b2)]


BOX = ([-1.0, -1.0], [1.0, 1.0])


def _mpoly():
    import flint
    ctx = flint.fmpq_mpoly_ctx.get(("x", "y"), "lex")
    x, y = ctx.gens()
    return (x + 1) ** 2 - 2 * y ** 2


def _tiny_claims():
    from neuromanifold.reproduce import Case as RCase, Claim
    net = _conv()[0]
    return [Claim("1D convolution", "strided", "independent",
                  [RCase(net, net, net.random_params)])]


def _p4():
    import flint
    return flint.fmpq_poly([-1, 0, 0, 0, 1])


def _loss(net, params):
    return nm.QuadraticLoss(np.eye(net.end_to_end_size), np.ones(net.end_to_end_size) * 0.5)


def E(name, setup, call, kinds, **kw):
    return Entry(name=name, setup=setup, call=call, kinds=kinds, **kw)


def _conv_args(**extra):
    def setup():
        net, p = _conv()
        return dict(net=net, params=p, **{k: (v() if callable(v) else v)
                                          for k, v in extra.items()})
    return setup


ENTRIES = [
    # ---------------------------------------------------------------- linear conv
    E("LinearConvNet", lambda: dict(filter_shapes=[3, 2], strides=[2]),
      lambda filter_shapes, strides: nm.LinearConvNet(filter_shapes, strides),
      {"filter_shapes": "array", "strides": "array"}, optional=("strides",)),
    E("LinearConvNet.end_to_end", _conv_args(), lambda net, params: net.end_to_end(params),
      {"params": "params"}),
    E("LinearConvNet.ntk", _conv_args(), lambda net, params: net.ntk(params),
      {"params": "params"}),
    E("LinearConvNet.jacobian", _conv_args(), lambda net, params: net.jacobian(params),
      {"params": "params"}),
    E("LinearConvNet.invariants", _conv_args(), lambda net, params: net.invariants(params),
      {"params": "params"}),
    E("LinearConvNet.polynomial", _conv_args(), lambda net, params: net.polynomial(params),
      {"params": "params"}),
    E("LinearConvNet.vjp", _conv_args(cotangent=lambda: np.arange(4.0)),
      lambda net, params, cotangent: net.vjp(params, cotangent),
      {"params": "params", "cotangent": "array"}),
    E("LinearConvNet.apply", _conv_args(x=lambda: np.arange(8.0)),
      lambda net, params, x: net.apply(params, x), {"params": "params", "x": "array"}),
    E("LinearConvNet.rank", _conv_args(exact=False, tol=1e-9),
      lambda net, params, exact, tol: net.rank(params, exact=exact, tol=tol),
      {"params": "params", "exact": "bool", "tol": "real"}, optional=("tol",)),
    E("LinearConvNet.random_params", _conv_args(seed=0),
      lambda net, params, seed: net.random_params(seed=seed), {"seed": "seed"}),
    E("LinearConvNet.fiber",
      lambda: dict(net=_conv()[0], v=_conv()[0].end_to_end(_conv()[1]),
                   invariants=_conv()[0].invariants(_conv()[1]), method="auto", tol=1e-8,
                   num_starts=3, seed=0),
      lambda net, **kw: net.fiber(kw.pop("v"), kw.pop("invariants"), **kw),
      {"v": "array", "invariants": "array", "method": "choice",
       "tol": "real", "num_starts": "count", "seed": "seed"}),
    E("correlate", lambda: dict(x=np.arange(6.0), filt=np.array([1.0, -1.0]), stride=2),
      lambda x, filt, stride: nm.correlate(x, filt, stride=stride),
      {"x": "array", "filt": "array", "stride": "count"}, skip=(("stride", "list"),)),
    # ---------------------------------------------------------------- linear fc
    E("LinearFCNet", lambda: dict(widths=[2, 3, 2]), lambda widths: nm.LinearFCNet(widths),
      {"widths": "array"}),
    E("LinearFCNet.end_to_end", lambda: dict(net=_fc()[0], params=_fc()[1]),
      lambda net, params: net.end_to_end(params), {"params": "params"}),
    E("LinearFCNet.ntk", lambda: dict(net=_fc()[0], params=_fc()[1]),
      lambda net, params: net.ntk(params), {"params": "params"}),
    E("LinearFCNet.invariants", lambda: dict(net=_fc()[0], params=_fc()[1]),
      lambda net, params: net.invariants(params), {"params": "params"}),
    E("LinearFCNet.apply", lambda: dict(net=_fc()[0], params=_fc()[1], x=np.ones((3, 2))),
      lambda net, params, x: net.apply(params, x), {"params": "params", "x": "array"}),
    E("LinearFCNet.balanced_params",
      lambda: dict(net=_fc()[0], seed=0, end_to_end=np.array([[1.0, 2.0], [0.5, -1.0]])),
      lambda net, seed, end_to_end: net.balanced_params(seed=seed, end_to_end=end_to_end),
      {"seed": "seed", "end_to_end": "array"}, optional=("end_to_end",)),
    E("LinearFCNet.fiber",
      lambda: dict(net=_fc()[0], W=_fc()[0].end_to_end(_fc()[1]),
                   invariants=_fc()[0].invariants(_fc()[1]), num_starts=2, seed=0,
                   walk_steps=1, tol=1e-11),
      lambda net, **kw: net.fiber(kw.pop("W"), kw.pop("invariants"), **kw),
      {"W": "array", "invariants": "array", "num_starts": "count", "seed": "seed",
       "walk_steps": "count0", "tol": "real"}),
    E("balanced_ntk_operator", lambda: dict(W=np.array([[1.0, 2.0]]), num_layers=2),
      lambda W, num_layers: nm.balanced_ntk_operator(W, num_layers),
      {"W": "array", "num_layers": "count"}),
    # ---------------------------------------------------------------- shallow ReLU models
    E("ShallowReLUCNN", lambda: dict(inputs=np.random.default_rng(0).standard_normal((4, 5))),
      lambda inputs: nm.ShallowReLUCNN([2, 2], [2], inputs), {"inputs": "array"}),
    E("ShallowReLUCNN.with_random_inputs", lambda: dict(num_inputs=3, margin=1, seed=0),
      lambda **kw: nm.ShallowReLUCNN.with_random_inputs([2, 2], [2], **kw),
      {"num_inputs": "count", "margin": "count0", "seed": "seed"},
      optional=("num_inputs",)),
    E("ShallowReLUCNN.ntk", lambda: dict(net=_cnn()[0], params=_cnn()[1]),
      lambda net, params: net.ntk(params), {"params": "params"}),
    E("ShallowReLUCNN.end_to_end", lambda: dict(net=_cnn()[0], params=_cnn()[1]),
      lambda net, params: net.end_to_end(params), {"params": "params"}),
    E("ShallowReLUCNN.fiber",
      lambda: dict(net=_cnn()[0], rep=_cnn()[0].end_to_end(_cnn()[1]),
                   inv=_cnn()[0].invariants(_cnn()[1])),
      lambda net, rep, inv, **kw: net.fiber(rep, inv, **kw),
      {"rep": "array", "inv": "array"}, options=True),
    E("ShallowReLUMLP", lambda: dict(inputs=np.ones((3, 2))),
      lambda inputs: nm.ShallowReLUMLP([2, 2], inputs), {"inputs": "array"}),
    E("ShallowReLUMLP.ntk", lambda: dict(net=_mlp()[0], params=_mlp()[1]),
      lambda net, params: net.ntk(params), {"params": "params"}),
    E("ShallowReLUMLP.fiber",
      lambda: dict(net=_mlp()[0], rep=_mlp()[0].end_to_end(_mlp()[1]),
                   inv=_mlp()[0].invariants(_mlp()[1]), num_starts=2, seed=0),
      lambda net, rep, inv, **kw: net.fiber(rep, inv, **kw),
      {"rep": "array", "inv": "params", "num_starts": "count", "seed": "seed"}),
    E("path_lifting_check",
      lambda: dict(params=[np.array([[1.0, 0.5], [-0.3, 0.8]]), np.array([1.0, -2.0])],
                   inputs=np.random.default_rng(0).standard_normal((4, 2)), tol=1e-10),
      lambda params, inputs, tol: linear.path_lifting_check(params, inputs, tol=tol),
      {"params": "params", "inputs": "array", "tol": "real"}),
    # ---------------------------------------------------------------- flows
    E("QuadraticLoss", lambda: dict(A=np.eye(2), target=np.ones(2)),
      lambda A, target: nm.QuadraticLoss(A, target), {"A": "array", "target": "array"}),
    E("QuadraticLoss.value", lambda: dict(loss=nm.QuadraticLoss(np.eye(2), np.ones(2)),
                                          v=np.array([0.5, 2.0])),
      lambda loss, v: loss.value(v), {"v": "array"}),
    E("SquareLoss.from_data",
      lambda: dict(net=_conv()[0], X=np.random.default_rng(0).standard_normal((3, 6)),
                   Y=np.ones((3, 2))),
      lambda net, X, Y: nm.SquareLoss.from_data(net, X, Y),
      {"net": "object", "X": "array", "Y": "array"}),
    E("gradient_flow",
      lambda: dict(net=_conv()[0], params0=_conv()[1], loss=_loss(*_conv()), t_final=0.5,
                   num_times=3),
      lambda net, params0, loss, t_final, num_times: nm.gradient_flow(
          net, params0, loss, t_final, num_times=num_times),
      {"net": "object", "params0": "params", "loss": "object", "t_final": "real",
       "num_times": "count"}),
    E("riemannian_flow",
      lambda: dict(net=_conv()[0], v0=_conv()[0].end_to_end(_conv()[1]),
                   inv=_conv()[0].invariants(_conv()[1]), loss=_loss(*_conv()),
                   t_final=0.2, num_times=3),
      lambda net, v0, inv, loss, t_final, **kw: nm.riemannian_flow(net, v0, inv, loss,
                                                                  t_final, **kw),
      {"net": "object", "v0": "array", "inv": "array", "loss": "object",
       "t_final": "real", "num_times": "count"}, options=True),
    E("lift_to_fiber",
      lambda: dict(net=_conv()[0], v=_conv()[0].end_to_end(_conv()[1]),
                   inv=_conv()[0].invariants(_conv()[1]),
                   start=[w * 1.01 for w in _conv()[1]]),
      lambda net, v, inv, start: flows.lift_to_fiber(net, v, inv, start),
      {"v": "array", "inv": "array", "start": "params"}),
    E("convergence_study", lambda: dict(net=_conv()[0], num_runs=1, t_final=1.0, seed=0,
                                        max_time=4.0),
      lambda net, num_runs, **kw: nm.convergence_study(net, num_runs, **kw),
      {"net": "nets", "num_runs": "count", "t_final": "real", "seed": "seed"}),
    E("random_regression_data", lambda: dict(net=_conv()[0], seed=0, num_samples=3),
      lambda net, seed, num_samples: linear.random_regression_data(
          net, seed, num_samples=num_samples),
      {"net": "object", "seed": "seed", "num_samples": "count"}, optional=("num_samples",)),
    # ---------------------------------------------------------------- ntk
    E("ntk_dependence", lambda: dict(net=_conv()[0], params=_conv()[1], tol=1e-8),
      lambda net, params, **kw: nm.ntk_dependence(net, params, **kw),
      {"net": "object", "params": "params", "tol": "real"}, options=True),
    # ---------------------------------------------------------------- relu
    E("ReLUNet", lambda: dict(widths=[2, 3, 1]), lambda widths: nm.ReLUNet(widths),
      {"widths": "array"}),
    E("relu.forward", lambda: dict(params=_relu_params(), X=np.ones((2, 2))),
      lambda params, X: relu.forward(params, X), {"params": "relu_params", "X": "array"}),
    E("relu.regions", lambda: dict(params=_relu_params(), domain=BOX),
      lambda params, domain: relu.regions(params, domain),
      {"params": "relu_params", "domain": "domain"}, optional=("domain",)),
    E("relu.bent_hyperplanes", lambda: dict(params=_relu_params(), domain=BOX),
      lambda params, domain: relu.bent_hyperplanes(params, domain),
      {"params": "relu_params", "domain": "domain"}, optional=("domain",)),
    E("relu.equivalent", lambda: dict(p=_relu_params(), q=_relu_params_b(), domain=BOX,
                                      method="auto"),
      lambda p, q, domain, method: relu.equivalent(p, q, domain, method=method),
      {"p": "relu_params", "q": "relu_params", "domain": "domain", "method": "choice"},
      optional=("domain",)),
    E("relu.functional_dimension", lambda: dict(params=_relu_params(), domain=BOX),
      lambda params, domain: relu.functional_dimension(params, domain),
      {"params": "relu_params", "domain": "domain"}, optional=("domain",)),
    E("relu.genericity", lambda: dict(params=_relu_params(), domain=BOX),
      lambda params, domain: relu.genericity(params, domain),
      {"params": "relu_params", "domain": "domain"}, optional=("domain",)),
    E("relu.activation_pattern", lambda: dict(params=_relu_params(), x=np.array([0.3, 0.2])),
      lambda params, x: relu.activation_pattern(params, x), {"params": "relu_params", "x": "array"}),
    E("relu.weighted_arrangement", lambda: dict(params=_relu_params()),
      lambda params: relu.weighted_arrangement(params), {"params": "relu_params"}),
    E("relu.orthant_fiber", lambda: dict(params=_relu_params()),
      lambda params: relu.orthant_fiber(params), {"params": "relu_params"}),
    E("relu.plot_arrangement",
      lambda: dict(params=_relu_params(), domain=BOX, alpha=0.35, cmap="tab20"),
      lambda **kw: _plot(**kw),
      {"params": "relu_params", "domain": "domain", "alpha": "real", "cmap": "choice"},
      optional=("domain",)),
    # ---------------------------------------------------------------- exact
    E("exact.to_fmpq", lambda: dict(x=0.75), lambda x: exact.to_fmpq(x), {"x": "real"}),
    E("exact.exact_rank", lambda: dict(arr=np.array([[1.0, 2.0], [2.0, 4.0]])),
      lambda arr: exact.exact_rank(arr), {"arr": "exact_array"}),
    E("exact.fmpq_array", lambda: dict(arr=np.array([0.5, 2.0])),
      lambda arr: exact.fmpq_array(arr), {"arr": "exact_array"}),
    E("exact.certified_roots", lambda: dict(poly=[2, -3, 1], min_prec=64),
      lambda poly, min_prec: exact.certified_roots(poly, min_prec=min_prec),
      {"poly": "exact_array", "min_prec": "count"}),
    E("exact.rescaled_norms",
      lambda: dict(norms_sq=np.array([[1.0, 4.0]]), deltas=np.array([3.0])),
      lambda norms_sq, deltas: exact.rescaled_norms(norms_sq, deltas),
      {"norms_sq": "exact_array", "deltas": "exact_array"}),
    E("exact.rescaled_norms_exact", lambda: dict(norms_sq=[1, 4], deltas=[3]),
      lambda norms_sq, deltas: exact.rescaled_norms_exact(norms_sq, deltas),
      {"norms_sq": "exact_array", "deltas": "exact_array"}),
    E("exact.exact_lp_max", lambda: dict(g=[1, 1], G=[[1, 0], [0, 1], [1, 1]], h=[2, 2, 3]),
      lambda g, G, h: exact.exact_lp_max(g, G, h), {"g": "exact_array", "G": "exact_array", "h": "exact_array"}),
    E("exact.strict_interior_point", lambda: dict(A=[[1], [-1]], c=[1, 0]),
      lambda A, c: exact.strict_interior_point(A, c), {"A": "exact_array", "c": "exact_array"}),
    E("exact.strictly_satisfies", lambda: dict(A=[[1, 0], [0, 1]], c=[1, 1], x=[0.5, 0.9]),
      lambda A, c, x: exact.strictly_satisfies(A, c, x),
      {"A": "exact_array", "c": "exact_array", "x": "exact_array"}),
    E("exact.motzkin_certificate", lambda: dict(A=[[1], [-1]], c=[0, 0], y_hint=[1.0, 1.0]),
      lambda A, c, y_hint: exact.motzkin_certificate(A, c, y_hint),
      {"A": "exact_array", "c": "exact_array", "y_hint": "array"}),
    E("exact.support_line", lambda: dict(exps=[(2, 0), (0, 2)]),
      lambda exps: exact.support_line(exps), {"exps": "exact_array"}),
    E("exact.power_classes", lambda: dict(S=2),
      lambda S: exact.power_classes(_p4(), exact.certified_roots(_p4()), S), {"S": "count"}),
    E("exact.real_irreducible", lambda: dict(f=_mpoly(), seed=0),
      lambda f, seed: exact.real_irreducible(f, seed=seed), {"f": "object", "seed": "seed"}),
    E("exact.absolute_factor_count", lambda: dict(f=_mpoly(), seed=0),
      lambda f, seed: exact.absolute_factor_count(f, seed=seed),
      {"f": "object", "seed": "seed"}),
    # ---------------------------------------------------------------- more linear / relu
    E("LinearConvNet.rank(exact)", _conv_args(),
      lambda net, params: net.rank(params, exact=True), {"params": "params"}),
    E("LinearConvNet.end_to_end_operator", _conv_args(x=lambda: np.arange(6.0)),
      lambda net, params, x: net.end_to_end_operator(x), {"x": "array"}),
    E("LinearConvNet.unflatten", _conv_args(theta=lambda: np.arange(4.0)),
      lambda net, params, theta: net.unflatten(theta), {"theta": "array"}),
    E("upsample", lambda: dict(w=np.array([1.0, 2.0]), stride=(2,)),
      lambda w, stride: linear.upsample(w, stride), {"w": "array", "stride": "array"}),
    E("LinearFCNet.jacobian", lambda: dict(net=_fc()[0], params=_fc()[1]),
      lambda net, params: net.jacobian(params), {"params": "params"}),
    E("LinearFCNet.vjp", lambda: dict(net=_fc()[0], params=_fc()[1], g=np.ones((2, 2))),
      lambda net, params, g: net.vjp(params, g), {"params": "params", "g": "array"}),
    E("LinearFCNet.rank", lambda: dict(net=_fc()[0], params=_fc()[1], tol=1e-9),
      lambda net, params, tol: net.rank(params, tol=tol), {"params": "params", "tol": "real"},
      optional=("tol",)),
    E("ShallowReLUMLP.end_to_end", lambda: dict(net=_mlp()[0], params=_mlp()[1]),
      lambda net, params: net.end_to_end(params), {"params": "params"}),
    E("ShallowReLUMLP.apply", lambda: dict(net=_mlp()[0], params=_mlp()[1], x=np.ones((2, 2))),
      lambda net, params, x: net.apply(params, x), {"params": "params", "x": "array"},
      optional=("x",)),
    E("ShallowReLUMLP.with_random_inputs", lambda: dict(num_inputs=3, seed=0),
      lambda **kw: nm.ShallowReLUMLP.with_random_inputs([2, 2], **kw),
      {"num_inputs": "count", "seed": "seed"}, optional=("num_inputs",)),
    E("fibers.invariant_scale",
      lambda: dict(invariants=np.array([0.5]), params=[np.ones(2), np.ones(2)]),
      lambda invariants, params: nm.fibers.invariant_scale(invariants, params),
      {"invariants": "array", "params": "params"}),
    E("relu.as_domain", lambda: dict(domain=BOX, dim=2),
      lambda domain, dim: relu.as_domain(domain, dim), {"domain": "domain", "dim": "count"},
      optional=("domain",)),
    E("relu.check_params", lambda: dict(params=_relu_params()),
      lambda params: relu.check_params(params), {"params": "relu_params"}),
    E("ReLUNet.jacobian", lambda: dict(params=_relu_params(), X=np.ones((2, 2))),
      lambda params, X: nm.ReLUNet([2, 3, 1]).jacobian(params, X),
      {"params": "params", "X": "array"}),
    E("relu.arrangements_equal", lambda: dict(p=_relu_params()[:1] + [(np.ones((1, 3)), np.zeros(1))],
                                              q=_relu_params()[:1] + [(np.ones((1, 3)), np.zeros(1))]),
      lambda p, q: relu.arrangements_equal(p, q), {"p": "relu_params", "q": "relu_params"}),
    E("compare_with_parameter_flow",
      lambda: dict(net=_conv()[0], params0=_conv()[1], loss=_loss(*_conv()), t_final=0.2,
                   num_times=3),
      lambda net, params0, loss, t_final, num_times: flows.compare_with_parameter_flow(
          net, params0, loss, t_final, lift=params0, num_times=num_times),
      {"params0": "params", "loss": "object", "t_final": "real", "num_times": "count"}),
    E("reproduce_linear", lambda: dict(seed=0, num_instances=1, tol=1e-8),
      lambda **kw: nm.reproduce_linear(claims=_tiny_claims(), **kw),
      {"seed": "seed", "num_instances": "count", "tol": "real"},
      optional=("num_instances",)),
    # ---------------------------------------------------------------- CLI
    E("cli demo", lambda: dict(seed="0", json=_OUT),
      lambda seed, json: _cli(["demo", "--seed", seed, "--json", json]),
      {"seed": "cli_seed", "json": "cli_path"}),
    E("cli reproduce", lambda: dict(which="linear", seed="0", json=_OUT),
      lambda which, seed, json: _cli(["reproduce", which, "--quick", "--seed", seed,
                                      "--json", json]),
      {"which": "cli_choice", "seed": "cli_seed", "json": "cli_path"}),
]


def _plot(**kw):
    import matplotlib.pyplot as plt
    try:
        return relu.plot_arrangement(kw.pop("params"), kw.pop("domain"), **kw)
    finally:
        plt.close("all")


def _cli(argv):
    """``neuromanifold argv`` in-process; bad usage must exit with status 2 (argparse)
    and a library error with status 1, both with a message and no traceback."""
    argv = [str(a) for a in argv]
    try:
        status = cli_main(argv)
    except SystemExit as exc:
        status = exc.code
    if status not in (0, 1, 2):
        raise AssertionError(f"exit status {status!r}")
    if status:
        raise nm.InputError(f"exit status {status}")   # a clean refusal
    return status


# --------------------------------------------------------------------------- known leaks
# ===== BEGIN KNOWN LEAKS (xfail, strict=False) =====
# (entry, "arg=label") -> who owns the fix and what happens. Empty: every case of every
# entry point gives a finite result or a NeuromanifoldError within the time limit.
KNOWN: dict[tuple[str, str], str] = {}
# ===== END KNOWN LEAKS =====


# --------------------------------------------------------------------------- the tests
ENTRY_BY_NAME = {e.name: e for e in ENTRIES}

# Entries whose valid call is a real computation (fibers, flows, exact engines): only
# their invalid cases and this sample of unusual ones run in the suite; the exhaustive
# sweep (python tests/fuzz_support.py) runs everything.
HEAVY = {"reproduce_linear", "compare_with_parameter_flow", "LinearConvNet.fiber", "LinearFCNet.fiber", "ShallowReLUCNN.fiber",
         "ShallowReLUMLP.fiber", "gradient_flow", "riemannian_flow", "lift_to_fiber",
         "convergence_study", "ntk_dependence", "relu.regions", "relu.bent_hyperplanes",
         "relu.equivalent", "relu.functional_dimension", "relu.genericity",
         "relu.orthant_fiber", "relu.plot_arrangement"}
HEAVY_SAMPLE = {"scaled_2^-1000", "scaled_1e300", "first.scaled_2^-1000",
                "first.scaled_1e300", "all.scaled_2^500", "tensor_requires_grad",
                "first.tensor_requires_grad", "fractions", "first.fractions", "huge", "tiny"}


def _selected():
    out = []
    for entry in ENTRIES:
        for case in cases_for(entry):
            key = (entry.name, repr(case)[:-1])
            if entry.name in HEAVY and not case.must_raise and case.label not in HEAVY_SAMPLE \
                    and key not in KNOWN:
                continue
            marks = [pytest.mark.xfail(strict=False, reason=f"owned by {KNOWN[key]}")] \
                if key in KNOWN else []
            out.append(pytest.param(entry.name, case, id=f"{entry.name}:{case!r}", marks=marks))
    return out


@pytest.mark.parametrize("name", [e.name for e in ENTRIES if not e.name.startswith("cli ")])
def test_valid_call_is_clean(name):
    """The unmutated call gives a finite result (the fuzzer's baseline)."""
    entry = ENTRY_BY_NAME[name]
    with time_limit(10 * TIMEOUT):
        result = entry.call(**entry.args())
    assert has_nonfinite(result) is None


@pytest.mark.parametrize("name,case", _selected())
def test_one_bad_argument(name, case):
    """One argument replaced by a bad value: a finite result or a NeuromanifoldError,
    within the time limit; an invalid value must raise."""
    entry = ENTRY_BY_NAME[name]
    known = (name, repr(case)[:-1]) in KNOWN
    outcome, detail = run_case(entry, case, KNOWN_TIMEOUT if known else TIMEOUT)
    assert outcome not in Outcome.BAD, f"{outcome}: {name}({case!r}): {detail}"


# --------------------------------------------------------------------------- generated
_DTYPES = st.sampled_from(["float64", "float32", "int64", "bool", "complex128", "str",
                           "fraction"])


@st.composite
def bad_arrays(draw):
    """Arrays of random shape (including zero-size axes) and dtype; returns
    ``(value, must_raise)``: booleans, complex and strings must be refused, and so must
    NaN/inf; finite numbers of any shape and magnitude may be accepted."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    kind = draw(_DTYPES)
    floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
    base = draw(hnp.arrays(np.float64, shape, elements=floats))
    if kind in ("float64", "float32"):
        with np.errstate(over="ignore"):
            arr = base.astype(kind)
        nonfinite = not np.all(np.isfinite(arr))
        return arr, nonfinite and arr.size > 0
    finite = np.nan_to_num(base, nan=0.0, posinf=1.0, neginf=-1.0)
    if kind == "int64":
        return np.clip(finite, -2 ** 62, 2 ** 62).astype(np.int64), False
    if kind == "bool":
        return finite > 0, True
    if kind == "complex128":
        return finite + 0j, True
    if kind == "str":
        return finite.astype(str), True
    frac = np.empty(shape, dtype=object)
    for idx, x in np.ndenumerate(finite):
        frac[idx] = Fraction(x)
    return frac, False


_ARRAY_ARGS = [(e.name, arg) for e in ENTRIES if e.name not in HEAVY
               for arg, kind in e.kinds.items() if kind in ("array", "exact_array")]


@pytest.mark.parametrize("name,arg", _ARRAY_ARGS, ids=[f"{n}:{a}" for n, a in _ARRAY_ARGS])
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(drawn=bad_arrays())
def test_generated_array_argument(name, arg, drawn):
    value, must_raise = drawn
    entry = ENTRY_BY_NAME[name]
    case = Case(arg, f"generated<{value.dtype}{value.shape}>", lambda v: value, must_raise)
    outcome, detail = run_case(entry, case, TIMEOUT)
    if (name, f"{arg}=generated") in KNOWN:
        return
    assert outcome not in Outcome.BAD, f"{outcome}: {name}({arg}={value!r}): {detail}"


# --------------------------------------------------------------------------- CLI process
def test_cli_subprocess_refuses_bad_input_without_traceback(tmp_path):
    """The installed entry point: a negative seed and an unwritable --json path are usage
    errors (status 2, refused before computing), never a traceback."""
    for argv in (["demo", "--seed=-3", "--json", str(tmp_path / "no" / "x.json")],):
        proc = subprocess.run([sys.executable, "-m", "neuromanifold", *argv],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (argv, proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr and "error:" in proc.stderr, proc.stderr
