"""How much of a target's spread SVGD's particles keep, by kernel and dimension.

``run_svgd`` (whitened by the identity, the global step rule the Stein
regressor uses) with 20 particles to its stopping rule, on three targets:

- ``gaussian``: the standard normal in ``d`` dimensions;
- ``correlated``: unit variances, correlation 0.5 between every pair (what
  whitening by a Laplace factor leaves of a skewed posterior's correlation);
- ``skewed``: ``d`` independent logs of Gamma(2) variables (sd 0.80,
  skewed left, as a log length scale's posterior often is).

Per kernel (``rbf``, ``rbf+linear``, ``coordinatewise``) and dimension: the
particles' sd averaged over coordinates, relative to the target's, over
three seeds of the start (standard normal draws); for ``correlated`` also
the mean correlation kept (target 0.5). The figures behind
:func:`skgp_bayes.inference.stein_kernel.choose_kernel`.

Usage::

    python benchmarks/bench_svgd_spread.py [--dims 1,3,5,9,15] [--particles 20]
"""

import argparse
import warnings

import numpy as np
from scipy import stats

from skgp_bayes.inference import run_svgd

_GAMMA_SHAPE = 2.0
_KERNELS = ("rbf", "rbf+linear", "coordinatewise")


def _target(name, dim):
    """``(logp_and_grad, target sd, target correlation)``."""
    if name == "gaussian":
        return (lambda x: (-0.5 * np.sum(x**2, axis=1), -x)), 1.0, 0.0
    if name == "correlated":
        cov = 0.5 * np.eye(dim) + 0.5 * np.ones((dim, dim))
        precision = np.linalg.inv(cov)

        def correlated(x):
            return -0.5 * np.einsum("ji,ik,jk->j", x, precision, x), -x @ precision

        return correlated, 1.0, 0.5

    def skewed(x):  # log density of log X, X ~ Gamma(a): a u - exp(u)
        return np.sum(_GAMMA_SHAPE * x - np.exp(x), axis=1), _GAMMA_SHAPE - np.exp(x)

    return skewed, float(stats.loggamma(_GAMMA_SHAPE).std()), 0.0


def spread(name, dim, kernel, n_particles, seeds=3):
    """Mean sd ratio and mean correlation of the particles over ``seeds`` starts."""
    logp, target_sd, _ = _target(name, dim)
    ratios, correlations = [], []
    for seed in range(seeds):
        start = np.random.default_rng(seed).standard_normal((n_particles, dim))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run_svgd(
                logp,
                start,
                max_iter=3000,
                learning_rate=0.3,
                tol=1e-3,
                preconditioner=np.eye(dim),
                kernel=kernel,
            )
        x = result.particles
        ratios.append(np.mean(np.std(x, axis=0, ddof=1)) / target_sd)
        if dim > 1:
            corr = np.corrcoef(x.T)
            correlations.append(np.mean(corr[~np.eye(dim, dtype=bool)]))
    return float(np.mean(ratios)), (
        float(np.mean(correlations)) if correlations else float("nan")
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", default="1,2,3,5,9,15")
    parser.add_argument("--particles", type=int, default=20)
    args = parser.parse_args()
    dims = [int(d) for d in args.dims.split(",")]
    J = args.particles
    print(f"\n## SVGD particles' sd / target sd ({J} particles, 3 starts each)\n")
    print("| target | d | " + " | ".join(_KERNELS) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in _KERNELS) + " |")
    for name in ("gaussian", "correlated", "skewed"):
        for dim in dims:
            if name == "correlated" and dim == 1:
                continue
            cells = []
            for kernel in _KERNELS:
                if kernel == "rbf+linear" and dim >= J:
                    cells.append("-")
                    continue
                ratio, corr = spread(name, dim, kernel, J)
                note = f" (corr {corr:.2f})" if name == "correlated" else ""
                cells.append(f"{ratio:.3f}{note}")
            print(f"| {name} | {dim} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
