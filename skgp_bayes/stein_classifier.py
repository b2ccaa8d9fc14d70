"""Stein variational Gaussian-process classification (Pinder et al.).

Particles live in the joint space of kernel hyperparameters and whitened
latent values, ``(theta, nu)`` with ``f = L_theta nu``; see
:class:`skgp_bayes.targets.whitened.WhitenedLatentTarget`. Predictions
average the likelihood's predictive over each particle's Gaussian latent
predictive, so both hyperparameter and latent-function uncertainty reach
``predict_proba``.

Initialisation (``init="map"``) borrows the Laplace approximation, which is
cheap and close to the posterior for log-concave likelihoods:

1. ``theta``: the maximum of the Laplace-approximate log marginal likelihood
   plus the log prior (Rasmussen and Williams, 2006, algorithms 3.1 and 5.1),
   by L-BFGS-B. For several classes the surrogate is the sum of
   one-vs-rest logistic problems, a standard and cheap stand-in for the
   softmax marginal likelihood. Particles are spread by the surrogate's
   Laplace covariance in ``theta`` (capped at one log unit).
2. ``nu``: at each particle's ``theta``, the mode of ``p(nu | theta, y)`` by
   Newton's method and one draw from the Gaussian (Laplace) approximation
   there. For two classes the draw costs ``O(n^2)`` after the Newton
   factorisation, through the Woodbury identity; for softmax the Newton
   system is the dense ``(n C) x (n C)`` Hessian, used up to
   ``_DENSE_NEWTON_MAX`` unknowns (one-vs-rest draws beyond).

SVGD then corrects the approximation's errors: the non-Gaussian shape of the
latent posterior and the dependence between ``theta`` and ``nu``.

Sparse mode (``inducing_points``): the particles hold ``(theta, v)`` on
:class:`~skgp_bayes.targets.sparse.SparseWhitenedTarget`, with ``v`` the
whitened values of every latent function at the inducing inputs; given
``(theta, v)`` each latent is ``N(A'v, gamma)`` at any input, so the
predictive averaging below is the same as for the exact model. The particles
start from an SVGP Gaussian approximation on the same inducing inputs
(:func:`~skgp_bayes._stein_models.sparse.sparse_initial_particles`), and the data
term may be estimated on minibatches without bias.
"""

from numbers import Integral, Real

import numpy as np
from scipy.special import log_expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._arviz import InferenceDataMixin
from ._base import EstimatorBase, fit_method
from ._defaults import fit_input_scaling, in_natural_units
from ._fit_checks import warn_degenerate_fit
from ._predictive_contract import (
    draws_alias,
    fit_time_from_diagnostics,
)
from ._public import public_method
from ._stein_base import check_same_model, check_sparse_options, is_sparse_config
from ._stein_classifier_latent import SteinClassifierLatentMixin
from ._stein_models import LatentModel, SparseClassifierModel
from ._validation import (
    VersionedStateMixin,
    atomic_feature_state,
    check_n_samples,
)
from .predictive.latent import LatentDraws, SparseLatentDraws
from .predictive.mixture import gaussian_joint_draws, mixture_mean_var

# Fitted estimators pickled before the draws moved to skgp_bayes.predictive
# refer to these names.
_LatentDraws = LatentDraws
_SparseLatentDraws = SparseLatentDraws

__all__ = ["SteinGPClassifier"]

# Fitted attributes that only one of the exact and sparse models has.
_MODEL_SPECIFIC = (
    "inducing_points_",
    "X_train_",
    "_y_train",
    "_target",
    "_batch_state",
    "_preconditioner",
    "_preconditioner_inverse",
)


# --------------------------------------------------------------------------
# Estimator
# --------------------------------------------------------------------------
def _has_binary_decision(estimator):
    # Unfitted: expose the method so that it raises NotFittedError.
    return not hasattr(estimator, "classes_") or len(estimator.classes_) == 2


class SteinGPClassifier(
    SteinClassifierLatentMixin,
    EstimatorBase,
    InferenceDataMixin,
    VersionedStateMixin,
    ClassifierMixin,
    BaseEstimator,
):
    """Gaussian-process classification with a particle posterior.

    Stein variational gradient descent (Pinder et al.) moves particles over
    the kernel hyperparameters and the whitened latent function values
    jointly, ``(theta, nu)`` with ``f = L_theta nu`` at the training inputs,
    towards ``p(theta, nu | y)``. ``predict_proba`` averages, over
    particles, the likelihood's predictive under each particle's Gaussian
    latent predictive, so it integrates over hyperparameters and over the
    latent function.

    Two classes use a Bernoulli likelihood with one latent function; more
    classes use one latent function per class and a softmax likelihood in
    one joint model (not one-vs-rest).

    With ``inducing_points`` the model is sparse: the particles hold the
    hyperparameters and the whitened values ``v`` of every latent function
    at ``m`` inducing inputs, one iteration costs ``O(b m^2 + m^3)`` per
    particle on batches of ``b`` points, and :meth:`partial_fit` streams
    data through in chunks.

    Parameters
    ----------
    kernel : sklearn kernel, default=None
        Prior covariance of each latent function. ``None`` gives
        ``ConstantKernel(1.0) * RBF(sqrt(d) * ones(d))`` on standardised inputs, one
        length scale per input (see :ref:`defaults`). Its hyperparameter
        values start the MAP search (``init="map"``); its bounds (log scale)
        box the particles. Hyperparameters with ``"fixed"`` bounds are not
        inferred.
    link : {"logit", "probit"}, default="logit"
        Link of the Bernoulli likelihood for two classes. More classes
        always use the softmax likelihood.
    shared_kernel : bool, default=True
        Whether all class latent functions share one set of kernel
        hyperparameters. Sharing is the default because every extra
        hyperparameter block adds dimensions in which SVGD, whose
        repulsion weakens as the dimension grows, must place its few
        particles, and because classes rarely carry enough data each to
        pin down their own length scales. ``False`` gives each class its
        own block (same kernel family and prior); ignored for two classes.
        The sparse model (``inducing_points``) shares one kernel across the
        latents and rejects ``False`` for more than two classes.
    priors : dict, default=None
        Hyperparameter name (``"k2__length_scale"``, or one entry
        ``"k2__length_scale[0]"``) to a prior on the natural scale: a
        :class:`skgp_bayes.priors.Prior` or a frozen ``scipy.stats``
        distribution. Unnamed length scales get
        ``LogNormal(log sqrt(d) + 1, 1)``, other unnamed parameters
        ``Gamma(shape=1, scale=2)`` (see :ref:`defaults`).
        With ``shared_kernel=False`` a prior applies to every class's copy.
    n_particles : int, default=10
        Number of SVGD particles.
    max_iter : int, default=200
        Budget of SVGD iterations per call to ``fit``, a safeguard: a fit
        normally ends on ``tol``, in tens of iterations from ``init="map"``.
    learning_rate : "auto" or float, default="auto"
        With ``init="map"`` (exact model) SVGD is preconditioned by the
        Laplace approximation at the MAP hyperparameters (their surrogate
        covariance, and ``(I + L'WL)^-1`` for the whitened latents) and
        steps at most a fraction ``learning_rate`` of its whitened field
        (``"auto"``: 0.5), each particle and coordinate with its own
        fraction, halved where that coordinate's field changes sign (see
        ``doc/stein_classifier.rst``). Otherwise
        (``init="prior"``, the sparse model) it is Adam's learning rate
        (``"auto"``: 0.02).
    tol : "auto" or float, default="auto"
        Stopping rule: the run ends once the root mean square of the Stein
        field, in posterior standard deviations, stays at most ``tol`` for
        two iterations. ``"auto"`` is ``0.1 / sqrt(n_particles)``, a tenth
        of the Monte Carlo error of a particle average. Never met on
        minibatch gradients, which run ``max_iter`` iterations.
    init : {"map", "prior"}, default="map"
        ``"map"``: hyperparameters at the maximum of the Laplace-approximate
        marginal posterior, spread by its Laplace covariance; latents drawn
        from the Laplace approximation of ``p(nu | theta, y)`` at each
        particle (see the module notes). ``"prior"``: hyperparameters from
        their prior and latents from ``N(0, I)``, as in the seed paper; it
        needs many more iterations.
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
        ``max_iter`` further iterations, instead of starting anew. The
        exact model needs the training set of the previous fit; the sparse
        model's particles do not refer to the training inputs, so it may
        continue on other data (with the same classes).
    inducing_points : None, int or array-like of shape (m, n_features), \
            default=None
        ``None`` fits the exact model, ``O(n^3)`` per particle and
        iteration. An int picks that many inducing inputs by k-means on the
        training inputs; an array gives them. The particles then hold the
        hyperparameters and the whitened inducing values ``v`` of every
        latent function, jointly (seed 000, sections 3-4), start from an
        SVGP Gaussian approximation with the same inducing inputs
        (``init="map"``), and one iteration costs ``O(b m^2 + m^3)`` per
        particle for batches of ``b`` points. The inducing inputs stay
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
        Threads over which the particles' gradients are spread (``-1``: all
        cores). ``None``: the exact model's particles go on Numba's threads
        up to 1,000 rows (where BLAS runs on one) when a compiled evaluation
        takes at least 0.1 ms; beyond, BLAS's threads; the sparse model's,
        one thread. Under a process-based backend
        chosen with ``joblib.parallel_config`` (a Dask cluster), blocks of
        particles go to its workers where a particle's work is large enough
        (the rule is in the doc page "Scaling out"). Neither threads nor
        workers change the result.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted.
    particles_ : ndarray of shape (n_particles, n_params)
        Final particles: hyperparameters (log scale), then whitened
        latents; columns follow ``param_names_``.
    param_names_ : list of str
        Names of the particle coordinates: kernel hyperparameter names
        (prefixed ``"latent{c}__"`` per class when not shared), then
        ``"nu[i]"`` (two classes) or ``"nu[c,i]"``; for the sparse model
        ``"v[j]"`` (two classes) or ``"v[j,c]"``, ``j`` over the inducing
        inputs.
    draws_ : ndarray of shape (n_particles, n_params)
        ``particles_`` under the name every estimator uses for the draws
        its predictions average over.
    kernels_ : list
        One fitted kernel per particle; with ``shared_kernel=False`` and
        more than two classes, one list of per-class kernels per particle.
    kernel_ : Kernel or list of Kernel
        Point summary: the kernel at the particles' mean hyperparameters in
        log coordinates (one per class where ``kernels_`` has one per
        class).
    log_posterior_ : ndarray of shape (n_particles,)
        Log joint posterior (up to a constant) at each particle; with
        ``batch_size``, its estimate on the last minibatch.
    n_iter_ : int
        SVGD iterations run (cumulative over warm starts).
    converged_ : bool
        Whether the last fit ended because its stopping rule (``tol``) was
        met rather than on ``max_iter``.
    history_ : dict of lists
        Per-iteration trace: mean ``log_density``, ``learning_rate``,
        ``max_move``, ``field`` (the stopping rule's value), ``bandwidth``
        and elapsed ``time``.
    ksd_ : float
        Kernel Stein discrepancy of the final particle set.
    map_params_ : ndarray of shape (n_theta,) or None
        Hyperparameters (log scale) of the Laplace MAP used for the
        initialisation (``init="map"``); for the sparse model, those of the
        SVGP Gaussian approximation.
    diagnostics_ : dict
        ``jitter`` (relative diagonal jitter of every Gram matrix),
        ``converged``, ``init_time``, ``fit_time``,
        ``settled`` (whether the particles were settled on the Laplace
        approximation before SVGD on the posterior); the sparse model
        adds
        ``svgp_elbo`` (of the initial approximation, full batch only) and
        ``batch_size``.
    fit_time_ : dict
        ``{"total": seconds, "init": seconds}``.
    inducing_points_ : ndarray of shape (m, n_features)
        Inducing inputs (sparse model only).
    n_samples_seen_ : int
        Training points seen: ``n_samples`` after ``fit``, the running total
        over ``partial_fit`` calls.
    X_train_ : ndarray of shape (n_samples, n_features)
        Training inputs (exact model only; the sparse model keeps none).
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features,)
        Names of features seen during ``fit`` (string column names only).

    See Also
    --------
    sklearn.gaussian_process.GaussianProcessClassifier : Laplace
        approximation at point-estimated hyperparameters, one-vs-rest for
        several classes.
    skgp_bayes.SteinGPRegressor : the regression counterpart.

    Notes
    -----
    Each SVGD iteration evaluates the target and its gradient at every
    particle: a Gram matrix, a Cholesky factorisation, a triangular inverse
    and one triangular product with ``n`` right-hand sides (the reverse-mode
    Cholesky pass) and one fused gradient contraction, per hyperparameter
    block. That is ``O(J n^3)`` per iteration; measured at ``n = 300`` (8
    to 30 input dimensions, default kernel), 7 to 9 LAPACK Cholesky
    factorisations' worth per particle. The particle
    dimension is ``n * n_latent`` plus the hyperparameters, so SVGD with
    tens of particles under-represents the latent spread in directions the
    data do not constrain: its fixed point lies nearer the joint mode of
    ``(theta, nu)`` than the posterior does (shorter length scales, more
    confident probabilities). Where the coordinates outnumber the particles
    (any real data set) SVGD therefore uses one RBF kernel per whitened
    coordinate, a diagonal matrix-valued kernel whose repulsion does not
    weaken with the dimension, and the Laplace start and preconditioner
    reach its fixed point in tens of iterations; ``doc/stein_classifier.rst``
    gives the measurements.

    References
    ----------
    T. Pinder, C. Nemeth and D. Leslie, "Stein Variational Gaussian
    Processes", 2020.

    C. E. Rasmussen and C. K. I. Williams, "Gaussian Processes for Machine
    Learning", MIT Press, 2006, chapters 3 and 5.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.stein_classifier import SteinGPClassifier
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(40, 2))
    >>> y = np.where(X[:, 0] + X[:, 1] > 0, "pos", "neg")
    >>> clf = SteinGPClassifier(n_particles=4, max_iter=20, random_state=0)
    >>> clf = clf.fit(X, y)
    >>> clf.classes_
    array(['neg', 'pos'], dtype='<U3')
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    # Adam's learning rate for learning_rate="auto" without a preconditioner
    # (init="prior", the sparse model).
    _adam_rate = 0.02

    _parameter_constraints = {
        "kernel": [None, Kernel],
        "link": [StrOptions({"logit", "probit"})],
        "shared_kernel": ["boolean"],
        "priors": [None, dict],
        "n_particles": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "learning_rate": [
            StrOptions({"auto"}),
            Interval(Real, 0, None, closed="neither"),
        ],
        "tol": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")],
        "init": [StrOptions({"map", "prior"})],
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
    }

    def __init__(
        self,
        kernel=None,
        *,
        link="logit",
        shared_kernel=True,
        priors=None,
        n_particles=10,
        max_iter=200,
        learning_rate="auto",
        tol="auto",
        init="map",
        normalize_X=True,
        random_state=None,
        verbose=0,
        warm_start=False,
        inducing_points=None,
        batch_size=None,
        learning_rate_decay="auto",
        n_jobs=None,
    ):
        self.kernel = kernel
        self.link = link
        self.shared_kernel = shared_kernel
        self.priors = priors
        self.n_particles = n_particles
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.tol = tol
        self.init = init
        self.normalize_X = normalize_X
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.inducing_points = inducing_points
        self.batch_size = batch_size
        self.learning_rate_decay = learning_rate_decay
        self.n_jobs = n_jobs

    # ------------------------------------------------------------------ fit
    def _continuing(self):
        return self.warm_start and hasattr(self, "particles_")

    @fit_method
    def fit(self, X, y):
        """Move the particles towards the joint posterior.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels (any type that ``numpy.unique`` sorts).

        Returns
        -------
        self : SteinGPClassifier
            The fitted estimator.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.stein_classifier import SteinGPClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> clf = SteinGPClassifier(n_particles=3, random_state=0)
        >>> clf.fit(X, X[:, 0] > 0).classes_
        array([False,  True])
        """
        return self._update(X, y, self._continuing(), partial=False)

    @available_if(is_sparse_config)
    @fit_method
    def partial_fit(self, X, y, classes=None):
        """Move the particles on one chunk of a stream (sparse model only).

        The first call fixes the classes (``classes`` is then required, as
        for scikit-learn's ``SGDClassifier``), chooses the inducing inputs
        (an int ``inducing_points`` runs k-means on this chunk) and places
        the particles; every call then runs ``max_iter`` SVGD iterations on
        minibatches of the chunk, with the data term scaled to the number
        of points seen so far (``n_samples_seen_``). Each chunk stands in
        for all the data seen, so chunks should be random samples of the
        stream (shuffle data stored in order first), as for any
        stochastic-gradient fit. The posterior sharpens as chunks arrive
        and the particles must follow it: give each call about the
        iterations a fit would run (the user guide's streaming section has
        the measurements). The learning-rate schedule, the optimiser
        state and the batch random stream carry over between calls, and the
        estimator pickles between them. Only available with
        ``inducing_points``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            One chunk of training inputs.
        y : array-like of shape (n_samples,)
            Its class labels, all among ``classes``.
        classes : array-like of shape (n_classes,), default=None
            Every class of the whole stream. Required on the first call;
            later calls may omit it or must repeat it.

        Returns
        -------
        self : SteinGPClassifier
            The updated estimator.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPClassifier
        >>> rng = np.random.RandomState(0)
        >>> X = rng.normal(size=(300, 2))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = SteinGPClassifier(inducing_points=8, batch_size=50,
        ...                         n_particles=4, random_state=0)
        >>> for chunk in np.array_split(np.arange(300), 3):
        ...     clf = clf.partial_fit(X[chunk], y[chunk], classes=[0, 1])
        >>> clf.n_samples_seen_, clf.inducing_points_.shape
        (300, (8, 2))
        >>> bool(clf.score(X, y) > 0.9)
        True
        """
        continuing = hasattr(self, "particles_")
        return self._update(X, y, continuing, partial=True, classes=classes)

    def _update(self, X, y, continuing, partial, classes=None):
        """Validate, fit (``partial``: one more chunk) and install the result."""
        with atomic_feature_state(self):
            X, y = validate_data(
                self, X, y, dtype=np.float64, order="C", reset=not continuing
            )
            check_classification_targets(y)
            X_model, scaling = fit_input_scaling(self, X, continuing)
            model = self._model(X_model, y, continuing, partial, classes, scaling)
            fitted = model.fit()
            fitted["input_scaling_"] = scaling
        # Set together at the end, so an interrupted fit leaves the old state.
        self._set_fitted(fitted, _MODEL_SPECIFIC)
        warn_degenerate_fit(self, X, y)
        return self

    def _model(self, X, y, continuing, partial, classes, scaling):
        """The model this fit runs, chosen once from the parameters."""
        if check_same_model(self, continuing):
            return SparseClassifierModel(
                self,
                X,
                y,
                classes=classes,
                continuing=continuing,
                partial=partial,
                scaling=scaling,
            )
        check_sparse_options(self, X.shape[0])  # rejects a batch_size
        return LatentModel(self, X, y, continuing=continuing)

    # -------------------------------------------------------------- predict
    @public_method
    def predict_proba(self, X):
        """Class probabilities averaged over particles and latent functions.

        Per particle, the latent predictive at ``X`` is Gaussian; the
        likelihood's predictive under it (closed form for probit, a
        quadrature rule for logit, fixed Monte Carlo draws for softmax) is
        averaged over particles, rows renormalised and clipped to [0, 1].
        Deterministic given the fit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.stein_classifier import SteinGPClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> clf = SteinGPClassifier(n_particles=3, random_state=0)
        >>> proba = clf.fit(X, X[:, 0] > 0).predict_proba([[-2.0], [2.0]])
        >>> proba.sum(axis=1)
        array([1., 1.])
        >>> bool(proba[0, 0] > 0.5 and proba[1, 1] > 0.5)
        True
        """
        return self._proba(self._validate_query(X))

    @public_method
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, exact in the tails for two classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.stein_classifier import SteinGPClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> clf = SteinGPClassifier(n_particles=3, random_state=0)
        >>> clf.fit(X, X[:, 0] > 0).predict_log_proba(X[:1]).shape
        (1, 2)
        """
        X = self._validate_query(X)
        if self.classes_.size == 2:
            d = self._binary_log_odds(X)
            return np.column_stack([log_expit(-d), log_expit(d)])
        with np.errstate(divide="ignore"):
            return np.log(self._proba(X))

    @public_method
    def predict(self, X):
        """Most probable class under :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Labels from ``classes_``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.stein_classifier import SteinGPClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> clf = SteinGPClassifier(n_particles=3, random_state=0)
        >>> clf.fit(X, X[:, 0] > 0).predict([[-2.0], [2.0]])
        array([False,  True])
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    @available_if(_has_binary_decision)
    @public_method
    def decision_function(self, X):
        """Log predictive odds of ``classes_[1]`` (two classes only).

        ``log P(y = classes_[1]) - log P(y = classes_[0])`` under the
        particle-averaged predictive: positive exactly where :meth:`predict`
        returns ``classes_[1]``, and a monotone function of
        ``predict_proba(X)[:, 1]``. The latent mean averaged over particles
        is :meth:`latent_mean_and_variance`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.stein_classifier import SteinGPClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> clf = SteinGPClassifier(n_particles=3, random_state=0)
        >>> clf.fit(X, X[:, 0] > 0).decision_function([[2.0]]) > 0
        array([ True])
        """
        X = self._validate_query(X)
        return self._binary_log_odds(X)

    draws_ = draws_alias("particles_")
    fit_time_ = fit_time_from_diagnostics(init="init_time")

    @public_method
    def latent_mean_and_variance(self, X):
        """Mean and variance of each latent function under the particle mixture.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        mean, variance : ndarray of shape (n_samples,) for two classes, or
            (n_samples, n_classes), column ``c`` for ``classes_[c]``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.stein_classifier import SteinGPClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> clf = SteinGPClassifier(n_particles=3, random_state=0)
        >>> mean, var = clf.fit(X, X[:, 0] > 0).latent_mean_and_variance(X)
        >>> mean.shape
        (20,)
        """
        X = self._validate_query(X)
        means, variances = self._draws.moments(X)
        J, C, m = means.shape
        mean, var = mixture_mean_var(
            means.reshape(J, C * m), variances.reshape(J, C * m)
        )
        mean, var = mean.reshape(C, m).T, var.reshape(C, m).T
        if C == 1:
            return mean[:, 0], var[:, 0]
        return mean, var

    @public_method
    def sample_latent(self, X, n_samples=1, random_state=0):
        """Draw latent functions at ``X`` from the particle mixture.

        Each sample picks a particle uniformly at random, then draws every
        latent function jointly over ``X`` from that particle's Gaussian
        predictive.

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0

        Returns
        -------
        samples : ndarray of shape (n_samples_X, n_samples) for two classes,
            or (n_samples_X, n_classes, n_samples).

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.stein_classifier import SteinGPClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> clf = SteinGPClassifier(n_particles=3, random_state=0)
        >>> clf.fit(X, X[:, 0] > 0).sample_latent(X[:5], n_samples=4).shape
        (5, 4)
        """
        X = self._validate_query(X)
        check_n_samples(n_samples)
        rng = check_random_state(random_state)
        C = self._draws.n_latent
        which = rng.randint(self._draws.n_draws, size=n_samples)
        out = np.empty((X.shape[0], C, n_samples))
        for j in np.unique(which):
            cols = np.flatnonzero(which == j)
            means, covs = self._draws.moments(X, full_cov=True, draws=[j])
            for c in range(C):
                out[:, c, cols] = gaussian_joint_draws(
                    means[0, c], covs[0, c], cols.size, rng
                )
        return out[:, 0, :] if C == 1 else out

    @public_method
    def sample_functions(self, n_samples=1, random_state=0, n_features=None):
        """Latent function samples from the posterior, callable anywhere.

        Each sample picks a particle ``(theta, nu)`` uniformly at random and
        is a pathwise draw of the latent GP given ``f = L_theta nu`` at the
        training inputs: a random-Fourier-feature prior draw plus Matheron's
        update ``k(x, X) K^-1 (f - f_prior(X))``. The functions are frozen:
        every call returns the same values, they have analytic input
        gradients and they pickle. Apply the likelihood's link (sigmoid,
        probit or softmax) to turn them into class probabilities. For the
        sparse model the update conditions on the particle's inducing values
        ``u = R_theta v`` at the inducing inputs instead.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0
        n_features : int, default=None
            Fourier features per particle; None uses 1024.

        Returns
        -------
        functions : FunctionSamples or list of FunctionSamples
            For two classes one :class:`~skgp_bayes.sampling.FunctionSamples`
            (the log odds of ``classes_[1]``); otherwise one per class, all
            built on the same particles, so that ``[f(X) for f in
            functions]`` are jointly distributed latent values.

        Raises
        ------
        ValueError
            If the kernel has no spectral density.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> clf = SteinGPClassifier(n_particles=3, random_state=0)
        >>> f = clf.fit(X, X[:, 0] > 0).sample_functions(5, random_state=0)
        >>> grid = np.linspace(-2, 2, 9)[:, None]
        >>> f(grid).shape, f.gradient(grid).shape
        ((9, 5), (9, 5, 1))
        >>> bool(np.array_equal(f(grid), f(grid)))
        True
        """
        check_is_fitted(self)
        check_n_samples(n_samples)
        if self._is_sparse():
            return in_natural_units(
                self._sparse_function_samples(n_samples, random_state, n_features),
                self,
            )
        functions = self._exact_function_samples(n_samples, random_state, n_features)
        return in_natural_units(functions, self)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags
