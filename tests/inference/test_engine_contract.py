"""The engine contract: every engine on one known Gaussian target.

Engines know nothing about Gaussian processes, so one correlated 3-D
Gaussian with a closed-form mean and covariance checks them all (as
numpyro's ``test/infer/test_mcmc.py`` runs every kernel on one model).
Samplers must recover the mean and the covariance within their Monte Carlo
error, with the standard error from the package's effective sample size;
particle methods within the error of as many independent draws; optimisers
must reach the mode; the Laplace helper must return the mode and the
covariance; the score-function estimator must be unbiased.

Every statistical threshold is ``K_SE = 5`` standard errors per checked
entry: a two-sided normal tail of 5.7e-7, so about 5e-6 per case over its
three means and six covariance entries.
"""

import itertools

import numpy as np
import pytest
from scipy.linalg import solve_discrete_lyapunov
from scipy.special import expit

from skgp_bayes.diagnostics import effective_sample_size
from skgp_bayes.inference import (
    estimate_bernoulli_gradient,
    maximize,
    run_hmc_chains,
    run_sgld,
    run_svgd,
    sgld_schedule,
)
from skgp_bayes.inference.laplace import laplace_modes

MEAN = np.array([1.0, -0.5, 2.0])
SD = np.array([1.0, 0.5, 1.5])
CORR = np.array([[1.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 1.0]])
COV = CORR * np.outer(SD, SD)
PREC = np.linalg.inv(COV)
CHOL = np.linalg.cholesky(COV)
K_SE = 5.0
N_CHAINS = 4
UNBOUNDED = np.tile([-np.inf, np.inf], (3, 1))


def logp_and_grad(x):
    """The Gaussian's log density (up to a constant) and gradient."""
    r = np.asarray(x) - MEAN
    g = -r @ PREC
    return 0.5 * np.sum(r * g, axis=-1), g


def _starts(seed, n):
    return MEAN + 2.0 * np.random.default_rng(seed).normal(size=(n, 3)) * SD


# ------------------------------------------------------------ samplers
def _hmc(seed):
    results = run_hmc_chains(
        logp_and_grad,
        _starts(seed, N_CHAINS),
        random_state=seed,
        n_warmup=300,
        n_samples=1000,
        max_leapfrog=10,
    )
    assert sum(r.n_divergent for r in results) == 0
    return "draws", np.stack([r.samples for r in results]), COV


def _mala(seed):
    # MALA is exact for any step: its adapted step and metric change the
    # efficiency, never the law of the draws after adaptation. The last
    # metric window ends before the adaptation does, so that the step is
    # tuned to the final metric (Stan's terminal buffer).
    chains = []
    for c, x0 in enumerate(_starts(seed, N_CHAINS)):
        res = run_sgld(
            logp_and_grad,
            x0,
            n_iter=3000,
            a=0.5,
            gamma=0.0,
            metropolis=True,
            adapt_steps=500,
            metric_windows=[(100, 200), (200, 400)],
            rng=np.random.default_rng([seed, c]),
        )
        assert 0.3 < res.accepted[500:].mean() < 0.9
        chains.append(res.samples[500:])
    return "draws", np.stack(chains), COV


def _langevin_covariance(eps, M, V):
    """Stationary covariance of unadjusted Langevin steps on the Gaussian.

    ``x' = x + eps/2 M (g + xi) + sqrt(eps) M^1/2 z`` with ``xi ~ N(0, V)``
    is the autoregression ``x' - mu = A (x - mu) + noise`` with ``A = I -
    eps/2 M P`` and noise covariance ``eps M + eps^2/4 M V M``: its law is
    Gaussian with the covariance solving ``C = A C A' + Q``. The
    discretisation's bias is part of the reference, so the check is exact.
    """
    A = np.eye(3) - 0.5 * eps * M @ PREC
    Q = eps * M + 0.25 * eps**2 * M @ V @ M
    return solve_discrete_lyapunov(A, Q)


def _sgld(seed):
    # Step 0.5 with the covariance as preconditioner: A = 0.75 I, and the
    # chain's covariance is COV / (1 - 0.5 / 4), 14% wider than the target.
    eps, burn = 0.5, 200
    chains = [
        run_sgld(
            logp_and_grad,
            x0,
            n_iter=3000,
            a=eps,
            gamma=0.0,
            preconditioner=COV,
            rng=np.random.default_rng([seed, c]),
        ).samples[burn:]
        for c, x0 in enumerate(_starts(seed, N_CHAINS))
    ]
    return "draws", np.stack(chains), _langevin_covariance(eps, COV, 0 * COV)


def _sgld_frozen(seed):
    # Gradients with unit Gaussian noise, a decaying schedule and the
    # freezing rule: once frozen, the chain is the unadjusted one at the
    # frozen step, whose law is known exactly. Here the rule's ratio is
    # about 0.7 eps, so a threshold of 0.15 freezes near eps = 0.2 (t ~ 500)
    # and surely before t = 1300 (eps = 0.1). 200 steps of burn-in after
    # the freeze shrink the start's influence by 0.95^200 at the slowest.
    noise_rng = np.random.default_rng([seed, 99])

    def noisy(x):
        value, grad = logp_and_grad(x)
        return value, grad + noise_rng.standard_normal(3)

    a, b = sgld_schedule(0.5, 0.05, 3000)
    chains, steps = [], []
    for c, x0 in enumerate(_starts(seed, N_CHAINS)):
        res = run_sgld(
            noisy,
            x0,
            n_iter=3000,
            a=a,
            b=b,
            preconditioner=COV,
            freeze_threshold=0.15,
            freeze_window=100,
            rng=np.random.default_rng([seed, c]),
        )
        assert res.frozen_at is not None and res.frozen_at < 1300
        chains.append(res.samples[res.frozen_at + 200 : res.frozen_at + 1700])
        steps.append(res.step_sizes[-1])
    # Every chain freezes at its own step: the pooled draws' second moments
    # are the average of the chains' stationary covariances.
    cov = np.mean([_langevin_covariance(e, COV, np.eye(3)) for e in steps], axis=0)
    return "draws", np.stack(chains), cov


# ----------------------------------------------------------- particles
N_PARTICLES = 200


def _svgd(seed, **options):
    # Starts twice as wide as the target and independent in its whitened
    # coordinates: the coordinate-wise kernel matches each whitened
    # coordinate's marginal and leaves their dependence as it started.
    z = np.random.default_rng(seed).normal(size=(N_PARTICLES, 3))
    res = run_svgd(
        logp_and_grad,
        MEAN + 2.0 * z @ CHOL.T,
        max_iter=3000,
        tol=1e-3,
        **options,
    )
    assert res.converged
    return "particles", res.particles, COV


# -------------------------------------------------- optimisers, Laplace
def _lbfgs(seed):
    out = maximize(lambda x, _: logp_and_grad(x), _starts(seed, 1)[0], UNBOUNDED)
    assert out.converged
    # L-BFGS-B stops when the value's relative decrease is below scipy's
    # ftol (2.2e-9, on a value of order 1 here), so within about 1e-8 of the
    # maximum 0: sqrt(2e-8) ~ 1.5e-4 standard deviations of the mode.
    return "mode", out.params, 1e-3


def _adam(seed):
    out = maximize(
        lambda x, _: logp_and_grad(x),
        _starts(seed, 1)[0],
        UNBOUNDED,
        max_iter=4000,
        batches=itertools.repeat(None),
        learning_rate=0.01,
    )
    # On a deterministic gradient Adam converges linearly once near the
    # mode: its second moment remembers the early, larger gradients, so
    # m / sqrt(v) shrinks with the gradient. Seeds 0-9 ended within 2e-10
    # sd in 4000 steps; 1e-4 sd leaves six decades for other starts, and an
    # Adam hovering at the scale of its learning rate (1e-2) fails.
    return "mode", out.params, 1e-4


class _Target:
    """The Gaussian as a target object, for the Laplace helpers."""

    logp_and_grad = staticmethod(logp_and_grad)


def _laplace(seed):
    modes = laplace_modes(
        _Target(),
        _starts(seed, 2),
        UNBOUNDED,
        max_std=10.0,
    )
    assert len(modes) == 1
    mode, cov, log_mass = modes[0]
    # The gradient is linear, so central differences of it are exact up to
    # rounding (1e-12 / 1e-4 step): the covariance to 1e-6.
    np.testing.assert_allclose(cov, COV, rtol=1e-6, atol=1e-8)
    assert log_mass == pytest.approx(0.5 * np.linalg.slogdet(COV)[1], abs=1e-6)
    return "mode", mode, 1e-3


# ------------------------------------------------------ score function
def _score_function(seed):
    # d/dl E_q[f(b)] for b ~ Bernoulli(sigmoid(l)) and f the Gaussian's log
    # density at the mask, against the exact sum over the 8 masks.
    logits = np.array([0.5, -1.0, 0.2])
    masks = np.array(list(itertools.product([0, 1], repeat=3)), dtype=float)
    lam = expit(logits)
    q = np.prod(np.where(masks == 1, lam, 1 - lam), axis=1)
    f = logp_and_grad(masks)[0]
    exact = (q * f) @ (masks - lam)
    rng = np.random.default_rng(seed)
    draws = np.array(
        [
            estimate_bernoulli_gradient(
                lambda b: float(logp_and_grad(b.astype(float))[0]),
                logits,
                4,
                rng,
                "leave-one-out",
            )[0]
            for _ in range(2000)
        ]
    )
    return "estimates", draws, exact


ENGINES = {
    "hmc": _hmc,
    "mala": _mala,
    "sgld": _sgld,
    "sgld-frozen": _sgld_frozen,
    "svgd": lambda seed: _svgd(seed, learning_rate=0.05),
    "svgd-whitened": lambda seed: _svgd(seed, learning_rate=0.5, preconditioner=CHOL),
    "svgd-coordinatewise": lambda seed: _svgd(
        seed,
        learning_rate=0.5,
        preconditioner=CHOL,
        kernel="coordinatewise",
        step_control="per_coordinate",
    ),
    "maximize-lbfgs": _lbfgs,
    "maximize-adam": _adam,
    "laplace": _laplace,
    "score-function": _score_function,
}


# -------------------------------------------------------------- checks
def _check_moments(draws, ess_of, cov):
    """Mean and covariance entries within K_SE standard errors.

    The covariance is checked through the products of the centred draws
    (centred at the true mean, so their expectation is the entry itself),
    whose variance for a Gaussian is ``C_ii C_jj + C_ij^2``.
    """
    sd = np.sqrt(np.diag(cov))
    mean_error = np.abs(draws.mean(axis=(0, 1)) - MEAN)
    np.testing.assert_array_less(mean_error, K_SE * sd / np.sqrt(ess_of(draws)))
    i, j = np.triu_indices(3)
    products = (draws[..., i] - MEAN[i]) * (draws[..., j] - MEAN[j])
    sd_products = np.sqrt(cov[i, i] * cov[j, j] + cov[i, j] ** 2)
    cov_error = np.abs(products.mean(axis=(0, 1)) - cov[i, j])
    np.testing.assert_array_less(
        cov_error, K_SE * sd_products / np.sqrt(ess_of(products))
    )


def _check_draws(chains, cov):
    _check_moments(chains, effective_sample_size, cov)


def _check_particles(particles, cov):
    # SVGD is deterministic given its start; the randomness is the start.
    # The standard errors are those of J independent draws. Over seeds 0-7
    # the particle means erred by at most 0.03 of them; the covariance
    # entries by -1.1 to 0.4 with one RBF kernel (its finite-particle
    # under-dispersion, nearly the same for every start) and by -2.6 to 2.4
    # with the coordinate-wise kernel, whose whitened coordinates keep the
    # dependence of their independent start, so err as J draws do: the
    # false-failure rate is at most the normal one of the module notes. A
    # collapse onto the mode still fails (a variance error of 100% against
    # 5 x sqrt(2 / 200) = 50%).
    _check_moments(particles[None], lambda x: x.shape[1], cov)


def _check_mode(point, tol):
    z = np.linalg.solve(CHOL, point - MEAN)
    assert np.max(np.abs(z)) < tol, z


def _check_estimates(draws, exact):
    se = draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - exact), K_SE * se)


CHECKS = {
    "draws": _check_draws,
    "particles": _check_particles,
    "mode": _check_mode,
    "estimates": _check_estimates,
}

DETERMINISTIC = {"maximize-lbfgs", "maximize-adam", "laplace"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name, marks=() if name in DETERMINISTIC else pytest.mark.statistical
        )
        for name in ENGINES
    ],
)
def test_engine_on_a_known_gaussian(name, stat_seed):
    kind, result, reference = ENGINES[name](stat_seed)
    CHECKS[kind](result, reference)


def test_every_engine_is_in_the_contract():
    """A new engine in skgp_bayes.inference cannot skip the contract."""
    import skgp_bayes.inference as inference

    runners = {
        name
        for name in inference.__all__
        if name.startswith("run_") or name in {"maximize", "adam_update"}
    }
    covered = {
        "run_hmc",  # through run_hmc_chains
        "run_hmc_chains",
        "run_sgld",
        "run_svgd",
        "maximize",
        "adam_update",  # through maximize's Adam and SVGD's unwhitened steps
    }
    assert runners <= covered, sorted(runners - covered)
