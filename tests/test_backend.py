import sys
import types

import numpy as np
import pytest

from skgp_bayes._backend import get_array_module, to_numpy
from skgp_bayes.exceptions import BackendUnavailableError


def test_numpy_backend():
    assert get_array_module("numpy") is np
    assert get_array_module() is np


def test_unknown_backend():
    with pytest.raises(ValueError, match="backend must be one of"):
        get_array_module("torch")


def test_missing_cupy_gives_install_hint(monkeypatch):
    # A None entry in sys.modules makes `import cupy` raise ImportError.
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(BackendUnavailableError, match="pip install cupy") as info:
        get_array_module("cupy")
    assert isinstance(info.value, ImportError)
    assert "cannot be imported" in str(info.value)


def _fake_cupy(device_count):
    cupy = types.ModuleType("cupy")

    def count():
        if isinstance(device_count, Exception):
            raise device_count
        return device_count

    cupy.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=count)
    )
    return cupy


@pytest.mark.parametrize(
    "device_count, reason",
    [(0, "no CUDA device"), (RuntimeError("libcublas.so.12 not found"), "libcublas")],
)
def test_broken_cupy_or_no_device(monkeypatch, device_count, reason):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(device_count))
    with pytest.raises(BackendUnavailableError, match=reason):
        get_array_module("cupy")


def test_to_numpy_accepts_device_like_arrays():
    class DeviceArray:
        def get(self):
            return np.arange(3.0)

    np.testing.assert_array_equal(to_numpy(DeviceArray()), np.arange(3.0))
    x = np.ones(2)
    assert to_numpy(x) is x
