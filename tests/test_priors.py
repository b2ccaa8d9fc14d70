import numpy as np
import pytest
from scipy import stats

from skgp_bayes.priors import (
    Gamma,
    HalfCauchyVariance,
    HalfNormal,
    InverseGamma,
    LogNormal,
    PriorSet,
    ScipyPrior,
    as_prior,
)

ANALYTIC = [
    Gamma(1.5, 2.0),
    Gamma(1.0, 2.0),
    InverseGamma(3.0, 2.0),
    LogNormal(0.3, 0.7),
    HalfNormal(1.3),
    HalfCauchyVariance(0.7),
]
SCIPY_TWINS = [
    (Gamma(1.5, 2.0), stats.gamma(a=1.5, scale=2.0)),
    (InverseGamma(3.0, 2.0), stats.invgamma(a=3.0, scale=2.0)),
    (LogNormal(0.3, 0.7), stats.lognorm(s=0.7, scale=np.exp(0.3))),
    (HalfNormal(1.3), stats.halfnorm(scale=1.3)),
    # a half-Cauchy sd of scale s squared: F(1, 1) scaled by s^2
    (HalfCauchyVariance(0.7), stats.f(dfn=1, dfd=1, scale=0.49)),
]


@pytest.mark.parametrize("prior", ANALYTIC, ids=repr)
def test_theta_density_is_the_density_of_x_with_its_jacobian(prior):
    # Gamma and LogNormal write log_prob_theta in closed form in theta; it
    # must be log p(exp(theta)) + theta, with the chain-rule derivative.
    theta = np.linspace(-8.0, 8.0, 33)
    x = np.exp(theta)
    value, grad = prior.log_prob_theta(theta)
    np.testing.assert_allclose(value, prior.logpdf(x) + theta, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad, prior.dlogpdf(x) * x + 1.0, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("prior", ANALYTIC, ids=repr)
def test_theta_gradient_matches_finite_differences(prior):
    theta = np.linspace(-2.0, 2.0, 9)
    _, grad = prior.log_prob_theta(theta)
    h = 1e-6
    fd = (prior.log_prob_theta(theta + h)[0] - prior.log_prob_theta(theta - h)[0]) / (
        2 * h
    )
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("prior,frozen", SCIPY_TWINS, ids=lambda p: repr(p)[:20])
def test_logpdf_matches_scipy(prior, frozen):
    x = np.linspace(0.05, 5.0, 17)
    np.testing.assert_allclose(prior.logpdf(x), frozen.logpdf(x), rtol=1e-12)
    wrapped = ScipyPrior(frozen)
    np.testing.assert_allclose(wrapped.dlogpdf(x), prior.dlogpdf(x), rtol=1e-6)


@pytest.mark.statistical
@pytest.mark.parametrize("prior,frozen", SCIPY_TWINS, ids=lambda p: repr(p)[:20])
def test_samples_follow_the_density(prior, frozen, stat_seed):
    # The KS p-value of a continuous law is uniform: p > 1e-6 is a false
    # failure of 1e-6 per law (1e-3 before: 4e-3 over the four). With 20,000
    # draws it still detects a scale error of about 5%.
    draws = prior.sample(np.random.default_rng(stat_seed), 20000)
    assert stats.kstest(draws, frozen.cdf).pvalue > 1e-6


def test_theta_density_integrates_to_one():
    # the Jacobian term makes exp(log_prob_theta) a density over theta; the
    # half-Cauchy variance's tails in theta fall as exp(-|theta| / 2), so
    # the range leaves under 1e-8 of its mass outside
    theta = np.linspace(-40, 40, 160001)
    for prior in ANALYTIC:
        dens = np.exp(prior.log_prob_theta(theta)[0])
        assert np.trapezoid(dens, theta) == pytest.approx(1.0, abs=2e-3)


def test_prior_set_names_and_entries():
    slices = {
        "k1__constant_value": slice(0, 1),
        "k2__length_scale": slice(1, 3),
        "noise_variance": slice(3, 4),
    }
    ps = PriorSet(
        slices,
        {"k2__length_scale[1]": HalfNormal(1.0), "noise_variance": LogNormal(-2, 1)},
    )
    theta = np.array([0.1, -0.3, 0.4, -1.0])
    value, grad = ps.log_prob(theta)
    parts = [Gamma(1, 2), Gamma(1, 2), HalfNormal(1.0), LogNormal(-2, 1)]
    expected = [
        p.log_prob_theta(np.array([t])) for p, t in zip(parts, theta, strict=True)
    ]
    assert value == pytest.approx(sum(float(e[0][0]) for e in expected))
    np.testing.assert_allclose(grad, [float(e[1][0]) for e in expected])


def test_prior_set_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown hyperparameters"):
        PriorSet({"a": slice(0, 1)}, {"length_scale": Gamma()})


@pytest.mark.parametrize(
    "bad", [dict(shape=0.0), dict(scale=-1.0), dict(shape=np.inf), dict(scale=np.nan)]
)
def test_invalid_prior_parameters(bad):
    with pytest.raises(ValueError, match="positive finite"):
        Gamma(**bad)


def test_as_prior_rejects_other_objects():
    with pytest.raises(TypeError, match="frozen scipy.stats"):
        as_prior("gamma", "k1__constant_value")


class _ShiftedGamma(Gamma):
    # A user's subclass: PriorSet must call its own density, not Gamma's.
    def log_prob_theta(self, theta):
        value, grad = super().log_prob_theta(theta)
        return value + 1.0, grad


def _per_entry_reference(prior_set, theta):
    # What PriorSet computed before its compiled tables: each entry's own
    # log_prob_theta, summed.
    parts = [
        p.log_prob_theta(np.array([t]))
        for p, t in zip(prior_set.entry_priors, theta, strict=True)
    ]
    return sum(float(v[0]) for v, _ in parts), np.array([float(g[0]) for _, g in parts])


SLICES = {"a": slice(0, 1), "b": slice(1, 5), "c": slice(5, 6)}
PRIOR_MIXES = {
    **{
        f"all {type(p).__name__}({i})": {"a": p, "b": p, "c": p}
        for i, p in enumerate(ANALYTIC)
    },
    "default": {},
    "gamma, log-normal, half-normal, inverse gamma": {
        "b": LogNormal(-0.4, 1.3),
        "b[2]": InverseGamma(2.5, 0.5),
        "c": HalfNormal(0.2),
    },
    "analytic with scipy and a subclass": {
        "a": ScipyPrior(stats.lognorm(s=0.5)),
        "b": LogNormal(0.0, 2.0),
        "b[1]": _ShiftedGamma(2.0, 1.0),
        "c": ScipyPrior(stats.gamma(a=2.0)),
    },
}


@pytest.mark.parametrize("priors", PRIOR_MIXES.values(), ids=PRIOR_MIXES.keys())
def test_prior_set_equals_its_entries(priors):
    # The compiled evaluation must give every family's own log_prob_theta,
    # summed, to rounding, over a wide range of theta; other priors keep
    # their own methods.
    prior_set = PriorSet(SLICES, priors)
    rng = np.random.default_rng(0)
    for theta in 4.0 * rng.normal(size=(20, 6)):
        value, grad = prior_set.log_prob(theta)
        ref_value, ref_grad = _per_entry_reference(prior_set, theta)
        assert value == pytest.approx(ref_value, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-12)


def test_prior_set_survives_pickling_without_its_tables():
    # A PriorSet pickled before the compiled tables existed rebuilds them.
    import pickle

    prior_set = PriorSet(SLICES, {"b": LogNormal(0.5, 1.0)})
    old_state = {"entry_priors": prior_set.entry_priors}
    restored = PriorSet.__new__(PriorSet)
    restored.__setstate__(old_state)
    theta = np.linspace(-1.0, 1.0, 6)
    clone = pickle.loads(pickle.dumps(restored))
    for ps in (restored, clone):
        value, grad = ps.log_prob(theta)
        assert value == prior_set.log_prob(theta)[0]
        np.testing.assert_array_equal(grad, prior_set.log_prob(theta)[1])


def test_prior_set_rejects_a_vector_of_another_length():
    prior_set = PriorSet(SLICES)
    for theta in (np.zeros(5), np.zeros(7), np.zeros((1, 6))):
        with pytest.raises(ValueError, match=r"theta must have shape \(6,\)"):
            prior_set.log_prob(theta)
