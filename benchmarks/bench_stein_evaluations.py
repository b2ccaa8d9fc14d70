"""One evaluation of the Stein classifier's two targets, compiled and interpreted.

The whitened latent target (one particle's log density and gradient) and
one binary Laplace surrogate evaluation (Newton's mode from a warm start,
the log marginal and its gradient), each timed through the compiled call
the default kernel takes and through the interpreted path the same object
takes when its plan is switched off, against one LAPACK ``dpotrf`` of the
same size. Default kernel ``ConstantKernel * RBF`` with one length scale
per input, inputs standardised as the estimator does, one BLAS thread,
best of ``--repeats`` calls.

    PYTHONPATH=. python benchmarks/bench_stein_evaluations.py

Prints a Markdown table.
"""

import argparse

import numpy as np
from _timing import best_time  # benchmarks/ is on sys.path when run as a script
from scipy.linalg import lapack
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from threadpoolctl import threadpool_limits

from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli, Softmax
from skgp_bayes.targets.laplace import BinaryLaplaceProblem
from skgp_bayes.targets.whitened import WhitenedLatentTarget

# (label, loader, rows kept); the rows are a fixed-seed subsample.
PROBLEMS = (
    ("breast cancer, 48 rows", load_breast_cancer, 48),
    ("breast cancer, 300 rows", load_breast_cancer, 300),
    ("iris (3 classes)", load_iris, 105),
    ("wine (3 classes)", load_wine, 124),
)


def _problem(loader, rows):
    X, y = loader(return_X_y=True)
    keep = np.random.default_rng(0).choice(X.shape[0], rows, replace=False)
    X, y = X[keep], y[keep]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    kernel = ConstantKernel() * RBF(np.ones(X.shape[1]))
    adapter = KernelAdapter(kernel)
    n_classes = np.unique(y).size
    if n_classes == 2:
        target = WhitenedLatentTarget(adapter, X, y.astype(float), Bernoulli(), None)
    else:
        target = WhitenedLatentTarget(
            adapter, X, y, Softmax(n_classes), None, n_latent=n_classes
        )
    return target, (y == y[0]).astype(float), kernel.theta


def _interpreted_too(obj, call):
    """``call()`` timed as it is, and with ``obj``'s compiled plan switched off."""
    compiled = best_time(call, ARGS.repeats)
    plan = obj._plan
    obj._plan = None
    try:
        interpreted = best_time(call, ARGS.repeats)
    finally:
        obj._plan = plan
    return compiled, interpreted


def bench_problem(label, loader, rows):
    target, y01, theta = _problem(loader, rows)
    rng = np.random.default_rng(1)
    params = np.concatenate([theta, rng.normal(size=target.n_params - theta.size)])
    target.logp_and_grad(params)  # compile, and plan
    target._planned = True
    whitened = _interpreted_too(target, lambda: target.logp_and_grad(params))
    problem = BinaryLaplaceProblem(target, y01, Bernoulli())
    problem.log_marginal_and_grad(theta)  # the warm start, as on an optimiser's path
    steps = iter(np.tile([1e-4, -1e-4], 10 * ARGS.repeats))

    def laplace():
        problem.log_marginal_and_grad(theta + next(steps))

    surrogate = _interpreted_too(problem, laplace)
    K = target.gram(theta)[0]
    cholesky = best_time(lambda: lapack.dpotrf(K, lower=True), ARGS.repeats)
    print(
        f"| {label} | {target.n} | {target.X.shape[1]} | {cholesky * 1e6:.0f} | "
        f"{whitened[1] * 1e6:.0f} | {whitened[0] * 1e6:.0f} | "
        f"{whitened[1] / whitened[0]:.2f} | {surrogate[1] * 1e6:.0f} | "
        f"{surrogate[0] * 1e6:.0f} | {surrogate[1] / surrogate[0]:.2f} |"
    )


def main():
    print(
        "| problem | n | d | dpotrf (us) | target, interpreted (us) | compiled (us) "
        "| speed-up | Laplace, interpreted (us) | compiled (us) | speed-up |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with threadpool_limits(1, user_api="blas"):
        for problem in PROBLEMS:
            bench_problem(*problem)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=200)
    ARGS = parser.parse_args()
    main()
