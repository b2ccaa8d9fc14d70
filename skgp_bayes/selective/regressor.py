"""Sparse GP regression that learns which inducing points to keep."""

import time
from numbers import Integral, Real

import numpy as np
from scipy.special import logit
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._arviz import InferenceDataMixin
from .._base import EstimatorBase, fit_method, sample_y_spec
from .._defaults import (
    NOISE_VARIANCE_BOUNDS,
    estimator_prior_set,
    fit_input_scaling,
    in_natural_units,
)
from .._fit_checks import prior_only, warn_at_bounds, warn_degenerate_fit
from .._predictive_contract import (
    LatentDraws,
    RegressorContractMixin,
)
from .._public import public_method
from .._threads import blas_threads_for
from .._validation import (
    VersionedStateMixin,
    atomic_feature_state,
    check_input_magnitude,
    check_n_samples,
    check_single_target,
    noise_box,
    safe_mean_std,
    variance_in_units,
)
from .._warnings import warn_user
from ..kernels import KernelAdapter
from ..likelihoods import Gaussian
from ..predictive._distributions import (
    GaussianMixturePredictive,
    mixture_prediction,
)
from ..predictive.sparse import sparse_function_samples
from ..sampling import add_white_noise, require_spectral_spec
from ..targets.selective import (
    BernoulliPointProcess,
    SharedSubsetBound,
    SubsetBound,
)
from ._hyperparameter_draws import (
    hyperparameter_draws,
    latent_per_draw,
    mixture_joint_draws,
    optimal_q_per_draw,
)
from ._phases import (
    INITIAL_INCLUSION,
    candidate_inputs,
    fit_shared_phases,
    keep_points,
    kernel_log_bounds,
    maximise_bound,
    pre_train,
    selection_attributes,
    selection_phase,
    warn_unfinished_selection,
)

# Why the regressor takes one target (ValueError on a 2-D y).
_SINGLE_TARGET = (
    "the collapsed bound that selects the inducing points, and the optimal "
    "q(u) it keeps, are those of one target."
)


class SelectiveSVGP(
    EstimatorBase,
    RegressorContractMixin,
    InferenceDataMixin,
    VersionedStateMixin,
    RegressorMixin,
    BaseEstimator,
):
    """Sparse variational GP regression with a learned set of inducing points.

    A Bernoulli point process over candidate inducing inputs, with a prior
    that penalises the squared number of points, decides which points the
    model keeps and so how many: the user sets the prior strength ``alpha``
    instead of the number of inducing points. See the module notes for the
    three training phases.

    Parameters
    ----------
    kernel : sklearn kernel, default=None
        Prior covariance of the latent function; its hyperparameters are
        the starting point and are fitted, as MAP estimates under the
        default priors of :ref:`defaults` (the noise variance too). None gives
        ``ConstantKernel(1.0) * RBF(sqrt(d) * ones(d))`` on standardised inputs, one
        length scale per input (see :ref:`defaults`).
    priors : dict, default=None
        Hyperparameter name (``"k2__length_scale"``, ``"noise_variance"``,
        or one entry ``"k2__length_scale[0]"``) to a prior on the natural
        scale: a :class:`skgp_bayes.priors.Prior` or a frozen
        ``scipy.stats`` distribution. Unnamed length scales get
        ``LogNormal(log sqrt(d) + 1, 1)``, unnamed signal variances
        (``constant_value``) ``HalfCauchyVariance(1)``, other unnamed
        parameters ``Gamma(shape=1, scale=2)`` (see :ref:`defaults`); the fitted
        hyperparameters maximise the bound plus their log prior.
    n_candidates : int, default=80
        Most candidates, chosen among the training inputs when
        ``candidates`` is None: spread over the inputs by greedy
        conditional variance under the starting kernel (Burt, Rasmussen
        and van der Wilk, 2020; see
        :func:`~skgp_bayes.targets.selective.greedy_variance_points`), as
        in :class:`SelectiveSVGPClassifier`. A random draw (the seed
        paper's initialisation) leaves clustered inputs poorly covered: on
        grunfeld the bound of 80 random candidates of 154 rows was 18.6
        nats below the exact log marginal likelihood, that of 80 spread
        ones 0.1 (doc/selective_svgp.rst). The choice stops early, with
        fewer candidates, once the remaining inputs add no variance under
        that kernel (to round-off). Up to 5,000 points the kernel is the
        length-scale screen's best on the exact marginal likelihood (of
        1,000 evenly spaced rows at most), and the pool grows past
        ``n_candidates`` (to 400 at most) while its Nystrom residual costs
        the bound over 0.05 nats per point.
    candidates : array-like of shape (K, n_features), default=None
        Explicit candidate inducing inputs; overrides ``n_candidates``.
    alpha : float, default=0.01
        Prior strength: ``p(Z)`` is proportional to ``exp(-alpha |Z|^2)``.
        Larger values keep fewer points; more data outweighs the prior, so
        the useful value grows with the data size (the seed paper uses 0.01
        for 1030 points, 0.2 for 45730).
    n_score_samples : int, default=4
        Draws from the point process per selection step.
    n_pre_iter : int, default=2000
        Maximum L-BFGS-B iterations of the pre-training on all candidates;
        a budget only: L-BFGS-B stops on its own (per-point, so scale-free)
        tolerances first on ordinary data.
    n_select_iter : int, default=2000
        Most Adam steps of the selection phase. The phase ends earlier, as
        soon as its objective and ``E|Z|`` stop trending against their own
        Monte Carlo error (checked every 50 steps from step 100); when it
        runs out instead, a ``ConvergenceWarning`` is raised.
    n_post_iter : int, default=2000
        Maximum L-BFGS-B iterations of the post-training on the kept set; a
        budget only, as ``n_pre_iter`` (the classifier's shared ``q`` has
        ``O(m^2)`` parameters and took 719 iterations on 143 breast-cancer
        rows). Used with ``hyperparameters_from="kept"`` or ``batch_size``.
    batch_size : int, default=None
        None (the default) evaluates every bound on all points, with the
        optimal ``q(u)`` of each subset. An integer below the number of
        points switches to minibatches of that size: the uncollapsed bound
        with one ``q(v*)`` shared by the subsets (as in
        :class:`SelectiveSVGPClassifier`), Adam in all three phases
        (``n_pre_iter`` and ``n_post_iter`` then count Adam steps); the
        kept set's ``q(u)`` is replaced by the optimal one at the end (one
        pass over the data).
    learning_rate : float, default=0.01
        Adam step size of the hyperparameters in the selection phase (with
        ``hyperparameters_from="kept"`` or ``batch_size``).
    selection_learning_rate : float, default=0.2
        Adam step size of the inclusion logits.
    keep : {"expected", "threshold", "sample"}, default="expected"
        Kept set: the ``round(expected_n_inducing_)`` candidates with the
        largest inclusion probabilities (the most probable set of the
        expected size), the candidates with probability above one half
        (the mode; a ``DegenerateFitWarning`` when it is far smaller than
        the expected size), or one draw from the fitted point process
        (seeded by ``random_state``).
    hyperparameters_from : {"candidates", "kept"}, default="candidates"
        Which bound estimates the kernel hyperparameters and the noise.
        ``"candidates"``: the bound with every candidate (pre-training);
        the selection then moves only the inclusion logits, and the kept
        set gets its optimal ``q(u)`` at those hyperparameters. For fixed
        hyperparameters the collapsed bound only grows with the inducing
        set, so the bound of all candidates is the tightest lower bound on
        the log marginal likelihood at hand; the bound of a smaller set
        prefers more noise and smoother functions (Bauer, van der Wilk and
        Rasmussen, 2016), and re-fitted to the set it hides the cost of
        dropping points from the selection. ``"kept"``: the seed paper's
        pipeline, the hyperparameters move with the selection and are
        post-trained on the kept set. With ``batch_size`` the shared
        ``q(v*)`` is learned with the hyperparameters, so the fit follows
        ``"kept"`` whatever this says.
    noise_variance : float, default=1.0
        Initial Gaussian noise variance, in units of the standardised
        targets (the seed paper initialises every hyperparameter to 1).
    noise_variance_bounds : pair of float or "fixed", default=(1e-6, 1e2)
        Box for the noise variance, in the same units; ``"fixed"`` keeps
        it at ``noise_variance``.
    n_hyperparameter_draws : int, default=32
        Predictions average over this many draws of the hyperparameters
        from their Laplace approximation at the fitted point (log
        coordinates, curvature of the kept set's bound with the log prior),
        each with the kept set's optimal ``q(u)``; 0 predicts from the
        point estimate alone, the seed paper's model. On a few dozen rows
        the point estimate's noise is too small and its intervals too
        narrow (doc/selective_svgp.rst); where the data pin the
        hyperparameters down the draws add nothing but their cost, about
        ``2 p + n_hyperparameter_draws`` passes of ``O(n m^2)`` at the end
        of the fit and that many times the point estimate's prediction.
    jitter : float, default=1e-6
        Relative diagonal jitter on ``K(Z, Z)``.
    normalize_X : bool, default=True
        Centre each input column and divide it by its training standard
        deviation, at most twice its middle half's spread. Hyperparameters,
        their bounds and priors, and stored inducing inputs are then in these
        units, so the defaults mean the same thing whatever the inputs'
        natural units; ``input_scaling_`` maps between the two. Set
        ``False`` to give a kernel in the inputs' own units.
    random_state : int, RandomState instance or None, default=None
        Seeds the point-process draws and ``keep="sample"``.
    verbose : int, default=0
        Print the phases, with one progress line for the selection on
        standard error (steps, objective, ``E|Z|``, time left), updated in
        place on a terminal; 2 prints the selection's detailed lines every
        50 steps instead of the progress line.

    Attributes
    ----------
    candidates_ : ndarray of shape (K, n_features)
    inclusion_probabilities_ : ndarray of shape (K,)
        ``lambda_k`` of the fitted point process.
    support_ : ndarray of bool, shape (K,)
        Which candidates were kept.
    inducing_points_ : ndarray of shape (n_kept, n_features)
        The kept candidates; prediction costs ``O(n_kept^2)`` per point.
    n_inducing_ : int
    expected_n_inducing_ : float
        ``E|Z| = sum_k lambda_k`` under the fitted process.
    var_n_inducing_ : float
        ``Var|Z| = sum_k lambda_k (1 - lambda_k)``.
    n_iter_ : int
        Selection steps taken.
    diagnostics_ : dict
        ``fit_time`` (``fit_time_["total"]``), ``final_elbo`` (last
        post-training bound), ``n_select_steps``,
        ``selection_converged`` (whether the stopping rule was met),
        ``expected_n_inducing_trace`` (``E|Z|`` after each selection step),
        ``n_pre_iter`` and ``n_post_iter`` (L-BFGS-B iterations, or Adam
        steps with ``batch_size``), ``expected_n_inducing`` and
        ``n_inducing``, and ``n_draws_replaced`` (hyperparameter draws
        that were not finite or whose ``K(Z, Z)`` could not be factorised,
        replaced by the fitted point), in one place.
    elbo_history_ : dict of ndarray
        ``"pre"`` and ``"post"``: the bound after each L-BFGS-B iteration;
        ``"select"``: the Monte Carlo estimate of ``E_q[L(Z)] - KL`` at each
        selection step. Standardised-target units; every bound includes
        the log prior of the hyperparameters.
    elbo_ : float
        The bound of the kept set after post-training, plus the log prior
        of the hyperparameters.
    kernel_ : sklearn kernel
        The kernel with the fitted hyperparameters.
    param_names_ : list of str
        Names of the point-estimated hyperparameters: the ``kernel_.theta``
        entries, then ``"noise_variance"`` (the classifier has no noise).
    noise_variance_ : float
        Fitted noise variance (the point estimate), in the units of ``y``.
    draws_ : ndarray of shape (n_draws, n_params)
        The hyperparameters predictions average over, log coordinates
        (standardised targets), columns ``param_names_``: the Laplace
        draws, or the point estimate as the one row with
        ``n_hyperparameter_draws=0``.
    kernels_ : list of sklearn kernels
        One kernel per row of ``draws_``.
    y_mean_, y_std_ : float
        Standardisation of ``y``.
    fit_time_ : dict
        Seconds spent in each phase.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string feature names.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SelectiveSVGP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 10, (200, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(200)
    >>> reg = SelectiveSVGP(n_candidates=30, alpha=0.05, n_select_iter=100,
    ...                     random_state=0).fit(X, y)
    >>> reg.n_inducing_ < 30
    True
    >>> mean, std = reg.predict(X[:3], return_std=True)
    >>> mean.shape, std.shape
    ((3,), (3,))
    """

    _parameter_constraints = {
        "kernel": [None, Kernel],
        "priors": [None, dict],
        "n_candidates": [Interval(Integral, 1, None, closed="left")],
        "candidates": [None, "array-like"],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "n_score_samples": [Interval(Integral, 1, None, closed="left")],
        "n_pre_iter": [Interval(Integral, 0, None, closed="left")],
        "n_select_iter": [Interval(Integral, 0, None, closed="left")],
        "n_post_iter": [Interval(Integral, 0, None, closed="left")],
        "batch_size": [None, Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "selection_learning_rate": [Interval(Real, 0, None, closed="neither")],
        "keep": [StrOptions({"expected", "threshold", "sample"})],
        "hyperparameters_from": [StrOptions({"candidates", "kept"})],
        "noise_variance": [Interval(Real, 0, None, closed="neither")],
        "noise_variance_bounds": [StrOptions({"fixed"}), tuple, list, np.ndarray],
        "n_hyperparameter_draws": [Interval(Integral, 0, None, closed="left")],
        "jitter": [Interval(Real, 0, None, closed="left")],
        "normalize_X": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        kernel=None,
        *,
        priors=None,
        n_candidates=80,
        candidates=None,
        alpha=0.01,
        n_score_samples=4,
        n_pre_iter=2000,
        n_select_iter=2000,
        n_post_iter=2000,
        batch_size=None,
        learning_rate=0.01,
        selection_learning_rate=0.2,
        keep="expected",
        hyperparameters_from="candidates",
        noise_variance=1.0,
        noise_variance_bounds=NOISE_VARIANCE_BOUNDS,
        n_hyperparameter_draws=32,
        jitter=1e-6,
        normalize_X=True,
        random_state=None,
        verbose=0,
    ):
        self.kernel = kernel
        self.priors = priors
        self.n_candidates = n_candidates
        self.candidates = candidates
        self.alpha = alpha
        self.n_score_samples = n_score_samples
        self.n_pre_iter = n_pre_iter
        self.n_select_iter = n_select_iter
        self.n_post_iter = n_post_iter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.selection_learning_rate = selection_learning_rate
        self.keep = keep
        self.hyperparameters_from = hyperparameters_from
        self.noise_variance = noise_variance
        self.noise_variance_bounds = noise_variance_bounds
        self.n_hyperparameter_draws = n_hyperparameter_draws
        self.jitter = jitter
        self.normalize_X = normalize_X
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ fitting
    @fit_method
    def fit(self, X, y):
        """Pre-train, select the inducing points, post-train.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : SelectiveSVGP

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SelectiveSVGP
        >>> X = np.linspace(0, 10, 60)[:, None]
        >>> reg = SelectiveSVGP(n_candidates=10, random_state=0)
        >>> reg = reg.fit(X, np.cos(X[:, 0]))
        >>> # one probability per candidate; noiseless targets grow the pool
        >>> # past n_candidates
        >>> reg.inclusion_probabilities_.shape == (len(reg.candidates_),)
        True
        >>> len(reg.candidates_) >= 10
        True
        """
        with atomic_feature_state(self):
            check_single_target(y, type(self).__name__, _SINGLE_TARGET)
            X, y = validate_data(
                self, X, y, dtype=np.float64, order="C", y_numeric=True
            )
            X_model, scaling = fit_input_scaling(self, X)
            check_input_magnitude(X_model)
            y_mean, y_std = safe_mean_std(y)
            y_std_units = (y - y_mean) / y_std
            rng = check_random_state(self.random_state)
            seeds = rng.randint(0, 2**31 - 1, size=4)
            Zc = candidate_inputs(self, X_model, scaling, y_std_units)
            with blas_threads_for(X.shape[0], Zc.shape[0]):
                fitted = prior_only(self, X.shape[0])._fit_phases(
                    X_model, y_std_units, Zc, seeds
                )
        fitted["input_scaling_"] = scaling
        fitted["y_mean_"], fitted["y_std_"] = float(y_mean), float(y_std)
        noise = fitted.pop("_noise_std_units")
        fitted["noise_variance_"] = float(variance_in_units(noise, y_std))
        self._set_fitted(fitted)
        warn_degenerate_fit(self, X, y)
        return self

    def _fit_phases(self, X, y, Zc, seeds):
        t0 = time.perf_counter()
        kernel = self._new_kernel(X.shape[1])
        adapter = KernelAdapter(kernel)
        kernel_bounds = kernel_log_bounds(kernel, adapter)
        log_noise_box, log_noise0 = noise_box(
            self.noise_variance, self.noise_variance_bounds
        )
        bounds = np.vstack([kernel_bounds, [log_noise_box]])
        theta0 = np.clip(kernel.theta, kernel_bounds[:, 0], kernel_bounds[:, 1])
        hyper = np.append(theta0, log_noise0)
        # the default policy's priors, as every other estimator: without them
        # the bound's maximum on a dozen rows interpolates them with a length
        # scale of a thousandth and no noise (doc/selective_svgp.rst)
        prior_set = estimator_prior_set(
            adapter, self.priors, X.shape[1], noise=True, regression=True
        )
        bound = SubsetBound(adapter, X, y, Zc, jitter=self.jitter, prior_set=prior_set)
        if self.batch_size is not None and self.batch_size < X.shape[0]:
            out = self._minibatch_phases(
                adapter, X, y, Zc, hyper, bounds, seeds, prior_set
            )
        else:
            out = self._collapsed_phases(bound, hyper, bounds, seeds, t0)
        hyper, kept = out["hyper"], out["kept"]
        # whatever trained the hyperparameters, q(u) of the kept set is the
        # optimal one, and the bound reported is its collapsed bound
        elbo = bound.value(hyper, kept)
        # a point estimate on a few dozen rows over-trusts its noise: the
        # predictions average over the hyperparameters' Laplace posterior
        t_draws = time.perf_counter()
        draws = hyperparameter_draws(
            bound,
            hyper,
            bounds,
            kept,
            self.n_hyperparameter_draws,
            np.random.default_rng(int(seeds[3])),
        )
        *q, n_replaced = optimal_q_per_draw(bound, draws, kept, hyper)
        out["times"]["laplace"] = time.perf_counter() - t_draws
        out["times"]["total"] += out["times"]["laplace"]
        if self.verbose:
            self._log(
                f"kept {kept.size} of {Zc.shape[0]} candidates "
                f"(E|Z| = {out['lam'].sum():.1f}); bound {elbo:.4g}; "
                f"{len(draws)} hyperparameter draws "
                f"({out['times']['laplace']:.2f} s; {time.perf_counter() - t0:.2f} s)"
            )
        fitted = selection_attributes(Zc, out)
        # without post-training the kept set's bound is the final one
        fitted["diagnostics_"]["final_elbo"] = float(elbo)
        fitted["diagnostics_"]["n_draws_replaced"] = n_replaced
        theta = hyper[:-1].copy()
        names = [*adapter.param_names, "noise_variance"]
        warn_at_bounds(hyper, bounds, names, "point estimates", y=y)
        fitted.update(
            {
                "elbo_": float(elbo),
                "kernel_": kernel.clone_with_theta(theta),
                "param_names_": names,
                "_noise_std_units": float(np.exp(hyper[-1])),
                "_adapter": adapter,
                "draws_": draws,
                "kernels_": [kernel.clone_with_theta(t) for t in draws[:, :-1]],
                "_q": tuple(q),
            }
        )
        return fitted

    def _collapsed_phases(self, bound, hyper, bounds, seeds, t0):
        K = bound.candidates.shape[0]
        everything = np.arange(K)

        # 1. pre-training on all candidates, also from the length-scale
        # screen's best point (skgp_bayes._starts) when it beats the start
        hyper, pre_trace = pre_train(bound, hyper, bounds, everything, self.n_pre_iter)
        t1 = time.perf_counter()
        if self.verbose:
            self._log(
                f"pre-training: bound {bound.value(hyper, everything):.4g} with "
                f"{K} candidates ({t1 - t0:.2f} s)"
            )

        # 2. selection
        learn = self.hyperparameters_from == "kept"
        process = BernoulliPointProcess(K, self.alpha)
        logits = np.full(K, logit(INITIAL_INCLUSION))
        hyper, logits, select_trace, counts, stopped = selection_phase(
            self,
            lambda h, masks, rows: bound.values_and_mean_grad(h, masks),
            hyper,
            logits,
            bounds,
            process,
            np.random.default_rng(int(seeds[1])),
            bound.X.shape[0],
            # each subset has its own optimal q(u), so the bounds of a
            # step's draws differ only by the subsets: the mean of the other
            # draws is the level of the bound at the current hyperparameters,
            # with no lag (see doc/selective_svgp.rst)
            baseline="leave-one-out",
            learn_params=learn,
        )
        warn_unfinished_selection(self, stopped, len(select_trace))
        t2 = time.perf_counter()

        # 3. keep a set, post-train (only a set's own hyperparameters)
        support = keep_points(self, process, logits, int(seeds[2]))
        kept = np.flatnonzero(support)
        post_trace = []
        if learn:
            hyper, post_trace = self._post_train(bound, hyper, bounds, kept)
        t3 = time.perf_counter()
        return {
            "hyper": hyper,
            "kept": kept,
            "support": support,
            "lam": process.probabilities(logits),
            "process": process,
            "logits": logits,
            "traces": {"pre": pre_trace, "select": select_trace, "post": post_trace},
            "counts": counts,
            "stopped": stopped,
            "times": {
                "pre": t1 - t0,
                "select": t2 - t1,
                "post": t3 - t2,
                "total": t3 - t0,
            },
        }

    def _post_train(self, bound, hyper, bounds, kept):
        hyper, trace, converged = maximise_bound(
            lambda h, _: bound.logp_and_grad(h, kept),
            hyper,
            bounds,
            self.n_post_iter,
            bound.X.shape[0],
        )
        if not converged:
            warn_user(
                f"Post-training did not converge in {self.n_post_iter} L-BFGS-B "
                "iterations; increase n_post_iter.",
                ConvergenceWarning,
            )
        return hyper, trace

    def _minibatch_phases(self, adapter, X, y, Zc, hyper, bounds, seeds, prior_set):
        # minibatches need the uncollapsed bound, with q(v*) learned and
        # shared by the subsets (as in the classifier)
        shared = SharedSubsetBound(
            adapter,
            X,
            y,
            Zc,
            Gaussian(float(np.exp(hyper[-1]))),
            jitter=self.jitter,
            learn_noise=True,
            prior_set=prior_set,
        )
        shared_bounds = np.tile([-np.inf, np.inf], (shared.n_params, 1))
        shared_bounds[: shared.n_hyper] = bounds
        start = shared.full.initial_params(hyper[:-1], hyper[-1])
        out = fit_shared_phases(self, shared, start, shared_bounds, seeds)
        out["hyper"] = np.array(out["sub_params"][: shared.n_hyper])
        return out

    # ---------------------------------------------------------- prediction
    @property
    def _thetas(self):
        """The kernel's log hyperparameters of each draw."""
        return self.draws_[:, :-1]

    @property
    def _noise_draws(self):
        """Each draw's noise variance, standardised units."""
        return np.exp(self.draws_[:, -1])

    def _latent(self, X, full_cov=False):
        """Each draw's latent means and variances (or covariances),
        standardised units."""
        return latent_per_draw(
            self._adapter,
            self._thetas,
            self.inducing_points_,
            self.jitter,
            *self._q,
            X,
            full_cov,
        )

    @public_method
    def predict(self, X, return_std=False, return_cov=False, *, noise=False):
        """Predictive mean (and spread) of the latent function.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        return_std : bool, default=False
            Also return the standard deviation of the latent function (as
            in scikit-learn, without the observation noise).
        return_cov : bool, default=False
            Also return the joint covariance of the latent function.
        noise : bool, default=False
            Add ``noise_variance_``: the spread of a noisy observation.

        Returns
        -------
        mean : ndarray of shape (n_queries,)
        std : ndarray of shape (n_queries,), only if ``return_std``
        cov : ndarray of shape (n_queries, n_queries), only if ``return_cov``

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SelectiveSVGP
        >>> X = np.linspace(0, 10, 60)[:, None]
        >>> reg = SelectiveSVGP(n_candidates=10, random_state=0)
        >>> reg = reg.fit(X, np.cos(X[:, 0]))
        >>> mean, std = reg.predict(X[:2], return_std=True)
        >>> bool(np.all(std > 0))
        True
        >>> mean, cov = reg.predict(X[:2], return_cov=True)
        >>> cov.shape
        (2, 2)
        """
        if return_std and return_cov:
            raise RuntimeError(
                "At most one of return_std or return_cov can be requested."
            )
        draws = self._predictive_draws(self._validate_query(X), full_cov=return_cov)
        return mixture_prediction(draws, return_std, return_cov, noise)

    def _predictive_draws(self, X, full_cov=False):
        """Each draw's ``q(f)`` as :class:`LatentDraws`, standardised units."""
        means, spread = self._latent(X, full_cov=full_cov)
        return LatentDraws(means, spread, self._noise_draws, self.y_mean_, self.y_std_)

    def _observation_predictive(self, X):
        return GaussianMixturePredictive.from_draws(self._predictive_draws(X))

    def _functions(self, n_samples, random_state, n_features, **kw):
        check_is_fitted(self)
        check_n_samples(n_samples)
        q_means, q_factors = self._q
        return sparse_function_samples(
            self._adapter,
            self.inducing_points_,
            self.jitter,
            self._thetas,
            q_means[:, :, None],
            q_factors[:, None],
            n_samples,
            check_random_state(random_state),
            n_features,
            **kw,
        )

    @public_method
    def sample_y(self, X, n_samples=1, random_state=0, method="auto", n_features=None):
        """Joint draws of the latent function at ``X``.

        Draws from ``q(f)`` of the kept inducing points and their optimal
        ``q(u)``: exactly from the dense covariance (``"exact"``), or as
        pathwise samples (``"pathwise"``, see :meth:`sample_functions`).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0
        method : {"auto", "exact", "pathwise"}, default="auto"
            ``"exact"`` costs ``O(n_queries^3)`` time and
            ``O(n_queries^2)`` memory; ``"pathwise"`` costs
            ``O(n_queries (n_features + n_inducing_))`` per sample and
            approximates the prior covariance with ``n_features`` Fourier
            features. ``"auto"`` samples pathwise from 100 query points on
            and exactly below; kernels without a spectral density are
            always sampled exactly.
        n_features : int, default=None
            Fourier features for ``"pathwise"``; None uses 1024.

        Returns
        -------
        ndarray of shape (n_queries, n_samples)
            As in scikit-learn: draws of the latent function (plus a
            ``WhiteKernel``'s noise), without the observation noise.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SelectiveSVGP
        >>> X = np.linspace(0, 10, 60)[:, None]
        >>> reg = SelectiveSVGP(n_candidates=10, random_state=0)
        >>> reg = reg.fit(X, np.cos(X[:, 0]))
        >>> reg.sample_y(X[:4], n_samples=3).shape
        (4, 3)
        >>> grid = np.linspace(0, 10, 1000)[:, None]
        >>> reg.sample_y(grid, n_samples=3, method="pathwise").shape
        (1000, 3)
        """
        X = self._validate_query(X)
        check_n_samples(n_samples)
        spec = sample_y_spec(self._adapter.kernel, method, X.shape[0])
        rng = check_random_state(random_state)
        if spec is not None:
            (functions,), white = self._functions(
                n_samples, rng, n_features, offset=self.y_mean_, scale=self.y_std_
            )
            return add_white_noise(
                functions(X), functions.draws, white, self.y_std_, rng
            )
        out = mixture_joint_draws(
            self._adapter,
            self._thetas,
            self.inducing_points_,
            self.jitter,
            *self._q,
            X,
            n_samples,
            rng,
        )
        return out * self.y_std_ + self.y_mean_

    @public_method
    def sample_functions(self, n_samples=1, random_state=0, n_features=None):
        """Posterior function samples that can be evaluated anywhere.

        Pathwise samples of ``q(f)``: a random-Fourier-feature prior draw
        plus Matheron's update ``k(x, Z) K(Z, Z)^-1 (u - f_prior(Z))`` with
        ``u`` drawn from the optimal ``q(u)`` of the kept inducing points
        ``Z``. The functions are frozen (every call returns the same
        values), have analytic input gradients and pickle; evaluation costs
        ``O(n_points (n_features + n_inducing_))`` per function.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0
        n_features : int, default=None
            Fourier features; None uses 1024. The error of the prior
            covariance falls as ``1 / sqrt(n_features)``.

        Returns
        -------
        functions : skgp_bayes.sampling.FunctionSamples
            ``functions(X)`` has shape ``(n_points, n_samples)``, in the
            units of ``y``; ``functions.gradient(X)`` has shape
            ``(n_points, n_samples, n_features_in_)``. A ``WhiteKernel``'s
            noise is not part of them.

        Raises
        ------
        ValueError
            If the kernel has no spectral density (use :meth:`sample_y` with
            ``method="exact"`` instead).

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SelectiveSVGP
        >>> X = np.linspace(0, 10, 60)[:, None]
        >>> reg = SelectiveSVGP(n_candidates=10, random_state=0)
        >>> f = reg.fit(X, np.cos(X[:, 0])).sample_functions(3, random_state=0)
        >>> f(X[:4]).shape, f.gradient(X[:4]).shape
        ((4, 3), (4, 3, 1))
        >>> bool(np.array_equal(f(X[:4]), f(X[:4])))
        True
        """
        check_is_fitted(self)
        require_spectral_spec(self._adapter.kernel, "sample_y(X, method='exact')")
        functions, _ = self._functions(
            n_samples, random_state, n_features, offset=self.y_mean_, scale=self.y_std_
        )
        return in_natural_units(functions[0], self)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags
