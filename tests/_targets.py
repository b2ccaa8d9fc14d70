"""Every target of the package on a small problem, for the contract tests.

Each entry of ``EXACT`` builds a target with an exact value and gradient and
returns ``(evaluate, params)``: ``evaluate(params) -> (value, grad)`` calls
the target's value-and-gradient method (``logp_and_grad``, or the method its
class names for the quantity it climbs), with any extra arguments bound.
Each entry of ``STOCHASTIC`` returns ``(draw, exact, params)``: ``draw``
gives one unbiased gradient estimate, ``exact`` the gradient it estimates.
A new target class is covered by adding one line here; the contract test
fails while a public class of ``skgp_bayes.targets`` is in neither table
nor in ``NOT_TARGETS``.
"""

import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgp_bayes.kernels import KernelAdapter, force_generic
from skgp_bayes.likelihoods import Bernoulli, Gaussian, Softmax
from skgp_bayes.priors import Gamma, LogNormal, PriorSet
from skgp_bayes.targets import (
    ArrayExactMarginalTarget,
    ExactMarginalTarget,
    SparseWhitenedTarget,
    StochasticMarginalGradient,
    StochasticTraceTarget,
    SVGPBound,
)
from skgp_bayes.targets.cg_particles import CGParticleGradients
from skgp_bayes.targets.collapsed import CollapsedSparseTarget
from skgp_bayes.targets.laplace import LaplaceSurrogate, example_binary_problem
from skgp_bayes.targets.selective import (
    BernoulliPointProcess,
    SharedSubsetBound,
    SubsetBound,
)
from skgp_bayes.targets.whitened import WhitenedLatentTarget

N = 12


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-2.0, 2.0, N))[:, None]
    y = np.sin(2.0 * X[:, 0]) + 0.1 * rng.normal(size=N)
    return X, y


def _labels(X):
    return (X[:, 0] > 0).astype(float)


def _hyper_prior(adapter, with_noise=True):
    slices = dict(adapter.hyperparameter_slices)
    if with_noise:
        slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
        return PriorSet(slices, {"noise_variance": LogNormal(-2.0, 1.0)})
    return PriorSet(slices, {"k2__length_scale": Gamma(2.0, 1.0)})


def _scaled_rbf():
    return KernelAdapter(ConstantKernel() * RBF())


def _near(centre, seed, scale=0.3):
    centre = np.asarray(centre, dtype=np.float64)
    return centre + scale * np.random.default_rng(seed).normal(size=centre.shape)


# ------------------------------------------------------- exact targets
def exact_marginal():
    X, y = _data()
    adapter = _scaled_rbf()
    target = ExactMarginalTarget(adapter, X, y, _hyper_prior(adapter))
    return target.logp_and_grad, _near([0.0, 0.0, np.log(0.1)], 1)


def exact_marginal_generic():
    X, y = _data()
    adapter = force_generic(ConstantKernel() * RBF())
    target = ExactMarginalTarget(adapter, X, y, None)
    return target.logp_and_grad, _near([0.0, 0.0, np.log(0.1)], 2)


def exact_marginal_array():
    # NumPy as the array module: the same arithmetic the GPU runs
    X, y = _data()
    adapter = _scaled_rbf()
    target = ArrayExactMarginalTarget(adapter, X, y, _hyper_prior(adapter), xp=np)
    return target.logp_and_grad, _near([0.0, 0.0, np.log(0.1)], 1)


def whitened_latent():
    X, _ = _data()
    adapter = _scaled_rbf()
    target = WhitenedLatentTarget(
        adapter, X, _labels(X), Bernoulli(), _hyper_prior(adapter, False)
    )
    return target.logp_and_grad, _near(np.zeros(target.n_params), 3, 0.5)


def whitened_latent_softmax():
    X, _ = _data()
    y = np.arange(N) % 3
    target = WhitenedLatentTarget(
        KernelAdapter(RBF()), X, y, Softmax(n_classes=3), None, 3, False
    )
    return target.logp_and_grad, _near(np.zeros(target.n_params), 4, 0.5)


def sparse_whitened():
    X, y = _data()
    target = SparseWhitenedTarget(_scaled_rbf(), X, y, X[::3], Gaussian(0.1))
    start = np.zeros(target.n_params)
    start[target.n_hyper - 1] = np.log(0.1)
    return target.logp_and_grad, _near(start, 5)


def svgp_bound():
    X, _ = _data()
    bound = SVGPBound(_scaled_rbf(), X, _labels(X), X[::3], Bernoulli())
    # learn_inducing defaults to True on the compiled kernel: Z is a block too
    return bound.logp_and_grad, _near(bound.initial_params(), 6, 0.1)


def collapsed_sparse():
    X, y = _data()
    target = CollapsedSparseTarget(
        _scaled_rbf(), X, y, X[::3] + 0.05, learn_inducing=True
    )
    start = np.concatenate([[0.0, 0.0, np.log(0.1)], (X[::3] + 0.05).ravel()])
    return target.logp_and_grad, _near(start, 7, 0.1)


def subset_bound():
    X, y = _data()
    bound = SubsetBound(_scaled_rbf(), X, y, X[::2])
    return (
        lambda hyper: bound.logp_and_grad(hyper, [0, 2, 3]),
        _near([0.0, 0.0, np.log(0.1)], 8),
    )


def subset_bound_with_prior():
    X, y = _data()
    adapter = _scaled_rbf()
    bound = SubsetBound(adapter, X, y, X[::2], prior_set=_hyper_prior(adapter))
    return (
        lambda hyper: bound.logp_and_grad(hyper, [0, 2, 3]),
        _near([0.0, 0.0, np.log(0.1)], 13),
    )


def shared_subset_bound():
    X, y = _data()
    bound = SharedSubsetBound(_scaled_rbf(), X, y, X[::2], Gaussian(0.1))
    return (
        lambda params: bound.logp_and_grad(params, [0, 2, 3]),
        _near(bound.full.initial_params(), 9, 0.1),
    )


def laplace_surrogate():
    target, _, problem = example_binary_problem()
    surrogate = LaplaceSurrogate(
        [problem], 1, _hyper_prior(target.adapter, False), target.n_kernel_params
    )
    return surrogate.logp_and_grad, _near(np.zeros(2), 10)


def binary_laplace_problem():
    _, _, problem = example_binary_problem()
    return problem.log_marginal_and_grad, _near(np.zeros(2), 11)


def bernoulli_point_process():
    process = BernoulliPointProcess(5, alpha=0.3)
    return process.kl_and_grad, _near(np.zeros(5), 12, 1.0)


EXACT = {
    "ExactMarginalTarget": exact_marginal,
    "ExactMarginalTarget-generic": exact_marginal_generic,
    "ArrayExactMarginalTarget": exact_marginal_array,
    "WhitenedLatentTarget": whitened_latent,
    "WhitenedLatentTarget-softmax": whitened_latent_softmax,
    "SparseWhitenedTarget": sparse_whitened,
    "SVGPBound": svgp_bound,
    "CollapsedSparseTarget": collapsed_sparse,
    "SubsetBound": subset_bound,
    "SubsetBound-prior": subset_bound_with_prior,
    "SharedSubsetBound": shared_subset_bound,
    "LaplaceSurrogate": laplace_surrogate,
    "BinaryLaplaceProblem": binary_laplace_problem,
    "BernoulliPointProcess": bernoulli_point_process,
}


# -------------------------------------------------- stochastic targets
def _exact_reference(X, y, adapter, prior_set):
    exact = ExactMarginalTarget(adapter, X, y, prior_set)
    return lambda params: exact.logp_and_grad(params)[1]


def stochastic_trace(seed):
    X, y = _data()
    adapter = _scaled_rbf()
    prior_set = _hyper_prior(adapter)
    target = StochasticTraceTarget(
        adapter, X, y, prior_set, rng=np.random.default_rng(seed)
    )
    return (
        lambda params: target.logp_and_grad(params)[1],
        _exact_reference(X, y, adapter, prior_set),
        _near([0.0, 0.0, np.log(0.1)], 13),
    )


def stochastic_marginal(seed):
    X, y = _data()
    adapter = _scaled_rbf()
    prior_set = _hyper_prior(adapter)
    # ULISSE's randomised continuation is unbiased, but uncapped on a slowly
    # converging system its variance comes from events too rare for a
    # test-sized sample (tests/test_ulisse.py); capped, its tails are light.
    target = StochasticMarginalGradient(
        adapter,
        X,
        y,
        prior_set,
        rng=np.random.default_rng(seed),
        q=0.3,
        beta=0.1,
        max_random_steps=3,
    )
    return (
        lambda params: target(params)[1],
        _exact_reference(X, y, adapter, prior_set),
        _near([0.0, 0.0, np.log(0.1)], 14),
    )


def cg_particles(seed):
    X, y = _data()
    adapter = _scaled_rbf()
    prior_set = _hyper_prior(adapter)
    gradients = CGParticleGradients(adapter, X, y, prior_set, None, [seed])
    return (
        lambda params: gradients(params[None, :])[1][0],
        _exact_reference(X, y, adapter, prior_set),
        _near([0.0, 0.0, np.log(0.1)], 15),
    )


STOCHASTIC = {
    "StochasticTraceTarget": stochastic_trace,
    "StochasticMarginalGradient": stochastic_marginal,
    "CGParticleGradients": cg_particles,
}

# Public classes of skgp_bayes.targets with no value and gradient of their
# own, each with the reason.
NOT_TARGETS = {
    "ExactInducingConditional": "draws v | theta for a sampled exact target; "
    "tested in tests/targets/test_exact_inducing.py",
    "LaplaceDraw": "a record of one Laplace draw, not a density; the draws are "
    "tested in tests/targets/test_laplace_compiled.py",
}
