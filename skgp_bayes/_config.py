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
