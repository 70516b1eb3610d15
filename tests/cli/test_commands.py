"""The ``linear`` and ``relu`` subcommands, run as a user runs them: a subprocess on real
model files, checking output, JSON and exit status (0 ok, 1 refused, 2 usage, 3 bad file)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import neuromanifold as nm
from tests.support.common import run_cli

run = run_cli  # the subcommands as a user runs them


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    p = nm.ReLUNet([2, 3, 2, 1]).random_params(seed=3)
    nm.io.save(p, d / "a.npz")
    perm = [2, 0, 1]
    q = [(p[0][0][perm] * 3.0, p[0][1][perm] * 3.0), (p[1][0][:, perm] / 3.0, p[1][1]), p[2]]
    nm.io.save(q, d / "b.safetensors")
    r = [(W.copy(), b.copy()) for W, b in p]
    r[2][1][0] += 0.5
    nm.io.save(r, d / "c.npz")
    nm.io.save([np.array([1.0, 2.0, -1.0]), np.array([0.5, 1.0])], d / "conv.npz", strides=[2])
    (d / "broken.npz").write_bytes(b"PK\x03\x04 definitely not a zip")
    return d


def test_relu_regions(files, tmp_path):
    out = run("relu", "regions", files / "a.npz", "--json", tmp_path / "r.json")
    assert out.returncode == 0, out.stderr
    assert "linear regions of ReLU network 2-3-2-1" in out.stdout
    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data["regions"]) == len(nm.relu.regions(nm.io.load(files / "a.npz").params).regions)


def test_relu_equiv(files, tmp_path):
    same = run(
        "relu", "equiv", files / "a.npz", files / "b.safetensors", "--json", tmp_path / "e.json"
    )
    assert same.returncode == 0, same.stderr
    assert same.stdout.startswith("EQUIVALENT")
    assert json.loads((tmp_path / "e.json").read_text())["equivalent"] is True
    other = run("relu", "equiv", files / "a.npz", files / "c.npz")
    assert other.returncode == 0 and other.stdout.startswith("NOT equivalent")
    assert run("relu", "equiv", files / "a.npz").returncode == 2


def test_relu_plot(files, tmp_path):
    out = run("relu", "plot", files / "a.npz", "--out", tmp_path / "p.png")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_relu_bad_files(files):
    assert run("relu", "regions", files / "missing.npz").returncode == 3
    bad = run("relu", "regions", files / "broken.npz")
    assert bad.returncode == 3 and "broken.npz" in bad.stderr and "Traceback" not in bad.stderr
    wrong_kind = run("relu", "regions", files / "conv.npz")
    assert wrong_kind.returncode == 3 and "needs relu" in wrong_kind.stderr


@pytest.mark.parametrize(
    "action, expect",
    [
        ("dimension", "dim M"),
        ("ntk", "NTK of size"),
        ("fiber", "point(s) up to the sign and rescaling"),
        ("dependence", "NTK along the fiber"),
        ("flow", "invariant drift"),
    ],
)
def test_linear(action, expect, tmp_path):
    flow = ["--t-final", "0.5"] if action == "flow" else []
    out = run(
        "linear",
        action,
        "--filters",
        "2,2",
        "--strides",
        "1",
        "--seed",
        "1",
        *flow,
        "--json",
        tmp_path / "x.json",
    )
    assert out.returncode == 0, out.stderr
    assert expect in " ".join(out.stdout.split())  # lines may wrap at the terminal width
    json.loads((tmp_path / "x.json").read_text())


def test_linear_from_file_and_2d(files):
    out = run("linear", "dimension", "--params", files / "conv.npz")
    assert out.returncode == 0 and "(5,)" in out.stdout
    out2 = run("linear", "dimension", "--filters", "2x2,3x2", "--strides", "2x1")
    assert out2.returncode == 0 and "(6, 3)" in out2.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["linear", "dimension", "--filters", "3,a"],
        ["linear", "dimension"],
        ["linear", "flow", "--filters", "2,2", "--t-final", "-1"],
        ["linear", "ntk", "--filters", "2,2", "--json", "/nonexistent/dir/x.json"],
        ["relu", "regions", "x.npz", "--domain", "box:1,0"],
        ["linear", "dimension", "--filters", "2,2", "--seed", "-3"],
    ],
)
def test_bad_usage_exits_2(argv):
    out = run(*argv)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr


def test_refused_computation_exits_1():
    out = run("linear", "dimension", "--filters", "2,2", "--strides", "1,1,1")
    assert out.returncode == 1 and "strides must have" in out.stderr


@pytest.fixture(scope="module")
def bottleneck(tmp_path_factory):
    from neuromanifold.relu import symmetries as S

    d = tmp_path_factory.mktemp("bottleneck")
    p = nm.ReLUNet([4, 3, 4, 1]).random_params(seed=3)
    nm.io.save(p, d / "p.npz")
    q = S.apply_sequence(
        [
            S.Permutation(1, (2, 0, 1)),
            S.Scaling(1, (0.3, 2.5, 1.7)),
            S.Permutation(2, (3, 1, 0, 2)),
        ],
        p,
    )
    nm.io.save(q, d / "q.safetensors")
    return d, p, q


def test_relu_identify_canonical_fiber(bottleneck, tmp_path):
    d, p, q = bottleneck
    out = run("relu", "identify", d / "p.npz", "--json", tmp_path / "i.json")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(nm.relu.identifiability(p).verdict + " (bottleneck=")
    data = json.loads((tmp_path / "i.json").read_text())
    assert data["identifiable"] == nm.relu.identifiability(p).identifiable
    assert data["locally_identifiable"] is None  # not asked
    loc = run("relu", "identify", d / "p.npz", "--local", "--json", tmp_path / "l.json")
    want = nm.relu.identifiability(p, local=True)
    assert loc.returncode == 0 and "locally identifiable" in loc.stdout
    assert json.loads((tmp_path / "l.json").read_text())["locally_identifiable"] == (
        want.locally_identifiable
    )
    can = run("relu", "canonical", d / "q.safetensors", "--out", tmp_path / "c.npz")
    assert can.returncode == 0, can.stderr
    canon_q = nm.io.load(tmp_path / "c.npz").params
    for (W, b), (W2, b2) in zip(canon_q, nm.relu.canonical_form(p)):  # same fiber, same form
        np.testing.assert_allclose(W, W2, atol=1e-9)
        np.testing.assert_allclose(b, b2, atol=1e-9)
    fib = run("relu", "fiber", d / "p.npz")
    assert fib.returncode == 0 and "fiber of dimension" in fib.stdout
    assert run("relu", "canonical", d / "p.npz", "--out", tmp_path / "c.txt").returncode == 2
    assert run("relu", "identify", d / "p.npz", "--tol", "2").returncode == 2


def test_relu_equiv_reports_the_symmetry(bottleneck):
    d, p, q = bottleneck
    out = run("relu", "equiv", d / "p.npz", d / "q.safetensors")
    assert out.returncode == 0 and out.stdout.startswith("EQUIVALENT")
    assert (
        "symmetry taking A to B:\n  permutation of hidden layer 1: 2->0, 0->1, 1->2" in out.stdout
    )


def test_relu_budgets(files, tmp_path, capsys):
    from neuromanifold.cli import main

    n = len(nm.relu.regions(nm.io.load(files / "a.npz").params).regions)
    out = run("relu", "regions", files / "a.npz", "--max-regions", 2, "--json", tmp_path / "r.json")
    assert out.returncode == 1
    assert out.stdout.startswith("INCOMPLETE: 2 linear regions")
    assert "max_regions=2" in out.stderr and "expect about" in out.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data["regions"]) == 2 and data["certified"] is False
    capsys.readouterr()
    assert (
        main(
            [
                "relu",
                "regions",
                str(files / "a.npz"),
                "--max-regions",
                str(n),
                "--time-limit",
                "600",
            ]
        )
        == 0
    )
    serial = capsys.readouterr().out
    assert f"{n} linear regions" in serial
    assert main(["relu", "regions", str(files / "a.npz"), "--workers", "2"]) == 0
    assert capsys.readouterr().out == serial  # the same list, from worker processes
    assert (
        main(
            [
                "relu",
                "equiv",
                str(files / "a.npz"),
                str(files / "c.npz"),
                "--method",
                "regions",
                "--max-regions",
                "1",
            ]
        )
        == 1
    )
    cap = capsys.readouterr()
    assert "max_regions=1" in cap.err and cap.out == ""
    assert (
        main(
            [
                "relu",
                "plot",
                str(files / "a.npz"),
                "--out",
                str(tmp_path / "p.png"),
                "--max-regions",
                "1",
            ]
        )
        == 1
    )
    assert "max_regions=1" in capsys.readouterr().err
    for bad in (
        ["--max-regions", "0"],
        ["--time-limit", "0"],
        ["--time-limit", "soon"],
        ["--workers", "0"],
    ):
        with pytest.raises(SystemExit) as info:
            main(["relu", "regions", str(files / "a.npz"), *bad])
        assert info.value.code == 2


def test_relu_identify_says_undecided_on_a_non_bottleneck(tmp_path):
    """A 2-16-16-1 regressor is not a bottleneck: the sign-pattern test is only
    sufficient there, so the command says undecided and why, never identifiable."""
    p = nm.ReLUNet([2, 16, 16, 1]).random_params(seed=0)
    nm.io.save(p, tmp_path / "p.safetensors")
    out = run("relu", "identify", tmp_path / "p.safetensors", "--json", tmp_path / "i.json")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("undecided (bottleneck=False")
    assert "undecided: " in out.stdout and "not a bottleneck" in out.stdout
    data = json.loads((tmp_path / "i.json").read_text())
    assert data["identifiable"] is None and "not a bottleneck" in data["undecided_reason"]


@pytest.mark.parametrize("text", [None, "this is not toml [", "seeds = 2\n"])
def test_a_missing_or_malformed_sweep_configuration_exits_3(tmp_path, text):
    path = tmp_path / "sweep.toml"
    if text is not None:
        path.write_text(text)
    out = run("sweep", path)
    assert out.returncode == 3, (out.returncode, out.stderr)
    lines = out.stderr.splitlines()  # one message, wrapped to the terminal's width
    assert lines[0].startswith("neuromanifold: error:")
    assert all(line.startswith("    ") for line in lines[1:])
    assert "sweep.toml" in " ".join(out.stderr.split())


@pytest.fixture(scope="module")
def wide_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("wide")
    p = nm.ReLUNet([4, 3, 4, 1]).random_params(seed=3)
    nm.io.save(p, d / "b.npz")
    from neuromanifold.relu import symmetries as S

    nm.io.save(
        S.apply_sequence([S.Permutation(1, (2, 0, 1)), S.Scaling(1, (0.5, 2.0, 1.0))], p),
        d / "b2.npz",
    )
    nm.io.save(nm.ReLUNet([64, 4, 4, 10]).random_params(seed=1), d / "wide.npz")
    return d


@pytest.mark.parametrize(
    "argv",
    [
        ("relu", "regions", "wide.npz", "--max-regions", "30"),
        ("relu", "identify", "b.npz"),
        ("relu", "equiv", "b.npz", "b2.npz"),
        ("relu", "canonical", "b.npz"),
        ("relu", "distance", "b.npz", "b2.npz", "--domain", "box:-1,1"),
        ("relu", "distance", "b.npz", "b2.npz", "--domain", "box:-1,1", "--top1"),
        ("relu", "neurons", "wide.npz", "--domain", "box:0,1"),
        ("relu", "reduce", "wide.npz", "--domain", "box:0,1"),
        ("relu", "fingerprint", "b.npz", "b2.npz", "wide.npz"),
        ("relu", "fiber", "b.npz"),
        ("linear", "dimension", "--filters", "3,2,2", "--strides", "2,2"),
        ("linear", "ntk", "--filters", "3,2,2", "--strides", "2,2"),
        ("linear", "fiber", "--filters", "3,2", "--strides", "2"),
        ("linear", "dependence", "--filters", "3,2", "--strides", "2"),
        ("linear", "flow", "--filters", "3,2", "--strides", "2"),
        ("demo",),
        ("reproduce", "linear", "--quick"),
    ],
)
def test_default_output_fits_a_100_column_terminal(wide_files, argv):
    env = dict(os.environ, PYTHONWARNINGS="ignore", COLUMNS="100")
    out = subprocess.run(
        [sys.executable, "-m", "neuromanifold", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=wide_files,
        env=env,
    )
    assert out.returncode in (0, 1), out.stderr  # 1: a region budget, reported
    assert out.stdout.strip()
    too_long = [line for line in out.stdout.splitlines() if len(line) > 100]
    assert not too_long, too_long[:3]


@pytest.mark.parametrize(
    "action, expect",
    [("fundim", "functional dimension"), ("genericity", "generic="), ("ntk", "empirical NTK")],
)
def test_relu_fundim_genericity_ntk(files, tmp_path, action, expect):
    out = run("relu", action, files / "a.npz", "--json", tmp_path / "r.json")
    assert out.returncode == 0, out.stderr
    assert expect in out.stdout
    data = json.loads((tmp_path / "r.json").read_text())
    if action == "fundim":  # the layered levels are printed when they decided
        assert data["layered"] == ("layer by layer" in out.stdout)
    if action == "ntk":  # K = J J^T at the inputs it reports
        import numpy as _np

        net = nm.ReLUNet(nm.io.load(files / "a.npz").architecture)
        J = net.jacobian(nm.io.load(files / "a.npz").params, _np.array(data["inputs"]))
        _np.testing.assert_allclose(_np.array(data["ntk"]), J @ J.T, rtol=1e-12)


def test_relu_distance_top1(tmp_path):
    p = nm.ReLUNet([2, 5, 3]).random_params(seed=4)
    nm.io.save(p, tmp_path / "a.npz")
    nm.io.save([p[0], (p[1][0][[1, 0, 2]], p[1][1][[1, 0, 2]])], tmp_path / "swapped.npz")
    nm.io.save([p[0], (2.0 * p[1][0], 2.0 * p[1][1] + 1.0)], tmp_path / "shifted.npz")
    out = run(
        "relu",
        "distance",
        tmp_path / "a.npz",
        tmp_path / "swapped.npz",
        "--domain",
        "box:-1,1",
        "--top1",
        "--json",
        tmp_path / "d.json",
    )
    assert out.returncode == 0, out.stderr
    assert "top-1: A and B rank different classes first" in out.stdout
    top1 = json.loads((tmp_path / "d.json").read_text())["top1"]
    assert top1["same"] is False and len(top1["witness"]) == 2
    out = run(
        "relu",
        "distance",
        tmp_path / "a.npz",
        tmp_path / "shifted.npz",
        "--domain",
        "box:-1,1",
        "--top1",
    )
    assert "the same class first at every point of the box (proved)" in out.stdout
    out = run("relu", "distance", tmp_path / "a.npz", tmp_path / "shifted.npz", "--top1")
    assert out.returncode == 2 and "--top1" in out.stderr


def _action_options():
    """(command, action, its option strings) for every action of relu and linear."""
    import argparse

    from neuromanifold.cli._main import build_parser

    def subs(parser):
        return next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))

    out = []
    for command in ("relu", "linear"):
        for action, parser in subs(subs(build_parser())[command]).items():
            flags = {f for a in parser._actions for f in a.option_strings}
            out.append((command, action, flags))
    return out


def test_each_action_takes_only_its_own_options(capsys):
    """An option only another action reads is a usage error naming the actions that read
    it (one option set shared by every action accepted and ignored 59 such flags)."""
    from neuromanifold.cli import main

    table = _action_options()
    checked = 0
    for command, action, flags in table:
        for other_command, other, other_flags in table:
            if other_command != command:
                continue
            for flag in sorted(other_flags - flags):
                readers = [a for c, a, f in table if c == command and flag in f]
                with pytest.raises(SystemExit) as info:
                    main(
                        [command, action, "m.npz", "m.npz", flag, "1"][:2]
                        + (["m.npz"] if command == "relu" else [])
                        + [flag, "1"]
                    )
                assert info.value.code == 2
                err = capsys.readouterr().err
                assert f"{flag} is an option of {command} {', '.join(readers)} only" in " ".join(
                    err.split()
                ), err
                checked += 1
    assert checked > 60


def test_an_action_help_shows_its_options_alone(capsys):
    from neuromanifold.cli import main

    with pytest.raises(SystemExit):
        main(["relu", "identify", "--help"])
    out = capsys.readouterr().out
    assert "--tol" in out and "--points" not in out and "--quotient" not in out
    assert len(out.splitlines()) < 30


def test_data_and_ntk_refusals_are_messages_not_tracebacks(tmp_path):
    nm.io.save(nm.ReLUNet([2, 3, 3, 1]).random_params(seed=1), tmp_path / "n.npz")
    np.save(tmp_path / "empty.npy", np.zeros((0, 2)))
    (tmp_path / "x.csv").write_text("1,2\n3,4\n")
    cases = [
        (("neurons", "--data", tmp_path / "empty.npy"), "holds no points"),
        (("reduce", "--data", tmp_path / "x.csv"), "numpy.loadtxt"),
        (("neurons", "--data", tmp_path), "a folder"),
        (("ntk", "--points", "10000000000"), "take fewer points"),
        (("ntk", "--domain", "box:-1e300,1e300"), "within"),
    ]
    for (action, *rest), match in cases:
        out = run("relu", action, tmp_path / "n.npz", *rest)
        assert out.returncode in (1, 3), (action, out.stderr)
        err = " ".join(out.stderr.split())
        assert match in err and "Traceback" not in err and "allow_pickle" not in err, err


def test_error_messages_are_wrapped_to_the_terminal(tmp_path):
    """A refusal of 200 characters reads as one message in lines of at most 100."""
    nm.io.save(nm.ReLUNet([2, 3, 1]).random_params(seed=1), tmp_path / "n.npz")
    out = run(
        "relu",
        "ntk",
        tmp_path / "n.npz",
        "--points",
        "10000000000",
        env={**os.environ, "COLUMNS": "100"},
    )
    assert out.returncode == 1
    assert max(len(line) for line in out.stderr.splitlines()) <= 100


def test_hints_name_options_not_python_calls(tmp_path):
    """The library's hints (method='regions', estimate_regions) read as the command's
    options when the command prints them."""
    from neuromanifold.cli._common import for_the_command

    assert for_the_command("(method='regions' decides them)") == "(--method regions decides them)"
    assert "estimate_regions" not in for_the_command(
        "raise the limit, or see estimate_regions for the expected number of regions"
    )
    nm.io.save(nm.ReLUNet([2, 3, 3, 1]).random_params(seed=1), tmp_path / "n.npz")
    out = run("relu", "neurons", tmp_path / "n.npz", "--method", "bounds")
    assert out.returncode == 0 and "(bounds, certified)" in out.stdout
    assert "method='regions'" not in out.stdout


def test_a_box_with_one_interval_per_input(files, tmp_path):
    """``--domain box:LO1:HI1,LO2:HI2``: each input its own interval, as the library's
    Domain.box takes them; ``box:LO,HI`` keeps meaning the same interval everywhere."""
    params = nm.io.load(files / "a.npz").params
    out = run(
        "relu",
        "regions",
        files / "a.npz",
        "--domain",
        "box:-1:1,0:2.5",
        "--json",
        tmp_path / "r.json",
    )
    assert out.returncode == 0, out.stderr
    want = nm.relu.regions(params, domain=nm.relu.Domain.box([-1, 0], [1, 2.5]))
    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data["regions"]) == want.num_regions
    assert data["domain"]["lower"] == [-1, 0] and data["domain"]["upper"] == [1, 2.5]
    same = run(
        "relu", "regions", files / "a.npz", "--domain", "box:-1,1", "--json", tmp_path / "s.json"
    )
    assert same.returncode == 0, same.stderr
    data = json.loads((tmp_path / "s.json").read_text())
    assert data["domain"]["lower"] == [-1, -1] and data["domain"]["upper"] == [1, 1]


@pytest.mark.parametrize(
    "box, status, match",
    [
        ("box:-1:1,0:2,0:1", 1, "box has dimension 3 but the network's input dimension is 2"),
        ("box:-1:1", 1, "box has dimension 1 but the network's input dimension is 2"),
        ("box:-1:1,2:0", 2, "coordinate 1 is '2:0' (LO=2 > HI=0)"),
        ("box:-1:1,0", 2, "coordinate 1 is '0', not LO:HI"),
        ("box:-1:1,a:2", 2, "coordinate 1 is 'a:2', not LO:HI"),
        ("box:-1:1,nan:2", 2, "coordinate 1 is 'nan:2'"),
    ],
)
def test_per_input_box_refusals_name_the_coordinate_or_both_dimensions(files, box, status, match):
    out = run("relu", "regions", files / "a.npz", "--domain", box)
    assert out.returncode == status, (out.stdout, out.stderr)
    err = " ".join(out.stderr.split())
    assert match in err and "Traceback" not in err, err


def test_each_command_prints_its_models_in_full(tmp_path, capsys):
    """A run of files of one architecture is described once per command; the next
    command in the same process describes its model again."""
    from neuromanifold.cli import main

    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    nm.io.save(nm.ReLUNet([2, 3, 1]).random_params(seed=0), a)
    nm.io.save(nm.ReLUNet([2, 3, 1]).random_params(seed=1), b)
    assert main(["relu", "fingerprint", str(a), str(b)]) == 0
    err = capsys.readouterr().err
    assert "read ReLU network 2-3-1" in err and "(the same architecture as" in err
    assert main(["relu", "fingerprint", str(b)]) == 0
    assert "read ReLU network 2-3-1" in capsys.readouterr().err
