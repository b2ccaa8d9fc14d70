"""``to_inference_data``: ArviZ sees the same draws and diagnostics."""

import sys
import warnings

import numpy as np
import pytest

from skgp_bayes import (
    SelectiveSVGP,
    SGLDGPRegressor,
    SteinGPClassifier,
    SteinGPRegressor,
    VariationalMCMCClassifier,
    VariationalMCMCRegressor,
)
from skgp_bayes.exceptions import SamplerWarning

az = pytest.importorskip("arviz")


def _data(n=40, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 1))
    return X, np.sin(X[:, 0]) + 0.2 * rng.randn(n)


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)  # short test chains
        return model.fit(X, y)


@pytest.fixture(scope="module")
def sampled():
    X, y = _data()
    hmc = _fit(
        VariationalMCMCRegressor(
            n_warmup=100, n_samples=150, max_samples=150, random_state=0
        ),
        X,
        y,
    )
    mala = _fit(SGLDGPRegressor(n_iter=500, random_state=0), X, y)
    return {"hmc": (hmc, y), "mala": (mala, y)}


@pytest.mark.parametrize("kind", ["hmc", "mala"])
def test_arviz_summary_agrees_with_the_estimators_diagnostics(sampled, kind):
    model, y = sampled[kind]
    idata = model.to_inference_data(y=y)
    names = [name.replace(" ", "_") for name in model.param_names_]
    assert list(idata.posterior.data_vars) == names
    summary = az.summary(idata, kind="diagnostics", var_names=names)
    # The same estimators on the same draws: agreement to rounding (ArviZ
    # rounds its table to two decimals for R-hat, none for ESS here).
    np.testing.assert_allclose(summary["r_hat"], model.rhat_, atol=0.005 + 1e-9)
    np.testing.assert_allclose(summary["ess_bulk"], model.ess_, rtol=1e-6, atol=0.5)
    exact_rhat = [float(az.rhat(idata, var_names=[n])[n]) for n in names]
    np.testing.assert_allclose(exact_rhat, model.rhat_, rtol=1e-10)
    np.testing.assert_array_equal(idata.observed_data["y"], y)


def test_hmc_sample_stats_are_the_kept_transitions(sampled):
    model, _ = sampled["hmc"]
    stats = model.to_inference_data().sample_stats
    n_chains = len(model.step_size_)
    assert stats["diverging"].shape == (n_chains, model.draws_.shape[0] // n_chains)
    assert int(stats["diverging"].sum()) == model.n_divergences_
    np.testing.assert_allclose(
        float(stats["acceptance_rate"].mean()), model.acceptance_rate_, rtol=1e-12
    )
    # ArviZ reads the energy: the E-BFMI of every chain is a number, and
    # the energies are the Hamiltonians the chains kept.
    assert np.all(np.isfinite(az.bfmi(model.to_inference_data())))
    # After warm-up each chain keeps its final step size.
    np.testing.assert_array_equal(stats["step_size"][:, -1], model.step_size_)


def test_mala_draws_are_the_kept_samples(sampled):
    model, _ = sampled["mala"]
    idata = model.to_inference_data()
    first = model.param_names_[0].replace(" ", "_")
    np.testing.assert_array_equal(idata.posterior[first], model.samples_[:, :, 0])
    assert idata.posterior.attrs["solver"] == model.solver_
    # The observed targets are the user's, not the standardised ones.
    np.testing.assert_allclose(
        idata.observed_data["y"], _data()[1], rtol=1e-12, atol=1e-12
    )


def test_particles_are_one_chain_of_non_markov_draws():
    X, y = _data()
    model = SteinGPRegressor(n_particles=6, random_state=0).fit(X, y)
    idata = model.to_inference_data()
    assert dict(idata.posterior.sizes) == {"chain": 1, "draw": 6}
    assert "not Markov" in idata.posterior.attrs["draws"]
    np.testing.assert_array_equal(idata.sample_stats["lp"][0], model.log_posterior_)
    assert idata.sample_stats["field"].dims == ("iteration",)
    labels = (y > 0).astype(int)
    classifier = SteinGPClassifier(n_particles=4, random_state=0).fit(X, labels)
    posterior = classifier.to_inference_data(y=labels).posterior
    assert list(posterior.data_vars) == [
        n.replace(" ", "_") for n in classifier.param_names_
    ]


@pytest.mark.parametrize("n_draws", [0, 32])
def test_selective_draws_with_their_inclusion_probabilities(n_draws):
    X, y = _data()
    model = SelectiveSVGP(n_hyperparameter_draws=n_draws, random_state=0).fit(X, y)
    posterior = model.to_inference_data().posterior
    # spread candidates can stop short of n_candidates on 1-D inputs
    n_candidates = model.candidates_.shape[0]
    assert 1 < n_candidates <= 40
    assert dict(posterior.sizes) == {
        "chain": 1,
        "draw": max(n_draws, 1),
        "candidate": n_candidates,
    }
    for draw in range(max(n_draws, 1)):
        np.testing.assert_array_equal(
            posterior["inclusion_probability"][0, draw],
            model.inclusion_probabilities_,
        )
    # the noise in the units of y; without draws, the point estimate itself
    noise = model.draws_[:, -1] + 2 * np.log(model.y_std_)
    np.testing.assert_allclose(posterior["noise_variance"][0], noise, rtol=1e-12)
    if n_draws == 0:
        assert np.isclose(noise[0], np.log(model.noise_variance_), rtol=1e-12)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_arviz_plots_run(sampled, tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model, _ = sampled["hmc"]
    idata = model.to_inference_data()
    hypers = [n.replace(" ", "_") for n in model.param_names_[:3]]
    az.plot_trace(idata, var_names=hypers)
    az.plot_pair(idata, var_names=hypers[:2], divergences=True)
    az.plot_rank(idata, var_names=hypers[:1])
    plt.savefig(tmp_path / "plots.png")
    plt.close("all")
    assert (tmp_path / "plots.png").stat().st_size > 0


def test_classifier_without_targets_has_no_observed_data():
    X, y = _data(30)
    labels = (y > 0).astype(int)
    model = _fit(
        VariationalMCMCClassifier(
            n_warmup=30, n_samples=30, max_samples=30, random_state=0
        ),
        X,
        labels,
    )
    assert "observed_data" not in model.to_inference_data().groups()
    assert "observed_data" in model.to_inference_data(y=labels).groups()


def test_missing_arviz_names_the_extra(monkeypatch):
    X, y = _data()
    model = SteinGPRegressor(n_particles=3, random_state=0).fit(X, y)
    monkeypatch.setitem(sys.modules, "arviz", None)
    with pytest.raises(ImportError, match=r"skgp_bayes\[arviz\]"):
        model.to_inference_data()


def test_unfitted_estimator_raises_not_fitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        SteinGPRegressor().to_inference_data()
