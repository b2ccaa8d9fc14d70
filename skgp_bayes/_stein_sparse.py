"""The sparse (inducing-point) mode of the Stein estimators.

With ``inducing_points`` set, the particles hold ``(theta, v)``: the kernel
hyperparameters (and the log noise variance of a regressor) and the whitened
inducing values of :class:`~skgp_bayes.targets.sparse.SparseWhitenedTarget`
(seed 000, sections 3-4). With ``batch_size`` the data term is estimated on
one random minibatch per iteration, shared by all particles, scaled by
``n / |B|`` so that the estimate is unbiased (seed 000, eq. 10).
"""

import numpy as np

from . import _config
from ._sparse import fit_svgp_adam, fit_svgp_lbfgs
from .exceptions import NotPSDError
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
