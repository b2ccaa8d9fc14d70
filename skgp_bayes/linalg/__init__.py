"""Dense linear algebra: Cholesky with a jitter ladder, solves, reverse mode;
iterative solves: batched CG and ULISSE."""

from .cg import CGResult, batched_cg, kernel_operator
from .cholesky import (
    cho_inverse,
    cho_solve,
    cholesky,
    inverse_congruence,
    log_det_from_cholesky,
    triangular_solve,
)
from .diagonal import add_to_diagonal
from .precondition import (
    LowRankPreconditioner,
    kernel_preconditioner,
    pivoted_cholesky,
)
from .reverse import cholesky_reverse
from .triangle import lower_triangle_indices
from .ulisse import (
    ULISSEResult,
    lowrank_grad_contract,
    rademacher_probes,
    ulisse_solve,
)

__all__ = [
    "add_to_diagonal",
    "lower_triangle_indices",
    "cholesky",
    "cho_solve",
    "cho_inverse",
    "log_det_from_cholesky",
    "triangular_solve",
    "inverse_congruence",
    "cholesky_reverse",
    "CGResult",
    "batched_cg",
    "kernel_operator",
    "pivoted_cholesky",
    "LowRankPreconditioner",
    "kernel_preconditioner",
    "ULISSEResult",
    "ulisse_solve",
    "rademacher_probes",
    "lowrank_grad_contract",
]


def __getattr__(name):
    # The GP gradient moved to skgp_bayes.targets; the old name still
    # resolves (through the pickle shim in linalg.ulisse), on access only.
    if name == "StochasticMarginalGradient":
        from .ulisse import __getattr__ as moved

        return moved(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
