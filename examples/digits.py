"""A real trained network, end to end: a bottleneck ReLU network on scikit-learn's digits.

Trains ``64 -> n1 -> n2 -> 10`` (default 8, 16; ``--quick``: 6, 12) with a fixed random
state, saves it to ``.npz``, loads it back through :mod:`neuromanifold.io` and analyses it:
dead and always-active neurons, hidden first-layer hyperplanes, identifiability,
functional dimension (on a box, see ``--fd-domain``), canonical form; a permuted and
rescaled copy is recognized as equivalent with the recovered symmetry, a copy fine-tuned
by a few ``partial_fit`` steps is not, with a witness input. The same verdicts are then
obtained from the command line (``python -m neuromanifold relu equiv A B``). Every number
printed is computed; each step reports its wall time.

Run:  python examples/digits.py [--quick] [--out DIR] [--fd-budget SECONDS]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

from neuromanifold import ComputationLimitError, NeuromanifoldError, io, relu
from neuromanifold.relu import symmetries as sym

#: widths (n1, n2) of the hidden layers, and training iterations
FULL = {"hidden": (8, 16), "max_iter": 300}
QUICK = {"hidden": (6, 12), "max_iter": 60}
SEED = 0


class Timer:
    """Wall time of each step, collected for the summary."""

    def __init__(self):
        self.times: dict[str, float] = {}

    def step(self, name: str):
        timer = self

        class _Step:
            def __enter__(self):
                print(f"\n== {name}", flush=True)
                self.t0 = time.perf_counter()
                return self

            def __exit__(self, *exc):
                dt = time.perf_counter() - self.t0
                timer.times[name] = dt
                print(f"   [{dt:.3f} s]", flush=True)
                return False

        return _Step()


def digits_data():
    """The bundled digits data, pixels scaled to [0, 1], split 1500 / 297."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    return X[:1500], y[:1500], X[1500:], y[1500:]


def train(hidden, max_iter, seed=SEED):
    """A fitted MLPClassifier (ReLU, Adam) with hidden widths ``hidden``."""
    from sklearn.neural_network import MLPClassifier

    Xtr, ytr, Xte, yte = digits_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at small max_iter
        mlp = MLPClassifier(
            hidden_layer_sizes=tuple(hidden), random_state=seed, max_iter=max_iter
        ).fit(Xtr, ytr)
    return mlp


def fine_tune(mlp, steps=3):
    """A copy of ``mlp`` after ``steps`` extra ``partial_fit`` passes over the held-out data."""
    _, _, Xte, yte = digits_data()
    ft = copy.deepcopy(mlp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(steps):
            ft.partial_fit(Xte, yte)
    return ft


def permuted_copy(params, seed=1):
    """``params`` moved by a random permutation and positive rescaling of both hidden
    layers; returns (copy, the symmetries used)."""
    rng = np.random.default_rng(seed)
    n1, n2 = params[0][0].shape[0], params[1][0].shape[0]
    used = [
        sym.Permutation(1, tuple(int(i) for i in rng.permutation(n1))),
        sym.Scaling(1, tuple(float(s) for s in rng.uniform(0.25, 4.0, n1))),
        sym.Permutation(2, tuple(int(i) for i in rng.permutation(n2))),
        sym.Scaling(2, tuple(float(s) for s in rng.uniform(0.25, 4.0, n2))),
    ]
    return sym.apply_sequence(used, params), used


def param_distance(p, q) -> float:
    """Largest entrywise difference of two parameter lists of the same shapes."""
    return max(
        max(float(np.abs(Wp - Wq).max()), float(np.abs(bp - bq).max()))
        for (Wp, bp), (Wq, bq) in zip(p, q)
    )


def cli(*args) -> tuple[int, str, dict | None]:
    """Run ``python -m neuromanifold ARGS --json F``; returns (status, stdout, json)."""
    import neuromanifold

    src = os.path.dirname(os.path.dirname(os.path.abspath(neuromanifold.__file__)))
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        proc = subprocess.run(
            [sys.executable, "-m", "neuromanifold", *args, "--json", out],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        payload = None
        if os.path.exists(out):
            with open(out) as fh:
                payload = json.load(fh)
    return proc.returncode, proc.stdout.strip(), payload


def run(
    quick: bool = False, out_dir: str | None = None, fd_budget: float = 60.0, fd_domain: str = "box"
) -> dict:
    """Run every step, print the report and return its numbers (for the tests)."""
    cfg = QUICK if quick else FULL
    out_dir = out_dir or tempfile.mkdtemp(prefix="digits-")
    os.makedirs(out_dir, exist_ok=True)
    T = Timer()
    rep: dict = {"out_dir": out_dir}

    with T.step("train"):
        mlp = train(cfg["hidden"], cfg["max_iter"])
        _, _, Xte, yte = digits_data()
        rep["accuracy"] = float(mlp.score(Xte, yte))
        print(
            f"   MLPClassifier{tuple(cfg['hidden'])}, random_state={SEED}, "
            f"max_iter={cfg['max_iter']}: held-out accuracy {rep['accuracy']:.3f}"
        )

    with T.step("save and load (neuromanifold.io)"):
        path = os.path.join(out_dir, "digits.npz")
        io.save(mlp, path)
        model = io.load(path)
        p = model.params
        rep["architecture"] = model.architecture
        rep["roundtrip_difference"] = param_distance(p, io.load(mlp).params)
        # the loaded network reproduces sklearn's logits
        logits = relu.forward(p, Xte)
        rep["logit_difference"] = float(np.abs(logits.argmax(1) - mlp.predict(Xte)).max())
        print(f"   {model.describe()}")
        print(
            f"   saved {path}; reloaded parameters differ from the live model by "
            f"{rep['roundtrip_difference']:.3g}; argmax of relu.forward == "
            f"mlp.predict on all {len(Xte)} held-out digits: {rep['logit_difference'] == 0}"
        )

    with T.step("identifiability"):
        ident = relu.identifiability(p)
        rep["identifiability"] = ident
        print(f"   dead second-layer neurons (on the orthant): {list(ident.dead_neurons)}")
        print(f"   always-active second-layer neurons: {list(ident.linear_neurons)}")
        print(f"   hidden first-layer hyperplanes: {[h.neuron for h in ident.hidden_hyperplanes]}")
        print(f"   flips: {list(ident.flips)}")
        print("   " + ident.describe().replace("\n", "\n   "))
        # how much of the training data the dead neuron ever sees
        Xtr = digits_data()[0]
        H2 = relu.forward(p[:2], Xtr)
        rep["active_fraction"] = [float((H2[:, j] > 0).mean()) for j in range(H2.shape[1])]
        print(
            f"   fraction of training digits on which each second-layer neuron is active: "
            f"{[round(f, 2) for f in rep['active_fraction']]}"
        )

    with T.step("canonical form"):
        try:
            C = relu.canonical_form(p)
        except NeuromanifoldError as exc:  # a finding, reported as such
            C = None
            rep["canonical_refused"] = str(exc)
            print(f"   REFUSED: {exc}")
        else:
            rep["canonical_function_difference"] = float(
                np.abs(relu.forward(C, Xte) - relu.forward(p, Xte)).max()
            )
            print(
                f"   canonical representative computed; max |f_C - f_p| on the held-out "
                f"digits: {rep['canonical_function_difference']:.3g}"
            )

    with T.step("permuted and rescaled copy"):
        q, used = permuted_copy(p)
        eq = relu.equivalent(p, q)
        rep["equivalence_copy"] = eq
        rep["copy_symmetry_error"] = (
            param_distance(sym.apply_sequence(list(eq.symmetry), p), q) if eq.symmetry else None
        )
        if C is not None:
            rep["canonical_copy_difference"] = param_distance(C, relu.canonical_form(q))
        print(
            f"   copy made with {', '.join(type(s).__name__ for s in used)} "
            f"(differs from p by {param_distance(p, q):.3g} in the parameters)"
        )
        print(f"   equivalent={eq.equivalent} (method {eq.method}, certified={eq.certified})")
        named = [type(s).__name__ + f"(layer={s.layer})" for s in eq.symmetry]
        print(f"   recovered symmetry: {named}")
        print(f"   max |apply_sequence(symmetry, p) - q| = {rep['copy_symmetry_error']:.3g}")
        if C is not None:
            print(
                f"   canonical forms of p and the copy differ by "
                f"{rep['canonical_copy_difference']:.3g}"
            )
        # the polynomial-time test of bottleneck networks (canonical forms), on its own
        eb = relu.equivalent_bottleneck(p, q)
        rep["bottleneck_copy"] = eb
        print(
            f"   bottleneck fast path: applies={eb.applies}, equivalent={eb.equivalent}, "
            f"certified={eb.certified}, {len(eb.symmetry or [])} named symmetries; "
            f"{eb.note.split('; ', 1)[-1]}"
        )

    with T.step("fine-tuned copy (3 partial_fit steps)"):
        ft = fine_tune(mlp)
        pf = io.load(ft).params
        eqf = relu.equivalent(p, pf)
        rep["equivalence_finetuned"] = eqf
        rep["finetune_param_change"] = param_distance(p, pf)
        print(
            f"   fine-tuning moved the parameters by {rep['finetune_param_change']:.3g}; "
            f"held-out accuracy {ft.score(Xte, yte):.3f}"
        )
        print(f"   equivalent={eqf.equivalent} (method {eqf.method}, certified={eqf.certified})")
        if eqf.witness is not None:
            w = np.asarray(eqf.witness, dtype=float)
            diff = float(np.abs(relu.forward(p, w[None]) - relu.forward(pf, w[None])).max())
            rep["witness_forward_difference"] = diff
            print(
                f"   witness input (||w||_inf = {np.abs(w).max():.3g}): max output "
                f"difference {eqf.witness_difference:.4g} (library), {diff:.4g} "
                f"(relu.forward)"
            )
        changed = int((relu.forward(p, Xte).argmax(1) != relu.forward(pf, Xte).argmax(1)).sum())
        rep["predictions_changed"] = changed
        print(f"   held-out digits whose predicted class changed: {changed} of {len(Xte)}")

    with T.step("fiber"):
        F = relu.fiber(p)
        rep["fiber_dimension"] = F.dimension
        print(
            f"   fiber dimension {F.dimension} "
            f"({len(F.families)} famil{'y' if len(F.families) == 1 else 'ies'})"
        )

    dom = (0.0, 1.0) if fd_domain == "box" else None
    dname = "the box [0, 1]^64 (the pixel range)" if dom else "all of R^64"
    with T.step(f"functional dimension on {dname}"):
        if fd_budget <= 0:
            rep["functional_dimension"] = None
            print("   skipped (--fd-budget 0)")
        else:
            try:
                fd = relu.functional_dimension(p, dom, time_limit=fd_budget)
                rep["functional_dimension"] = (
                    fd.rank,
                    fd.bound,
                    fd.method,
                    fd.num_milps,
                    fd.certified,
                )
                print(
                    f"   rank {fd.rank} (generic bound P - hidden = {fd.bound}), decided by "
                    f"{fd.method} ({fd.num_sampled_regions} sampled regions, "
                    f"{fd.num_milps} MILPs), certified={fd.certified}"
                )
            except ComputationLimitError as err:
                rep["functional_dimension"] = None
                print(f"   NOT FINISHED within {fd_budget:g} s: {err}")

    with T.step("command line: neuromanifold relu equiv"):
        qpath, fpath = os.path.join(out_dir, "copy.npz"), os.path.join(out_dir, "finetuned.npz")
        io.save(q, qpath)
        io.save(pf, fpath)
        status_q, text_q, js_q = cli("relu", "equiv", path, qpath)
        status_f, text_f, js_f = cli("relu", "equiv", path, fpath)
        rep["cli_copy"], rep["cli_finetuned"] = js_q, js_f
        print(f"   $ python -m neuromanifold relu equiv {path} {qpath}")
        print("   " + text_q.splitlines()[0] if text_q else f"   exit status {status_q}")
        print(f"   $ python -m neuromanifold relu equiv {path} {fpath}")
        print("   " + text_f.splitlines()[0] if text_f else f"   exit status {status_f}")

    print("\n== times (s)")
    for name, dt in T.times.items():
        print(f"   {dt:8.3f}  {name}")
    rep["times"] = T.times
    return rep


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="a small network (64-6-12-10)")
    ap.add_argument("--out", help="directory for the model files (default: a temp dir)")
    ap.add_argument(
        "--fd-budget",
        type=float,
        default=60.0,
        help="seconds allowed for the functional dimension (default 60; 0 skips it)",
    )
    ap.add_argument(
        "--fd-domain",
        choices=["box", "whole"],
        default="box",
        help="domain of the functional dimension: box [0,1]^64 or R^64",
    )
    args = ap.parse_args(argv)
    run(quick=args.quick, out_dir=args.out, fd_budget=args.fd_budget, fd_domain=args.fd_domain)
    return 0


if __name__ == "__main__":
    sys.exit(main())
