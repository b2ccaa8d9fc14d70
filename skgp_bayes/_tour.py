"""The tour of ``python -m skgp_bayes``: three real tasks against scikit-learn.

Each task fits a fully Bayesian estimator with its defaults and its
scikit-learn peer on one split of a real data set in its natural units, and
scores both on the held-out rows by the same rules:

- regression (Concrete compressive strength): ``SteinGPRegressor`` against
  ``GaussianProcessRegressor`` (ARD kernel plus white noise,
  ``normalize_y=True``, nine optimizer restarts, standardised inputs);
- classification with string labels (Fisher's irises: 'setosa',
  'versicolor' or 'virginica'): ``SteinGPClassifier`` against
  ``GaussianProcessClassifier`` (ARD kernel, standardised inputs);
- counts (coal-mining disasters per bin): ``VariationalMCMCRegressor`` with a
  Poisson likelihood against ``GaussianProcessRegressor`` on the counts, whose
  Gaussian predictive is scored on the same integers (the probability of the
  unit interval around each count).

The scikit-learn peers get standardised inputs because a careful user would
give them that; the estimators here standardise their inputs themselves.
"""

import time
import warnings

import numpy as np
from scipy.special import ndtr
from scipy.stats import norm

__all__ = [
    "TASKS",
    "format_task",
    "peer_regressor",
    "plot_tasks",
    "run_task",
    "summary_line",
]

TASKS = ("regression", "classification", "counts")
# Training rows of the tour (a quick look) and of a task run on its own (the
# whole training split).
_TOUR_TRAIN = {"regression": 300, "classification": None, "counts": None}
_COVERAGE = 0.9


def _split(n, seed, test_fraction=0.3):
    order = np.random.RandomState(seed).permutation(n)
    n_test = int(round(test_fraction * n))
    return order[n_test:], order[:n_test]


def _cap(train, cap):
    return train if cap is None else train[:cap]


def _timed_fit(model, *args, **kwargs):
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(*args, **kwargs)
    return time.perf_counter() - start, sorted(
        {type(w.message).__name__ for w in caught}
    )


def peer_regressor(n_features, seed, n_restarts=9):
    """scikit-learn's ML-II regressor as the tour and the comparison fit it.

    ``GaussianProcessRegressor`` with ``ConstantKernel() * RBF(ones(d)) +
    WhiteKernel()``, ``normalize_y=True`` and ``n_restarts`` optimizer
    restarts, after a ``StandardScaler``.

    Examples
    --------
    >>> from skgp_bayes._tour import peer_regressor
    >>> peer_regressor(3, seed=0)[-1].n_restarts_optimizer
    9
    """
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    kernel = ConstantKernel() * RBF(np.ones(n_features)) + WhiteKernel()
    gpr = GaussianProcessRegressor(
        kernel, normalize_y=True, n_restarts_optimizer=n_restarts, random_state=seed
    )
    return make_pipeline(StandardScaler(), gpr)


def _gaussian_row(name, model, fit_time, warned, X, y, counts=False):
    mean, sd = model.predict(X, return_std=True)
    half = norm.ppf(0.5 + _COVERAGE / 2) * sd
    if counts:
        # The probability the Gaussian gives the unit interval around each
        # count, comparable with a count model's probability of that count.
        mass = ndtr((y + 0.5 - mean) / sd) - ndtr((y - 0.5 - mean) / sd)
        density = np.log(np.maximum(mass, np.finfo(float).tiny))
    else:
        density = norm.logpdf(y, mean, sd)
    return {
        "name": name,
        "point": float(np.sqrt(np.mean((y - mean) ** 2))),
        "density": float(np.mean(density)),
        "coverage": float(np.mean(np.abs(y - mean) <= half)),
        "fit_time": fit_time,
        "warnings": warned,
        "bands": (mean, mean - half, mean + half),
    }


def _own_regression_row(name, model, fit_time, warned, X, y, **predict_kwargs):
    mean = model.predict(X, **predict_kwargs)
    lower, upper = model.predict_interval(X, coverage=_COVERAGE, **predict_kwargs)
    return {
        "name": name,
        "point": float(np.sqrt(np.mean((y - mean) ** 2))),
        "density": float(np.mean(model.log_predictive_density(X, y, **predict_kwargs))),
        "coverage": float(np.mean((lower <= y) & (y <= upper))),
        "fit_time": fit_time,
        "warnings": warned,
        "bands": (mean, lower, upper),
    }


def _regression(full, seed):
    from .datasets import load_concrete
    from .stein import SteinGPRegressor

    data = load_concrete()
    X, y = data.data, data.target
    train, test = _split(X.shape[0], seed)
    train = _cap(train, None if full else _TOUR_TRAIN["regression"])
    ours = SteinGPRegressor(random_state=seed)
    peer = peer_regressor(X.shape[1], seed)
    t_ours, w_ours = _timed_fit(ours, X[train], y[train])
    t_peer, w_peer = _timed_fit(peer, X[train], y[train])
    rows = [
        _own_regression_row("SteinGPRegressor", ours, t_ours, w_ours, X[test], y[test]),
        _gaussian_row(
            "GaussianProcessRegressor", peer, t_peer, w_peer, X[test], y[test]
        ),
    ]
    return {
        "task": "regression",
        "title": "Concrete compressive strength (MPa) from eight mix inputs",
        "n_train": len(train),
        "n_test": len(test),
        "units": "MPa",
        "rows": rows,
        "y_test": y[test],
    }


def _classification(full, seed):
    from sklearn.datasets import load_iris
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    from sklearn.metrics import log_loss
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from .stein_classifier import SteinGPClassifier

    data = load_iris()
    X, labels = data.data, data.target_names[data.target]
    train, test = _split(X.shape[0], seed)
    train = _cap(train, None if full else _TOUR_TRAIN["classification"])
    ours = SteinGPClassifier(random_state=seed)
    peer = make_pipeline(
        StandardScaler(),
        GaussianProcessClassifier(
            ConstantKernel() * RBF(np.ones(X.shape[1])), random_state=seed
        ),
    )
    rows = []
    for name, model in (
        ("SteinGPClassifier", ours),
        ("GaussianProcessClassifier", peer),
    ):
        fit_time, warned = _timed_fit(model, X[train], labels[train])
        proba = model.predict_proba(X[test])
        classes = list(model.classes_)
        rows.append(
            {
                "name": name,
                "point": float(np.mean(model.predict(X[test]) == labels[test])),
                "density": float(log_loss(labels[test], proba, labels=classes)),
                "coverage": None,
                "fit_time": fit_time,
                "warnings": warned,
                "proba": proba,
                "classes": classes,
            }
        )
    return {
        "task": "classification",
        "title": "Iris species from sepal and petal lengths and widths (cm)",
        "n_train": len(train),
        "n_test": len(test),
        "units": None,
        "rows": rows,
        "y_test": labels[test],
    }


def _counts(full, seed):
    from .datasets import bin_coal_counts
    from .variational_mcmc import VariationalMCMCRegressor

    X, counts, width = bin_coal_counts()
    counts = counts.astype(np.float64)
    train, test = _split(X.shape[0], seed)
    ours = VariationalMCMCRegressor(likelihood="poisson", random_state=seed)
    peer = peer_regressor(1, seed)
    t_ours, w_ours = _timed_fit(ours, X[train], counts[train], exposure=width)
    t_peer, w_peer = _timed_fit(peer, X[train], counts[train])
    rows = [
        _own_regression_row(
            "VariationalMCMCRegressor (Poisson)",
            ours,
            t_ours,
            w_ours,
            X[test],
            counts[test],
            exposure=width,
        ),
        _gaussian_row(
            "GaussianProcessRegressor",
            peer,
            t_peer,
            w_peer,
            X[test],
            counts[test],
            counts=True,
        ),
    ]
    return {
        "task": "counts",
        "title": "Coal-mining disasters per 1.13-year bin, 1851-1962",
        "n_train": len(train),
        "n_test": len(test),
        "units": "disasters",
        "rows": rows,
        "y_test": counts[test],
        "x_test": X[test, 0],
    }


def run_task(task, full=False, seed=0):
    """Fit one task's Bayesian estimator and its scikit-learn peer, and score them.

    Parameters
    ----------
    task : {"regression", "classification", "counts"}
    full : bool, default=False
        Use the whole training split; the tour caps the regression at 300
        training rows.
    seed : int, default=0
        Seed of the split and of both models.

    Returns
    -------
    dict
        ``task``, ``title``, ``n_train``, ``n_test``, ``units`` and ``rows``:
        one dict per model with ``name``, ``point`` (RMSE, or accuracy for
        classification), ``density`` (mean log predictive density, or log
        loss for classification), ``coverage`` (of the central 90% interval;
        None for classification), ``fit_time`` (seconds) and ``warnings``
        (the warning classes the fit raised).

    Examples
    --------
    >>> from skgp_bayes._tour import run_task
    >>> result = run_task("counts")  # doctest: +SKIP
    >>> [row["name"] for row in result["rows"]]  # doctest: +SKIP
    ['VariationalMCMCRegressor (Poisson)', 'GaussianProcessRegressor']
    """
    runners = {
        "regression": _regression,
        "classification": _classification,
        "counts": _counts,
    }
    if task not in runners:
        raise ValueError(f"task must be one of {TASKS}; got {task!r}.")
    return runners[task](full, seed)


def format_task(result):
    """A task's result as a fixed-width table.

    Examples
    --------
    >>> from skgp_bayes._tour import format_task
    >>> row = {"name": "m", "point": 1.0, "density": -2.0, "coverage": 0.9,
    ...        "fit_time": 0.5, "warnings": []}
    >>> print(format_task({"task": "regression", "title": "t", "n_train": 3,
    ...                    "n_test": 2, "rows": [row]}))
    t (3 train / 2 test)
    model  RMSE  log density  90% coverage  fit (s)  warnings
    m      1.00        -2.00         90.0%     0.50  none
    """
    classification = result["task"] == "classification"
    point = "accuracy" if classification else "RMSE"
    density = "log loss" if classification else "log density"
    width = max(len("model"), *(len(r["name"]) for r in result["rows"]))
    head = [
        "model".ljust(width),
        point,
        density,
        "90% coverage",
        "fit (s)",
        "warnings",
    ]
    lines = [
        f"{result['title']} ({result['n_train']} train / {result['n_test']} test)",
        "  ".join(head),
    ]
    for row in result["rows"]:
        point_text = f"{row['point']:.3f}" if classification else f"{row['point']:.2f}"
        coverage = "-" if row["coverage"] is None else f"{row['coverage']:.1%}"
        cells = [
            row["name"].ljust(width),
            point_text.rjust(len(point)),
            f"{row['density']:.{3 if classification else 2}f}".rjust(len(density)),
            coverage.rjust(len("90% coverage")),
            f"{row['fit_time']:.2f}".rjust(len("fit (s)")),
            ", ".join(row["warnings"]) or "none",
        ]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def _task_gain(result):
    ours, peer = result["rows"]
    if result["task"] == "classification":
        return ours["density"] < peer["density"], (
            f"log loss {ours['density']:.3f} against {peer['density']:.3f}"
        )
    gain = ours["density"] - peer["density"]
    text = f"log density {gain:+.2f} nats a point"
    text += (
        f", 90% intervals holding {ours['coverage']:.0%} (peer {peer['coverage']:.0%})"
    )
    return gain > 0, text


def summary_line(results):
    """One sentence on what integrating over the posterior bought.

    Examples
    --------
    >>> from skgp_bayes._tour import summary_line
    >>> ours = {"density": -1.0, "coverage": 0.9, "fit_time": 2.0}
    >>> peer = {"density": -1.2, "coverage": 0.8, "fit_time": 1.0}
    >>> line = summary_line([{"task": "regression", "rows": [ours, peer]}])
    >>> line[:60]
    'Averaging over the posterior of the hyperparameters gave bet'
    >>> line[-53:]
    "(peer 80%)), for 2.0x scikit-learn's fit time in all."
    """
    better, parts = 0, []
    for result in results:
        won, text = _task_gain(result)
        better += bool(won)
        parts.append(f"{result['task']}: {text}")
    ours_time = sum(r["rows"][0]["fit_time"] for r in results)
    peer_time = sum(r["rows"][1]["fit_time"] for r in results)
    n = len(results)
    return (
        "Averaging over the posterior of the hyperparameters gave better "
        f"predictive distributions on {better} of {n} task{'s' if n != 1 else ''} "
        f"({'; '.join(parts)}), for {ours_time / peer_time:.1f}x scikit-learn's "
        "fit time in all."
    )


def plot_tasks(results, path):
    """Save one panel per task: calibration of each model on the test rows.

    Regression and counts: predictions against the truth with 90% intervals;
    classification: confidence against accuracy. Needs matplotlib (the
    ``examples`` extra).

    Examples
    --------
    >>> from skgp_bayes._tour import plot_tasks, run_task
    >>> plot_tasks([run_task("counts")], "tour.png")  # doctest: +SKIP
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "--plot needs matplotlib: pip install skgp_bayes[examples]."
        ) from exc
    from sklearn.calibration import calibration_curve

    colours = ("tab:blue", "tab:orange")
    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 4))
    axes = np.atleast_1d(axes)
    for ax, result in zip(axes, results, strict=True):
        y = result["y_test"]
        for row, colour in zip(result["rows"], colours, strict=True):
            if result["task"] == "classification":
                # Multiclass: confidence of the predicted class against how
                # often that class is right.
                picked = np.argmax(row["proba"], axis=1)
                right = np.asarray(row["classes"])[picked] == y
                frac, mean_p = calibration_curve(
                    right, row["proba"].max(axis=1), n_bins=5, strategy="quantile"
                )
                ax.plot(mean_p, frac, "o-", color=colour, label=row["name"])
                continue
            mean, lower, upper = row["bands"]
            shift = 0.15 if colour == colours[1] else 0.0
            ax.errorbar(
                y + shift,
                mean,
                yerr=[mean - lower, upper - mean],
                fmt="o",
                ms=3,
                alpha=0.6,
                color=colour,
                label=f"{row['name']} ({row['coverage']:.0%} inside)",
            )
        if result["task"] == "classification":
            ax.plot([0, 1], [0, 1], "k:", lw=1)
            ax.set(xlabel="confidence in the predicted class", ylabel="accuracy")
        else:
            ends = [y.min(), y.max()]
            ax.plot(ends, ends, "k:", lw=1)
            ax.set(
                xlabel=f"observed ({result['units']})",
                ylabel="predicted, 90% interval",
            )
        ax.set_title(result["task"])
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
