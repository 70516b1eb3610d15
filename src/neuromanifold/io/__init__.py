"""Model import and export: a trained network in, the library's parameters out.

:func:`load` reads ``.npz``, ``.safetensors``, ONNX graphs and PyTorch ``state_dict``
files, live ``torch.nn.Sequential`` models and fitted scikit-learn MLPs with ReLU, and
infers the architecture; :func:`save` writes ``.npz``, ``.safetensors`` and ``.onnx``.
No file is ever unpickled.
"""

from ._formats import SUFFIXES, load, save
from ._model import Model
from ._vnnlib import read_vnnlib

__all__ = ["load", "save", "Model", "SUFFIXES", "read_vnnlib"]
