"""The parts both Stein estimators share: SVGD's settings from the
estimator's parameters, the sparse model's SVGD stage, checks and warnings.
"""

import time

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from . import _config
from ._fit_checks import warn_at_bounds
from ._particles import ParticleEvaluator
from ._progress import engine_verbose, fit_progress
from ._stein_sparse import sparse_initial_particles, svgd_decay
from ._warnings import warn_user
from .inference import run_svgd

__all__ = []

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
    """A :class:`~skgp_bayes._particles.ParticleEvaluator` over ``target``."""
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
        :func:`~skgp_bayes._stein_sparse.sparse_initial_particles`.
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
