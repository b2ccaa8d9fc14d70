"""Cholesky factorisation with a jitter ladder, and the solves built on it."""

import numpy as np
from scipy.linalg import lapack, solve_triangular

from .._config import JITTER_FACTOR, JITTER_START, JITTER_TRIES
from .._warnings import warn_user
from ..exceptions import NotPSDError, NumericalWarning
from ._nogil_lapack import (
    DPOTRF,
    DSYGST,
    DTRSM,
    NOGIL_MIN_ROWS,
    cholesky_lower_c,
    inverse_congruence_c,
    solve_lower_c,
)

__all__ = [
    "cholesky",
    "cho_solve",
    "cho_inverse",
    "log_det_from_cholesky",
    "triangular_solve",
    "inverse_congruence",
]


def _large_square(matrix):
    """Square, 2-D and at least ``NOGIL_MIN_ROWS`` rows: the lock-free path."""
    n = matrix.shape[0] if matrix.ndim == 2 else 0
    return n >= NOGIL_MIN_ROWS and matrix.shape == (n, n)


def _potrf(matrix):
    # LAPACK's dpotrf is 2-3x faster than np.linalg.cholesky on these
    # machines. Large matrices go through it without the interpreter lock
    # (see _nogil_lapack); clean=1 zeroes the strict upper triangle so L is
    # usable as returned, as the nogil path does.
    if _large_square(matrix):
        return cholesky_lower_c(np.ascontiguousarray(matrix), DPOTRF)
    factor, info = lapack.dpotrf(matrix, lower=1, clean=1, overwrite_a=0)
    return factor, info


def cholesky(matrix, *, max_tries=JITTER_TRIES, warn=True, context=None):
    """Lower Cholesky factor, adding diagonal jitter only when needed.

    The first attempt uses the matrix as given. On failure, a jitter of
    ``1e-8 * mean(diag(matrix))`` is added to the diagonal and multiplied by
    ten after each further failure, for at most ``max_tries`` attempts.

    Parameters
    ----------
    matrix : ndarray of shape (n, n)
        Symmetric matrix; only its lower triangle is read.
    max_tries : int, default=5
        Number of jittered attempts after the plain one.
    warn : bool, default=True
        Emit a :class:`~skgp_bayes.exceptions.NumericalWarning` saying how
        much jitter was added. Inner loops pass ``False`` and report the
        largest jitter once.
    context : str, optional
        Appended to the error message (for example the hyperparameters
        that produced the matrix).

    Returns
    -------
    factor : ndarray of shape (n, n)
        Lower-triangular ``L`` with ``L @ L.T == matrix + jitter * I``.
    jitter : float
        The jitter that was added (0.0 when none was needed).

    Raises
    ------
    NotPSDError
        If the matrix is not positive definite after every attempt, or
        contains non-finite values.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import cholesky
    >>> L, jitter = cholesky(np.array([[4.0, 2.0], [2.0, 3.0]]))
    >>> L
    array([[2.        , 0.        ],
           [1.        , 1.41421356]])
    >>> jitter
    0.0
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    suffix = f" ({context})" if context else ""
    diag = np.diag(matrix)
    if not np.all(np.isfinite(diag)):
        raise NotPSDError(f"Matrix has non-finite diagonal entries{suffix}.")
    factor, info = _potrf(matrix)
    if info == 0:
        return factor, 0.0
    if info < 0:
        raise NotPSDError(f"Illegal argument to dpotrf (info={info}){suffix}.")
    return _jittered_factor(matrix, diag, max_tries, warn, suffix)


def _jittered_factor(matrix, diag, max_tries, warn, suffix):
    """The jitter escalation of :func:`cholesky`, after the plain attempt failed."""
    scale, jitters = jitter_ladder(np.mean(np.abs(diag)), max_tries)
    work = matrix.copy()
    base_diag = diag.copy()
    for jitter in jitters:
        np.fill_diagonal(work, base_diag + jitter)
        factor, info = _potrf(work)
        if info == 0:
            if warn:
                warn_user(
                    f"Matrix was not positive definite; added jitter {jitter:.3g} "
                    f"({jitter / scale:.1e} x mean diagonal) to the diagonal"
                    f"{suffix}.",
                    NumericalWarning,
                    worst=jitter / scale,
                )
            return factor, jitter
    raise jitter_exhausted(scale, jitters, suffix)


def jitter_ladder(mean_abs_diagonal, max_tries=JITTER_TRIES):
    """The jitters a factorisation tries after its plain attempt failed.

    ``JITTER_START`` times the mean absolute diagonal (1 where that is zero
    or not finite), multiplied by ``JITTER_FACTOR`` after each failure, for
    ``max_tries`` attempts; the host's :func:`cholesky` and the array
    module's exact target climb the same rungs.

    Parameters
    ----------
    mean_abs_diagonal : float
    max_tries : int, default=JITTER_TRIES

    Returns
    -------
    scale : float
        The diagonal scale the jitters are relative to.
    jitters : list of float

    Examples
    --------
    >>> from skgp_bayes.linalg.cholesky import jitter_ladder
    >>> scale, jitters = jitter_ladder(2.0, 3)
    >>> scale, [float(f"{j:.0e}") for j in jitters]
    (2.0, [2e-08, 2e-07, 2e-06])
    """
    scale = float(mean_abs_diagonal)
    if not np.isfinite(scale) or scale == 0.0:
        scale = 1.0
    jitter, jitters = JITTER_START * scale, []
    for _ in range(max_tries):
        jitters.append(jitter)
        jitter *= JITTER_FACTOR
    return scale, jitters


def jitter_exhausted(scale, jitters, suffix=""):
    """The :class:`~skgp_bayes.exceptions.NotPSDError` once every rung failed.

    Examples
    --------
    >>> from skgp_bayes.linalg.cholesky import jitter_exhausted, jitter_ladder
    >>> str(jitter_exhausted(*jitter_ladder(1.0, 2)))[:40]
    'Matrix is not positive definite, even af'
    """
    last = jitters[-1] if jitters else JITTER_START * scale / JITTER_FACTOR
    return NotPSDError(
        "Matrix is not positive definite, even after adding jitter up to "
        f"{last:.3g} to the diagonal{suffix}. Consider a "
        "larger noise variance lower bound, removing duplicate inputs, or a "
        "kernel that is positive definite."
    )


def cho_solve(factor, rhs):
    """Solve ``(L L') x = rhs`` given the lower Cholesky factor ``L``.

    Parameters
    ----------
    factor : ndarray of shape (n, n)
        Lower Cholesky factor.
    rhs : ndarray of shape (n,) or (n, k)
        Right-hand side(s).

    Returns
    -------
    x : ndarray of the shape of ``rhs``

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import cholesky, cho_solve
    >>> K = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> L, _ = cholesky(K)
    >>> np.allclose(K @ cho_solve(L, np.array([1.0, 2.0])), [1.0, 2.0])
    True
    """
    x, info = lapack.dpotrs(factor, rhs, lower=1)
    if info != 0:
        raise ValueError(f"dpotrs failed (info={info}).")
    return x


def cho_inverse(factor):
    """Full symmetric inverse ``(L L')^-1`` from the lower Cholesky factor.

    Parameters
    ----------
    factor : ndarray of shape (n, n)
        Lower Cholesky factor.

    Returns
    -------
    inverse : ndarray of shape (n, n)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import cholesky, cho_inverse
    >>> K = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> np.allclose(cho_inverse(cholesky(K)[0]) @ K, np.eye(2))
    True
    """
    inverse, info = lapack.dpotri(factor, lower=1)
    if info != 0:
        raise NotPSDError(f"dpotri failed (info={info}).")
    # dpotri fills only the lower triangle; mirror it.
    lower = np.tril(inverse, -1)
    inverse = np.tril(inverse) + lower.T
    return inverse


def log_det_from_cholesky(factor):
    """Log-determinant ``log |L L'|`` of a matrix from its Cholesky factor.

    Parameters
    ----------
    factor : ndarray of shape (n, n)
        Lower Cholesky factor.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import log_det_from_cholesky
    >>> float(log_det_from_cholesky(np.diag([2.0, 3.0])))  # log(36)
    3.58351893845611
    """
    return 2.0 * float(np.sum(np.log(np.diag(factor))))


def _plain_system(factor, rhs):
    """Square float64 factor, float64 rhs of one or two dimensions."""
    return (
        factor.ndim == 2
        and factor.shape[0] == factor.shape[1]
        and rhs.ndim in (1, 2)
        and factor.dtype == np.float64
        and rhs.dtype == np.float64
    )


def _trtrs(factor, rhs, trans):
    # The LAPACK call scipy.linalg.solve_triangular makes, with the same
    # arguments (a C-ordered factor is passed transposed, as the upper
    # triangle of its Fortran view), so the same result to the bit; its
    # wrapper's checks and dispatch cost about 30 us, more than the solve
    # itself for the few tens of rows of a small bound.
    if factor.flags.f_contiguous:
        x, info = lapack.dtrtrs(factor, rhs, lower=1, trans=int(trans))
    else:
        x, info = lapack.dtrtrs(factor.T, rhs, lower=0, trans=int(not trans))
    if info > 0:
        raise np.linalg.LinAlgError(
            f"singular matrix: resolution failed at diagonal {info - 1}"
        )
    return x


def triangular_solve(factor, rhs, *, trans=False):
    """Solve ``L x = rhs`` (or ``L' x = rhs`` with ``trans=True``).

    Parameters
    ----------
    factor : ndarray of shape (n, n)
        Lower-triangular matrix.
    rhs : ndarray of shape (n,) or (n, k)
    trans : bool, default=False

    Returns
    -------
    x : ndarray of the shape of ``rhs``

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg.cholesky import triangular_solve
    >>> triangular_solve(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 2.0]))
    array([1., 1.])
    """
    factor = np.asarray(factor)
    rhs = np.asarray(rhs)
    conforming = rhs.size > 0 and rhs.shape[:1] == factor.shape[:1]
    if not (conforming and _large_square(factor)):
        if conforming and _plain_system(factor, rhs):
            return _trtrs(factor, rhs, bool(trans))
        return solve_triangular(
            factor, rhs, lower=True, trans=1 if trans else 0, check_finite=False
        )
    # Large systems go through BLAS without the interpreter lock, so that
    # threads solving at once run side by side (see _nogil_lapack).
    columns = np.ascontiguousarray(rhs.reshape(rhs.shape[0], -1), dtype=np.float64)
    solved = solve_lower_c(
        np.ascontiguousarray(factor, dtype=np.float64), columns, bool(trans), DTRSM
    )
    return solved.reshape(rhs.shape)


def inverse_congruence(factor, sym, *, overwrite=False):
    """``L^-T S L^-1`` for a lower-triangular ``L`` and a symmetric ``S``.

    The second half of every reverse pass through a Cholesky factor
    (:func:`~skgp_bayes.linalg.cholesky_reverse`, the sparse targets'
    ``dF/dK(Z, Z)``, the whitened classifier's ``dF/dK``): one call of
    LAPACK's ``dsygst``, without the interpreter lock, half the arithmetic
    of two triangular solves with ``n`` right-hand sides (on one core,
    10 ms against 15 at n = 600) and a quarter less than an explicit
    inverse and a triangular product (2.8 ms against 3.5 at n = 398).
    From Python it is also the quicker at small ``n``: one compiled call
    against two SciPy solves and the copies around them.

    Parameters
    ----------
    factor : ndarray of shape (n, n)
        Lower-triangular ``L``; its strict upper triangle is not read.
    sym : ndarray of shape (n, n)
        ``S``; only its lower triangle is read.
    overwrite : bool, default=False
        Hand both arrays over: ``sym``, when C-ordered float64, is
        overwritten with the result, and ``factor``, when C-ordered
        float64, is reversed in place during the call and restored, so no
        other thread may use it meanwhile. Saves the two copies, which cost
        more than a third of the call at n = 600 (fresh matrices of that
        size cost page faults).

    Returns
    -------
    ndarray of shape (n, n)
        The symmetric ``L^-T S L^-1``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import inverse_congruence
    >>> L = np.array([[2.0, 0.0], [1.0, 1.0]])
    >>> inverse_congruence(L, np.array([[4.0, 2.0], [2.0, 1.0]]))
    array([[0.25, 0.5 ],
           [0.5 , 1.  ]])
    """
    n = np.shape(factor)[0] if np.ndim(factor) == 2 else -1
    if np.shape(factor) != (n, n) or np.shape(sym) != (n, n):
        raise ValueError(
            "factor and sym must be square matrices of one size; got shapes "
            f"{np.shape(factor)} and {np.shape(sym)}."
        )
    # The routine reverses the factor in place meanwhile and writes the
    # result over sym, both in C order: private copies unless the caller
    # hands them over.
    if overwrite:
        factor = np.ascontiguousarray(factor, dtype=np.float64)
        result = np.ascontiguousarray(sym, dtype=np.float64)
    else:
        factor = np.array(factor, dtype=np.float64, order="C")
        result = np.array(sym, dtype=np.float64, order="C")
    inverse_congruence_c(factor, result, DSYGST)
    return result
