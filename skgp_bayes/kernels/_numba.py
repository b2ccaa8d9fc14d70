"""Compiled kernels for the stationary fast path (no fastmath).

Every function takes inputs already divided by the length scales (``Xs =
X / ell``), so the squared scaled distance is a plain squared Euclidean
distance and the per-dimension gradient factor ``((x_d - y_d) / ell_d)^2`` is
``(xs_d - ys_d)^2``. The radial part is written ``variance * k(r)`` and the
length-scale derivatives use ``f(r) = -k'(r) / r``:

* RBF: ``k = exp(-r^2 / 2)``, ``f = k``;
* Matern 1/2: ``k = exp(-r)``, ``f = exp(-r) / r`` (0 at ``r = 0``, as
  scikit-learn does);
* Matern 3/2: ``k = (1 + sqrt3 r) exp(-sqrt3 r)``, ``f = 3 exp(-sqrt3 r)``;
* Matern 5/2: ``k = (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r)``,
  ``f = 5/3 (1 + sqrt5 r) exp(-sqrt5 r)``.

Then ``dK/dlog ell_d = variance * f(r) * (xs_d - ys_d)^2`` and
``dK/dy_d = variance * f(r) * (xs_d - ys_d) / ell_d``.

Gradient contractions accumulate into one row of a per-row buffer per outer
iteration and add the rows up serially at the end, so the result does not
depend on how many threads ran the loop.

Every compiled function of the package releases the interpreter lock
(``nogil=True``; they touch no Python object): the Stein estimators run
their particles on threads (``n_jobs``), and with the lock held those
threads took turns. On a sparse Stein fit (4,000 rows, 300 inducing points,
10 particles) two threads ran 0.99x as fast as one with the lock held and
1.85x with it released.

The natural parameter layout of the gradients is
``[log variance, log ell_0, ..., log ell_{L-1}, log noise]``.
"""

import math

import numpy as np
from numba import njit, prange

from .._vector_exp import vector_exp

# Must match the BASE_* codes in _lowering.
_RBF = 0
_MATERN12 = 1
_MATERN32 = 2

_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)

# From this many input columns the RBF's cross kernel and its gradient
# contraction take their squared distances from one product, |x|^2 + |z|^2
# - 2 X Z' (BLAS), instead of a pass over the entries per column. One core,
# 300 x 80 entries, best of three runs of benchmarks/bench_kernel_products.py
# (K, then the contraction): 129 against 224 and 160 against 316 us at
# d = 4, 202 against 714 and 254 against 863 at d = 30; 1016 against 2307
# and 1299 against 2820 at 1000 x 200, d = 8. The sparse targets' K(Z, X)
# uses the same threshold (measured there: 21 against 27 us at m = 18,
# n = 300, d = 30; equal at d = 3, slower at d = 1). The symmetric K(Z, Z)
# keeps its loops, which compute half the entries: by products it was no
# quicker at m = 80 (d = 4 and 8) and at most 1.6x at d = 30.
GEMM_MIN_COLUMNS = 4

# Row block and column tile of the K @ V product: a tile of V (TILE x k)
# stays in cache while ROWS rows of K are generated against it.
_MATVEC_ROWS = 32
_MATVEC_TILE = 512


@njit(cache=True, inline="always")
def _sqdist(A, i, B, j):
    s = 0.0
    for c in range(A.shape[1]):
        t = A[i, c] - B[j, c]
        s += t * t
    return s


@njit(cache=True, inline="always")
def _exponent(base, r2):
    """The argument of the radial function's exponential."""
    if base == _RBF:
        return -0.5 * r2
    r = math.sqrt(r2)
    if base == _MATERN12:
        return -r
    return -(_SQRT3 if base == _MATERN32 else _SQRT5) * r


@njit(cache=True, inline="always")
def _prefactor(base, r2):
    """The polynomial that multiplies the exponential (1 for RBF, Matern 1/2)."""
    if base == _RBF or base == _MATERN12:
        return 1.0
    r = math.sqrt(r2)
    if base == _MATERN32:
        return 1.0 + _SQRT3 * r
    return 1.0 + _SQRT5 * r + (5.0 / 3.0) * r2


@njit(cache=True, inline="always")
def kernel_value(base, r2):
    """k(r) from the squared scaled distance, with the C library's exp.

    The faster of the two where the loop around it stays scalar (here the
    inner loop sums the distance over the input columns).
    """
    return _prefactor(base, r2) * math.exp(_exponent(base, r2))


@njit(cache=True, inline="always")
def kernel_value_vector(base, r2):
    """:func:`kernel_value` for a loop over entries that LLVM vectorises.

    :func:`~skgp_bayes._vector_exp.vector_exp` is arithmetic only, so a
    loop whose body is this call runs on vector registers (4.2 times the
    C library's exp on AVX2); in a scalar loop it is slower than that exp.
    """
    return _prefactor(base, r2) * vector_exp(_exponent(base, r2))


@njit(cache=True, inline="always")
def kernel_value_and_slope(base, r2):
    """(k(r), f(r)) with f = -k'(r) / r."""
    if base == _RBF:
        k = math.exp(-0.5 * r2)
        return k, k
    r = math.sqrt(r2)
    if base == _MATERN12:
        k = math.exp(-r)
        f = k / r if r > 0.0 else 0.0
        return k, f
    if base == _MATERN32:
        t = _SQRT3 * r
        e = math.exp(-t)
        return (1.0 + t) * e, 3.0 * e
    t = _SQRT5 * r
    e = math.exp(-t)
    return (1.0 + t + (5.0 / 3.0) * r2) * e, (5.0 / 3.0) * (1.0 + t) * e


@njit(cache=True, nogil=True)
def _gram_lower_row(Xs, i, variance, base, K):
    for j in range(i):
        K[i, j] = variance * kernel_value(base, _sqdist(Xs, i, Xs, j))


@njit(parallel=True, cache=True, nogil=True)
def gram(Xs, variance, noise, base):
    """Dense ``K(X, X)`` with ``noise`` added on the diagonal."""
    n = Xs.shape[0]
    K = np.empty((n, n))
    # Pair row i with row n-1-i so every iteration does about n pair
    # evaluations: static scheduling then balances the triangular loop.
    for p in prange((n + 1) // 2):
        i = n - n + p  # signed index, like n - 1 - i: one specialisation
        _gram_lower_row(Xs, i, variance, base, K)
        q = n - 1 - i
        if q != i:
            _gram_lower_row(Xs, q, variance, base, K)
    for p in prange(n):
        i = n - n + p
        K[i, i] = variance + noise
        for j in range(i + 1, n):
            K[i, j] = K[j, i]
    return K


@njit(cache=True, nogil=True)
def _centred_pair(Xs, Ys):
    """``Xs`` and ``Ys`` less the mean row of ``Xs``, and their squared norms.

    Distances do not change; the expanded ``|x|^2 + |y|^2 - 2 x.y`` then
    cancels about ``eps`` times the squared spread of the inputs rather
    than of their offset from the origin (years, or prices, in their own
    units with ``normalize_X=False``).
    """
    n, d = Xs.shape
    m = Ys.shape[0]
    mean = np.zeros(d)
    for i in range(n):
        for c in range(d):
            mean[c] += Xs[i, c]
    mean /= max(n, 1)
    Xc = np.empty((n, d))
    Yc = np.empty((m, d))
    x_sq = np.zeros(n)
    y_sq = np.zeros(m)
    for i in range(n):
        for c in range(d):
            t = Xs[i, c] - mean[c]
            Xc[i, c] = t
            x_sq[i] += t * t
    for j in range(m):
        for c in range(d):
            t = Ys[j, c] - mean[c]
            Yc[j, c] = t
            y_sq[j] += t * t
    return Xc, Yc, x_sq, y_sq


@njit(cache=True, nogil=True)
def _rbf_by_product(Xc, Yc, x_sq, y_sq, variance):
    """RBF values ``variance exp(-r^2 / 2)`` of centred inputs, ``r^2`` from one GEMM.

    Clipped at zero: cancellation can leave a coincident pair's ``r^2``
    slightly negative.
    """
    K = Xc @ np.ascontiguousarray(Yc.T)
    n, m = K.shape
    for i in range(n):
        row = K[i]
        xi = x_sq[i]
        for j in range(m):
            r2 = xi + y_sq[j] - 2.0 * row[j]
            r2 = r2 if r2 > 0.0 else 0.0
            row[j] = variance * vector_exp(-0.5 * r2)
    return K


@njit(cache=True, nogil=True)
def cross(Xs, Ys, variance, base):
    """Dense ``K(X, Y)`` (no noise term).

    The RBF from :data:`GEMM_MIN_COLUMNS` columns takes its distances from
    one product (:func:`_rbf_by_product`); other kernels and narrower
    inputs go entry by entry (:func:`_cross_by_entries`, a separate
    function: with the product's branch in the same parallel function its
    loop ran 1.7 times slower at d = 2).
    """
    if base == _RBF and Xs.shape[1] >= GEMM_MIN_COLUMNS:
        return _rbf_by_product(*_centred_pair(Xs, Ys), variance)
    return _cross_by_entries(Xs, Ys, variance, base)


@njit(parallel=True, cache=True, nogil=True)
def _cross_by_entries(Xs, Ys, variance, base):
    n = Xs.shape[0]
    m = Ys.shape[0]
    K = np.empty((n, m))
    for i in prange(n):
        for j in range(m):
            K[i, j] = variance * kernel_value(base, _sqdist(Xs, i, Ys, j))
    return K


@njit(cache=True, nogil=True)
def _grad_row(A, i, B, j_end, w_row, scale, base, ard, acc, sq):
    """Add ``sum_{j < j_end} scale * w_row[j] * dK(a_i, b_j)/dphi`` to acc.

    Without the variance factor and the noise entry. ``sq`` is scratch of
    size d for the squared coordinate differences, so each is formed once.
    """
    d = A.shape[1]
    total_k = 0.0
    for j in range(j_end):
        r2 = 0.0
        for c in range(d):
            t = A[i, c] - B[j, c]
            t = t * t
            sq[c] = t
            r2 += t
        k, f = kernel_value_and_slope(base, r2)
        w = scale * w_row[j]
        total_k += w * k
        wf = w * f
        if ard:
            for c in range(d):
                acc[1 + c] += wf * sq[c]
        else:
            acc[1] += wf * r2
    acc[0] += total_k


@njit(cache=True, nogil=True)
def _finish(rows, variance, noise_term):
    """Add up the per-row accumulators in row order and apply the factors."""
    n_phi = rows.shape[1]
    g = np.zeros(n_phi)
    for i in range(rows.shape[0]):
        for c in range(n_phi - 1):
            g[c] += rows[i, c]
    for c in range(n_phi - 1):
        g[c] *= variance
    g[n_phi - 1] = noise_term
    return g


@njit(parallel=True, cache=True, nogil=True)
def grad_contract(Xs, W, variance, noise, base, ard):
    """``g_j = sum_ab W_ab dK(X, X)_ab / dphi_j`` for symmetric ``W``.

    Only the lower triangle of ``W`` is read: the strict lower triangle
    counts twice (scaling by 2 is exact) and the diagonal, where r = 0 and
    k = 1, only feeds the variance and noise entries.
    """
    n, d = Xs.shape
    rows = np.zeros((n, (d if ard else 1) + 2))
    for p in prange((n + 1) // 2):
        i = n - n + p
        sq = np.empty(d)
        _grad_row(Xs, i, Xs, i, W[i], 2.0, base, ard, rows[i], sq)
        q = n - 1 - i
        if q != i:
            _grad_row(Xs, q, Xs, q, W[q], 2.0, base, ard, rows[q], sq)
    trace = 0.0
    for i in range(n):
        trace += W[i, i]
        rows[i, 0] += W[i, i]
    return _finish(rows, variance, noise * trace)


@njit(cache=True, nogil=True)
def cross_grad_contract(Xs, Zs, W, variance, base, ard):
    """``g_j = sum_ab W_ab dK(X, Z)_ab / dphi_j``; the noise entry is 0.

    The RBF from :data:`GEMM_MIN_COLUMNS` columns goes by products
    (:func:`_rbf_contraction_by_product`), the rest entry by entry
    (:func:`_cross_grad_by_entries`; see :func:`cross`).
    """
    if base == _RBF and Xs.shape[1] >= GEMM_MIN_COLUMNS:
        Xc, Zc, x_sq, z_sq = _centred_pair(Xs, Zs)
        M = _rbf_by_product(Xc, Zc, x_sq, z_sq, 1.0)
        for i in range(M.shape[0]):
            for j in range(M.shape[1]):
                M[i, j] *= W[i, j]
        return _rbf_contraction_by_product(Xc, Zc, M, variance, ard)
    return _cross_grad_by_entries(Xs, Zs, W, variance, base, ard)


@njit(parallel=True, cache=True, nogil=True)
def _cross_grad_by_entries(Xs, Zs, W, variance, base, ard):
    n, d = Xs.shape
    m = Zs.shape[0]
    rows = np.zeros((n, (d if ard else 1) + 2))
    for p in prange(n):
        i = n - n + p
        sq = np.empty(d)
        _grad_row(Xs, i, Zs, m, W[i], 1.0, base, ard, rows[i], sq)
    return _finish(rows, variance, 0.0)


@njit(cache=True, nogil=True)
def squared_difference_contraction(A, B, row_sums, col_sums, MB):
    """``sum_ab M_ab (a_ac - b_bc)^2`` per column ``c``, by the expansion.

    ``sum_a a_ac^2 row_sums_a + sum_b b_bc^2 col_sums_b - 2 sum_a a_ac
    (M B)_ac``, given ``M``'s row and column sums and the product ``MB``:
    one ``(n_a, n_b) x (n_b, d)`` product for every column instead of a
    pass over ``n_a n_b d`` squared differences. The terms cancel to a few
    ulps of their size, so the inputs should be centred or standardised.
    Rows outer, columns inner: contiguous reads, one accumulator per column.
    """
    d = A.shape[1]
    per_column = np.zeros(d)
    for i in range(A.shape[0]):
        for c in range(d):
            per_column[c] += A[i, c] * (A[i, c] * row_sums[i] - 2.0 * MB[i, c])
    for j in range(B.shape[0]):
        col_sum = col_sums[j]
        for c in range(d):
            per_column[c] += B[j, c] * B[j, c] * col_sum
    return per_column


@njit(cache=True, nogil=True)
def _rbf_contraction_by_product(Xc, Zc, M, variance, ard):
    """The RBF's gradient contraction from ``M = W o K`` by products.

    ``K`` without the variance, inputs centred as in :func:`_centred_pair`.
    With ``r = M 1`` and ``s = M' 1`` the length-scale entry of column
    ``c`` is

    ``sum_ab M_ab (x_ac - z_bc)^2 = sum_a x_ac^2 r_a + sum_b z_bc^2 s_b
    - 2 sum_a x_ac (M Z)_ac``,

    all columns from one product ``M Z``
    (:func:`squared_difference_contraction`). The terms cancel to about
    ``eps`` times the centred inputs' squared norms, relative to
    ``sum |M|``. The layout is that of :func:`_finish`, the noise entry 0.
    """
    n, d = Xc.shape
    r = M @ np.ones(Zc.shape[0])
    per_column = squared_difference_contraction(Xc, Zc, r, np.ones(n) @ M, M @ Zc)
    g = np.zeros((d if ard else 1) + 2)
    g[0] = variance * r.sum()
    if ard:
        for c in range(d):
            g[1 + c] = variance * per_column[c]
    else:
        g[1] = variance * per_column.sum()
    return g


@njit(parallel=True, cache=True, nogil=True)
def matvec(Xs, V, variance, noise, base):
    """``K(X, X) @ V`` for 2-D ``V``, generating K tile by tile."""
    n = Xs.shape[0]
    k = V.shape[1]
    out = np.zeros((n, k))
    n_blocks = (n + _MATVEC_ROWS - 1) // _MATVEC_ROWS
    for p in prange(n_blocks):
        i0 = (n - n + p) * _MATVEC_ROWS
        i1 = min(n, i0 + _MATVEC_ROWS)
        for j0 in range(0, n, _MATVEC_TILE):
            j1 = min(n, j0 + _MATVEC_TILE)
            for i in range(i0, i1):
                for j in range(j0, j1):
                    kij = variance * kernel_value(base, _sqdist(Xs, i, Xs, j))
                    for c in range(k):
                        out[i, c] += kij * V[j, c]
        for i in range(i0, i1):
            for c in range(k):
                out[i, c] += noise * V[i, c]
    return out


@njit(parallel=True, cache=True, nogil=True)
def grad_inputs_cross(Xs, Zs, WT, variance, base):
    """``sum_a WT_ba f(r_ab) (xs_a - zs_b)`` times variance, per row b of Z.

    ``WT`` is ``W.T`` in C order so the inner loop reads it by rows. The
    caller multiplies column d by ``1 / ell_d``.
    """
    n, d = Xs.shape
    m = Zs.shape[0]
    G = np.zeros((m, d))
    for b in prange(m):
        for a in range(n):
            _, f = kernel_value_and_slope(base, _sqdist(Xs, a, Zs, b))
            wf = variance * WT[b, a] * f
            for c in range(d):
                G[b, c] += wf * (Xs[a, c] - Zs[b, c])
    return G


@njit(parallel=True, cache=True, nogil=True)
def grad_inputs_gram(Zs, W, variance, base):
    """``2 sum_b W_cb f(r_cb) (zs_b - zs_c)`` times variance, per row c.

    ``W`` is symmetric, so each point's row and column contribute equally.
    The caller multiplies column d by ``1 / ell_d``.
    """
    m, d = Zs.shape
    G = np.zeros((m, d))
    for i in prange(m):
        for b in range(m):
            if b == i:
                continue
            _, f = kernel_value_and_slope(base, _sqdist(Zs, i, Zs, b))
            wf = 2.0 * variance * W[i, b] * f
            for c in range(d):
                G[i, c] += wf * (Zs[b, c] - Zs[i, c])
    return G
