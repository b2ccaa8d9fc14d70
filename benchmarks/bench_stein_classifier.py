"""Speed and quality of SteinGPClassifier against its peers, in one run.

Peers: scikit-learn's ``GaussianProcessClassifier`` (Laplace approximation
at the hyperparameters that maximise its approximate marginal likelihood;
one-vs-rest for several classes) with the same kernel family,
``ConstantKernel * RBF``, and one LAPACK Cholesky factorisation of the
training kernel matrix (the cost floor of every whitened-target step).

    python benchmarks/bench_stein_classifier.py            # everything
    python benchmarks/bench_stein_classifier.py --quick    # one seed, fewer repeats
    python benchmarks/bench_stein_classifier.py --sparse   # sparse mode only
    python benchmarks/bench_stein_classifier.py --only-iteration  # #17, row 3
    python benchmarks/bench_stein_classifier.py --same-kernel     # #17, row 3's fit

Every problem is standardised on the training split (70/30). Prints
Markdown tables; ratios are against the peer measured in the same run.

``--same-kernel``: the default ``SteinGPClassifier`` given scikit-learn's
kernel, isotropic (``ConstantKernel * RBF(1.0)``) and ARD (one length
scale per input), against ``GaussianProcessClassifier`` with that kernel
(one-vs-rest for three classes), one BLAS thread each, the fits taken in
turn per split.

``--sparse``: the sparse mode (``inducing_points=100, batch_size=256``) on
two-moons data (noise 0.2, n = 5,000; a shared test set of 2,000) against
the exact SteinGPClassifier and scikit-learn's GaussianProcessClassifier.
Both peers are ``O(n^3)`` per step; at n = 5,000 they take about an hour on
two cores, so they run on the first ``--peer-n`` points (default 2,000, a
few minutes each), and the sparse model runs on those too for a same-data
comparison. Also times ``partial_fit`` over five chunks and the sparse fit
with ``n_jobs=1`` and ``n_jobs=2``. BLAS keeps its default threads here,
for every model alike.
"""

import argparse
import os
import platform
import time
import warnings

import numpy as np
from _timing import best_time  # benchmarks/ is on sys.path when run as a script
from _warm_up import warm_up
from scipy.linalg import lapack
from sklearn.datasets import load_breast_cancer, load_iris, load_wine, make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from skgp_bayes import SteinGPClassifier
from skgp_bayes._stein_base import batch_evaluator
from skgp_bayes.inference import svgd_direction
from skgp_bayes.inference.particles import ParticleEvaluator
from skgp_bayes.priors import LogNormal


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


def bench_same_kernel(seeds):
    """Default fits with scikit-learn's kernel, isotropic and ARD (#17, row 3)."""
    datasets = (
        ("breast cancer", load_breast_cancer),
        ("iris", load_iris),
        ("wine", load_wine),
    )
    print("\n### SteinGPClassifier against GaussianProcessClassifier, same kernel\n")
    print(
        "Both under one BLAS thread, the peer's quickest setting here; the "
        "Stein fit's particles go on threads as its default n_jobs=None "
        "decides. Isotropic rows also time the Stein fit with n_jobs=1 (every "
        "particle on one thread) and the peer with BLAS's default threads.\n"
    )
    print(
        "| data | kernel | seed | GPC fit (s) | Stein fit (s) | Stein / GPC | "
        "GPC log loss | Stein log loss | Stein iterations | Stein, n_jobs=1 / GPC "
        "| Stein / GPC on BLAS's threads |"
    )
    print(
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    # Untimed first fits (benchmarks/_warm_up.py): loading the compiled
    # kernels added 0.6-1.0 s to the first timed breast-cancer fit.
    warm_up(
        [("isotropic", "classification"), ("ARD", "classification")],
        lambda label, d: SteinGPClassifier(
            ConstantKernel(1.0) * RBF(1.0 if label == "isotropic" else np.ones(d))
        ),
        lambda message: None,
    )
    ratios = {}
    for name, loader in datasets:
        for seed in seeds:
            X_tr, X_te, y_tr, y_te = _split(loader, seed)
            d = X_tr.shape[1]
            for label, length in (("isotropic", 1.0), ("ARD", np.ones(d))):
                kernel = ConstantKernel(1.0) * RBF(length)
                peer = GaussianProcessClassifier(kernel, random_state=seed)
                stein = SteinGPClassifier(kernel, random_state=seed)
                with threadpool_limits(limits=1, user_api="blas"):
                    ref = _score(peer, X_tr, y_tr, X_te, y_te)
                    res = _score(stein, X_tr, y_tr, X_te, y_te)
                ratio = res["time"] / ref["time"]
                ratios.setdefault(label, []).append(ratio)
                extra = "- | -"
                if label == "isotropic":
                    serial = SteinGPClassifier(kernel, random_state=seed, n_jobs=1)
                    with threadpool_limits(limits=1, user_api="blas"):
                        one = _score(serial, X_tr, y_tr, X_te, y_te)
                    threaded = _score(peer, X_tr, y_tr, X_te, y_te)
                    extra = (
                        f"{one['time'] / ref['time']:.2f} | "
                        f"{res['time'] / threaded['time']:.2f}"
                    )
                print(
                    f"| {name} | {label} | {seed} | {ref['time']:.2f} | "
                    f"{res['time']:.2f} | {ratio:.2f} | {ref['loss']:.4f} | "
                    f"{res['loss']:.4f} | {stein.n_iter_} | {extra} |",
                    flush=True,
                )
    for label, values in ratios.items():
        print(
            f"\n{label}: Stein / GPC fit time from {min(values):.2f} to "
            f"{max(values):.2f} (median {np.median(values):.2f})"
        )


def bench_svgd_iteration(particle_counts, repeats):
    """Cost of one SVGD iteration on breast cancer (n=398) vs J Cholesky."""
    X_tr, _, y_tr, _ = _split(load_breast_cancer, 0)
    clf = SteinGPClassifier(n_particles=1, max_iter=0, random_state=0)
    clf.fit(X_tr, y_tr)
    target = clf._target
    n = X_tr.shape[0]
    # the fit's own evaluator (particles on threads where they pay), and one
    # that keeps every particle on this thread
    evaluators = {
        "default": batch_evaluator(target, clf, n),
        "one thread": ParticleEvaluator(target),
    }
    K, _ = target.gram(clf.particles_[0, : target.n_theta])
    rng = np.random.default_rng(1)
    with threadpool_limits(limits=1, user_api="blas"):
        t_chol = best_time(lambda: lapack.dpotrf(K, lower=1), repeats * 5)
        print(
            f"\n### One SVGD iteration, breast cancer train split (n={n}, "
            f"{target.n_params} parameters per particle), one BLAS thread\n"
        )
        print(f"One LAPACK dpotrf: {t_chol * 1e3:.2f} ms\n")
        print("| J | particles | seconds | J x Cholesky | ratio |")
        print("| ---: | --- | ---: | ---: | ---: |")
        for J in particle_counts:
            particles = clf.particles_ + 0.05 * rng.normal(size=(J, target.n_params))
            for label, evaluate in evaluators.items():

                def iteration(particles=particles, evaluate=evaluate):
                    _, grads = evaluate(particles)
                    svgd_direction(particles, grads)

                t = best_time(iteration, repeats)
                print(
                    f"| {J} | {label} | {t:.4f} | {J * t_chol:.4f} | "
                    f"{t / (J * t_chol):.2f} |"
                )
        for evaluate in evaluators.values():
            evaluate.close()


def _moons(n_train, n_test, seed=0):
    X, y = make_moons(n_train + n_test, noise=0.2, random_state=seed)
    scaler = StandardScaler().fit(X[:n_train])
    X = scaler.transform(X)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def _sparse_model(n_iter, n_jobs=None):
    return SteinGPClassifier(
        inducing_points=100,
        batch_size=256,
        n_particles=10,
        max_iter=n_iter,
        n_jobs=n_jobs,
        random_state=0,
    )


def _partial_score(model, X_tr, y_tr, X_te, y_te, n_chunks):
    order = np.random.default_rng(0).permutation(X_tr.shape[0])
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for chunk in np.array_split(order, n_chunks):
            model.partial_fit(X_tr[chunk], y_tr[chunk], classes=[0, 1])
    fit_time = time.perf_counter() - start
    proba = model.predict_proba(X_te)
    return {
        "acc": accuracy_score(y_te, np.argmax(proba, axis=1)),
        "loss": log_loss(y_te, proba, labels=[0, 1]),
        "time": fit_time,
    }


def bench_sparse(n_train, n_peer, n_iter, repeats):
    """Sparse + minibatch SVGD against the exact model and sklearn's GPC."""
    n_test = 2000
    X_tr, y_tr, X_te, y_te = _moons(n_train, n_test)
    kernel = ConstantKernel(1.0) * RBF(float(np.sqrt(2)))
    n_chunks = 5
    rows = [
        (
            "SteinGPClassifier exact (J=10, 30 iter)",
            n_peer,
            lambda: _score(
                SteinGPClassifier(n_particles=10, random_state=0),
                X_tr[:n_peer],
                y_tr[:n_peer],
                X_te,
                y_te,
            ),
        ),
        (
            "sklearn GPC (C*RBF, L-BFGS)",
            n_peer,
            lambda: _score(
                GaussianProcessClassifier(kernel, random_state=0),
                X_tr[:n_peer],
                y_tr[:n_peer],
                X_te,
                y_te,
            ),
        ),
        (
            f"SteinGPClassifier sparse (m=100, b=256, J=10, {n_iter} iter)",
            n_peer,
            lambda: _score(
                _sparse_model(n_iter), X_tr[:n_peer], y_tr[:n_peer], X_te, y_te
            ),
        ),
        (
            f"SteinGPClassifier sparse (m=100, b=256, J=10, {n_iter} iter)",
            n_train,
            lambda: _score(_sparse_model(n_iter), X_tr, y_tr, X_te, y_te),
        ),
        (
            f"SteinGPClassifier partial_fit ({n_chunks} chunks x "
            f"{n_iter // n_chunks} iter)",
            n_train,
            lambda: _partial_score(
                _sparse_model(n_iter // n_chunks), X_tr, y_tr, X_te, y_te, n_chunks
            ),
        ),
    ]
    print(
        f"\n### Sparse mode: two moons (noise 0.2), test set of {n_test}, "
        "BLAS default threads\n"
    )
    print(
        "| model | n train | accuracy | test log loss | fit time (s) | "
        "time / exact SteinGPClassifier |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    ref = None
    for label, n, run in rows:
        res = run()
        ref = ref or res["time"]  # the exact SteinGPClassifier runs first
        print(
            f"| {label} | {n} | {res['acc']:.4f} | {res['loss']:.4f} | "
            f"{res['time']:.2f} | {res['time'] / ref:.3f} |",
            flush=True,
        )

    print(f"\n### Sparse fit at n={n_train}: particle threads (best of {repeats})\n")
    print("| n_jobs | fit time (s) | ratio to n_jobs=1 |")
    print("| ---: | ---: | ---: |")
    times = {}
    for n_jobs in (1, 2):
        model = _sparse_model(n_iter, n_jobs=n_jobs)

        def fit(model=model):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(X_tr, y_tr)

        times[n_jobs] = best_time(fit, repeats)
        print(
            f"| {n_jobs} | {times[n_jobs]:.2f} | {times[n_jobs] / times[1]:.2f} |",
            flush=True,
        )
    faster = 1 if times[1] <= times[2] else 2
    print(f"\nFaster: n_jobs={faster}.")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--sparse",
        action="store_true",
        help="run only the sparse-mode comparison (two moons, n=5000)",
    )
    parser.add_argument(
        "--peer-n",
        type=int,
        default=2000,
        help="training points for the O(n^3) peers in --sparse",
    )
    parser.add_argument(
        "--sparse-iter",
        type=int,
        default=300,
        help="SVGD iterations of the sparse model in --sparse",
    )
    parser.add_argument(
        "--only-iteration",
        action="store_true",
        help="only one SVGD iteration against J Cholesky factorisations",
    )
    parser.add_argument(
        "--same-kernel",
        action="store_true",
        help="only the default fits with scikit-learn's kernel (#17, row 3)",
    )
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
        f"numpy {np.__version__}, {os.cpu_count()} cores; "
        + (
            "BLAS threads as by default for every model"
            if args.sparse
            else "BLAS limited to one thread for every model"
        )
    )
    seeds = (0,) if args.quick else (0, 1, 2)
    repeats = 3 if args.quick else 7
    if args.sparse:
        bench_sparse(
            2000 if args.quick else 5000,
            min(args.peer_n, 500) if args.quick else args.peer_n,
            args.sparse_iter,
            1 if args.quick else 2,
        )
        return
    if args.same_kernel:
        bench_same_kernel(seeds)
        return
    bench_svgd_iteration((1, 10, 20), repeats)
    if args.only_iteration:
        return
    for name, loader in (
        ("Breast cancer (n=569, d=30, 2 classes)", load_breast_cancer),
        ("Iris (n=150, d=4, 3 classes)", load_iris),
        ("Wine (n=178, d=13, 3 classes)", load_wine),
    ):
        bench_dataset(name, loader, seeds, args.n_particles, args.max_iter)


if __name__ == "__main__":
    main()
