"""Dense linear algebra: Cholesky with a jitter ladder, solves, reverse mode."""

from .cholesky import (
    cho_inverse,
    cho_solve,
    cholesky,
    log_det_from_cholesky,
    triangular_solve,
)
from .reverse import cholesky_reverse

__all__ = [
    "cholesky",
    "cho_solve",
    "cho_inverse",
    "log_det_from_cholesky",
    "triangular_solve",
    "cholesky_reverse",
]
