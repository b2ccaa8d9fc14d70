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
_RIGHT, _UPPER, _NO, _YES = ord("R"), ord("U"), ord("N"), ord("T")


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
    n = matrix.shape[0]
    factor = matrix.copy()
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
    return factor, info[0]


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
    n, k = rhs.shape
    out = rhs.copy()
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
    return out
