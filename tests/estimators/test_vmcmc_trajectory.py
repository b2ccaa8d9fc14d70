"""The compiled leapfrog trajectory of variational MCMC's chains.

:class:`TrajectoryTarget.leapfrog` must integrate exactly the path that the
engine's interpreted loop integrates through the layers (affine
coordinates, sinh maps, bounds guard, target, prior), for each target kind
it compiles, and must hand back what it cannot compile. The arithmetic is
the same operations in the same order, up to rounding: the matrix-vector
products of the affine layer, which NumPy and the compiled code may send
to different BLAS builds, and an exact target of 33-48 rows, factorised by
LAPACK in the interpreted target and by the unblocked loops of its small
path here. The comparison's tolerance, 1e-11 relative over ten steps, is
some ten thousand units in the last place, and far below any difference
in the algorithm (a changed step or a missed layer moves the end by 1e-3
or more).
"""

import pickle

import numpy as np
import pytest
from _vmcmc_trajectory_cases import CASES, case_ids, exact_needing_jitter
from _vmcmc_trajectory_cases import density_of as _density
from _vmcmc_trajectory_cases import kernel_adapter as _adapter
from _vmcmc_trajectory_cases import target_for as _target

from skgp_bayes._chain_density_numba import KIND_EXACT
from skgp_bayes.inference.leapfrog import leapfrog
from skgp_bayes.likelihoods import Bernoulli
from skgp_bayes.priors import Gamma, HalfNormal, PriorSet
from skgp_bayes.targets import ExactMarginalTarget, SparseWhitenedTarget
from skgp_bayes.variational_mcmc import _trajectory
from skgp_bayes.variational_mcmc._sampling import GuardedTarget
from skgp_bayes.variational_mcmc._trajectory import (
    EXACT_MAX_ROWS,
    TrajectoryTarget,
    compiled_plan,
    steps_per_call,
)

RTOL = 1e-11


@pytest.mark.parametrize(
    "kind,family,with_maps",
    CASES,
    ids=case_ids(CASES),
)
def test_compiled_trajectory_is_the_interpreted_one(kind, family, with_maps):
    rng = np.random.default_rng(7)
    density = _density(_target(kind, family, rng), with_maps, rng)
    assert compiled_plan(density) is not None
    d = density.shift.size
    w = 0.3 * rng.normal(size=d)
    value, grad = density(w)
    assert np.isfinite(value)
    p = rng.normal(size=d)
    inv_mass = np.exp(rng.normal(scale=0.3, size=d))
    compiled = density.leapfrog(w, p, grad, 0.05, inv_mass, 10)
    # a bound method has no leapfrog of its own: the engine's loop
    interpreted = leapfrog(density.__call__, w, p, grad, 0.05, inv_mass, 10)
    assert compiled is not None and compiled is not NotImplemented
    assert interpreted is not None
    for got, want in zip(compiled, interpreted, strict=True):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL)
    # the path moved: the comparison is not of two starting points
    assert np.abs(compiled[0] - w).max() > 1e-2


@pytest.mark.parametrize("with_maps", [False, True])
@pytest.mark.parametrize("kind", ["collapsed", "exact"])
def test_compiled_trajectory_moves_log_distances_from_bounds_as_interpreted(
    kind, with_maps
):
    # The log-distance layer of BoundCoordinates (the collapsed targets'
    # chains use it where a bound is within reach) in the compiled density:
    # [log c, log l1, log l2, log s2] with l1 held, l2 as its log distance
    # from its upper bound and s2 from its lower one, under sinh maps or
    # none. The same path as the interpreted layers, to rounding.
    from skgp_bayes.inference.marginal_maps import MarginalMapTarget, SinhMaps
    from skgp_bayes.variational_mcmc._bounds import BoundCoordinates

    rng = np.random.default_rng(5)
    target = _target(kind, Gamma(2.0, 1.0), rng)
    lower, upper = np.full(4, -6.0), np.full(4, 6.0)
    guarded = GuardedTarget(target, lower, upper)
    x0 = np.array([0.2, 0.1, 1.5, -4.0])
    masks = (
        np.array([False, True, False, False]),
        np.array([False, False, False, True]),
        np.array([False, False, True, False]),
    )
    coords = BoundCoordinates(guarded, x0, masks, np.array([1.0, 1.0, 4.5, 2.0]))
    base = coords
    if with_maps:
        maps = SinhMaps(coords.start, np.ones(3), np.array([0.0, 0.6, 0.0]),
                        np.array([0.0, 0.8, 0.0]))  # fmt: skip
        base = MarginalMapTarget(coords, maps)
    A = rng.normal(scale=0.2, size=(3, 3))
    density = TrajectoryTarget(base, coords.start, 0.3 * np.eye(3) + 0.05 * A @ A.T)
    assert compiled_plan(density) is not None
    w = 0.3 * rng.normal(size=3)
    value, grad = density(w)
    assert np.isfinite(value)
    p, inv_mass = rng.normal(size=3), np.exp(rng.normal(scale=0.3, size=3))
    compiled = density.leapfrog(w, p, grad, 0.05, inv_mass, 10)
    interpreted = leapfrog(density.__call__, w, p, grad, 0.05, inv_mass, 10)
    for got, want in zip(compiled, interpreted, strict=True):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL)
    assert np.abs(compiled[0] - w).max() > 1e-2


@pytest.mark.parametrize("kind", ["logit", "softmax", "collapsed", "exact"])
def test_each_kind_has_its_own_entry_point_and_arguments(kind):
    # One compiled entry point per kind, given only that kind's arguments:
    # a first fit then compiles the one target it samples (module notes of
    # _trajectory_numba), not all four.
    from skgp_bayes.targets.compiled_forms import FORMS, compiled_form
    from skgp_bayes.variational_mcmc._trajectory_numba import TRAJECTORIES

    rng = np.random.default_rng(3)
    target = _target(kind, None, rng)
    density = _density(target, False, rng)
    _, index, _, arguments, _ = compiled_plan(density)
    name, form_arguments, _ = compiled_form(target)
    assert FORMS.index(name) == index
    assert len(arguments) == len(form_arguments)
    for got, want in zip(arguments, form_arguments, strict=True):
        if isinstance(want, np.ndarray):
            np.testing.assert_array_equal(got, want)
        else:  # scalars, and the LAPACK routines' addresses
            assert got == want
    assert len({id(f) for f in TRAJECTORIES}) == len(FORMS)
    # Counted before and after, not from zero: an earlier fit in this
    # process (a six-class softmax, whose likelihood takes draws instead of
    # the cubature rule) may have compiled this entry for other arguments.
    before = [len(f.signatures) for f in TRAJECTORIES]
    d = density.shift.size
    value, grad = density(np.zeros(d))
    density.leapfrog(np.zeros(d), np.ones(d), grad, 0.01, np.ones(d), 2)
    after = [len(f.signatures) for f in TRAJECTORIES]
    assert after[index] >= 1 and after[index] - before[index] <= 1
    assert [n for k, n in enumerate(after) if k != index] == [
        n for k, n in enumerate(before) if k != index
    ]


def test_data_standing_for_more_rows_keeps_its_scale():
    """``n_total`` scales the data term by ``n_total / n`` in both paths."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] > 0).astype(float)
    target = SparseWhitenedTarget(_adapter(2), X, y, X[::3], Bernoulli(), n_total=75)
    density = _density(target, False, rng)
    d = density.shift.size
    w = 0.2 * rng.normal(size=d)
    _, grad = density(w)
    args = (w, rng.normal(size=d), grad, 0.05, np.ones(d), 8)
    compiled, interpreted = density.leapfrog(*args), leapfrog(density.__call__, *args)
    for got, want in zip(compiled, interpreted, strict=True):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL)


def test_the_engine_uses_the_compiled_trajectory():
    rng = np.random.default_rng(3)
    density = _density(_target("logit", None, rng), False, rng)
    calls = []
    original = TrajectoryTarget.leapfrog

    def counting(self, *args):
        calls.append(1)
        return original(self, *args)

    d = density.shift.size
    w = np.zeros(d)
    _, grad = density(w)
    TrajectoryTarget.leapfrog = counting
    try:
        end = leapfrog(density, w, np.ones(d), grad, 0.05, np.ones(d), 3)
    finally:
        TrajectoryTarget.leapfrog = original
    assert calls == [1] and end is not None


def test_a_path_beyond_the_bounds_fails_in_both():
    rng = np.random.default_rng(1)
    density = _density(_target("logit", Gamma(2.0, 1.0), rng), False, rng)
    d = density.shift.size
    w = np.zeros(d)
    _, grad = density(w)
    # a momentum that carries the hyperparameters far past +-6
    p = np.zeros(d)
    p[0] = 400.0
    args = (grad, 0.5, np.ones(d), 20)
    assert density.leapfrog(w, p, *args) is None
    assert leapfrog(density.__call__, w, p, *args) is None


def _uncompiled_densities(rng):
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] > 0).astype(float)
    adapter = _adapter(2)
    # a prior outside the compiled families
    odd = PriorSet(dict(adapter.hyperparameter_slices), default=HalfNormal(1.0))
    yield SparseWhitenedTarget(adapter, X, y, X[::3], Bernoulli(), odd)
    # inducing inputs enough for the per-thread scratch buffer, which
    # chains on threads would share in one compiled call
    X = rng.normal(size=(200, 2))
    yield SparseWhitenedTarget(adapter, X, (X[:, 0] > 0).astype(float), X, Bernoulli())


def test_what_has_no_compiled_form_keeps_the_interpreted_loop():
    rng = np.random.default_rng(2)
    for target in _uncompiled_densities(rng):
        n_hyper = getattr(target, "n_hyper", target.n_params)
        guarded = GuardedTarget(target, np.full(n_hyper, -6.0), np.full(n_hyper, 6.0))
        d = target.n_params
        density = TrajectoryTarget(guarded, np.zeros(d), 0.2 * np.eye(d))
        _, grad = density(np.zeros(d))
        end = density.leapfrog(np.zeros(d), np.ones(d), grad, 0.05, np.ones(d), 2)
        assert end is NotImplemented, target
        # and the engine then integrates it itself
        assert leapfrog(density, np.zeros(d), np.ones(d), grad, 0.05, np.ones(d), 2)


def test_a_large_exact_target_is_integrated_in_several_calls(monkeypatch):
    # Beyond EXACT_MAX_ROWS rows a trajectory is cut into compiled calls
    # of steps_per_call steps: at the end of one call and the start of the
    # next are two half kicks where one call has a full kick, so the path
    # is the interpreted loop's to rounding. Here 3 steps a call: the work
    # limit scaled down so that 300 rows need no larger factorisations.
    rng = np.random.default_rng(4)
    n = EXACT_MAX_ROWS + 44
    X = rng.normal(size=(n, 2))
    target = ExactMarginalTarget(_adapter(2), X, np.sin(X[:, 0]), None)
    d = target.n_params
    guarded = GuardedTarget(target, np.full(d, -6.0), np.full(d, 6.0))
    monkeypatch.setattr(_trajectory, "_MOST_STEPS", 3.5 * (n / EXACT_MAX_ROWS) ** 3)
    density = TrajectoryTarget(guarded, np.r_[np.zeros(d - 1), -2.0], 0.1 * np.eye(d))
    assert density.compiled() and steps_per_call(density._plan) == 3
    calls = []
    entry = _trajectory.TRAJECTORIES[KIND_EXACT]

    def counted(*args):
        calls.append(args[5])  # the steps of this call
        return entry(*args)

    monkeypatch.setattr(
        _trajectory, "TRAJECTORIES", (*_trajectory.TRAJECTORIES[:-1], counted)
    )
    w, p = np.zeros(d), np.full(d, 0.3)
    _, grad = density(w)
    compiled = density.leapfrog(w, p, grad, 0.05, np.ones(d), 8)
    interpreted = leapfrog(density.__call__, w, p, grad, 0.05, np.ones(d), 8)
    assert calls == [3, 3, 2]
    for a, b in zip(compiled, interpreted, strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL)


def test_pickled_density_integrates_the_same_path():
    rng = np.random.default_rng(5)
    density = _density(_target("softmax", Gamma(2.0, 1.0), rng), True, rng)
    d = density.shift.size
    w = 0.2 * rng.normal(size=d)
    _, grad = density(w)
    args = (w, rng.normal(size=d), grad, 0.05, np.ones(d), 6)
    before = density.leapfrog(*args)
    copy = pickle.loads(pickle.dumps(density))
    after = copy.leapfrog(*args)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def test_an_exact_kernel_matrix_needing_jitter_goes_back_to_the_target():
    """Repeated rows and a vanishing noise: ``K`` is singular, the compiled
    factorisation fails, and the interpreted target (which adds jitter and
    records it) integrates the path."""
    density, target = exact_needing_jitter()
    p = density.shift.size
    assert compiled_plan(density) is not None
    w = np.zeros(p)
    _, grad = density(w)
    args = (w, np.zeros(p), grad, 1e-3, np.ones(p), 2)
    assert density.leapfrog(*args) is NotImplemented
    assert leapfrog(density, *args) is not None
    assert target.max_jitter > 0
