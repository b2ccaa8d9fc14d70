"""Searches from inputs the best mode leaves unused (the Stein regressor)."""

import numpy as np

from skgp_bayes._starts import unused_input_starts
from skgp_bayes._stein_models.exact import with_unused_input_modes
from skgp_bayes.inference.laplace import laplace_modes

NAMES = ["k2__length_scale[0]", "k2__length_scale[1]"]
A = np.log([0.5, 50.0])  # input 0 in use, input 1 left at 50 sds
B = np.log([50.0, 0.8])  # the other way round


class _TwoUses:
    """A log density with a mode for each input carrying the signal.

    ``B`` is wide along input 0's log length scale, so the start that gives
    input 1 its spread at ``A`` lies in ``B``'s basin, while every start
    near ``A`` stays in ``A``'s.
    """

    weights = (1.0, 0.5)  # A's and B's

    def __init__(self):
        rng = np.random.default_rng(0)
        self.X = rng.standard_normal((200, 2))
        self.param_names = NAMES

    def log_prob(self, theta):
        return self.logp_and_grad(theta)[0]

    def logp_and_grad(self, theta):
        parts, grads = [], []
        shapes = ((A, np.array([0.5, 0.5])), (B, np.array([3.0, 0.5])))
        for (centre, sd), weight in zip(shapes, self.weights, strict=True):
            z = (theta - centre) / sd
            parts.append(np.log(weight) - 0.5 * z @ z)
            grads.append(-z / sd)
        w = np.exp(np.array(parts) - max(parts))
        w /= w.sum()
        return float(np.logaddexp(*parts)), w[0] * grads[0] + w[1] * grads[1]


def test_an_unused_input_gets_a_start_at_its_spread_and_a_used_one_none():
    X = np.column_stack([np.linspace(-1.0, 1.0, 21), np.linspace(0.0, 4.0, 21)])
    starts = unused_input_starts(
        NAMES + ["noise_variance"], np.log([10.0, 0.5, 0.1]), X
    )
    np.testing.assert_allclose(
        starts, [[np.log(X[:, 0].std()), np.log(0.5), np.log(0.1)]]
    )
    # without one ARD length scale per input there is nothing to vary
    assert unused_input_starts(["k2__length_scale"], np.zeros(1), X).shape == (0, 1)


def test_the_mode_an_unused_input_leads_to_joins_the_modes():
    target, bounds = _TwoUses(), np.tile([-8.0, 8.0], (2, 1))
    modes = laplace_modes(target, A[None, :] + 0.1, bounds)
    assert len(modes) == 1  # the default search stays at A
    found, best = with_unused_input_modes(target, modes, modes[0][0], bounds)
    centres = np.array([entry[0] for entry in found])
    assert len(found) == 2
    np.testing.assert_allclose(centres[np.argmin(centres[:, 0])], A, atol=1e-3)
    np.testing.assert_allclose(centres[np.argmax(centres[:, 0])], B, atol=1e-3)
    np.testing.assert_allclose(best, A, atol=1e-3)  # the higher density
    # ordered by Laplace mass, as the particles' shares are drawn
    assert found[0][2] >= found[1][2]


def test_nothing_changes_where_every_input_is_in_use():
    target, bounds = _TwoUses(), np.tile([-8.0, 8.0], (2, 1))
    modes = laplace_modes(target, A[None, :], bounds)
    used = np.log([0.5, 0.6])  # both shorter than their spread (about 1)
    found, best = with_unused_input_modes(target, modes, used, bounds)
    assert found is modes
    np.testing.assert_array_equal(best, used)


# The variational MCMC regressor: the exact posterior's side modes, the
# inducing set that lacks one, and the chains' jumps to it.


def _stage():
    from skgp_bayes.variational_mcmc._approximation import ApproximationStage

    return ApproximationStage(
        max_iter=100,
        batch_size=None,
        learning_rate=0.01,
        optimize_inducing=False,
        grow_inducing=True,
        kmeans_inducing=True,
        progress=None,
        log=None,
        verbose=0,
    )


class _OneUse(_TwoUses):
    """A bound that has only ``A``'s mode: its inducing inputs lack ``B``'s."""

    def logp_and_grad(self, theta):
        z = (theta - A) / 0.5
        return float(-0.5 * z @ z), -z / 0.5


def _problem(target):
    return (None, target.X, None, None, np.tile([-8.0, 8.0], (2, 1)))


def test_the_exact_side_mode_is_found_from_the_unused_input():
    target = _TwoUses()
    bounds = _problem(target)[-1]
    side = _stage()._side_modes(target, A, bounds)
    assert len(side) == 1
    np.testing.assert_allclose(side[0], B, atol=1e-3)
    # where every input is in use there is nothing to search
    assert _stage()._side_modes(target, np.log([0.5, 0.6]), bounds) == []


def test_a_bound_without_the_side_mode_counts_as_missing_it(monkeypatch):
    # The bound's optimum is A, the exact posterior's mode: the value rule
    # and the reference's own check pass. Only the side mode B, a third of
    # the mass, tells that these inducing inputs cannot hold the posterior.
    from skgp_bayes.variational_mcmc import _approximation

    exact = _TwoUses()
    monkeypatch.setattr(_approximation, "ExactMarginalTarget", lambda *a: exact)
    problem = _problem(exact)
    for bound, misses in ((_OneUse(), True), (_TwoUses(), False)):
        monkeypatch.setattr(
            _approximation, "CollapsedSparseTarget", lambda *a, b=bound: b
        )
        stage = _stage()
        assert stage._misses_exact_mode(problem, (0.0, A, [B]), A, None) is misses
        # without the side mode nothing is missing
        assert not stage._misses_exact_mode(problem, (0.0, A, []), A, None)


def test_the_chains_jump_to_the_mode_an_unused_input_leads_to(monkeypatch):
    from skgp_bayes.variational_mcmc import _pipelines

    # the sampled target stands in for the exact one; no screen
    monkeypatch.setattr(_pipelines, "ExactMarginalTarget", _TwoUses)
    monkeypatch.setattr(_pipelines, "screened_exact_starts", lambda *a: [])
    target = _TwoUses()
    jumps = _pipelines.collapsed_mode_jumps(
        target, (A, A), np.tile([-8.0, 8.0], (2, 1)), (None, target.X, None, None)
    )
    assert jumps is not None
    means = jumps.means[np.argsort(jumps.means[:, 0])]
    np.testing.assert_allclose(means, [A, B], atol=1e-3)


def test_a_side_mode_higher_than_the_search_s_becomes_the_reference(monkeypatch):
    # The bound is compared with the highest exact mode known: the search
    # ended at A, the side mode B is higher.
    from types import SimpleNamespace

    from skgp_bayes.variational_mcmc import _approximation

    class BHigher(_TwoUses):
        weights = (0.5, 4.0)

    target = BHigher()
    monkeypatch.setattr(_approximation, "ExactMarginalTarget", lambda *a: target)
    stage = _stage()
    found = SimpleNamespace(params=A.copy())
    monkeypatch.setattr(
        stage, "_exact_search", lambda problem, hyper: (target.log_prob(A), found)
    )
    value, mode, side = stage.exact_reference(_problem(target), A)
    np.testing.assert_allclose(mode, B, atol=1e-3)
    assert value == target.log_prob(mode) > target.log_prob(A)
    assert len(side) == 1
    np.testing.assert_allclose(side[0], A)
