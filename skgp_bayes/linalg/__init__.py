"""Dense linear algebra: Cholesky with a jitter ladder, solves, reverse mode."""

from .cholesky import (
    cho_inverse,
    cho_solve,
    cholesky,
    log_det_from_cholesky,
    triangular_solve,
)

__all__ = [
    "cholesky",
    "cho_solve",
    "cho_inverse",
    "log_det_from_cholesky",
    "triangular_solve",
]

try:  # reverse-mode Cholesky lives in its own module
    from .reverse import cholesky_reverse  # noqa: F401

    __all__.append("cholesky_reverse")
except ImportError:  # pragma: no cover - module absent in partial checkouts
    pass
