"""Real instances of every result type, from small real computations (for the round
trips of ``tests/test_results.py``)."""

from __future__ import annotations

import atexit
import dataclasses
import os
import shutil
import tempfile

import numpy as np

import neuromanifold as nm
from neuromanifold import Result, flows, linear, relu
from neuromanifold.relu import symmetries as S
from neuromanifold.reproduce import Case, Claim, reproduce_linear

__all__ = ["build_results", "more_results", "nested_results", "same"]


def build_results():
    """One real instance of every result type, from small real computations."""
    out = []
    conv = nm.LinearConvNet([2, 2], [2])
    theta = conv.random_params(0)
    v, delta = conv.end_to_end(theta), conv.invariants(theta)
    loss = nm.QuadraticLoss(np.eye(4), [1.0, 0.5, -0.3, 0.2])
    out.append(conv.rank(theta))
    out.append(nm.gradient_flow(conv, theta, loss, 0.2, num_times=3))
    out.append(conv.fiber(v, delta))
    out.append(nm.ntk_dependence(conv, theta))
    fc = nm.LinearFCNet([2, 2, 2])
    tf = fc.random_params(0)
    out.append(fc.fiber(fc.end_to_end(tf), fc.invariants(tf), num_starts=3, seed=0))
    out.append(nm.riemannian_flow(conv, v, delta, loss, 0.2, lift=theta, num_times=3))
    out.append(flows.lift_to_fiber(conv, v, delta, theta))
    out.append(
        nm.compare_lifts(
            nm.LinearConvNet([2, 2]),
            [1.0, -3.0, 2.0],
            [1.0],
            nm.QuadraticLoss(np.eye(3), np.ones(3)),
            0.2,
            num_times=3,
        )
    )
    out.append(flows.compare_with_parameter_flow(conv, theta, loss, 0.2, lift=theta, num_times=3))
    out.append(nm.convergence_study(conv, 1, seed=0, t_final=0.1, max_time=0.1))
    out.append(nm.linear.gradient_flows(conv, [theta, conv.random_params(1)], loss, 0.2))
    out.append(nm.io.load([(np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]))
    from neuromanifold.sweep import SweepSummary, load_config, tasks_of

    folder = tempfile.mkdtemp()
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    with open(os.path.join(folder, "s.toml"), "w") as fh:
        fh.write('[[grid]]\nanalysis = "linear_dimension"\narchitectures = [{filters = [2, 2]}]\n')
    out.append(tasks_of(load_config(os.path.join(folder, "s.toml")))[0])
    # run_sweep's summary, built directly (a real sweep starts worker processes: seconds)
    out.append(
        SweepSummary(
            output=os.path.join(folder, "o.jsonl"),
            total=1,
            skipped=0,
            ran=1,
            failed=0,
            seconds=0.25,
        )
    )
    out.append(
        linear.path_lifting_check(
            [np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 1.0]]), np.array([1.0, -1.0, 2.0])],
            np.random.default_rng(0).standard_normal((5, 2)),
        )
    )
    out.extend(
        reproduce_linear(
            claims=[
                Claim(
                    "fully connected",
                    "generic",
                    "dependent",
                    [Case(fc, fc, fc.random_params, {"num_starts": 4, "seed": "instance"})],
                ),
                Claim(
                    "1D convolution",
                    "strided",
                    "independent",
                    [Case(conv, conv, conv.random_params)],
                ),
            ],
            num_instances=1,
        )
    )
    p = relu.ReLUNet([2, 3, 1]).random_params(0)
    out.append(relu.regions(p))
    out.append(relu.estimate_regions(p, num_samples=100))
    out.append(relu.bent_hyperplanes(p))
    out.append(relu.equivalent(p, p))
    q = [(W.copy(), b.copy()) for W, b in p]
    q[-1][1][0] += 1.0
    out.append(relu.equivalent(p, q))
    out.append(relu.distance(p, q, (-1.0, 1.0)))
    out.append(relu.distance(p, q, (-1.0, 1.0), top1=True).top1)
    query = relu.DifferenceQuery.within(
        -np.ones(p[0][0].shape[1]), np.ones(p[0][0].shape[1]), 0.1, p[-1][0].shape[0]
    )
    out.append(query)
    from neuromanifold.relu import layers as nl

    cnn = relu.ReLUConvNet(
        input_shape=(1, 4),
        layers=[
            nl.Conv(np.ones((2, 1, 2)), np.array([0.0, -1.0])),
            nl.ReLU(),
            nl.Flatten(),
            nl.Dense(np.ones((1, 6)), np.zeros(1)),
        ],
    )
    spec = relu.channel_spec(cnn)
    out += [spec, spec.groups[0]]
    out += list(relu.equivalent(cnn, cnn).symmetry)
    out.append(relu.verify(p, q, query, time_limit=5))
    out.append(relu.neurons(p, (-1.0, 1.0)))
    out.append(relu.neurons(p, (-1.0, 1.0), method="bounds"))
    out.append(relu.reduce(p, (-1.0, 1.0)))
    out.append(relu.fingerprint(p))
    out.append(relu.group_by_function([p, q]))
    out.append(relu.functional_dimension(p))
    out.append(relu.weighted_arrangement(p))
    out.append(relu.arrangements_equal(p, p))
    out.append(relu.orthant_fiber(p))
    out.append(relu.genericity(p))
    W1 = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    out.append(relu.genericity([(W1, [-1.0, -1.0, -2.0]), ([[1.0, 1.0, 1.0]], [0.0])]))
    P3 = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -2.0]]), np.array([0.5])),
        (np.ones((1, 1)), np.zeros(1)),
    ]
    out.append(relu.equivalent_bottleneck(P3, P3))
    out.append(relu.search_symmetries(P3, num_starts=0, initial=[P3]))
    P4 = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -1.0]]), np.array([-0.5])),
        (np.ones((1, 1)), np.zeros(1)),
    ]
    out.append(relu.identifiability(P4))  # with a hidden hyperplane
    deep = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -1.0], [1.0, -2.0]]), np.array([-0.5, -1.0])),
        (np.array([[1.0, -1.0], [-1.0, 2.0]]), np.array([0.5, 0.25])),
        (np.array([[1.0, 2.0]]), np.zeros(1)),
    ]
    out.append(relu.identifiability(deep))  # a window symmetry as its witness
    cnn = relu.ReLUConvNet(
        input_shape=(1, 3),
        layers=[
            relu.layers.Conv(np.array([[[1.0, 0.5]], [[0.0, 0.0]]]), np.array([0.5, -1.0])),
            relu.layers.ReLU(),
            relu.layers.Flatten(),
            relu.layers.Dense(np.ones((1, 4)), np.zeros(1)),
        ],
    )
    out.append(relu.identifiability(cnn))  # a dead channel: a ChannelIdentifiability
    out.append(relu.fiber(P4))
    out.append(relu.fiber(deep))  # any depth: a DeepFiber with its MoveFamily list
    out.append(nm.conservation_laws(P3))  # with its KnownLaw instances
    out.append(relu.gradient_flow(P3, [[0.5, 1.0], [1.0, 0.2]], [[1.0], [0.0]], 0.1, num_times=3))
    out.append(relu.nonlocalizable_example(kind="ramp"))  # with its PartIdentifiability
    out.append(relu.search_nonlocalizable((1, 1, 1, 1), num_samples=1))
    return out


def more_results() -> list:
    """Results whose optional fields are filled (witnesses, rank failures), one object of
    every symmetry class and an Applicability with a finite interval."""
    out = []
    conv = nm.LinearConvNet([2, 2])
    out.append(nm.ntk_dependence(conv, [np.array([1.0, -1.0]), np.array([1.0, -2.0])], seed=0))
    crossing = nm.LinearConvNet([3, 2], [2])
    out.append(
        nm.is_regular_point(
            crossing, crossing.polynomial([np.array([1.0, 0.0, -4.0]), np.array([1.0, -9.0])])
        )
    )
    out.append(
        relu.genericity(
            [
                (np.eye(2), np.array([0.5, 0.5])),
                (np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([0.1, -0.2])),
                (np.ones((1, 2)), np.zeros(1)),
            ]
        )
    )
    P = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -1.0], [-2.0, -1.0]]), np.array([-0.5, -1.0])),
        (np.ones((1, 2)), np.zeros(1)),
    ]
    return out + [
        S.Permutation(1, (1, 0)),
        S.Scaling(2, (0.5, 2.0)),
        S.DeadNeuronMove(1, (-1.0, -2.0, -0.5), (3.0,)),
        S.LinearBlockMixing((0, 1), np.array([[2.0, 1.0], [0.0, 1.0]]), (0.5, -0.25)),
        S.HidingTranslation(0, 0.25),
        S.Flip(0, (1,)),
        S.RampFlip(0),
        S.SecondLayerFlip((0,), (1,), ((1.0, 2.0, 0.5),), ((1.5,),)),
        S.BlockRefactor((0, 1), ((1.0, 0.5, 0.0), (0.0, 1.0, 2.0)), ((1.0,), (2.0,))),
        S.HidingTranslation(0, 0.0).applies(P),
        S.WindowSymmetry(1, S.HidingTranslation(0, 0.25)),
        S.DeadNeuronOutgoing(2, 0, (1.0, 2.0)),
        S.SilentNeuronIncoming(1, 1, (1.0, -1.0, 0.5)),
        S.ActiveBiasShift(2, 1, 0.5),
        S.ParallelNeuronSplit(1, (0, 2), (0.5, -1.0)),
        S.NeuronFlip(1, (0, 1)),
    ]


def nested_results(value, seen=None) -> list:
    """Every Result reachable from ``value`` through fields, lists, tuples and dicts."""
    seen = {} if seen is None else seen
    if isinstance(value, Result):
        if id(value) not in seen:
            seen[id(value)] = value
            for f in dataclasses.fields(value):
                nested_results(getattr(value, f.name), seen)
    elif isinstance(value, (list, tuple)):
        for v in value:
            nested_results(v, seen)
    elif isinstance(value, dict):
        for v in value.values():
            nested_results(v, seen)
    return list(seen.values())


def same(a, b, path="") -> str | None:
    """Where ``a`` and ``b`` differ (types included; NaN equals NaN), or None."""
    if isinstance(a, (np.floating, np.integer, np.bool_)):
        a = a.item()  # numpy scalars come back as Python scalars of the same value
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
            return f"{path}: array {a.shape}/{a.dtype} vs {b.shape}/{b.dtype}"
        if a.dtype == object:
            return None if all(x == y for x, y in zip(a.ravel(), b.ravel())) else f"{path}: values"
        return None if np.array_equal(a, b, equal_nan=a.dtype.kind == "f") else f"{path}: values"
    if isinstance(a, Result):
        for f in dataclasses.fields(a):
            if f.name.startswith("_"):
                continue
            out = same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
            if out:
                return out
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            out = same(x, y, f"{path}[{i}]")
            if out:
                return out
        return None
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} vs {list(b)}"
        for k in a:
            out = same(a[k], b[k], f"{path}[{k!r}]")
            if out:
                return out
        return None
    if isinstance(a, float) and a != a and b != b:
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"
