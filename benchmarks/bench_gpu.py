"""The CuPy backend on a GPU against the same machine's CPU and a GPU peer.

One SGLD iteration of :class:`~skgp_bayes.SGLDGPRegressor` at scale is one
stochastic gradient (:class:`~skgp_bayes.targets.StochasticMarginalGradient`:
``K`` built and stored, a pivoted-Cholesky preconditioner, one batched
ULISSE/CG solve, the gradient contraction, on the host by the compiled
kernels or on the device by the array-module ones). This times it with
``backend="numpy"`` and ``backend="cupy"`` on synthetic data of the census
size used in ``bench_sgld.py``, splits the time into those four parts, and
sets it against, in the same run:

- the Cholesky floor: one LAPACK ``dpotrf`` on the host and one
  ``cupy.linalg.cholesky`` on the device, of the same ``K``;
- GPyTorch's exact GP on the same device in float64: one marginal
  log-likelihood gradient (``loss.backward()``) with its defaults (CG with
  stochastic Lanczos quadrature beyond 800 points), and with a Cholesky.

    python benchmarks/bench_gpu.py                 # n = 5000 and 22784
    python benchmarks/bench_gpu.py --sizes 2000    # quicker
    python benchmarks/bench_gpu.py --sizes --preconditioner 2000 5000 10000 22784
    python benchmarks/bench_gpu.py --sizes --exact 1000 2000 5000

``--exact`` times the exact gradient of ``solver="cholesky"`` (the MALA
chain, the default up to 5,000 points) on the host and on the device,
against the device Cholesky and GPyTorch's Cholesky gradient.
``--preconditioner`` times the rank-100 preconditioner alone (the pivoted
Cholesky and the Woodbury factors) with the factor built on the host and on
the device, which sets ``DEVICE_PIVOTING_MIN_ROWS``.

Needs CuPy and a GPU; GPyTorch is optional. Prints Markdown tables.
"""

import argparse
import os
import platform
import time

import numpy as np
from bench_sgld import CENSUS_GRADIENT, CENSUS_PARAMS, census_data, kernel
from scipy.linalg import lapack

import skgp_bayes.linalg.precondition as precondition
import skgp_bayes.targets.stochastic as stochastic
from skgp_bayes._backend import get_array_module
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.predictive.exact import CGGPDraws
from skgp_bayes.targets import (
    ArrayExactMarginalTarget,
    ExactMarginalTarget,
    StochasticMarginalGradient,
)

PARTS = (
    "kernel_operator",
    "kernel_preconditioner",
    "ulisse_solve",
    "lowrank_grad_contract",
    "array_lowrank_grad_contract",
)


def synthetic(n):
    return census_data(n, np.random.default_rng(0))


def adapter():
    return KernelAdapter(kernel())


class PartTimer:
    """Wraps the four parts of a gradient in the stochastic module with clocks
    that wait for the device, so that each part is charged its own time."""

    def __init__(self, sync):
        self.sync = sync
        self.seconds = dict.fromkeys(PARTS, 0.0)
        self._saved = {}

    def __enter__(self):
        for name in PARTS:
            original = getattr(stochastic, name)
            self._saved[name] = original
            setattr(stochastic, name, self._timed(name, original))
        return self

    def _timed(self, name, func):
        def wrapper(*args, **kwargs):
            self.sync()
            start = time.perf_counter()
            out = func(*args, **kwargs)
            self.sync()
            self.seconds[name] += time.perf_counter() - start
            return out

        return wrapper

    def __exit__(self, *exc):
        for name, func in self._saved.items():
            setattr(stochastic, name, func)


def our_gradient(X, y, xp, sync, repeats=2):
    grad = StochasticMarginalGradient(
        adapter(),
        X,
        y,
        None,
        rng=np.random.default_rng(1),
        xp=xp,
        **CENSUS_GRADIENT,
    )
    sync()
    start = time.perf_counter()
    grad(CENSUS_PARAMS)
    sync()
    cold = time.perf_counter() - start
    best, parts = np.inf, None
    for step in range(repeats):
        with PartTimer(sync) as timer:
            start = time.perf_counter()
            # a nearby point: K^-1 y starts from the last solution, probes new
            grad(CENSUS_PARAMS + 0.01 * (step + 1))
            sync()
            seconds = time.perf_counter() - start
        if seconds < best:
            best, parts = seconds, dict(timer.seconds)
    return cold, best, parts, grad.cg_iterations


def noisy_gram(X):
    """``K + s2 I`` at the timed parameters: the matrix every solve uses."""
    K = adapter().gram(CENSUS_PARAMS[:2], X)
    K[np.diag_indices_from(K)] += np.exp(CENSUS_PARAMS[2])
    return K


def host_cholesky(X):
    K = noisy_gram(X)
    start = time.perf_counter()
    _, info = lapack.dpotrf(K, lower=1, clean=0, overwrite_a=1)
    assert info == 0
    return time.perf_counter() - start


def device_cholesky(X, cupy, repeats=3):
    Kd = cupy.asarray(noisy_gram(X))
    times = []
    for _ in range(repeats + 1):  # the first call loads cuSOLVER
        cupy.cuda.Device().synchronize()
        start = time.perf_counter()
        L = cupy.linalg.cholesky(Kd)
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - start)
        del L
    return min(times[1:])


def gpytorch_gradient(X, y, cholesky, repeats=3):
    import gpytorch
    import torch

    Xt = torch.as_tensor(X, dtype=torch.float64, device="cuda")
    yt = torch.as_tensor(y, dtype=torch.float64, device="cuda")

    class Model(gpytorch.models.ExactGP):
        def __init__(self, likelihood):
            super().__init__(Xt, yt, likelihood)
            self.mean = gpytorch.means.ZeroMean()
            self.covar = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(
                self.mean(x), self.covar(x)
            )

    likelihood = gpytorch.likelihoods.GaussianLikelihood().double().cuda()
    model = Model(likelihood).double().cuda()
    model.covar.outputscale = 1.0
    model.covar.base_kernel.lengthscale = 2.0
    likelihood.noise = 0.1
    model.train()
    likelihood.train()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    size = 10**7 if cholesky else 800  # 800 is GPyTorch's default
    times = []
    with gpytorch.settings.max_cholesky_size(size):
        for _ in range(repeats + 1):  # the first call builds and compiles
            model.zero_grad()
            torch.cuda.synchronize()
            start = time.perf_counter()
            loss = -mll(model(Xt), yt)
            loss.backward()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
    return min(times[1:])


def prediction_seconds(X, y, backend, sync, n_draws=2, n_query=128):
    """Predictive means and variances by CG (``predict_solver="cg"``): the
    set-up solves ``K_j^-1 y`` of ``n_draws`` draws, then the moments at
    ``n_query`` new points (one block of the query loop per draw)."""
    thetas = (
        np.tile(CENSUS_PARAMS[:2], (n_draws, 1)) + 0.01 * np.arange(n_draws)[:, None]
    )
    noise = np.full(n_draws, np.exp(CENSUS_PARAMS[2]))
    X_query = synthetic(n_query + 7)[0][7:]
    sync()
    start = time.perf_counter()
    draws = CGGPDraws(
        adapter(), X, y, thetas, noise, 1e-8, "dense", 100, backend=backend
    )
    sync()
    setup = time.perf_counter() - start
    start = time.perf_counter()
    means, variances = draws.moments(X_query)
    sync()
    assert np.all(np.isfinite(means)) and np.all(variances >= 0)
    return setup, time.perf_counter() - start


def preconditioner_seconds(n, xp, sync, min_rows, repeats=3):
    """Best time of ``kernel_preconditioner`` (rank 100) at the timed point,
    with the factor built on the device from ``min_rows`` rows."""
    X, _ = synthetic(n)
    saved = precondition.DEVICE_PIVOTING_MIN_ROWS
    precondition.DEVICE_PIVOTING_MIN_ROWS = min_rows
    try:
        times = []
        for _ in range(repeats + 1):  # the first call compiles and loads
            sync()
            start = time.perf_counter()
            P = precondition.kernel_preconditioner(
                adapter(), CENSUS_PARAMS[:2], X, np.exp(CENSUS_PARAMS[2]), 100, xp=xp
            )
            sync()
            times.append(time.perf_counter() - start)
            assert P.rank > 0
    finally:
        precondition.DEVICE_PIVOTING_MIN_ROWS = saved
    return min(times[1:])


def preconditioner_table(sizes, cupy):
    sync = cupy.cuda.Device().synchronize
    print("\n### The rank-100 preconditioner alone, d = 8 (RBF)\n")
    print(
        '| n | backend="numpy" s | cupy, factor on the host s | cupy, factor on '
        "the device s | device / host factor |"
    )
    print("| --- | --- | --- | --- | --- |")
    for n in sizes:
        host = preconditioner_seconds(n, np, lambda: None, 0)
        copied = preconditioner_seconds(n, cupy, sync, n + 1)
        device = preconditioner_seconds(n, cupy, sync, 0)
        print(
            f"| {n} | {host:.4f} | {copied:.4f} | {device:.4f} | "
            f"{device / copied:.2f} |"
        )


def exact_gradient_seconds(target, repeats=3):
    """Best time of one exact log posterior and gradient (a MALA step's)."""
    times = []
    for step in range(repeats + 1):  # the first call compiles and loads
        start = time.perf_counter()
        value, grad = target.logp_and_grad(CENSUS_PARAMS + 0.01 * step)
        times.append(time.perf_counter() - start)  # grad is on the host
        assert np.isfinite(value) and np.all(np.isfinite(grad))
    return min(times[1:])


def exact_table(sizes, cupy):
    """``solver="cholesky"``'s gradient (MALA) on the host and the device."""
    print('\n### Exact gradients (solver="cholesky"), d = 8 (RBF), float64\n')
    print(
        "| n | device Cholesky s | ours, cupy s | ratio | ours, numpy s | ratio | "
        "GPyTorch, Cholesky s | ratio | numpy / cupy |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in sizes:
        X, y = synthetic(n)
        floor = device_cholesky(X, cupy)
        device = exact_gradient_seconds(
            ArrayExactMarginalTarget(adapter(), X, y, None, xp=cupy)
        )
        host = exact_gradient_seconds(ExactMarginalTarget(adapter(), X, y, None))
        try:
            peer = gpytorch_gradient(X, y, True)
            peer_cells = f"{peer:.4f} | {peer / floor:.2f}"
        except Exception as err:  # a missing GPyTorch, or out of memory
            peer_cells = f"failed: {type(err).__name__} | "
        print(
            f"| {n} | {floor:.4f} | {device:.4f} | {device / floor:.2f} | "
            f"{host:.4f} | {host / floor:.2f} | {peer_cells} | {host / device:.1f} |"
        )


def row(label, seconds, floor):
    return f"| {label} | {seconds:.3f} | {seconds / floor:.2f} |"


def run_size(n, cupy):
    X, y = synthetic(n)
    sync_device = cupy.cuda.Device().synchronize
    chol_host = host_cholesky(X)
    chol_device = device_cholesky(X, cupy)
    cold_h, warm_h, parts_h, iters_h = our_gradient(X, y, np, lambda: None)
    cold_d, warm_d, parts_d, iters_d = our_gradient(X, y, cupy, sync_device)
    peers = {}
    for label, cholesky in (("CG (its default)", False), ("Cholesky", True)):
        try:
            peers[label] = gpytorch_gradient(X, y, cholesky)
        except Exception as err:  # a missing GPyTorch, or out of memory
            peers[label] = f"{type(err).__name__}: {err}"
    print(f"\n### n = {n}, d = 8 (RBF), float64\n")
    print(
        "| one gradient (warm CG start, new probes) | seconds | ratio to the "
        "device Cholesky |"
    )
    print("| --- | --- | --- |")
    print(row("device Cholesky (cupy.linalg.cholesky)", chol_device, chol_device))
    print(row("host Cholesky (LAPACK dpotrf)", chol_host, chol_device))
    print(row('ours, backend="cupy"', warm_d, chol_device))
    print(row('ours, backend="numpy"', warm_h, chol_device))
    for label, value in peers.items():
        if isinstance(value, str):
            print(f"| GPyTorch, {label} | failed: {value} | |")
        else:
            print(row(f"GPyTorch, {label}", value, chol_device))
    print(
        f"\nFirst gradient (cold start): cupy {cold_d:.3f} s, numpy {cold_h:.3f} s. "
        f"Block CG iterations (cold, warm...): cupy {iters_d}, numpy {iters_h}."
    )
    for label, value in peers.items():
        if not isinstance(value, str):
            print(f"Ours (cupy) / GPyTorch {label}: {warm_d / value:.2f}.")
    print(f"Ours cupy / ours numpy: {warm_d / warm_h:.3f}.\n")
    predictions = {"cupy": prediction_seconds(X, y, "cupy", sync_device)}
    if n <= 5000:  # the host's dense CG at 22,784 points takes minutes
        predictions["numpy"] = prediction_seconds(X, y, "numpy", lambda: None)
    print("| predictions by CG, 2 draws | set-up solves s | moments at 128 points s |")
    print("| --- | --- | --- |")
    for backend, (setup, moments) in predictions.items():
        print(f'| backend="{backend}" | {setup:.3f} | {moments:.3f} |')
    print()
    print("| part of one gradient | cupy s | numpy s |")
    print("| --- | --- | --- |")
    for name in PARTS:
        print(f"| {name} | {parts_d[name]:.3f} | {parts_h[name]:.3f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="*", default=[5000, 22784])
    parser.add_argument("--preconditioner", type=int, nargs="*", default=[])
    parser.add_argument("--exact", type=int, nargs="*", default=[])
    args = parser.parse_args()
    cupy = get_array_module("cupy")
    props = cupy.cuda.runtime.getDeviceProperties(0)
    print(
        f"# CuPy backend benchmark\n\n{props['name'].decode()}, CuPy "
        f"{cupy.__version__}; host {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, NumPy {np.__version__}"
    )
    warm_up = synthetic(300)
    our_gradient(*warm_up, np, lambda: None, repeats=1)  # Numba compiles
    if args.preconditioner:
        preconditioner_table(args.preconditioner, cupy)
    if args.exact:
        exact_table(args.exact, cupy)
    for n in args.sizes:
        run_size(n, cupy)


if __name__ == "__main__":
    main()
