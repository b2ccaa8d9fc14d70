"""Array-module selection: NumPy by default, CuPy when asked for and usable.

Solver code is written against an array module ``xp`` (``numpy`` or
``cupy``), so the NumPy path that CI runs is the same code the GPU runs.
CuPy is imported only inside :func:`get_array_module`, never at import time,
and a device probe runs a tiny computation: an installed CuPy whose CUDA
libraries fail to load, or a machine without a GPU, is reported with the
reason instead of failing later in the middle of a fit.
"""

import contextlib

import numpy as np

from .exceptions import BackendUnavailableError

__all__ = [
    "BACKENDS",
    "get_array_module",
    "linalg_errors_raised",
    "solve_triangular_in",
    "to_numpy",
]

BACKENDS = ("numpy", "cupy")

_INSTALL_HINT = (
    "Install CuPy for your CUDA version (for example `pip install cupy-cuda12x`, "
    'or `pip install "skgp_bayes[gpu]"`) on a machine with an NVIDIA GPU, or '
    'use backend="numpy".'
)


def _load_cupy():
    """Import CuPy and run a probe on the current device; raise with the reason."""
    try:
        import cupy
    except Exception as err:  # ImportError, or a broken CUDA library on import
        raise BackendUnavailableError(
            f'backend="cupy" was requested but CuPy cannot be imported '
            f"({type(err).__name__}: {err}). {_INSTALL_HINT}"
        ) from err
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device found")
        probe = cupy.arange(4, dtype=cupy.float64)
        # A matrix product exercises cuBLAS, the library most often missing.
        value = float((probe[None, :] @ probe[:, None]).get()[0, 0])
        if value != 14.0:
            raise RuntimeError(f"device probe returned {value}, expected 14.0")
    except Exception as err:
        raise BackendUnavailableError(
            f'backend="cupy" was requested but the GPU is not usable '
            f"({type(err).__name__}: {err}). {_INSTALL_HINT}"
        ) from err
    return cupy


def get_array_module(backend="numpy"):
    """The array module for a backend name.

    Parameters
    ----------
    backend : {"numpy", "cupy"}, default="numpy"
        ``"numpy"`` always works. ``"cupy"`` imports CuPy and checks that a
        CUDA device answers a small matrix product.

    Returns
    -------
    xp : module
        ``numpy`` or ``cupy``.

    Raises
    ------
    BackendUnavailableError
        When ``"cupy"`` is asked for and CuPy is missing or broken, or no GPU
        is usable; the message gives the reason and the install command.
    ValueError
        For an unknown backend name.

    Examples
    --------
    >>> from skgp_bayes._backend import get_array_module
    >>> get_array_module("numpy").__name__
    'numpy'
    """
    if backend == "numpy":
        return np
    if backend == "cupy":
        return _load_cupy()
    raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}.")


def to_numpy(array):
    """A NumPy copy (or view) of a NumPy or CuPy array.

    Fitted estimators keep only NumPy arrays, so that they pickle and predict
    on machines without a GPU.

    Parameters
    ----------
    array : ndarray or cupy.ndarray

    Returns
    -------
    ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._backend import to_numpy
    >>> to_numpy(np.arange(3))
    array([0, 1, 2])
    """
    get = getattr(array, "get", None)
    if callable(get) and not isinstance(array, np.ndarray):
        return np.asarray(get())
    return np.asarray(array)


def solve_triangular_in(xp):
    """``solve_triangular(a, b, lower=...)`` for arrays of the module ``xp``.

    SciPy's for NumPy, ``cupyx.scipy.linalg``'s for CuPy; any other module
    (a test's stand-in for a device) brings its own as ``xp.solve_triangular``.

    Parameters
    ----------
    xp : module

    Returns
    -------
    callable

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._backend import solve_triangular_in
    >>> solve = solve_triangular_in(np)
    >>> solve(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 2.0]), lower=True)
    array([1., 1.])
    """
    if xp is np:
        from scipy.linalg import solve_triangular
    elif xp.__name__ == "cupy":
        from cupyx.scipy.linalg import solve_triangular
    else:
        solve_triangular = xp.solve_triangular
    return solve_triangular


def linalg_errors_raised(xp):
    """A context in which ``xp.linalg.cholesky`` raises on a failed factor.

    NumPy always raises ``LinAlgError``; CuPy by default returns a factor
    with unspecified entries and raises only under
    ``cupyx.errstate(linalg="raise")``, which reads cuSOLVER's status back
    (one synchronisation).

    Parameters
    ----------
    xp : module

    Returns
    -------
    context manager

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._backend import linalg_errors_raised
    >>> with linalg_errors_raised(np):
    ...     np.linalg.cholesky(np.eye(2)).shape
    (2, 2)
    """
    if getattr(xp, "__name__", "") == "cupy":
        import cupyx

        return cupyx.errstate(linalg="raise")
    return contextlib.nullcontext()
