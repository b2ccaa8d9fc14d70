"""ULISSE and the stochastic gradient: unbiasedness against exact references.

Monte Carlo tolerances are 5 standard errors per entry, the standard error
being the sample sd over sqrt(number of independent draws): a two-sided normal
tail of 5.7e-7 per entry, stated per test for its number of entries. Without
a cap on the
randomised steps the estimator's variance is finite only because the
randomised continuation ends when CG converges, and with weights
``exp(beta j (j+1)/2)`` a slowly converging system has a variance dominated
by events too rare to appear in a test-sized sample; so uncapped Monte Carlo
tests use well-conditioned systems (noise variance 0.1 to 0.3, CG converges
in about 15 iterations). The exact enumeration tests cover the identity
itself, and the variance with and without the cap, with no Monte Carlo error.
"""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skgp_bayes.kernels import KernelAdapter, force_generic
from skgp_bayes.linalg import (
    batched_cg,
    kernel_preconditioner,
    lowrank_grad_contract,
    rademacher_probes,
    ulisse_solve,
)
from skgp_bayes.priors import Gamma, PriorSet
from skgp_bayes.targets import ExactMarginalTarget, StochasticMarginalGradient


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (30, 1))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=30)
    adapter = KernelAdapter(ConstantKernel(1.0) * RBF(0.8))
    theta = adapter.kernel.theta
    K = adapter.gram(theta, X) + 0.1 * np.eye(30)
    return adapter, theta, X, y, K


class _ScriptedUniforms:
    """Uniforms 0 (always continue) for the first ``n_zero`` calls, then 1."""

    def __init__(self, n_zero):
        self.n_zero = n_zero
        self.calls = 0

    def random(self, size):
        self.calls += 1
        return np.full(size, 0.0 if self.calls <= self.n_zero else 1.0)


@pytest.mark.parametrize("beta", [1.0, 0.3])
def test_expectation_over_every_stopping_point_is_the_solution(problem, beta):
    # Enumerate the stopping time: forcing a stop after iteration K gives
    # the estimate E_K, with probability P(kept through K) * P(stop at K+1).
    _, _, _, y, K = problem
    B = y[:, None]
    op = lambda V: K @ V  # noqa: E731
    full = ulisse_solve(op, B, q=0.5, beta=beta, rng=_ScriptedUniforms(10**6))
    early, total = int(full.n_iter_early[0]), full.n_iter
    assert 0 < early < total
    expectation = np.zeros(30)
    for n_kept in range(early, total + 1):
        est = ulisse_solve(op, B, q=0.5, beta=beta, rng=_ScriptedUniforms(n_kept))
        j = n_kept - early
        p_through = np.exp(-beta * j * (j + 1) / 2)
        p_stop = 1.0 if n_kept == total else 1.0 - np.exp(-beta * (j + 1))
        expectation += p_through * p_stop * est.estimates[:, 0]
    exact = batched_cg(op, B, tol=1e-10, max_iter=200).x[:, 0]
    np.testing.assert_allclose(expectation, exact, rtol=1e-7, atol=1e-8)
    # and stopping early really changes the answer
    first = ulisse_solve(op, B, q=0.5, beta=beta, rng=_ScriptedUniforms(0))
    assert np.max(np.abs(first.estimates[:, 0] - exact)) > 1e-3


def _enumerate_stopping(op, B, q, beta, cap, precondition=None, x0=None):
    """Every outcome of a one-column ULISSE solve with its probability.

    Forcing a stop after ``j`` randomised steps gives one outcome, with
    probability ``P(kept through j) * P(stop at j + 1)``; reaching the cap
    (or CG's convergence) ends the draws.
    """
    full = ulisse_solve(
        op,
        B,
        q=q,
        beta=beta,
        max_random_steps=cap,
        rng=_ScriptedUniforms(10**6),
        precondition=precondition,
        x0=x0,
    )
    early, total = int(full.n_iter_early[0]), full.n_iter
    last = total - early if cap is None else min(cap, total - early)
    probs, estimates, weights = [], [], []
    for j in range(last + 1):
        est = ulisse_solve(
            op,
            B,
            q=q,
            beta=beta,
            max_random_steps=cap,
            rng=_ScriptedUniforms(early + j),
            precondition=precondition,
            x0=x0,
        )
        p_through = np.exp(-beta * j * (j + 1) / 2)
        p_stop = 1.0 if j == last else 1.0 - np.exp(-beta * (j + 1))
        probs.append(p_through * p_stop)
        estimates.append(est.estimates[:, 0])
        weights.append(est.weights[0])
    return np.array(probs), np.array(estimates), np.array(weights), early, total


@pytest.fixture(scope="module")
def slow_problem():
    """CG needs 26 iterations, 18 of them past the threshold (q = 0.3)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (40, 1))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=40)
    K = RBF(0.8)(X) + 1e-3 * np.eye(40)
    return K, y[:, None]


@pytest.mark.parametrize("cap", [0, 2, 5])
def test_capped_expectation_over_every_stopping_point_is_the_solution(
    slow_problem, cap
):
    K, B = slow_problem
    op = lambda V: K @ V  # noqa: E731
    beta = 0.3
    probs, estimates, weights, early, total = _enumerate_stopping(op, B, 0.3, beta, cap)
    assert total - early > cap + 5  # the cap cuts the continuation short
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
    exact = batched_cg(op, B, tol=1e-10, max_iter=200).x[:, 0]
    np.testing.assert_allclose(probs @ estimates, exact, rtol=1e-7, atol=1e-7)
    # the capped outcome is W_J times the remainder, every weight at most W_J
    bound = np.exp(beta * cap * (cap + 1) / 2)
    assert weights[-1] == pytest.approx(bound, rel=1e-12)
    assert np.all(weights <= bound * (1 + 1e-12))
    if cap > 0:  # a real randomisation: the outcomes differ
        assert np.ptp(estimates[:, 0]) > 1e-3


def test_cap_lowers_the_exact_variance(slow_problem):
    # The variance of both estimators by enumeration, not sampling: the
    # uncapped one is dominated by continuations too rare to sample.
    K, B = slow_problem
    op = lambda V: K @ V  # noqa: E731
    exact = np.linalg.solve(K, B[:, 0])
    variance = {}
    for cap in (None, 5):
        probs, estimates, _, _, _ = _enumerate_stopping(op, B, 0.3, 0.3, cap)
        variance[cap] = probs @ np.sum((estimates - exact) ** 2, axis=1)
    assert variance[5] < 1e-3 * variance[None]
    assert variance[5] > 0


def _other_length_scale_solution(B):
    """``slow_problem``'s solution with length scale 0.6 instead of 0.8."""
    X = np.random.default_rng(0).uniform(-2, 2, (40, 1))
    return np.linalg.solve(RBF(0.6)(X) + 1e-3 * np.eye(40), B)


@pytest.mark.parametrize("start", ["near", "far", "below_threshold"])
def test_warm_started_expectation_over_every_stopping_point_is_the_solution(
    slow_problem, start
):
    # Exact enumeration from a warm start (no Monte Carlo error): the
    # increments now sum to s - x0 and the estimate is x0 plus their
    # weighted sum, so its expectation is still the solution s.
    K, B = slow_problem
    op = lambda V: K @ V  # noqa: E731
    exact = np.linalg.solve(K, B[:, 0])
    rng = np.random.default_rng(7)
    # near: the solution for another length scale, as a sampler's previous
    # step would leave (residual 2.9 between the threshold 1.9 and |y| 4.8);
    # far: an unrelated vector; below_threshold: so close that the draws
    # start before the first increment.
    x0 = {
        "near": _other_length_scale_solution(B)[:, 0],
        "far": rng.normal(size=40),
        "below_threshold": exact + 1e-2 * rng.normal(size=40),
    }[start][:, None]
    probs, estimates, _, early, total = _enumerate_stopping(op, B, 0.3, 0.3, 5, x0=x0)
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(probs @ estimates, exact, rtol=1e-7, atol=1e-7)
    assert (early == 0) == (start == "below_threshold")
    # a real randomisation: the outcomes differ
    assert np.ptp(estimates[:, 0]) > 1e-4
    if start == "below_threshold":
        # the first outcome, stopping before any increment, is x0 itself
        np.testing.assert_array_equal(estimates[0], x0[:, 0])


def test_warm_start_saves_the_iterations_before_the_threshold(slow_problem):
    K, B = slow_problem
    op = lambda V: K @ V  # noqa: E731
    always = _ScriptedUniforms(10**6)
    cold = ulisse_solve(op, B, q=0.3, beta=0.3, rng=always)
    near = _other_length_scale_solution(B)
    warm = ulisse_solve(op, B, q=0.3, beta=0.3, rng=_ScriptedUniforms(10**6), x0=near)
    assert cold.n_iter_early[0] > 0
    assert warm.n_iter_early[0] < cold.n_iter_early[0]


@pytest.fixture(scope="module")
def slow_kernel_problem():
    """The slow problem with its kernel, for pivoted-Cholesky preconditioners."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (40, 1))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=40)
    adapter = KernelAdapter(RBF(0.8))
    theta = adapter.kernel.theta
    K = adapter.gram(theta, X) + 1e-3 * np.eye(40)
    return adapter, theta, X, K, y[:, None]


def test_preconditioned_expectation_is_the_solution_with_less_variance(
    slow_kernel_problem,
):
    # Exact enumeration again: preconditioned increments are a different
    # sequence with the same sum, so ULISSE stays unbiased; they shrink
    # faster, so fewer are randomised and the variance drops.
    adapter, theta, X, K, B = slow_kernel_problem
    op = lambda V: K @ V  # noqa: E731
    P = kernel_preconditioner(adapter, theta, X, 1e-3, 5)
    exact = np.linalg.solve(K, B[:, 0])
    variance, randomised = {}, {}
    for name, precond in (("plain", None), ("preconditioned", P)):
        probs, estimates, _, early, total = _enumerate_stopping(
            op, B, 0.3, 0.3, 5, precondition=precond
        )
        assert probs.sum() == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(probs @ estimates, exact, rtol=1e-6, atol=1e-6)
        variance[name] = probs @ np.sum((estimates - exact) ** 2, axis=1)
        randomised[name] = total - early
    assert randomised["preconditioned"] < randomised["plain"]
    assert 0 < variance["preconditioned"] < 0.1 * variance["plain"]


@pytest.mark.statistical
def test_weights_bounded_and_mean_unbiased_with_cap(slow_problem, stat_seed):
    K, B = slow_problem
    B = np.column_stack([B[:, 0], np.random.default_rng(5 + stat_seed).normal(size=40)])
    exact = np.linalg.solve(K, B)
    beta, cap = 0.3, 4
    bound = np.exp(beta * cap * (cap + 1) / 2)
    rng = np.random.default_rng(6 + stat_seed)
    draws, weights = [], []
    for _ in range(3000):
        res = ulisse_solve(
            lambda V: K @ V,
            B,
            copies=[2, 1],
            q=0.3,
            beta=beta,
            max_random_steps=cap,
            rng=rng,
        )
        draws.append(res.estimates)
        weights.append(res.weights)
    draws, weights = np.array(draws), np.array(weights)
    assert np.all(weights <= bound * (1 + 1e-12))
    # P(reach the cap) = 1 / bound = exp(-3) = 5% for each of the 9000
    # independent column solves (CG needs more than the cap's randomised
    # steps on both columns): binomial standard error sqrt(p (1 - p) / n),
    # 5 of them: false failure 5.7e-7. The bound is reached, not only stated.
    reached = np.isclose(weights, bound)
    p = 1.0 / bound
    assert abs(reached.mean() - p) < 5 * np.sqrt(p * (1 - p) / reached.size)
    mean = draws.mean(axis=0)
    se = draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
    # 5 SE on 120 entries: false failure 120 x 5.7e-7 ~ 7e-5.
    assert np.all(np.abs(mean - exact[:, [0, 0, 1]]) <= 5 * se + 1e-12)
    assert np.all(se > 0)
    # Uncapped, the same draws exceed the bound: 900 solves that all stop
    # within 4 randomised steps have probability (1 - 1 / bound)^900 < 1e-19.
    uncapped = [
        ulisse_solve(lambda V: K @ V, B, q=0.3, beta=beta, rng=rng).weights
        for _ in range(300)
    ]
    assert np.max(uncapped) > bound


def test_negative_cap_is_rejected(problem):
    _, _, _, y, K = problem
    with pytest.raises(ValueError, match="max_random_steps"):
        ulisse_solve(
            lambda V: K @ V,
            y[:, None],
            max_random_steps=-1,
            rng=np.random.default_rng(0),
        )


@pytest.mark.statistical
def test_mean_of_solves_matches_linalg_solve(problem, stat_seed):
    _, _, _, y, K = problem
    rng = np.random.default_rng(1 + stat_seed)
    B = np.column_stack([y, rng.normal(size=30)])
    exact = np.linalg.solve(K, B)
    draws, iters = [], []
    for _ in range(3000):
        res = ulisse_solve(lambda V: K @ V, B, copies=[2, 1], q=0.3, beta=0.1, rng=rng)
        draws.append(res.estimates)
        iters.append(res.n_iter)
    draws = np.array(draws)
    mean = draws.mean(axis=0)
    se = draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
    # 5 SE on 90 entries: false failure 90 x 5.7e-7 ~ 5e-5.
    assert np.all(np.abs(mean - exact[:, [0, 0, 1]]) <= 5 * se + 1e-12)
    # the early stop saves work and the estimates really vary
    full = batched_cg(lambda V: K @ V, B, tol=1e-10, max_iter=200).n_iter
    assert np.mean(iters) < full
    assert np.all(se > 0)
    # Heavy tails would show as a variance that keeps growing with the
    # sample. The squared deviation summed over entries, one value per draw,
    # has a mean per half whose difference has standard error
    # sd * sqrt(2 / 1500) (a finite fourth moment is what is being checked);
    # 5 of them: false failure 5.7e-7.
    spread = np.sum((draws - mean) ** 2, axis=(1, 2))
    gap = spread[1500:].mean() - spread[:1500].mean()
    assert abs(gap) < 5 * spread.std(ddof=1) * np.sqrt(2 / 1500)
    # the two draws on the y column are independent: their product is
    # unbiased for a'a (5 SE: false failure 5.7e-7)
    products = np.einsum("si,si->s", draws[:, :, 0], draws[:, :, 1])
    target = exact[:, 0] @ exact[:, 0]
    se_prod = products.std(ddof=1) / np.sqrt(products.size)
    assert abs(products.mean() - target) <= 5 * se_prod


def test_q_zero_is_plain_cg(problem):
    _, _, _, y, K = problem
    res = ulisse_solve(lambda V: K @ V, y[:, None], q=0.0, rng=np.random.default_rng(0))
    np.testing.assert_allclose(res.estimates[:, 0], np.linalg.solve(K, y), rtol=1e-7)
    assert res.n_iter_early[0] == -1


def test_budget_exhaustion_warns(problem):
    _, _, _, y, K = problem
    with pytest.warns(ConvergenceWarning, match="relative residual"):
        ulisse_solve(
            lambda V: K @ V, y[:, None], q=0.0, max_iter=3, rng=np.random.default_rng(0)
        )


@pytest.mark.statistical
def test_rademacher_probes(stat_seed):
    r = rademacher_probes(np.random.default_rng(stat_seed), 2000, 3)
    assert set(np.unique(r)) == {-1.0, 1.0}
    # mean of 6000 signs: standard error 1 / sqrt(6000); 5 of them: false
    # failure 5.7e-7
    assert abs(r.mean()) < 5 / np.sqrt(r.size)
    legacy = rademacher_probes(np.random.RandomState(0), 5, 2)
    assert legacy.shape == (5, 2)


@pytest.mark.parametrize(
    "kernel",
    [ConstantKernel(1.3) * RBF([0.6, 1.4]) + WhiteKernel(0.2), RBF(0.9)],
)
@pytest.mark.parametrize("generic", [False, True])
@pytest.mark.parametrize("n", [50, 300])  # one block, and several
def test_lowrank_contraction_matches_dense(kernel, generic, n):
    adapter = force_generic(kernel) if generic else KernelAdapter(kernel)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(n, 2))
    U, V = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    theta = adapter.kernel.theta
    _, dK = kernel(X, eval_gradient=True)
    expected = np.einsum("ab,abj->j", U @ V.T, dK)
    got = lowrank_grad_contract(adapter, theta, X, U, V)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    "solver, cap, rank",
    [
        ("ulisse", None, 0),
        ("ulisse", 3, 0),
        ("cg", None, 0),
        ("ulisse", 3, 8),
        ("cg", None, 8),
    ],
)
@pytest.mark.statistical
def test_stochastic_gradient_is_unbiased(problem, solver, cap, rank, stat_seed):
    adapter, theta, X, y, _ = problem
    priors = PriorSet({"a": slice(0, 3)}, {"a": Gamma(2.0, 1.0)})
    params = np.append(theta, np.log(0.1))
    exact = ExactMarginalTarget(adapter, X, y, priors).logp_and_grad(params)[1]
    grad = StochasticMarginalGradient(
        adapter,
        X,
        y,
        priors,
        rng=np.random.default_rng(3 + stat_seed),
        n_probes=2,
        probe_refresh=1,
        q=0.3,
        beta=0.1,
        max_random_steps=cap,
        solver=solver,
        preconditioner_rank=rank,
    )
    # Fresh probes and truncations every call: 1500 independent draws.
    # 5 SE on 3 entries: false failure 3 x 5.7e-7 per case.
    draws = np.array([grad(params)[1] for _ in range(1500)])
    mean = draws.mean(axis=0)
    se = draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
    assert np.all(np.abs(mean - exact) <= 5 * se)
    assert np.all(se > 1e-6)
    assert len(grad.cg_iterations) == 1500


@pytest.mark.statistical
def test_fixed_noise_and_probe_reuse(problem, stat_seed):
    adapter, theta, X, y, _ = problem
    exact = ExactMarginalTarget(adapter, X, y, None, np.log(0.1))
    value, g_exact = exact.logp_and_grad(theta)
    grad = StochasticMarginalGradient(
        adapter,
        X,
        y,
        None,
        np.log(0.1),
        rng=np.random.default_rng(4 + stat_seed),
        n_probes=4,
        probe_refresh=5,
        q=0.0,
    )
    first = grad(theta)[1]
    assert first.shape == (2,)
    # warm started from the previous solution, with the same probes, the
    # second call needs (almost) no iterations
    grad(theta)
    assert grad.cg_iterations[1] <= 2 < grad.cg_iterations[0]
    draws = np.array([grad(theta)[1] for _ in range(400)])
    # Probes live 5 calls (q = 0: the 5 draws of a block are one value), so
    # 80 independent values; 5 SE on 2 entries: false failure 2 x 5.7e-7.
    se = draws.std(axis=0, ddof=1) / np.sqrt(400 / 5)
    assert np.all(np.abs(draws.mean(axis=0) - g_exact) <= 5 * se)


@pytest.mark.statistical
def test_warm_started_gradient_is_unbiased_along_a_chain(problem, stat_seed):
    # Alternating parameters make every call start from the solution of a
    # different system, left by a random previous call: the warm start is
    # random, but fixed before the call's own draws (ulisse module notes).
    adapter, theta, X, y, _ = problem
    points = [np.append(theta, np.log(0.1)), np.append(theta + 0.3, np.log(0.2))]
    target = ExactMarginalTarget(adapter, X, y, None)
    exact = [target.logp_and_grad(p)[1] for p in points]
    for warm in (True, False):
        grad = StochasticMarginalGradient(
            adapter,
            X,
            y,
            None,
            rng=np.random.default_rng(8 + stat_seed),
            n_probes=2,
            probe_refresh=1,
            q=0.3,
            beta=0.3,
            max_random_steps=4,
            warm_start=warm,
        )
        draws = np.array([grad(points[i % 2])[1] for i in range(3000)])
        # Fresh probes and stopping draws every call; successive draws share
        # only the warm start, which leaves each one's conditional mean
        # exact, so the 1500 draws per point are uncorrelated. 5 SE on
        # 2 points x 3 entries: false failure 6 x 5.7e-7 per case.
        for i in (0, 1):
            mine = draws[i::2]
            se = mine.std(axis=0, ddof=1) / np.sqrt(mine.shape[0])
            assert np.all(np.abs(mine.mean(axis=0) - exact[i]) <= 5 * se)
            assert np.all(se > 1e-6)


def test_old_import_paths_and_pickles_still_resolve():
    # The gradient lived in linalg.ulisse, and a pickle made then names its
    # class there (instances hold their array module and do not pickle, but
    # references to the class do). Protocol 0 spells the module out, so the
    # pickle can be made to name the old one.
    import pickle

    import skgp_bayes.linalg
    import skgp_bayes.linalg.ulisse
    from skgp_bayes.targets.stochastic import StochasticMarginalGradient as moved

    assert skgp_bayes.linalg.ulisse.StochasticMarginalGradient is moved
    assert skgp_bayes.linalg.StochasticMarginalGradient is moved
    with pytest.raises(AttributeError):
        skgp_bayes.linalg.ulisse.NoSuchName  # noqa: B018
    with pytest.raises(AttributeError):
        skgp_bayes.linalg.NoSuchName  # noqa: B018
    old = pickle.dumps({"gradient": moved}, protocol=0).replace(
        b"skgp_bayes.targets.stochastic", b"skgp_bayes.linalg.ulisse"
    )
    assert b"skgp_bayes.linalg.ulisse\nStochasticMarginalGradient" in old
    assert pickle.loads(old)["gradient"] is moved


def test_bad_solver_name(problem):
    adapter, _, X, y, _ = problem
    with pytest.raises(ValueError, match="solver must be"):
        StochasticMarginalGradient(
            adapter, X, y, None, rng=np.random.default_rng(0), solver="lu"
        )


def test_preconditioner_cuts_iterations_of_the_gradient(slow_kernel_problem):
    adapter, theta, X, _, B = slow_kernel_problem
    iterations = {}
    for rank in (0, 10):
        grad = StochasticMarginalGradient(
            adapter,
            X,
            B[:, 0],
            None,
            np.log(1e-3),
            rng=np.random.default_rng(0),
            solver="cg",
            preconditioner_rank=rank,
        )
        grad(theta)
        iterations[rank] = grad.cg_iterations[0]
    assert iterations[10] < iterations[0] / 2
