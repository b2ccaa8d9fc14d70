"""The GPU code path, run on the host with a module as strict as CuPy.

CI has no GPU; these tests run the ``backend="cupy"`` code (CG, ULISSE, the
preconditioner, the stochastic gradient and SGLD) with
``tests/_strict_device.py`` as the array module, which raises wherever host
and device arrays are mixed, and compare with the NumPy backend. The device
path builds ``K`` and contracts the gradient with the array-module kernels
(``kernels/_array_forms``), whose entries differ from the compiled host
kernels' by rounding (``tests/test_kernel_array_forms.py``), so results agree
to a tolerance, each derived where it is used, not bit for bit.
"""

import warnings

import numpy as np
import pytest
from _estimators import cg_predicting_sgld, short_sgld
from _strict_device import DeviceArray
from _strict_device import module as device
from scipy.optimize import approx_fprime
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    Matern,
    WhiteKernel,
)

import skgp_bayes._sgld_chains as sgld_chains
import skgp_bayes._sgld_solvers as sgld_solvers
import skgp_bayes.linalg.precondition as precondition
import skgp_bayes.predictive.exact as predictive_exact
import skgp_bayes.sgld as sgld_module
from skgp_bayes import SGLDGPRegressor
from skgp_bayes.exceptions import NotPSDError, SamplerWarning
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.linalg import (
    batched_cg,
    kernel_operator,
    kernel_preconditioner,
    pivoted_cholesky,
    ulisse_solve,
)
from skgp_bayes.targets import (
    ArrayExactMarginalTarget,
    ExactMarginalTarget,
    StochasticMarginalGradient,
)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (60, 2))
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=60)
    adapter = KernelAdapter(ConstantKernel(1.0) * RBF([0.8, 1.2]) + WhiteKernel(0.01))
    return adapter, adapter.kernel.theta, X, (y - y.mean()) / y.std()


def test_the_strict_module_refuses_mixing():
    a = device.asarray(np.ones(3))
    with pytest.raises(TypeError, match="mixed"):
        a + np.ones(3)
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(a)
    with pytest.raises(TypeError, match="device arrays"):
        a[np.array([0, 1])]
    np.testing.assert_array_equal((a * 2.0).get(), np.full(3, 2.0))


@pytest.mark.parametrize("rank", [0, 10])
def test_cg_and_ulisse_on_device_equal_host(data, rank):
    adapter, theta, X, y = data
    B = np.column_stack([y, np.random.default_rng(1).normal(size=(60, 2))])
    results = {}
    for name, xp in (("host", np), ("device", device)):
        op, stored = kernel_operator(adapter, theta, X, 0.05, xp=xp)
        P = kernel_preconditioner(adapter, theta, X, 0.05, rank, xp=xp)
        Bx = xp.asarray(B)
        cg = batched_cg(op, Bx, tol=1e-10, max_iter=300, xp=xp, precondition=P)
        ul = ulisse_solve(
            op,
            Bx,
            copies=[2, 1, 1],
            q=0.3,
            beta=0.3,
            max_random_steps=4,
            rng=np.random.default_rng(2),
            xp=xp,
            precondition=P,
        )
        if xp is device:
            assert isinstance(cg.x, DeviceArray) and stored
            results[name] = (cg.x.get(), ul.estimates.get(), cg.n_iter, ul.n_iter)
        else:
            results[name] = (cg.x, ul.estimates, cg.n_iter, ul.n_iter)
    (cg_h, ul_h, it_h, ul_it_h), (cg_d, ul_d, it_d, ul_it_d) = (
        results["host"],
        results["device"],
    )
    # CG stops at relative residual 1e-10; K differs by ~1e-15, so the two
    # runs' iterates differ by about the tolerance times cond(K) (~1e3 here)
    # and a column can stop one iteration apart.
    scale = np.abs(cg_h).max()
    np.testing.assert_allclose(cg_d, cg_h, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(ul_d, ul_h, rtol=0, atol=1e-6 * scale)
    assert abs(it_h - it_d) <= 1 and abs(ul_it_h - ul_it_d) <= 1


@pytest.mark.parametrize("rank", [1, 10, 60])
@pytest.mark.parametrize("min_rows", [0, 61])
def test_preconditioner_is_built_on_the_device(data, rank, min_rows, monkeypatch):
    # From DEVICE_PIVOTING_MIN_ROWS the pivoted Cholesky's columns, its
    # updates and the Woodbury factors all stay on the device (the strict
    # module raises on any host array); below it the host builds the factor.
    adapter, theta, X, _ = data
    host = kernel_preconditioner(adapter, theta, X, 0.05, rank)
    monkeypatch.setattr(precondition, "DEVICE_PIVOTING_MIN_ROWS", min_rows)
    built_in = []

    def spy(*args, xp, **kwargs):
        built_in.append(xp)
        return pivoted_cholesky(*args, xp=xp, **kwargs)

    monkeypatch.setattr(precondition, "pivoted_cholesky", spy)
    on_device = kernel_preconditioner(adapter, theta, X, 0.05, rank, xp=device)
    assert built_in == [device if X.shape[0] >= min_rows else np]
    assert isinstance(on_device._Ld_dev, DeviceArray)
    assert on_device.rank == host.rank
    V = np.random.default_rng(4).normal(size=(X.shape[0], 3))
    got = on_device.solve(device.asarray(V)).get()
    # columns differ from the compiled ones by rounding (~1e-15 relative);
    # P^-1 is bounded by 1 / (white + noise) = 1 / 0.06, so 1e-10 of the
    # result's scale is far above rounding and far below a wrong factor
    scale = np.abs(V).max() / 0.06
    np.testing.assert_allclose(got, host.solve(V), rtol=0, atol=1e-10 * scale)


def test_stochastic_gradient_on_device_equals_host(data):
    adapter, theta, X, y = data
    params = np.append(theta, np.log(0.05))
    grads = {}
    for name, xp in (("host", np), ("device", device)):
        grad = StochasticMarginalGradient(
            adapter,
            X,
            y,
            None,
            rng=np.random.default_rng(3),
            q=0.1,
            beta=0.1,
            max_random_steps=10,
            preconditioner_rank=15,
            storage="dense",
            xp=xp,
        )
        grads[name] = np.array([grad(params)[1] for _ in range(3)])
        state = grad.get_state()  # host copies, picklable without a device
        assert isinstance(state["probes"], np.ndarray)
        assert isinstance(state["x_prev"], np.ndarray)
    # same probes and stopping draws; the solves differ by rounding (above)
    scale = np.abs(grads["host"]).max()
    np.testing.assert_allclose(grads["device"], grads["host"], atol=1e-8 * scale)


def test_sgld_backend_cupy_runs_the_device_path(data, monkeypatch):
    adapter, _, X, y = data
    used = []

    def strict_module(backend="numpy"):
        used.append(backend)
        return device if backend == "cupy" else np

    monkeypatch.setattr(sgld_module, "get_array_module", strict_module)
    monkeypatch.setattr(sgld_chains, "get_array_module", strict_module)
    fits = {}
    for backend in ("numpy", "cupy"):
        reg = SGLDGPRegressor(
            ConstantKernel() * RBF([1.0, 1.0]),
            n_iter=40,
            burn_in=20,
            thin=2,
            n_chains=2,
            n_predict_draws=4,
            cg_preconditioner_rank=10,
            solver="ulisse",  # the CG path: "auto" takes Cholesky here
            backend=backend,
            random_state=0,
        ).fit(X, y)
        fits[backend] = reg
    assert "cupy" in used
    # the same random numbers drive both chains; gradients agree to ~1e-12
    # relative (above), which 40 steps carry into the states
    np.testing.assert_allclose(fits["cupy"].chains_, fits["numpy"].chains_, atol=1e-8)
    assert isinstance(fits["cupy"].samples_, np.ndarray)
    np.testing.assert_allclose(
        fits["cupy"].predict(X[:5]), fits["numpy"].predict(X[:5]), atol=1e-8
    )


def test_cg_predictions_run_on_the_device(data, monkeypatch):
    _, _, X, y = data
    host = cg_predicting_sgld("numpy", X, y)
    used = []

    def strict_module(backend="numpy"):
        used.append(backend)
        return device if backend == "cupy" else np

    for module in (sgld_module, sgld_chains, predictive_exact):
        monkeypatch.setattr(module, "get_array_module", strict_module)
    fitted = cg_predicting_sgld("cupy", X, y)
    used.clear()
    mean, sd = fitted.predict(X[:7], return_std=True)
    assert "cupy" in used  # the solves of predict ran on the device module
    host_mean, host_sd = host.predict(X[:7], return_std=True)
    # CG to cg_tol (1e-8 relative) on both sides, K differing by rounding:
    # the solutions differ by about cg_tol times cond(K), ~1e2 here
    np.testing.assert_allclose(mean, host_mean, rtol=0, atol=1e-5)
    np.testing.assert_allclose(sd, host_sd, rtol=0, atol=1e-5)


def test_a_gpu_model_predicts_where_cupy_is_missing(data, monkeypatch):
    _, _, X, y = data

    def strict_module(backend="numpy"):
        return device if backend == "cupy" else np

    for module in (sgld_module, sgld_chains):
        monkeypatch.setattr(module, "get_array_module", strict_module)
    fitted = cg_predicting_sgld("cupy", X, y)
    # predictive_exact keeps the real get_array_module: CuPy is absent in CI
    # (and when present, answers on its GPU), and the host takes over
    mean = fitted.predict(X[:5])
    assert np.all(np.isfinite(mean))
    np.testing.assert_allclose(
        mean, cg_predicting_sgld("numpy", X, y).predict(X[:5]), rtol=0, atol=1e-5
    )


_EXACT_KERNELS = {
    "rbf ard, white": ConstantKernel(1.0) * RBF([0.8, 1.2]) + WhiteKernel(0.01),
    "rbf isotropic": RBF(0.6),
    "matern 3/2": ConstantKernel(2.0) * Matern([0.7, 1.1], nu=1.5),
    "matern 1/2": Matern(0.9, nu=0.5),
}


@pytest.mark.parametrize("name", list(_EXACT_KERNELS))
@pytest.mark.parametrize("noise_free", [True, False])
def test_exact_target_on_device_equals_host(data, name, noise_free):
    # The same log posterior as the host's compiled target: the kernel
    # entries differ by a few ulps (test_kernel_array_forms) and K^-1 is
    # formed another way (L^-T L^-1 from a triangular solve against
    # dpotri), so agreement is to rounding amplified by the condition of
    # K (noise 0.05 on a unit-variance kernel: about 1e3), well inside 1e-9.
    _, _, X, y = data
    adapter = KernelAdapter(_EXACT_KERNELS[name])
    log_noise = None if noise_free else np.log(0.05)
    params = adapter.kernel.theta - 0.1
    if noise_free:
        params = np.append(params, np.log(0.05))
    host = ExactMarginalTarget(adapter, X, y, None, log_noise)
    on_device = ArrayExactMarginalTarget(adapter, X, y, None, log_noise, xp=device)
    value, grad = on_device.logp_and_grad(params)
    expected_value, expected_grad = host.logp_and_grad(params)
    assert isinstance(grad, np.ndarray) and isinstance(value, float)
    np.testing.assert_allclose(value, expected_value, rtol=1e-11)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-9, atol=1e-9)
    assert on_device.log_prob(params) == pytest.approx(expected_value, rel=1e-11)


def test_exact_target_on_device_gradient_matches_finite_differences(data):
    _, _, X, y = data
    adapter = KernelAdapter(_EXACT_KERNELS["rbf ard, white"])
    target = ArrayExactMarginalTarget(adapter, X, y, None, xp=device)
    params = np.append(adapter.kernel.theta, np.log(0.05))
    numeric = approx_fprime(params, target.log_prob, 1e-6)
    # central-free differences of step 1e-6: error ~ step x curvature
    # (~1e2 here) plus rounding 1e-13 / 1e-6
    np.testing.assert_allclose(target.logp_and_grad(params)[1], numeric, atol=2e-4)


def test_exact_target_on_device_adds_the_hosts_jitter():
    # Repeated inputs and no noise make K singular; both targets climb the
    # same jitter ladder and stop on the same rung.
    X = np.repeat(np.linspace(-1, 1, 10), 3)[:, None]
    y = np.sin(3 * X[:, 0])
    adapter = KernelAdapter(RBF(0.5))
    params = np.array([np.log(0.5)])
    host = ExactMarginalTarget(adapter, X, y, None, log_noise_variance=-np.inf)
    on_device = ArrayExactMarginalTarget(
        adapter, X, y, None, log_noise_variance=-np.inf, xp=device
    )
    expected = host.logp_and_grad(params)
    value, grad = on_device.logp_and_grad(params)
    assert on_device.max_jitter == host.max_jitter > 0
    np.testing.assert_allclose(value, expected[0], rtol=1e-6)
    np.testing.assert_allclose(grad, expected[1], rtol=1e-4)


def test_exact_target_on_device_refuses_a_non_finite_kernel(data):
    _, _, X, y = data
    adapter = KernelAdapter(RBF(1.0))
    target = ArrayExactMarginalTarget(adapter, X, y, None, xp=device)
    with pytest.raises(NotPSDError, match="non-finite"):
        target.logp_and_grad(np.array([0.0, np.inf]))  # an infinite noise variance


def test_exact_target_on_device_pickles_to_the_host(data):
    import pickle

    _, _, X, y = data
    adapter = KernelAdapter(_EXACT_KERNELS["rbf ard, white"])
    target = ArrayExactMarginalTarget(adapter, X, y, None, xp=device)
    params = np.append(adapter.kernel.theta, np.log(0.05))
    loaded = pickle.loads(pickle.dumps(target))
    assert loaded.xp is np
    np.testing.assert_allclose(
        loaded.logp_and_grad(params)[1], target.logp_and_grad(params)[1], rtol=1e-12
    )


def _exact_targets_on_the_device(monkeypatch):
    """``backend="cupy"`` on the strict device module for the SGLD chains;
    returns the list of array modules the exact targets are built with."""
    built = []

    class Spy(ArrayExactMarginalTarget):
        def __init__(self, *args, **kwargs):
            built.append(kwargs["xp"])
            super().__init__(*args, **kwargs)

    def strict_module(backend="numpy"):
        return device if backend == "cupy" else np

    monkeypatch.setattr(sgld_module, "get_array_module", strict_module)
    monkeypatch.setattr(sgld_chains, "get_array_module", strict_module)
    monkeypatch.setattr(sgld_solvers, "ArrayExactMarginalTarget", Spy)
    return built


def test_sgld_cholesky_chains_run_on_the_device(data, monkeypatch):
    # solver="cholesky" (MALA, the default up to 5,000 points) with
    # backend="cupy" evaluates its exact target on the device.
    _, _, X, y = data
    built = _exact_targets_on_the_device(monkeypatch)
    fits = {b: short_sgld(b, X, y, "cholesky") for b in ("numpy", "cupy")}
    assert built and all(xp is device for xp in built)
    assert fits["cupy"].solver_ == "cholesky"
    # the same proposals and uniforms; log densities agree to ~1e-13, so
    # every accept decision and state is the host's to rounding
    np.testing.assert_allclose(fits["cupy"].chains_, fits["numpy"].chains_, atol=1e-9)
    np.testing.assert_allclose(
        fits["cupy"].predict(X[:5]), fits["numpy"].predict(X[:5]), atol=1e-9
    )


def test_sgld_chains_in_mapped_coordinates_run_on_the_device(data, monkeypatch):
    # The sinh maps wrap the device target's host log density and gradient:
    # chains forced under maps after their first block keep building their
    # target on the device and give finite draws and predictions.
    from _sgld_grid import strong_maps

    import skgp_bayes._sgld_refine as sgld_refine

    _, _, X, y = data
    built = _exact_targets_on_the_device(monkeypatch)

    def once(kept, span, rhat, ess, options, budget_left, warmup):
        return None if options.get("maps") is not None else strong_maps(kept)

    monkeypatch.setattr(sgld_chains, "mixed", lambda rhat, ess: False)
    monkeypatch.setattr(sgld_refine, "skew_maps_for", once)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        reg = SGLDGPRegressor(backend="cupy", max_iter=3000, random_state=0).fit(X, y)
    assert built and all(xp is device for xp in built)
    assert reg.diagnostics_["skew_maps"] == reg.chains_.shape[2]
    assert reg.diagnostics_["refined_at"] == 1500
    assert np.all(np.isfinite(reg.chains_)) and np.all(np.isfinite(reg.predict(X)))
