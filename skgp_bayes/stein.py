"""Stein variational Gaussian-process estimators (Pinder et al.)."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from ._arviz import InferenceDataMixin
from ._base import ExactGPRegressorMixin, fit_method
from ._defaults import NOISE_VARIANCE_BOUNDS, fit_input_scaling
from ._fit_checks import warn_degenerate_fit
from ._predictive_contract import draws_alias
from ._public import public_method
from ._stein_base import check_same_model, check_sparse_options, is_sparse_config
from ._stein_models import (
    ExactCGModel,
    ExactCholeskyModel,
    SparseRegressorModel,
    StochasticTraceModel,
)
from ._validation import (
    VersionedStateMixin,
    atomic_feature_state,
    check_single_target,
    target_shape,
)
from .predictive.sparse import SparseGPDraws

__all__ = ["SteinGPRegressor"]

# Fitted attributes that only one of the exact and sparse models has.
_MODEL_SPECIFIC = (
    "inducing_points_",
    "X_train_",
    "y_train_",
    "_target",
    "_batch_state",
    "_last_grads",
    "_data_fingerprint",
    "_cg_state",
    "_preconditioner",
)


def _is_exact(estimator):
    # The sparse model keeps no training data and has no exact marginal
    # likelihood; unfitted, the method is exposed so that it raises
    # NotFittedError.
    return not hasattr(estimator, "inducing_points_")


def _single_target_reason(estimator):
    """Why a fit of ``estimator`` takes one target; None where it takes several."""
    if estimator.inducing_points is not None:
        return (
            "the sparse model's particles hold the whitened inducing values of "
            "one target, and a second would add its own block of them."
        )
    if estimator.solver == "cg":
        return (
            "solver='cg' estimates the gradient and the predictions by "
            "conjugate gradients on one target; the exact model "
            "(solver='cholesky') shares the hyperparameters across targets."
        )
    if estimator.gradient == "stochastic_trace":
        return (
            "gradient='stochastic_trace' estimates the trace term for one "
            "target; gradient='exact' shares the hyperparameters across targets."
        )
    return None


class SteinGPRegressor(
    ExactGPRegressorMixin,
    InferenceDataMixin,
    VersionedStateMixin,
    RegressorMixin,
    BaseEstimator,
):
    """Gaussian-process regression with a particle posterior over hyperparameters.

    Stein variational gradient descent (Pinder et al.) moves a set of
    particles, each a value of the kernel hyperparameters and the noise
    variance, towards the exact posterior ``p(theta | y)`` of a GP with
    Gaussian noise (the latent function is integrated out). Predictions are
    the mixture of the per-particle GP posteriors, so hyperparameter
    uncertainty, including several modes, reaches ``predict(return_std=True)``,
    ``sample_y`` and ``log_predictive_density``.

    Parameters
    ----------
    kernel : sklearn kernel, default=None
        None gives ``ConstantKernel(1.0) * RBF(sqrt(d) * ones(d))`` on
        standardised inputs, one length scale per input (see
        :ref:`defaults`).
        Prior covariance. Its hyperparameter values are the starting point of
        the MAP search (``init="map"``); its bounds (log scale) box the
        particles. Hyperparameters with ``"fixed"`` bounds are not inferred. A
        ``WhiteKernel`` inside it is inferred like any other term, in addition
        to ``noise_variance``.
    priors : dict, default=None
        Hyperparameter name (``"k2__length_scale"``, ``"noise_variance"``, or
        one entry ``"k2__length_scale[0]"``) to a prior on the natural scale:
        a :class:`skgp_bayes.priors.Prior` or a frozen ``scipy.stats``
        distribution. Unnamed length scales get
        ``LogNormal(log sqrt(d) + 1, 1)``, unnamed signal variances
        (``constant_value``) ``HalfCauchyVariance(1)``, other unnamed
        parameters ``Gamma(shape=1, scale=2)`` (see :ref:`defaults`).
    noise_variance : float, default=0.1
        Initial observation-noise variance, on the scale of the (normalised)
        target.
    noise_variance_bounds : pair of float or "fixed", default=(1e-6, 1e2)
        Box for the noise variance, on the scale of the (normalised) target;
        ``"fixed"`` keeps it at ``noise_variance``. The lower bound keeps
        duplicate inputs from making the kernel matrix singular.
    n_particles : int, default=20
        Number of SVGD particles.
    max_iter : int, default=300
        Budget of SVGD iterations per call to ``fit``, a safeguard: a fit
        normally ends on ``tol`` (tens of iterations from ``init="map"``).
    learning_rate : "auto" or float, default="auto"
        With ``init="map"`` (exact model, ``solver="cholesky"``) SVGD is
        preconditioned by the Laplace covariance of the most probable mode
        and steps a fraction ``learning_rate`` of its whitened field
        (``"auto"``: 0.5, halved by the engine where the field oscillates;
        with ``gradient="stochastic_trace"`` decayed by
        ``learning_rate_decay`` instead). Otherwise (``init="prior"``, the
        sparse model, ``solver="cg"``) it is Adam's learning rate in log
        units per step (``"auto"``: 0.05).
    tol : "auto" or float, default="auto"
        Stopping rule: the run ends once the root mean square of the Stein
        field, in posterior standard deviations, stays at most ``tol``
        for two iterations; the particles are then about ``tol`` sds from
        SVGD's fixed point. ``"auto"`` is ``0.1 / sqrt(n_particles)``, a
        tenth of the Monte Carlo error of a particle average. Never met
        on minibatch, ``solver="cg"`` or ``gradient="stochastic_trace"``
        gradients, which run ``max_iter`` iterations.
    init : {"map", "prior"}, default="map"
        ``"map"``: find the maximum a posteriori point by L-BFGS-B and spread
        the particles by its Laplace approximation (with standard deviations
        capped at one log unit). ``"prior"``: draw particles from the prior.
    n_restarts : int, default=4
        With ``init="map"``, further L-BFGS-B searches started from prior
        draws. Every distinct local maximum found becomes a component of the
        initial particle set, with a share of the particles proportional to
        its Laplace estimate of posterior mass, so that a posterior with
        several modes starts with particles in each (SVGD rarely moves
        particles across the valley between modes). ``0`` starts every
        particle around the single maximum reached from the kernel's
        hyperparameters.
    normalize_y : bool, default=True
        Standardise the target before fitting; priors and noise bounds then
        refer to the standardised scale.
    normalize_X : bool, default=True
        Centre each input column and divide it by its training standard
        deviation, at most twice its middle half's spread. Hyperparameters,
        their bounds and priors, and stored inducing inputs are then in these
        units, so the defaults mean the same thing whatever the inputs'
        natural units; ``input_scaling_`` maps between the two. Set
        ``False`` to give a kernel in the inputs' own units.
    random_state : int, RandomState instance or None, default=None
        Seeds the particle initialisation. The same seed gives bit-identical
        particles.
    verbose : int, default=0
        ``1``: one progress line for the fit on standard error (iterations,
        mean log density and Stein field, time left), updated in place on
        a terminal; ``2``: the detailed lines of every stage.
    warm_start : bool, default=False
        Continue from the current particles and optimiser state, running
        ``max_iter`` further iterations, instead of starting anew.
    inducing_points : None, int or array-like of shape (m, n_features), \
            default=None
        ``None`` fits the exact model, ``O(n^3)`` per particle and
        iteration. An int picks that many inducing inputs by k-means on the
        training inputs; an array gives them. The particles then hold the
        hyperparameters and the whitened inducing values ``v``, jointly
        (seed 000, sections 3-4), and one iteration costs ``O(b m^2 + m^3)``
        per particle for batches of ``b`` points. The inducing inputs stay
        fixed.
    batch_size : int or None, default=None
        With ``inducing_points``, points per minibatch: every iteration
        draws one random batch, shared by the particles, and scales its
        data term by ``n / batch_size``, an unbiased estimate of the full
        gradient. ``None`` (or a size of at least ``n``) uses all the data.
    learning_rate_decay : "auto", float or None, default="auto"
        Robbins-Monro decay of the learning rate,
        ``learning_rate * (1 + t / learning_rate_decay) ** -0.55`` at
        iteration ``t``, which noisy minibatch gradients need to settle.
        ``"auto"`` uses 100 with ``batch_size`` and no decay otherwise;
        ``None`` keeps the rate constant.
    n_jobs : int or None, default=None
        Threads over which the particles' gradients, and the exact model's
        MAP searches from its restarts, are spread (``-1``: all cores).
        ``None``: the exact model's go on Numba's threads up to 1,000 rows
        (where BLAS runs on one) when a compiled evaluation takes at least
        0.1 ms; beyond, BLAS's threads; the sparse model's, one thread.
        Under a process-based backend chosen with ``joblib.parallel_config``
        (a Dask cluster), blocks of particles go to its workers where a
        particle's work is large enough (the rule is in the doc page
        "Scaling out"). Neither threads nor workers change the result.
    solver : {"cholesky", "cg"}, default="cholesky"
        How the exact model (``inducing_points=None``) meets ``K^-1``.
        ``"cholesky"`` factorises each particle's kernel matrix: exact
        values and gradients, ``O(n^3)`` time and ``O(n^2)`` memory.
        ``"cg"`` never factorises: each particle's gradient is an unbiased
        estimate from conjugate-gradient solves (warm-started from the
        previous iteration's) and Hutchinson probes of the trace term (seed
        002), with ``K @ V`` formed from the kernel in tiles when ``K`` does
        not fit in memory, so memory is ``O(n)``. SVGD then follows noisy
        gradients: it runs ``max_iter`` iterations with a decaying step
        (``learning_rate_decay``) and ``log_posterior_`` is NaN (the log
        density is never computed). ``init="map"`` searches on a random
        subset of 1,000 points, and predictions solve by CG too.
    gradient : {"exact", "stochastic_trace"}, default="exact"
        The gradient of the exact Cholesky model (``solver="cholesky"``,
        ``inducing_points=None``). ``"exact"``: the value and gradient of
        the log posterior from each particle's factor and the explicit
        inverse ``K^-1``. ``"stochastic_trace"``: the value and the
        gradient's data term stay exact, from the same factor; the trace
        term ``tr(K^-1 dK/dtheta)`` is estimated from 4 Rademacher probes
        solved with it, an unbiased gradient that drops the inverse (about
        two factorisations' flops) and the ``n x n`` contraction. SVGD is
        preconditioned and uses the SVGD kernel as for ``"exact"`` (so that
        both have the same fixed point), with one decaying step
        (``learning_rate_decay``) for noisy gradients, and runs
        ``max_iter`` iterations (``converged_`` is False). Other models
        reject ``"stochastic_trace"``: ``solver="cg"`` estimates the trace
        term already, and the sparse model has none.

    Attributes
    ----------
    particles_ : ndarray of shape (n_particles, n_params)
        Final particles in log (unconstrained) coordinates; columns follow
        ``param_names_``.
    param_names_ : list of str
        Names of the particle coordinates (``kernel.theta`` entries, then
        ``"noise_variance"`` unless it is fixed).
    draws_ : ndarray of shape (n_particles, n_params)
        ``particles_`` under the name every estimator uses for the draws
        its predictions average over.
    kernels_ : list of Kernel
        One fitted kernel per particle.
    kernel_ : Kernel
        Point summary: the kernel at the particles' mean hyperparameters in
        log coordinates.
    noise_variance_ : ndarray of shape (n_particles,) or (n_particles, n_targets)
        Noise variance of each particle, in the units of ``y`` (of each
        target, for a 2-D ``y``: the targets share it on the normalised
        scale).
    log_posterior_ : ndarray of shape (n_particles,)
        Log posterior (up to a constant) at each particle.
    n_iter_ : int
        SVGD iterations run (cumulative over warm starts).
    converged_ : bool
        Whether the last fit ended because its stopping rule (``tol``) was
        met rather than on ``max_iter``.
    history_ : dict of lists
        Per-iteration trace: mean ``log_density``, ``learning_rate``,
        ``max_move``, ``field`` (the stopping rule's value) and
        ``bandwidth`` and elapsed ``time``.
    ksd_ : float
        Kernel Stein discrepancy of the final particle set.
    map_params_ : ndarray of shape (n_params,) or None
        MAP point used for the initialisation (``init="map"``).
    diagnostics_ : dict
        ``max_jitter`` added to kernel diagonals, ``converged``,
        ``fit_time``, ``settled`` (whether the particles were settled on
        the Laplace approximation before SVGD on the posterior).
    fit_time_ : dict
        ``{"total": seconds}``.
    inducing_points_ : ndarray of shape (m, n_features)
        Inducing inputs (sparse model only).
    n_samples_seen_ : int
        Training points seen: ``n_samples`` after ``fit``, the running total
        over ``partial_fit`` calls.
    X_train_ : ndarray of shape (n_samples, n_features)
        Training inputs (exact model only; the sparse model keeps none).
    y_train_ : ndarray of shape (n_samples,) or (n_samples, n_targets)
        Training targets on the model's (normalised) scale (exact model
        only).
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features,)
        Names of features seen during ``fit`` (string column names only).

    See Also
    --------
    sklearn.gaussian_process.GaussianProcessRegressor : point estimate of the
        hyperparameters.

    References
    ----------
    T. Pinder, C. Nemeth and D. Leslie, "Stein Variational Gaussian
    Processes", 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import ConstantKernel, RBF
    >>> from skgp_bayes import SteinGPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (40, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(40)
    >>> reg = SteinGPRegressor(n_particles=5, max_iter=50, random_state=0)
    >>> reg = reg.fit(X, y)
    >>> mean, std = reg.predict(X[:3], return_std=True)
    >>> reg.particles_.shape
    (5, 3)
    >>> reg.sample_y(X[:3], n_samples=4).shape
    (3, 4)

    Several targets share the hyperparameters, as in scikit-learn's
    ``GaussianProcessRegressor`` (exact model only):

    >>> Y = np.column_stack([y, np.cos(X[:, 0])])
    >>> reg = SteinGPRegressor(n_particles=5, max_iter=50, random_state=0).fit(X, Y)
    >>> reg.predict(X[:3]).shape, reg.sample_y(X[:3], n_samples=4).shape
    ((3, 2), (3, 2, 4))
    """

    # Adam's learning rate (log units per step) for learning_rate="auto"
    # without a preconditioner (init="prior", the sparse model, solver="cg").
    _adam_rate = 0.05

    _parameter_constraints = {
        "kernel": [None, Kernel],
        "priors": [None, dict],
        "noise_variance": [Interval(Real, 0, None, closed="neither")],
        "noise_variance_bounds": [StrOptions({"fixed"}), tuple, list, np.ndarray],
        "n_particles": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "learning_rate": [
            StrOptions({"auto"}),
            Interval(Real, 0, None, closed="neither"),
        ],
        "tol": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")],
        "init": [StrOptions({"map", "prior"})],
        "n_restarts": [Interval(Integral, 0, None, closed="left")],
        "normalize_y": ["boolean"],
        "normalize_X": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "inducing_points": [
            None,
            Interval(Integral, 1, None, closed="left"),
            "array-like",
        ],
        "batch_size": [None, Interval(Integral, 1, None, closed="left")],
        "learning_rate_decay": [
            StrOptions({"auto"}),
            None,
            Interval(Real, 0, None, closed="neither"),
        ],
        "n_jobs": [None, Integral],
        "solver": [StrOptions({"cholesky", "cg"})],
        "gradient": [StrOptions({"exact", "stochastic_trace"})],
    }

    def __init__(
        self,
        kernel=None,
        *,
        priors=None,
        noise_variance=0.1,
        noise_variance_bounds=NOISE_VARIANCE_BOUNDS,
        n_particles=20,
        max_iter=300,
        learning_rate="auto",
        tol="auto",
        init="map",
        n_restarts=4,
        normalize_y=True,
        normalize_X=True,
        random_state=None,
        verbose=0,
        warm_start=False,
        inducing_points=None,
        batch_size=None,
        learning_rate_decay="auto",
        n_jobs=None,
        solver="cholesky",
        gradient="exact",
    ):
        self.kernel = kernel
        self.priors = priors
        self.noise_variance = noise_variance
        self.noise_variance_bounds = noise_variance_bounds
        self.n_particles = n_particles
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.tol = tol
        self.init = init
        self.n_restarts = n_restarts
        self.normalize_y = normalize_y
        self.normalize_X = normalize_X
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.inducing_points = inducing_points
        self.batch_size = batch_size
        self.learning_rate_decay = learning_rate_decay
        self.n_jobs = n_jobs
        self.solver = solver
        self.gradient = gradient

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = _single_target_reason(self) is None
        return tags

    # ------------------------------------------------------------------ fit
    def _continuing(self):
        return self.warm_start and hasattr(self, "particles_")

    @fit_method
    def fit(self, X, y):
        """Move the particles towards the hyperparameter posterior.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Targets. Several targets (exact model only) share the
            hyperparameters and are independent given them, as in
            scikit-learn's ``GaussianProcessRegressor``; each is normalised
            on its own with ``normalize_y``.

        Returns
        -------
        self : SteinGPRegressor
            The fitted estimator.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (30, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
        >>> reg = SteinGPRegressor(n_particles=4, random_state=0).fit(X, y)
        >>> reg.particles_.shape  # log amplitude, log length scale, log noise
        (4, 3)
        """
        return self._update(X, y, self._continuing(), partial=False)

    @available_if(is_sparse_config)
    @fit_method
    def partial_fit(self, X, y):
        """Move the particles on one chunk of a stream (sparse model only).

        The first call chooses the inducing inputs (an int
        ``inducing_points`` runs k-means on this chunk) and the target
        scaling, and places the particles; every call then runs
        ``max_iter`` SVGD iterations on minibatches of the chunk, with the
        data term scaled to the number of points seen so far
        (``n_samples_seen_``). Each chunk stands in for all the data seen,
        so chunks should be random samples of the stream (shuffle data
        stored in order first), as for any stochastic-gradient fit. The
        learning-rate schedule, the optimiser state and the batch sequence
        carry over between calls, and the estimator pickles between them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            One chunk of training inputs.
        y : array-like of shape (n_samples,)
            Its targets.

        Returns
        -------
        self : SteinGPRegressor
            The updated estimator.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (300, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(300)
        >>> reg = SteinGPRegressor(inducing_points=10, batch_size=50,
        ...                        n_particles=4, max_iter=20, random_state=0)
        >>> for chunk in np.array_split(np.arange(300), 3):
        ...     reg = reg.partial_fit(X[chunk], y[chunk])
        >>> reg.n_samples_seen_, reg.inducing_points_.shape
        (300, (10, 1))
        """
        return self._update(X, y, hasattr(self, "particles_"), partial=True)

    def _update(self, X, y, continuing, partial):
        with atomic_feature_state(self):
            reason = _single_target_reason(self)
            if reason is not None:
                check_single_target(y, type(self).__name__, reason)
            X, y = validate_data(
                self,
                X,
                y,
                dtype=np.float64,
                order="C",
                y_numeric=True,
                # a 1-D y keeps the single-target checks and their messages
                multi_output=reason is None and len(target_shape(y)) == 2,
                reset=not continuing,
            )
            if y.ndim == 2 and y.shape[1] == 1:  # one target, as scikit-learn's GPR
                y = y[:, 0]
            X_model, scaling = fit_input_scaling(self, X, continuing)
            model = self._model(X_model, y, continuing, partial, scaling)
            fitted = model.fit()
            fitted["input_scaling_"] = scaling
        # Set together at the end, so an interrupted fit leaves the old state.
        self._set_fitted(fitted, _MODEL_SPECIFIC)
        warn_degenerate_fit(self, X, y)
        return self

    def _model(self, X, y, continuing, partial, scaling):
        """The model this fit runs, chosen once from the parameters."""
        sparse = check_same_model(self, continuing)
        if self.gradient != "exact" and (sparse or self.solver == "cg"):
            raise ValueError(
                f"gradient={self.gradient!r} needs the exact Cholesky model "
                "(inducing_points=None, solver='cholesky'): solver='cg' "
                "estimates the trace term already, and the sparse model has none."
            )
        if sparse:
            return SparseRegressorModel(
                self, X, y, continuing=continuing, partial=partial, scaling=scaling
            )
        check_sparse_options(self, X.shape[0])  # rejects a batch_size
        if self.solver == "cg":
            return ExactCGModel(self, X, y, continuing=continuing)
        if self.gradient == "stochastic_trace":
            return StochasticTraceModel(self, X, y, continuing=continuing)
        return ExactCholeskyModel(self, X, y, continuing=continuing)

    def _pathwise(self, spec, n_samples, random_state, n_features):
        if isinstance(self._draws, SparseGPDraws):
            return self._draws.function_samples(
                n_samples,
                random_state,
                n_features,
                offset=self._y_mean,
                scale=self._y_std,
            )
        return super()._pathwise(spec, n_samples, random_state, n_features)

    draws_ = draws_alias("particles_")

    @available_if(_is_exact)
    @public_method
    def log_marginal_likelihood(self, theta=None, eval_gradient=False):
        """Log marginal likelihood of the (normalised) training targets.

        Parameters
        ----------
        theta : array-like of shape (n_params,), default=None
            Log-scale parameters in the order of ``param_names_``. ``None``
            evaluates every particle.
        eval_gradient : bool, default=False
            Also return the gradient in ``theta`` (only with ``theta`` given).

        Returns
        -------
        float or ndarray of shape (n_particles,)
        gradient : ndarray of shape (n_params,), only if ``eval_gradient``

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (30, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
        >>> reg = SteinGPRegressor(n_particles=4, random_state=0).fit(X, y)
        >>> reg.log_marginal_likelihood().shape  # one value per particle
        (4,)
        >>> value, grad = reg.log_marginal_likelihood(
        ...     reg.particles_[0], eval_gradient=True)
        >>> grad.shape
        (3,)
        """
        check_is_fitted(self)
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None")
            return np.array(
                [
                    self._target.log_likelihood(p, eval_gradient=False)
                    for p in self.particles_
                ]
            )
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.particles_.shape[1],):
            raise ValueError(
                f"theta must have shape ({self.particles_.shape[1]},), got "
                f"{theta.shape}."
            )
        return self._target.log_likelihood(theta, eval_gradient=eval_gradient)
