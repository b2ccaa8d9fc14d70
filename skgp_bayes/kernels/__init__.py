"""Kernel layer: one adapter over scikit-learn kernels, with Numba fast paths.

:class:`KernelAdapter` evaluates any ``sklearn.gaussian_process.kernels``
kernel, its Gram and cross matrices, its hyperparameter gradients contracted
against a weight matrix, and ``K @ V`` without storing ``K``. RBF and Matern
(1/2, 3/2, 5/2) kernels, isotropic or ARD, optionally times a
``ConstantKernel`` and plus a ``WhiteKernel``, run through compiled code;
everything else goes through the kernel's own ``__call__``.
"""

from ._adapter import KernelAdapter, force_generic
from ._lowering import KernelSpec, lower_kernel, natural_parameters
from .spectral import (
    has_spectral_density,
    random_fourier_features,
    sample_spectral_frequencies,
)

__all__ = [
    "KernelAdapter",
    "KernelSpec",
    "force_generic",
    "has_spectral_density",
    "lower_kernel",
    "natural_parameters",
    "random_fourier_features",
    "sample_spectral_frequencies",
]
