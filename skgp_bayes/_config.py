"""Numerical settings shared by every layer, kept in one place."""

# Jitter ladder for Cholesky: start at JITTER_START * mean(diag K), multiply by
# JITTER_FACTOR after every failure, give up after JITTER_TRIES attempts.
JITTER_START = 1e-8
JITTER_FACTOR = 10.0
JITTER_TRIES = 5

# Dense kernel matrices beyond this many bytes are refused with a MemoryError
# that points at the sparse estimators.
MAX_DENSE_BYTES = 8 * 1024**3

# Largest |theta| (log scale) accepted before exp overflows in float64.
MAX_ABS_LOG_PARAM = 700.0

# BLAS work up to this many matrix entries (n * n for a dense kernel matrix,
# n * m for a sparse model's cross-covariance) runs on one BLAS thread: below
# it, waking OpenBLAS's thread pool costs more than it saves, and on a busy
# machine a two-thread dpotri at n = 40 was measured 500 times slower, and a
# 900 x 900 factorisation 25-50 times slower, than a serial one (threads
# spinning while they wait for a core).
SERIAL_BLAS_MAX_WORK = 1000 * 1000


def check_dense_bytes(needed, what, advice):
    """MemoryError before allocating ``needed`` bytes above the dense limit.

    The limit is read when called, so that setting
    ``skgp_bayes._config.MAX_DENSE_BYTES`` takes effect everywhere.

    Parameters
    ----------
    needed : int
        Bytes the allocation would take.
    what : str
        What would be allocated, for the message ("SteinGPRegressor with
        50000 samples").
    advice : str
        What the user can do instead.

    Examples
    --------
    >>> from skgp_bayes._config import check_dense_bytes
    >>> check_dense_bytes(8 * 100**2, "a 100 x 100 matrix", "")  # fits: silent
    """
    if needed > MAX_DENSE_BYTES:
        raise MemoryError(
            f"{what} needs about {needed / 1024**3:.1f} GiB, above the limit of "
            f"{MAX_DENSE_BYTES / 1024**3:.1f} GiB "
            f"(skgp_bayes._config.MAX_DENSE_BYTES). {advice}"
        )
