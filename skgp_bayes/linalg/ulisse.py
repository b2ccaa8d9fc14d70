"""ULISSE: conjugate gradients stopped early without bias (seed 002, section 4).

CG writes the solution as a sum of increments, ``s = s_0 + delta_1 + delta_2
+ ...``. ULISSE adds the increments plainly until the residual norm falls to
the early-stop threshold ``q * sqrt(n)``; after that, before the ``j``-th
further increment, it continues with probability ``1 / w_j``,
``w_j = exp(beta j)``, and adds the increment multiplied by
``W_j = w_1 ... w_j``. Increment ``j`` is therefore kept with probability
``1 / W_j`` and weighted by its inverse, so the expectation of the estimate
is the CG solution: the estimate is unbiased.

Left unbounded, the weights ``W_j = exp(beta j (j + 1) / 2)`` grow faster
than CG's increments shrink (geometrically), so the second moment
``sum_j W_j |delta_j|^2`` diverges but for the truncation at CG convergence:
the estimate is heavy-tailed, and a rare long continuation gives a solution
thousands of times its typical size. ``max_random_steps`` bounds it: after
``J`` randomised steps the weight stays at ``W_J`` and CG runs on to full
tolerance with every increment added. Reaching step ``J`` has probability
``1 / W_J`` and the deterministic tail is the exact remainder, so the
expectation is unchanged (still the CG solution), while every weight is at
most ``W_J`` and the rare expensive finish costs ``1 / W_J`` of a full solve
on average.

Warm starts keep the estimate unbiased. Started from ``x_0``, CG's
increments sum to ``s - x_0``, and the estimate is ``x_0`` plus the
weighted increments; for a fixed ``x_0`` the argument above gives
``E[estimate] = x_0 + (s - x_0) = s`` whatever the starting residual. If
the start is already below the threshold, the draws begin before the first
increment (the estimate is ``x_0`` itself with probability
``1 - exp(-beta)``), which changes only the variance. Across the steps of a
sampler ``x_0`` is random: the plain CG iterate of the previous call, which
depends on that call's parameters, probes and stopping draws. What the
argument needs is that it is fixed given the past while the current call's
uniforms are fresh, and they are (a new draw per estimate per iteration).
Conditioning on the past, ``E[estimate | past] = s`` for every past, so by
the tower rule the estimate is unbiased unconditionally too; the two
stopping draws on one CG run remain independent given the past (one
deterministic CG path from ``x_0``, independent uniforms), which keeps
their product unbiased for the quadratic term. ``x_0`` only has to be a
function of what came before; it may be as far from ``s`` as it likes, which
costs iterations, not bias.

:class:`~skgp_bayes.targets.StochasticMarginalGradient` uses it for the
gradient of the log marginal likelihood of a GP (seed 002, eq. 9) with
Rademacher (Hutchinson) probes for the trace term and two independent
stopping draws on one CG run for the quadratic term, whose two factors must
be independent for the product to be unbiased. A pivoted-Cholesky
preconditioner (optional) makes the CG increments shrink fast, so that few
of them are randomised.
"""

import numpy as np

from .._warnings import warn_user
from ..exceptions import SolverConvergenceWarning
from .cg import CGIteration
from .cg import to_host as _host

__all__ = [
    "ULISSEResult",
    "ulisse_solve",
    "rademacher_probes",
    "lowrank_grad_contract",
]

# Rows of X per block in the low-rank gradient contraction: a block of the
# weight matrix (rows x n) stays below a few tens of MB for n ~ 25,000.
_CONTRACT_ROWS = 256


def default_budget(n):
    return max(2 * n, 100)


def rademacher_probes(rng, n, k, xp=np):
    """Probe vectors with independent entries ``+1`` or ``-1``.

    ``E[r r'] = I``, so ``r' A r`` estimates ``trace(A)`` without bias
    (Hutchinson), with a smaller variance than Gaussian probes.

    Parameters
    ----------
    rng : numpy.random.Generator or RandomState
        Draws happen in NumPy whatever the backend.
    n, k : int
        Length and number of probes.
    xp : module, default=numpy
        Array module of the result.

    Returns
    -------
    array of shape (n, k)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import rademacher_probes
    >>> r = rademacher_probes(np.random.default_rng(0), 4, 2)
    >>> sorted(set(r.ravel().tolist()))
    [-1.0, 1.0]
    """
    bits = rng.integers(0, 2, size=(n, k)) if hasattr(rng, "integers") else None
    if bits is None:
        bits = rng.randint(0, 2, size=(n, k))
    return xp.asarray(2.0 * bits - 1.0)


class ULISSEResult:
    """Outcome of :func:`ulisse_solve`.

    Attributes
    ----------
    estimates : array of shape (n, m)
        Unbiased estimates of the solutions; column ``e`` solves the system
        of right-hand side ``owner[e]``.
    owner : ndarray of int of shape (m,)
    x : array of shape (n, k)
        Plain CG iterate of every column when it stopped, a good warm start
        for a nearby system.
    n_iter : int
        CG iterations (block matrix-vector products) run.
    n_iter_early : ndarray of shape (k,)
        Iteration at which each column reached the early-stop threshold
        (``-1`` if it never did).
    residual : ndarray of shape (k,)
        Final relative residual ``|b - A x| / |b|`` of each column's plain
        iterate.
    weights : ndarray of shape (m,)
        Importance weight ``W_j`` of each estimate's last increment (1 for an
        estimate that never passed the early-stop threshold); at most
        ``exp(beta J (J + 1) / 2)`` with ``J = max_random_steps``.
    unfinished : int
        Randomised continuations still drawing when the budget ran out;
        those estimates are biased.
    unfinished_residual : float
        Largest relative residual among the columns of those continuations
        (0 when none).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import ulisse_solve
    >>> rng = np.random.default_rng(0)
    >>> res = ulisse_solve(lambda V: 2.0 * V, np.ones((3, 1)), rng=rng)
    >>> res.estimates.shape
    (3, 1)
    """

    def __init__(
        self,
        estimates,
        owner,
        x,
        n_iter,
        n_iter_early,
        residual,
        weights=None,
        unfinished=0,
        unfinished_residual=0.0,
    ):
        self.estimates = estimates
        self.owner = owner
        self.x = x
        self.n_iter = n_iter
        self.n_iter_early = n_iter_early
        self.residual = residual
        self.weights = np.ones(owner.shape[0]) if weights is None else weights
        self.unfinished = unfinished
        self.unfinished_residual = unfinished_residual


# Long because the docstring documents 14 parameters; the stopping loop reads whole.
def ulisse_solve(
    matvec,
    B,
    *,
    copies=1,
    x0=None,
    q=1.0,
    beta=1.0,
    max_random_steps=None,
    tol=1e-10,
    max_iter=None,
    rng,
    xp=np,
    warn=True,
    precondition=None,
):
    """Unbiased early-stopped CG solves of ``A X = B`` (ULISSE).

    Parameters
    ----------
    matvec : callable
        ``matvec(V)`` returns ``A @ V``; ``A`` symmetric positive definite.
    B : array of shape (n, k)
        Right-hand sides.
    copies : int or array-like of int of shape (k,), default=1
        Independent stopping draws per column, all from one CG run.
    x0 : array of shape (n, k), optional
        Warm start. The estimates stay unbiased for any ``x0`` fixed before
        this call's draws (module notes); a start close to the solution
        saves the iterations before the early-stop threshold.
    q : float, default=1.0
        Early-stop threshold ``q * sqrt(n)`` on the residual norm. ``q=0``
        gives plain CG to ``tol``.
    beta : float, default=1.0
        Rate of ``w_j = exp(beta j)``; larger values stop sooner after the
        threshold (fewer iterations, more variance).
    max_random_steps : int or None, default=None
        ``J``: randomised continuation steps after which an estimate stops
        drawing, keeps its weight ``W_J = exp(beta J (J + 1) / 2)`` and takes
        every further increment until ``tol`` (still unbiased; see the module
        notes). It bounds every weight by ``W_J`` and so the estimate's
        variance. ``None`` draws until ``tol`` (unbounded weights, heavy
        tails); ``0`` is plain CG to ``tol``.
    tol : float, default=1e-10
        Relative residual at which a column counts as solved exactly and the
        randomised continuation ends (later increments are negligible).
    max_iter : int, optional
        Budget of CG iterations; ``max(2 n, 100)`` by default, since in
        floating point an ill-conditioned system can need more than ``n``
        and an estimate at the cap must reach ``tol``. Running out while an
        estimate is unfinished makes it biased, so a warning says so.
    rng : numpy.random.Generator or RandomState
        Source of the stopping draws.
    xp : module, default=numpy
    warn : bool, default=True
    precondition : callable, optional
        ``precondition(R) = P^-1 R``: the increments are those of
        preconditioned CG, which shrink faster, so fewer are randomised and
        their weighted sum varies less. Unbiasedness does not depend on it.

    Returns
    -------
    ULISSEResult

    Warns
    -----
    SolverConvergenceWarning
        When the budget runs out before every randomised continuation ended;
        the message gives the residual reached.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import ulisse_solve
    >>> A = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> b = np.array([[1.0], [2.0]])
    >>> rng = np.random.default_rng(0)
    >>> draws = [ulisse_solve(lambda V: A @ V, b, q=1.0, rng=rng).estimates[:, 0]
    ...          for _ in range(4000)]
    >>> bool(np.allclose(np.mean(draws, axis=0), np.linalg.solve(A, b)[:, 0],
    ...                  atol=0.05))
    True
    """
    n, k = B.shape
    copies = np.broadcast_to(np.asarray(copies, dtype=int), (k,))
    owner = np.repeat(np.arange(k), copies)
    m = owner.size
    max_iter = default_budget(n) if max_iter is None else int(max_iter)
    cap = np.iinfo(np.int64).max if max_random_steps is None else max_random_steps
    if cap < 0:
        raise ValueError(f"max_random_steps must be >= 0, got {max_random_steps}.")
    state = CGIteration(matvec, B, x0, xp, precondition)
    b_norm = np.sqrt(_host(xp.sum(B * B, axis=0)))
    solved_at = tol * b_norm
    early_at = q * np.sqrt(n)
    owner_dev = xp.asarray(owner)
    estimates = state.x[:, owner_dev].copy()
    n_iter_early = np.where(state.residual_norm <= early_at, 0, -1)
    # Per estimate: steps taken past the threshold (-1 before it), current
    # weight w_1 ... w_j, and whether it still draws.
    steps = np.where(n_iter_early[owner] == 0, 0, -1)
    weight = np.ones(m)
    alive = state.residual_norm[owner] > solved_at[owner]
    while alive.any() and state.n_iter < max_iter:
        columns = np.zeros(k, dtype=bool)
        columns[owner[alive]] = True
        delta = state.step(columns)
        # One uniform per estimate per iteration, used or not, keeps the
        # stream of draws the same whatever the stopping pattern.
        u = rng.random(m) if hasattr(rng, "random") else rng.random_sample(m)
        # Estimates at the cap take the increment with their frozen weight.
        past = alive & (steps >= 0) & (steps < cap)
        steps[past] += 1
        with np.errstate(over="ignore"):
            keep_prob = np.exp(-beta * steps[past])
            kept = u[past] < keep_prob
            new_weight = weight[past] * np.where(kept, 1.0 / keep_prob, 1.0)
        weight[past] = new_weight
        still = alive.copy()
        still[np.flatnonzero(past)[~kept]] = False
        coef = np.where(still, weight, 0.0)
        estimates += delta[:, owner_dev] * xp.asarray(coef)
        residual = state.residual_norm
        reached = (n_iter_early < 0) & (residual <= early_at)
        n_iter_early[reached] = state.n_iter
        steps[(steps < 0) & reached[owner]] = 0
        alive = still & (residual[owner] > solved_at[owner]) & np.isfinite(weight)
    unfinished, worst = int(alive.sum()), 0.0
    if unfinished:
        worst = float(np.max(state.residual_norm[owner[alive]] / b_norm[owner[alive]]))
    if warn and unfinished:
        _warn_unfinished(max_iter, unfinished, worst, tol)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(b_norm > 0, state.residual_norm / b_norm, 0.0)
    return ULISSEResult(
        estimates,
        owner,
        state.x,
        state.n_iter,
        n_iter_early,
        relative,
        weight,
        unfinished,
        worst,
    )


def _warn_unfinished(max_iter, unfinished, worst, tol):
    warn_user(
        f"ULISSE ran out of its budget of {max_iter} CG iterations with "
        f"{unfinished} randomised continuations unfinished (relative "
        f"residual {worst:.3g}, tolerance {tol:.3g}); those estimates are "
        "biased. Increase max_iter.",
        SolverConvergenceWarning,
        worst=worst,
    )


def lowrank_grad_contract(adapter, theta, X, U, V):
    """``g_j = sum_ab (U V')_ab dK(X, X)_ab / dtheta_j`` without forming ``U V'``.

    ``K(X, X)`` is the Gram matrix, WhiteKernel noise included. The weights
    are built one block of rows at a time and contracted by the adapter's
    cross-gradient routine; the cross kernel lacks the WhiteKernel term on
    the diagonal, which the diagonal gradient puts back. Memory is
    ``O(rows * n)``.

    Parameters
    ----------
    adapter : KernelAdapter
    theta : ndarray of shape (n_params,)
    X : ndarray of shape (n, d)
    U, V : ndarray of shape (n, r)

    Returns
    -------
    g : ndarray of shape (n_params,)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.linalg import lowrank_grad_contract
    >>> adapter = KernelAdapter(RBF() + WhiteKernel(0.1))
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5, 1))
    >>> U, V = rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    >>> theta = adapter.kernel.theta
    >>> W = U @ V.T
    >>> np.allclose(lowrank_grad_contract(adapter, theta, X, U, V),
    ...             adapter.grad_contract(theta, X, 0.5 * (W + W.T)))
    True
    """
    n = X.shape[0]
    if n <= _CONTRACT_ROWS:
        # One block: the symmetric Gram contraction is a single call.
        W = U @ V.T
        return adapter.grad_contract(theta, X, 0.5 * (W + W.T))
    g = np.zeros(adapter.n_params)
    w_diag = np.einsum("ij,ij->i", U, V)
    for i0 in range(0, n, _CONTRACT_ROWS):
        rows = slice(i0, min(n, i0 + _CONTRACT_ROWS))
        g += adapter.cross_grad_contract(theta, X[rows], X, U[rows] @ V.T)
        g -= adapter.cross_grad_contract(theta, X[rows], X[rows], np.diag(w_diag[rows]))
    g += adapter.diag_grad(theta, X).T @ w_diag
    return g


def __getattr__(name):
    # Objects pickled before the GP gradient moved to targets.stochastic name
    # it here. Resolved on access, so that importing linalg imports no target.
    if name == "StochasticMarginalGradient":
        from ..targets.stochastic import StochasticMarginalGradient

        return StochasticMarginalGradient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
