"""The gradient solvers of :class:`~skgp_bayes.SGLDGPRegressor`'s chains.

A solver says where a chain's gradient comes from and what the chain makes
of it: the target it builds (once per chain), whether the engine may
Metropolis-adjust its proposals (only with an exact log density), how a
failed evaluation reaches the engine, the random state a continued chain
needs, and the linear-solver record the chain reports. The estimator picks
one with :func:`choose_solver` at the start of ``fit``; the chains never
ask which one they run.
"""

import numpy as np

from . import _config
from ._config import check_dense_bytes
from .predictive.exact import CGGPDraws, ExactGPDraws
from .targets import (
    ArrayExactMarginalTarget,
    ExactMarginalTarget,
    StochasticMarginalGradient,
    StochasticTraceTarget,
)

__all__ = [
    "CholeskySolver",
    "SOLVER_PARAMS",
    "StochasticTraceSolver",
    "ULISSESolver",
    "choose_solver",
    "predictive_draws",
]

# solver="auto" takes exact gradients (a Cholesky factorisation per iteration)
# up to this many training points; doc/sgld.rst gives the reasoning. The
# factorising solvers hold EXACT_MATRICES dense n x n matrices (K and its
# inverse, or K and its factor), which "auto" also asks to fit in the
# quarter of MAX_DENSE_BYTES that storage="auto" allows a stored K.
CHOLESKY_GRADIENT_MAX_N = 5000
EXACT_MATRICES = 2
# Predictions factorise one n x n matrix per draw up to this many training
# points (predict_solver="auto"); beyond it they use CG solves.
CHOLESKY_PREDICT_MAX_N = 5000
# The estimator parameters a solver is built from (choose_solver's keywords).
SOLVER_PARAMS = (
    "n_probes",
    "probe_refresh",
    "early_stop_q",
    "beta",
    "max_random_steps",
    "cg_tol",
    "cg_preconditioner_rank",
    "cg_max_iter",
    "storage",
)


class _RejectWhereKFails:
    """A target whose failed evaluations the engine can survive.

    Where the kernel matrix cannot be factorised (or the arithmetic
    overflows), an exception would end the chain. MALA rejects a proposal
    whose log density is ``-inf``; SGLD treats a NaN gradient as a rejected
    update, halves its step and tries again.
    """

    def __init__(self, logp_and_grad, failed_value):
        self.logp_and_grad = logp_and_grad
        self.failed_value = failed_value

    def __call__(self, params):
        try:
            return self.logp_and_grad(params)
        except (np.linalg.LinAlgError, FloatingPointError):
            return self.failed_value, np.full(params.shape[0], np.nan)


def _no_linear_solves(n_gradients):
    """The linear-solver record of a chain whose solves are all direct."""
    return {
        "cg_iterations": np.zeros(0, dtype=np.int64),
        "max_residual": 0.0,
        "n_gradients": n_gradients,
        "budget_exhausted": 0,
        "budget_residual": 0.0,
    }


class CholeskySolver:
    """Exact log posterior and gradient from one factorisation (MALA).

    Attributes
    ----------
    name : str
    metropolis : bool
        The log density is exact, so every proposal is Metropolis-adjusted.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._sgld_solvers import CholeskySolver
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> X = np.linspace(0, 1, 10)[:, None]
    >>> data = (KernelAdapter(RBF()), X, np.sin(X[:, 0]), None, None)
    >>> solver = CholeskySolver()
    >>> target = solver.new_target(data, np.random.default_rng(0), np)
    >>> value, grad = solver.guarded(target)(np.array([0.0, -2.0]))
    >>> grad.shape
    (2,)
    """

    name = "cholesky"
    metropolis = True

    def new_target(self, data, rng, xp):
        """The chain's target over ``data = (adapter, X, y, prior_set,
        log_noise)``; it draws nothing, so ``rng`` is unused. With an array
        module other than NumPy (a GPU) and a recognised kernel, the target
        is evaluated there."""
        if xp is not np and data[0].is_fast:
            return ArrayExactMarginalTarget(*data, xp=xp)
        return ExactMarginalTarget(*data)

    def resumed_target(self, data, state, xp):
        """The target of a continued chain (it keeps no state)."""
        return self.new_target(data, None, xp)

    def guarded(self, target):
        """``target.logp_and_grad`` with ``-inf`` where ``K`` fails."""
        return _RejectWhereKFails(target.logp_and_grad, -np.inf)

    def state(self, target):
        """None: an exact target has no random stream to continue."""
        return None

    def record(self, target, n_iter):
        """No CG: an empty record, one gradient per iteration."""
        return _no_linear_solves(n_iter)


class ULISSESolver:
    """Unbiased stochastic gradients from early-stopped CG (ULISSE), or from
    CG run to tolerance (``name="cg"``, the reference); unadjusted Langevin.

    Parameters
    ----------
    name : {"ulisse", "cg"}
    backend : {"numpy", "cupy"}
        The array module's name, for the record; the chain passes the module.
    **options
        The keyword arguments of
        :class:`~skgp_bayes.targets.StochasticMarginalGradient` (``n_probes``,
        ``probe_refresh``, ``q``, ``beta``, ``max_random_steps``, ``tol``,
        ``preconditioner_rank``, ``max_iter``, ``storage``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._sgld_solvers import ULISSESolver
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> X = np.linspace(0, 1, 10)[:, None]
    >>> data = (KernelAdapter(RBF()), X, np.sin(X[:, 0]), None, None)
    >>> solver = ULISSESolver("cg", n_probes=4)
    >>> target = solver.new_target(data, np.random.default_rng(0), np)
    >>> _ = solver.guarded(target)(np.array([0.0, -2.0]))
    >>> solver.record(target, 1)["n_gradients"]
    1
    """

    metropolis = False

    def __init__(self, name, **options):
        self.name = name
        self.options = options

    def new_target(self, data, rng, xp):
        """A fresh stochastic gradient drawing from ``rng``, solving in ``xp``."""
        return StochasticMarginalGradient(
            *data, rng=rng, solver=self.name, xp=xp, **self.options
        )

    def resumed_target(self, data, state, xp):
        """The gradient of a continued chain: probes, warm-start solutions
        and random stream as :meth:`state` left them."""
        target = self.new_target(data, None, xp)
        target.set_state(state)
        return target

    def guarded(self, target):
        """The gradient with NaN where ``K`` fails (the value is NaN anyway)."""
        # Through __call__, the method that defines the gradient:
        # logp_and_grad is an alias bound to it when the class was made, so
        # a __call__ replaced on the class would not be seen through it.
        return _RejectWhereKFails(target, float("nan"))

    def state(self, target):
        """What :meth:`resumed_target` needs."""
        return target.get_state()

    def record(self, target, n_iter):
        """Block CG iterations per gradient, residuals and budget overruns."""
        return {
            "cg_iterations": np.asarray(target.cg_iterations, dtype=np.int64),
            "max_residual": target.max_residual,
            "n_gradients": len(target.cg_iterations),
            "budget_exhausted": target.budget_exhausted,
            "budget_residual": target.budget_residual,
        }


class StochasticTraceSolver:
    """Exact value and data term, Hutchinson trace term, from one Cholesky
    factorisation per iteration; unadjusted Langevin, since the gradient is
    noisy (:class:`~skgp_bayes.targets.StochasticTraceTarget`).

    Parameters
    ----------
    n_probes : int
        Rademacher probes of the trace term, drawn afresh at every
        iteration and solved with the iteration's factor.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._sgld_solvers import StochasticTraceSolver
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> X = np.linspace(0, 1, 10)[:, None]
    >>> data = (KernelAdapter(RBF()), X, np.sin(X[:, 0]), None, None)
    >>> solver = StochasticTraceSolver(n_probes=4)
    >>> target = solver.new_target(data, np.random.default_rng(0), np)
    >>> value, grad = solver.guarded(target)(np.array([0.0, -2.0]))
    >>> solver.metropolis, grad.shape
    (False, (2,))
    """

    name = "stochastic_trace"
    metropolis = False

    def __init__(self, n_probes):
        self.n_probes = n_probes

    def new_target(self, data, rng, xp):
        """The target drawing its probes from ``rng``; it solves on the host
        (its factorisation is LAPACK's), so ``xp`` is unused."""
        return StochasticTraceTarget(*data, rng=rng, n_probes=self.n_probes)

    def resumed_target(self, data, state, xp):
        """The target of a continued chain, drawing on from its generator."""
        return self.new_target(data, state["rng"], xp)

    def guarded(self, target):
        """``target.logp_and_grad`` with a NaN gradient where ``K`` fails."""
        return _RejectWhereKFails(target.logp_and_grad, float("nan"))

    def state(self, target):
        """The probes' generator, the only state the target keeps."""
        return {"rng": target.rng}

    def record(self, target, n_iter):
        """No CG: an empty record, one gradient per iteration."""
        return _no_linear_solves(n_iter)


def choose_solver(solver, n_samples, **params):
    """The gradient solver for ``n_samples`` training points.

    Parameters
    ----------
    solver : {"auto", "cholesky", "ulisse", "cg", "stochastic_trace"}
        ``"auto"`` takes ``"cholesky"`` up to 5000 points when its two dense
        ``n x n`` matrices fit in a quarter of
        ``skgp_bayes._config.MAX_DENSE_BYTES``, ``"ulisse"`` beyond.
    n_samples : int
    **params
        The estimator's values of :data:`SOLVER_PARAMS`.

    Returns
    -------
    CholeskySolver, ULISSESolver or StochasticTraceSolver

    Raises
    ------
    MemoryError
        When a factorising solver is asked for explicitly and its matrices
        exceed ``MAX_DENSE_BYTES``.

    Examples
    --------
    >>> from skgp_bayes._sgld_solvers import choose_solver
    >>> choose_solver("auto", 100, n_probes=16).name
    'cholesky'
    >>> choose_solver("stochastic_trace", 100, n_probes=16).n_probes
    16
    """
    exact_bytes = EXACT_MATRICES * 8 * n_samples * n_samples
    if solver in ("cholesky", "stochastic_trace"):
        check_dense_bytes(
            exact_bytes,
            f"SGLDGPRegressor(solver={solver!r}) with {n_samples} samples",
            "Use solver='ulisse', whose kernel products need no factorisation.",
        )
    if solver == "auto":
        fits = exact_bytes <= _config.MAX_DENSE_BYTES / 4
        small = n_samples <= CHOLESKY_GRADIENT_MAX_N
        solver = "cholesky" if small and fits else "ulisse"
    if solver == "cholesky":
        return CholeskySolver()
    if solver == "stochastic_trace":
        return StochasticTraceSolver(params["n_probes"])
    return ULISSESolver(
        solver,
        n_probes=params["n_probes"],
        probe_refresh=params["probe_refresh"],
        q=params["early_stop_q"],
        beta=params["beta"],
        max_random_steps=params["max_random_steps"],
        tol=params["cg_tol"],
        preconditioner_rank=params["cg_preconditioner_rank"],
        max_iter=params["cg_max_iter"],
        storage=params["storage"],
    )


def predictive_draws(
    predict_solver, data, thetas, noise, *, tol, storage, rank, backend="numpy"
):
    """The per-draw GP posteriors predictions average over.

    Parameters
    ----------
    predict_solver : {"auto", "cholesky", "cg"}
        ``"auto"``: Cholesky up to 5000 training points, CG beyond.
    data : tuple
        ``(adapter, X, y)`` on the model's scale.
    thetas : ndarray of shape (n_draws, n_kernel_params)
    noise : ndarray of shape (n_draws,)
        Noise variances on the model's scale.
    tol, storage, rank
        CG's relative tolerance, kernel storage and preconditioner rank.
    backend : {"numpy", "cupy"}, default="numpy"
        Where the CG solves run (the host where no GPU is usable).

    Returns
    -------
    ExactGPDraws or CGGPDraws

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._sgld_solvers import predictive_draws
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> X = np.linspace(0, 1, 10)[:, None]
    >>> data = (KernelAdapter(RBF()), X, np.sin(X[:, 0]))
    >>> draws = predictive_draws("auto", data, np.zeros((2, 1)), np.full(2, 0.1),
    ...                          tol=1e-8, storage="auto", rank=0)
    >>> type(draws).__name__
    'ExactGPDraws'
    """
    n_samples = data[1].shape[0]
    use_cg = predict_solver == "cg" or (
        predict_solver == "auto" and n_samples > CHOLESKY_PREDICT_MAX_N
    )
    if use_cg:
        return CGGPDraws(*data, thetas, noise, tol, storage, rank, backend)
    return ExactGPDraws(*data, thetas, noise)
