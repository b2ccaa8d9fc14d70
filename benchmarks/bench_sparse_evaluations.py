"""One evaluation of the sparse classifiers' bounds, by part and by path.

Two tables, one BLAS thread, best of ``--repeats`` calls, on breast cancer
(inputs standardised as the estimators do, a fixed-seed subsample of the
rows, inducing inputs a fixed-seed subsample of them):

* ``K(Z, X)`` of the RBF by the pass over entries per column
  (``kernel_values_into``) and by one product
  (``cross_kernel_values_into``), and the whole Bernoulli-logit whitened
  target (``logit_joint``, what every leapfrog step of the variational
  MCMC classifier evaluates), which takes the product form from four
  input columns;
* the SVGP bound with a Bernoulli-logit likelihood (the variational MCMC
  classifier's first stage, and every subset of a selection of inducing
  inputs): interpreted (the same object with the compiled rules switched
  off), with its terms given the projection compiled
  (``targets/_svgp_numba.py``), and the logit bound whole in one compiled
  call (``logit_bound``: kernel, projection, terms and pullback); then
  with the softmax likelihood on iris and wine (all rows, 20 inducing
  inputs), whose terms alone are compiled.

    PYTHONPATH=. python benchmarks/bench_sparse_evaluations.py
"""

import argparse

import numpy as np
from _timing import best_time  # benchmarks/ is on sys.path when run as a script
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from threadpoolctl import threadpool_limits

from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli, Softmax
from skgp_bayes.targets import SparseWhitenedTarget
from skgp_bayes.targets._likelihood_numba import logit_joint
from skgp_bayes.targets._sparse_numba import (
    cross_kernel_values_into,
    kernel_scales,
    kernel_values_into,
    scaled,
)
from skgp_bayes.targets.compiled_forms import compiled_form
from skgp_bayes.targets.svgp import SVGPBound

SIZES = ((48, 2, 7), (48, 30, 7), (300, 8, 18), (300, 30, 18))


def _data(n, d, m):
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    rows = rng.choice(X.shape[0], n, replace=False)
    X, y = X[rows][:, :d], y[rows].astype(float)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y, X[rng.choice(n, m, replace=False)]


def bench_joint(n, d, m):
    X, y, Z = _data(n, d, m)
    kernel = ConstantKernel() * RBF(np.ones(d))
    target = SparseWhitenedTarget(KernelAdapter(kernel), X, y, Z, Bernoulli())
    _, arguments, _ = compiled_form(target)
    Xa, Za, defaults, index, base, jitter, *rest = arguments
    theta = np.concatenate([[0.0], np.full(d, np.log(2.0))])
    v = np.random.default_rng(1).normal(size=(m, 1)) * 0.5
    inv_ell = kernel_scales(theta, defaults, index, d)[2]
    Xs, Zs = scaled(Xa, inv_ell), scaled(Za, inv_ell)
    K = np.empty((m, n))
    loop = best_time(lambda: kernel_values_into(Zs, Xs, 1.0, base, K), ARGS.repeats)
    product = best_time(
        lambda: cross_kernel_values_into(Zs, Xs, 1.0, base, K), ARGS.repeats
    )
    joint = best_time(
        lambda: logit_joint(Xa, Za, theta, defaults, index, base, jitter, v, *rest),
        ARGS.repeats,
    )
    print(
        f"| {n} | {d} | {m} | {loop * 1e6:.1f} | {product * 1e6:.1f} | "
        f"{loop / product:.2f} | {joint * 1e6:.1f} |"
    )


def bench_svgp(n, d, m, loader=None):
    """The logit bound on breast cancer, or the softmax one on ``loader``'s data."""
    if loader is None:
        X, y, Z = _data(n, d, m)
        likelihood, label = Bernoulli(), "breast cancer"
    else:
        X, y = loader(return_X_y=True)
        X = (X - X.mean(axis=0)) / X.std(axis=0)
        Z = X[np.random.default_rng(0).choice(X.shape[0], m, replace=False)]
        n, d = X.shape
        likelihood, label = Softmax(np.unique(y).size), loader.__name__[5:]
    kernel = ConstantKernel() * RBF(np.ones(d))
    bound = SVGPBound(KernelAdapter(kernel), X, y, Z, likelihood)
    rng = np.random.default_rng(2)
    params = bound.initial_params(scale=0.6) + 0.1 * rng.normal(size=bound.n_params)
    one_call = None
    if bound._one_call:
        one_call = best_time(lambda: bound.logp_and_grad(params), ARGS.repeats)
    bound._one_call = False
    compiled = best_time(lambda: bound.logp_and_grad(params), ARGS.repeats)
    saved = bound._logit_rules, bound._softmax_labels
    bound._logit_rules = bound._softmax_labels = None
    interpreted = best_time(lambda: bound.logp_and_grad(params), ARGS.repeats)
    bound._logit_rules, bound._softmax_labels = saved
    fastest = compiled if one_call is None else one_call
    whole = "-" if one_call is None else f"{one_call * 1e6:.0f}"
    print(
        f"| {label} | {n} | {d} | {m} | {interpreted * 1e6:.0f} | "
        f"{compiled * 1e6:.0f} | {whole} | {interpreted / fastest:.2f} |"
    )


def main():
    with threadpool_limits(1, user_api="blas"):
        print(
            "| n | d | m | K(Z, X) by columns (us) | by one product (us) | ratio "
            "| logit_joint (us) |"
        )
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for size in SIZES:
            bench_joint(*size)
        print()
        print(
            "| data | n | d | m | SVGP bound, interpreted (us) | terms compiled "
            "(us) | one call (us) | interpreted / fastest |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for size in SIZES:
            bench_svgp(*size)
        for loader in (load_iris, load_wine):
            bench_svgp(None, None, 20, loader)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=300)
    ARGS = parser.parse_args()
    main()
