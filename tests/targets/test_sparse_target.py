"""The sparse whitened target (seed 003, eq. 7-8): gradients and minibatches."""

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgp_bayes.kernels import KernelAdapter, force_generic
from skgp_bayes.likelihoods import Bernoulli, Gaussian, Poisson, RobustMax, Softmax
from skgp_bayes.priors import LogNormal, PriorSet
from skgp_bayes.targets._likelihood_numba import LOGIT_RULE_LIMITS
from skgp_bayes.targets.sparse import SparseWhitenedTarget


def _data(likelihood, n=18, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    if isinstance(likelihood, Bernoulli):
        y = (f > 0).astype(float)
    elif isinstance(likelihood, RobustMax | Softmax):
        y = np.digitize(f, [-0.5, 0.5])
    elif isinstance(likelihood, Poisson):
        y = rng.poisson(np.exp(f)).astype(float)
    else:
        y = f + 0.1 * rng.normal(size=n)
    Z = rng.uniform(-2, 2, (5, 2))
    return X, y, Z


CASES = {
    "logit": (Bernoulli("logit"), ConstantKernel(1.3) * RBF([0.8, 1.2])),
    "probit": (Bernoulli("probit"), Matern(0.9, nu=1.5) * ConstantKernel(0.7)),
    "robustmax": (RobustMax(3), ConstantKernel(1.0) * RBF(1.0)),
    "softmax": (Softmax(3, n_samples=50), ConstantKernel(1.0) * Matern(1.0, nu=2.5)),
    # beyond five classes the expectation takes the simplex rule's nodes
    "softmax-7": (Softmax(7), ConstantKernel(1.0) * RBF([0.9, 1.1])),
    "poisson": (Poisson(), ConstantKernel(0.8) * RBF(1.1) + WhiteKernel(0.05)),
    "gaussian": (Gaussian(0.2), ConstantKernel(1.0) * RBF([1.0, 0.7])),
}


def _target(name, prior=True, offset=False, generic=False):
    likelihood, kernel = CASES[name]
    X, y, Z = _data(likelihood)
    adapter = force_generic(kernel) if generic else KernelAdapter(kernel)
    n_hyper = adapter.n_params + int(isinstance(likelihood, Gaussian))
    prior_set = None
    if prior:
        slices = dict(adapter.hyperparameter_slices)
        if n_hyper > adapter.n_params:
            slices["noise_variance"] = slice(adapter.n_params, n_hyper)
        named = (
            {"noise_variance": LogNormal(-2.0, 1.0)}
            if "noise_variance" in slices
            else {}
        )
        prior_set = PriorSet(slices, named)
    off = None
    if offset:
        off = np.log(np.random.default_rng(1).uniform(0.5, 2.0, X.shape[0]))
    return SparseWhitenedTarget(adapter, X, y, Z, likelihood, prior_set, offset=off)


def _params(target, seed=3):
    rng = np.random.default_rng(seed)
    theta = target.adapter.kernel.theta + 0.1 * rng.normal(size=target.n_kernel_params)
    parts = [theta]
    if target.learn_noise:
        parts.append([np.log(0.15)])
    parts.append(0.7 * rng.normal(size=target.n_inducing * target.n_latent))
    return np.concatenate(parts)


def _fd(fun, x, h=1e-6):
    out = np.empty_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        out[j] = (fun(x + e) - fun(x - e)) / (2 * h)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences_in_every_block(name):
    target = _target(name, offset=name == "poisson")
    params = _params(target)
    value, grad = target.logp_and_grad(params)
    assert np.isclose(value, target.log_prob(params))
    fd = _fd(target.log_prob, params)
    # blocks: theta, (log noise), v; checked separately so a failure names one
    blocks = {"theta": slice(0, target.n_kernel_params)}
    if target.learn_noise:
        blocks["log_noise"] = slice(target.n_kernel_params, target.n_hyper)
    blocks["v"] = slice(target.n_hyper, target.n_params)
    for block, sl in blocks.items():
        # central differences at h=1e-6 are good to ~1e-8 relative here
        np.testing.assert_allclose(
            grad[sl], fd[sl], rtol=1e-5, atol=1e-6, err_msg=f"block {block}"
        )


@pytest.mark.parametrize("name", ["logit", "gaussian"])
def test_gradient_on_generic_kernel_path(name):
    target = _target(name, generic=True)
    params = _params(target)
    _, grad = target.logp_and_grad(params)
    np.testing.assert_allclose(grad, _fd(target.log_prob, params), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["logit", "robustmax", "poisson", "gaussian"])
def test_minibatch_mean_over_partition_equals_full_gradient(name):
    target = _target(name, offset=name == "poisson")
    params = _params(target)
    full_value, full_grad = target.logp_and_grad(params)
    perm = np.random.default_rng(5).permutation(target.n)
    batches = np.array_split(perm, 6)  # equal sizes: 18 / 6 = 3
    values, grads = zip(
        *(target.logp_and_grad(params, b) for b in batches), strict=True
    )
    # Each batch is unbiased, and the batches partition the data, so the
    # mean over them is the full target exactly (up to rounding).
    np.testing.assert_allclose(np.mean(values), full_value, rtol=1e-10)
    np.testing.assert_allclose(np.mean(grads, axis=0), full_grad, rtol=1e-9, atol=1e-10)
    assert not np.allclose(grads[0], full_grad)


def test_offset_shifts_the_latent_mean():
    plain = _target("poisson")
    shifted = _target("poisson", offset=True)
    params = _params(plain)
    assert plain.log_prob(params) != shifted.log_prob(params)
    # With v = 0 and a tiny kernel the latent is (nearly) the offset alone:
    # the Poisson data term is then sum y*o - exp(o) up to constants.
    assert np.isfinite(shifted.logp_and_grad(params)[0])
    with pytest.raises(ValueError, match="offset"):
        SparseWhitenedTarget(
            plain.adapter, plain.X, plain.y, plain.Z, Poisson(), offset=np.ones(3)
        )


def test_value_matches_direct_formula():
    # log q = sum E[log p] - v'v/2 for a Gaussian likelihood, written out
    # densely from K(X, Z), K(Z, Z) without the target's machinery.
    target = _target("gaussian", prior=False)
    params = _params(target)
    theta, log_noise, v = target.split(params)
    kernel = target.adapter.kernel_with_theta(theta)
    Kzz = kernel(target.Z)
    Kzz += 1e-6 * np.mean(np.diag(Kzz)) * np.eye(target.n_inducing)
    R = np.linalg.cholesky(Kzz)
    A = np.linalg.solve(R, kernel(target.Z, target.X))
    mu = A.T @ v[:, 0]
    gamma = kernel.diag(target.X) - np.sum(A * A, axis=0)
    s2 = np.exp(log_noise)
    elp = -0.5 * (np.log(2 * np.pi * s2) + ((target.y - mu) ** 2 + gamma) / s2)
    expected = elp.sum() - 0.5 * v[:, 0] @ v[:, 0]
    np.testing.assert_allclose(target.log_prob(params), expected, rtol=1e-10)


def test_split_join_round_trip_and_bad_shapes():
    target = _target("robustmax")
    params = _params(target)
    theta, _, v = target.split(params)
    np.testing.assert_array_equal(target.join(theta, v), params)
    assert len(target.param_names) == target.n_params
    with pytest.raises(ValueError, match="shape"):
        target.logp_and_grad(params[:-1])
    with pytest.raises(IndexError):
        target.logp_and_grad(params, batch=[target.n])


@pytest.mark.parametrize("n_latent", [1, 3])
def test_fast_whitened_pullback_equals_the_generic_one(n_latent):
    # The target's pull-back skips the Cholesky reverse pass for the
    # variance term and uses a suffix sum for the mean term; both are
    # rewritings, so the result must equal the generic reverse rule to
    # round-off, for one latent and several.
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern

    from skgp_bayes.kernels import KernelAdapter
    from skgp_bayes.targets._sparse_shared import inducing_factor, project, pullback
    from skgp_bayes.targets.sparse import _whitened_pullback

    rng = np.random.default_rng(0)
    adapter = KernelAdapter(ConstantKernel(1.3) * Matern([0.3, 0.5, 0.4], nu=1.5))
    X, Z = rng.uniform(size=(50, 3)), rng.uniform(size=(12, 3))
    theta = adapter.kernel.theta
    R = inducing_factor(adapter, theta, Z, 1e-6)
    A, _, _ = project(adapter, theta, Z, X, R)
    v = rng.normal(size=(12, n_latent))
    g_mu, gbar = rng.normal(size=(50, n_latent)), rng.normal(size=50)
    generic = pullback(
        adapter, theta, Z, X, R, A, v @ g_mu.T - 2 * A * gbar, gbar, 1e-6
    )
    fast = _whitened_pullback(adapter, theta, Z, X, R, A, v, g_mu, gbar, 1e-6)
    np.testing.assert_allclose(fast, generic, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_path_equals_the_numpy_path(name):
    # The compiled evaluation is a rewriting of the NumPy one (same algebra,
    # other loop order), so the two agree to round-off on every likelihood,
    # with and without a minibatch.
    compiled = _target(name, offset=name == "poisson")
    numpy_path = _target(name, offset=name == "poisson")
    numpy_path._compiled = False
    assert compiled._compiled
    params = _params(compiled)
    for batch in (None, np.arange(0, 18, 3)):
        value, grad = compiled.logp_and_grad(params, batch)
        ref_value, ref_grad = numpy_path.logp_and_grad(params, batch)
        np.testing.assert_allclose(value, ref_value, rtol=1e-12)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-10)
        assert np.isclose(compiled.log_prob(params, batch), value, rtol=1e-12)


# 7 inducing inputs take the compiled loops, 100 take LAPACK and BLAS
# (_sparse_numba.LAPACK_MIN_INDUCING is 80).
@pytest.mark.parametrize("m", [7, 100])
def test_compiled_forward_matches_scipy(m):
    from scipy.linalg import cholesky, solve_triangular

    from skgp_bayes.targets import _sparse_numba

    rng = np.random.default_rng(2)
    X, Z, v = rng.normal(size=(40, 3)), rng.normal(size=(m, 3)), rng.normal(size=(m, 2))
    inv_ell, variance, jitter = np.array([0.7, 1.3, 0.4]), 1.7, 1e-6
    kernel = ConstantKernel(variance) * RBF(1 / inv_ell)
    ok, R, A, gamma, free, mu, _, _ = _sparse_numba.forward(
        X, Z, inv_ell, variance, 0.0, 0, jitter, v, _sparse_numba.LAPACK,
        _sparse_numba.no_work(),
    )  # fmt: skip
    R_ref = cholesky(kernel(Z) + jitter * variance * np.eye(m), lower=True)
    A_ref = solve_triangular(R_ref, kernel(Z, X), lower=True)
    assert ok and free.all()
    # With 100 inputs in 3 dimensions the jittered K(Z, Z) has a condition
    # number near m / jitter = 1e8, so two correct factorisations agree to
    # about 1e8 x machine epsilon; with 7 it is well conditioned.
    tol = 1e-7 if m > 7 else 1e-10
    np.testing.assert_allclose(R, R_ref, rtol=tol, atol=tol * 1e-2)
    np.testing.assert_allclose(A, A_ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(gamma, variance - np.sum(A_ref**2, axis=0), atol=tol)
    np.testing.assert_allclose(mu, A_ref.T @ v, atol=tol)


# Gaussian: the three-call path; logit and softmax: the one-call path.
@pytest.mark.parametrize("name", ["gaussian", "logit", "softmax"])
@pytest.mark.parametrize("m", [3, 100])
def test_compiled_path_raises_not_psd_for_duplicate_inducing_inputs(m, name):
    from skgp_bayes.exceptions import NotPSDError

    likelihood, kernel = CASES[name]
    X, y, _ = _data(likelihood)
    Z = np.repeat(X[:1], m, axis=0)  # singular K(Z, Z); zero jitter keeps it so
    target = SparseWhitenedTarget(
        KernelAdapter(kernel), X, y, Z, likelihood, jitter=0.0
    )
    assert target._compiled
    with pytest.raises(NotPSDError):
        target.logp_and_grad(np.zeros(target.n_params))


def test_compiled_softmax_expectation_matches_the_likelihood():
    from skgp_bayes.targets import _likelihood_numba

    rng = np.random.default_rng(4)
    lik = Softmax(3, n_samples=40)
    mu = rng.normal(scale=3.0, size=(25, 3))
    mu[0] = [900.0, -900.0, 0.0]  # a label far below the top: no underflow to -inf
    sd = rng.uniform(0.1, 2.0, 25)
    y = rng.integers(0, 3, 25)
    y[0] = 1
    var = np.repeat(sd[:, None] ** 2, 3, axis=1)
    ref = lik.expected_log_prob(y, mu, var, grad=True)
    draws = lik.default_draws()
    weights = np.full(draws.shape[0], 1.0 / draws.shape[0])
    got = _likelihood_numba.softmax_expectation(y, mu, sd, draws, weights)
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_compiled_softmax_expectation_in_blocks_matches_the_likelihood():
    from skgp_bayes.targets import _likelihood_numba

    # 90 points x 10 classes x 100 draws: several blocks of points, the last
    # one short. Each point's value may not depend on the points it is
    # computed with (bit for bit: the blocks change no arithmetic).
    rng = np.random.default_rng(5)
    n, C = 90, 10
    lik = Softmax(C)
    mu = rng.normal(scale=3.0, size=(n, C))
    sd = rng.uniform(0.1, 2.0, n)
    y = rng.integers(0, C, n)
    draws = lik.default_draws()
    weights = np.full(draws.shape[0], 1.0 / draws.shape[0])
    assert n * C * draws.shape[0] > 2 * _likelihood_numba._SOFTMAX_BLOCK_VALUES
    got = _likelihood_numba.softmax_expectation(y, mu, sd, draws, weights)
    var = np.repeat(sd[:, None] ** 2, C, axis=1)
    ref = lik.expected_log_prob(y, mu, var, grad=True)
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    for i in (0, 17, n - 1):
        alone = _likelihood_numba.softmax_expectation(
            y[i : i + 1], mu[i : i + 1], sd[i : i + 1], draws, weights
        )
        for a, b in zip(alone, got, strict=True):
            np.testing.assert_array_equal(a[0], b[i])


@pytest.mark.statistical
@pytest.mark.parametrize(
    "C, S, per_class",
    [(4, 30, False), (7, 30, False), (3, 1, True), (4, 10, True), (4, 600, False)],
)
def test_softmax_mixture_proba_is_unbiased(stat_seed, C, S, per_class):
    from skgp_bayes.likelihoods import standard_normal_draws
    from skgp_bayes.targets.sparse import softmax_mixture_proba

    # Each draw takes its own block of quasi-random nodes (256 for one
    # draw, 128 for each of ten, 64 for each of 30, 2 for each of 600), at
    # latent sds up to 2, shared by the classes or one per class. The
    # reference averages every draw's E[softmax] over 40,000 shared nodes;
    # its error, shared by the draws at worst, is at most the mean over
    # draws of each draw's node sd / 200. The mean of 1,000 estimates from
    # independent seeds must lie within 5 combined standard errors of it in
    # each of the 4 C entries: a false failure, for an unbiased estimate,
    # at most 28 x 6e-7 = 2e-5 per run.
    rng = np.random.default_rng(40 + C + S + stat_seed)
    n = 4
    # Draws near a common centre, as a posterior's are, so that the mixture
    # is not flat and the latent spread matters.
    means = rng.normal(scale=3.0, size=(n, C)) + rng.normal(scale=0.3, size=(S, n, C))
    variances = rng.uniform(0.5, 4.0, size=(S, n, C if per_class else 1))
    nodes = standard_normal_draws(40_000, C, random_state=rng)
    per_draw = np.empty((S, n, C))
    node_sd = np.empty((S, n, C))
    for s in range(S):
        f = means[s] + np.sqrt(variances[s]) * nodes[:, None, :]
        p = softmax(f, axis=-1)
        node_sd[s] = p.std(axis=0)
        per_draw[s] = p.mean(axis=0)
    reference = per_draw.mean(axis=0)
    reference_se = node_sd.mean(axis=0) / np.sqrt(nodes.shape[0])

    given = variances if per_class else variances[..., 0]
    estimates = np.array(
        [softmax_mixture_proba(means, given, random_state=r) for r in range(1000)]
    )
    se = estimates.std(axis=0, ddof=1) / np.sqrt(estimates.shape[0])
    tolerance = 5.0 * np.sqrt(se**2 + reference_se**2)
    assert np.all(np.abs(estimates.mean(axis=0) - reference) <= tolerance)
    # The test has power: ignoring the latent spread would miss by far more
    # than the tolerance (16-26 times it over seeds 0-3 with 30 draws), and
    # one estimate differs from another.
    plug_in = np.exp(means - means.max(axis=-1, keepdims=True))
    plug_in = (plug_in / plug_in.sum(axis=-1, keepdims=True)).mean(axis=0)
    assert np.max(np.abs(plug_in - reference)) > 5.0 * tolerance.max()
    assert np.all(estimates.std(axis=0) > 0.0)
    np.testing.assert_allclose(estimates.sum(axis=-1), 1.0, rtol=0, atol=1e-14)


def test_softmax_mixture_proba_nodes_do_not_depend_on_the_points():
    from skgp_bayes.targets.sparse import softmax_mixture_proba

    # Each point's probabilities are the same asked alone or with others,
    # to the bit; another seed gives other nodes.
    rng = np.random.default_rng(3)
    means = rng.normal(size=(25, 9, 8))
    variances = rng.uniform(0.1, 2.0, size=(25, 9))
    together = softmax_mixture_proba(means, variances, random_state=5)
    for i in (0, 4, 8):
        alone = softmax_mixture_proba(means[:, i : i + 1], variances[:, i : i + 1], 5)
        np.testing.assert_array_equal(alone[0], together[i])
    assert not np.array_equal(together, softmax_mixture_proba(means, variances, 6))


def test_softmax_rule_proba_is_biased_where_the_latent_spread_is_large():
    from skgp_bayes.likelihoods import standard_normal_draws
    from skgp_bayes.targets.sparse import softmax_mixture_proba, softmax_rule_proba

    # Why the class probabilities take each draw's own nodes: at a latent
    # sd of 3 the degree-5 rule is off by more than 0.05 somewhere among 50
    # points (0.06-0.09 measured, three to five classes), 20 times the
    # 200,000-node reference's error bound (0.5 / sqrt(2e5) ~ 1.1e-3);
    # 400 draws with their own nodes (4 each, 1,600 in all) stay within 0.04.
    rng = np.random.default_rng(8)
    means = rng.normal(scale=3.0, size=(1, 50, 4))
    variances = np.full((1, 50), 9.0)
    reference = Softmax(n_classes=4).predictive(
        means[0],
        np.full((50, 4), 9.0),
        draws=standard_normal_draws(200_000, 4, random_state=1),
    )
    assert np.abs(softmax_rule_proba(means, variances) - reference).max() > 0.05
    repeated = np.repeat(means, 400, axis=0)
    mixture = softmax_mixture_proba(repeated, np.repeat(variances, 400, axis=0))
    assert np.abs(mixture - reference).max() < 0.04


@pytest.mark.parametrize("n_classes", [2, 3, 4, 5, 6, 7, 8])
def test_softmax_rule_integrates_degree_five_exactly(n_classes):
    from itertools import combinations_with_replacement

    from skgp_bayes.targets.sparse import softmax_rule

    # The nodes stand for eps ~ N(0, I_C) projected onto the sum-zero
    # subspace, a normal with covariance P = I - 11'/C: every moment of
    # degree <= 5 must be that normal's (Isserlis), to round-off.
    nodes, weights = softmax_rule(n_classes)
    assert np.all(weights >= 0) and np.isclose(weights.sum(), 1.0)
    P = np.eye(n_classes) - 1.0 / n_classes
    for degree in range(1, 6):
        for idx in combinations_with_replacement(range(n_classes), degree):
            got = weights @ np.prod(nodes[:, list(idx)], axis=1)
            if degree % 2:
                want = 0.0
            elif degree == 2:
                want = P[idx]
            else:
                a, b, c, d = idx
                want = P[a, b] * P[c, d] + P[a, c] * P[b, d] + P[a, d] * P[b, c]
            assert np.isclose(got, want, atol=1e-12), (idx, got, want)


def test_the_target_takes_the_rule_up_to_eight_classes_and_draws_beyond():
    from skgp_bayes.targets._softmax_rule import softmax_nodes, softmax_rule

    for n_classes, n_nodes in ((5, 25), (6, 43), (7, 57), (8, 57)):
        nodes, weights, on_simplex = softmax_nodes(Softmax(n_classes))
        assert on_simplex == (n_classes >= 6)
        want_nodes, want_weights = softmax_rule(n_classes)
        assert nodes.shape == (n_nodes, n_classes)
        np.testing.assert_array_equal(nodes, want_nodes)
        np.testing.assert_array_equal(weights, want_weights)
    # nine classes: the simplex rule's vertex weight n (7 - n) would be < 0
    with pytest.raises(ValueError, match="n_classes must lie in"):
        softmax_rule(9)
    nodes, weights, on_simplex = softmax_nodes(Softmax(9))
    np.testing.assert_array_equal(nodes, Softmax(9).default_draws())
    np.testing.assert_array_equal(weights, np.full(100, 0.01))
    assert not on_simplex


@pytest.mark.parametrize("n_classes", [6, 7, 8])
def test_simplex_softmax_expectation_equals_the_general_form(n_classes):
    from skgp_bayes.targets import _likelihood_numba
    from skgp_bayes.targets.sparse import softmax_rule

    # The closed form over the simplex rule's nodes against the node-by-node
    # sum over the same nodes: the same quantity, so equal to rounding.
    # Besides random points: a confident point whose top class the spread
    # pushes far down at its nodes (one node's sum of exponentials near
    # 1e-15, where the short form of the class sums would cancel), a
    # point with an sd past the closed form's range (the general form's),
    # and tiny sds.
    eps, weights = softmax_rule(n_classes)
    rng = np.random.default_rng(n_classes)
    mu = rng.normal(scale=3.0, size=(60, n_classes))
    sd = rng.uniform(1e-3, 4.0, 60)
    labels = rng.integers(0, n_classes, 60)
    mu[0], sd[0], labels[0] = np.eye(n_classes)[0] * 40.0, 12.0, 1
    mu[1], sd[1] = -5.0 * np.eye(n_classes)[0], 300.0
    sd[2:4] = [1e-8, 1e-12]
    got = _likelihood_numba.simplex_softmax_expectation(labels, mu, sd, eps, weights)
    elp, d_mu, d_var = _likelihood_numba.softmax_expectation(
        labels, mu, sd, eps, weights
    )
    np.testing.assert_allclose(got[0], elp, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(got[1], d_mu, rtol=0, atol=1e-13)
    # The general form's d_var is sum(g * eps) / (2 sd), g rounded to about
    # 64 eps over the nodes and classes: that over 2 sd bounds the two
    # forms' difference (at sd 1e-12 it is 3.5e-3; 0.8-2.5e-6 measured).
    bound = 1e-13 + 64 * np.finfo(float).eps / (2 * sd)
    assert np.all(np.abs(got[2] - d_var.sum(axis=1)) <= bound)


def test_compiled_prior_matches_the_prior_set():
    from skgp_bayes.priors import Gamma, HalfCauchyVariance, HalfNormal
    from skgp_bayes.targets import _sparse_numba
    from skgp_bayes.targets._sparse_compiled import compiled_prior

    slices = {"a": slice(0, 1), "b": slice(1, 4), "c": slice(4, 5), "d": slice(5, 7)}
    named = {
        "a": Gamma(2.5, 0.7),
        "b": LogNormal(0.3, 1.7),
        "d": HalfCauchyVariance(0.6),
    }
    prior_set = PriorSet(slices, named)  # "c" gets the default Gamma(1, 2)
    rng = np.random.default_rng(6)
    # both branches of the half-Cauchy's overflow-safe forms: theta - 2 log s
    # of either sign, out to where e^theta would overflow
    for theta in (
        *rng.normal(scale=2.0, size=(4, 7)),
        np.full(7, 750.0),
        np.full(7, -750.0),
    ):
        got = _sparse_numba.log_prior_theta(theta, *compiled_prior(prior_set))
        want = prior_set.log_prob(theta)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-13, atol=1e-14)
    # any other prior keeps the PriorSet's own evaluation
    assert compiled_prior(PriorSet(slices, {"c": HalfNormal(1.0)})) is None


def test_compiled_logit_expectation_matches_the_likelihood():
    from skgp_bayes.targets import _likelihood_numba

    rng = np.random.default_rng(5)
    lik = Bernoulli("logit")
    mu = rng.normal(scale=3.0, size=30)
    mu[:2] = [800.0, -800.0]  # both branches of the stable log-sigmoid
    sd = rng.uniform(1e-4, 3.0, 30)
    y = rng.integers(0, 2, 30).astype(float)
    ref = lik.expected_log_prob(y, mu, sd**2, grad=True)
    got = _likelihood_numba.logit_expectation(
        y, mu, sd, *_likelihood_numba.logit_rules(lik.n_quadrature)
    )
    # Below 0.6 each point takes a shorter rule, within 1e-12 of the
    # likelihood's 20 nodes (the table checked below).
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=3e-12)


@pytest.mark.parametrize("n_nodes, largest_sd", LOGIT_RULE_LIMITS)
def test_shorter_logit_rules_resolve_their_sds(n_nodes, largest_sd):
    # Up to its listed sd a rule's value and derivatives are within 1e-12 of
    # a 150-node rule for every mean the targets meet; a tenth beyond its sd
    # it is not (the limit is not loose by much). Labels of 0 mirror the mean.
    from skgp_bayes.likelihoods import gauss_hermite
    from skgp_bayes.targets import _likelihood_numba

    def expectation(sd, rule):
        nodes, weights = rule
        rules = (nodes[None], weights[None], np.array([nodes.size]), np.array([np.inf]))
        mu = np.linspace(-30.0, 30.0, 1201)
        return _likelihood_numba.logit_expectation(
            np.ones(mu.size), mu, np.full(mu.size, sd), *rules
        )

    def error(sd, k):
        got = expectation(sd, gauss_hermite(k))
        ref = expectation(sd, gauss_hermite(150))
        return max(np.max(np.abs(a - b)) for a, b in zip(got, ref, strict=True))

    for sd in np.linspace(0.01, largest_sd, 8):
        assert error(sd, n_nodes) <= 1e-12
    assert error(1.1 * largest_sd, n_nodes) > 1e-12


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_compiled_gradient_for_ard_matern_kernels(nu):
    # The compiled length-scale contraction has one branch for the RBF
    # (f = k) and one for the other radial functions; FD check the latter.
    X, y, Z = _data(Gaussian(0.2))
    kernel = ConstantKernel(1.1) * Matern([0.8, 1.4], nu=nu) + WhiteKernel(0.05)
    target = SparseWhitenedTarget(KernelAdapter(kernel), X, y, Z, Gaussian(0.2))
    params = _params(target)
    _, grad = target.logp_and_grad(params)
    np.testing.assert_allclose(grad, _fd(target.log_prob, params), rtol=1e-5, atol=1e-6)


def test_many_inducing_inputs_take_the_compiled_lapack_path_with_the_same_result():
    # From LAPACK_MIN_INDUCING the compiled pass factorises and solves with
    # LAPACK and BLAS; with a few hundred inducing inputs it must agree with
    # the NumPy path to round-off.
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    from skgp_bayes.kernels import KernelAdapter
    from skgp_bayes.likelihoods import Gaussian
    from skgp_bayes.targets._sparse_numba import LAPACK_MIN_INDUCING
    from skgp_bayes.targets.sparse import SparseWhitenedTarget

    rng = np.random.default_rng(4)
    m = 3 * LAPACK_MIN_INDUCING + 20
    X = rng.uniform(size=(400, 2))
    y = np.sin(4 * X[:, 0]) + 0.1 * rng.normal(size=400)
    adapter = KernelAdapter(ConstantKernel() * RBF([0.5, 0.7]))
    compiled = SparseWhitenedTarget(adapter, X, y, X[:m], Gaussian(0.1))
    assert compiled._compiled
    target = SparseWhitenedTarget(adapter, X, y, X[:m], Gaussian(0.1))
    target._compiled = False
    params = np.concatenate(
        [adapter.kernel.theta, [np.log(0.1)], 0.3 * rng.normal(size=m)]
    )
    batch = np.sort(rng.choice(400, 256, replace=False))
    value, grad = target.logp_and_grad(params, batch)
    ref_value, ref_grad = compiled.logp_and_grad(params, batch)
    np.testing.assert_allclose(value, ref_value, rtol=1e-10)
    np.testing.assert_allclose(
        grad, ref_grad, rtol=1e-7, atol=1e-7 * np.abs(ref_grad).max()
    )


@pytest.mark.parametrize("name", ["logit", "softmax"])
def test_target_in_one_compiled_call_equals_the_three_call_path(name):
    # _likelihood_numba.logit_joint and softmax_joint chain forward, the
    # expectation and backward in one call; the three-call path (taken with
    # a mean offset) is the same algebra, so with a zero offset they agree
    # to round-off.
    fused = _target(name)
    three_calls = _target(name)
    three_calls.offset = np.zeros(three_calls.n)
    params = _params(fused)
    value, grad = fused.logp_and_grad(params)
    ref_value, ref_grad = three_calls.logp_and_grad(params)
    np.testing.assert_allclose(value, ref_value, rtol=1e-13)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-11, atol=1e-12)


def test_logit_target_falls_back_where_a_variance_is_below_the_likelihoods_floor():
    # Inducing inputs on the training inputs leave conditional variances of
    # about the jitter (1e-12 here), below SMALL_VAR: the one-call path hands
    # over to the likelihood's rule, and the result is the NumPy path's. The
    # jittered K(Z, Z) has a condition number near 1e5, so the two orders of
    # the same arithmetic agree to about 1e5 x machine epsilon (2e-11).
    from skgp_bayes.likelihoods._base import SMALL_VAR
    from skgp_bayes.targets import _likelihood_numba, _sparse_numba

    likelihood, kernel = CASES["logit"]
    X, y, _ = _data(likelihood)
    adapter = KernelAdapter(kernel)
    target = SparseWhitenedTarget(adapter, X, y, X.copy(), likelihood, jitter=1e-12)
    params = _params(target)
    spec = adapter.spec
    status = _likelihood_numba.logit_joint(
        X, X, params[: target.n_kernel_params], spec.defaults, spec.theta_index,
        spec.base, target.jitter, params[target.n_hyper :].reshape(-1, 1), y, 1.0,
        *target._logit_rules, SMALL_VAR, _sparse_numba.LAPACK,
        _sparse_numba.no_work(),
    )[0]  # fmt: skip
    assert status == _likelihood_numba.SMALL_VARIANCE
    numpy_path = SparseWhitenedTarget(adapter, X, y, X.copy(), likelihood, jitter=1e-12)
    numpy_path._compiled = False
    value, grad = target.logp_and_grad(params)
    ref_value, ref_grad = numpy_path.logp_and_grad(params)
    np.testing.assert_allclose(value, ref_value, rtol=1e-9)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-10)


def test_the_compiled_simplex_form_equals_the_interpreted_target():
    # Seven classes: the one compiled call takes the simplex rule's closed
    # form, the interpreted target the same nodes one by one.
    target = _target("softmax-7")
    assert target._compiled and target._softmax_nodes[2]
    params = _params(target)
    value, grad = target.logp_and_grad(params)
    target._compiled = False
    want_value, want_grad = target.logp_and_grad(params)
    assert value == pytest.approx(want_value, rel=1e-12)
    np.testing.assert_allclose(
        grad, want_grad, rtol=0, atol=1e-10 * np.abs(want_grad).max()
    )
