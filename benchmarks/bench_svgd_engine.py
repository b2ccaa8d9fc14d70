"""The SVGD engine's own cost per step, and the softmax predictive.

On small data the Stein classifier's target is cheap (a factorisation of
a 100-400 row kernel matrix per particle), and what the engine does around
it (the per-coordinate kernel field, the whitening products, the stopping
rule's residual) and the end-of-fit check's ``predict_proba`` become a
large share of a fit. This times, with one BLAS thread:

- one ``svgd_step`` on a Gaussian target at the classifier's shapes (10
  particles; 2 hyperparameters plus the latents of iris, wine and breast
  cancer), with a dense preconditioner root and the classifier's options,
  less the target's own calls: the engine's work, against one ``dpotrf``
  at the data's size;
- ``predict_proba`` of a default ``SteinGPClassifier`` (isotropic kernel)
  at its training inputs on iris and wine (three classes: the softmax
  predictive over 128 quasi-random nodes a point and particle).

    PYTHONPATH=. python benchmarks/bench_svgd_engine.py

Run it with ``PYTHONPATH`` at another checkout to time that code. Prints
Markdown tables; best of ``--repeats``.
"""

import argparse
import time
import warnings

import numpy as np
from _timing import best_time  # benchmarks/ is on sys.path when run as a script
from bench_stein_classifier import _split  # the row-3 splits
from scipy.linalg import lapack
from sklearn.datasets import load_iris, load_wine
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from threadpoolctl import threadpool_limits

from skgp_bayes import SteinGPClassifier
from skgp_bayes.inference import svgd_init, svgd_step

# (label, training rows, latent functions): the 70% splits of the
# classifier benchmarks (bench_stein_classifier.py --same-kernel).
SHAPES = (("iris", 105, 3), ("wine", 124, 3), ("breast cancer", 398, 1))
N_PARTICLES = 10


def _gaussian_target(n_params, rng):
    """A correlated Gaussian and a root of its covariance."""
    A = rng.standard_normal((n_params, n_params)) / np.sqrt(n_params)
    root = np.linalg.cholesky(np.eye(n_params) + A @ A.T)
    precision = np.linalg.inv(root @ root.T)
    calls = [0.0]

    def logp(x):
        start = time.perf_counter()
        grads = -(x @ precision)
        values = 0.5 * np.sum(x * grads, axis=1)
        calls[0] += time.perf_counter() - start
        return values, grads

    return logp, root, calls


def bench_engine(repeats):
    print("\n### One SVGD step, the target's time taken out\n")
    print("| shape | coordinates | engine step (ms) | dpotrf at n (ms) | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    rng = np.random.default_rng(0)
    for label, n, latents in SHAPES:
        n_params = 2 + n * latents
        logp, root, calls = _gaussian_target(n_params, rng)
        x0 = rng.standard_normal((N_PARTICLES, n_params)) @ root.T * 1.3
        state = svgd_init(
            logp,
            x0,
            learning_rate=0.5,
            preconditioner=root,
            kernel="coordinatewise",
            step_control="per_coordinate",
        )
        best = np.inf
        for _ in range(repeats):
            calls[0] = 0.0
            start = time.perf_counter()
            state, _ = svgd_step(state, logp, tol=1e-12)
            best = min(best, time.perf_counter() - start - calls[0])
        gram = np.cov(rng.standard_normal((n, n + 5))) + n * np.eye(n)
        chol = best_time(lambda gram=gram: lapack.dpotrf(gram, lower=1), repeats)
        print(
            f"| {label} | {n_params} | {best * 1e3:.2f} | {chol * 1e3:.2f} | "
            f"{best / chol:.1f} |",
            flush=True,
        )


def bench_predict_proba(repeats):
    print("\n### predict_proba at the training inputs (three classes)\n")
    print("| data | rows | predict_proba (ms) |")
    print("| --- | ---: | ---: |")
    for label, loader in (("iris", load_iris), ("wine", load_wine)):
        X_tr, _, y_tr, _ = _split(loader, 0)
        model = SteinGPClassifier(ConstantKernel(1.0) * RBF(1.0), random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X_tr, y_tr)
        took = best_time(lambda m=model, X=X_tr: m.predict_proba(X), repeats)
        print(f"| {label} | {X_tr.shape[0]} | {took * 1e3:.1f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    with threadpool_limits(limits=1, user_api="blas"):
        bench_engine(args.repeats)
        bench_predict_proba(args.repeats)


if __name__ == "__main__":
    main()
