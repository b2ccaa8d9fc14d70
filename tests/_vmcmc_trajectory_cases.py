"""Densities of every compiled target kind, for the trajectory and block tests."""

import numpy as np
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgp_bayes.inference.marginal_maps import MarginalMapTarget, SinhMaps
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli, Softmax
from skgp_bayes.priors import Gamma, LogNormal, PriorSet
from skgp_bayes.targets import ExactMarginalTarget, SparseWhitenedTarget
from skgp_bayes.targets.collapsed import CollapsedSparseTarget
from skgp_bayes.variational_mcmc._sampling import GuardedTarget
from skgp_bayes.variational_mcmc._trajectory import TrajectoryTarget


def kernel_adapter(d):
    return KernelAdapter(C(1.0) * RBF(np.ones(d)))


def _prior(adapter, n_hyper, family):
    if family is None:
        return None
    names = dict(adapter.hyperparameter_slices)
    if n_hyper > adapter.n_params:
        names["noise_variance"] = slice(adapter.n_params, n_hyper)
    first = next(iter(names))
    return PriorSet(names, {first: LogNormal(0.0, 1.5)}, default=family)


def target_for(kind, family, rng):
    X = rng.normal(size=(40, 2))
    Z = X[::5].copy()
    adapter = kernel_adapter(2)
    if kind.startswith("exact"):
        # 24 rows: the target's own path is the compiled small one, the same
        # arithmetic; 48: LAPACK's there, the unblocked code here
        rows = 24 if kind == "exact" else 48
        X = rng.normal(size=(rows, 2))
        y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=rows)
        prior = _prior(adapter, adapter.n_params + 1, family)
        return ExactMarginalTarget(adapter, X, y, prior)
    if kind == "collapsed":
        y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
        n_hyper = adapter.n_params + 1
        return CollapsedSparseTarget(adapter, X, y, Z, _prior(adapter, n_hyper, family))
    n_hyper = adapter.n_params
    prior = _prior(adapter, n_hyper, family)
    if kind == "logit":
        y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(float)
        return SparseWhitenedTarget(adapter, X, y, Z, Bernoulli(), prior)
    y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)
    return SparseWhitenedTarget(adapter, X, y, Z, Softmax(3), prior)


def density_of(target, with_maps, rng):
    n_hyper = getattr(target, "n_hyper", target.n_params)
    d = target.n_params
    guarded = GuardedTarget(target, np.full(n_hyper, -6.0), np.full(n_hyper, 6.0))
    base = guarded
    if with_maps:
        k = n_hyper
        maps = SinhMaps(
            rng.normal(scale=0.1, size=k),
            np.exp(rng.normal(scale=0.2, size=k)),
            np.where(np.arange(k) % 2, 0.6, 0.0),
            np.where(np.arange(k) % 2, 0.8, 0.0),  # rate 0: the identity
        )
        base = MarginalMapTarget(guarded, maps)
    A = rng.normal(scale=0.2, size=(d, d))
    transform = 0.3 * np.eye(d) + 0.05 * (A @ A.T)
    return TrajectoryTarget(base, rng.normal(scale=0.1, size=d), transform)


CASES = [
    (kind, family, maps)
    for kind in ("logit", "softmax", "collapsed", "exact", "exact-lapack")
    for family in (None, Gamma(2.0, 1.0))
    for maps in (False, True)
]


def case_ids(cases):
    """Test ids of ``CASES``."""
    return [
        f"{k}-{'prior' if f else 'noprior'}-{'maps' if m else 'nomaps'}"
        for k, f, m in cases
    ]


def density_for(kind, family, with_maps, rng):
    """The density of one case."""
    return density_of(target_for(kind, family, rng), with_maps, rng)


def exact_needing_jitter():
    """Repeated rows and a vanishing noise: ``K`` is singular, the compiled
    factorisation fails and the interpreted target adds jitter. Returns the
    density at a zero start and the target."""
    rng = np.random.default_rng(4)
    X = np.repeat(rng.normal(size=(6, 1)), 3, axis=0)
    target = ExactMarginalTarget(kernel_adapter(1), X, np.sin(X[:, 0]), None)
    p = target.n_params
    guarded = GuardedTarget(target, np.full(p, -60.0), np.full(p, 6.0))
    return TrajectoryTarget(guarded, np.r_[np.zeros(p - 1), -50.0], np.eye(p)), target
