"""BLAS's triangular solve and LAPACK's Cholesky, called from Numba so that
they drop the GIL.

SciPy's ``solve_triangular`` and ``lapack.dpotrf`` hold the interpreter lock
for the whole of the LAPACK call: two threads solving 600 x 600 systems
took 0.96 times as long as one thread doing both (factorising: 0.95), where
``numpy.dot`` took half. Particles evaluated on threads
(:class:`~skgp_bayes.inference.particles.ParticleEvaluator`) then take
turns. The same ``dtrsm`` and ``dpotrf``, reached through
``scipy.linalg.cython_blas`` and ``cython_lapack`` from ``nogil`` Numba
functions, run two such solves side by side in 0.46 of the time (2.2x).

The routines' addresses are passed in as integers and called through a
pointer cast (:func:`_call_routine`) rather than bound as
``ctypes`` function objects: a bound function pointer is a constant that
differs between processes, which stops Numba caching the compiled code, and
compiling both functions cost a fresh process about a second on its first
fit with 128 or more rows.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import get_cython_function_address, intrinsic

# Below this many rows a call is too quick for threads to matter.
NOGIL_MIN_ROWS = 128

DTRSM = get_cython_function_address("scipy.linalg.cython_blas", "dtrsm")
DPOTRF = get_cython_function_address("scipy.linalg.cython_lapack", "dpotrf")
DSYGST = get_cython_function_address("scipy.linalg.cython_lapack", "dsygst")
DSYRK = get_cython_function_address("scipy.linalg.cython_blas", "dsyrk")
DTRSV = get_cython_function_address("scipy.linalg.cython_blas", "dtrsv")
DTRMM = get_cython_function_address("scipy.linalg.cython_blas", "dtrmm")
DTRTRI = get_cython_function_address("scipy.linalg.cython_lapack", "dtrtri")
DLAUUM = get_cython_function_address("scipy.linalg.cython_lapack", "dlauum")
DPOTRI = get_cython_function_address("scipy.linalg.cython_lapack", "dpotri")
DPOTRS = get_cython_function_address("scipy.linalg.cython_lapack", "dpotrs")
DSYMM = get_cython_function_address("scipy.linalg.cython_blas", "dsymm")
_LEFT, _RIGHT, _UPPER, _LOWER = ord("L"), ord("R"), ord("U"), ord("L")
_NO, _YES = ord("N"), ord("T")


@intrinsic
def _call_routine(typingctx, address, pointers):
    """Call the Fortran routine at ``address`` with the tuple ``pointers``.

    Every argument of a BLAS or LAPACK routine is passed by reference, so
    the routine's type follows from the tuple's length.
    """

    def codegen(context, builder, signature, args):
        n = len(signature.args[1])
        pointer = ir.IntType(8).as_pointer()
        routine = ir.FunctionType(ir.VoidType(), [pointer] * n)
        entry = builder.inttoptr(args[0], routine.as_pointer())
        values = [builder.extract_value(args[1], i) for i in range(n)]
        builder.call(entry, [builder.inttoptr(v, pointer) for v in values])
        return context.get_dummy_value()

    return types.void(address, pointers), codegen


@intrinsic
def _keep_alive(typingctx, a, b, c):
    """Nothing, after the call: Numba frees an array after its last use, and
    taking ``.ctypes.data`` is a last use, so the argument arrays of a
    routine are used again here, once it has returned."""

    def codegen(context, builder, signature, args):
        return context.get_dummy_value()

    return types.void(a, b, c), codegen


@njit(nogil=True, cache=True)
def cholesky_lower_c(matrix, dpotrf):
    """Lower Cholesky factor of a C-ordered symmetric matrix, and LAPACK's info.

    Reads the lower triangle; the factor's strict upper triangle is zero.
    ``info > 0`` says the leading minor of that order is not positive
    definite (the factor is then incomplete).

    Parameters
    ----------
    matrix : ndarray of shape (n, n), C order
    dpotrf : int
        Address of LAPACK's ``dpotrf`` (:data:`DPOTRF`).

    Returns
    -------
    factor : ndarray of shape (n, n)
    info : int

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg._nogil_lapack import DPOTRF, cholesky_lower_c
    >>> factor, info = cholesky_lower_c(np.array([[4.0, 2.0], [2.0, 3.0]]), DPOTRF)
    >>> factor[1], int(info)
    (array([1.        , 1.41421356]), 0)
    """
    factor = matrix.copy()
    return factor, cholesky_in_place_c(factor, dpotrf)


@njit(nogil=True, cache=True)
def cholesky_in_place_c(factor, dpotrf):
    """:func:`cholesky_lower_c` overwriting its C-ordered argument; the info.

    For scratch matrices: a fresh matrix of a few hundred rows costs more
    in page faults than its factorisation's copy saves elsewhere.

    Parameters
    ----------
    factor : ndarray of shape (n, n), C order
        The symmetric matrix by its lower triangle; its factor on return.
    dpotrf : int
        Address of LAPACK's ``dpotrf`` (:data:`DPOTRF`).

    Returns
    -------
    int
        LAPACK's ``info``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg._nogil_lapack import DPOTRF, cholesky_in_place_c
    >>> K = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> int(cholesky_in_place_c(K, DPOTRF)), K[1]
    (0, array([1.        , 1.41421356]))
    """
    n = factor.shape[0]
    # LAPACK sees the C-ordered lower triangle as the upper one of A'.
    uplo = np.array([_UPPER], dtype=np.uint8)
    order = np.array([n], dtype=np.int32)
    info = np.zeros(1, dtype=np.int32)
    _call_routine(
        dpotrf,
        (
            uplo.ctypes.data,
            order.ctypes.data,
            factor.ctypes.data,
            order.ctypes.data,
            info.ctypes.data,
        ),
    )
    _keep_alive(uplo, order, info)
    for i in range(n):
        for j in range(i + 1, n):
            factor[i, j] = 0.0
    return info[0]


@njit(nogil=True, cache=True)
def solve_lower_c(factor, rhs, trans, dtrsm):
    """``L^-1 B`` (``trans`` False) or ``L^-T B`` for a C-ordered lower ``L``.

    Parameters
    ----------
    factor : ndarray of shape (n, n), C order
    rhs : ndarray of shape (n, k), C order
    trans : bool
    dtrsm : int
        Address of BLAS's ``dtrsm`` (:data:`DTRSM`).

    Returns
    -------
    ndarray of shape (n, k)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg._nogil_lapack import DTRSM, solve_lower_c
    >>> L = np.array([[2.0, 0.0], [1.0, 1.0]])
    >>> solve_lower_c(L, np.array([[2.0], [2.0]]), False, DTRSM).ravel()
    array([1., 1.])
    """
    out = rhs.copy()
    solve_in_place_c(factor, out, trans, dtrsm)
    return out


@njit(nogil=True, cache=True)
def solve_in_place_c(factor, out, trans, dtrsm):
    """:func:`solve_lower_c` overwriting its C-ordered right-hand side.

    Parameters
    ----------
    factor : ndarray of shape (n, n), C order
    out : ndarray of shape (n, k), C order
        ``B`` on entry, the solution on return.
    trans : bool
    dtrsm : int
        Address of BLAS's ``dtrsm`` (:data:`DTRSM`).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg._nogil_lapack import DTRSM, solve_in_place_c
    >>> B = np.array([[2.0], [2.0]])
    >>> solve_in_place_c(np.array([[2.0, 0.0], [1.0, 1.0]]), B, False, DTRSM)
    >>> B.ravel()
    array([1., 1.])
    """
    n, k = out.shape
    # BLAS reads C-ordered arrays transposed: it sees U = L' (upper) and
    # X' (k x n), and L X = B is X' U = B'; L' X = B is X' U' = B'.
    # side, uplo, transa, diag
    flags = np.array([_RIGHT, _UPPER, _YES if trans else _NO, _NO], dtype=np.uint8)
    sizes = np.array([k, n], dtype=np.int32)
    alpha = np.ones(1)
    flag, size = flags.ctypes.data, sizes.ctypes.data
    _call_routine(
        dtrsm,
        (
            flag,
            flag + 1,
            flag + 2,
            flag + 3,
            size,
            size + 4,
            alpha.ctypes.data,
            factor.ctypes.data,
            size + 4,
            out.ctypes.data,
            size,
        ),
    )
    _keep_alive(flags, sizes, alpha)


@njit(nogil=True, cache=True)
def _reverse_in_place(matrix):
    """``J M J`` in place: a C-ordered matrix's entries in reverse order."""
    flat = matrix.ravel()
    size = flat.size
    for k in range(size // 2):
        swap = flat[k]
        flat[k] = flat[size - 1 - k]
        flat[size - 1 - k] = swap


@njit(nogil=True, cache=True)
def inverse_congruence_c(factor, sym, dsygst):
    """``L^-T S L^-1`` for a C-ordered lower ``L`` and symmetric ``S``.

    Only the lower triangle of ``S`` is read, and ``S`` is overwritten
    with the whole symmetric result (nothing is returned: a compiled
    function that returns an argument turns Ctrl-C into ``SystemError``). LAPACK's
    ``dsygst`` does in one call, and half the arithmetic, what two
    triangular solves with ``n`` right-hand sides do (``n^3`` flops against
    ``2 n^3``); it is the second half of the reverse pass through a
    Cholesky factor (Murray's ``sym(L^-T P L^-1)``).

    ``dsygst`` congruences the other way round, ``inv(M) A inv(M')`` for
    a lower ``M``. With the reversal ``J`` (``J = J' = J^-1``),
    ``L^-T S L^-1 = J inv(M) (J S J) inv(M') J`` for the lower
    ``M = J L' J``. BLAS reads a C-ordered array as its transpose, so the
    reversed arrays ``J L J`` and ``J S J`` are, to LAPACK, ``M`` and
    ``J S J``. The reversals are done in place, ``L``'s undone before the
    return: fresh matrices of this size cost more in page faults (2.5 ms
    at n = 600) than the arithmetic of the copies. So ``factor`` must be
    writable and not read by another thread during the call.

    Parameters
    ----------
    factor : ndarray of shape (n, n), C order
        Lower triangular ``L``; its strict upper triangle is not read.
        Reversed during the call and restored.
    sym : ndarray of shape (n, n), C order
        ``S``, by its lower triangle; overwritten.
    dsygst : int
        Address of LAPACK's ``dsygst`` (:data:`DSYGST`).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg._nogil_lapack import DSYGST, inverse_congruence_c
    >>> L = np.array([[2.0, 0.0], [1.0, 1.0]])
    >>> S = np.array([[4.0, 0.0], [2.0, 1.0]])  # lower triangle of [[4, 2], [2, 1]]
    >>> inverse_congruence_c(L, S, DSYGST)
    >>> S
    array([[0.25, 0.5 ],
           [0.5 , 1.  ]])
    """
    n = factor.shape[0]
    _reverse_in_place(factor)
    _reverse_in_place(sym)
    # itype, order, info; LAPACK's lower triangle is the C upper one.
    ints = np.array([1, n, 0], dtype=np.int32)
    uplo = np.array([_LOWER], dtype=np.uint8)
    size = ints.ctypes.data
    _call_routine(
        dsygst,
        (
            size,
            uplo.ctypes.data,
            size + 4,
            sym.ctypes.data,
            size + 4,
            factor.ctypes.data,
            size + 4,
            size + 8,
        ),
    )
    _keep_alive(ints, uplo, factor)
    _reverse_in_place(factor)
    # The C upper triangle is now J Y J's, so Y's lower one after reversal.
    _reverse_in_place(sym)
    for r in range(n):
        for c in range(r):
            sym[c, r] = sym[r, c]


@njit(nogil=True, cache=True)
def _rank_k_update(dsyrk, flags, sizes, scalars, a, c):
    """BLAS's ``C = alpha A' A + beta C`` (``dsyrk`` with ``trans`` set).

    ``flags`` is ``[uplo, trans]``, ``sizes`` ``[n, k, lda]`` (``ldc`` is
    ``n``) and ``scalars`` ``[alpha, beta]``, all as BLAS reads them.
    """
    flag, size, scalar = flags.ctypes.data, sizes.ctypes.data, scalars.ctypes.data
    _call_routine(
        dsyrk,
        (flag, flag + 1, size, size + 4, scalar, a.ctypes.data, size + 8,
         scalar + 8, c.ctypes.data, size),
    )  # fmt: skip
    _keep_alive(flags, sizes, scalars)
    _keep_alive(a, c, c)


@njit(nogil=True, cache=True)
def weighted_gram_lower_c(A, weights, out, columns_scratch, dsyrk):
    """The lower triangle of ``A diag(w) A'`` by BLAS's ``dsyrk``.

    Half the arithmetic of the full product: the columns of each sign,
    scaled by ``sqrt(|w|)``, go to one rank-k update each. The strict
    upper triangle of the result is left zero.

    Parameters
    ----------
    A : ndarray of shape (m, n), C order
    weights : ndarray of shape (n,)
    out : ndarray of shape (m, m), C order
        Overwritten with the result (returned in it, not as a value: see
        :func:`inverse_congruence_c`).
    columns_scratch : ndarray of shape (m, p), C order, p >= n
        Overwritten (the scaled columns).
    dsyrk : int
        Address of BLAS's ``dsyrk`` (:data:`DSYRK`).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg._nogil_lapack import DSYRK, weighted_gram_lower_c
    >>> A = np.array([[1.0, 2.0], [0.0, 1.0]])
    >>> out, work = np.empty((2, 2)), np.empty((2, 2))
    >>> weighted_gram_lower_c(A, np.array([1.0, -1.0]), out, work, DSYRK)
    >>> out
    array([[-3.,  0.],
           [-2., -1.]])
    """
    m = A.shape[0]
    out[:, :] = 0.0
    for sign in (1.0, -1.0):
        columns = np.flatnonzero(weights * sign > 0.0)
        k = columns.size
        if k == 0:
            continue
        roots = np.sqrt(sign * weights[columns])
        # The first k columns of the scratch, whose rows stay their own
        # length apart; with every weight of one sign (log-concave
        # likelihoods) a plain row-by-row copy, else a gather.
        scaled = columns_scratch
        if k == weights.size:
            for j in range(m):
                for p in range(k):
                    scaled[j, p] = A[j, p] * roots[p]
        else:
            for j in range(m):
                for p in range(k):
                    scaled[j, p] = A[j, columns[p]] * roots[p]
        # BLAS sees scaled' (k x m, leading dimension the scratch's row
        # length); C = alpha (scaled')' scaled' + C in its upper triangle,
        # the C-ordered lower one. uplo, trans; then m, k and that length.
        flags = np.array([_UPPER, _YES], dtype=np.uint8)
        sizes = np.array([m, k, scaled.shape[1]], dtype=np.int32)
        _rank_k_update(dsyrk, flags, sizes, np.array([sign, 1.0]), scaled, out)


# Fortran-ordered routines: the exact target's buffer is LAPACK's own
# layout, so its calls need no transposes (and give the same arithmetic as
# SciPy's wrappers of the same routines).


@njit(nogil=True, cache=True)
def gram_lower_f(Xs1, d, out, dsyrk):
    """The lower triangle of ``Xs Xs'`` into ``out``, by BLAS's ``dsyrk``.

    ``Xs`` is the first ``d`` columns of the C-ordered ``Xs1``. The strict
    upper triangle of ``out`` is not written. Returns nothing (see
    :func:`inverse_congruence_c`).

    Parameters
    ----------
    Xs1 : ndarray of shape (n, p), C order, p >= d
    d : int
    out : ndarray of shape (n, n), Fortran order
    dsyrk : int
        Address of BLAS's ``dsyrk`` (:data:`DSYRK`).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg._nogil_lapack import DSYRK, gram_lower_f
    >>> out = np.zeros((2, 2), order="F")
    >>> gram_lower_f(np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 1.0]]), 2, out, DSYRK)
    >>> out
    array([[ 5.,  0.],
           [11., 25.]])
    """
    n = Xs1.shape[0]
    # BLAS sees the C-ordered Xs1 as Xs1' (p x n, leading dimension p), whose
    # first d rows are Xs': C = alpha (Xs')' Xs' + beta C. uplo, trans; n,
    # k and the leading dimensions; alpha and beta.
    flags = np.array([_LOWER, _YES], dtype=np.uint8)
    sizes = np.array([n, d, Xs1.shape[1]], dtype=np.int32)
    _rank_k_update(dsyrk, flags, sizes, np.array([1.0, 0.0]), Xs1, out)


@njit(nogil=True, cache=True)
def cholesky_lower_f(matrix, dpotrf):
    """LAPACK's ``dpotrf`` on the lower triangle of a Fortran-ordered matrix.

    The factor overwrites the lower triangle; the strict upper one is
    neither read nor written.

    Parameters
    ----------
    matrix : ndarray of shape (n, n), Fortran order
    dpotrf : int
        Address of LAPACK's ``dpotrf`` (:data:`DPOTRF`).

    Returns
    -------
    int
        LAPACK's ``info`` (``k > 0``: the leading minor of order ``k`` is
        not positive definite).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg._nogil_lapack import DPOTRF, cholesky_lower_f
    >>> K = np.array([[4.0, 9.0], [2.0, 3.0]], order="F")
    >>> int(cholesky_lower_f(K, DPOTRF)), K[1], float(K[0, 1])
    (0, array([1.        , 1.41421356]), 9.0)
    """
    return _lower_triangle_routine_f(matrix, dpotrf)


@njit(nogil=True, cache=True)
def solve_lower_vector_f(factor, x, trans, dtrsv):
    """``x <- L^-1 x`` (``trans`` False) or ``L^-T x``, by BLAS's ``dtrsv``.

    Parameters
    ----------
    factor : ndarray of shape (n, n), Fortran order
        ``L`` in its lower triangle; the strict upper one is not read.
    x : ndarray of shape (n,)
        Overwritten with the solution.
    trans : bool
    dtrsv : int
        Address of BLAS's ``dtrsv`` (:data:`DTRSV`).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg._nogil_lapack import DTRSV, solve_lower_vector_f
    >>> x = np.array([2.0, 2.0])
    >>> solve_lower_vector_f(np.array([[2.0, 0.0], [1.0, 1.0]], order="F"), x,
    ...                      False, DTRSV)
    >>> x
    array([1., 1.])
    """
    # uplo, trans, diag; n, lda, incx
    flags = np.array([_LOWER, _YES if trans else _NO, _NO], dtype=np.uint8)
    sizes = np.array([x.size, factor.shape[0], 1], dtype=np.int32)
    flag, size = flags.ctypes.data, sizes.ctypes.data
    _call_routine(
        dtrsv,
        (
            flag,
            flag + 1,
            flag + 2,
            size,
            factor.ctypes.data,
            size + 4,
            x.ctypes.data,
            size + 8,
        ),
    )
    _keep_alive(flags, sizes, factor)
    _keep_alive(x, x, x)


@njit(nogil=True, cache=True)
def _invert_block_f(matrix, start, size, dtrtri):
    """``dtrtri`` on the diagonal block at ``start``; LAPACK's info."""
    n = matrix.shape[0]
    ints = np.array([size, n, 0], dtype=np.int32)
    flags = np.array([_LOWER, _NO], dtype=np.uint8)
    block = matrix.ctypes.data + np.uint64(8 * (start + start * n))
    ints_at, flag = ints.ctypes.data, flags.ctypes.data
    _call_routine(dtrtri, (flag, flag + 1, ints_at, block, ints_at + 4, ints_at + 8))
    _keep_alive(ints, flags, matrix)
    return ints[2]


@njit(nogil=True, cache=True)
def _join_halves_f(matrix, start, size, dtrmm):
    """``L21 <- -L22^-1 L21 L11^-1`` for the block at ``start`` split in halves.

    On entry the two diagonal halves hold their inverses; two ``dtrmm``,
    as SciPy's by-halves inverse does them (left, then right).
    """
    n = matrix.shape[0]
    half = size // 2
    # Byte offsets as unsigned integers: a signed one would make the sum a float.
    base = matrix.ctypes.data
    top = base + np.uint64(8 * (start + start * n))
    bottom = base + np.uint64(8 * (start + half + (start + half) * n))
    below = base + np.uint64(8 * (start + half + start * n))
    # side (left, right), uplo, transa, diag; m, n, ld; alpha (-1, 1)
    flags = np.array([_LEFT, _RIGHT, _LOWER, _NO], dtype=np.uint8)
    ints = np.array([size - half, half, n], dtype=np.int32)
    alphas = np.array([-1.0, 1.0])
    flag, dims, alpha = flags.ctypes.data, ints.ctypes.data, alphas.ctypes.data
    _call_routine(
        dtrmm,
        (flag, flag + 2, flag + 3, flag + 3, dims, dims + 4, alpha, bottom,
         dims + 8, below, dims + 8),
    )  # fmt: skip
    _call_routine(
        dtrmm,
        (flag + 1, flag + 2, flag + 3, flag + 3, dims, dims + 4, alpha + 8, top,
         dims + 8, below, dims + 8),
    )  # fmt: skip
    _keep_alive(flags, ints, alphas)
    _keep_alive(matrix, matrix, matrix)


@njit(nogil=True, cache=True)
def _lower_triangle_routine_f(matrix, routine):
    """``dpotrf``, ``dlauum`` or ``dpotri`` (the same arguments: uplo, n, A,
    lda, info) on the lower triangle; LAPACK's info."""
    ints = np.array([matrix.shape[0], 0], dtype=np.int32)
    uplo = np.array([_LOWER], dtype=np.uint8)
    size = ints.ctypes.data
    _call_routine(routine, (uplo.ctypes.data, size, matrix.ctypes.data, size, size + 4))
    _keep_alive(ints, uplo, matrix)
    return ints[1]


@njit(nogil=True, cache=True)
def inverse_from_factor_f(factor, leaf, halves_max_n, routines):
    """The lower triangle of ``K^-1`` in place of the Cholesky factor of ``K``.

    What ``dpotri`` computes (``L^-1``, then ``L^-T L^-1`` by ``dlauum``),
    with ``L^-1`` taken by halves up to ``halves_max_n`` rows: ``dtrtri``
    on diagonal blocks of at most ``leaf`` rows, two ``dtrmm`` per join
    (:mod:`skgp_bayes.targets.exact` gives the reasoning and timings).
    Above ``halves_max_n``, ``dpotri`` itself. The strict upper triangle is
    not read or written.

    Parameters
    ----------
    factor : ndarray of shape (n, n), Fortran order
    leaf, halves_max_n : int
    routines : tuple of int
        Addresses of ``dtrtri``, ``dtrmm``, ``dlauum`` and ``dpotri``
        (:data:`DTRTRI`, :data:`DTRMM`, :data:`DLAUUM`, :data:`DPOTRI`).

    Returns
    -------
    bool
        False where ``L`` has a zero on its diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg._nogil_lapack import (
    ...     DLAUUM, DPOTRI, DTRMM, DTRTRI, inverse_from_factor_f)
    >>> L = np.array([[2.0, 0.0], [1.0, 1.0]], order="F")
    >>> inverse_from_factor_f(L, 64, 1500, (DTRTRI, DTRMM, DLAUUM, DPOTRI))
    True
    >>> np.tril(L)  # the lower triangle of inv([[4, 2], [2, 2]])
    array([[ 0.5,  0. ],
           [-0.5,  1. ]])
    """
    dtrtri, dtrmm, dlauum, dpotri = routines
    n = factor.shape[0]
    if n > halves_max_n:
        return _lower_triangle_routine_f(factor, dpotri) == 0
    # The halving tree in post-order from an explicit stack: a block's two
    # halves are inverted before they are joined.
    starts = np.empty(128, dtype=np.int64)
    sizes = np.empty(128, dtype=np.int64)
    joined = np.zeros(128, dtype=np.bool_)
    starts[0], sizes[0], depth = 0, n, 1
    while depth > 0:
        depth -= 1
        start, size, ready = starts[depth], sizes[depth], joined[depth]
        if size <= leaf:
            if _invert_block_f(factor, start, size, dtrtri) != 0:
                return False
        elif ready:
            _join_halves_f(factor, start, size, dtrmm)
        else:
            half = size // 2
            for s, k, j in ((start, size, True), (start + half, size - half, False),
                            (start, half, False)):  # fmt: skip
                starts[depth], sizes[depth], joined[depth] = s, k, j
                depth += 1
    return _lower_triangle_routine_f(factor, dlauum) == 0


@njit(nogil=True, cache=True)
def cholesky_solve_f(factor, rhs, dpotrs):
    """``B <- K^-1 B`` from the lower Cholesky factor of ``K``, by ``dpotrs``.

    Parameters
    ----------
    factor : ndarray of shape (n, n), Fortran order
        ``L`` in its lower triangle; the strict upper one is not read.
    rhs : ndarray of shape (n, k), Fortran order
        ``B``, overwritten with the solution.
    dpotrs : int
        Address of LAPACK's ``dpotrs`` (:data:`DPOTRS`).

    Returns
    -------
    int
        LAPACK's ``info`` (nonzero only for an invalid argument).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg._nogil_lapack import DPOTRS, cholesky_solve_f
    >>> L = np.array([[2.0, 0.0], [1.0, 1.0]], order="F")  # K = [[4, 2], [2, 2]]
    >>> B = np.array([[6.0], [4.0]], order="F")
    >>> int(cholesky_solve_f(L, B, DPOTRS)), B[:, 0]
    (0, array([1., 1.]))
    """
    # n, nrhs, lda, ldb, info
    ints = np.array([rhs.shape[0], rhs.shape[1], factor.shape[0], rhs.shape[0], 0],
                    dtype=np.int32)  # fmt: skip
    uplo = np.array([_LOWER], dtype=np.uint8)
    at = ints.ctypes.data
    _call_routine(
        dpotrs,
        (uplo.ctypes.data, at, at + 4, factor.ctypes.data, at + 8, rhs.ctypes.data,
         at + 12, at + 16),
    )  # fmt: skip
    _keep_alive(ints, uplo, factor)
    _keep_alive(rhs, rhs, rhs)
    return ints[4]


@njit(nogil=True, cache=True)
def symmetric_product_upper_f(matrix, rhs, out, dsymm):
    """``C = A B`` for a symmetric ``A`` given by its upper triangle, by ``dsymm``.

    The strict lower triangle of ``A`` is not read, so it may hold
    something else: a Cholesky factor whose matrix sits above it.

    Parameters
    ----------
    matrix : ndarray of shape (n, n), Fortran order
        ``A`` in its upper triangle and diagonal.
    rhs : ndarray of shape (n, k), Fortran order
    out : ndarray of shape (n, k), Fortran order
        Overwritten with ``A B`` (nothing is returned: see
        :func:`inverse_congruence_c`).
    dsymm : int
        Address of BLAS's ``dsymm`` (:data:`DSYMM`).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg._nogil_lapack import DSYMM, symmetric_product_upper_f
    >>> A = np.array([[2.0, 1.0], [9.0, 3.0]], order="F")  # [[2, 1], [1, 3]]
    >>> out = np.empty((2, 1), order="F")
    >>> symmetric_product_upper_f(A, np.ones((2, 1), order="F"), out, DSYMM)
    >>> out[:, 0]
    array([3., 4.])
    """
    # side, uplo; m, n, lda (ldb and ldc are m); alpha, beta
    flags = np.array([_LEFT, _UPPER], dtype=np.uint8)
    ints = np.array([rhs.shape[0], rhs.shape[1], matrix.shape[0]], dtype=np.int32)
    scalars = np.array([1.0, 0.0])
    flag, at, scalar = flags.ctypes.data, ints.ctypes.data, scalars.ctypes.data
    _call_routine(
        dsymm,
        (flag, flag + 1, at, at + 4, scalar, matrix.ctypes.data, at + 8,
         rhs.ctypes.data, at, scalar + 8, out.ctypes.data, at),
    )  # fmt: skip
    _keep_alive(flags, ints, scalars)
    _keep_alive(matrix, rhs, out)
