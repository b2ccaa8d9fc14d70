"""Independence moves between known modes, alone and inside MALA chains."""

import warnings

import numpy as np
import pytest
from _sgld_grid import one_short_input
from scipy.special import logsumexp
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgp_bayes import SGLDGPRegressor, VariationalMCMCRegressor
from skgp_bayes.diagnostics import effective_sample_size
from skgp_bayes.inference import run_hmc, run_sgld
from skgp_bayes.inference.mode_jumps import ModeJumps, laplace_mixture, mode_jump

# 0.3 N(-4, 0.5^2) + 0.7 N(4, 0.5^2): a valley of 32 nats between the modes,
# which a Langevin chain never crosses by its own steps.
_WEIGHTS, _MEANS, _SD = np.array([0.3, 0.7]), np.array([-4.0, 4.0]), 0.5


def _two_modes(x):
    terms = np.log(_WEIGHTS) - 0.5 * ((x[0] - _MEANS) / _SD) ** 2
    value = logsumexp(terms)
    resp = np.exp(terms - value)
    return float(value), np.array([np.sum(resp * (_MEANS - x[0]) / _SD**2)])


def _proposal(every=2):
    # Deliberately off: means shifted, too wide, equal weights. The move
    # stays exact whatever the mixture; only its acceptance suffers.
    return ModeJumps(
        np.array([[-4.3], [3.8]]), np.full((2, 1, 1), 0.7), np.log([0.5, 0.5]), every
    )


def _chains(seeds, jumps, n_iter=6000):
    runs = [
        run_sgld(
            _two_modes,
            np.array([-4.0]),
            n_iter=n_iter,
            a=1.0,
            gamma=0.0,
            metropolis=True,
            adapt_steps=500,
            rng=np.random.default_rng(seed),
            jumps=jumps,
        )
        for seed in seeds
    ]
    return np.stack([r.samples[1000:, 0] for r in runs]), runs


@pytest.mark.statistical
def test_chains_with_jumps_hold_each_mode_at_its_weight(stat_seed):
    draws, runs = _chains([4 * stat_seed + c for c in range(4)], _proposal())
    upper = (draws > 0).astype(float)
    share = upper.mean()
    # The share's Monte Carlo error from the chains' own ESS of the
    # indicator; 5 standard errors: a false failure about 6e-7 under
    # normality, and the ESS estimate itself errs by some 10-20%.
    se = np.sqrt(share * (1 - share) / effective_sample_size(upper))
    assert abs(share - 0.7) < 5 * se, (share, se)
    # Inside the upper mode the draws keep its spread (sd 0.5), to within
    # 5 standard errors of an sd (sd / sqrt(2 ESS) for a Gaussian).
    inside = draws[draws > 0]
    se_sd = _SD / np.sqrt(2 * effective_sample_size(upper) * share)
    assert abs(inside.std() - _SD) < 5 * se_sd
    assert all(r.n_jumps == 3000 for r in runs)  # one after every 2nd of 6,000
    assert all(0 < r.n_jumps_accepted < r.n_jumps for r in runs)


def test_without_jumps_the_chain_stays_in_its_mode():
    draws, runs = _chains([0], None, n_iter=3000)
    assert np.all(draws < 0)
    assert runs[0].n_jumps == 0


def test_a_proposal_equal_to_the_target_is_always_accepted():
    jumps = ModeJumps(np.zeros((1, 2)), np.eye(2)[None], np.zeros(1))

    def normal(x):
        return -0.5 * float(x @ x), -x

    rng = np.random.default_rng(0)
    x = np.array([0.3, -1.0])
    for _ in range(50):
        accepted, x_new, logp, grad = mode_jump(x, normal(x)[0], normal, rng, jumps)
        assert accepted
        np.testing.assert_allclose(logp, normal(x_new)[0])
        np.testing.assert_allclose(grad, -x_new)
        x = x_new


def test_mixture_density_matches_its_components():
    jumps = _proposal()
    x = np.array([1.2])
    expected = np.log(
        0.5 * np.exp(-0.5 * ((1.2 + 4.3) / 0.7) ** 2) / (0.7 * np.sqrt(2 * np.pi))
        + 0.5 * np.exp(-0.5 * ((1.2 - 3.8) / 0.7) ** 2) / (0.7 * np.sqrt(2 * np.pi))
    )
    assert jumps.log_q(x) == pytest.approx(expected, rel=1e-12)


def test_a_proposal_outside_the_bounds_or_not_finite_is_rejected():
    jumps = ModeJumps(np.array([[10.0]]), np.full((1, 1, 1), 1e-3), np.zeros(1))
    rng = np.random.default_rng(0)
    bounds = np.array([[-5.0, 5.0]])
    assert not mode_jump(np.zeros(1), 0.0, _two_modes, rng, jumps, bounds)[0]

    def nan_density(x):
        return np.nan, np.zeros(1)

    assert not mode_jump(np.zeros(1), 0.0, nan_density, rng, jumps)[0]


def test_jumps_need_metropolis_and_consistent_shapes():
    with pytest.raises(ValueError, match="metropolis=True"):
        run_sgld(
            _two_modes,
            np.zeros(1),
            n_iter=5,
            a=0.1,
            rng=np.random.default_rng(0),
            jumps=_proposal(),
        )
    with pytest.raises(ValueError, match="must agree"):
        ModeJumps(np.zeros((2, 1)), np.ones((1, 1, 1)), np.zeros(2))
    with pytest.raises(ValueError, match="every"):
        ModeJumps(np.zeros((1, 1)), np.ones((1, 1, 1)), np.zeros(1), every=0)


class _CountingTwoModes:
    calls = 0

    def logp_and_grad(self, x):
        self.calls += 1
        return _two_modes(x)


def test_laplace_mixture_weights_modes_by_mass_and_skips_one_mode():
    target, bounds = _CountingTwoModes(), np.array([[-20.0, 20.0]])
    # one mode (repeats within 0.3 are the same): no Hessian is paid for
    assert laplace_mixture(target, [np.array([4.0]), np.array([4.1])], bounds) is None
    assert target.calls == 0
    jumps = laplace_mixture(target, [np.array([4.0]), np.array([-4.0])], bounds)
    np.testing.assert_allclose(np.exp(jumps.log_weights), [0.7, 0.3], atol=1e-4)
    np.testing.assert_allclose(jumps.factors[:, 0, 0], _SD, rtol=1e-4)


def test_sgld_regressor_moves_between_the_modes_its_searches_found():
    X, y = one_short_input()
    reg = SGLDGPRegressor(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # mixes by the run-length rule, quietly
        reg.fit(X, y)
    jumps = reg.diagnostics_["mode_jumps"]
    assert jumps["modes"] >= 2
    assert 0 < jumps["accepted"] < jumps["tried"]
    short = np.exp(reg.chains_[:, reg.burn_in_ :, 3]) < 1.0
    # every chain visits both modes
    assert np.all((short.mean(axis=1) > 0.05) & (short.mean(axis=1) < 0.95))
    # a kernel the estimator does not build by default gets no jumps where
    # its searches reach one mode: nothing changes for it
    one = SGLDGPRegressor(ConstantKernel() * RBF(), random_state=0, n_iter=300)
    grid = np.linspace(0, 1, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short run: only the record matters
        one.fit(grid[:, None], np.sin(6 * grid) + 0.1 * np.cos(40 * grid))
    assert one.diagnostics_["mode_jumps"] == {"modes": 0, "tried": 0, "accepted": 0}


def _hmc_chains(seeds, jumps, n_samples=1500):
    return [
        run_hmc(
            _two_modes,
            np.array([-4.0]),
            n_warmup=300,
            n_samples=n_samples,
            random_state=seed,
            jumps=jumps,
        )
        for seed in seeds
    ]


@pytest.mark.statistical
def test_hmc_chains_with_jumps_hold_each_mode_at_its_weight(stat_seed):
    runs = _hmc_chains([2 * stat_seed + c for c in range(2)], _proposal(every=1))
    upper = np.stack([(r.samples[:, 0] > 0).astype(float) for r in runs])
    share = upper.mean()
    # as for the Langevin chains above: 5 standard errors from the ESS
    se = np.sqrt(share * (1 - share) / effective_sample_size(upper))
    assert abs(share - 0.7) < 5 * se, (share, se)
    assert all(r.n_jumps == 1800 for r in runs)  # after every transition
    assert all(0 < r.n_jumps_accepted < r.n_jumps for r in runs)


def test_hmc_without_jumps_stays_in_its_mode():
    (run,) = _hmc_chains([0], None, n_samples=500)
    assert np.all(run.samples[:, 0] < 0)
    assert run.n_jumps == run.n_jumps_accepted == 0


def test_the_mixture_in_affine_coordinates_is_the_same_mixture():
    rng = np.random.default_rng(0)
    factors = np.array([np.tril(rng.normal(size=(3, 3))) for _ in range(2)])
    factors[:, range(3), range(3)] = np.abs(factors[:, range(3), range(3)]) + 0.5
    jumps = ModeJumps(rng.normal(size=(2, 3)), factors, np.log([0.4, 0.6]))
    shift, transform = rng.normal(size=3), rng.normal(size=(3, 3)) + 3 * np.eye(3)
    mapped = jumps.in_coordinates(shift, transform)
    log_det = np.linalg.slogdet(transform)[1]
    for w in rng.normal(size=(5, 3)):
        # densities of x = shift + T w and of w differ by the constant log|T|
        np.testing.assert_allclose(
            mapped.log_q(w), jumps.log_q(shift + transform @ w) + log_det, rtol=1e-10
        )
    assert mapped.every == jumps.every


def test_variational_mcmc_regressor_moves_between_the_modes():
    # The collapsed bound's optimum has the third input's length scale long;
    # the length-scale screen's per-input point finds the short mode on the
    # sampled target, and every chain visits both.
    X, y = one_short_input()
    reg = VariationalMCMCRegressor(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reg.fit(X, y)
    jumps = reg.diagnostics_["mode_jumps"]
    assert jumps["modes"] >= 2
    assert 0 < jumps["accepted"] < jumps["tried"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # samples_' new shape
        per_chain = reg.samples_
    short = np.exp(per_chain[:, :, 3]) < 1.0
    assert np.all((short.mean(axis=1) > 0.05) & (short.mean(axis=1) < 0.95))


def test_a_mode_a_chain_occupies_stays_in_the_mixture_whatever_its_share():
    # Two modes 15 nats apart in log density: by its share (3e-7) the lower
    # one would be left out, and a chain in it would see a proposal
    # density of about exp(-72) there, against the target's exp(-15) less
    # than at the higher mode: every move out is refused. Kept at its small
    # weight, the move to the higher mode is accepted with odds of order
    # one, and moves into the lower mode are proposed once in millions.
    low, high = np.array([-6.0]), np.array([6.0])

    class FarApart:
        def logp_and_grad(self, x):
            a = -0.5 * (x - high) ** 2
            b = -15.0 - 0.5 * (x - low) ** 2
            top = np.maximum(a, b)
            wa, wb = np.exp(a - top), np.exp(b - top)
            grad = (-(x - high) * wa - (x - low) * wb) / (wa + wb)
            return float((top + np.log(wa + wb))[0]), grad

    target, bounds = FarApart(), np.array([[-20.0, 20.0]])
    assert laplace_mixture(target, [high, low], bounds) is None
    jumps = laplace_mixture(target, [high, low], bounds, keep_near=[low + 0.1])
    assert jumps.means.shape == (2, 1)
    log_accept = (
        target.logp_and_grad(high)[0]
        + jumps.log_q(low)
        - target.logp_and_grad(low)[0]
        - jumps.log_q(high)
    )
    assert log_accept > np.log(0.5)
    assert np.min(np.exp(jumps.log_weights)) < 1e-6
