"""The CuPy backend on a real GPU (skipped where CuPy or a device is missing).

CI has no GPU, so ``tests/test_device_path.py`` runs the same code with a
strict host-side stand-in. On a device the numbers differ in rounding: the
array-module kernels build ``K`` from centred inputs and cuBLAS sums in
another order than OpenBLAS. Each tolerance below follows from that. One
product ``K V`` differs by a few units of ``eps`` relative to ``|K| |V|``;
CG at relative tolerance ``tol`` carries those differences into its
solution scaled by at most the condition number, and a solve that stops at a
tolerance differs by up to that tolerance times the condition number. Each
test states its bound. The stochastic gradient draws its probes and stopping
times on the host from one ``Generator``, so both backends see the same
random numbers.
"""

import pickle

import numpy as np
import pytest
from _estimators import cg_predicting_sgld, short_sgld
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

import skgp_bayes.linalg.precondition as precondition
from skgp_bayes import SGLDGPRegressor
from skgp_bayes._backend import get_array_module
from skgp_bayes.exceptions import BackendUnavailableError, NotPSDError
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.linalg import batched_cg, kernel_operator, kernel_preconditioner
from skgp_bayes.targets import (
    ArrayExactMarginalTarget,
    ExactMarginalTarget,
    StochasticMarginalGradient,
)

try:
    cupy = get_array_module("cupy")
except BackendUnavailableError as err:  # the usual case: no GPU here
    pytest.skip(f"no usable CuPy device: {err}", allow_module_level=True)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (400, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.2 * rng.normal(size=400)
    adapter = KernelAdapter(ConstantKernel(1.0) * RBF([0.8, 1.2, 2.0]))
    return adapter, adapter.kernel.theta, X, (y - y.mean()) / y.std()


def test_the_probe_returns_cupy():
    assert cupy.__name__ == "cupy"
    assert cupy.cuda.runtime.getDeviceCount() >= 1


def test_stored_kernel_product_matches_host(data):
    adapter, theta, X, _ = data
    V = np.random.default_rng(1).normal(size=(X.shape[0], 5))
    host, _ = kernel_operator(adapter, theta, X, 0.05, storage="dense")
    device, stored = kernel_operator(adapter, theta, X, 0.05, xp=cupy)
    assert stored
    out = device(cupy.asarray(V))
    assert isinstance(out, cupy.ndarray)
    expected = host(V)
    # entries differ by at most 64 eps |x| / ell (test_kernel_array_forms),
    # a row of n of them times |V|; the sums' own rounding is below that
    eps_x = np.finfo(float).eps * np.abs(X).max() / np.exp(theta[1:]).min()
    bound = X.shape[0] * 64 * eps_x * np.abs(V).max()
    np.testing.assert_allclose(out.get(), expected, rtol=0, atol=bound)


@pytest.mark.parametrize("rank", [0, 20])
def test_cg_on_device_solves_the_system(data, rank):
    adapter, theta, X, y = data
    B = np.column_stack([y, np.random.default_rng(2).normal(size=(X.shape[0], 3))])
    K = adapter.gram(theta, X) + 0.05 * np.eye(X.shape[0])
    exact = np.linalg.solve(K, B)
    op, _ = kernel_operator(adapter, theta, X, 0.05, xp=cupy)
    P = kernel_preconditioner(adapter, theta, X, 0.05, rank, xp=cupy)
    res = batched_cg(
        op, cupy.asarray(B), tol=1e-10, max_iter=2000, xp=cupy, precondition=P
    )
    assert isinstance(res.x, cupy.ndarray)
    assert bool(np.all(res.converged))
    err = np.linalg.norm(res.x.get() - exact, axis=0) / np.linalg.norm(exact, axis=0)
    # relative residual 1e-10 times cond(K) (about 1e4 here) bounds the error
    assert err.max() < 1e-6, err


def test_preconditioner_built_on_device_matches_host(data, monkeypatch):
    adapter, theta, X, _ = data
    host = kernel_preconditioner(adapter, theta, X, 0.05, 40)
    # built on the device whatever the size (400 rows here)
    monkeypatch.setattr(precondition, "DEVICE_PIVOTING_MIN_ROWS", 0)
    on_device = kernel_preconditioner(adapter, theta, X, 0.05, 40, xp=cupy)
    assert isinstance(on_device._Ld_dev, cupy.ndarray)
    assert on_device.rank == host.rank
    V = np.random.default_rng(4).normal(size=(X.shape[0], 3))
    got = on_device.solve(cupy.asarray(V)).get()
    # P^-1 is bounded by 1 / 0.05; the factors differ by rounding only
    scale = np.abs(V).max() / 0.05
    np.testing.assert_allclose(got, host.solve(V), rtol=0, atol=1e-9 * scale)


def test_stochastic_gradient_on_device_matches_host(data):
    adapter, theta, X, y = data
    params = np.append(theta, np.log(0.05))
    grads = {}
    for name, xp in (("host", np), ("device", cupy)):
        grad = StochasticMarginalGradient(
            adapter,
            X,
            y,
            None,
            rng=np.random.default_rng(3),
            n_probes=8,
            preconditioner_rank=20,
            solver="cg",
            storage="dense",
            xp=xp,
        )
        grads[name] = np.array([grad(params + 0.01 * k)[1] for k in range(3)])
        assert isinstance(grad.get_state()["x_prev"], np.ndarray)
    diff = np.abs(grads["host"] - grads["device"]).max()
    scale = np.abs(grads["host"]).max()
    print(f"largest host-device gradient difference {diff:.3e} of {scale:.3e}")
    # Solves run to relative residual 1e-8 on either side; their solutions
    # differ by at most that times the preconditioned condition number
    # (about 1e2 with rank 20 here).
    assert diff <= 1e-6 * scale


@pytest.mark.statistical
def test_ulisse_gradient_on_device_is_unbiased(stat_seed):
    # ULISSE's stopping times depend on when a residual crosses a threshold,
    # so a rounding difference can move one by an iteration and change a
    # draw by a weighted increment: host and device draws are not comparable
    # one by one. Their mean must still be the exact gradient.
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (30, 1))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=30)
    adapter = KernelAdapter(ConstantKernel(1.0) * RBF(0.8))
    params = np.append(adapter.kernel.theta, np.log(0.1))
    exact = ExactMarginalTarget(adapter, X, y, None).logp_and_grad(params)[1]
    grad = StochasticMarginalGradient(
        adapter,
        X,
        y,
        None,
        rng=np.random.default_rng(3 + stat_seed),
        n_probes=2,
        q=0.3,
        beta=0.1,
        max_random_steps=3,
        preconditioner_rank=8,
        xp=cupy,
    )
    # 1000 independent draws; 5 SE on 3 entries: false failure 3 x 5.7e-7.
    draws = np.array([grad(params)[1] for _ in range(1000)])
    se = draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
    assert np.all(se > 1e-6)
    assert np.all(np.abs(draws.mean(axis=0) - exact) <= 5 * se)


def test_sgld_regressor_fits_on_device_and_predicts_on_host(data):
    _, _, X, y = data
    fits = {}
    for backend in ("numpy", "cupy"):
        fits[backend] = SGLDGPRegressor(
            ConstantKernel() * RBF([1.0, 1.0, 1.0]),
            n_iter=60,
            burn_in=30,
            thin=3,
            n_chains=2,
            n_predict_draws=8,
            solver="ulisse",
            backend=backend,
            random_state=0,
        ).fit(X, y)
    device_fit = fits["cupy"]
    for name in ("chains_", "samples_"):
        assert isinstance(getattr(device_fit, name), np.ndarray), name
    diff = np.abs(fits["numpy"].chains_ - device_fit.chains_).max()
    print(f"largest host-device chain difference after 60 steps: {diff:.3e}")
    # Same random numbers, gradients equal to rounding (test above): the
    # chains can drift apart only by rounding carried through 60 steps.
    assert diff < 1e-6
    Xt = X[:20]
    mean, sd = device_fit.predict(Xt, return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(sd > 0)
    restored = pickle.loads(pickle.dumps(device_fit))
    np.testing.assert_array_equal(restored.predict(Xt), mean)


def test_cg_predictions_on_device_match_host(data):
    _, _, X, y = data
    fits = {backend: cg_predicting_sgld(backend, X, y) for backend in ("numpy", "cupy")}
    Xt = X[:50]
    mean, sd = fits["cupy"].predict(Xt, return_std=True)
    host_mean, host_sd = fits["numpy"].predict(Xt, return_std=True)
    # CG to cg_tol = 1e-8 on either side: solutions differ by about that
    # times cond(K) (below 1e3 here) in units of y's scale (1)
    np.testing.assert_allclose(mean, host_mean, rtol=0, atol=1e-4)
    np.testing.assert_allclose(sd, host_sd, rtol=0, atol=1e-4)
    draws = fits["cupy"].sample_y(Xt[:10], n_samples=4, random_state=0)
    assert np.all(np.isfinite(draws))


def test_exact_target_on_device_matches_host(data):
    adapter, theta, X, y = data
    params = np.append(theta, np.log(0.05))
    host = ExactMarginalTarget(adapter, X, y, None).logp_and_grad(params)
    value, grad = ArrayExactMarginalTarget(adapter, X, y, None, xp=cupy).logp_and_grad(
        params
    )
    # K's entries differ by a few ulps and cuSOLVER and cuBLAS sum in
    # another order than LAPACK; with cond(K) below 1e3 (noise 0.05 on a
    # unit kernel) value and gradient agree to about 1e-12 relative, and
    # 1e-9 leaves room for the reduction orders of 400-row sums.
    np.testing.assert_allclose(value, host[0], rtol=1e-9)
    np.testing.assert_allclose(grad, host[1], rtol=1e-8, atol=1e-8)


def test_exact_target_on_device_detects_a_failed_factor():
    # cuSOLVER reports a failed factorisation only through its status: a
    # singular K (repeated inputs, no noise) must climb the jitter ladder as
    # on the host, and a non-finite one must raise.
    X = np.repeat(np.linspace(-1, 1, 10), 3)[:, None]
    y = np.sin(3 * X[:, 0])
    adapter = KernelAdapter(RBF(0.5))
    host = ExactMarginalTarget(adapter, X, y, None, log_noise_variance=-np.inf)
    device = ArrayExactMarginalTarget(
        adapter, X, y, None, log_noise_variance=-np.inf, xp=cupy
    )
    params = np.array([np.log(0.5)])
    expected = host.logp_and_grad(params)
    value, grad = device.logp_and_grad(params)
    assert device.max_jitter == host.max_jitter > 0
    np.testing.assert_allclose(value, expected[0], rtol=1e-6)
    np.testing.assert_allclose(grad, expected[1], rtol=1e-4)
    noisy = ArrayExactMarginalTarget(adapter, X, y, None, xp=cupy)
    with pytest.raises(NotPSDError):
        noisy.logp_and_grad(np.array([0.0, np.inf]))


def test_sgld_cholesky_chains_on_device_match_host(data):
    _, _, X, y = data
    fits = {
        b: short_sgld(b, X, y, "cholesky", n_iter=60, burn_in=30)
        for b in ("numpy", "cupy")
    }
    diff = np.abs(fits["numpy"].chains_ - fits["cupy"].chains_).max()
    print(f"largest host-device MALA chain difference after 60 steps: {diff:.3e}")
    # The same proposals and uniforms; log densities equal to ~1e-12
    # relative (above), so accept decisions agree and states differ by
    # rounding carried through 60 steps.
    assert diff < 1e-6
