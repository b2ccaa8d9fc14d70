"""SGLD over GP hyperparameters with unbiased early-stopped CG (seed 002)."""

import time
import warnings
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from ._backend import get_array_module
from ._exact_gp import ExactGPRegressorMixin
from ._predictive import (
    ExactGPDraws,
)
from ._validation import (
    VersionedStateMixin,
    atomic_feature_state,
    check_input_magnitude,
    target_scale,
)
from .diagnostics import effective_sample_size, split_rhat
from .exceptions import SamplerWarning
from .inference import run_sgld, sgld_schedule
from .linalg import StochasticMarginalGradient, batched_cg, kernel_operator
from .stein import _find_map, _laplace_cov
from .targets import ExactMarginalTarget

__all__ = ["SGLDGPRegressor"]

# Predictions factorise one n x n matrix per draw up to this many training
# points ("auto"); beyond it they use CG solves.
_CHOLESKY_MAX_N = 5000
# Query points per block of CG solves for predictive variances.
_CG_QUERY_BLOCK = 128
# Fewer kept draws per chain than this make R-hat and ESS unreliable.
_MIN_DIAGNOSTIC_DRAWS = 100
_RHAT_WARN = 1.1


class _SafeGradient:
    """The stochastic gradient, with NaN where the kernel matrix fails.

    The engine treats a NaN gradient as a rejected update, halves the step
    and tries again; an exception would end the chain.
    """

    def __init__(self, gradient):
        self.gradient = gradient

    def __call__(self, params):
        try:
            return self.gradient(params)
        except (np.linalg.LinAlgError, FloatingPointError):
            return float("nan"), np.full(params.shape[0], np.nan)


def _run_chain(
    adapter, X, y, prior_set, log_noise, start, seed, options, M, bounds, verbose
):
    grad_rng, noise_rng = (np.random.default_rng(s) for s in seed.spawn(2))
    xp = get_array_module(options["backend"])
    gradient = StochasticMarginalGradient(
        adapter,
        X,
        y,
        prior_set,
        log_noise,
        rng=grad_rng,
        n_probes=options["n_probes"],
        probe_refresh=options["probe_refresh"],
        q=options["q"],
        beta=options["beta"],
        solver=options["solver"],
        tol=options["tol"],
        max_iter=options["max_iter"],
        storage=options["storage"],
        xp=xp,
    )
    with warnings.catch_warnings(record=True) as caught:
        # CG budget warnings of single gradients are summarised once, in fit.
        warnings.simplefilter("always")
        result = run_sgld(
            _SafeGradient(gradient),
            start,
            n_iter=options["n_iter"],
            a=options["a"],
            b=options["b"],
            gamma=options["gamma"],
            preconditioner=M,
            freeze_threshold=options["freeze_threshold"],
            freeze_window=options["freeze_window"],
            bounds=bounds,
            rng=noise_rng,
            verbose=verbose,
            print_fn=lambda msg: print(
                f"[SGLDGPRegressor chain {options['chain']}] {msg}"
            ),
        )
    messages = [str(w.message) for w in caught if issubclass(w.category, Warning)]
    return {
        "samples": result.samples,
        "step_sizes": result.step_sizes,
        "frozen_at": result.frozen_at,
        "n_rejected": result.n_rejected,
        "cg_iterations": np.asarray(gradient.cg_iterations, dtype=np.int64),
        "max_residual": gradient.max_residual,
        "warnings": messages,
    }


class _CGGPDraws:
    """Per-draw GP posteriors through CG solves, for data too large to factorise.

    Same interface as :class:`~skgp_bayes._predictive.ExactGPDraws`
    (``moments``, ``noise_variances``, ``n_draws``); solves run to ``tol``
    from a zero start, so predictions are deterministic.
    """

    def __init__(self, adapter, X, y, kernel_thetas, noise_variances, tol, storage):
        self.adapter = adapter
        self.X = X
        self.y = y
        self.kernel_thetas = np.asarray(kernel_thetas, dtype=np.float64)
        self.noise_variances = np.asarray(noise_variances, dtype=np.float64)
        self.tol = tol
        self.storage = storage
        self.alphas = np.empty((self.n_draws, X.shape[0]))
        for j in range(self.n_draws):
            self.alphas[j] = batched_cg(self._operator(j), y, tol=tol).x

    @property
    def n_draws(self):
        return self.kernel_thetas.shape[0]

    def factor(self, j):
        """A solver ``rhs -> (K_j + s2_j I)^-1 rhs`` by CG, in place of a factor.

        The pathwise sampler accepts a callable wherever it would solve with
        a Cholesky factor, so function samples need no factorisation here.
        """
        operator = self._operator(j)
        return lambda rhs: batched_cg(operator, rhs, tol=self.tol).x

    def _operator(self, j):
        op, _ = kernel_operator(
            self.adapter,
            self.kernel_thetas[j],
            self.X,
            self.noise_variances[j],
            storage=self.storage,
        )
        return op

    def moments(self, X_query, *, full_cov=False, draws=None):
        draws = range(self.n_draws) if draws is None else draws
        m = X_query.shape[0]
        means = np.empty((len(draws), m))
        spread = np.empty((len(draws), m, m)) if full_cov else np.empty((len(draws), m))
        for out, j in enumerate(draws):
            theta = self.kernel_thetas[j]
            op = self._operator(j)
            if full_cov:
                Ks = self.adapter.cross(theta, X_query, self.X)
                means[out] = Ks @ self.alphas[j]
                V = batched_cg(op, np.ascontiguousarray(Ks.T), tol=self.tol).x
                cov = self.adapter.gram(theta, X_query) - Ks @ V
                spread[out] = 0.5 * (cov + cov.T)
                continue
            for start in range(0, m, _CG_QUERY_BLOCK):
                rows = slice(start, min(m, start + _CG_QUERY_BLOCK))
                Ks = self.adapter.cross(theta, X_query[rows], self.X)
                means[out, rows] = Ks @ self.alphas[j]
                V = batched_cg(op, np.ascontiguousarray(Ks.T), tol=self.tol).x
                prior = self.adapter.diag(theta, X_query[rows])
                spread[out, rows] = np.maximum(
                    prior - np.einsum("ij,ji->i", Ks, V), 0.0
                )
        return means, spread


class SGLDGPRegressor(
    ExactGPRegressorMixin, VersionedStateMixin, RegressorMixin, BaseEstimator
):
    """Gaussian-process regression sampling hyperparameters by SGLD with ULISSE.

    Draws samples from the exact posterior ``p(theta | y)`` of the kernel
    hyperparameters and the noise variance of a full GP (no inducing points)
    without factorising the kernel matrix. Stochastic gradient Langevin
    dynamics (Welling and Teh) needs only unbiased gradients of the log
    marginal likelihood, and those need only linear solves: Rademacher probes
    estimate the trace term, and every solve is one column of a single
    batched conjugate-gradient run, stopped early at residual
    ``early_stop_q * sqrt(n)`` and continued past it with random stopping so
    that it stays unbiased (ULISSE, Filippone and Engler). Predictions average
    the GP posteriors of thinned samples.

    Parameters
    ----------
    kernel : sklearn kernel, default=ConstantKernel(1.0) * RBF(1.0)
        Prior covariance; its values start the MAP search and its bounds
        (log scale) box the chains.
    priors : dict, default=None
        Hyperparameter name (``"k2__length_scale"``, ``"noise_variance"``...)
        to a prior on the natural scale (:class:`skgp_bayes.priors.Prior` or a
        frozen ``scipy.stats`` distribution). Unnamed ones get
        ``Gamma(shape=1, scale=2)``.
    noise_variance : float, default=0.1
        Initial noise variance, on the scale of the (normalised) target.
    noise_variance_bounds : pair of float or "fixed", default=(1e-6, 1e3)
        Box for the noise variance; ``"fixed"`` keeps ``noise_variance``.
    n_iter : int, default=2000
        SGLD iterations per chain.
    step_size_start, step_size_end : float, default=0.1, 1e-4
        The step size ``eps_t = a (b + t)^-step_size_gamma`` runs from
        ``step_size_start`` at the first iteration to ``step_size_end`` at
        the last (until it is frozen).
    step_size_gamma : float, default=1.0
        Decay exponent of the schedule; 0 keeps ``step_size_start``.
    freeze_threshold : float or None, default=0.002
        Freeze the step size when ``eps_t / 4 lambda_max(M^1/2 V M^1/2)``
        falls below it, ``V`` being the covariance of the stochastic
        gradients over ``freeze_window`` iterations (seed 002, eq. 7). ``None``
        never freezes.
    freeze_window : int, default=100
    preconditioner : {"laplace", "identity"}, default="laplace"
        ``"laplace"``: ``M`` is the inverse negative Hessian of the log
        posterior at its mode on a random subset of ``map_subset`` points;
        chains start from ``N(MAP, M)``. ``"identity"``: ``M = I``, chains
        start at that MAP.
    map_subset : int, default=500
        Points used for the MAP and Hessian (all if fewer).
    n_probes : int, default=4
        Rademacher probes of the trace term.
    probe_refresh : int, default=20
        Iterations between redraws of the probes; in between, every solve
        starts from the previous iteration's solution.
    early_stop_q : float, default=0.1
        ULISSE's early-stop threshold is ``early_stop_q * sqrt(n)`` on the
        residual norm, i.e. a root-mean-square residual of ``early_stop_q``
        on the standardised target. Since ``|y| = sqrt(n)`` after
        standardisation, values of 1 or more (seed 002 used 1) start the
        randomised continuation at once, whose heavy-tailed weights then make
        the gradients very noisy. 0 solves to ``cg_tol``.
    beta : float, default=0.1
        Rate of ULISSE's continuation weights ``exp(beta j)``. Seed 002 used
        1; but the CG residual is not monotone, so a solve can cross the
        threshold while later increments are still large, and with
        ``beta=1`` the weight ``exp(beta j (j + 1) / 2)`` of a rare long
        continuation then gives gradients thousands of times their typical
        size (seen as jumps of whole chains). ``beta=0.1`` costs about one
        more CG iteration per gradient on small problems and removed those
        jumps.
    solver : {"ulisse", "cg"}, default="ulisse"
        ``"cg"`` solves every system to ``cg_tol`` (slower; the reference).
    cg_tol : float, default=1e-8
        Relative residual at which a solve counts as exact.
    cg_max_iter : int or None, default=None
        CG budget per gradient; ``n`` by default.
    storage : {"auto", "dense", "matrix_free"}, default="auto"
        ``"dense"`` stores the kernel matrix for the CG products (fast, n^2
        memory); ``"matrix_free"`` regenerates it in every product (O(n)
        memory); ``"auto"`` stores it when it fits in a quarter of
        ``skgp_bayes._config.MAX_DENSE_BYTES``.
    n_chains : int, default=2
    burn_in : int or None, default=None
        Iterations discarded per chain; by default those before the step
        size froze (the last chain to freeze), or the first half when a chain
        never froze.
    thin : int, default=10
        Keep every ``thin``-th iteration after the burn-in.
    n_predict_draws : int, default=30
        Samples (evenly spaced over the pooled kept draws) whose GP
        posteriors form the predictive mixture.
    predict_solver : {"auto", "cholesky", "cg"}, default="auto"
        How predictions solve with the training covariance: Cholesky up to
        5000 training points, CG beyond (``"auto"``).
    normalize_y : bool, default=True
        Standardise the target; priors and noise bounds then refer to the
        standardised scale.
    n_jobs : int or None, default=None
        Chains run in parallel processes (joblib); results do not depend on
        it.
    backend : {"numpy", "cupy"}, default="numpy"
        Array module of the CG solves and ``K @ V`` products. ``"cupy"``
        stores the kernel matrix on the GPU (built on the CPU); fitted
        attributes stay NumPy arrays.
    random_state : int, RandomState instance or None, default=None
        The same seed gives bit-identical samples, whatever ``n_jobs``.
    verbose : int, default=0
        Print progress lines when positive.

    Attributes
    ----------
    samples_ : ndarray of shape (n_chains, n_kept, n_params)
        Kept (post burn-in, thinned) samples in log coordinates; columns
        follow ``param_names_``.
    chains_ : ndarray of shape (n_chains, n_iter, n_params)
        Every iteration of every chain (the trace).
    step_sizes_ : ndarray of shape (n_chains, n_iter)
    frozen_at_ : list of int or None
        Iteration at which each chain froze its step size.
    burn_in_ : int
    param_names_ : list of str
    rhat_ : ndarray of shape (n_params,)
        Rank-normalised split R-hat over chains (NaN with one chain or fewer
        than 100 kept draws per chain; ``diagnostics_["notes"]`` says why).
    ess_ : ndarray of shape (n_params,)
        Effective sample size of the kept draws (NaN likewise).
    map_params_ : ndarray of shape (n_params,)
        MAP on the subset.
    preconditioner_ : ndarray of shape (n_params, n_params)
    kernels_ : list of Kernel
        Kernels of the predictive draws.
    noise_variance_ : ndarray of shape (n_predict_draws,)
        Noise variances of the predictive draws, in the units of ``y``.
    n_iter_ : int
    diagnostics_ : dict
        ``cg_iterations_mean`` (block CG iterations per gradient),
        ``cg_max_residual``, ``n_rejected``, ``rhat``, ``ess``,
        ``fit_time``, ``notes``.
    X_train_, y_train_ : ndarray
        Training data (``y`` on the model's normalised scale).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,)

    See Also
    --------
    SteinGPRegressor : particle posterior by SVGD with exact gradients.

    References
    ----------
    M. Filippone and R. Engler, "Enabling scalable stochastic gradient-based
    inference for Gaussian processes by employing the Unbiased LInear System
    SolvEr (ULISSE)", ICML 2015.

    M. Welling and Y. W. Teh, "Bayesian learning via stochastic gradient
    Langevin dynamics", ICML 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SGLDGPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (40, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(40)
    >>> reg = SGLDGPRegressor(n_iter=100, burn_in=50, random_state=0).fit(X, y)
    >>> reg.samples_.shape  # chains, kept draws (every 10th), parameters
    (2, 5, 3)
    >>> mean, std = reg.predict(X[:3], return_std=True)
    >>> mean.shape
    (3,)
    """

    _parameter_constraints = {
        "kernel": [None, Kernel],
        "priors": [None, dict],
        "noise_variance": [Interval(Real, 0, None, closed="neither")],
        "noise_variance_bounds": [StrOptions({"fixed"}), tuple, list, np.ndarray],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "step_size_start": [Interval(Real, 0, None, closed="neither")],
        "step_size_end": [Interval(Real, 0, None, closed="neither")],
        "step_size_gamma": [Interval(Real, 0, None, closed="left")],
        "freeze_threshold": [None, Interval(Real, 0, None, closed="neither")],
        "freeze_window": [Interval(Integral, 2, None, closed="left")],
        "preconditioner": [StrOptions({"laplace", "identity"})],
        "map_subset": [Interval(Integral, 2, None, closed="left")],
        "n_probes": [Interval(Integral, 1, None, closed="left")],
        "probe_refresh": [Interval(Integral, 1, None, closed="left")],
        "early_stop_q": [Interval(Real, 0, None, closed="left")],
        "beta": [Interval(Real, 0, None, closed="neither")],
        "solver": [StrOptions({"ulisse", "cg"})],
        "cg_tol": [Interval(Real, 0, 1, closed="neither")],
        "cg_max_iter": [None, Interval(Integral, 1, None, closed="left")],
        "storage": [StrOptions({"auto", "dense", "matrix_free"})],
        "n_chains": [Interval(Integral, 1, None, closed="left")],
        "burn_in": [None, Interval(Integral, 0, None, closed="left")],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "n_predict_draws": [Interval(Integral, 1, None, closed="left")],
        "predict_solver": [StrOptions({"auto", "cholesky", "cg"})],
        "normalize_y": ["boolean"],
        "n_jobs": [None, Integral],
        "backend": [StrOptions({"numpy", "cupy"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        kernel=None,
        *,
        priors=None,
        noise_variance=0.1,
        noise_variance_bounds=(1e-6, 1e3),
        n_iter=2000,
        step_size_start=0.1,
        step_size_end=1e-4,
        step_size_gamma=1.0,
        freeze_threshold=0.002,
        freeze_window=100,
        preconditioner="laplace",
        map_subset=500,
        n_probes=4,
        probe_refresh=20,
        early_stop_q=0.1,
        beta=0.1,
        solver="ulisse",
        cg_tol=1e-8,
        cg_max_iter=None,
        storage="auto",
        n_chains=2,
        burn_in=None,
        thin=10,
        n_predict_draws=30,
        predict_solver="auto",
        normalize_y=True,
        n_jobs=None,
        backend="numpy",
        random_state=None,
        verbose=0,
    ):
        self.kernel = kernel
        self.priors = priors
        self.noise_variance = noise_variance
        self.noise_variance_bounds = noise_variance_bounds
        self.n_iter = n_iter
        self.step_size_start = step_size_start
        self.step_size_end = step_size_end
        self.step_size_gamma = step_size_gamma
        self.freeze_threshold = freeze_threshold
        self.freeze_window = freeze_window
        self.preconditioner = preconditioner
        self.map_subset = map_subset
        self.n_probes = n_probes
        self.probe_refresh = probe_refresh
        self.early_stop_q = early_stop_q
        self.beta = beta
        self.solver = solver
        self.cg_tol = cg_tol
        self.cg_max_iter = cg_max_iter
        self.storage = storage
        self.n_chains = n_chains
        self.burn_in = burn_in
        self.thin = thin
        self.n_predict_draws = n_predict_draws
        self.predict_solver = predict_solver
        self.normalize_y = normalize_y
        self.n_jobs = n_jobs
        self.backend = backend
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ fit
    def _options(self):
        if self.step_size_end > self.step_size_start:
            raise ValueError(
                f"step_size_end={self.step_size_end} must not exceed "
                f"step_size_start={self.step_size_start}."
            )
        a, b = sgld_schedule(
            self.step_size_start, self.step_size_end, self.n_iter, self.step_size_gamma
        )
        return {
            "n_iter": self.n_iter,
            "a": a,
            "b": b,
            "gamma": self.step_size_gamma,
            "freeze_threshold": self.freeze_threshold,
            "freeze_window": self.freeze_window,
            "n_probes": self.n_probes,
            "probe_refresh": self.probe_refresh,
            "q": self.early_stop_q,
            "beta": self.beta,
            "solver": self.solver,
            "tol": self.cg_tol,
            "max_iter": self.cg_max_iter,
            "storage": self.storage,
            "backend": self.backend,
        }

    def _preconditioning(self, adapter, X, y, prior_set, log_noise, start, bounds, rng):
        """MAP and preconditioner from a random subset of the data."""
        n = X.shape[0]
        if n > self.map_subset:
            idx = np.sort(rng.choice(n, self.map_subset, replace=False))
            X, y = X[idx], y[idx]
        target = ExactMarginalTarget(adapter, X, y, prior_set, log_noise)
        map_params, result = _find_map(target, start, bounds)
        if self.verbose:
            print(
                f"[SGLDGPRegressor] MAP on {X.shape[0]} points after {result.nit} "
                f"L-BFGS iterations: {target.describe(map_params)}"
            )
        if self.preconditioner == "identity":
            return map_params, np.eye(start.shape[0])
        return map_params, _laplace_cov(target, map_params, bounds)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Run the SGLD chains.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : SGLDGPRegressor
            The fitted estimator.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SGLDGPRegressor
        >>> X = np.linspace(0, 5, 30)[:, None]
        >>> reg = SGLDGPRegressor(n_iter=100, n_chains=1, random_state=0)
        >>> reg.fit(X, np.sin(X[:, 0])).chains_.shape
        (1, 100, 3)
        """
        with atomic_feature_state(self):
            X, y = validate_data(
                self, X, y, dtype=np.float64, order="C", y_numeric=True
            )
            fitted = self._fit(X, y)
        self.__dict__.update(fitted)
        return self

    def _fit(self, X, y):
        t_start = time.perf_counter()
        if X.shape[0] < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 samples to infer "
                f"hyperparameters; got {X.shape[0]} sample."
            )
        check_input_magnitude(X)
        get_array_module(self.backend)  # fail before any work if unusable
        options = self._options()
        y_mean, y_std = target_scale(y, self.normalize_y)
        y_model = (y - y_mean) / y_std
        kernel, adapter, names, bounds, start, prior_set, log_noise = (
            self._hyperparameters()
        )
        rng = check_random_state(self.random_state)
        p = len(names)
        if p == 0:
            raise ValueError(
                "SGLDGPRegressor needs at least one free hyperparameter; every "
                "kernel hyperparameter and the noise variance are fixed."
            )
        map_params, M = self._preconditioning(
            adapter, X, y_model, prior_set, log_noise, start, bounds, rng
        )
        root = np.linalg.cholesky(M)
        starts = map_params + rng.standard_normal((self.n_chains, p)) @ root.T
        if self.preconditioner == "identity":
            starts[:] = map_params
        starts = np.clip(starts, bounds[:, 0], bounds[:, 1])
        seeds = np.random.SeedSequence(rng.randint(np.iinfo(np.int32).max)).spawn(
            self.n_chains
        )
        jobs = (
            delayed(_run_chain)(
                adapter,
                X,
                y_model,
                prior_set,
                log_noise,
                starts[c],
                seeds[c],
                {**options, "chain": c},
                M,
                bounds,
                self.verbose,
            )
            for c in range(self.n_chains)
        )
        runs = Parallel(n_jobs=self.n_jobs)(jobs)
        chains = np.stack([r["samples"] for r in runs])
        frozen_at = [r["frozen_at"] for r in runs]
        notes = []
        if self.burn_in is not None:
            burn = min(self.burn_in, self.n_iter - 1)
        elif all(f is not None for f in frozen_at):
            burn = max(frozen_at) + 1
        else:
            burn = self.n_iter // 2
            if self.freeze_threshold is not None:
                notes.append(
                    "the step size did not freeze in every chain; the first half "
                    "of each chain was discarded"
                )
        burn = min(burn, self.n_iter - 1)
        kept = chains[:, burn :: self.thin]
        rhat, ess = self._diagnostics(kept, notes)
        self._report_warnings(runs, rhat, names)
        pooled = kept.reshape(-1, p)
        pick = np.unique(
            np.linspace(
                0, pooled.shape[0] - 1, min(self.n_predict_draws, pooled.shape[0])
            )
            .round()
            .astype(int)
        )
        draws_params = pooled[pick]
        thetas = draws_params[:, : adapter.n_params]
        if log_noise is None:
            noise_model = np.exp(draws_params[:, -1])
        else:
            noise_model = np.full(draws_params.shape[0], np.exp(log_noise))
        use_cg = self.predict_solver == "cg" or (
            self.predict_solver == "auto" and X.shape[0] > _CHOLESKY_MAX_N
        )
        if use_cg:
            draws = _CGGPDraws(
                adapter, X, y_model, thetas, noise_model, self.cg_tol, self.storage
            )
        else:
            draws = ExactGPDraws(adapter, X, y_model, thetas, noise_model)
        cg_iters = np.concatenate([r["cg_iterations"] for r in runs])
        return {
            "samples_": kept,
            "chains_": chains,
            "step_sizes_": np.stack([r["step_sizes"] for r in runs]),
            "frozen_at_": frozen_at,
            "burn_in_": int(burn),
            "param_names_": names,
            "rhat_": rhat,
            "ess_": ess,
            "map_params_": map_params,
            "preconditioner_": M,
            "kernels_": [kernel.clone_with_theta(t) for t in thetas],
            "noise_variance_": noise_model * np.float64(y_std) * y_std,
            "n_iter_": self.n_iter,
            "diagnostics_": {
                "cg_iterations_mean": float(cg_iters.mean()) if cg_iters.size else 0.0,
                "cg_max_residual": max(r["max_residual"] for r in runs),
                "n_rejected": int(sum(r["n_rejected"] for r in runs)),
                "rhat": rhat,
                "ess": ess,
                "fit_time": time.perf_counter() - t_start,
                "notes": notes,
            },
            "X_train_": X,
            "y_train_": y_model,
            "_y_mean": y_mean,
            "_y_std": y_std,
            "_draws": draws,
        }

    def _diagnostics(self, kept, notes):
        p = kept.shape[2]
        if kept.shape[1] < _MIN_DIAGNOSTIC_DRAWS:
            notes.append(
                f"R-hat and ESS were not computed: {kept.shape[1]} kept draws per "
                f"chain, fewer than {_MIN_DIAGNOSTIC_DRAWS}"
            )
            return np.full(p, np.nan), np.full(p, np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            ess = np.atleast_1d(effective_sample_size(kept))
            if kept.shape[0] < 2:
                notes.append("R-hat was not computed: it needs at least 2 chains")
                return np.full(p, np.nan), ess
            rhat = np.atleast_1d(split_rhat(kept, rank_normalized=True))
        return rhat, ess

    def _report_warnings(self, runs, rhat, names):
        messages = sorted({m for r in runs for m in r["warnings"]})
        for message in messages:
            warnings.warn(message, SamplerWarning, stacklevel=4)
        bad = [n for n, r in zip(names, rhat, strict=True) if r > _RHAT_WARN]
        if bad:
            warnings.warn(
                f"The chains disagree (split R-hat above {_RHAT_WARN}) for {bad}; "
                "increase n_iter.",
                SamplerWarning,
                stacklevel=4,
            )
