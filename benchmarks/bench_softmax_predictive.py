"""Softmax class probabilities of the multi-class estimators: time and accuracy.

Fits each estimator with its defaults (``random_state=0``) on the defaults
suite's split of iris, wine and modechoice (three, three and four classes;
70/30, seed 0), then times ``predict_proba`` on the test rows (best of
``--repeats`` calls) and compares it with a reference. Every estimator's
predictive is a mixture over draws ``s`` (the Stein classifier's particles,
the variational MCMC classifier's kept draws, the selective classifier's
one ``q``) of ``E[softmax(F)]`` with ``F ~ N(mean_s, diag(var_s))``; the
reference gives every draw its own antithetic normal nodes, at least 200
and at least 400,000 in all, so that its error sd is at most about
``0.5 / sqrt(400,000) ~ 8e-4`` at one draw and less over many. Printed: the
seconds, the test log loss, and the largest and root-mean-square
differences from the reference; with ``--seeds N`` (current code only),
also the root-mean-square error over ``N`` seeds of the nodes, of the
current nodes and of the former ones (each draw's own antithetic random
pairs for the variational MCMC classifier, 256 antithetic random nodes
shared by every draw for the other two).

    PYTHONPATH=. python benchmarks/bench_softmax_predictive.py

``--models DIR`` pickles the fits on the first run and loads them on later
ones, so that code before and after a change can be timed on the same fits
(none of the fits depends on the predictive).
"""

import argparse
import os
import pickle
import time

import numpy as np
from _real_data import load_iris, load_modechoice, load_wine
from _timing import best_time  # benchmarks/ is on sys.path when run as a script
from bench_defaults import split
from numba import njit
from sklearn.metrics import log_loss

from skgp_bayes import (
    SelectiveSVGPClassifier,
    SteinGPClassifier,
    VariationalMCMCClassifier,
)
from skgp_bayes.likelihoods import standard_normal_draws

DATASETS = {"iris": load_iris, "wine": load_wine, "modechoice": load_modechoice}
ESTIMATORS = {
    "SteinGPClassifier": SteinGPClassifier,
    "SelectiveSVGPClassifier": SelectiveSVGPClassifier,
    "VariationalMCMCClassifier": VariationalMCMCClassifier,
}
REFERENCE_NODES = 20_000_000


def _fitted(name, data_name, X, y, directory):
    path = os.path.join(directory, f"{name}_{data_name}.pkl") if directory else None
    if path and os.path.exists(path):
        with open(path, "rb") as fh:
            return pickle.load(fh), float("nan")
    start = time.perf_counter()
    model = ESTIMATORS[name](random_state=0).fit(X, y)
    seconds = time.perf_counter() - start
    if path:
        with open(path, "wb") as fh:
            pickle.dump(model, fh)
    return model, seconds


def _draw_moments(model, X):
    """Means and variances ``(S, n, C)`` of every draw of the predictive."""
    if isinstance(model, SteinGPClassifier):
        means, variances = model._draws.moments(model._validate_query(X))
        return means.transpose(0, 2, 1), variances.transpose(0, 2, 1)
    if isinstance(model, SelectiveSVGPClassifier):
        means, variances = model._latent(X)
        return means[None], variances[None]
    means, variances = model._draw_moments(model._validate_query(X))
    return means, np.broadcast_to(variances[..., None], means.shape)


@njit(cache=False)
def _mixture_reference(means, sd, pairs, rng):
    """Each draw's softmax expectation over its own ``2 pairs`` antithetic
    normal nodes (shared by the points), averaged over the draws."""
    S, n, C = means.shape
    out = np.zeros((n, C))
    eps = np.empty(C)
    f = np.empty(C)
    for s in range(S):
        for _ in range(pairs):
            for c in range(C):
                eps[c] = rng.standard_normal()
            for sign in (1.0, -1.0):
                for i in range(n):
                    top = -np.inf
                    for c in range(C):
                        f[c] = means[s, i, c] + sign * sd[s, i, c] * eps[c]
                        top = max(top, f[c])
                    total = 0.0
                    for c in range(C):
                        f[c] = np.exp(f[c] - top)
                        total += f[c]
                    for c in range(C):
                        out[i, c] += f[c] / total
    return out / (S * 2.0 * pairs)


def _reference(means, variances, seed=0):
    sd = np.sqrt(np.maximum(variances, 0.0))
    pairs = max(100, -(-REFERENCE_NODES // (2 * means.shape[0])))
    return _mixture_reference(
        np.ascontiguousarray(means),
        np.ascontiguousarray(sd),
        pairs,
        np.random.default_rng(seed),
    )


def _former_proba(model, means, variances, seed):
    """The nodes before quasi-random blocks: each kept draw's own antithetic
    pairs of random nodes (the variational MCMC classifier, at least 1,000
    in all), or 256 antithetic random nodes shared by every particle."""
    from skgp_bayes.targets._softmax_rule import _mean_proba

    n_draws, _, n_classes = means.shape
    if isinstance(model, VariationalMCMCClassifier):
        pairs = max(1, -(-1000 // (2 * n_draws)))
        half = np.random.default_rng(seed).standard_normal((n_draws, pairs, n_classes))
        nodes = np.concatenate([half, -half], axis=1)
    else:
        nodes = standard_normal_draws(256, n_classes, random_state=seed)[None]
    nodes = np.ascontiguousarray(nodes)
    weights = np.full(nodes.shape[1], 1.0 / nodes.shape[1])
    return _mean_proba(means, variances, nodes, weights)


def _seed_spread(model, means, variances, reference, n_seeds):
    """RMS error over ``n_seeds`` seeds of the nodes, current and former."""
    from skgp_bayes.targets.sparse import softmax_mixture_proba

    means = np.ascontiguousarray(means)
    variances = np.ascontiguousarray(np.maximum(variances, 1e-12))
    rms = {"now": [], "former": []}
    for seed in range(n_seeds):
        for key, proba in (
            ("now", softmax_mixture_proba(means, variances, random_state=seed)),
            ("former", _former_proba(model, means, variances, seed)),
        ):
            rms[key].append(np.sqrt(np.mean((proba - reference) ** 2)))
    return {key: np.sqrt(np.mean(np.square(v))) for key, v in rms.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", default=None)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--estimators", default=",".join(ESTIMATORS))
    parser.add_argument(
        "--seeds",
        type=int,
        default=0,
        help="also print the RMS error over this many seeds of the nodes, "
        "with the current nodes and the former ones (current code only)",
    )
    args = parser.parse_args()
    if args.models:
        os.makedirs(args.models, exist_ok=True)

    extra = " RMS over seeds, now | former |" if args.seeds else ""
    print(
        "| data | estimator | draws | fit (s) | predict_proba (s) | test log loss "
        "| max error | RMS error |" + extra
    )
    print(
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
        + " ---: |" * (2 if args.seeds else 0)
    )
    for data_name in args.datasets.split(","):
        X_train, X_test, y_train, y_test = split(DATASETS[data_name](), 0.3, 300, 0)
        for name in args.estimators.split(","):
            model, fit_seconds = _fitted(name, data_name, X_train, y_train, args.models)
            proba = model.predict_proba(X_test)  # compiles on a fresh cache
            seconds = best_time(
                lambda m=model, Xq=X_test: m.predict_proba(Xq), args.repeats
            )
            means, variances = _draw_moments(model, X_test)
            reference = _reference(means, variances)
            error = proba - reference
            draws = means.shape[0]
            loss = log_loss(y_test, proba, labels=model.classes_)
            spread = ""
            if args.seeds:
                rms = _seed_spread(model, means, variances, reference, args.seeds)
                spread = f" {rms['now']:.2e} | {rms['former']:.2e} |"
            print(
                f"| {data_name} | {name} | {draws} | {fit_seconds:.1f} "
                f"| {seconds:.4f} | {loss:.5f} | {np.abs(error).max():.2e} "
                f"| {np.sqrt(np.mean(error**2)):.2e} |{spread}",
                flush=True,
            )


if __name__ == "__main__":
    main()
