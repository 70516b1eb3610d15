"""Live ``torch.nn.Module`` networks read from their forward pass (``io/_torch.py``): the
network read computes what the module computes (eval mode), on random, BatchNorm-heavy and
residual modules, custom ``forward`` methods included; every layer, function or method
not read is refused with its name."""

import numpy as np
import pytest

import neuromanifold as nm

torch = pytest.importorskip("torch")
nn = torch.nn


def _randomize_batch_norms(module, seed=0):
    """Running statistics and affine parameters away from their defaults, so that a wrong
    fold (a scale not carried, a mean not subtracted) changes the function."""
    g = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            with torch.no_grad():
                m.running_mean.copy_(torch.rand(m.num_features, generator=g) * 2 - 1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) * 1.5 + 0.5)
                if m.affine:
                    m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                    m.bias.copy_(torch.rand(m.num_features, generator=g) - 0.5)
    return module.eval()


def _outputs(module, model, shape, seed=1):
    x = torch.randn(7, *shape, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        want = module(x).double().numpy()
    X = x.double().numpy()
    got = (
        model.network().forward(X)
        if model.kind == "relu_conv"
        else nm.relu.forward(model.params, X.reshape(len(X), -1))
    )
    return got, want


class _Block(nn.Module):
    """A ResNet basic block with an identity skip, written as torchvision writes it."""

    def __init__(self, c):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return self.relu(out)


class _ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.layer1 = nn.Sequential(_Block(4), _Block(4))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = self.layer1(x)
        x = self.pool(x)
        x = x.view(x.size(0), -1)
        return torch.log_softmax(self.fc(x), dim=1)


@pytest.mark.parametrize("seed", range(3))
def test_a_sequential_cnn_computes_what_the_module_computes(seed):
    torch.manual_seed(seed)
    module = nn.Sequential(
        nn.Conv2d(2, 3, 3, stride=2, padding=1),
        nn.BatchNorm2d(3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(3, 4, 2, dilation=1),
        nn.ReLU(),
        nn.AvgPool2d(1),
        nn.Flatten(),
        nn.Dropout(0.5),
        nn.Linear(4, 3),
    )
    _randomize_batch_norms(module, seed)
    model = nm.io.load(module, input_shape=(2, 9, 9))
    assert model.kind == "relu_conv"
    assert model.notes[0] == "read from its forward pass (torch.fx)"
    assert any("BatchNormalization '1'" in n and "folded" in n for n in model.notes)
    got, want = _outputs(module, model, (2, 9, 9))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_conv1d_module():
    torch.manual_seed(3)
    module = nn.Sequential(
        nn.Conv1d(1, 2, 3),
        nn.BatchNorm1d(2),
        nn.ReLU(),
        nn.MaxPool1d(2),
        nn.Flatten(),
        nn.Linear(2 * 4, 2),
    )
    _randomize_batch_norms(module)
    model = nm.io.load(module, input_shape=(1, 10))
    got, want = _outputs(module, model, (1, 10))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_custom_residual_module_is_read_with_its_skips_and_final_log_softmax():
    torch.manual_seed(0)
    module = _randomize_batch_norms(_ResNet())
    model = nm.io.load(module, input_shape=(3, 8, 8))
    got, want = _outputs(module, model, (3, 8, 8))
    # the final LogSoftmax is left out and said so: logits equal up to a constant per input
    diff = got - want
    assert np.ptp(diff, axis=1).max() < 1e-5
    assert any("LogSoftmax left out" in n for n in model.notes)
    assert sum("folded" in n for n in model.notes) == 4
    net = model.network()
    assert sum(isinstance(layer, nm.relu.layers.Residual) for layer in net.layers) == 2
    # the derived symmetries tie the channels the two skips add
    spec = nm.relu.channel_spec(net)
    assert any(len(group.producers) == 3 for group in spec.groups), spec


def test_a_custom_mlp_module_is_a_fully_connected_network():
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = nn.Linear(5, 7), nn.Linear(7, 4), nn.Linear(4, 2)

        def forward(self, x):
            return self.c(nn.functional.relu(self.b(self.a(x).relu())))

    module = MLP().eval()
    model = nm.io.load(module)  # the first Linear fixes the input's shape
    assert model.kind == "relu" and model.architecture == (5, 7, 4, 2)
    got, want = _outputs(module, model, (5,))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_the_plain_sequential_readers_are_unchanged():
    mlp = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    assert nm.io.load(mlp).notes == ()  # not traced: the Sequential names its layers
    conv = nn.Sequential(nn.Conv1d(1, 1, 3, bias=False), nn.Conv1d(1, 1, 2, bias=False))
    assert nm.io.load(conv).kind == "linear_conv"


class _WithTanh(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.act = nn.Conv2d(1, 2, 3), nn.Tanh()

    def forward(self, x):
        return self.act(self.conv(x))


class _Branching(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 1, 3)

    def forward(self, x):
        return self.conv(x) if x.sum() > 0 else x


class _Sigmoid(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 1, 3)

    def forward(self, x):
        return torch.sigmoid(self.conv(x))


@pytest.mark.parametrize(
    "module, shape, match",
    [
        (_WithTanh(), (1, 5, 5), r"'act' \(Tanh\): not a layer of a convolutional ReLU"),
        (_Sigmoid(), (1, 5, 5), r"\(sigmoid\): a function the forward pass calls"),
        (_Branching(), (1, 5, 5), "cannot be traced by torch.fx"),
        (nn.Sequential(nn.Conv2d(1, 1, 3), nn.ReLU()), None, "pass input_shape"),
        (
            nn.Sequential(nn.Conv2d(1, 1, 3, padding_mode="reflect", padding=1), nn.ReLU()),
            (1, 5, 5),
            "padding other than explicit zeros",
        ),
        (
            nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(2)),
            (1, 6, 6),
            "output_size 2",
        ),
        (
            nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.LayerNorm([2, 3, 3])),
            (1, 5, 5),
            r"\(LayerNorm\)",
        ),
        (nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU()), (1, 2, 5, 5, 5), "input_shape must be"),
        (nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU()), (1, 5.0, 5), "input_shape must be"),
        (nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU()), (1, 2, 2), "kernel|larger|shape"),
    ],
)
def test_what_is_not_read_is_refused_by_name(module, shape, match):
    with pytest.raises(nm.ModelFileError, match=match):
        nm.io.load(module.eval(), input_shape=shape)


def test_batch_norm_and_dropout_in_training_mode_are_refused():
    for layer in (nn.BatchNorm2d(2), nn.Dropout(0.1)):
        module = nn.Sequential(nn.Conv2d(1, 2, 3), layer, nn.ReLU()).train()
        with pytest.raises(nm.ModelFileError, match=r"module.eval\(\)"):
            nm.io.load(module, input_shape=(1, 5, 5))


def test_input_shape_is_for_live_torch_modules_only():
    params = [(np.eye(2), np.zeros(2))]
    with pytest.raises(nm.ModelFileError, match="input_shape is for a live torch.nn.Module"):
        nm.io.load(params, input_shape=(2,))


def test_a_wrong_fold_would_be_caught():
    """The test's own power: a BatchNorm whose scale is dropped changes the outputs by far
    more than the tolerance the tests use."""
    torch.manual_seed(0)
    module = _randomize_batch_norms(
        nn.Sequential(
            nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(18, 1)
        )
    )
    model = nm.io.load(module, input_shape=(1, 5, 5))
    plain = nm.io.load(
        nn.Sequential(module[0], nn.ReLU(), nn.Flatten(), module[4]).eval(), input_shape=(1, 5, 5)
    )
    got, want = _outputs(module, model, (1, 5, 5))
    wrong, _ = _outputs(module, plain, (1, 5, 5))
    assert np.abs(got - want).max() < 1e-5 < np.abs(wrong - want).max()


class _InplaceOnASkip(nn.Module):
    """``nn.ReLU(inplace=True)`` on a tensor a skip reads afterwards (found in review: the
    trace reads it out of place)."""

    def __init__(self):
        super().__init__()
        self.c0, self.relu = nn.Conv1d(2, 2, 1), nn.ReLU(inplace=True)
        self.c1, self.out = nn.Conv1d(2, 2, 1), nn.Linear(8, 2)

    def forward(self, x):
        h = self.c0(x)
        r = self.relu(h)  # h is now relu(h) too
        return self.out(torch.flatten(self.c1(r) + h, 1))


class _AliasedIadd(nn.Module):
    """``h += ...`` while a skip still holds ``h``: fx records it as ``h + ...``."""

    def __init__(self):
        super().__init__()
        self.c0, self.c1 = nn.Conv1d(2, 2, 1), nn.Conv1d(2, 2, 1)
        self.c2, self.out = nn.Conv1d(2, 2, 1), nn.Linear(8, 2)

    def forward(self, x):
        h = self.c0(x)
        skip = h
        h += self.c1(nn.functional.relu(h))
        return self.out(torch.flatten(self.c2(nn.functional.relu(h)) + skip, 1))


@pytest.mark.parametrize("module", [_InplaceOnASkip(), _AliasedIadd()])
def test_an_in_place_operation_the_trace_misreads_is_refused(module):
    torch.manual_seed(0)
    with pytest.raises(nm.ModelFileError, match="does not compute what the module computes"):
        nm.io.load(module.double().eval(), input_shape=(2, 4))


def test_forward_hooks_are_refused():
    for module in (
        nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)),  # the Sequential reader
        nn.Sequential(nn.Conv1d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4, 1)),
    ):
        handle = module[0].register_forward_hook(lambda m, i, o: 2 * o)
        with pytest.raises(nm.ModelFileError, match="forward hooks are registered on"):
            nm.io.load(module.eval(), input_shape=None if len(module) == 3 else (1, 4))
        handle.remove()
        pre = module[0].register_forward_pre_hook(lambda m, i: (3 * i[0],))
        with pytest.raises(nm.ModelFileError, match="forward hooks"):
            nm.io.load(module.eval(), input_shape=None if len(module) == 3 else (1, 4))
        pre.remove()


def test_the_common_flatten_forms_and_a_keyword_call():
    class LeNetStyle(nn.Module):
        def __init__(self, form):
            super().__init__()
            self.form = form
            self.conv, self.fc = nn.Conv2d(1, 2, 3), nn.Linear(18, 2)

        def forward(self, x):
            h = torch.relu(self.conv(x))
            if self.form == "view":
                h = h.view(-1, 18)  # the PyTorch tutorial's form
            elif self.form == "start_dim":
                h = torch.flatten(h, start_dim=1)
            else:
                h = h.reshape(h.size(0), -1)
            return self.fc(h)

    for form in ("view", "start_dim", "reshape"):
        module = LeNetStyle(form).eval()
        model = nm.io.load(module, input_shape=(1, 5, 5))
        got, want = _outputs(module, model, (1, 5, 5))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    class Wrong(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.fc = nn.Conv2d(1, 2, 3), nn.Linear(9, 4)

        def forward(self, x):
            return self.fc(torch.relu(self.conv(x)).view(-1, 9))  # not one row per input

    with pytest.raises(nm.ModelFileError, match="Reshape|flattens"):
        nm.io.load(Wrong().eval(), input_shape=(1, 5, 5))

    class Keyword(nn.Module):
        def __init__(self):
            super().__init__()
            self.c, self.fc = nn.Conv1d(1, 2, 1), nn.Linear(8, 2)

        def forward(self, x):
            return self.fc(torch.flatten(torch.relu(self.c(input=x)), 1))

    with pytest.raises(nm.ModelFileError, match="positionally"):
        nm.io.load(Keyword().eval(), input_shape=(1, 4))
