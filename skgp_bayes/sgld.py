"""Langevin sampling of GP hyperparameters: exact-gradient MALA, SGLD with
unbiased early-stopped CG (ULISSE, seed 002) where a factorisation is dear,
or SGLD with a stochastic trace term from one factorisation."""

import copy
import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from ._arviz import InferenceDataMixin
from ._backend import get_array_module
from ._base import (
    ExactGPRegressorMixin,
    fit_method,
    mean_kernel,
    seconds_since,
)
from ._defaults import NOISE_VARIANCE_BOUNDS, fit_input_scaling
from ._fit_checks import warn_at_bounds, warn_degenerate_fit
from ._sgld_chains import SGLDChainsMixin
from ._sgld_modes import ModeSearch
from ._sgld_setup import (
    RunLength,
    chain_options,
    chain_starts,
    map_and_preconditioner,
)
from ._sgld_solvers import SOLVER_PARAMS, choose_solver, predictive_draws
from ._threads import blas_threads_for
from ._validation import (
    VersionedStateMixin,
    atomic_feature_state,
    check_input_magnitude,
    check_single_target,
    target_scale,
    variance_in_units,
)
from .inference.mode_jumps import jump_record

__all__ = ["SGLDGPRegressor"]

# Why the chains take one target (ValueError on a 2-D y).
_SINGLE_TARGET = (
    "its stochastic gradients (probe-based trace estimates and early-stopped "
    "conjugate gradients) and its conjugate-gradient predictions solve for one "
    "target."
)
# The step-size parameters of the chains (chain_options' ``steps``).
_STEP_PARAMS = (
    "step_size_start",
    "step_size_end",
    "step_size_gamma",
    "freeze_threshold",
    "freeze_window",
)


class SGLDGPRegressor(
    SGLDChainsMixin,
    ExactGPRegressorMixin,
    InferenceDataMixin,
    VersionedStateMixin,
    RegressorMixin,
    BaseEstimator,
):
    """Gaussian-process regression sampling hyperparameters by Langevin dynamics.

    Draws samples from the exact posterior ``p(theta | y)`` of the kernel
    hyperparameters and the noise variance of a full GP (no inducing points)
    by preconditioned Langevin dynamics. While a factorisation of the kernel
    matrix is cheap (``solver="auto"``: up to 5000 training points), the
    gradient and the log marginal likelihood are exact (one Cholesky
    factorisation per iteration) and every Langevin proposal is accepted or
    rejected by Metropolis-Hastings (MALA): no bias, and steps an order of
    magnitude larger than unadjusted SGLD can take. Beyond it, stochastic
    gradient Langevin dynamics (Welling and Teh) needs only unbiased
    gradients of the log marginal likelihood, and those need only linear
    solves: Rademacher probes estimate the trace term, and every solve is
    one column of a single batched conjugate-gradient run, stopped early at
    residual ``early_stop_q * sqrt(n)`` and continued past it with random
    stopping so that it stays unbiased (ULISSE, Filippone and Engler); the
    kernel matrix is never factorised. By default the chains run until
    every split R-hat is at most 1.01 and every bulk ESS at least 100
    (``n_iter="auto"``). Predictions average the GP posteriors of samples.

    Parameters
    ----------
    kernel : sklearn kernel, default=None
        None gives ``ConstantKernel(1.0) * RBF(sqrt(d) * ones(d))`` on
        standardised inputs, one length scale per input (see
        :ref:`defaults`).
        Prior covariance; its values start the MAP search and its bounds
        (log scale) box the chains.
    priors : dict, default=None
        Hyperparameter name (``"k2__length_scale"``, ``"noise_variance"``...)
        to a prior on the natural scale (:class:`skgp_bayes.priors.Prior` or a
        frozen ``scipy.stats`` distribution). Unnamed length scales get
        ``LogNormal(log sqrt(d) + 1, 1)``, unnamed signal variances
        (``constant_value``) ``HalfCauchyVariance(1)``, other unnamed
        parameters ``Gamma(shape=1, scale=2)`` (see :ref:`defaults`).
    noise_variance : float, default=0.1
        Initial noise variance, on the scale of the (normalised) target.
    noise_variance_bounds : pair of float or "fixed", default=(1e-6, 1e2)
        Box for the noise variance; ``"fixed"`` keeps ``noise_variance``.
    n_iter : int or "auto", default="auto"
        Iterations per chain. ``"auto"``: a first block of the warm-up plus
        1000 iterations, then further blocks of a quarter of the post-warm-up
        span, until every split R-hat (rank-normalised, Vehtari et al. 2021) is at
        most 1.01 and every bulk ESS at least 100, or ``max_iter`` is
        reached, in which case a ``SamplerWarning`` gives the figures. An
        integer runs exactly that many (and warns only at R-hat above 1.1).
        With exact gradients, chains that have not mixed and whose slow
        parameters are skewed go on once, after a new warm-up, in
        coordinates that make those parameters nearly normal (the draws are
        mapped back; ``diagnostics_["skew_maps"]``).
    max_iter : int, default=20000
        Budget of iterations per chain for ``n_iter="auto"`` (per fit: a
        warm start may run as many again).
    step_size_start : float, default=0.1
        Step size of the stochastic-gradient chains (``solver`` "ulisse",
        "cg" or "stochastic_trace"). With ``M`` near the posterior
        covariance, unadjusted Langevin inflates the posterior variance by
        about ``eps / 4`` (exact for a Gaussian target), plus the gradient
        noise's share; 0.1 keeps that near 2.5%, below the Monte Carlo error
        of a variance at an ESS of a few hundred, at an integrated
        autocorrelation time of about ``4 / eps = 40`` iterations. MALA
        (``solver="cholesky"``) does not use it: its step starts at
        ``1.65^2 p^(-1/3)`` (Roberts and Rosenthal's optimal scaling for
        ``p`` parameters) and is tuned during the warm-up.
    step_size_end : float or None, default=None
        ``None`` keeps the step constant; otherwise the step
        ``eps_t = a (b + t)^-step_size_gamma`` runs from ``step_size_start``
        at the first iteration to ``step_size_end`` at the last of the first
        block (until it is frozen), as in seed 002, and a decay continues
        past it in later blocks.
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
        start at that MAP. MALA (exact gradients) starts from this ``M`` and
        replaces it during its warm-up (see ``burn_in``).
    map_subset : int, default=1000
        Points used for the MAP and Hessian (all if fewer). The chains' modes
        and their Laplace masses come from this search, and a random half
        of the rows can hide a mode the whole set holds: on 966 rows of US
        states' cigarette sales 500 of them held only the long-length-scale
        mode, where the whole set gives a second 0.56 of the Laplace mass;
        the chains never visited it (test mean log density 0.093 below
        scikit-learn's, 0.006 with every row). 1,000 is where the Stein
        regressor's MAP search and the variational MCMC regressor's exact
        reference stop too: a factorisation there costs about 30 ms on one
        core, a search a few hundred of them.
    n_probes : int, default=16
        Rademacher probes of the trace term (``solver`` "ulisse", "cg" and
        "stochastic_trace"). Their noise dominates the gradient's once CG is
        preconditioned, and SGLD's step must shrink in proportion to the
        gradient variance; the extra probes are extra columns of the same CG
        run (or of the same triangular solves), which cost little while the
        product with ``K`` is bound by reading ``K``. On full Concrete, 16 probes
        with a step of 0.08 gave the reference sds at 6 times fewer seconds
        per independent sample than 4 probes with the step of 0.02 their
        noise needed.
    probe_refresh : int, default=1
        Iterations between redraws of the probes of ``solver`` "ulisse" and
        "cg" ("stochastic_trace" redraws them every iteration); in between,
        their solves start from the previous iteration's solutions. Keeping probes makes
        the gradient noise of successive iterations correlated, which SGLD
        does not average out: on full Concrete with exact solves, keeping
        them for 20 iterations widened the posterior sds of the signal
        variance and length scale 1.7-1.8 times, redrawing every iteration
        gave the reference sds.
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
        more CG iteration per gradient on small problems and made those
        jumps rarer; ``max_random_steps`` removes them.
    max_random_steps : int or None, default=10
        Randomised continuation steps after which a ULISSE solve stops
        drawing, keeps its weight ``exp(beta J (J + 1) / 2)`` (245 for the
        defaults) and runs CG on to ``cg_tol``. The gradient stays unbiased
        and its weights bounded; without the cap (``None``) they are not,
        and on full Concrete (n = 1030) one gradient in a few hundred was
        hundreds of times its typical size, enough to throw a chain out of
        the posterior. Smaller values lower the variance further but finish
        more solves to full tolerance (more CG iterations); 0 is CG to
        ``cg_tol``.
    solver : {"auto", "cholesky", "ulisse", "cg", "stochastic_trace"}, \
            default="auto"
        Gradient of the log marginal likelihood. ``"cholesky"``: exact, from
        one factorisation per iteration (``n^3 / 3`` flops for the factor and
        ``2 n^3 / 3`` for the inverse the trace term needs), with the exact
        log density that lets every proposal be Metropolis-adjusted (MALA).
        ``"ulisse"``: unbiased stochastic gradients from early-stopped CG
        (``O(n^2)`` per CG iteration, a few tens of iterations of
        ``n_probes + 2`` columns), no factorisation, unadjusted Langevin.
        ``"cg"``: the same with every solve run to ``cg_tol`` (the
        reference). ``"stochastic_trace"``: one factorisation per iteration
        and no inverse; the data term of the gradient exact, the trace term
        ``tr(K^-1 dK_j)`` estimated from ``n_probes`` Rademacher probes
        solved with the same factor
        (:class:`~skgp_bayes.targets.StochasticTraceTarget`), so unbiased
        but noisy: unadjusted Langevin, as for ULISSE. ``"auto"`` takes
        ``"cholesky"`` up to 5000 training points, when its two dense
        ``n x n`` matrices fit in a quarter of
        ``skgp_bayes._config.MAX_DENSE_BYTES``, and ``"ulisse"`` beyond;
        ``solver_`` says which ran. ``"cholesky"`` and
        ``"stochastic_trace"`` beyond the whole limit raise ``MemoryError``
        before allocating. ``doc/sgld.rst`` gives the reasoning.
    cg_tol : float, default=1e-8
        Relative residual at which a solve counts as exact.
    cg_preconditioner_rank : int, default=100
        Rank of the pivoted-Cholesky preconditioner ``L L' + s2 I`` of every
        CG and ULISSE solve (:class:`~skgp_bayes.linalg.LowRankPreconditioner`),
        rebuilt at every iteration from that many kernel columns. On full
        Concrete it cut CG to full tolerance from 382 to 49 iterations and
        ULISSE from 123 to 20, and made ULISSE's gradient noise nearly that of
        exact solves (its randomised increments are smaller). 0 runs plain
        CG.
    cg_max_iter : int or None, default=None
        CG budget per gradient; ``max(2 n, 100)`` by default (a solve that
        reaches ``max_random_steps`` must reach ``cg_tol``, which can take
        more than ``n`` iterations in floating point).
    storage : {"auto", "dense", "matrix_free"}, default="auto"
        ``"dense"`` stores the kernel matrix for the CG products (fast, n^2
        memory); ``"matrix_free"`` regenerates it in every product (O(n)
        memory); ``"auto"`` stores it when it fits in a quarter of
        ``skgp_bayes._config.MAX_DENSE_BYTES``. ``"dense"`` beyond the whole
        limit raises ``MemoryError`` before allocating.
    n_chains : int, default=2
    burn_in : int or None, default=None
        Iterations discarded per chain. With exact gradients they are MALA's
        warm-up (500 by default, ``min(500, n_iter // 2)`` for an integer
        ``n_iter``), during which the step is tuned toward an acceptance rate
        of 0.574 and, from 100 warm-up iterations on, the preconditioner is
        re-estimated twice per chain, from the states and gradients of the
        10-40% and 40-75% stretches of the warm-up
        (:func:`skgp_bayes.inference.sgld.fisher_metric`); the last 25%
        re-tune the step to the final metric. With stochastic gradients
        they default to those before the step size froze (the last chain
        to freeze), else to 200 with ``n_iter="auto"`` and to the first
        half of an integer ``n_iter``.
    thin : int, default=1
        Keep every ``thin``-th iteration after the burn-in. R-hat and ESS
        are computed on the kept draws, so thinning only loses information
        (Link and Eaton, 2012); the trace is small (iterations x
        parameters) whatever it is.
    n_predict_draws : int, default=30
        Samples (evenly spaced over the pooled kept draws) whose GP
        posteriors form the predictive mixture.
    predict_solver : {"auto", "cholesky", "cg"}, default="auto"
        How predictions solve with the training covariance: Cholesky up to
        5000 training points, CG beyond (``"auto"``).
    normalize_y : bool, default=True
        Standardise the target; priors and noise bounds then refer to the
        standardised scale.
    warm_start : bool, default=False
        When fitted before, continue every chain from where it stopped for
        ``n_iter`` further iterations (with ``"auto"``: at least one block,
        then until the rule holds or ``max_iter`` more), appending to ``chains_`` and
        ``step_sizes_`` (position, step-size counter, halvings, freezing
        window and frozen step, probes, warm-start solutions and random
        streams all continue), and recompute the burn-in, ``samples_``,
        diagnostics and predictive draws over the whole chains. The MAP and
        preconditioner are kept and ``random_state`` is not used again. With a
        constant step size the result equals one fit of the summed
        ``n_iter``, bit for bit; a decaying schedule continues the first
        fit's ``a (b + t)^-gamma``, which was fitted to that fit's ``n_iter``.
        ``X``, ``y``, the hyperparameters and the parameters that set the
        chains' dynamics (all but ``n_iter``, ``burn_in``, ``thin``,
        ``n_predict_draws``, ``predict_solver``, ``priors``, ``n_jobs``,
        ``random_state`` and ``verbose``) must be unchanged, else
        ``ValueError``.
    n_jobs : int or None, default=None
        How the chains share the machine; results do not depend on it.
        None: on threads of this process where the gradient is exact and
        compiled (``solver="cholesky"``, an RBF-family kernel, the CPU) and
        takes at least 80 us, one per chain up to
        :func:`numba.get_num_threads` (``NUMBA_NUM_THREADS``, which
        joblib's workers set to their share of the cores); one after
        another otherwise. 1: one after another. Other values: joblib's
        ``n_jobs`` (processes, or the backend of
        :func:`joblib.parallel_config`).
    backend : {"numpy", "cupy"}, default="numpy"
        Array module of the fit's gradients. ``"cupy"`` builds and stores
        the kernel matrix on the GPU and runs the CG solves and the gradient
        contraction there, or, with ``solver="cholesky"`` (the default up
        to 5000 points) and a kernel of the compiled family (RBF, Matern,
        with a constant and white noise), the factorisation and the exact
        gradient; so do the CG solves of predictions
        (``predict_solver="cg"``, or ``"auto"`` beyond 5000 points), on the
        host where no GPU is usable (a model loaded on another machine).
        Fitted attributes stay NumPy arrays. ``solver="stochastic_trace"``,
        predictions by Cholesky and other kernels run on the CPU.
    normalize_X : bool, default=True
        Centre each input column and divide it by its training standard
        deviation, at most twice its middle half's spread. Hyperparameters,
        their bounds and priors, and stored inducing inputs are then in these
        units, so the defaults mean the same thing whatever the inputs'
        natural units; ``input_scaling_`` maps between the two. Set
        ``False`` to give a kernel in the inputs' own units.
    random_state : int, RandomState instance or None, default=None
        The same seed gives bit-identical samples, whatever ``n_jobs``.
    verbose : int, default=0
        ``1``: one progress line per block of chains on standard error
        (iterations, step size and acceptance rate, time left), updated in
        place on a terminal; ``2``: the detailed lines of every chain.

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
        Bulk effective sample size of the kept draws (rank-normalised split
        chains; NaN likewise).
    map_params_ : ndarray of shape (n_params,)
        MAP on the subset.
    preconditioner_ : ndarray of shape (n_params, n_params)
        The preconditioner the chains started from (MALA's warm-up replaces
        it per chain: ``diagnostics_["metrics"]``).
    draws_ : ndarray of shape (n_predict_draws, n_params)
        The kept samples that predictions average over (evenly spaced in
        the pooled chains), log coordinates.
    kernels_ : list of Kernel
        Kernels of the predictive draws.
    kernel_ : Kernel
        Point summary: the kernel at the mean hyperparameters of all kept
        samples (``samples_``) in log coordinates.
    noise_variance_ : ndarray of shape (n_predict_draws,)
        Noise variances of the predictive draws, in the units of ``y``.
    n_iter_ : int
        Iterations per chain, over all warm-started fits (the length of
        ``chains_``).
    solver_ : {"cholesky", "ulisse", "cg", "stochastic_trace"}
        The gradient solver used (``"auto"`` resolved).
    diagnostics_ : dict
        ``cg_iterations_mean`` (block CG iterations per gradient; 0 with
        ``solver`` "cholesky" or "stochastic_trace"), ``cg_max_residual``,
        ``n_rejected``, ``acceptance_rate`` (MALA after the warm-up; NaN
        otherwise), ``blocks`` (runs of the chains in this fit),
        ``converged`` (the run-length rule was met), ``rhat``, ``ess``,
        ``fit_time``, ``notes``, ``metrics`` (each chain's preconditioner as MALA's
        warm-up left it; None where it kept ``preconditioner_``),
        ``mode_jumps`` (``modes``: distinct posterior modes the chains
        ended jumping between, found by the MAP searches or by searches
        from slow chains' draws, 0 with one; ``tried`` and ``accepted``:
        the MALA chains' independence moves between them, one every second
        iteration; see the user guide), ``skew_maps`` (parameters whose
        MALA chains went on in sinh-mapped coordinates because their draws
        were skewed and slow to mix, 0 without; the metrics are then in
        those coordinates) and ``refined_at`` (the iteration per chain at
        which the chains went on with new modes or maps, or None; see the
        user guide).
    fit_time_ : dict
        ``{"total": seconds}``.
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
    >>> reg = SGLDGPRegressor(random_state=0).fit(X, y)
    >>> reg.solver_, bool(reg.diagnostics_["converged"])
    ('cholesky', True)
    >>> reg.samples_.shape[0], reg.samples_.shape[2]  # chains, ..., parameters
    (2, 3)
    >>> mean, std = reg.predict(X[:3], return_std=True)
    >>> mean.shape
    (3,)
    """

    _parameter_constraints = {
        "kernel": [None, Kernel],
        "priors": [None, dict],
        "noise_variance": [Interval(Real, 0, None, closed="neither")],
        "noise_variance_bounds": [StrOptions({"fixed"}), tuple, list, np.ndarray],
        "n_iter": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "step_size_start": [Interval(Real, 0, None, closed="neither")],
        "step_size_end": [None, Interval(Real, 0, None, closed="neither")],
        "step_size_gamma": [Interval(Real, 0, None, closed="left")],
        "freeze_threshold": [None, Interval(Real, 0, None, closed="neither")],
        "freeze_window": [Interval(Integral, 2, None, closed="left")],
        "preconditioner": [StrOptions({"laplace", "identity"})],
        "map_subset": [Interval(Integral, 2, None, closed="left")],
        "n_probes": [Interval(Integral, 1, None, closed="left")],
        "probe_refresh": [Interval(Integral, 1, None, closed="left")],
        "early_stop_q": [Interval(Real, 0, None, closed="left")],
        "beta": [Interval(Real, 0, None, closed="neither")],
        "max_random_steps": [None, Interval(Integral, 0, None, closed="left")],
        "solver": [
            StrOptions({"auto", "cholesky", "ulisse", "cg", "stochastic_trace"})
        ],
        "cg_tol": [Interval(Real, 0, 1, closed="neither")],
        "cg_preconditioner_rank": [Interval(Integral, 0, None, closed="left")],
        "cg_max_iter": [None, Interval(Integral, 1, None, closed="left")],
        "storage": [StrOptions({"auto", "dense", "matrix_free"})],
        "n_chains": [Interval(Integral, 1, None, closed="left")],
        "burn_in": [None, Interval(Integral, 0, None, closed="left")],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "n_predict_draws": [Interval(Integral, 1, None, closed="left")],
        "predict_solver": [StrOptions({"auto", "cholesky", "cg"})],
        "normalize_y": ["boolean"],
        "warm_start": ["boolean"],
        "n_jobs": [None, Integral],
        "backend": [StrOptions({"numpy", "cupy"})],
        "normalize_X": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        kernel=None,
        *,
        priors=None,
        noise_variance=0.1,
        noise_variance_bounds=NOISE_VARIANCE_BOUNDS,
        n_iter="auto",
        max_iter=20000,
        step_size_start=0.1,
        step_size_end=None,
        step_size_gamma=1.0,
        freeze_threshold=0.002,
        freeze_window=100,
        preconditioner="laplace",
        map_subset=1000,
        n_probes=16,
        probe_refresh=1,
        early_stop_q=0.1,
        beta=0.1,
        max_random_steps=10,
        solver="auto",
        cg_tol=1e-8,
        cg_preconditioner_rank=100,
        cg_max_iter=None,
        storage="auto",
        n_chains=2,
        burn_in=None,
        thin=1,
        n_predict_draws=30,
        predict_solver="auto",
        normalize_y=True,
        warm_start=False,
        n_jobs=None,
        backend="numpy",
        normalize_X=True,
        random_state=None,
        verbose=0,
    ):
        self.kernel = kernel
        self.priors = priors
        self.noise_variance = noise_variance
        self.noise_variance_bounds = noise_variance_bounds
        self.n_iter = n_iter
        self.max_iter = max_iter
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
        self.max_random_steps = max_random_steps
        self.solver = solver
        self.cg_tol = cg_tol
        self.cg_preconditioner_rank = cg_preconditioner_rank
        self.cg_max_iter = cg_max_iter
        self.storage = storage
        self.n_chains = n_chains
        self.burn_in = burn_in
        self.thin = thin
        self.n_predict_draws = n_predict_draws
        self.predict_solver = predict_solver
        self.normalize_y = normalize_y
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.backend = backend
        self.normalize_X = normalize_X
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ fit
    @fit_method
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
        >>> y = np.sin(X[:, 0]) + 0.1 * np.random.RandomState(0).randn(30)
        >>> reg = SGLDGPRegressor(n_iter=100, n_chains=1, random_state=0)
        >>> reg.fit(X, y).chains_.shape
        (1, 100, 3)
        """
        with atomic_feature_state(self):
            check_single_target(y, type(self).__name__, _SINGLE_TARGET)
            X, y = validate_data(
                self, X, y, dtype=np.float64, order="C", y_numeric=True
            )
            warm = self.warm_start and hasattr(self, "_chain_states")
            X_model, scaling = fit_input_scaling(self, X, continuing=warm)
            # Threaded BLAS on small matrices spins far slower than serial.
            with blas_threads_for(X.shape[0]):
                fitted = self._fit(X_model, y, warm)
        fitted["input_scaling_"] = scaling
        self._set_fitted(fitted)
        warn_degenerate_fit(self, X, y)
        return self

    def _fit(self, X, y, warm):
        t_start = time.perf_counter()
        check_input_magnitude(X)
        get_array_module(self.backend)  # fail before any work if unusable
        kernel, adapter, names, bounds, start, prior_set, log_noise = (
            self._hyperparameters()
        )
        if not names:
            raise ValueError(
                "SGLDGPRegressor needs at least one free hyperparameter; every "
                "kernel hyperparameter and the noise variance are fixed."
            )
        solver = choose_solver(
            self.solver, X.shape[0], **{k: getattr(self, k) for k in SOLVER_PARAMS}
        )
        run = RunLength(self.n_iter, self.max_iter, self.burn_in, self.thin)
        steps = {k: getattr(self, k) for k in _STEP_PARAMS}
        options = chain_options(solver.metropolis, run, len(names), steps)
        options.update(solver=solver, backend=self.backend)
        if warm:
            y_model = self._check_warm_start(X, y, names, bounds)
            setup = self._continued_chains(options, run)
        else:
            y_mean, y_std = target_scale(y, self.normalize_y)
            y_model = (y - y_mean) / y_std
            data = (adapter, X, y_model, prior_set, log_noise)
            setup = self._new_chains(data, start, bounds, y_mean, y_std)
        data = (adapter, X, y_model, prior_set, log_noise)
        # Mode jumps need exact log densities: MALA's, not SGLD's estimates.
        options["jumps"] = setup["jumps"] if solver.metropolis else None
        runs, ran = self._sample(
            (data, setup["M"], bounds),
            setup["chain_inputs"],
            options,
            setup["previous"],
            run,
            names,
            ModeSearch(data, setup["map_params"], bounds, self.map_subset),
        )
        self._report_warnings(runs, names, X.shape[0], ran)
        pooled = runs["kept"].reshape(-1, len(names))
        warn_at_bounds(pooled, bounds, names, "SGLD draws", tol="spread", y=y)
        fitted = self._fitted_draws(kernel, data, pooled, setup["y_std"])
        fitted.update(self._fitted_chains(runs, solver, options, setup))
        fitted["diagnostics_"]["fit_time"] = seconds_since(t_start)
        fitted.update(
            param_names_=names,
            _signature=self._chain_signature(names, bounds),
            X_train_=X,
            y_train_=y_model,
        )
        return fitted

    def _new_chains(self, data, start, bounds, y_mean, y_std):
        """MAP, preconditioner and chain starts of a fresh fit."""
        rng = check_random_state(self.random_state)
        identity = self.preconditioner == "identity"
        map_params, M, jumps = map_and_preconditioner(
            data,
            start,
            bounds,
            rng,
            self.map_subset,
            identity,
            self._log if self.verbose else None,
            self.n_jobs,
        )
        starts = chain_starts(map_params, M, bounds, self.n_chains, identity, rng)
        return {
            "y_mean": y_mean,
            "y_std": y_std,
            "map_params": map_params,
            "M": M,
            "jumps": jumps,
            "chain_inputs": starts,
            "previous": None,
            "refined_at": None,
        }

    def _continued_chains(self, options, run):
        """The stored chains of a warm start; ``options`` continue the first
        fit's schedule and warm-up."""
        options["a"], options["b"] = self._schedule
        options["adapt_steps"] = self._adapt_steps
        options["metric_windows"] = self._metric_window_ranges
        # fits pickled before the refinement continue without maps
        options["maps"] = getattr(self, "_skew_maps", None)
        # the iteration of the last search from the draws, or None
        options["modes_searched_at"] = getattr(self, "_modes_searched_at", None)
        if self.n_iter == "auto":
            options["n_iter"] = run.next_block(self.n_iter_, self.burn_in_, None)
        return {
            "y_mean": self._y_mean,
            "y_std": self._y_std,
            "map_params": self.map_params_,
            "M": self.preconditioner_,
            # fits pickled before mode jumps continue without them
            "jumps": getattr(self, "_mode_jumps", None),
            # Copies: the stored states stay as they are if this fit fails.
            "chain_inputs": [{"state": copy.deepcopy(s)} for s in self._chain_states],
            "previous": (self.chains_, self.step_sizes_, self._accepted),
            "refined_at": self.diagnostics_.get("refined_at"),
        }

    def _fitted_draws(self, kernel, data, pooled, y_std):
        """Predictive draws (evenly spaced over the pooled kept samples) and
        the kernels and noise variances they stand for."""
        adapter, X, y_model, _, log_noise = data
        pick = np.linspace(
            0, pooled.shape[0] - 1, min(self.n_predict_draws, len(pooled))
        )
        draws_params = pooled[np.unique(pick.round().astype(int))]
        thetas = draws_params[:, : adapter.n_params]
        if log_noise is None:
            noise_model = np.exp(draws_params[:, -1])
        else:
            noise_model = np.full(draws_params.shape[0], np.exp(log_noise))
        draws = predictive_draws(
            self.predict_solver,
            (adapter, X, y_model),
            thetas,
            noise_model,
            tol=self.cg_tol,
            storage=self.storage,
            rank=self.cg_preconditioner_rank,
            backend=self.backend,
        )
        return {
            "draws_": draws_params,
            "kernels_": [kernel.clone_with_theta(t) for t in thetas],
            "kernel_": mean_kernel(kernel, pooled[:, : adapter.n_params]),
            "noise_variance_": variance_in_units(noise_model, y_std),
            "_draws": draws,
        }

    def _fitted_chains(self, runs, solver, options, setup):
        """The chains' fitted attributes, their diagnostics and the state a
        warm start continues from."""
        chains, accepted, burn = runs["chains"], runs["accepted"], runs["burn"]
        cg_iters = runs["cg_iterations"]
        # the adaptation and maps the chains ended with (a refinement moves
        # them; a warm start continues from them)
        final = runs["options"]
        maps = final.get("maps")
        return {
            "samples_": runs["kept"],
            "chains_": chains,
            "step_sizes_": runs["steps"],
            "frozen_at_": runs["frozen_at"],
            "burn_in_": int(burn),
            "rhat_": runs["rhat"],
            "ess_": runs["ess"],
            "map_params_": setup["map_params"],
            "preconditioner_": setup["M"],
            # the jumps the chains ended with: the searches from their draws
            # may have added modes, and a warm start continues with them
            "_mode_jumps": final.get("jumps"),
            "_modes_searched_at": final.get("modes_searched_at"),
            "n_iter_": chains.shape[1],
            "solver_": solver.name,
            "diagnostics_": {
                "cg_iterations_mean": float(cg_iters.mean()) if cg_iters.size else 0.0,
                "cg_max_residual": runs["max_residual"],
                "n_rejected": runs["n_rejected"],
                "mode_jumps": jump_record(final.get("jumps"), [runs["mode_jumps"]]),
                "acceptance_rate": float(accepted[:, burn:].mean())
                if solver.metropolis and burn < chains.shape[1]
                else float("nan"),
                "blocks": runs["blocks"],
                "converged": runs["converged"],
                "rhat": runs["rhat"],
                "ess": runs["ess"],
                "fit_time": None,
                "notes": runs["notes"],
                "metrics": [r["state"]["sgld"].metric for r in runs["last"]],
                "skew_maps": 0 if maps is None else int(maps.mapped.sum()),
                "refined_at": runs["refined_at"]
                if runs["refined_at"] is not None
                else setup["refined_at"],
            },
            "_y_mean": setup["y_mean"],
            "_y_std": setup["y_std"],
            "_accepted": accepted,
            "_chain_states": [r["state"] for r in runs["last"]],
            "_schedule": (options["a"], options["b"]),
            "_adapt_steps": final["adapt_steps"],
            "_metric_window_ranges": final["metric_windows"],
            "_skew_maps": maps,
        }
