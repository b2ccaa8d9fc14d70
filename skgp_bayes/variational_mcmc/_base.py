"""Fit and prediction machinery shared by the two variational MCMC estimators."""

import copy
import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._arviz import InferenceDataMixin
from .._base import EstimatorBase
from .._defaults import fit_input_scaling
from .._predictive_contract import per_chain_samples, sparse_latent_covariances
from .._sparse import initial_inducing
from .._threads import blas_threads_for, one_blas_thread
from .._validation import (
    VersionedStateMixin,
    check_bounds,
    check_finite_theta,
    check_input_magnitude,
    check_n_samples,
)
from ..inference import run_hmc_chains
from ..inference._chain_threads import default_chain_threads, quickest_seconds
from ..inference.particles import THREADED_PARTICLE_SECONDS
from ..kernels import KernelAdapter
from ..likelihoods import Gaussian
from ..predictive.exact_inducing import (
    exact_draw_covariances,
    exact_draw_moments,
    exact_function_samples,
)
from ..predictive.sparse import (
    q_moments_per_latent,
    sparse_draw_moments,
    sparse_function_samples,
)
from ._approximation import ApproximationStage
from ._chains import HMCStage
from ._pipelines import FitStart, fit_joint
from ._sampling import default_n_inducing

# Predictions go over the query rows in blocks of at most this many draws x
# rows (32 MB for each per-draw array of doubles), and at least
# _MIN_PREDICT_ROWS rows: see VariationalMCMCBase._in_row_blocks. A block
# factorises every draw's K(Z, Z) again, m^3 / 3 flops against the block's
# projection, m^2 flops a row: less once a block has m / 3 rows (about 100
# for the 295 inducing inputs of a 300-row exact target, which gets 2,675
# rows a block at 1,568 draws).
_PREDICT_ELEMENTS = 2**22
_MIN_PREDICT_ROWS = 64

# The end-of-fit checks (warn_degenerate_fit) predict from at most this many
# evenly spaced draws. They ask whether the fitted mean function's spread
# reaches 1% of the target's; the mean of 250 draws carries a Monte Carlo
# error of at most sd / sqrt(250), 6% of the draws' own spread, far from
# changing that answer. Predicting from all 2,000 draws at 216 inducing
# inputs took 5.2 s of a 21 s fit (sunspots).
_CHECK_DRAWS = 250


class VariationalMCMCBase(
    EstimatorBase, InferenceDataMixin, VersionedStateMixin, BaseEstimator
):
    """Shared fit and prediction machinery; see the two public classes."""

    _common_constraints = {
        "kernel": [None, Kernel],
        "n_inducing": [None, Interval(Integral, 1, None, closed="left")],
        "inducing_points": [None, "array-like"],
        "optimize_inducing": ["boolean"],
        "n_chains": [Interval(Integral, 1, None, closed="left")],
        "n_warmup": [Interval(Integral, 0, None, closed="left")],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "max_samples": [Interval(Integral, 1, None, closed="left")],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "max_leapfrog": [None, Interval(Integral, 1, None, closed="left")],
        "sampler": [StrOptions({"hmc", "nuts"})],
        "target_accept": [Interval(Real, 0, 1, closed="neither")],
        "priors": [None, dict],
        "batch_size": [None, Interval(Integral, 1, None, closed="left")],
        "svgp_max_iter": [None, Interval(Integral, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "normalize_X": ["boolean"],
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
        "verbose": ["verbose"],
    }

    # ------------------------------------------------------------ helpers
    def _inducing(self, X, seed, scaling):
        if self.inducing_points is None:
            return initial_inducing(X, self._n_inducing(X.shape[0]), seed)
        Z = np.asarray(self.inducing_points, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != X.shape[1] or Z.shape[0] < 1:
            raise ValueError(
                f"inducing_points must have shape (m, {X.shape[1]}); got {Z.shape}."
            )
        if not np.all(np.isfinite(Z)):
            raise ValueError("inducing_points must be finite.")
        return np.ascontiguousarray(scaling.transform(Z))

    def _blas_limit(self, n_rows, n_inducing):
        # Small triangular solves are dominated by BLAS thread start-up (and
        # by threads fighting for the cores on a busy machine): measured at
        # n=60, m=8 on 2 cores, one target gradient took 48 ms with threaded
        # BLAS and 1.1 ms serial.
        return blas_threads_for(n_rows, n_inducing)

    def _n_inducing(self, n):
        if self.n_inducing is not None:
            return self.n_inducing
        return default_n_inducing(n)

    def _fit_pipeline(self, X, y_lik, likelihood, offset):
        """All three stages; returns the fitted attributes as a dict."""
        m = (
            self._n_inducing(X.shape[0])
            if self.inducing_points is None
            else len(self.inducing_points)
        )
        X_model, scaling = fit_input_scaling(self, X)
        with self._blas_limit(X.shape[0], m):
            fitted = self._fit_stages(X_model, y_lik, likelihood, offset, scaling)
        fitted["input_scaling_"] = scaling
        return fitted

    def _fit_start(self, X, noise_box):
        """What every fit starts from: the clock, the seeds of its stages,
        the kernel (checked), the bounds and the priors; ``noise_box`` is
        None, or a Gaussian likelihood's log noise bounds and start."""
        t_start = time.perf_counter()
        if self.thin > self.n_samples:
            raise ValueError(
                f"thin={self.thin} keeps no draw of n_samples={self.n_samples}."
            )
        check_input_magnitude(X)
        rng = check_random_state(self.random_state)
        seeds = rng.randint(0, 2**31 - 1, size=4)
        kernel = self._new_kernel(X.shape[1])
        adapter = KernelAdapter(kernel)
        check_finite_theta(kernel.theta, adapter.param_names)
        kernel_bounds = np.asarray(kernel.bounds, dtype=np.float64).reshape(-1, 2)
        check_bounds(kernel_bounds, adapter.param_names)
        return FitStart.build(
            (t_start, seeds, kernel, adapter),
            kernel_bounds,
            noise_box,
            self.priors,
            X.shape[1],
        )

    def _fit_model(self, likelihood):
        """The fit for ``likelihood``: :func:`fit_joint` here; the regressor
        takes :func:`fit_collapsed` for a Gaussian likelihood."""
        return fit_joint

    def _fit_stages(self, X, y_lik, likelihood, offset, scaling):
        """Chooses the model once, then runs its stages."""
        model = self._fit_model(likelihood)
        # only the regressor has a Gaussian likelihood, and noise settings
        gaussian = isinstance(likelihood, Gaussian)
        start = self._fit_start(X, self._noise_box() if gaussian else None)
        Z0 = self._inducing(X, int(start.seeds[0]), scaling)
        # The engine is read from this module at every fit: the estimator
        # composes target x engine, and a test may stand another in.
        stages = (ApproximationStage.of(self), HMCStage.of(self, run_hmc_chains))
        return model(start, stages, (X, y_lik, likelihood, offset), Z0)

    def _for_fit_checks(self):
        """This fit, predicting from at most ``_CHECK_DRAWS`` of its draws."""
        n_draws = self.draws_.shape[0]
        if n_draws <= _CHECK_DRAWS:
            return self
        thinned = copy.copy(self)
        rows = np.linspace(0, n_draws - 1, _CHECK_DRAWS).round().astype(int)
        thinned.draws_ = self.draws_[rows]
        return thinned

    # ---------------------------------------------------------- prediction
    def _in_row_blocks(self, compute, X, *per_row):
        """``compute(X_block, *per_row_blocks)`` over blocks of query rows.

        A prediction holds arrays of draws x query rows: the binary
        classifier's probabilities on fair (5,796 draws) peaked at 8.6 GB
        for 20,000 query rows. Blocks of at most ``_PREDICT_ELEMENTS`` draws
        x rows (and at least ``_MIN_PREDICT_ROWS`` rows) keep the peak
        bounded whatever the number of rows; each row's prediction is its
        own, so the blocks change nothing but the memory. ``per_row`` are
        arrays of one entry per row (or None), cut like ``X``; the results,
        arrays or tuples of arrays, are joined along their first axis.
        """
        size = max(_MIN_PREDICT_ROWS, _PREDICT_ELEMENTS // self.draws_.shape[0])
        if X.shape[0] <= size:
            return compute(X, *per_row)
        parts = []
        for start in range(0, X.shape[0], size):
            rows = slice(start, start + size)
            cut = (None if a is None or np.ndim(a) == 0 else a[rows] for a in per_row)
            parts.append(compute(X[rows], *cut))
        if isinstance(parts[0], tuple):
            return tuple(np.concatenate(joined) for joined in zip(*parts, strict=True))
        return np.concatenate(parts)

    def _draw_moments(self, X):
        """Per-draw latent moments: means (S, k, C) and variances (S, k).

        The draws go on threads by the rule of the chains
        (:func:`~skgp_bayes.inference._chain_threads.default_chain_threads`:
        with ``n_jobs=None``, where one draw's compiled work takes at least
        :data:`~skgp_bayes.inference.particles.THREADED_PARTICLE_SECONDS`),
        BLAS on one thread either way, so that the moments do not depend on
        the choice.
        """
        Z, C = self.inducing_points_, self._n_latent
        S = self.draws_.shape[0]
        thetas = self.draws_[:, : self._adapter.n_params]
        v = self.draws_[:, self._n_hyper :].reshape(S, -1, C)

        exact = self._exact_data("mcmc")
        noises = None if exact is None else self._noise_draws()

        def moments(rows, threads=1):
            if exact is not None:
                means, spread = exact_draw_moments(
                    exact, thetas[rows], noises[rows], X, threads=threads
                )
                return means[:, :, None], spread
            draws = thetas[rows], v[rows]
            return sparse_draw_moments(
                self._adapter, Z, self._jitter, *draws, X, threads=threads
            )

        with one_blas_thread():
            threads = self._draw_threads(lambda: moments(slice(0, 1)))
            return moments(slice(None), threads)

    def _draw_threads(self, one_draw):
        """Threads for work over the draws, one draw of which is ``one_draw()``.

        The rule of the chains
        (:func:`~skgp_bayes.inference._chain_threads.default_chain_threads`):
        with ``n_jobs=None``, where ``one_draw()`` takes at least
        :data:`~skgp_bayes.inference.particles.THREADED_PARTICLE_SECONDS`.
        """
        return default_chain_threads(
            self.n_jobs,
            self.draws_.shape[0],
            lambda: quickest_seconds(one_draw, repeats=1),
            THREADED_PARTICLE_SECONDS,
        )

    def _gaussian_moments(self, X):
        """Moments of the Gaussian approximation ``q(f)``: (k, C) each."""
        theta, _, q_mean, q_L = self._q
        return q_moments_per_latent(
            self._adapter, theta, self.inducing_points_, self._jitter, q_mean, q_L, X
        )

    def _noise_draws(self):
        return np.exp(self.draws_[:, self._adapter.n_params])

    def _exact_data(self, posterior):
        """``(adapter, X, y)`` of the exact GP the draws predict by, or None.

        A Gaussian-likelihood fit with the training inputs as inducing
        inputs predicts from its HMC draws by the exact GP's closed forms,
        ``v`` integrated out (:mod:`skgp_bayes.predictive.exact_inducing`
        says why); every other fit, and the Gaussian approximation, through
        ``v``. Models pickled before this have no such data.
        """
        data = getattr(self, "_exact_training", None)
        if data is None or posterior != "mcmc":
            return None
        return (self._adapter, *data)

    def _latent_covariances(self, X, posterior):
        """Means ``(S, k)`` and joint covariances ``(S, k, k)`` of latent 0."""
        thetas, v, factors = self._posterior_draws(posterior)
        exact = self._exact_data(posterior)
        if exact is not None:
            return exact_draw_covariances(exact, thetas, self._noise_draws(), X)
        Z, factor = self.inducing_points_, None if factors is None else factors[0]
        return sparse_latent_covariances(
            self._adapter, Z, self._jitter, thetas, v, factor, X
        )

    def _posterior_draws(self, posterior):
        """Kernel thetas (S, p), whitened ``v`` (S, m, C), ``q(v)`` factors.

        ``"mcmc"``: the kept HMC draws, factors None. ``"gaussian"``: the
        SVGP's ``q(v) = N(m, S)`` as one draw, with the lower factors of
        ``S`` per latent, shape (C, m, m).
        """
        if posterior == "gaussian":
            theta, _, q_mean, q_L = self._q
            return np.asarray(theta)[None, :], np.asarray(q_mean)[None], q_L
        if posterior != "mcmc":
            raise ValueError(
                f"posterior must be 'mcmc' or 'gaussian'; got {posterior!r}."
            )
        S, C = self.draws_.shape[0], self._n_latent
        thetas = self.draws_[:, : self._adapter.n_params]
        return thetas, self.draws_[:, self._n_hyper :].reshape(S, -1, C), None

    def _functions(self, n_samples, random_state, n_features, posterior, **kw):
        check_is_fitted(self)
        check_n_samples(n_samples)
        thetas, v, factors = self._posterior_draws(posterior)
        rng = check_random_state(random_state)
        exact = self._exact_data(posterior)
        if exact is not None:
            functions, white = exact_function_samples(
                exact, thetas, self._noise_draws(), n_samples, rng, n_features, **kw
            )
            return [functions], white
        return sparse_function_samples(
            self._adapter,
            self.inducing_points_,
            self._jitter,
            thetas,
            v,
            factors,
            n_samples,
            rng,
            n_features,
            **kw,
        )

    samples_ = per_chain_samples()

    @property
    def kernels_(self):
        """One kernel per kept draw, at that draw's hyperparameters.

        ``kernel_`` is the kernel at the Gaussian approximation's point
        estimate; ``kernels_[s]`` goes with ``draws_[s]``.

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, X[:, 0] > 0)
        >>> len(clf.kernels_) == clf.draws_.shape[0]
        True
        """
        thetas = self.draws_[:, : self._adapter.n_params]
        return [self.kernel_.clone_with_theta(theta) for theta in thetas]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags
