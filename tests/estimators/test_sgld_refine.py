"""SGLDGPRegressor's MALA chains going on in sinh-mapped coordinates."""

import pickle
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from _sgld_grid import (
    assert_draws_match_quadrature,
    fail_run_length_checks,
    one_input_data,
    strong_maps,
)

from skgp_bayes import SGLDGPRegressor, _sgld_refine
from skgp_bayes._sgld_refine import skew_maps_for
from skgp_bayes._sgld_setup import FIRST_DRAWS, WARMUP
from skgp_bayes._sgld_solvers import CholeskySolver
from skgp_bayes.exceptions import SamplerWarning

_FIRST = WARMUP + FIRST_DRAWS


@pytest.fixture(scope="module")
def data():
    return one_input_data()


def _force_refinement(monkeypatch, never_mixed=False):
    """The first check fails (every check with ``never_mixed``) and the
    chains then go on under strong maps of every coordinate, whatever their
    draws look like. Returns the list of the kept spans the maps were asked
    for."""
    asked = []

    def once(kept, span, rhat, ess, options, budget_left, warmup):
        if options.get("maps") is not None:
            return None
        asked.append(span)
        return strong_maps(kept)

    fail_run_length_checks(monkeypatch, never_mixed)
    monkeypatch.setattr(_sgld_refine, "skew_maps_for", once)
    return asked


@pytest.mark.statistical
def test_chains_under_any_maps_keep_the_posterior(data, monkeypatch, stat_seed):
    # A draw of the mapped density mapped back is a draw of the posterior
    # whatever the map, so chains forced to go on under strong maps of all
    # three coordinates after the first block must still match the
    # quadrature posterior. Standard errors from the chains' own bulk ESS as
    # in test_sgld_regressor.test_exact_gradient_chain_matches_quadrature;
    # 5 of them on 3 means and 3 sds: 3e-6 false failures for Gaussian
    # errors, below 1e-4 with a 10% error in the estimated ESS.
    asked = _force_refinement(monkeypatch)
    X, y = data
    reg = SGLDGPRegressor(random_state=stat_seed).fit(X, y)
    assert asked == [FIRST_DRAWS]
    diagnostics = reg.diagnostics_
    assert diagnostics["skew_maps"] == 3 and diagnostics["refined_at"] == _FIRST
    assert diagnostics["converged"]
    # the first block and the new warm-up are the burn-in
    assert reg.burn_in_ == _FIRST + WARMUP
    assert reg.frozen_at_ == [_FIRST + WARMUP - 1] * 2
    assert reg.samples_.shape == (2, reg.n_iter_ - reg.burn_in_, 3)
    mean, sd, _ = assert_draws_match_quadrature(reg, X, y)
    # the draws are on the posterior's scale, not the mapped coordinates'
    assert np.all(np.abs(reg.chains_[:, -1] - mean) < 6 * sd)


def test_warm_start_after_the_maps_equals_one_long_fit(data, monkeypatch):
    # The maps, the moved adaptation and the mapped chain states are what a
    # warm start continues from: two fits (3000 iterations, then 500) give
    # the chains of one fit of 3500.
    _force_refinement(monkeypatch, never_mixed=True)
    X, y = data
    refined_block = _FIRST + WARMUP + FIRST_DRAWS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        whole = SGLDGPRegressor(max_iter=refined_block + 500, random_state=0)
        whole.fit(X, y)
        reg = SGLDGPRegressor(max_iter=refined_block, warm_start=True, random_state=0)
        reg.fit(X, y)
        assert reg.n_iter_ == refined_block
        reg = pickle.loads(pickle.dumps(reg))
        reg.set_params(max_iter=500).fit(X, y)
    assert reg.n_iter_ == whole.n_iter_ == refined_block + 500
    for name in ("chains_", "step_sizes_", "samples_", "rhat_", "ess_"):
        np.testing.assert_array_equal(getattr(reg, name), getattr(whole, name))
    assert reg.burn_in_ == whole.burn_in_ == _FIRST + WARMUP
    for key in ("skew_maps", "refined_at"):
        assert reg.diagnostics_[key] == whole.diagnostics_[key]
    np.testing.assert_array_equal(reg.predict(X), whole.predict(X))


def test_maps_are_fitted_once_per_fit(data, monkeypatch, capsys):
    asked = _force_refinement(monkeypatch, never_mixed=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        reg = SGLDGPRegressor(max_iter=8000, verbose=1, random_state=0).fit(*data)
    assert asked == [FIRST_DRAWS] and reg.diagnostics_["blocks"] > 3
    printed = capsys.readouterr()
    line = (
        "sinh maps for the skewed k1__constant_value, k2__length_scale, "
        "noise_variance; the chains adapt again"
    )
    assert (printed.out + printed.err).count(line) == 1


def test_mapped_chains_are_the_same_in_worker_processes(data, monkeypatch):
    # The maps and the moved states cross process boundaries (n_jobs=2
    # runs each chain in a worker): the chains must not change.
    _force_refinement(monkeypatch, never_mixed=True)
    kw = dict(max_iter=_FIRST + WARMUP + FIRST_DRAWS, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        one = SGLDGPRegressor(**kw, n_jobs=1).fit(*data)
        two = SGLDGPRegressor(**kw, n_jobs=2).fit(*data)
    assert one.diagnostics_["skew_maps"] == two.diagnostics_["skew_maps"] == 3
    np.testing.assert_array_equal(one.chains_, two.chains_)
    np.testing.assert_array_equal(one.step_sizes_, two.step_sizes_)


def test_no_maps_under_a_burn_in_the_user_fixed(data, monkeypatch):
    # burn_in=300 keeps every draw after the 300th: the draws before the
    # maps and the new warm-up would be among them.
    asked = _force_refinement(monkeypatch, never_mixed=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        reg = SGLDGPRegressor(burn_in=300, max_iter=3000, random_state=0)
        reg.fit(*data)
    assert asked == [] and reg.diagnostics_["skew_maps"] == 0
    assert reg.burn_in_ == 300 and reg.diagnostics_["refined_at"] is None


def _skewed_and_symmetric(n_draws=1000):
    rng = np.random.default_rng(0)
    return np.stack(
        [np.exp(rng.normal(size=(2, n_draws))), rng.normal(size=(2, n_draws))],
        axis=-1,
    )


@pytest.mark.parametrize(
    "change, why",
    [
        ({}, None),
        ({"options": {"solver": CholeskySolver(), "jumps": object()}}, "mode jumps"),
        (
            {"options": {"solver": SimpleNamespace(metropolis=False)}},
            "stochastic gradients, no MALA",
        ),
        ({"budget_left": 1400}, "budget short of a warm-up and a block"),
        ({"ess": np.array([40.0, 25.0])}, "a coordinate's skew not yet testable"),
        ({"rhat": np.array([1.02, 1.02])}, "a slow coordinate is symmetric"),
        ({"span": 900}, "cheaper to go on without maps"),
    ],
)
def test_when_the_chains_go_on_under_maps(change, why):
    arguments = {
        "kept": _skewed_and_symmetric(),
        "span": 3000,
        "rhat": np.array([1.02, 1.0]),
        "ess": np.array([40.0, 900.0]),
        "options": {"solver": CholeskySolver(), "jumps": None},
        "budget_left": 10000,
        "warmup": WARMUP,
    }
    arguments.update(change)
    maps = skew_maps_for(**arguments)
    if why is None:
        assert maps.mapped.tolist() == [True, False]
        assert maps.skew[0] > 0  # the long tail is on the right
    else:
        assert maps is None, why
