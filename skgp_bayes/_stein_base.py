"""The parts both Stein estimators share: SVGD's settings from the
estimator's parameters, checks and warnings, and the sparse
(inducing-point) mode.

With ``inducing_points`` set, the particles hold ``(theta, v)``: the kernel
hyperparameters (and the log noise variance of a regressor) and the whitened
inducing values of :class:`~skgp_bayes.targets.sparse.SparseWhitenedTarget`
(seed 000, sections 3-4). With ``batch_size`` the data term is estimated on
one random minibatch per iteration, shared by all particles, scaled by
``n / |B|`` so that the estimate is unbiased (seed 000, eq. 10).
"""

import time

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from . import _config
from ._fit_checks import warn_at_bounds
from ._progress import engine_verbose, fit_progress
from ._sparse import fit_svgp_adam, fit_svgp_lbfgs
from ._warnings import warn_user
from .exceptions import NotPSDError
from .inference import run_svgd
from .inference.particles import ParticleEvaluator
from .targets.svgp import SVGPBound

__all__ = []

# Time scale (iterations) of the Robbins-Monro decay used with minibatches
# when learning_rate_decay="auto": the rate halves by about iteration 250.
AUTO_DECAY = 100.0
# Spread (log units) of the particles' hyperparameters around the Gaussian
# approximation's optimum: SVGD's repulsion widens it where the posterior is
# wider.
_HYPER_SPREAD = 0.1
# L-BFGS iterations (full data) or Adam steps (minibatches) of the Gaussian
# approximation that places the particles.
_SVGP_LBFGS_ITER = 200
_SVGP_ADAM_STEPS = 500
_SVGP_ADAM_RATE = 0.01
# The minibatch warm-up stops once its bound, averaged over one epoch (and at
# least this many batches), rises by less than twice its standard error from
# one such window to the next: further Adam steps would be lost in the noise
# that SVGD's own minibatch steps add; _SVGP_ADAM_STEPS is then a budget.
_SETTLE_MIN_BATCHES = 20


def check_sparse_options(estimator, n_samples):
    """Validated ``batch_size`` (None for the full data) of a sparse fit."""
    batch = estimator.batch_size
    if batch is not None and estimator.inducing_points is None:
        raise ValueError(
            "batch_size needs inducing_points: the exact model evaluates the "
            "marginal likelihood of all the data at once. Set inducing_points "
            "(for example to 100) to fit on minibatches."
        )
    if batch is None or batch >= n_samples:
        return None
    return int(batch)


def check_same_model(estimator, continuing):
    """ValueError when a continued fit would switch between exact and sparse."""
    sparse = estimator.inducing_points is not None
    if continuing and sparse != hasattr(estimator, "inducing_points_"):
        raise ValueError(
            "Cannot continue a fit of the "
            f"{'exact' if sparse else 'sparse'} model as the "
            f"{'sparse' if sparse else 'exact'} one; set warm_start=False "
            "to refit."
        )
    return sparse


def check_sparse_memory(n_rows, n_inducing, estimator_name):
    """MemoryError before building ``(m, rows)`` projections that cannot fit."""
    _config.check_dense_bytes(
        4 * 8 * n_rows * n_inducing,
        f"{estimator_name} with {n_inducing} inducing points on batches of "
        f"{n_rows} points",
        "Set batch_size.",
    )


def svgd_decay(learning_rate_decay, stochastic):
    """The ``decay`` argument of :func:`~skgp_bayes.inference.run_svgd`.

    ``"auto"`` decays only when the gradients are stochastic (minibatches
    or trace estimates).
    """
    if learning_rate_decay == "auto":
        return AUTO_DECAY if stochastic else None
    return learning_rate_decay


def sparse_initial_particles(
    target,
    *,
    init,
    n_particles,
    hyper_start,
    hyper_bounds,
    prior_set,
    rng,
    batch_size,
):
    """Starting particles ``(J, n_params)`` and the point they spread from.

    ``init="prior"``: hyperparameters from the prior, ``v`` from its
    ``N(0, I)`` prior. ``init="map"``: a sparse variational (SVGP) Gaussian
    approximation with the same inducing inputs is fitted (L-BFGS-B on the
    full data, or Adam on minibatches with ``batch_size``); the particles'
    hyperparameters scatter ``_HYPER_SPREAD`` log units around its optimum
    and their ``v`` are drawn from its ``q(v)``. Returns ``(particles,
    centre, elbo)``; ``centre`` and ``elbo`` are None for ``"prior"``.
    """
    J, h, m, C = n_particles, target.n_hyper, target.n_inducing, target.n_latent
    particles = np.empty((J, target.n_params))
    if init == "prior":
        if h:
            hyper = prior_set.sample(rng, J)
            particles[:, :h] = np.clip(hyper, hyper_bounds[:, 0], hyper_bounds[:, 1])
        particles[:, h:] = rng.standard_normal((J, m * C))
        return particles, None, None

    bound = SVGPBound(
        target.adapter,
        target.X,
        target.y,
        target.Z,
        target.likelihood,
        prior_set,
        learn_noise=target.learn_noise,
        learn_inducing=False,
        jitter=target.jitter,
        offset=target.offset,
    )
    p = target.n_kernel_params
    log_noise = hyper_start[p] if target.learn_noise else None
    start = bound.initial_params(hyper_start[:p], log_noise)
    opt_bounds = np.tile([-np.inf, np.inf], (bound.n_params, 1))
    opt_bounds[:h] = hyper_bounds
    if batch_size is None:
        params, _, _, _ = fit_svgp_lbfgs(bound, start, opt_bounds, _SVGP_LBFGS_ITER)
    else:
        params, _, _, _ = fit_svgp_adam(
            bound,
            start,
            opt_bounds,
            _SVGP_ADAM_STEPS,
            batch_size,
            _SVGP_ADAM_RATE,
            rng,
            settle_window=max(_SETTLE_MIN_BATCHES, -(-target.n // batch_size)),
        )
    theta, log_noise, q_mean, q_L, _ = bound.split(params)
    centre_hyper = np.append(theta, log_noise) if target.learn_noise else theta
    try:
        elbo = float(bound.elbo(params)) if batch_size is None else None
    except NotPSDError:
        elbo = None
    z = rng.standard_normal((J, C, m))
    v = q_mean[None] + np.einsum("cjk,sck->sjc", q_L, z)
    particles[:, h:] = v.reshape(J, -1)
    spread = _HYPER_SPREAD * rng.standard_normal((J, h))
    # One particle stays at the optimum: the approximation's best guess.
    spread[0] = 0.0
    particles[:, :h] = np.clip(
        centre_hyper + spread, hyper_bounds[:, 0], hyper_bounds[:, 1]
    )
    centre = np.concatenate([centre_hyper, q_mean.reshape(-1)])
    return particles, centre, elbo


# tol="auto" is AUTO_TOL_SCALE / sqrt(n_particles) posterior sds: the
# particles stop within a tenth of the Monte Carlo error of their mean
# (1/sqrt(J) sds), so the unfinished optimisation adds at most about
# 1% to the variance of any particle average.
AUTO_TOL_SCALE = 0.1
# Fraction of the whitened, mass-normalised field taken per step
# (learning_rate="auto" with a preconditioner): a Gaussian target whose
# covariance is the preconditioner then contracts by about half per step, and
# the engine halves it where the field starts to oscillate.
WHITENED_STEP = 0.5


def batch_evaluator(target, **options):
    """A :class:`~skgp_bayes.inference.particles.ParticleEvaluator` over ``target``."""
    return ParticleEvaluator(target, **options)


def warn_not_converged(estimator, result):
    """ConvergenceWarning when SVGD stopped at ``max_iter`` above ``tol``."""
    field = result.history["field"][-1] if result.history["field"] else np.nan
    warn_user(
        f"SVGD did not meet its stopping rule in {estimator.max_iter} "
        f"iterations: the Stein field was still {field:.2e} posterior "
        "standard deviations (root mean square), above "
        f"tol={svgd_tol(estimator):.2e}. "
        "The particles are about that far from SVGD's fixed point; "
        "predictions average over them as they stand. A larger max_iter, or "
        "warm_start=True and another fit, continues the run.",
        ConvergenceWarning,
        worst=field,
    )


def svgd_tol(estimator):
    """The stopping tolerance in posterior sds: ``"auto"`` is ``0.1/sqrt(J)``."""
    if estimator.tol == "auto":
        return AUTO_TOL_SCALE / np.sqrt(estimator.n_particles)
    return float(estimator.tol)


def svgd_learning_rate(estimator, whitened):
    """The step: a fraction of the whitened field, or the estimator's Adam rate."""
    if estimator.learning_rate != "auto":
        return float(estimator.learning_rate)
    return WHITENED_STEP if whitened else estimator._adam_rate


def check_dense_memory(n_samples, estimator_name):
    """MemoryError before allocating kernel matrices that cannot fit."""
    _config.check_dense_bytes(
        4 * 8 * n_samples**2,  # K, its factor, the inverse and one copy
        f"{estimator_name} with {n_samples} samples (dense kernel matrices)",
        "Subsample the data or use a sparse (inducing-point) model.",
    )


def describe_hyper(names, values):
    """``name=value`` pairs of log-scale hyperparameters, for progress lines."""
    return ", ".join(f"{n}={v:.4g}" for n, v in zip(names, np.exp(values), strict=True))


def is_sparse_config(estimator):
    """True with ``inducing_points`` set; AttributeError (hiding
    ``partial_fit``) otherwise."""
    if estimator.inducing_points is None:
        raise AttributeError(
            "partial_fit needs the sparse model: set inducing_points (for "
            "example to 100). The exact model conditions on all the data at "
            "once."
        )
    return True


def check_particle_shape(estimator, n_params, action):
    """ValueError unless the fitted particles are ``(n_particles, n_params)``."""
    if estimator.particles_.shape != (estimator.n_particles, n_params):
        raise ValueError(
            f"{action} needs the same number of particles and parameters: "
            f"have {estimator.particles_.shape}, asked for "
            f"({estimator.n_particles}, {n_params})."
        )


def run_stein_svgd(
    estimator,
    evaluator,
    particles,
    bounds,
    state,
    stochastic,
    preconditioner=None,
):
    """SVGD with the estimator's step, tolerance, decay and progress lines."""
    with fit_progress(estimator, "SVGD", estimator.max_iter) as progress:
        return run_svgd(
            evaluator,
            particles,
            max_iter=estimator.max_iter,
            learning_rate=svgd_learning_rate(estimator, preconditioner is not None),
            tol=svgd_tol(estimator),
            preconditioner=preconditioner,
            bounds=bounds,
            state=state,
            verbose=engine_verbose(estimator),
            print_fn=estimator._log,
            decay=svgd_decay(estimator.learning_rate_decay, stochastic),
            stochastic=stochastic,
            progress=progress.engine,
        )


def sparse_svgd_stage(
    estimator,
    target,
    evaluator,
    *,
    continuing,
    bounds,
    hyper_start,
    prior_set,
    rng,
    replay=None,
):
    """Place or continue the particles of a sparse Stein fit, then run SVGD.

    Shared by both Stein estimators' sparse fits.

    Parameters
    ----------
    estimator : SteinGPRegressor or SteinGPClassifier
        Its fitted state is read when ``continuing``.
    target : SparseWhitenedTarget
    evaluator : ParticleEvaluator
    continuing : bool
    bounds : ndarray of shape (n_params, 2)
        The hyperparameters' bounds come first.
    hyper_start, prior_set, rng
        Where a new fit's particles start from; see
        :func:`~skgp_bayes._stein_base.sparse_initial_particles`.
    replay : callable, optional
        ``replay(evaluator, particles)`` when continuing, before SVGD (the
        regressor replays its last gradient on unchanged data).

    Returns
    -------
    result : SVGDResult
    centre : ndarray or None
    elbo : float or None
    history : dict of list
        The previous fit's history (when continuing) extended by this one's.
    init_done : float
        ``time.perf_counter()`` when the particles were in place.
    """
    names, h = target.param_names, target.n_hyper
    stochastic = evaluator.batch_size is not None
    state = None
    if continuing:
        check_particle_shape(estimator, len(names), "Continuing a fit")
        particles, centre = estimator.particles_, estimator.map_params_
        state = estimator._svgd_state
        # The permutation of the last chunk means nothing for a new one; the
        # random stream carries on.
        evaluator.set_state(estimator._batch_state)
        if replay is not None:
            replay(evaluator, particles)
        elbo = estimator.diagnostics_.get("svgp_elbo")
    else:
        particles, centre, elbo = sparse_initial_particles(
            target,
            init=estimator.init,
            n_particles=estimator.n_particles,
            hyper_start=hyper_start,
            hyper_bounds=bounds[:h],
            prior_set=prior_set,
            rng=rng,
            batch_size=evaluator.batch_size,
        )
        if estimator.verbose and centre is not None:
            estimator._log(
                f"Gaussian approximation with "
                f"{target.Z.shape[0]} inducing points: "
                f"{describe_hyper(names[:h], centre[:h])}"
            )
    init_done = time.perf_counter()
    evaluator.check_initial(particles)
    result = run_stein_svgd(estimator, evaluator, particles, bounds, state, stochastic)
    history = {k: list(v) for k, v in estimator.history_.items()} if continuing else {}
    for key, trace in result.history.items():
        history.setdefault(key, []).extend(trace)
    if not stochastic and not result.converged and estimator.max_iter > 0:
        warn_not_converged(estimator, result)
    warn_at_bounds(result.particles[:, :h], bounds[:h], names[:h], "particles")
    return result, centre, elbo, history, init_done
