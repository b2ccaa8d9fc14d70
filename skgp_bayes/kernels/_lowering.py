"""Recognise the scikit-learn kernel trees that have a compiled fast path.

A recognised kernel is ``variance * k(r) [+ noise * I]`` with ``k`` one of
the stationary radial functions below and ``r`` the distance scaled by an
isotropic or per-dimension (ARD) length scale. The lowering turns such a
tree into a :class:`KernelSpec`, a plain record of integers and arrays that
the compiled code can use without touching Python objects.

The spec works on a "natural parameter vector" ``phi`` laid out as
``[log variance, log length_scale_0, ..., log length_scale_{L-1}, log noise]``
(``L == 1`` when isotropic). Every entry of ``kernel.theta`` lands on exactly
one entry of ``phi``; entries of ``phi`` that ``theta`` does not cover (fixed
hyperparameters, or a missing ConstantKernel / WhiteKernel) keep the values
stored in ``KernelSpec.defaults``.
"""

from collections import namedtuple

import numpy as np
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    Matern,
    Product,
    Sum,
    WhiteKernel,
)

__all__ = [
    "BASE_MATERN12",
    "BASE_MATERN32",
    "BASE_MATERN52",
    "BASE_RBF",
    "KernelSpec",
    "lower_kernel",
    "natural_parameters",
]

BASE_RBF = 0
BASE_MATERN12 = 1
BASE_MATERN32 = 2
BASE_MATERN52 = 3

_MATERN_BASES = {0.5: BASE_MATERN12, 1.5: BASE_MATERN32, 2.5: BASE_MATERN52}

KernelSpec = namedtuple(
    "KernelSpec",
    ["base", "n_length_scales", "has_noise", "defaults", "theta_index"],
)
KernelSpec.__doc__ = """Flat description of a recognised kernel.

Fields
------
base : int
    One of ``BASE_RBF``, ``BASE_MATERN12``, ``BASE_MATERN32``,
    ``BASE_MATERN52``.
n_length_scales : int
    1 for an isotropic length scale, ``d`` for an ARD one.
has_noise : bool
    Whether a WhiteKernel is part of the sum.
defaults : ndarray of shape (n_length_scales + 2,)
    The natural parameter vector ``phi`` (log scale) of the template kernel.
    The noise entry is ``-inf`` when there is no WhiteKernel, and the
    variance entry is 0 when there is no ConstantKernel.
theta_index : ndarray of int of shape (len(kernel.theta),)
    ``phi[theta_index] = theta`` maps a theta vector into ``phi``; the same
    index maps a gradient in ``phi`` back to theta: ``g_phi[theta_index]``.

Examples
--------
>>> from sklearn.gaussian_process.kernels import RBF, WhiteKernel
>>> spec = lower_kernel(RBF(2.0) + WhiteKernel(0.5, noise_level_bounds="fixed"))
>>> spec.n_length_scales, spec.has_noise, spec.theta_index
(1, True, array([1]))
"""


def _exact(obj, cls):
    # Exact type checks: Matern subclasses RBF, and user subclasses may
    # override __call__, so isinstance would accept kernels we cannot lower.
    return type(obj) is cls


def _split_noise(kernel):
    """Return (body, body_prefix, white, white_prefix) for ``body [+ white]``."""
    if _exact(kernel, Sum):
        if _exact(kernel.k2, WhiteKernel) and not _exact(kernel.k1, WhiteKernel):
            return kernel.k1, "k1__", kernel.k2, "k2__"
        if _exact(kernel.k1, WhiteKernel) and not _exact(kernel.k2, WhiteKernel):
            return kernel.k2, "k2__", kernel.k1, "k1__"
        return None
    return kernel, "", None, None


def _split_constant(body):
    """Return (base, base_prefix, constant, constant_prefix) for ``[c *] base``."""
    if _exact(body, Product):
        if _exact(body.k1, ConstantKernel) and not _exact(body.k2, ConstantKernel):
            return body.k2, "k2__", body.k1, "k1__"
        if _exact(body.k2, ConstantKernel) and not _exact(body.k1, ConstantKernel):
            return body.k1, "k1__", body.k2, "k2__"
        return None
    return body, "", None, None


def _base_code(base):
    if _exact(base, RBF):
        return BASE_RBF
    if _exact(base, Matern):
        try:
            return _MATERN_BASES.get(float(base.nu))
        except (TypeError, ValueError):
            return None
    return None


def lower_kernel(kernel):
    """Lower a scikit-learn kernel to a :class:`KernelSpec`, or return None.

    Recognised forms are ``base``, ``c * base`` and ``base * c``, each
    optionally plus a ``WhiteKernel`` on either side of the sum, where
    ``base`` is ``RBF`` or ``Matern`` with ``nu`` in {0.5, 1.5, 2.5}, with a
    scalar (isotropic) or array (ARD) length scale, and ``c`` is a
    ``ConstantKernel``. Any hyperparameter may be fixed; its value is then
    taken from the kernel's parameters. Everything else returns None, and
    callers fall back to the kernel's own ``__call__``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        The kernel to lower. It is not modified.

    Returns
    -------
    spec : KernelSpec or None
        The flat description, or None when the kernel has no fast path.

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import (
    ...     RBF, ConstantKernel, DotProduct, WhiteKernel)
    >>> spec = lower_kernel(ConstantKernel(2.0) * RBF([1.0, 3.0]) + WhiteKernel())
    >>> spec.base == BASE_RBF, spec.n_length_scales, spec.has_noise
    (True, 2, True)
    >>> spec.theta_index
    array([0, 1, 2, 3])
    >>> lower_kernel(DotProduct()) is None
    True
    """
    parts = _split_noise(kernel)
    if parts is None:
        return None
    body, body_prefix, white, white_prefix = parts
    parts = _split_constant(body)
    if parts is None:
        return None
    base, base_prefix, constant, constant_prefix = parts
    code = _base_code(base)
    if code is None:
        return None

    length_scale = np.atleast_1d(np.asarray(base.length_scale, dtype=np.float64))
    if length_scale.ndim != 1 or length_scale.size == 0:
        return None
    n_ls = length_scale.size
    defaults = np.empty(n_ls + 2)
    defaults[0] = 0.0 if constant is None else np.log(float(constant.constant_value))
    defaults[1 : n_ls + 1] = np.log(length_scale)
    defaults[-1] = -np.inf if white is None else np.log(float(white.noise_level))

    # Map each free hyperparameter, in theta order, to its slot(s) in phi.
    slots = {body_prefix + base_prefix + "length_scale": np.arange(1, n_ls + 1)}
    if constant is not None:
        slots[body_prefix + constant_prefix + "constant_value"] = np.array([0])
    if white is not None:
        slots[white_prefix + "noise_level"] = np.array([n_ls + 1])
    theta_index = []
    for hp in kernel.hyperparameters:
        if hp.fixed:
            continue
        index = slots.get(hp.name)
        if index is None or index.size != hp.n_elements:
            return None
        theta_index.extend(index.tolist())
    theta_index = np.asarray(theta_index, dtype=np.intp)
    if theta_index.size != kernel.theta.size:
        return None
    return KernelSpec(code, n_ls, white is not None, defaults, theta_index)


def natural_parameters(spec, theta):
    """Variance, length scales and noise level of ``spec`` at ``theta``.

    Parameters
    ----------
    spec : KernelSpec
        A spec from :func:`lower_kernel`.
    theta : array-like of shape (len(spec.theta_index),)
        Log-scale hyperparameters in ``kernel.theta`` layout.

    Returns
    -------
    variance : float
    length_scales : ndarray of shape (spec.n_length_scales,)
    noise : float
        0.0 when the kernel has no WhiteKernel.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> spec = lower_kernel(ConstantKernel(1.0) * RBF(1.0))
    >>> natural_parameters(spec, np.log([4.0, 0.5]))
    (4.0, array([0.5]), 0.0)
    """
    phi = spec.defaults.copy()
    phi[spec.theta_index] = np.asarray(theta, dtype=np.float64)
    noise = float(np.exp(phi[-1])) if spec.has_noise else 0.0
    return float(np.exp(phi[0])), np.exp(phi[1:-1]), noise
