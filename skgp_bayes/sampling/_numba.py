"""Compiled evaluation of pathwise function samples.

One call handles one group of samples that share a hyperparameter draw and a
set of Fourier features. Every output row is computed by one thread in a
fixed order, so a row's value does not depend on which other rows were asked
for, on how they were split into blocks, or on the number of threads: a
function sample evaluated on overlapping query sets agrees bit for bit.

``_cos`` is a branch-free cosine (reduction by pi, then an even polynomial on
[-pi/2, pi/2]) that the compiler can vectorise; the library cosine cannot be,
and it dominates the cost of random Fourier features otherwise. Its absolute
error is a few ulp of the phase, which is below the rounding of the phase
itself (tests/predictive/test_pathwise.py compares it with ``numpy.cos``).

Reductions use ``reassoc`` so they vectorise; the summation order is still
fixed at compile time, which keeps results reproducible.
"""

import math

import numpy as np
from numba import njit, prange

from ..kernels._numba import kernel_value_and_slope

__all__ = ["cos_poly", "evaluate_group", "exp_nonpositive", "gradient_group"]

_FAST = {"reassoc", "contract"}
_ROWS = 64
_INV_PI = 1.0 / math.pi
# pi split in two (the float32 value and the rest) so that k * _PI_HI is
# exact for |k| < 2**29.
_PI_HI = 3.1415927410125732
_PI_LO = -8.742278000372485e-08
# Taylor coefficients of cos on [-pi/2, pi/2]: the first omitted term,
# (pi/2)^22 / 22!, is below 1e-17.
_C = (
    1.0,
    -1.0 / 2.0,
    1.0 / 24.0,
    -1.0 / 720.0,
    1.0 / 40320.0,
    -1.0 / 3628800.0,
    1.0 / 479001600.0,
    -1.0 / 87178291200.0,
    1.0 / 20922789888000.0,
    -1.0 / 6402373705728000.0,
    1.0 / 2432902008176640000.0,
)

_E = tuple(1.0 / math.factorial(k) for k in range(13))
_LOG2E = 1.0 / math.log(2.0)
# log 2 split so that n * _LN2_HI is exact for the n that occur (|n| < 1100).
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_RBF = 0
_MATERN12 = 1
_MATERN32 = 2
_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)


@njit(cache=True, inline="always", fastmath=_FAST)
def _cos(x):
    k = math.floor(x * _INV_PI + 0.5)
    r = (x - k * _PI_HI) - k * _PI_LO
    r2 = r * r
    p = _C[10]
    p = p * r2 + _C[9]
    p = p * r2 + _C[8]
    p = p * r2 + _C[7]
    p = p * r2 + _C[6]
    p = p * r2 + _C[5]
    p = p * r2 + _C[4]
    p = p * r2 + _C[3]
    p = p * r2 + _C[2]
    p = p * r2 + _C[1]
    p = p * r2 + _C[0]
    # (-1)^k without a branch
    half = 0.5 * k
    sign = 1.0 - 4.0 * (half - math.floor(half))
    return sign * p


@njit(cache=True, inline="always", fastmath=_FAST)
def _exp_nonpositive(buf, bits):
    """``buf[:] = exp(buf)`` for ``buf <= 0``, in loops the compiler vectorises.

    ``exp(x) = 2^n exp(r)``, ``r = x - n log 2`` in ``[-log2 / 2, log2 / 2]``
    by a Taylor polynomial (first omitted term below 2e-16 relative); ``2^n``
    is built from its exponent bits in ``bits``, an int64 view of a scratch
    buffer. Arguments below -708 give 2^-1022 ~ 2e-308 instead of a smaller
    number or 0, far below any kernel value that matters.
    """
    scale = bits.view(np.float64)
    for a in range(buf.shape[0]):
        x = max(buf[a], -708.0)
        n = math.floor(x * _LOG2E + 0.5)
        r = (x - n * _LN2_HI) - n * _LN2_LO
        p = _E[12]
        p = p * r + _E[11]
        p = p * r + _E[10]
        p = p * r + _E[9]
        p = p * r + _E[8]
        p = p * r + _E[7]
        p = p * r + _E[6]
        p = p * r + _E[5]
        p = p * r + _E[4]
        p = p * r + _E[3]
        p = p * r + _E[2]
        p = p * r + _E[1]
        p = p * r + _E[0]
        buf[a] = p
        bits[a] = (np.int64(n) + 1023) << 52
    for a in range(buf.shape[0]):
        buf[a] *= scale[a]


@njit(cache=True, inline="always", fastmath=_FAST)
def _radial_row(xs, Zs, variance, base, kv, bits):
    """``kv[a] = variance * k(|xs - Zs[a]|)`` for one scaled query point."""
    m, d = Zs.shape
    for a in range(m):
        r2 = 0.0
        for c in range(d):
            t = xs[c] - Zs[a, c]
            r2 += t * t
        kv[a] = r2
    if base == _RBF:
        for a in range(m):
            kv[a] = -0.5 * kv[a]
        _exp_nonpositive(kv, bits)
    elif base == _MATERN12:
        for a in range(m):
            kv[a] = -math.sqrt(kv[a])
        _exp_nonpositive(kv, bits)
    elif base == _MATERN32:
        poly = np.empty(m)
        for a in range(m):
            t = _SQRT3 * math.sqrt(kv[a])
            poly[a] = 1.0 + t
            kv[a] = -t
        _exp_nonpositive(kv, bits)
        for a in range(m):
            kv[a] *= poly[a]
    else:
        poly = np.empty(m)
        for a in range(m):
            r2 = kv[a]
            t = _SQRT5 * math.sqrt(r2)
            poly[a] = 1.0 + t + (5.0 / 3.0) * r2
            kv[a] = -t
        _exp_nonpositive(kv, bits)
        for a in range(m):
            kv[a] *= poly[a]
    for a in range(m):
        kv[a] *= variance


@njit(cache=True, nogil=True)
def exp_nonpositive(x):
    """``exp`` of a 1-D array of non-positive numbers, compiled as above."""
    out = x.copy()
    bits = np.empty(x.shape[0], dtype=np.int64)
    _exp_nonpositive(out, bits)
    return out


@njit(parallel=True, cache=True, fastmath=_FAST, nogil=True)
def cos_poly(x):
    """Elementwise ``cos`` of a 1-D array with the compiled cosine."""
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = _cos(x[i])
    return out


@njit(cache=True, inline="always", fastmath=_FAST)
def _phases(X, i, omega_t, phases, feat):
    F = phases.shape[0]
    for f in range(F):
        feat[f] = phases[f]
    for c in range(X.shape[1]):
        x = X[i, c]
        for f in range(F):
            feat[f] += omega_t[c, f] * x


@njit(parallel=True, cache=True, fastmath=_FAST, nogil=True)
def evaluate_group(X, omega_t, phases, Wt, inv_ell, Zs, variance, base, Vt, out, cols):
    """Write ``f_s(X[i]) = sum_f Wt[s, f] cos(phase_f) + sum_a k(X[i], Z_a) Vt[s, a]``
    into ``out[i, cols[s]]``.

    ``omega_t`` is ``(d, F)``, ``Zs`` the canonical points divided by the
    length scales, ``Wt`` already includes the feature amplitude.
    """
    n, d = X.shape
    F = phases.shape[0]
    m = Zs.shape[0]
    S = Wt.shape[0]
    n_blocks = (n + _ROWS - 1) // _ROWS
    for blk in prange(n_blocks):
        feat = np.empty(F)
        kv = np.empty(m)
        bits = np.empty(m, dtype=np.int64)
        xs = np.empty(d)
        for i in range(blk * _ROWS, min(n, (blk + 1) * _ROWS)):
            _phases(X, i, omega_t, phases, feat)
            for f in range(F):
                feat[f] = _cos(feat[f])
            for c in range(d):
                xs[c] = X[i, c] * inv_ell[c]
            _radial_row(xs, Zs, variance, base, kv, bits)
            for s in range(S):
                acc = 0.0
                for f in range(F):
                    acc += feat[f] * Wt[s, f]
                for a in range(m):
                    acc += kv[a] * Vt[s, a]
                out[i, cols[s]] = acc


@njit(parallel=True, cache=True, fastmath=_FAST, nogil=True)
def gradient_group(X, omega_t, phases, Wt, inv_ell, Zs, variance, base, Vt, out, cols):
    """Write the input gradient of :func:`evaluate_group`'s functions into
    ``out[i, cols[s], :]``.

    ``d/dx cos(w'x + b) = -sin(w'x + b) w`` and, with ``g(r) = -k'(r) / r``,
    ``d/dx k(x, z) = -variance g(r) (x - z) / ell^2``. Matern 1/2 is not
    differentiable at ``x = z``; those pairs contribute 0.
    """
    n, d = X.shape
    F = phases.shape[0]
    m = Zs.shape[0]
    S = Wt.shape[0]
    n_blocks = (n + _ROWS - 1) // _ROWS
    for blk in prange(n_blocks):
        feat = np.empty(F)
        slope = np.empty(m)
        xs = np.empty(d)
        for i in range(blk * _ROWS, min(n, (blk + 1) * _ROWS)):
            _phases(X, i, omega_t, phases, feat)
            for f in range(F):
                feat[f] = -math.sin(feat[f])
            for c in range(d):
                xs[c] = X[i, c] * inv_ell[c]
            for a in range(m):
                r2 = 0.0
                for c in range(d):
                    t = xs[c] - Zs[a, c]
                    r2 += t * t
                slope[a] = -variance * kernel_value_and_slope(base, r2)[1]
            for s in range(S):
                for c in range(d):
                    acc = 0.0
                    for f in range(F):
                        acc += feat[f] * Wt[s, f] * omega_t[c, f]
                    canon = 0.0
                    for a in range(m):
                        canon += slope[a] * (xs[c] - Zs[a, c]) * Vt[s, a]
                    out[i, cols[s], c] = acc + canon * inv_ell[c]
