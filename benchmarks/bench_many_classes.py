"""``VariationalMCMCClassifier.predict_proba`` beyond five classes: time and accuracy.

Fits the default classifier (``random_state=0``) on 300 stratified rows of
scikit-learn's ``digits`` (ten classes, 64 pixel intensities) and times
``predict_proba`` on 540 of the remaining rows, best of ``--repeats``
calls. Each kept posterior draw ``s`` gives every point a Gaussian latent
``F ~ N(mean_s, gamma_s I)``; the exact predictive is the average over
draws of ``E[softmax(F)]``. Its reference here, on the first
``--reference-points`` test rows, gives every draw its own 200 antithetic
nodes; their errors are independent between draws, so over 5,796 draws
the reference is as accurate as a million nodes (error sd at most 5e-4,
a softmax value's sd being at most 0.5). Printed: the seconds, the test
log loss, and the largest and root-mean-square differences from the
reference.

    PYTHONPATH=. python benchmarks/bench_many_classes.py

``--model PATH`` pickles the fitted model on the first run and loads it on
later ones, so that code before and after a change can be timed on the
same fit (the fit does not depend on the predictive).
"""

import argparse
import os
import pickle
import time

import numpy as np
from _timing import best_time  # benchmarks/ is on sys.path when run as a script
from sklearn.datasets import load_digits
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split

from skgp_bayes import VariationalMCMCClassifier


def _fitted(X, y, path):
    if path and os.path.exists(path):
        with open(path, "rb") as fh:
            return pickle.load(fh), float("nan")
    start = time.perf_counter()
    clf = VariationalMCMCClassifier(random_state=0).fit(X, y)
    seconds = time.perf_counter() - start
    if path:
        with open(path, "wb") as fh:
            pickle.dump(clf, fh)
    return clf, seconds


def _reference(clf, X, nodes_per_draw, seed=0):
    """Mean over draws of each draw's softmax expectation, own nodes each."""
    means, variances = clf._draw_moments(clf._validate_query(X))
    rng = np.random.default_rng(seed)
    total = np.zeros(means.shape[1:])
    for mean, var in zip(means, variances, strict=True):
        half = rng.standard_normal((nodes_per_draw // 2, mean.shape[1]))
        eps = np.concatenate([half, -half])
        f = mean[None] + np.sqrt(var)[None, :, None] * eps[:, None, :]
        p = np.exp(f - f.max(axis=-1, keepdims=True))
        total += (p / p.sum(axis=-1, keepdims=True)).mean(axis=0)
    return total / means.shape[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reference-points", type=int, default=60)
    parser.add_argument("--model", default=None)
    args = parser.parse_args()

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, train_size=300, random_state=0, stratify=y
    )
    X_test, y_test = X_test[:540], y_test[:540]
    clf, fit_seconds = _fitted(X_train, y_train, args.model)
    proba = clf.predict_proba(X_test)  # compiles on a fresh cache
    seconds = best_time(lambda: clf.predict_proba(X_test), args.repeats)
    k = args.reference_points
    error = proba[:k] - _reference(clf, X_test[:k], 200)
    print(f"kept draws: {clf.draws_.shape[0]}; fit: {fit_seconds:.1f} s")
    print("| predict_proba, 540 points (s) | test log loss | max error | RMS error |")
    print("| ---: | ---: | ---: | ---: |")
    print(
        f"| {seconds:.3f} | {log_loss(y_test, proba, labels=clf.classes_):.4f} "
        f"| {np.abs(error).max():.2e} | {np.sqrt(np.mean(error**2)):.2e} |"
    )


if __name__ == "__main__":
    main()
