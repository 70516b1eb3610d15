"""Sweeps: every task exactly once, resumable after a crash, failures recorded, and a real
Dask cluster that loses a worker mid-way."""

import json
import os

import pytest

import neuromanifold as nm
from neuromanifold.sweep import load_config, run_sweep, tasks_of

CONFIG = """
seeds = 2
output = "out.jsonl"

[[grid]]
analysis = "ntk_dependence"
architectures = [{filters = [2, 2], strides = [1]}, {filters = [3, 2], strides = [2]}]

[[grid]]
analysis = "relu_regions"
architectures = [{widths = [2, 3, 1]}, {widths = [2, 3, 1], domain = "nonsense"}]
seeds = [7]
"""


def _records(path):
    return [json.loads(line) for line in open(path)]


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(CONFIG)
    return path


def test_local_sweep_resume_and_failures(config, tmp_path):
    tasks = tasks_of(load_config(config))
    assert len(tasks) == 6
    summary = run_sweep(config, workers=2)
    out = tmp_path / "out.jsonl"
    assert (summary.total, summary.ran, summary.failed) == (6, 6, 1)
    records = _records(out)
    assert sorted(r["task"] for r in records) == sorted(t.key for t in tasks)
    bad = [r for r in records if r["status"] == "error"]
    assert len(bad) == 1 and "nonsense" in bad[0]["error"]
    # the results are the library's own answers
    dep = next(r for r in records if r["task"].startswith('ntk_dependence {"filters":[2,2]'))
    net = nm.LinearConvNet([2, 2], strides=[1])
    expected = nm.ntk_dependence(net, net.random_params(seed=dep["seed"]))
    assert dep["result"]["independent"] == expected.independent
    # a crash mid-write: two lines lost, the second torn; a rerun completes the file
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:3]) + lines[3][:10])
    again = run_sweep(config, workers=1)
    assert (again.skipped, again.ran) == (3, 3)
    assert sorted(r["task"] for r in _records(out)) == sorted(t.key for t in tasks)
    assert run_sweep(config).ran == 0


@pytest.mark.parametrize(
    "text, message",
    [
        ("seeds = 2", "needs at least one"),
        ('[[grid]]\nanalysis = "nope"\narchitectures = [{widths = [2, 1]}]', "unknown analysis"),
        (
            '[[grid]]\nanalysis = "relu_regions"\narchitectures = [{filters = [2]}]',
            "takes architectures",
        ),
        (
            '[[grid]]\nanalysis = "relu_regions"\narchitectures = [{widths = [0, 1]}]',
            "grid entry 1",
        ),
        (
            'seeds = -1\n[[grid]]\nanalysis = "relu_regions"\narchitectures = [{widths = [2, 1]}]',
            "seeds",
        ),
        ("this is not toml [", "not a readable TOML"),
        (
            'seeds = 1000000000000\n[[grid]]\nanalysis = "relu_regions"\n'
            "architectures = [{widths = [2, 1]}]",
            "count from 1 to 100,000",
        ),
        (
            'output = 5\n[[grid]]\nanalysis = "relu_regions"\narchitectures = [{widths = [2, 1]}]',
            "output must be a file name",
        ),
    ],
)
def test_bad_configurations(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(nm.InputError, match=message):
        load_config(path)


def test_refuses_to_append_to_a_foreign_file(config, tmp_path):
    (tmp_path / "out.jsonl").write_text("hello\n")
    with pytest.raises(nm.InputError, match="not a sweep record"):
        run_sweep(config)
    (tmp_path / "out.jsonl").write_bytes(b"\xff\xfe\x00 not text\n")
    with pytest.raises(nm.InputError, match="not UTF-8"):
        run_sweep(config)


@pytest.mark.parametrize(
    "scheduler, message",
    [
        ("notaurl", "an address like"),
        (5, "an address like"),
        ("tcp://127.0.0.1:1", "cannot reach the Dask scheduler"),  # nothing listens there
    ],
)
def test_a_bad_or_unreachable_scheduler_is_an_input_error(config, scheduler, message):
    pytest.importorskip("distributed")
    with pytest.raises(nm.InputError, match=message):
        run_sweep(config, scheduler=scheduler)


def test_dask_cluster_survives_a_killed_worker(tmp_path):
    distributed = pytest.importorskip("distributed")
    path = tmp_path / "dask.toml"
    path.write_text(
        'seeds = 16\n[[grid]]\nanalysis = "relu_regions"\n'
        "architectures = [{widths = [2, 5, 5, 1]}]\n"
    )
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=50,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        killed = []

        def kill_one(record):
            if len(killed) == 0:
                victim = sorted(client.scheduler_info()["workers"])[0]
                client.run(os._exit, 1, workers=[victim], wait=False, on_error="ignore")
                killed.append(victim)

        summary = run_sweep(path, tmp_path / "dask.jsonl", scheduler=client, on_result=kill_one)
    assert killed
    records = _records(tmp_path / "dask.jsonl")
    keys = [r["task"] for r in records]
    assert len(keys) == len(set(keys)) == 16 == summary.total
    assert all(r["status"] == "ok" for r in records), [r["error"] for r in records]
