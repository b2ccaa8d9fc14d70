"""Sparse GP regression that learns which inducing points to keep.

Uhrenholt, Charvet and Jensen, *Probabilistic selection of inducing points
in sparse Gaussian processes*. A Bernoulli point process ``q_lambda`` over
``K`` candidate inducing inputs is fitted together with the GP, under a
prior ``p(Z)`` proportional to ``exp(-alpha |Z|^2)`` that prefers fewer
points. The objective is

``E_q[L(Z)] - KL(q_lambda || p)``,

with ``L(Z)`` the SVGP bound of the subset ``Z`` and the divergence in
closed form (:class:`~skgp_bayes.targets.selective.BernoulliPointProcess`).

``fit`` runs the seed paper's three phases (its appendix C.2):

1. **Pre-training**: the hyperparameters (kernel and noise) maximise the
   bound with *all* candidates (L-BFGS-B, at most ``n_pre_iter``
   iterations).
2. **Selection**: Adam on the logits of the inclusion probabilities, with
   the score-function gradient of ``E_q[L(Z)]`` from ``n_score_samples``
   draws (with the leave-one-out baseline for the regressor, a
   decaying-average one for the classifier,
   :mod:`skgp_bayes.inference.score_function`) minus the exact gradient of
   the divergence; in the same steps Adam moves the hyperparameters along
   the average gradient of the sampled subsets' bounds, an unbiased
   gradient of ``E_q[L(Z)]``. The phase ends when the objective and
   ``E|Z|`` no longer move by more than their Monte Carlo error between
   windows of 50 steps (:class:`~skgp_bayes.inference.StationarityRule`);
   ``n_select_iter`` only bounds it.
3. **Keep and post-train**: the kept set is the ``round(E|Z|)``
   candidates with the largest ``lambda_k`` (``keep="expected"``, the
   default: the most probable set under ``q_lambda`` among the sets of its
   expected size), the candidates with ``lambda_k > 1/2``
   (``keep="threshold"``, the mode of ``q_lambda``, which keeps almost
   nothing when many candidates are interchangeable and their
   probabilities settle below one half) or one draw from ``q_lambda``
   (``keep="sample"``, the seed paper's choice); at least one point is
   kept. The hyperparameters are then refitted on the kept set (L-BFGS-B,
   at most ``n_post_iter`` iterations). ``doc/selective_svgp.rst`` gives
   the reasoning.

With the Gaussian likelihood the variational ``q(u | Z)`` of every subset
is the optimal one, in closed form (Titsias' collapsed bound, the seed's
"collapsed" case; see :class:`~skgp_bayes.targets.selective.SubsetBound`).
That removes the variational parameters from the optimisation and makes the
hyperparameter gradients exact; each bound evaluation uses all training
points, ``O(n m^2 + m^3)`` for ``m`` kept points. With ``batch_size`` set,
the uncollapsed bound on minibatches is used instead, with one whitened
``q(v*)`` over all candidates shared by the subsets
(:class:`~skgp_bayes.targets.selective.SharedSubsetBound`), as in the
classifier, :class:`SelectiveSVGPClassifier` (Bernoulli likelihood).
"""

import time
from numbers import Integral, Real

import numpy as np
from scipy.special import logit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._arviz import InferenceDataMixin
from ._base import EstimatorBase, fit_method, sample_y_spec
from ._defaults import (
    NOISE_VARIANCE_BOUNDS,
    fit_input_scaling,
    in_natural_units,
    merged_priors,
)
from ._fit_checks import prior_only, warn_at_bounds, warn_degenerate_fit
from ._interrupt import keyboard_interrupt_passes
from ._predictive_contract import (
    GaussianMixturePredictive,
    LatentDraws,
    RegressorContractMixin,
    binary_log_odds,
    has_two_classes,
    log_of_proba,
    mixture_prediction,
    proba_from_log_odds,
)
from ._progress import fit_progress
from ._threads import blas_threads_for
from ._validation import (
    VersionedStateMixin,
    atomic_feature_state,
    check_bounds,
    check_finite_theta,
    check_input_magnitude,
    check_n_samples,
    check_single_target,
    safe_mean_std,
    variance_in_units,
)
from ._warnings import warn_user
from .exceptions import DegenerateFitWarning, NotPSDError
from .inference import (
    DecayingBaseline,
    StationarityRule,
    adam_init,
    adam_update,
    estimate_bernoulli_gradient,
)
from .inference.optimize import maximize, random_batches, stalled
from .kernels import KernelAdapter
from .likelihoods import Bernoulli, Gaussian, Softmax
from .predictive.mixture import gaussian_joint_draws
from .predictive.sparse import q_moments, sparse_function_samples
from .priors import PriorSet
from .sampling import require_spectral_spec
from .targets.selective import (
    BernoulliPointProcess,
    SharedSubsetBound,
    SubsetBound,
    greedy_variance_points,
)

__all__ = ["SelectiveSVGP", "SelectiveSVGPClassifier"]

# Why the regressor takes one target (ValueError on a 2-D y).
_SINGLE_TARGET = (
    "the collapsed bound that selects the inducing points, and the optimal "
    "q(u) it keeps, are those of one target."
)

# Probability every candidate starts with: near one, so that the selection
# starts from the pre-trained model on all candidates and prunes from there.
_INITIAL_INCLUSION = 0.9
# Log noise variance bounds (standardised targets), as the other regressors.
_LOG_NOISE_BOUNDS = tuple(np.log(NOISE_VARIANCE_BOUNDS))
# Decay of the score-function baseline: an average over roughly the last
# ten steps follows the bound as the hyperparameters move.
_BASELINE_DECAY = 0.9
# Selection stopping rule (StationarityRule): batches of ten steps, the
# memory of Adam's momentum (1 / (1 - 0.9)) and of the baseline above, so
# that batch means are close to independent; five batches a window; a
# change of two standard errors between windows still counts as noise.
_SELECT_WINDOW = 50
_SELECT_BATCHES = 5
_SELECT_Z = 2.0
# L-BFGS-B on a bound also stops once its last _STALL_WINDOW iterations
# together gained less than _STALL_NATS nats of the whole data set's bound:
# at that rate even ten more windows would gain at most a nat, a difference
# of log evidence "not worth more than a bare mention" (Kass and Raftery,
# 1995), while its own tolerances, relative to the bound per point, go on
# through thousands of iterations of the shared q(v*) of the classifier
# (13,000 parameters on 147 points and four classes) for the last nat.
# The unit is the nat, the same whatever the data's units or size.
_STALL_WINDOW = 50
_STALL_NATS = 0.1
# Softmax draws for multiclass probabilities at prediction (the fit uses
# the likelihood's default 100): the Monte Carlo error of a probability
# p is sqrt(p (1 - p) / 256) at most 0.03, before the antithetic pairing.
_SOFTMAX_PREDICT_DRAWS = 256


def _maximise(fn, start, bounds, max_iter, n, batch_size=None, rng=None, rate=None):
    """Maximise ``fn(params, batch) -> (value, grad)``, a sum over ``n`` points.

    Full batch: L-BFGS-B (deterministic, few passes), stopped also when the
    bound stalls. Minibatches of ``batch_size`` rows: Adam on ``max_iter``
    batches at step ``rate``. Returns the optimum, the trace and whether it
    converged.
    """
    if batch_size is None or batch_size >= n:
        options = {"stop": stalled(_STALL_WINDOW, _STALL_NATS)}
    else:
        options = {"batches": random_batches(rng, n, batch_size), "learning_rate": rate}
    out = maximize(fn, start, bounds, max_iter=max_iter, n=n, **options)
    return out.params, out.trace, out.converged


def _classification_likelihood(n_classes, link):
    """Bernoulli with ``link`` for two classes, else the softmax.

    The softmax's expectations use fixed Monte Carlo draws (common random
    numbers), so the bound stays a deterministic function for L-BFGS-B.
    """
    if n_classes == 2:
        return Bernoulli(link=link)
    return Softmax(n_classes=n_classes, random_state=0)


def _random_candidates(X, n_candidates, rng):
    K = min(int(n_candidates), X.shape[0])
    idx = np.sort(rng.choice(X.shape[0], size=K, replace=False))
    return np.ascontiguousarray(X[idx])


def _spread_candidates(est, X):
    """``n_candidates`` training inputs spread by the starting kernel.

    Greedy conditional variance (see ``greedy_variance_points``) under the
    kernel the fit starts from, in the order chosen, so that where the
    inclusion logits tie, ``keep="expected"`` keeps the earlier, more
    informative candidates.
    """
    kernel = est._new_kernel(X.shape[1])
    adapter = KernelAdapter(kernel)
    theta = _kernel_start(kernel, adapter)
    idx, _ = greedy_variance_points(adapter, theta, X, est.n_candidates)
    if idx.size == 0:  # a kernel with no variance anywhere: any row will do
        idx = np.arange(1)
    return np.ascontiguousarray(X[idx])


def _kernel_start(kernel, adapter):
    bounds = _kernel_bounds(kernel, adapter)
    return np.clip(kernel.theta, bounds[:, 0], bounds[:, 1])


def _check_candidates(candidates, n_features):
    Z = np.asarray(candidates, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[1] != n_features or Z.shape[0] < 1:
        raise ValueError(
            f"candidates must have shape (K, {n_features}) with K >= 1; got {Z.shape}."
        )
    if not np.all(np.isfinite(Z)):
        raise ValueError("candidates must be finite.")
    return np.ascontiguousarray(Z)


def _selection_phase(
    est, evaluate, params, logits, bounds, process, rng, n, baseline=None
):
    """Phase 2: Adam on the inclusion logits and on ``params`` together.

    ``evaluate(params, masks, rows)`` gives the bounds of the subsets
    ``masks`` (shape ``(S, K)``) on the data rows ``rows`` (None: all) and
    the mean of their gradients in ``params``. The logits follow the
    score-function estimate of ``d E_q[L] / d logits`` minus the exact
    gradient of the divergence; ``params`` follow the mean gradient, an
    unbiased gradient of ``E_q[L]``. The phase ends when the objective and
    ``E|Z|`` stop trending
    (:class:`~skgp_bayes.inference.StationarityRule`), or after
    ``n_select_iter`` steps. Returns the parameters, the logits, the traces
    of the objective and of ``E|Z|``, and whether the rule was met.

    ``baseline`` is the control variate of the score-function estimate:
    ``"leave-one-out"`` (each draw's is the mean of the step's other
    draws) or None for a decaying average of earlier steps' values.
    """
    batch = getattr(est, "batch_size", None)
    param_state, logit_state = adam_init(params), adam_init(logits)
    if baseline is None or est.n_score_samples < 2:
        baseline = DecayingBaseline(_BASELINE_DECAY)
    rule = StationarityRule(_SELECT_WINDOW, _SELECT_BATCHES, _SELECT_Z)
    trace, counts = [], []
    n_iter = int(est.n_select_iter)
    progress = fit_progress(est, "selection", n_iter)
    for it in range(n_iter):
        rows = None
        if batch is not None and batch < n:
            rows = rng.choice(n, size=batch, replace=False)
        try:
            score_grad, values, _, mean_grad = estimate_bernoulli_gradient(
                lambda masks, p=params, r=rows: evaluate(p, masks, r),
                logits,
                est.n_score_samples,
                rng,
                baseline,
                vectorized=True,
            )
        except (NotPSDError, np.linalg.LinAlgError):
            continue
        if not (np.all(np.isfinite(values)) and np.all(np.isfinite(mean_grad))):
            continue
        kl, kl_grad = process.kl_and_grad(logits)
        logits = logits + adam_update(
            logit_state, score_grad - kl_grad, est.selection_learning_rate
        )
        # the bound is a sum over n points; 1/n keeps Adam's scale fixed
        step = adam_update(param_state, mean_grad / n, est.learning_rate)
        params = np.clip(params + step, bounds[:, 0], bounds[:, 1])
        trace.append(float(values.mean()) - kl)
        counts.append(process.cardinality_moments(logits)[0])
        stop = rule.update([trace[-1], counts[-1]])
        if progress.engine is not None:
            progress(it + 1, n_iter, {"objective": trace[-1], "E|Z|": counts[-1]})
        if est.verbose >= 2 and rule.n_steps % _SELECT_WINDOW == 0:
            zs = (
                ""
                if rule.z_scores is None
                else f", change/error {rule.z_scores.max():.2f}"
            )
            est._log(
                f"selection step {it + 1}: "
                f"objective {trace[-1]:.4g}, E|Z| = {counts[-1]:.1f}{zs}"
            )
        if stop:
            break
    progress.close()
    return params, logits, trace, counts, rule.converged


def _kernel_bounds(kernel, adapter):
    check_finite_theta(kernel.theta, adapter.param_names)
    kernel_bounds = np.asarray(kernel.bounds, dtype=np.float64).reshape(-1, 2)
    check_bounds(kernel_bounds, adapter.param_names)
    return kernel_bounds


def _keep(est, process, logits, seed):
    """The kept set of ``q_lambda``; never empty (see ``keep`` in the docs).

    ``"expected"``: the ``round(E|Z|)`` most probable candidates, which is
    the most probable set under ``q_lambda`` among the sets of its expected
    size (``log q(b) = sum_k b_k l_k + const``, so for a fixed count the
    largest logits win). ``"threshold"``: ``lambda_k > 1/2``, the mode of
    ``q_lambda``. ``"sample"``: one draw.
    """
    lam = process.probabilities(logits)
    if est.keep == "expected":
        count = int(np.clip(np.round(lam.sum()), 1, lam.size))
        support = np.zeros(lam.size, dtype=bool)
        support[np.argsort(-logits, kind="stable")[:count]] = True
        return support
    if est.keep == "threshold":
        support = lam > 0.5
    else:
        support = process.sample(logits, 1, np.random.default_rng(seed))[0]
    if not np.any(support):
        # an empty set would predict the prior everywhere
        support[int(np.argmax(lam))] = True
    if est.keep == "threshold":
        _warn_atypical_mode(process, logits, int(support.sum()))
    return support


def _warn_atypical_mode(process, logits, n_kept):
    mean, var = process.cardinality_moments(logits)
    # |Z| under q is Poisson-binomial: a kept count more than three standard
    # deviations (plus one point of rounding) below its mean is a set that
    # q itself almost never draws
    if n_kept >= mean - 3.0 * np.sqrt(var) - 1.0:
        return
    warn_user(
        f"keep='threshold' kept {n_kept} of {logits.size} candidate inducing "
        f"points, while the fitted point process expects {mean:.1f} "
        f"(sd {np.sqrt(var):.1f}): most inclusion probabilities lie below "
        "1/2 without being small, so the mode of the process is far from the "
        "sets it draws, and a model on the mode can lose most of the signal. "
        "Use keep='expected' (the most probable set of the expected size) "
        "or keep='sample'.",
        DegenerateFitWarning,
    )


def _warn_unfinished_selection(est, stopped, n_steps):
    if stopped or n_steps == 0:
        return
    warn_user(
        f"The selection of inducing points did not settle in {n_steps} steps "
        "(its objective or expected number of points still moved by more "
        "than their Monte Carlo error between the last two windows of "
        f"{_SELECT_WINDOW} steps); increase n_select_iter.",
        ConvergenceWarning,
    )


def _selection_attributes(Zc, out):
    process, logits, support = out["process"], out["logits"], out["support"]
    mean_count, var_count = process.cardinality_moments(logits)
    return {
        "candidates_": Zc,
        "inclusion_probabilities_": process.probabilities(logits),
        "support_": support,
        "inducing_points_": Zc[support].copy(),
        "n_inducing_": int(support.sum()),
        "expected_n_inducing_": mean_count,
        "var_n_inducing_": var_count,
        "n_iter_": len(out["traces"]["select"]),
        "elbo_history_": {
            key: np.asarray(out["traces"][key], dtype=np.float64)
            for key in ("pre", "select", "post")
        },
        "fit_time_": out["times"],
        "diagnostics_": {
            "fit_time": out["times"]["total"],
            "final_elbo": float(out["traces"]["post"][-1])
            if len(out["traces"]["post"])
            else np.nan,
            "n_select_steps": len(out["traces"]["select"]),
            "selection_converged": bool(out["stopped"]),
            "expected_n_inducing_trace": np.asarray(out["counts"], dtype=np.float64),
            "n_pre_iter": len(out["traces"]["pre"]),
            "n_post_iter": len(out["traces"]["post"]),
            "expected_n_inducing": float(mean_count),
            "n_inducing": int(support.sum()),
        },
    }


def _fit_shared_phases(est, bound, params, bounds, seeds):
    """The three phases on a :class:`SharedSubsetBound` (shared ``q``).

    Returns a dict with the kept set's bound ``sub`` and its post-trained
    parameters ``sub_params``, the process and its logits, the traces and
    the phase times.
    """
    t0 = time.perf_counter()
    n, K = bound.full.n, bound.full.n_inducing
    rng = np.random.default_rng(int(seeds[1]))
    batch = est.batch_size
    everything = np.arange(K)

    # 1. pre-training on all candidates
    params, pre_trace, _ = _maximise(
        lambda p, b: bound.logp_and_grad(p, everything, b),
        params,
        bounds,
        est.n_pre_iter,
        n,
        batch,
        rng,
        est.learning_rate,
    )
    t1 = time.perf_counter()

    # 2. selection: the shared q and theta move along the average gradient
    # of the sampled subsets' bounds
    process = BernoulliPointProcess(K, est.alpha)
    logits = np.full(K, logit(_INITIAL_INCLUSION))
    params, logits, select_trace, counts, stopped = _selection_phase(
        est,
        bound.values_and_mean_grad,
        params,
        logits,
        bounds,
        process,
        rng,
        n,
    )
    _warn_unfinished_selection(est, stopped, len(select_trace))
    t2 = time.perf_counter()

    # 3. keep a set, post-train its own bound from the shared q
    support = _keep(est, process, logits, int(seeds[2]))
    kept = np.flatnonzero(support)
    sub = bound.subset_bound(kept)
    where = bound.subset_index(kept)
    sub_params, post_trace, converged = _maximise(
        sub.logp_and_grad,
        params[where],
        bounds[where],
        est.n_post_iter,
        n,
        batch,
        rng,
        est.learning_rate,
    )
    if not converged:
        warn_user(
            f"Post-training did not converge in {est.n_post_iter} L-BFGS-B "
            "iterations; increase n_post_iter.",
            ConvergenceWarning,
        )
    t3 = time.perf_counter()
    return {
        "sub": sub,
        "sub_params": sub_params,
        "kept": kept,
        "support": support,
        "lam": process.probabilities(logits),
        "process": process,
        "logits": logits,
        "traces": {"pre": pre_trace, "select": select_trace, "post": post_trace},
        "counts": counts,
        "stopped": stopped,
        "times": {"pre": t1 - t0, "select": t2 - t1, "post": t3 - t2, "total": t3 - t0},
    }


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
        the starting point and are fitted. None gives
        ``ConstantKernel(1.0) * RBF(sqrt(d) * ones(d))`` on standardised inputs, one
        length scale per input (see :ref:`defaults`).
    n_candidates : int, default=80
        Number of candidates drawn at random (without replacement) from the
        training inputs when ``candidates`` is None (the seed paper's
        initialisation); capped at the number of training points.
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
        rows).
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
        Adam step size of the hyperparameters in the selection phase.
    selection_learning_rate : float, default=0.2
        Adam step size of the inclusion logits.
    keep : {"expected", "threshold", "sample"}, default="expected"
        Kept set: the ``round(expected_n_inducing_)`` candidates with the
        largest inclusion probabilities (the most probable set of the
        expected size), the candidates with probability above one half
        (the mode; a ``DegenerateFitWarning`` when it is far smaller than
        the expected size), or one draw from the fitted point process
        (seeded by ``random_state``).
    noise_variance : float, default=1.0
        Initial Gaussian noise variance, in units of the standardised
        targets (the seed paper initialises every hyperparameter to 1).
    jitter : float, default=1e-6
        Relative diagonal jitter on ``K(Z, Z)``.
    normalize_X : bool, default=True
        Standardise each input column (mean 0, standard deviation 1 on the
        training data) inside the estimator. The kernel's hyperparameters,
        their bounds and priors, and inducing inputs stored on the estimator
        are then in standardised units, so the defaults mean the same thing
        whatever the inputs' natural units; ``input_scaling_`` maps between
        the two. Set ``False`` to give a kernel in the inputs' own units.
    random_state : int, RandomState instance or None, default=None
        Seeds the candidates, the point-process draws and ``keep="sample"``.
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
        ``n_inducing``, in one place.
    elbo_history_ : dict of ndarray
        ``"pre"`` and ``"post"``: the bound after each L-BFGS-B iteration;
        ``"select"``: the Monte Carlo estimate of ``E_q[L(Z)] - KL`` at each
        selection step. Standardised-target units.
    elbo_ : float
        The bound of the kept set after post-training.
    kernel_ : sklearn kernel
        The kernel with the fitted hyperparameters.
    param_names_ : list of str
        Names of the point-estimated hyperparameters: the ``kernel_.theta``
        entries, then ``"noise_variance"`` (the classifier has no noise).
    noise_variance_ : float
        Fitted noise variance, in the units of ``y``.
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
        "noise_variance": [Interval(Real, 0, None, closed="neither")],
        "jitter": [Interval(Real, 0, None, closed="left")],
        "normalize_X": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        kernel=None,
        *,
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
        noise_variance=1.0,
        jitter=1e-6,
        normalize_X=True,
        random_state=None,
        verbose=0,
    ):
        self.kernel = kernel
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
        self.noise_variance = noise_variance
        self.jitter = jitter
        self.normalize_X = normalize_X
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ fitting
    def _candidates(self, X, rng, scaling):
        if self.candidates is None:
            return _random_candidates(X, self.n_candidates, rng)
        return scaling.transform(_check_candidates(self.candidates, X.shape[1]))

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
        >>> reg = SelectiveSVGP(n_candidates=10, n_select_iter=20, random_state=0)
        >>> reg = reg.fit(X, np.cos(X[:, 0]))
        >>> reg.inclusion_probabilities_.shape
        (10,)
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
            seeds = rng.randint(0, 2**31 - 1, size=3)
            Zc = self._candidates(
                X_model, np.random.default_rng(int(seeds[0])), scaling
            )
            with blas_threads_for(X.shape[0], Zc.shape[0]):
                fitted = prior_only(self, X.shape[0])._fit_phases(
                    X_model, y_std_units, Zc, seeds
                )
        fitted["input_scaling_"] = scaling
        fitted["y_mean_"], fitted["y_std_"] = float(y_mean), float(y_std)
        fitted["_noise_model"] = fitted.pop("_noise_std_units")
        fitted["noise_variance_"] = float(
            variance_in_units(fitted["_noise_model"], y_std)
        )
        self._set_fitted(fitted)
        warn_degenerate_fit(self, X, y)
        return self

    def _fit_phases(self, X, y, Zc, seeds):
        t0 = time.perf_counter()
        kernel = self._new_kernel(X.shape[1])
        adapter = KernelAdapter(kernel)
        kernel_bounds = _kernel_bounds(kernel, adapter)
        bounds = np.vstack([kernel_bounds, [_LOG_NOISE_BOUNDS]])
        theta0 = np.clip(kernel.theta, kernel_bounds[:, 0], kernel_bounds[:, 1])
        log_noise0 = np.clip(np.log(self.noise_variance), *_LOG_NOISE_BOUNDS)
        hyper = np.append(theta0, log_noise0)
        bound = SubsetBound(adapter, X, y, Zc, jitter=self.jitter)
        if self.batch_size is not None and self.batch_size < X.shape[0]:
            out = self._minibatch_phases(adapter, X, y, Zc, hyper, bounds, seeds)
        else:
            out = self._collapsed_phases(bound, hyper, bounds, seeds, t0)
        hyper, kept = out["hyper"], out["kept"]
        # whatever trained the hyperparameters, q(u) of the kept set is the
        # optimal one, and the bound reported is its collapsed bound
        elbo = bound.value(hyper, kept)
        q_mean, q_L = bound.optimal_q(hyper, kept)
        if self.verbose:
            self._log(
                f"kept {kept.size} of {Zc.shape[0]} candidates "
                f"(E|Z| = {out['lam'].sum():.1f}); bound {elbo:.4g} "
                f"({time.perf_counter() - t0:.2f} s)"
            )
        fitted = _selection_attributes(Zc, out)
        theta = hyper[:-1].copy()
        warn_at_bounds(theta, kernel_bounds, adapter.param_names, "point estimates")
        fitted.update(
            {
                "elbo_": float(elbo),
                "kernel_": kernel.clone_with_theta(theta),
                "param_names_": [*adapter.param_names, "noise_variance"],
                "_noise_std_units": float(np.exp(hyper[-1])),
                "_adapter": adapter,
                "_theta": theta,
                "_q": (q_mean, q_L),
            }
        )
        return fitted

    def _collapsed_phases(self, bound, hyper, bounds, seeds, t0):
        K = bound.candidates.shape[0]
        everything = np.arange(K)

        # 1. pre-training on all candidates
        hyper, pre_trace, _ = _maximise(
            lambda h, _: bound.logp_and_grad(h, everything),
            hyper,
            bounds,
            self.n_pre_iter,
            bound.X.shape[0],
        )
        t1 = time.perf_counter()
        if self.verbose:
            self._log(
                f"pre-training: bound {bound.value(hyper, everything):.4g} with "
                f"{K} candidates ({t1 - t0:.2f} s)"
            )

        # 2. selection
        process = BernoulliPointProcess(K, self.alpha)
        logits = np.full(K, logit(_INITIAL_INCLUSION))
        hyper, logits, select_trace, counts, stopped = _selection_phase(
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
        )
        _warn_unfinished_selection(self, stopped, len(select_trace))
        t2 = time.perf_counter()

        # 3. keep a set, post-train
        support = _keep(self, process, logits, int(seeds[2]))
        kept = np.flatnonzero(support)
        hyper, post_trace, converged = _maximise(
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

    def _minibatch_phases(self, adapter, X, y, Zc, hyper, bounds, seeds):
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
        )
        shared_bounds = np.tile([-np.inf, np.inf], (shared.n_params, 1))
        shared_bounds[: shared.n_hyper] = bounds
        start = shared.full.initial_params(hyper[:-1], hyper[-1])
        out = _fit_shared_phases(self, shared, start, shared_bounds, seeds)
        out["hyper"] = np.array(out["sub_params"][: shared.n_hyper])
        return out

    # ---------------------------------------------------------- prediction
    def _latent(self, X, full_cov=False):
        """Latent mean and variance (or covariance) in standardised units."""
        q_mean, q_L = self._q
        return q_moments(
            self._adapter,
            self._theta,
            self.inducing_points_,
            self.jitter,
            q_mean,
            q_L,
            X,
            full_cov,
        )

    @keyboard_interrupt_passes
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
        >>> reg = SelectiveSVGP(n_candidates=10, n_select_iter=20, random_state=0)
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
        """``q(f)`` as a one-draw :class:`LatentDraws`, standardised units."""
        mean, spread = self._latent(X, full_cov=full_cov)
        noise = np.array([self._noise_model])
        return LatentDraws(mean[None], spread[None], noise, self.y_mean_, self.y_std_)

    def _observation_predictive(self, X):
        return GaussianMixturePredictive.from_draws(self._predictive_draws(X))

    def _functions(self, n_samples, random_state, n_features, **kw):
        check_is_fitted(self)
        check_n_samples(n_samples)
        q_mean, q_L = self._q
        return sparse_function_samples(
            self._adapter,
            self.inducing_points_,
            self.jitter,
            np.asarray(self._theta)[None, :],
            np.asarray(q_mean)[None, :, None],
            np.asarray(q_L)[None],
            n_samples,
            check_random_state(random_state),
            n_features,
            **kw,
        )

    @keyboard_interrupt_passes
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
        >>> reg = SelectiveSVGP(n_candidates=10, n_select_iter=20, random_state=0)
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
            out = functions(X)
            if white[0] > 0:
                # A WhiteKernel adds independent noise at each query point.
                out += rng.standard_normal(out.shape) * np.sqrt(white[0]) * self.y_std_
            return out
        mean, cov = self._latent(X, full_cov=True)
        draws = gaussian_joint_draws(mean, cov, int(n_samples), rng)
        return draws * self.y_std_ + self.y_mean_

    @keyboard_interrupt_passes
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
        >>> reg = SelectiveSVGP(n_candidates=10, n_select_iter=20, random_state=0)
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


# ==========================================================================


class SelectiveSVGPClassifier(
    EstimatorBase,
    InferenceDataMixin,
    VersionedStateMixin,
    ClassifierMixin,
    BaseEstimator,
):
    """Sparse GP classification with a learned set of inducing points.

    The counterpart of :class:`SelectiveSVGP` for a Bernoulli likelihood
    with two classes (logit or probit link, Gauss-Hermite expectations)
    and a softmax over one latent function per class with more (Monte
    Carlo expectations over fixed draws, as :class:`SteinGPClassifier`).
    Without a closed-form optimal ``q(u)``, one whitened
    ``q(v*) = N(m*, S*)`` per latent over all candidates is learned and
    shared by the subsets (each uses its sub-vector and the sub-block of
    the factor of ``S*``, the same candidates in every latent; see
    :class:`~skgp_bayes.targets.selective.SharedSubsetBound`). The three
    phases are those of :class:`SelectiveSVGP`; ``q`` and the kernel
    hyperparameters are trained in all of them, by L-BFGS-B in pre- and
    post-training on the full data, or by Adam on minibatches when
    ``batch_size`` is set.

    The kernel hyperparameters are MAP estimates under the package's
    default priors (:ref:`defaults`, as :class:`SteinGPClassifier`): a
    log-normal prior on each length scale and ``Gamma(1, 2)`` on the
    signal variance. Without a prior, classes that the inputs nearly
    separate make the bound grow for ever with the signal variance
    (modechoice reached ``175**2`` with length scales of thousands), and
    L-BFGS-B spent 700 iterations following that ridge.

    Parameters
    ----------
    kernel : sklearn kernel, default=None
        As in :class:`SelectiveSVGP`.
    n_candidates : int, default=80
        Most candidates. Unlike the regressor's random draw, they are
        spread over the inputs: greedy conditional variance under the
        starting kernel (Burt, Rasmussen and van der Wilk, 2020; see
        :func:`~skgp_bayes.targets.selective.greedy_variance_points`), which
        stops early when the remaining candidates are linear combinations of
        those chosen to round-off. The shared ``q(v*)`` has ``O(C K^2)``
        parameters, so a near-duplicate candidate costs optimisation without
        adding information, and the selection then has to learn to drop it:
        on modechoice and anes96 the selection met its stopping rule after
        300 steps with spread candidates against 650 and 1100 with random
        ones, at an equal or lower test log loss (doc/selective_svgp.rst).
    candidates, alpha, n_score_samples, n_pre_iter, n_select_iter, \
n_post_iter, learning_rate, selection_learning_rate, keep, jitter, \
normalize_X, random_state, verbose
        As in :class:`SelectiveSVGP`; ``n_pre_iter`` and ``n_post_iter`` are
        Adam steps when ``batch_size`` is set.
    batch_size : int, default=None
        Minibatch size of every phase; None uses all points.
    link : {"logit", "probit"}, default="logit"
        Link of the two-class likelihood; more classes use the softmax.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    candidates_, inclusion_probabilities_, support_, inducing_points_, \
n_inducing_, expected_n_inducing_, var_n_inducing_, n_iter_, elbo_history_, \
elbo_, kernel_, param_names_, fit_time_, diagnostics_, n_features_in_, \
feature_names_in_
        As in :class:`SelectiveSVGP`; the bounds in ``elbo_`` and
        ``elbo_history_`` include the log prior of the hyperparameters.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SelectiveSVGPClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (150, 1))
    >>> y = (np.sin(2 * X[:, 0]) + 0.5 * rng.standard_normal(150) > 0).astype(int)
    >>> clf = SelectiveSVGPClassifier(n_candidates=20, n_select_iter=50,
    ...                               random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints = {
        **{
            k: v
            for k, v in SelectiveSVGP._parameter_constraints.items()
            if k != "noise_variance"
        },
        "link": [StrOptions({"logit", "probit"})],
    }

    def __init__(
        self,
        kernel=None,
        *,
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
        link="logit",
        jitter=1e-6,
        normalize_X=True,
        random_state=None,
        verbose=0,
    ):
        self.kernel = kernel
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
        self.link = link
        self.jitter = jitter
        self.normalize_X = normalize_X
        self.random_state = random_state
        self.verbose = verbose

    def _candidates(self, X, scaling):
        if self.candidates is None:
            return _spread_candidates(self, X)
        return scaling.transform(_check_candidates(self.candidates, X.shape[1]))

    @fit_method
    def fit(self, X, y):
        """Pre-train, select the inducing points, post-train.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (two or more).

        Returns
        -------
        self : SelectiveSVGPClassifier

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SelectiveSVGPClassifier
        >>> X = np.linspace(-2, 2, 40)[:, None]
        >>> clf = SelectiveSVGPClassifier(n_candidates=8, n_select_iter=20,
        ...                               random_state=0)
        >>> clf.fit(X, X[:, 0] > 0).classes_
        array([False,  True])
        """
        with atomic_feature_state(self):
            X, y = validate_data(self, X, y, dtype=np.float64, order="C")
            X_model, scaling = fit_input_scaling(self, X)
            check_input_magnitude(X_model)
            check_classification_targets(y)
            classes, y_enc = np.unique(y, return_inverse=True)
            if classes.size < 2:
                raise ValueError(
                    f"{type(self).__name__} requires 2 classes; got 1 class "
                    f"(label {classes[0]!r})."
                )
            rng = check_random_state(self.random_state)
            seeds = rng.randint(0, 2**31 - 1, size=4)
            Zc = self._candidates(X_model, scaling)
            with blas_threads_for(X.shape[0], Zc.shape[0]):
                fitted = self._fit_phases(
                    X_model, y_enc.astype(np.float64), Zc, seeds, classes.size
                )
        fitted["input_scaling_"] = scaling
        fitted["classes_"] = classes
        self._set_fitted(fitted)
        warn_degenerate_fit(self, X, y)
        return self

    def _fit_phases(self, X, y, Zc, seeds, n_classes):
        kernel = self._new_kernel(X.shape[1])
        adapter = KernelAdapter(kernel)
        kernel_bounds = _kernel_bounds(kernel, adapter)
        likelihood = _classification_likelihood(n_classes, self.link)
        # the default policy's priors, as the other classifiers: without them
        # nearly separable classes drive the signal variance up for ever
        slices = dict(adapter.hyperparameter_slices)
        prior_set = PriorSet(slices, merged_priors(None, slices, X.shape[1]))
        bound = SharedSubsetBound(
            adapter, X, y, Zc, likelihood, jitter=self.jitter, prior_set=prior_set
        )
        bounds = np.tile([-np.inf, np.inf], (bound.n_params, 1))
        bounds[: bound.n_hyper] = kernel_bounds
        theta0 = np.clip(kernel.theta, kernel_bounds[:, 0], kernel_bounds[:, 1])
        out = _fit_shared_phases(
            self, bound, bound.full.initial_params(theta0), bounds, seeds
        )
        theta, _, q_mean, q_L, _ = out["sub"].split(out["sub_params"])
        elbo = out["sub"].elbo(out["sub_params"])
        if self.verbose:
            self._log(
                f"kept {out['kept'].size} of {Zc.shape[0]} candidates "
                f"(E|Z| = {out['lam'].sum():.1f}); bound {elbo:.4g}"
            )
        fitted = _selection_attributes(Zc, out)
        warn_at_bounds(theta, kernel_bounds, adapter.param_names, "point estimates")
        fitted.update(
            {
                "elbo_": float(elbo),
                "kernel_": kernel.clone_with_theta(np.array(theta)),
                "param_names_": list(adapter.param_names),
                "_adapter": adapter,
                "_likelihood": likelihood,
                "_theta": np.array(theta),
                "_q": (np.array(q_mean), np.array(q_L)),
            }
        )
        return fitted

    def _latent(self, X):
        X = self._validate_query(X)
        q_mean, q_L = self._q
        # one latent per column: (n_queries, n_latent) means and variances
        moments = [
            q_moments(
                self._adapter,
                self._theta,
                self.inducing_points_,
                self.jitter,
                q_mean[:, c],
                q_L[c],
                X,
            )
            for c in range(q_mean.shape[1])
        ]
        return (
            np.stack([m for m, _ in moments], axis=1),
            np.stack([v for _, v in moments], axis=1),
        )

    @keyboard_interrupt_passes
    def predict_proba(self, X):
        """Class probabilities, ``E[p(y | f)]`` under ``q(f)``.

        Two classes: Gauss-Hermite quadrature; more: the softmax averaged
        over 256 fixed draws of the latents.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        ndarray of shape (n_queries, n_classes)
            Columns in the order of ``classes_``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SelectiveSVGPClassifier
        >>> X = np.linspace(-2, 2, 40)[:, None]
        >>> clf = SelectiveSVGPClassifier(n_candidates=8, n_select_iter=20,
        ...                               random_state=0).fit(X, X[:, 0] > 0)
        >>> proba = clf.predict_proba([[-1.5], [1.5]])
        >>> bool(proba[0, 0] > 0.5 and proba[1, 1] > 0.5)
        True
        """
        check_is_fitted(self)
        if len(self.classes_) == 2:
            return proba_from_log_odds(self._log_odds(X))
        mu, var = self._latent(X)
        # more draws than the fit's: prediction is cheap and read directly
        draws = Softmax(mu.shape[1], n_samples=_SOFTMAX_PREDICT_DRAWS, random_state=0)
        proba = np.clip(draws.predictive(mu, var), 0.0, 1.0)
        return proba / proba.sum(axis=1, keepdims=True)

    def _log_odds(self, X):
        mu, var = self._latent(X)
        return binary_log_odds(self._likelihood, mu[None, :, 0], var[None, :, 0])

    @keyboard_interrupt_passes
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, finite in the tails.

        For two classes, computed from the log odds, so that it stays
        finite where a probability rounds to 0 or 1; for more, the log of
        the Monte Carlo probabilities.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        ndarray of shape (n_queries, n_classes)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SelectiveSVGPClassifier
        >>> X = np.linspace(-2, 2, 40)[:, None]
        >>> clf = SelectiveSVGPClassifier(n_candidates=8, n_select_iter=20,
        ...                               random_state=0).fit(X, X[:, 0] > 0)
        >>> bool(np.allclose(np.exp(clf.predict_log_proba(X)), clf.predict_proba(X)))
        True
        """
        check_is_fitted(self)
        if len(self.classes_) > 2:
            return log_of_proba(self.predict_proba(X))
        return proba_from_log_odds(self._log_odds(X), log=True)

    @available_if(has_two_classes)
    @keyboard_interrupt_passes
    def decision_function(self, X):
        """Log predictive odds of ``classes_[1]`` (two classes only).

        ``log P(y = classes_[1]) - log P(y = classes_[0])``: positive
        exactly where :meth:`predict` returns ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        ndarray of shape (n_queries,)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SelectiveSVGPClassifier
        >>> X = np.linspace(-2, 2, 40)[:, None]
        >>> clf = SelectiveSVGPClassifier(n_candidates=8, n_select_iter=20,
        ...                               random_state=0).fit(X, X[:, 0] > 0)
        >>> clf.decision_function([[-1.5], [1.5]]) > 0
        array([False,  True])
        """
        return self._log_odds(X)

    @keyboard_interrupt_passes
    def predict(self, X):
        """The more probable class.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        ndarray of shape (n_queries,)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SelectiveSVGPClassifier
        >>> X = np.linspace(-2, 2, 40)[:, None]
        >>> clf = SelectiveSVGPClassifier(n_candidates=8, n_select_iter=20,
        ...                               random_state=0).fit(X, X[:, 0] > 0)
        >>> clf.predict([[-1.5], [1.5]])
        array([False,  True])
        """
        check_is_fitted(self)
        if len(self.classes_) > 2:
            return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
        scores = self._log_odds(X)  # checks that the model is fitted
        return self.classes_[(scores > 0).astype(int)]

    @keyboard_interrupt_passes
    def sample_functions(self, n_samples=1, random_state=0, n_features=None):
        """Latent function samples from ``q(f)``, callable anywhere.

        Pathwise samples: a random-Fourier-feature prior draw plus
        Matheron's update ``k(x, Z) K(Z, Z)^-1 (u - f_prior(Z))`` with ``u``
        drawn from the learned ``q(u)`` of the kept inducing points ``Z``.
        The functions are frozen (every call returns the same values), have
        analytic input gradients and pickle. Apply the link (sigmoid or
        probit) for the probability of ``classes_[1]``.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0
        n_features : int, default=None
            Fourier features; None uses 1024.

        Returns
        -------
        functions : FunctionSamples or list of FunctionSamples
            Two classes: the latent of ``classes_[1]``, ``functions(X)`` of
            shape ``(n_points, n_samples)``. More: one per class, on the
            same draws. A ``WhiteKernel``'s noise is not part of them.

        Raises
        ------
        ValueError
            If the kernel has no spectral density (use
            :meth:`predict_proba` at fixed points instead).

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SelectiveSVGPClassifier
        >>> X = np.linspace(-2, 2, 40)[:, None]
        >>> clf = SelectiveSVGPClassifier(n_candidates=8, n_select_iter=20,
        ...                               random_state=0).fit(X, X[:, 0] > 0)
        >>> f = clf.sample_functions(4, random_state=0)
        >>> f([[-1.5], [1.5]]).shape
        (2, 4)
        """
        check_is_fitted(self)
        require_spectral_spec(self._adapter.kernel, "predict_proba(X)")
        check_n_samples(n_samples)
        q_mean, q_L = self._q
        functions, _ = sparse_function_samples(
            self._adapter,
            self.inducing_points_,
            self.jitter,
            np.asarray(self._theta)[None, :],
            np.asarray(q_mean)[None],
            np.asarray(q_L),
            n_samples,
            check_random_state(random_state),
            n_features,
        )
        if len(functions) == 1:
            return in_natural_units(functions[0], self)
        return [in_natural_units(f, self) for f in functions]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags
