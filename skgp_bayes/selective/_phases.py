"""The phases of a selective fit: pre-training, selection, keeping and
post-training, shared by the regressor and the classifier.
"""

import time

import numpy as np
from scipy.special import logit
from sklearn.exceptions import ConvergenceWarning

from .._defaults import NOISE_VARIANCE_BOUNDS
from .._progress import fit_progress
from .._starts import (
    best_of_searches,
    climbed,
    exact_climb_point,
    exact_noise_alone,
    screened_exact_start,
    screened_starts,
)
from .._validation import (
    check_bounds,
    check_finite_theta,
)
from .._warnings import warn_user
from ..exceptions import DegenerateFitWarning, NotPSDError
from ..inference import (
    DecayingBaseline,
    StationarityRule,
    adam_init,
    adam_update,
    estimate_bernoulli_gradient,
)
from ..inference.optimize import maximize, random_batches, stalled
from ..kernels import KernelAdapter
from ..likelihoods import Bernoulli, Softmax
from ..targets.exact import ExactMarginalTarget
from ..targets.selective import (
    BernoulliPointProcess,
    greedy_variance_points,
)

# Probability every candidate starts with: near one, so that the selection
# starts from the pre-trained model on all candidates and prunes from there.
INITIAL_INCLUSION = 0.9
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
# Each step's gradients are cut to this many times their running root mean
# square (adam_update's clip). The subsets' bounds are heavy-tailed: on
# breast cancer one sampled subset in a step fell 600 nats below the
# others (a 99th percentile of 50 across steps), its score-function
# gradient was 300 times the usual, and Adam's moments then threw the
# logits (E|Z| 31 -> 46) and crawled back for the next thousand steps, past
# the selection's budget. By Chebyshev's inequality a cut at ten times the
# root mean square touches at most 1% of any stationary gradient's
# coordinates, whatever its distribution; on the suite's fits it cut
# 0-0.13% (at five times: 0.25-0.8%).
_SELECT_CLIP = 10.0
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
# Up to this many training points the candidates are spread by the kernel
# at the length-scale screen's best point on the exact marginal likelihood
# (a few dozen n x n factorisations) rather than by the default start: the
# start's length scale, a fraction of the inputs' spread, exhausts the
# residual variance after a few points and leaves no candidate for a short
# length scale (15 of 80 on the yearly sunspot numbers, whose cycle is 1%
# of the range).
EXACT_SCREEN_MAX_N = 1000
# The pool then grows past n_candidates until the Nystrom residual costs the
# collapsed bound at most TRACE_NATS nats per point (the smallest difference
# in mean log predictive density that matters, as the variational MCMC
# regressor's inducing-set rule), up to MAX_CANDIDATES: on sunspots 80
# candidates gave a test mean log density of -4.21 and 160 gave -3.91 (the
# exact GP: -3.81).
TRACE_NATS = 0.05
MAX_CANDIDATES = 400
# Beyond EXACT_SCREEN_MAX_N rows the screen runs on that many of them,
# evenly spaced (the length-scale screen's own subset), and the pool still
# grows, up to this many rows. With the pool held at n_candidates there, the Forbes
# 2000 companies (1,396 rows, market value from sales, profits and assets
# over five decades) kept 70 of 80 candidates and predicted 0.19 nats per
# point below scikit-learn's exact GP (6.4 s); grown to 249, 217 were kept,
# 0.08 above it (28.6 s, against its 120.8 s with 9 restarts). A grown pool
# makes each full-batch evaluation up to (MAX_CANDIDATES / 80)^2 = 25 times
# dearer, O(n K^2); beyond this many rows that passes minutes a fit, where
# a user sets batch_size, and the pool stays at n_candidates.
POOL_GROWTH_MAX_N = 5000


def maximise_bound(
    fn, start, bounds, max_iter, n, batch_size=None, rng=None, rate=None
):
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


def classification_likelihood(n_classes, link):
    """Bernoulli with ``link`` for two classes, else the softmax.

    The softmax's expectations use fixed Monte Carlo draws (common random
    numbers), so the bound stays a deterministic function for L-BFGS-B.
    """
    if n_classes == 2:
        return Bernoulli(link=link)
    return Softmax(n_classes=n_classes, random_state=0)


def candidate_inputs(est, X, scaling, y=None):
    """The candidate inducing inputs in the model's units: the estimator's
    own ``candidates`` if given, else :func:`spread_candidates`."""
    if est.candidates is None:
        return spread_candidates(est, X, y)
    return scaling.transform(check_candidates(est.candidates, X.shape[1]))


def spread_candidates(est, X, y=None):
    """Training inputs spread by a kernel: ``n_candidates``, or more.

    Greedy conditional variance (see ``greedy_variance_points``) under the
    kernel the fit starts from, in the order chosen, so that where the
    inclusion logits tie, ``keep="expected"`` keeps the earlier, more
    informative candidates. With targets ``y`` (regression, up to
    ``POOL_GROWTH_MAX_N`` points) the kernel is the length-scale screen's
    best on the exact marginal likelihood (of at most ``EXACT_SCREEN_MAX_N``
    of the rows), and the pool grows past
    ``n_candidates`` (up to ``MAX_CANDIDATES``) until the Nystrom residual
    ``t = tr(K - Q)`` costs the collapsed bound, ``t / (2 s2)``, at most
    ``TRACE_NATS`` nats per point at the screened noise ``s2``.
    """
    kernel = est._new_kernel(X.shape[1])
    adapter = KernelAdapter(kernel)
    theta = _kernel_start(kernel, adapter)
    count = est.n_candidates
    if y is not None and X.shape[0] <= POOL_GROWTH_MAX_N:
        theta, log_noise = _screened_kernel(adapter, theta, X, y)
        most = min(X.shape[0], max(count, MAX_CANDIDATES))
        idx, residual = greedy_variance_points(adapter, theta, X, most)
        allowed = 2.0 * TRACE_NATS * X.shape[0] * np.exp(log_noise)
        enough = np.flatnonzero(residual <= allowed)
        needed = enough[0] + 1 if enough.size else idx.size
        idx = idx[: max(min(count, idx.size), needed)]
    else:
        idx, _ = greedy_variance_points(adapter, theta, X, count)
    if idx.size == 0:  # a kernel with no variance anywhere: any row will do
        idx = np.arange(1)
    return np.ascontiguousarray(X[idx])


def _screened_kernel(adapter, theta, X, y):
    """The length-scale screen's best point on the exact marginal
    likelihood (every row, or ``EXACT_SCREEN_MAX_N`` of them), ``(theta, log
    noise)``; the start when nothing beats it."""
    start = np.append(theta, np.log(0.1))
    bounds = np.vstack(
        [kernel_log_bounds(adapter.kernel, adapter), np.log(NOISE_VARIANCE_BOUNDS)]
    )
    exact = ExactMarginalTarget(adapter, X, y, None)
    # the spread reads the length scales; the noise sets only the pool's
    # allowance, so the screen's noise neighbours (for searches) are left out.
    # Per input too, as the pre-training's screen: a pool spread by a common
    # factor of the length scales misses a short one of a single input, which
    # the pre-training cannot then reach (sleepstudy, the subject's number as
    # an input: 60 candidates under a long scale, MLPD 0.17 below the pool
    # spread per input on two splits of two)
    best = screened_exact_start(
        exact, start, bounds, cap=EXACT_SCREEN_MAX_N, refine_noise=False
    )
    best = start if best is None else best
    # The allowance scales with the noise, and the screen's lowest level is
    # 1% of the variance: on a smooth vector field measured to 0.03% (seals'
    # movements, 808 rows) the pool stopped at 158 candidates and predicted
    # 1.14 nats per point below the exact GP; at the noise searched alone
    # (nine evaluations) it grew to 232 and came 0.56 below.
    best = exact_noise_alone(exact, best, bounds, cap=EXACT_SCREEN_MAX_N)
    return best[:-1], float(best[-1])


def _kernel_start(kernel, adapter):
    bounds = kernel_log_bounds(kernel, adapter)
    return np.clip(kernel.theta, bounds[:, 0], bounds[:, 1])


def check_candidates(candidates, n_features):
    Z = np.asarray(candidates, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[1] != n_features or Z.shape[0] < 1:
        raise ValueError(
            f"candidates must have shape (K, {n_features}) with K >= 1; got {Z.shape}."
        )
    if not np.all(np.isfinite(Z)):
        raise ValueError("candidates must be finite.")
    return np.ascontiguousarray(Z)


def selection_phase(
    est,
    evaluate,
    params,
    logits,
    bounds,
    process,
    rng,
    n,
    baseline=None,
    learn_params=True,
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
    ``learn_params=False`` holds ``params`` where they are: only the logits
    move.
    """
    batch = getattr(est, "batch_size", None)
    param_state, logit_state = adam_init(params), adam_init(logits)
    if baseline is None or est.n_score_samples < 2:
        baseline = DecayingBaseline(_BASELINE_DECAY)
    rule = StationarityRule(_SELECT_WINDOW, _SELECT_BATCHES, _SELECT_Z)
    trace, counts = [], []
    n_iter = int(est.n_select_iter)
    progress = fit_progress(est, "selection", n_iter, stops_early=True)
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
            logit_state,
            score_grad - kl_grad,
            est.selection_learning_rate,
            clip=_SELECT_CLIP,
        )
        if learn_params:
            # the bound is a sum over n points; 1/n keeps Adam's scale fixed
            step = adam_update(
                param_state, mean_grad / n, est.learning_rate, clip=_SELECT_CLIP
            )
            params = np.clip(params + step, bounds[:, 0], bounds[:, 1])
        trace.append(float(values.mean()) - kl)
        counts.append(process.cardinality_moments(logits)[0])
        stop = rule.update([trace[-1], counts[-1]])
        if progress.engine is not None:
            progress(it + 1, n_iter, {"objective": trace[-1], "E|Z|": counts[-1]})
        if est.verbose >= 2 and rule.n_steps % _SELECT_WINDOW == 0:
            _log_selection(est, rule, it + 1, trace[-1], counts[-1])
        if stop:
            break
    progress.close()
    return params, logits, trace, counts, rule.converged


def _log_selection(est, rule, step, objective, count):
    zs = "" if rule.z_scores is None else f", change/error {rule.z_scores.max():.2f}"
    est._log(
        f"selection step {step}: objective {objective:.4g}, E|Z| = {count:.1f}{zs}"
    )


def kernel_log_bounds(kernel, adapter):
    check_finite_theta(kernel.theta, adapter.param_names)
    kernel_bounds = np.asarray(kernel.bounds, dtype=np.float64).reshape(-1, 2)
    check_bounds(kernel_bounds, adapter.param_names)
    return kernel_bounds


def keep_points(est, process, logits, seed):
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


def warn_unfinished_selection(est, stopped, n_steps):
    if stopped or n_steps == 0:
        return
    warn_user(
        f"The selection of inducing points did not settle in {n_steps} steps "
        "(its objective or expected number of points still moved by more "
        "than their Monte Carlo error between the last two windows of "
        f"{_SELECT_WINDOW} steps); increase n_select_iter.",
        ConvergenceWarning,
    )


def selection_attributes(Zc, out):
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


def fit_shared_phases(est, bound, params, bounds, seeds):
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
    params, pre_trace, _ = maximise_bound(
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
    logits = np.full(K, logit(INITIAL_INCLUSION))
    params, logits, select_trace, counts, stopped = selection_phase(
        est,
        bound.values_and_mean_grad,
        params,
        logits,
        bounds,
        process,
        rng,
        n,
    )
    warn_unfinished_selection(est, stopped, len(select_trace))
    t2 = time.perf_counter()

    # 3. keep a set, post-train its own bound from the shared q
    support = keep_points(est, process, logits, int(seeds[2]))
    kept = np.flatnonzero(support)
    sub = bound.subset_bound(kept)
    where = bound.subset_index(kept)
    sub_params, post_trace, converged = maximise_bound(
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


def pre_train(bound, hyper, bounds, everything, n_pre_iter):
    """The regressor's pre-training: the bound of ``everything`` maximised
    from ``hyper``, from the length-scale screen's best points and once
    more beside the optimum; returns the point and its bound trace."""

    def search(start):
        return maximise_bound(
            lambda h, _: bound.logp_and_grad(h, everything),
            start,
            bounds,
            n_pre_iter,
            bound.X.shape[0],
        )[:2]

    def value(h):
        return bound.value(h, everything)

    if not n_pre_iter:  # with nothing optimised the start stands
        return search(hyper)
    names = [*bound.adapter.param_names, "noise_variance"]
    # per input too, as the exact-target regressors: see
    # skgp_bayes._starts
    screened = screened_starts(value, names, hyper, bound.X, bounds)
    reached = lambda found: value(found[0])  # noqa: E731
    found = best_of_searches(search, reached, hyper, screened)
    # and once more beside the optimum, whose settled amplitude and
    # noise can hide a basin the screen's unsettled points did not show
    # (skgp_bayes._starts). Where to start is judged on the exact
    # marginal (on at most SCREEN_ROWS rows), which all the candidates'
    # bound follows: on randhie (300 rows, nine inputs, 165 candidates)
    # the screen took 0.1-0.2 s so, 2 s on the bound
    exact = ExactMarginalTarget(bound.adapter, bound.X, bound.y, bound.prior_set)
    return climbed(search, reached, found, exact_climb_point(exact, found[0], bounds))
