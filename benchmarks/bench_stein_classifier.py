"""Speed and quality of SteinGPClassifier against its peers, in one run.

Peers: scikit-learn's ``GaussianProcessClassifier`` (Laplace approximation
at the hyperparameters that maximise its approximate marginal likelihood;
one-vs-rest for several classes) with the same kernel family,
``ConstantKernel * RBF``, and one LAPACK Cholesky factorisation of the
training kernel matrix (the cost floor of every whitened-target step).

    python benchmarks/bench_stein_classifier.py            # everything
    python benchmarks/bench_stein_classifier.py --quick    # one seed, fewer repeats

Every problem is standardised on the training split (70/30). Prints
Markdown tables; ratios are against the peer measured in the same run.
"""

import argparse
import platform
import time
import warnings

import numpy as np
from _timing import best_time  # benchmarks/ is on sys.path when run as a script
from scipy.linalg import lapack
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from skgp_bayes import SteinGPClassifier
from skgp_bayes.inference import svgd_direction
from skgp_bayes.priors import LogNormal
from skgp_bayes.stein import _batch_evaluator


def _split(loader, seed):
    X, y = loader(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=0.3, random_state=seed, stratify=y
    )
    scaler = StandardScaler().fit(X_tr)
    return scaler.transform(X_tr), scaler.transform(X_te), y_tr, y_te


def _score(model, X_tr, y_tr, X_te, y_te):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X_tr, y_tr)
    fit_time = time.perf_counter() - start
    proba = model.predict_proba(X_te)
    return {
        "acc": accuracy_score(y_te, model.classes_[np.argmax(proba, axis=1)]),
        "loss": log_loss(y_te, proba, labels=model.classes_),
        "time": fit_time,
    }


def _models(seed, n_features, n_particles, max_iters):
    kernel = ConstantKernel(1.0) * RBF(float(np.sqrt(n_features)))
    models = [
        (
            "sklearn GPC (C*RBF, L-BFGS)",
            GaussianProcessClassifier(kernel, random_state=seed),
        ),
    ]
    for max_iter in max_iters:
        models.append(
            (
                f"SteinGPClassifier (J={n_particles}, {max_iter} iter)",
                SteinGPClassifier(
                    n_particles=n_particles, max_iter=max_iter, random_state=seed
                ),
            )
        )
    # The default Gamma(1, scale 2) priors pull the amplitude and the length
    # scale towards 2; with 13-30 standardised inputs the likelihood prefers
    # far larger values. A wide log-normal shows how much that prior costs.
    wide = {
        "k1__constant_value": LogNormal(0.0, 5.0),
        "k2__length_scale": LogNormal(0.0, 5.0),
    }
    models.append(
        (
            f"SteinGPClassifier (J={n_particles}, {max_iters[0]} iter, "
            "LogNormal(0, 5) priors)",
            SteinGPClassifier(
                n_particles=n_particles,
                max_iter=max_iters[0],
                priors=wide,
                random_state=seed,
            ),
        )
    )
    return models


def bench_dataset(name, loader, seeds, n_particles, max_iters):
    print(f"\n### {name}: 70/30 split, standardised\n")
    print("| seed | model | accuracy | test log loss | fit time (s) | time ratio |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    totals = {}
    for seed in seeds:
        X_tr, X_te, y_tr, y_te = _split(loader, seed)
        ref = None
        for label, model in _models(seed, X_tr.shape[1], n_particles, max_iters):
            with threadpool_limits(limits=1, user_api="blas"):
                res = _score(model, X_tr, y_tr, X_te, y_te)
            ref = ref or res
            ratio = res["time"] / ref["time"]
            print(
                f"| {seed} | {label} | {res['acc']:.4f} | {res['loss']:.4f} | "
                f"{res['time']:.2f} | {ratio:.2f} |"
            )
            acc = totals.setdefault(label, np.zeros(4))
            acc += [res["acc"], res["loss"], res["time"], ratio]
    print("| mean | | | | | |")
    for label, t in totals.items():
        t = t / len(seeds)
        print(f"| mean | {label} | {t[0]:.4f} | {t[1]:.4f} | {t[2]:.2f} | {t[3]:.2f} |")


def bench_svgd_iteration(particle_counts, repeats):
    """Cost of one SVGD iteration on breast cancer (n=398) vs J Cholesky."""
    X_tr, _, y_tr, _ = _split(load_breast_cancer, 0)
    clf = SteinGPClassifier(n_particles=1, max_iter=0, random_state=0)
    clf.fit(X_tr, y_tr)
    target = clf._target
    evaluate = _batch_evaluator(target)
    K, _ = target.gram(clf.particles_[0, : target.n_theta])
    n = X_tr.shape[0]
    rng = np.random.default_rng(1)
    with threadpool_limits(limits=1, user_api="blas"):
        t_chol = best_time(lambda: lapack.dpotrf(K, lower=1), repeats * 5)
        print(
            f"\n### One SVGD iteration, breast cancer train split (n={n}, "
            f"{target.n_params} parameters per particle), one BLAS thread\n"
        )
        print(f"One LAPACK dpotrf: {t_chol * 1e3:.2f} ms\n")
        print("| J | seconds | J x Cholesky | ratio |")
        print("| ---: | ---: | ---: | ---: |")
        for J in particle_counts:
            particles = clf.particles_ + 0.05 * rng.normal(size=(J, target.n_params))

            def iteration(particles=particles):
                _, grads = evaluate(particles)
                svgd_direction(particles, grads)

            t = best_time(iteration, repeats)
            print(f"| {J} | {t:.4f} | {J * t_chol:.4f} | {t / (J * t_chol):.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n-particles", type=int, default=10)
    parser.add_argument(
        "--max-iter",
        type=int,
        nargs="+",
        default=[30, 100],
        help="SVGD budgets to compare (30 is the default of the estimator)",
    )
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {platform.processor() or ''} "
        f"numpy {np.__version__}; BLAS limited to one thread for every model"
    )
    seeds = (0,) if args.quick else (0, 1, 2)
    repeats = 3 if args.quick else 7
    bench_svgd_iteration((1, 10, 20), repeats)
    for name, loader in (
        ("Breast cancer (n=569, d=30, 2 classes)", load_breast_cancer),
        ("Iris (n=150, d=4, 3 classes)", load_iris),
        ("Wine (n=178, d=13, 3 classes)", load_wine),
    ):
        bench_dataset(name, loader, seeds, args.n_particles, args.max_iter)


if __name__ == "__main__":
    main()
