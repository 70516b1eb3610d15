"""Model import and export: round trips for every format, and clear errors on bad files."""

import json
import os
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import neuromanifold as nm
from neuromanifold.io import load, save


def _same(p, q):
    return len(p) == len(q) and all(
        np.array_equal(W, W2) and np.array_equal(b, b2) for (W, b), (W2, b2) in zip(p, q)
    )


@given(
    widths=st.lists(st.integers(1, 5), min_size=2, max_size=5),
    seed=st.integers(0, 10**6),
    ext=st.sampled_from(["npz", "safetensors"]),
    float32=st.booleans(),
)
def test_relu_round_trip(tmp_path_factory, widths, seed, ext, float32):
    params = nm.ReLUNet(widths).random_params(seed=seed)
    if float32:
        params = [(W.astype(np.float32), b.astype(np.float32)) for W, b in params]
    path = tmp_path_factory.mktemp("io") / f"net.{ext}"
    if float32:  # a file written by someone else, in float32
        named = {
            f"{2 * l}.{k}": a
            for l, (W, b) in enumerate(params)
            for k, a in (("weight", W), ("bias", b))
        }
        if ext == "npz":
            np.savez(path, **named)
        else:
            from safetensors.numpy import save_file

            save_file(named, str(path))
    else:
        save(params, path)
    model = load(path)
    assert model.kind == "relu" and model.architecture == tuple(widths)
    assert all(W.dtype == np.float64 for W, _ in model.params)
    assert _same(model.params, [(W.astype(float), b.astype(float)) for W, b in params])
    assert model.converted_from == ("float32" if float32 else "float64")
    json.dumps(model.to_dict())


@pytest.mark.parametrize("ext", ["npz", "safetensors"])
@pytest.mark.parametrize(
    "shapes, strides", [([3, 2, 2], [2, 2]), ([(2, 2), (3, 2)], [(2, 1)]), ([3, 2], [2, 3])]
)
def test_conv_round_trip(tmp_path, ext, shapes, strides):
    net = nm.LinearConvNet(shapes, strides=strides)
    filters = net.random_params(seed=0)
    path = tmp_path / f"conv.{ext}"
    save(filters, path, strides=strides)
    model = load(path)
    assert model.kind == "linear_conv"
    assert model.network() == net
    assert all(np.array_equal(a, b) for a, b in zip(model.params, filters))
    assert len(model.strides) == len(strides)  # the last stride, when given, is kept


def test_state_dict_naming_and_natural_order():
    rng = np.random.default_rng(0)
    arrays = {f"module.{i}.weight": rng.standard_normal((2, 2)) for i in (0, 2, 10)}
    arrays["module.10.weight"] = rng.standard_normal((1, 2))
    model = load(arrays)
    assert model.architecture == (2, 2, 2, 1)
    assert all(np.array_equal(b, np.zeros_like(b)) for _, b in model.params)


def test_sklearn_mlp():
    sk = pytest.importorskip("sklearn.neural_network")
    X = np.random.default_rng(0).standard_normal((40, 4))
    reg = sk.MLPRegressor(hidden_layer_sizes=(5, 3), max_iter=30, random_state=0)
    with pytest.warns(Warning):
        reg.fit(X, X[:, 0])
    model = load(reg)
    assert model.architecture == (4, 5, 3, 1)
    np.testing.assert_allclose(
        nm.relu.forward(model.params, X)[:, 0], reg.predict(X), rtol=1e-10, atol=1e-12
    )
    clf = sk.MLPClassifier(hidden_layer_sizes=(3,), activation="tanh", max_iter=5)
    with pytest.warns(Warning):
        clf.fit(X, X[:, 0] > 0)
    with pytest.raises(nm.ModelFileError, match="activation must be 'relu'"):
        load(clf)
    with pytest.raises(nm.ModelFileError, match="not fitted"):
        load(sk.MLPRegressor())


def test_torch_sequential_and_state_dict(tmp_path):
    torch = pytest.importorskip("torch")
    seq = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    model = load(seq)  # parameters require grad: read detached
    assert model.architecture == (3, 4, 2) and model.converted_from == "float32"
    x = torch.randn(7, 3)
    np.testing.assert_allclose(
        nm.relu.forward(model.params, x.numpy()), seq(x).detach().numpy(), rtol=1e-5, atol=1e-6
    )
    torch.save(seq.state_dict(), tmp_path / "sd.pt")
    assert _same(load(tmp_path / "sd.pt").params, model.params)
    # a ReLU network saved by neuromanifold loads into the matching Sequential
    save(model, tmp_path / "n.safetensors")
    from safetensors.torch import load_file

    seq2 = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    seq2.load_state_dict({k: v.float() for k, v in load_file(tmp_path / "n.safetensors").items()})
    conv = torch.nn.Sequential(
        torch.nn.Conv1d(1, 1, 3, stride=2, bias=False),
        torch.nn.Conv1d(1, 1, 2, stride=2, bias=False),
    )
    cm = load(conv)
    assert cm.kind == "linear_conv" and cm.network() == nm.LinearConvNet([3, 2], strides=[2])
    sig = torch.randn(1, 1, 20)
    # the analyses ignore the last stride (it only subsamples the output)
    np.testing.assert_allclose(
        cm.network().apply(cm.params, sig.numpy()[0])[:, ::2],
        conv(sig).detach().numpy()[0],
        rtol=1e-5,
        atol=1e-6,
    )
    with pytest.raises(nm.ModelFileError, match="Tanh"):
        load(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)))


def test_torch_file_that_would_need_unpickling_is_refused(tmp_path):
    pytest.importorskip("torch")

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned > " + str(tmp_path / "pwned"),))

    with open(tmp_path / "evil.pt", "wb") as fh:
        pickle.dump({"0.weight": Evil()}, fh)
    with pytest.raises(nm.ModelFileError, match="evil.pt"):
        load(tmp_path / "evil.pt")
    assert not (tmp_path / "pwned").exists()


def test_bad_files(tmp_path):
    good = tmp_path / "good.npz"
    save(nm.ReLUNet([2, 3, 1]).random_params(seed=0), good)
    (tmp_path / "trunc.npz").write_bytes(good.read_bytes()[:40])
    (tmp_path / "trunc.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{")
    np.savez(tmp_path / "obj.npz", w=np.array([{"a": 1}], dtype=object))
    np.savez(tmp_path / "shapes.npz", **{"0.weight": np.ones((3, 2)), "2.weight": np.ones((1, 4))})
    np.savez(tmp_path / "names.npz", **{"0.weight": np.ones((3, 2)), "0.scale": np.ones(3)})
    np.savez(tmp_path / "nan.npz", **{"0.weight": np.full((3, 2), np.nan)})
    np.savez(tmp_path / "conv.npz", **{"0.weight": np.ones((1, 1, 3))})
    (tmp_path / "x.h5").write_bytes(b"")
    (tmp_path / "empty.onnx").write_bytes(b"")
    cases = {
        "missing.npz": "no such file",
        "trunc.npz": "truncated",
        "obj.npz": "unpickled",
        "trunc.safetensors": "truncated",
        "shapes.npz": "inconsistent layer shapes",
        "names.npz": "neither a weight nor a bias",
        "nan.npz": "NaN",
        "conv.npz": "no strides",
        "x.h5": "unknown model format",
        "empty.onnx": "holds no ONNX graph",
    }
    for name, message in cases.items():
        with pytest.raises(nm.ModelFileError, match=message) as info:
            load(tmp_path / name)
        assert name in str(info.value)
    with pytest.raises(nm.ModelFileError, match="cannot write"):
        save(nm.ReLUNet([2, 1]).random_params(), tmp_path / "no" / "dir.npz")
    with pytest.raises(nm.ModelFileError, match="writes .npz, .safetensors or .onnx"):
        save(nm.ReLUNet([2, 1]).random_params(), tmp_path / "a.pt")
    with pytest.raises(nm.ModelFileError, match="cannot read a model"):
        load(42)


# -- bad input that reached numpy, zlib or safetensors: each is a ModelFileError ----------


def _npz_with_header(path, shape):
    """An npz whose one member declares ``shape`` but holds 16 bytes of data."""
    import io as _io
    import zipfile

    buf = _io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f8", "fortran_order": False, "shape": shape}
    )
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("0.weight.npy", buf.getvalue() + b"\0" * 16)
    return path


@pytest.mark.parametrize("shape", [(2**20, 2**20), (2**40,), (4, 4)])
def test_an_npy_header_declaring_more_than_the_file_holds_is_refused(tmp_path, shape):
    path = _npz_with_header(tmp_path / "big.npz", shape)
    with pytest.raises(nm.ModelFileError, match="declares shape"):
        load(path)


def test_a_corrupted_compressed_npz_is_refused(tmp_path):
    path = tmp_path / "c.npz"
    np.savez_compressed(
        path,
        **{"0.weight": np.random.default_rng(0).standard_normal((40, 40)), "0.bias": np.zeros(40)},
    )
    data = bytearray(path.read_bytes())
    for i in range(200, 400):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    with pytest.raises(nm.ModelFileError, match="not a valid .npz"):
        load(path)


def _safetensors(path, dtype, nbytes, meta=None):
    header = {"0.weight": {"dtype": dtype, "shape": [2, 2], "data_offsets": [0, nbytes]}}
    if meta is not None:
        header["__metadata__"] = meta
    raw = json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + b"\0" * nbytes)
    return path


@pytest.mark.parametrize("dtype", ["F8_E4M3", "F8_E5M2"])
def test_a_float8_safetensors_file_is_refused(tmp_path, dtype):
    with pytest.raises(nm.ModelFileError, match="dtype"):
        load(_safetensors(tmp_path / "f8.safetensors", dtype, 4))


@pytest.mark.parametrize(
    "strides", ["NaN", '"two"', "5", "[[1e400]]", "[1.5]", "[true]", '["1+2j"]', "[0]", "[]", "{"]
)
def test_malformed_stored_strides_are_refused_not_cast(tmp_path, strides):
    path = tmp_path / "s.safetensors"
    from safetensors.numpy import save_file

    save_file(
        {"0.weight": np.ones((1, 1, 2)), "1.weight": np.ones((1, 1, 2))},
        str(path),
        metadata={"neuromanifold.strides": strides},
    )
    with pytest.raises(nm.ModelFileError, match="strides"):
        load(path)


def test_well_formed_stored_strides_still_load(tmp_path):
    path = tmp_path / "s.safetensors"
    save([np.ones(2), np.ones(3)], path, strides=[2, 1])
    assert load(path).strides == ((2,), (1,))


@pytest.mark.parametrize(
    "arrays",
    [
        {"0.weight": np.zeros((0, 2)), "0.bias": np.zeros(0), "2.weight": np.zeros((1, 0))},
        {"0.weight": np.zeros((3, 0)), "2.weight": np.ones((1, 3))},
    ],
)
def test_a_zero_width_layer_is_refused_when_loading(arrays):
    with pytest.raises(nm.ModelFileError, match="zero-length axis"):
        load(arrays)


def test_two_arrays_naming_one_layer_are_refused():
    with pytest.raises(nm.ModelFileError, match="two arrays name '0.weight'"):
        load(
            {
                "0.weight": np.ones((2, 2)),
                "module.0.weight": np.ones((2, 2)),
                "2.weight": np.ones((1, 2)),
            }
        )


@pytest.mark.parametrize("broken", ["coefs_none", "no_intercepts"])
def test_a_broken_sklearn_model_is_refused(broken):
    sklearn = pytest.importorskip("sklearn.neural_network")
    m = sklearn.MLPRegressor(hidden_layer_sizes=(3,), max_iter=5).fit(
        np.random.default_rng(0).standard_normal((20, 2)), np.zeros(20)
    )
    if broken == "coefs_none":
        m.coefs_ = None
    else:
        del m.intercepts_
    with pytest.raises(nm.ModelFileError, match="not fitted"):
        load(m)


def test_saving_into_a_missing_folder_or_a_file_is_refused(tmp_path):
    p = [(np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]
    (tmp_path / "file").write_text("x")
    for target in (tmp_path / "missing" / "m.safetensors", tmp_path / "file" / "m.npz"):
        with pytest.raises(nm.ModelFileError, match="cannot write"):
            save(p, target)


# -- layer order, checkpoints, prefixes and what the reading assumed ---------------------


def _chain(names, widths=(2, 3, 4, 1)):
    rng = np.random.default_rng(0)
    arrays = {}
    for name, (a, b) in zip(names, zip(widths, widths[1:])):
        arrays[f"{name}.weight"] = rng.standard_normal((b, a))
        arrays[f"{name}.bias"] = rng.standard_normal(b)
    return arrays


def _write(tmp_path, arrays, ext):
    """``arrays`` in a file of suffix ``ext`` (None: the dict itself), as another tool
    writes them (safetensors sorts the names; npz keeps the order given)."""
    if ext is None:
        return arrays
    path = tmp_path / f"m{ext}"
    if ext == ".npz":
        np.savez(path, **arrays)
    else:
        from safetensors.numpy import save_file

        save_file(arrays, str(path))
    return path


@pytest.mark.parametrize("names", [("input", "hidden", "output"), ("encoder", "middle", "decoder")])
def test_unordered_names_are_ordered_by_the_one_chain_their_shapes_allow(tmp_path, names):
    arrays = _chain(names)
    m = load(_write(tmp_path, arrays, ".safetensors"))
    assert m.architecture == (2, 3, 4, 1)
    for (W, b), name in zip(m.params, names):
        assert np.array_equal(W, arrays[f"{name}.weight"])
    assert any("the one chain their shapes allow" in n for n in m.notes)


@pytest.mark.parametrize("ext", [".npz", None])
def test_a_stored_order_that_does_not_chain_is_refused_not_reordered(tmp_path, ext):
    arrays = _chain(("input", "hidden", "output"))
    shuffled = {k: arrays[k] for k in sorted(arrays)}  # hidden, input, output
    with pytest.raises(nm.ModelFileError, match="do not chain in the order the file stores"):
        load(_write(tmp_path, shuffled, ext))


def _forward(params, x):
    for l, (W, b) in enumerate(params):
        x = W @ x + b
        x = np.maximum(x, 0) if l < len(params) - 1 else x
    return x


@pytest.mark.parametrize("ext", [".npz", ".safetensors", None])
@pytest.mark.parametrize(
    "names",
    [
        [str(2 * i) for i in range(6)],
        [f"layers.{i}" for i in range(12)],
        [f"fc{i + 1}" for i in range(11)],
    ],
)
def test_square_layers_keep_their_order(tmp_path, ext, names):
    """Square layers chain in every order, so a sorted reading (``0, 10, 2``) would be
    another network without a sign: the order is the file's, or the names' numbers."""
    rng = np.random.default_rng(3)
    params = [(rng.standard_normal((3, 3)), rng.standard_normal(3)) for _ in names]
    arrays = {}
    for name, (W, b) in zip(names, params):
        arrays[f"{name}.weight"], arrays[f"{name}.bias"] = W, b
    m = load(_write(tmp_path, arrays, ext))
    assert _same(m.params, params)
    x = rng.standard_normal(3)
    np.testing.assert_array_equal(_forward(m.params, x), _forward(params, x))


@pytest.mark.parametrize("names", [("input", "hidden", "output"), ("encoder", "decoder")])
def test_square_layers_whose_order_nothing_says_are_refused(tmp_path, names):
    rng = np.random.default_rng(4)
    arrays = {f"{n}.weight": rng.standard_normal((3, 3)) for n in names}
    with pytest.raises(nm.ModelFileError, match="ambiguous.*more than one order"):
        load(_write(tmp_path, arrays, ".safetensors"))
    m = load(_write(tmp_path, arrays, ".npz"))  # npz keeps the order it was given
    assert all(np.array_equal(W, arrays[f"{n}.weight"]) for (W, _), n in zip(m.params, names))


def test_our_safetensors_keep_the_order_of_any_names(tmp_path):
    rng = np.random.default_rng(5)
    params = [(rng.standard_normal((3, 3)), rng.standard_normal(3)) for _ in range(12)]
    save(params, tmp_path / "m.safetensors")
    assert _same(load(tmp_path / "m.safetensors").params, params)


@pytest.mark.parametrize("ext", [".npz", ".safetensors", None])
def test_a_layer_stored_twice_is_refused_by_name(tmp_path, ext):
    rng = np.random.default_rng(6)
    arrays = {
        "0.weight": rng.standard_normal((3, 3)),
        "2.weight": rng.standard_normal((3, 3)),
        "model.2.weight": rng.standard_normal((3, 3)),
        "4.weight": rng.standard_normal((1, 3)),
    }
    with pytest.raises(nm.ModelFileError, match="two arrays name '2.weight'"):
        load(_write(tmp_path, arrays, ext))


def test_an_ambiguous_layer_order_is_refused(tmp_path):
    rng = np.random.default_rng(1)
    shapes = {"a": (1, 3), "b": (3, 3), "c": (3, 3), "d": (3, 2)}  # d -> {b, c} -> a
    arrays = {f"{k}.weight": rng.standard_normal(s) for k, s in shapes.items()}
    with pytest.raises(nm.ModelFileError, match="ambiguous"):
        load(_write(tmp_path, arrays, ".safetensors"))


def test_inconsistent_shapes_are_refused_with_the_shapes():
    with pytest.raises(nm.ModelFileError, match="inconsistent layer shapes"):
        load({"a.weight": np.ones((3, 2)), "b.weight": np.ones((1, 4))})


@pytest.mark.parametrize("key", ["model_state_dict", "state_dict", "model"])
def test_training_checkpoints_are_unwrapped_and_say_which_key(key):
    sd = _chain(("0", "2", "4"))
    m = load({key: sd, "optimizer_state_dict": {"lr": 0.1}, "epoch": 3})
    assert m.architecture == (2, 3, 4, 1)
    assert any(repr(key) in n for n in m.notes)


@pytest.mark.parametrize("prefix", ["module.", "model."])
def test_a_wrapper_prefix_on_every_name_is_stripped(prefix):
    sd = {prefix + k: v for k, v in _chain(("0", "2", "4")).items()}
    m = load(sd)
    assert m.architecture == (2, 3, 4, 1) and any(repr(prefix) in n for n in m.notes)


def test_a_weights_only_file_says_relu_is_assumed(tmp_path):
    p = [(np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]
    save(p, tmp_path / "m.npz")
    assert any("ReLU assumed" in n for n in load(tmp_path / "m.npz").notes)
    assert not any("ReLU assumed" in n for n in load(p).notes)  # our own format: ReLU


def test_random_bytes_with_a_torch_suffix_are_not_a_pytorch_file(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "junk.pt"
    path.write_bytes(np.random.default_rng(0).bytes(256))
    with pytest.raises(nm.ModelFileError, match="not a PyTorch file"):
        load(path)


def test_the_analyses_take_a_loaded_model_and_a_fitted_mlp_directly(tmp_path):
    sklearn = pytest.importorskip("sklearn.neural_network")
    X = np.random.default_rng(0).standard_normal((40, 2))
    mlp = sklearn.MLPRegressor(hidden_layer_sizes=(3,), max_iter=20).fit(X, X[:, 0])
    save(mlp, tmp_path / "m.safetensors")
    model = load(tmp_path / "m.safetensors")
    direct = nm.relu.regions(mlp)
    assert nm.relu.regions(model).num_regions == direct.num_regions
    assert nm.relu.equivalent(model, mlp).equivalent
    np.testing.assert_allclose(nm.relu.forward(mlp, X), mlp.predict(X)[:, None], rtol=1e-9)
    conv = load([np.ones(2), np.ones(2)], strides=[1])
    with pytest.raises(nm.ParameterError, match="linear_conv model"):
        nm.relu.regions(conv)


def test_a_live_torch_sequential_is_taken_directly():
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    X = np.random.default_rng(0).standard_normal((10, 2))
    want = net(torch.tensor(X, dtype=torch.float32)).detach().numpy()
    np.testing.assert_allclose(nm.relu.forward(net, X), want, rtol=1e-5, atol=1e-6)


def test_a_sklearn_model_whose_layers_do_not_chain_is_refused():
    sklearn = pytest.importorskip("sklearn.neural_network")
    m = sklearn.MLPRegressor(hidden_layer_sizes=(3, 4), max_iter=5).fit(
        np.random.default_rng(0).standard_normal((20, 2)), np.zeros(20)
    )
    m.coefs_ = [m.coefs_[1], m.coefs_[0], m.coefs_[2]]
    m.intercepts_ = [m.intercepts_[1], m.intercepts_[0], m.intercepts_[2]]
    with pytest.raises(nm.ModelFileError, match="do not chain"):
        load(m)


def test_a_folder_is_named_as_a_folder(tmp_path):
    (tmp_path / "m.npz").mkdir()
    with pytest.raises(nm.ModelFileError, match="a folder, not a model file"):
        load(tmp_path / "m.npz")
    with pytest.raises(nm.ModelFileError, match="a folder of that name exists"):
        save([(np.eye(2), np.zeros(2))], tmp_path / "m.npz")
    (tmp_path / "m.safetensors").mkdir()
    with pytest.raises(nm.ModelFileError, match="a folder of that name exists"):
        save([(np.eye(2), np.zeros(2))], tmp_path / "m.safetensors")


def test_unordered_layers_that_chain_in_no_order_are_called_inconsistent(tmp_path):
    arrays = {"a.weight": np.ones((3, 2)), "b.weight": np.ones((1, 4))}
    with pytest.raises(nm.ModelFileError, match="inconsistent layer shapes: no order"):
        load(_write(tmp_path, arrays, ".safetensors"))


def test_strides_for_a_fully_connected_network_are_refused(tmp_path):
    p = nm.ReLUNet([3, 4, 2]).random_params(seed=1)
    path = tmp_path / "p.npz"
    with pytest.raises(nm.ModelFileError, match="strides are for a linear convolutional"):
        nm.io.save(p, path, strides="abc")
    nm.io.save(p, path)
    for source in (path, p, nm.io.load(p)):  # a file, a list of pairs, a loaded model
        with pytest.raises(nm.ModelFileError, match="strides are for a linear convolutional"):
            nm.io.load(source, strides=[2])
