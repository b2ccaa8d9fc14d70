"""Gaussian-process classification by variational MCMC."""

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import fit_method
from .._defaults import in_natural_units
from .._fit_checks import warn_degenerate_fit
from .._predictive_contract import (
    binary_log_odds,
    has_two_classes,
    log_of_proba,
    proba_from_log_odds,
)
from .._public import public_method
from .._validation import atomic_feature_state
from ..likelihoods import Bernoulli, RobustMax, Softmax
from ..sampling import require_spectral_spec
from ..targets.sparse import softmax_mixture_proba
from ._base import VariationalMCMCBase


class VariationalMCMCClassifier(ClassifierMixin, VariationalMCMCBase):
    """Gaussian-process classification by variational MCMC.

    A sparse variational (SVGP) fit places the inducing inputs and gives a
    Gaussian approximation; HMC then samples the hyperparameters and the
    whitened inducing values jointly from the sparse whitened posterior of
    Hensman et al. (2015), so predictions carry both the hyperparameter and
    the non-Gaussian latent uncertainty. See the module notes for the
    pipeline.

    Parameters
    ----------
    kernel : sklearn kernel, default=None
        Prior covariance, shared by all latent functions; its ``theta``
        starts the fit and its ``bounds`` bound the hyperparameters. None
        gives ``ConstantKernel(1.0) * RBF(sqrt(d) * ones(d))`` on
        standardised inputs, one length scale per input (see
        :ref:`defaults`).
    n_inducing : int, default=None
        Number of inducing inputs placed by k-means (fewer if ``X`` has
        fewer distinct rows). Ignored when ``inducing_points`` is given.
        None uses ``min(50, ceil(sqrt(n)))`` for ``n`` training points: a
        Nystrom approximation with centres of the order of ``sqrt(n)``
        (up to a log factor) already reaches the optimal statistical rate
        of the full kernel method (Rudi, Camoriano and Rosasco, 2015), and
        the smooth kernels used here, whose spectra decay fast, need fewer;
        the inducing inputs are optimised besides. Every inducing value is
        a sampled parameter: fewer of them make each gradient cheaper
        (``O(n m^2)``) and the chains shorter (the run-length rule must hold
        for every parameter). The cap of 50 keeps large problems at the
        cost of the former fixed default.
    inducing_points : array-like of shape (m, n_features), default=None
        Initial inducing inputs, instead of k-means. They are optimised
        with the SVGP when the kernel has input gradients (RBF or Matern,
        optionally times a constant plus a white kernel) and
        ``optimize_inducing`` is true.
    optimize_inducing : bool, default=True
        Optimise the inducing inputs with the Gaussian approximation (only
        possible for kernels with input gradients; others keep them where
        they start). They are fixed during sampling either way.
    link : {"logit", "probit"}, default="logit"
        Link of the Bernoulli likelihood for two classes.
    multiclass : {"robustmax", "softmax"}, default="softmax"
        Likelihood for more than two classes: softmax, whose expectation
        the sampled target takes with a degree-5 cubature rule up to eight
        classes (:func:`~skgp_bayes.targets.sparse.softmax_rule`; the
        Gaussian approximation and more classes use fixed Monte Carlo
        draws) and ``predict_proba`` with each kept draw's own nodes
        (:func:`~skgp_bayes.targets.sparse.softmax_mixture_proba`), or
        robust-max with ``epsilon = 1e-3`` (the seed paper's section 4.4).
        Robust-max is almost a step
        function of the latent values where their conditional variance is
        small, and HMC then mixes slowly between class regions (a fixed
        ``WhiteKernel`` nugget in the kernel smooths it, as the seed paper
        suggests); softmax is smooth. On wine (124 training points) the
        default fit with robust-max spent the 2,000-iteration budget with
        split R-hat 1.024 and two divergences; with softmax it met the
        run-length rule after the first 250 iterations, without a
        divergence.
    n_chains : int, default=4
        Independent HMC chains.
    n_warmup : int, default=300
        Warm-up (adaptation) iterations per chain, discarded. The chains
        run in coordinates scaled by the curvature of the posterior (see
        the module notes); a quarter adapts step and diagonal mass there, a
        quarter draws, whose covariance over all chains refines the
        coordinates, and the remaining half adapts again in the refined
        ones (each part with Stan's schedule: a step-size buffer, doubling
        windows of the diagonal mass adaptation, a terminal buffer).
    n_samples : int, default=250
        Sampling iterations per chain in the first block after warm-up.
        Each further block adds a quarter of the iterations so far, at
        most ``n_samples``.
    max_samples : int, default=5000
        Budget of sampling iterations per chain. After each block the
        split R-hat and the bulk effective sample size of every parameter
        are computed over all kept draws; sampling stops once R-hat is at
        most 1.01 and the bulk ESS at least 100 for every parameter, and
        otherwise continues by another block (see ``n_samples``) until the
        budget is spent, when a :class:`~skgp_bayes.exceptions.SamplerWarning`
        gives the figures. The budget binds only on chains that mix
        slowly: R-hat's own noise is about ``1 / (2 ESS)`` per split chain,
        so R-hat <= 1.01 holds reliably only from a bulk ESS of about 500,
        which a parameter mixing at 3% effective draws per iteration (a
        length scale on counts, for one) reaches after some 4,000
        iterations of 4 chains (see the run-length notes in the user
        guide).
    thin : int, default=1
        Keep every ``thin``-th sampling iteration.
    max_leapfrog : int or None, default=None
        Bound of the number of leapfrog steps, drawn uniformly from
        ``1..N`` for every transition (the jitter breaks periodicities,
        Neal 2011, section 3.2). None sets ``N = ceil(pi / step)`` for the
        adapted step: in the curvature-scaled coordinates, with the mass
        adapted, the posterior is close to a standard normal, whose
        Hamiltonian flow turns with period ``2 pi``; a time of ``pi / 2``
        (a quarter turn, the mean of the jittered times) maps a position to
        an independent one. A fixed ``N`` ties the path length to the step
        instead: on iris the step adapted to 0.17, ``N = 10`` gave paths of
        0.9 on average, and after 2,000 iterations the bulk ESS of a length
        scale was still 122 with R-hat 1.03; ``N = 20`` met the run-length
        rule after 1,500 iterations (bulk ESS 588), 3.4 times the ESS per
        gradient. An integer gives ``N`` directly. With
        ``sampler="nuts"`` it caps a trajectory instead: at most
        ``2^k - 1`` steps for the largest such number not above it (None:
        ``k = 10``, 1,023 steps).
    sampler : {"hmc", "nuts"}, default="hmc"
        ``"hmc"``: static HMC with the jittered path length above.
        ``"nuts"``: the No-U-Turn sampler
        (:func:`~skgp_bayes.inference.nuts_step`), whose trajectories stop
        where they turn back. In the curvature-scaled coordinates the
        posterior is close to a standard normal, for which a jittered time
        of ``pi / 2`` on average is already the right length, and NUTS,
        which doubles its trajectory until it has turned, spends up to
        twice the gradients of a transition of that length: measured on
        the defaults suite, NUTS took 2.1 times as long as static HMC on
        fair and as long on iris, and needed 1.5 times fewer gradients per
        effective draw of the slowest parameter in sampling on breast
        cancer, whose skewed length scales a fixed time suits less (warm-up,
        where NUTS grows long trajectories while the step adapts, made the
        whole fit 1.2 times longer there too). Choose it for a posterior
        far from Gaussian in those coordinates.
    target_accept : float, default=0.9
        Target acceptance probability of the step-size adaptation. The
        whitened parametrisation couples the hyperparameters and ``v`` in
        a funnel (small length scales or signal variances narrow the
        posterior of ``v``), where Stan's advice for funnels is a target
        above its default 0.8; at 0.8 a default fit on diabetes diverged
        twice in 3,000 transitions.
    priors : dict, default=None
        Priors on the natural scale by hyperparameter name; missing
        names get the defaults of :ref:`defaults`.
    batch_size : int, default=None
        Minibatch size of the Adam fit of the Gaussian approximation. None
        uses full-batch L-BFGS-B up to 5000 points and minibatches of 512
        beyond; a ``batch_size`` below ``n_samples`` selects Adam.
    svgp_max_iter : int, default=None
        Most L-BFGS-B iterations, or the Adam steps, of the Gaussian
        approximation. L-BFGS-B stops earlier, as converged, once the bound
        has risen by less than ``1e-4`` nats per training point over the
        last 10 iterations; a gain in nats does not depend on the units of
        ``X`` or ``y``. None gives L-BFGS-B SciPy's own guard of 15,000
        iterations, so that the rule, not the budget, ends a run (a run that
        reaches it has gained at least 0.15 nats per point), and minibatch
        Adam, which has no stopping rule, 1,000 steps. Where k-means places
        the inducing inputs and L-BFGS-B fits, the bound is maximised from
        three placements (the optimised inducing inputs have local optima:
        on modechoice half of single starts ended 4 nats lower, and
        predicted worse), each with this budget, and the highest ELBO is
        kept.
    learning_rate : float, default=0.01
        Adam's learning rate (minibatch fits only).
    normalize_X : bool, default=True
        Centre each input column and divide it by its training standard
        deviation, at most twice its middle half's spread. Hyperparameters,
        their bounds and priors, and stored inducing inputs are then in these
        units, so the defaults mean the same thing whatever the inputs'
        natural units; ``input_scaling_`` maps between the two. Set
        ``False`` to give a kernel in the inputs' own units.
    random_state : int, RandomState instance or None, default=None
        Seeds k-means, the minibatches, the chain starts and the chains.
    n_jobs : int, default=None
        How the chains share the machine; the result does not depend on it.
        None: on threads of this process where their trajectories run in
        compiled code (the default kernels and priors) and a transition's
        compiled work (about 150 us) outweighs the threads' cost, one per
        chain up to
        :func:`numba.get_num_threads` (``NUMBA_NUM_THREADS``, which joblib's
        workers set to their share of the cores), as BLAS uses the cores
        by default; one after another otherwise. 1: one after another.
        Other values: joblib's ``n_jobs`` (processes, or the backend of
        :func:`joblib.parallel_config`).
    verbose : int, default=0
        1 shows one progress line per stage on standard error, updated in
        place on a terminal (the Gaussian approximation's bound, then the
        chains' acceptance rate and divergences, with the time left), and
        R-hat and ESS after every block; 2 prints instead the detailed
        lines: the bound every tenth of ``svgp_max_iter`` (every 100
        iterations with larger budgets), about ten lines
        per chain through warm-up and the first sampling block; 3 also
        prints the chains' progress through the further blocks.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    draws_ : ndarray of shape (n_chains * n_kept, n_params)
        Kept draws, chain after chain: ``[kernel theta (log scale), v]``
        with ``v`` of shape ``(m, C)`` flattened in C order. Predictions
        average over them.
    samples_ : ndarray of shape (n_chains, n_kept, n_params)
        ``draws_`` split by chain (a view), the layout of ``rhat_`` and
        ``ess_``. Until this release ``samples_`` was the pooled array now
        in ``draws_``; the first read warns (``FutureWarning``).
    param_names_ : list of str
    inducing_points_ : ndarray of shape (m, n_features)
        Inducing inputs (from the SVGP), fixed during sampling.
    kernel_ : kernel
        The kernel at the Gaussian approximation's hyperparameters.
    kernels_ : list of kernel
        One kernel per row of ``draws_``.
    rhat_, ess_ : ndarray of shape (n_params,)
        Split R-hat and bulk effective sample size (of the rank-normalised
        split chains, Vehtari et al. 2021) per parameter (NaN when too few
        draws are kept to compute them).
    acceptance_rate_ : float
        Mean acceptance probability after warm-up, over chains.
    n_divergences_ : int
        Divergent transitions after warm-up, over chains.
    step_size_ : ndarray of shape (n_chains,)
        Step size of each chain after warm-up: the geometric mean of the
        steps the chains adapted (shortened after a divergence, see
        ``diagnostics_["step_backoffs"]``), the same for all of them.
    inv_mass_ : ndarray of shape (n_chains, n_params)
        Diagonal of each chain's inverse mass matrix after warm-up, in
        ``(theta, v)`` coordinates (with the curvature scaling, the
        diagonal of ``T diag(m) T'``; for a coordinate with a sinh map,
        times the map's squared slope at the centre).
    svgp_params_ : ndarray
        Parameters of the fitted SVGP bound.
    svgp_elbo_ : float
        Its value (the ELBO plus the log prior).
    trace_ : dict of ndarray
        ``svgp_elbo`` per optimiser iteration; per chain and iteration
        ``accept_prob``, ``step_sizes``, ``divergent``, ``n_leapfrog``, ``energy``; the
        log density of the kept draws.
    fit_time_ : dict
        Seconds spent in the SVGP, in HMC and in total.
    diagnostics_ : dict
        ``fit_time`` (``fit_time_["total"]``), ``max_rhat``, ``min_ess``,
        ``n_divergences``, ``acceptance_rate``,
        the final ``step_size`` per chain, the relative ``jitter`` on
        ``K(Z, Z)``, the SVGP's ``svgp_elbo`` and ``svgp_iterations`` (all
        starts together), the
        ``sampling_iterations`` per chain that the run-length rule took and
        the number of ``sampling_blocks``, the ``step_backoffs`` (restarts
        with a step shortened by ``2 ** -0.5`` after a divergent
        transition, whose draws became warm-up), the
        ``retried_trajectories`` (failed trajectories tried again with a
        quarter of the step, warm-up included) and those of them
        ``retried_accepted``, whether the chains ran in
        curvature-scaled coordinates (``preconditioned``), how many
        skewed hyperparameters the chains gave a sinh map (``skew_maps``)
        and whether the maps were refitted from the first sampling block's
        draws (``maps_refitted``), in one place.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,)
        Only when ``X`` has string feature names.

    See Also
    --------
    VariationalMCMCRegressor : the same for counts and real targets.
    skgp_bayes.SteinGPClassifier : particle posterior over the exact GP.

    References
    ----------
    J. Hensman, A. G. de G. Matthews, M. Filippone and Z. Ghahramani,
    "MCMC for variationally sparse Gaussian processes", NeurIPS 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import VariationalMCMCClassifier
    >>> X = np.linspace(-3, 3, 40)[:, None]
    >>> y = (np.sin(2 * X[:, 0]) > 0).astype(int)
    >>> clf = VariationalMCMCClassifier(
    ...     n_inducing=8, n_chains=2, n_warmup=100, n_samples=100, max_samples=100,
    ...     max_leapfrog=10, random_state=0)
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     _ = clf.fit(X, y)
    >>> clf.predict_proba(X[:3]).shape, clf.draws_.shape
    ((3, 2), (200, 10))
    """

    _parameter_constraints = {
        **VariationalMCMCBase._common_constraints,
        "link": [StrOptions({"logit", "probit"})],
        "multiclass": [StrOptions({"robustmax", "softmax"})],
    }

    def __init__(
        self,
        kernel=None,
        *,
        n_inducing=None,
        inducing_points=None,
        optimize_inducing=True,
        link="logit",
        multiclass="softmax",
        n_chains=4,
        n_warmup=300,
        n_samples=250,
        max_samples=5000,
        thin=1,
        max_leapfrog=None,
        sampler="hmc",
        target_accept=0.9,
        priors=None,
        batch_size=None,
        svgp_max_iter=None,
        learning_rate=0.01,
        normalize_X=True,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.kernel = kernel
        self.n_inducing = n_inducing
        self.inducing_points = inducing_points
        self.optimize_inducing = optimize_inducing
        self.link = link
        self.multiclass = multiclass
        self.n_chains = n_chains
        self.n_warmup = n_warmup
        self.n_samples = n_samples
        self.max_samples = max_samples
        self.thin = thin
        self.max_leapfrog = max_leapfrog
        self.sampler = sampler
        self.target_accept = target_accept
        self.priors = priors
        self.batch_size = batch_size
        self.svgp_max_iter = svgp_max_iter
        self.learning_rate = learning_rate
        self.normalize_X = normalize_X
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    @fit_method
    def fit(self, X, y):
        """Fit the Gaussian approximation, then sample by HMC.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : VariationalMCMCClassifier

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, max_samples=10,
        ...                                 random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, y)
        >>> clf.classes_
        array([0, 1])
        """
        with atomic_feature_state(self):
            X, y = validate_data(self, X, y, dtype=np.float64, order="C")
            check_classification_targets(y)
            classes, y_enc = np.unique(y, return_inverse=True)
            if classes.size < 2:
                raise ValueError(
                    f"{type(self).__name__} requires 2 classes; got 1 class "
                    f"(label {classes[0]!r})."
                )
            if classes.size == 2:
                likelihood = Bernoulli(link=self.link)
                y_lik = y_enc.astype(np.float64)
            elif self.multiclass == "robustmax":
                likelihood = RobustMax(classes.size, epsilon=1e-3)
                y_lik = y_enc
            else:
                likelihood = Softmax(classes.size, random_state=0)
                y_lik = y_enc
            fitted = self._fit_pipeline(X, y_lik, likelihood, None)
        fitted["classes_"] = classes
        self._set_fitted(fitted)
        warn_degenerate_fit(self._for_fit_checks(), X, y)
        return self

    def _proba_from_moments(self, mu, var):
        """Class probabilities ``(..., k, n_classes)`` from latent moments."""
        lik = self._likelihood
        if self._n_latent == 1:
            p1 = lik.predictive(mu[..., 0], var[..., 0])
            return np.stack([1.0 - p1, p1], axis=-1)
        # A draw's variance is shared by the classes (shape (k, 1)); the
        # Gaussian approximation's is per class.
        shape = mu.shape
        var = np.maximum(np.broadcast_to(var, shape), 1e-12)
        proba = lik.predictive(mu.reshape(-1, shape[-1]), var.reshape(-1, shape[-1]))
        return proba.reshape(shape)

    @public_method
    def predict_proba(self, X, method="mcmc"):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        method : {"mcmc", "gaussian"}, default="mcmc"
            ``"mcmc"`` averages ``E[p(y | f)]`` over the kept draws, each
            with its latent ``f | v, theta ~ N(A' v, gamma)``;
            ``"gaussian"`` uses the SVGP approximation alone, for
            comparison.

        Returns
        -------
        proba : ndarray of shape (n_queries, n_classes)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, max_samples=10,
        ...                                 random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, y)
        >>> clf.predict_proba(X[:2]).shape
        (2, 2)
        >>> clf.predict_proba(X[:2], method="gaussian").shape
        (2, 2)
        """
        return self._proba(self._validate_query(X), method)

    def _proba(self, X, method):
        """``predict_proba`` at inputs already in the model's units."""
        return self._in_row_blocks(lambda X: self._block_proba(X, method), X)

    def _block_proba(self, X, method):
        """:meth:`_proba` of one block of rows."""
        means, var = self._latent_draws(X, method)
        if self._n_latent == 1:
            # Through the log odds, so that predict_log_proba is its log.
            return proba_from_log_odds(self._log_odds(means, var))
        if method == "mcmc" and isinstance(self._likelihood, Softmax):
            # Each draw's own few nodes, for its one latent variance: the
            # target's cubature rule is biased at the large conditional sds
            # of points away from the inducing inputs (up to 0.05 in a
            # probability on modechoice), and a loop over draws with the
            # likelihood's 100 draws each took 22 s for 540 digits.
            proba = softmax_mixture_proba(means, var, self._likelihood.random_state)
        else:
            total = np.zeros((X.shape[0], self.classes_.size))
            for s in range(means.shape[0]):
                total += self._proba_from_moments(means[s], var[s])
            proba = total / means.shape[0]
            proba /= proba.sum(axis=1, keepdims=True)
        # Through the log, so that classes whose probabilities differ by
        # round-off (the robust-max floor) rank alike in predict_log_proba.
        return np.exp(log_of_proba(proba))

    def _latent_draws(self, X, method):
        """Latent means ``(S, k, C)`` and variances per draw.

        The variances are ``(S, k, C)`` for ``"gaussian"``, whose classes
        each have their own, and ``(S, k, 1)`` for ``"mcmc"``, whose draws
        share one across classes (a copy per class took 0.5 s at 5,796
        draws).
        """
        if method == "gaussian":
            mu, var = self._gaussian_moments(X)
            return mu[None], var[None]
        if method != "mcmc":
            raise ValueError(f"method must be 'mcmc' or 'gaussian'; got {method!r}.")
        means, variances = self._draw_moments(X)
        return means, variances[..., None]

    def _log_odds(self, means, var):
        means, var = means[..., 0], var[..., 0]
        likelihood = self._likelihood
        threads = self._draw_threads(
            lambda: likelihood.log_class_probabilities(means[0], var[0])
        )
        return binary_log_odds(likelihood, means, var, threads=threads)

    @public_method
    def predict_log_proba(self, X, method="mcmc"):
        """Logarithm of :meth:`predict_proba`, finite in the tails for two classes.

        With two classes it is computed from each draw's log probabilities,
        so that it stays finite where a probability rounds to 0 or 1.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        method : {"mcmc", "gaussian"}, default="mcmc"
            As in :meth:`predict_proba`.

        Returns
        -------
        log_proba : ndarray of shape (n_queries, n_classes)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, y)
        >>> bool(np.allclose(np.exp(clf.predict_log_proba(X)), clf.predict_proba(X)))
        True
        """
        X = self._validate_query(X)
        if self._n_latent == 1:
            odds = self._in_row_blocks(lambda X: self._block_log_odds(X, method), X)
            return proba_from_log_odds(odds, log=True)
        return log_of_proba(self._proba(X, method))

    @available_if(has_two_classes)
    @public_method
    def decision_function(self, X, method="mcmc"):
        """Log predictive odds of ``classes_[1]`` (two classes only).

        ``log P(y = classes_[1]) - log P(y = classes_[0])`` under the
        draw-averaged predictive: positive exactly where :meth:`predict`
        returns ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        method : {"mcmc", "gaussian"}, default="mcmc"

        Returns
        -------
        scores : ndarray of shape (n_queries,)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, y)
        >>> clf.decision_function([[2.0]]) > 0
        array([ True])
        """
        X = self._validate_query(X)
        return self._in_row_blocks(lambda X: self._block_log_odds(X, method), X)

    def _block_log_odds(self, X, method):
        """Log odds of ``classes_[1]`` at one block of rows."""
        return self._log_odds(*self._latent_draws(X, method))

    @public_method
    def predict(self, X, method="mcmc"):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        method : {"mcmc", "gaussian"}, default="mcmc"

        Returns
        -------
        ndarray of shape (n_queries,)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, max_samples=10,
        ...                                 random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, y)
        >>> clf.predict([[-2.0], [2.0]])
        array([0, 1])
        """
        proba = self.predict_proba(X, method=method)
        return self.classes_[np.argmax(proba, axis=1)]

    @public_method
    def sample_functions(
        self, n_samples=1, random_state=0, n_features=None, posterior="mcmc"
    ):
        """Latent function samples from the posterior, callable anywhere.

        Each sample picks a kept HMC draw ``(theta, v)`` uniformly at random
        and is a pathwise draw of the latent GP given the inducing values
        ``u = R_theta v`` (``R_theta`` the Cholesky factor of the jittered
        ``K(Z, Z)``): a random-Fourier-feature prior draw plus Matheron's
        update ``k(x, Z) K(Z, Z)^-1 (u - f_prior(Z))``. So the samples mix
        over the hyperparameters and the inducing values, as
        :meth:`predict_proba` does. The functions are frozen (every call
        returns the same values), have analytic input gradients and pickle.
        Apply the link (sigmoid, probit, robust-max or softmax) to turn
        them into class probabilities.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0
        n_features : int, default=None
            Fourier features per draw; None uses 1024. The error of the
            prior covariance falls as ``1 / sqrt(n_features)``.
        posterior : {"mcmc", "gaussian"}, default="mcmc"
            ``"mcmc"``: mix over the kept HMC draws. ``"gaussian"``: the
            SVGP approximation, ``u = R (m + L z)`` with ``q(v) = N(m, L
            L')`` at its hyperparameters (as ``method="gaussian"`` in
            :meth:`predict_proba`).

        Returns
        -------
        functions : FunctionSamples or list of FunctionSamples
            For two classes one :class:`~skgp_bayes.sampling.FunctionSamples`
            (the latent of ``classes_[1]``); otherwise one per class, all on
            the same draws, so that ``[f(X) for f in functions]`` are
            jointly distributed latent values. A ``WhiteKernel``'s noise is
            not part of them.

        Raises
        ------
        ValueError
            If the kernel has no spectral density (use
            :meth:`predict_proba` at fixed points instead).

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, max_samples=10,
        ...                                 random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, y)
        >>> f = clf.sample_functions(5, random_state=0)
        >>> grid = np.linspace(-2, 2, 9)[:, None]
        >>> f(grid).shape, f.gradient(grid).shape
        ((9, 5), (9, 5, 1))
        >>> bool(np.array_equal(f(grid), f(grid)))
        True
        """
        check_is_fitted(self)
        require_spectral_spec(self._adapter.kernel, "predict_proba(X)")
        functions, _ = self._functions(n_samples, random_state, n_features, posterior)
        return in_natural_units(
            functions[0] if len(functions) == 1 else functions, self
        )
