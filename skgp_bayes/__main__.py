"""Command line entry point: ``python -m skgp_bayes``.

Without arguments it runs the tour (:mod:`skgp_bayes._tour`): a regression,
a classification with string labels and a count data set, each fully
Bayesian estimator against its scikit-learn peer, ending with one line on
what the Bayesian answer bought. ``python -m skgp_bayes regression`` (or
``classification``, ``counts``) runs one task on its whole training split;
``--plot FILE`` saves the figure of the run.

The options of the single comparison (``--data``, ``--target``,
``--n-particles``, ...) fit :class:`skgp_bayes.stein.SteinGPRegressor` to a
bundled data set or a CSV file on a fixed train/test split and print a
table against scikit-learn's ``GaussianProcessRegressor``.

Run ``python -m skgp_bayes --help`` for the options.
"""

import argparse
import csv
import functools
import os
import sys
import time

import numpy as np

from ._compile_time import compile_seconds

__all__ = [
    "build_parser",
    "build_tour_parser",
    "load_data",
    "fit_stein",
    "fit_sklearn",
    "gaussian_log_density",
    "format_table",
    "main",
]

_BUILTIN = ("concrete", "mcycle")
_TOUR_COMMANDS = ("tour", "regression", "classification", "counts")
# Options that the tour understands; any other option asks for the single
# SteinGPRegressor comparison that was the whole command before the tour.
_TOUR_OPTIONS = ("--seed", "--quiet", "--plot")


def build_parser():
    """Build the argument parser of ``python -m skgp_bayes``.

    Returns
    -------
    parser : argparse.ArgumentParser
        The parser; ``parse_args`` gives the options used by :func:`main`.

    Examples
    --------
    >>> from skgp_bayes.__main__ import build_parser
    >>> args = build_parser().parse_args(["--data", "mcycle", "--seed", "3"])
    >>> args.data, args.seed, args.n_particles, args.test_size
    ('mcycle', 3, 10, 0.3)
    """
    parser = argparse.ArgumentParser(
        prog="python -m skgp_bayes",
        description=(
            "Fit a fully Bayesian GP (SteinGPRegressor, hyperparameters "
            "integrated out by Stein variational gradient descent) on a fixed "
            "train/test split and compare it with scikit-learn's "
            "GaussianProcessRegressor (hyperparameters by maximum marginal "
            "likelihood). Inputs are standardised; the kernel is "
            "ConstantKernel() * RBF with one lengthscale per input."
        ),
    )
    _add_data_options(parser)
    _add_model_options(parser)
    parser.epilog = (
        "Without these options the command runs the tour: "
        "'python -m skgp_bayes [tour|regression|classification|counts] "
        "[--plot FILE] [--seed N] [--quiet]'; see 'python -m skgp_bayes tour "
        "--help'."
    )
    return parser


def _add_data_options(parser):
    """The data, the split and the seed."""
    parser.add_argument(
        "--data",
        default="concrete",
        help=(
            "'concrete' (1030 x 8, the default), 'mcycle' (133 x 1), or the "
            "path to a CSV file with a header row and numeric columns."
        ),
    )
    parser.add_argument(
        "--target",
        default=None,
        help="Target column of a CSV file (default: the last column).",
    )
    parser.add_argument(
        "--test-size",
        type=float,
        default=0.3,
        help="Fraction of rows held out for testing (default: 0.3).",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="Seed of the split and of both estimators (default: 0).",
    )


def _add_model_options(parser):
    """The Stein fit, the baseline and the output."""
    parser.add_argument(
        "--n-particles",
        type=int,
        default=10,
        help="SVGD particles (hyperparameter draws) (default: 10).",
    )
    parser.add_argument(
        "--max-iter",
        type=int,
        default=None,
        help="SVGD iterations (default: the estimator's default).",
    )
    parser.add_argument(
        "--init",
        choices=("map", "prior"),
        default="map",
        help=(
            "Start the particles around the MAP estimate or draw them from "
            "the prior (default: map)."
        ),
    )
    parser.add_argument(
        "--n-restarts",
        type=int,
        default=9,
        help=(
            "Optimiser restarts of scikit-learn's GaussianProcessRegressor "
            "(default: 9)."
        ),
    )
    parser.add_argument(
        "--no-sklearn",
        action="store_true",
        help="Skip the scikit-learn baseline.",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="Print only the results table.",
    )


def build_tour_parser():
    """Build the parser of the tour and of its single tasks.

    Returns
    -------
    parser : argparse.ArgumentParser

    Examples
    --------
    >>> from skgp_bayes.__main__ import build_tour_parser
    >>> args = build_tour_parser().parse_args(["counts", "--plot", "c.png"])
    >>> args.task, args.plot, args.seed
    ('counts', 'c.png', 0)
    """
    parser = argparse.ArgumentParser(
        prog="python -m skgp_bayes",
        description=(
            "Fully Bayesian GPs against scikit-learn's GPs on three real data "
            "sets in their natural units: a regression (Concrete), a "
            "classification with string labels (breast cancer) and counts "
            "(coal-mining disasters). 'tour' (the default) runs all three at a "
            "quick size; a task name runs that task on its whole training "
            "split. For the single SteinGPRegressor comparison on a bundled "
            "data set or a CSV file, see --data in 'python -m skgp_bayes "
            "--help'."
        ),
    )
    parser.add_argument("task", nargs="?", default="tour", choices=_TOUR_COMMANDS)
    parser.add_argument(
        "--plot", default=None, metavar="FILE", help="Save the figure of the run."
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="Seed of the splits and models."
    )
    parser.add_argument(
        "--quiet", action="store_true", help="Print only the tables and summary."
    )
    return parser


def _wants_tour(argv):
    if argv and argv[0] in _TOUR_COMMANDS:
        return True
    options = [a.split("=")[0] for a in argv if a.startswith("-")]
    return all(option in _TOUR_OPTIONS for option in options)


def _run_tour(argv):
    from . import _tour

    args = build_tour_parser().parse_args(argv)
    tasks = _tour.TASKS if args.task == "tour" else (args.task,)
    full = args.task != "tour"
    results = []
    start = time.perf_counter()
    with compile_seconds() as compiling:
        for task in tasks:
            if not args.quiet:
                print(f"fitting the {task} task ...", flush=True)
            result = _tour.run_task(task, full=full, seed=args.seed)
            results.append(result)
            print("\n" + _tour.format_task(result) + "\n", flush=True)
    print(_tour.summary_line(results))
    if not args.quiet:
        print(
            f"\n({time.perf_counter() - start:.0f} s in all"
            + _compiling_clause(compiling[0])
            + ". RMSE in the units of the target; log density: mean log "
            "predictive density of the test targets, observation noise included, "
            "higher is better; log loss: lower is better; coverage: share of test "
            "targets inside the central 90% predictive interval.)"
        )
    if args.plot:
        _tour.plot_tasks(results, args.plot)
        if not args.quiet:
            print(f"figure saved to {args.plot}")
    sys.stdout.flush()
    return 0


def _compiling_clause(seconds):
    """The share of a run spent compiling, which only a first run pays."""
    if seconds < 1.0:
        return ""
    return (
        f", {seconds:.0f} s of it compiling the numerical kernels, as the first "
        "run after an installation does (fit times include it; later runs load "
        "them from the cache)"
    )


def _decode(path):
    """The file's text; an error names the line of a byte that is not UTF-8."""
    with open(path, "rb") as handle:
        raw = handle.read()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise ValueError(
            f"{path}, line {line}: not UTF-8 text ({err.reason} at byte {err.start})."
        ) from None


def _records(path, text):
    """``(line, fields)`` for each non-blank record; ``line`` is 1-based.

    ``line`` is where the record starts, which matters when a quoted field
    spans lines.
    """
    reader = csv.reader(text.splitlines(keepends=True))
    records, line = [], 1
    try:
        for fields in reader:
            if any(cell.strip() for cell in fields):
                records.append((line, fields))
            line = reader.line_num + 1
    except csv.Error as err:
        raise ValueError(f"{path}, line {reader.line_num}: {err}.") from None
    return records


def _check_header(path, line, header):
    if len(header) < 2:
        raise ValueError(
            f"{path}, line {line}: need at least one feature column and a "
            f"target column; found the columns {header}."
        )
    seen = {}
    for j, name in enumerate(header, start=1):
        if not name:
            raise ValueError(f"{path}, line {line}, column {j}: empty column name.")
        if name in seen:
            raise ValueError(
                f"{path}, line {line}, column {j} ({name!r}): the same name as "
                f"column {seen[name]}."
            )
        seen[name] = j


def _cell_value(where, cell):
    """The number in one cell, or a ValueError naming ``where``."""
    text = cell.strip()
    if not text:
        raise ValueError(f"{where}: empty cell.")
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}: could not read {text!r} as a number.") from None
    if not np.isfinite(value):
        raise ValueError(f"{where}: {text!r} is not a finite number.")
    return value


def _row_values(path, line, fields, header, header_line):
    if len(fields) != len(header):
        raise ValueError(
            f"{path}, line {line}: {len(fields)} fields, expected {len(header)} "
            f"as in the header on line {header_line}."
        )
    return [
        _cell_value(f"{path}, line {line}, column {j} ({name!r})", cell)
        for j, (name, cell) in enumerate(zip(header, fields, strict=True), start=1)
    ]


def _read_csv(path, target=None):
    """Read a numeric CSV file with a header into X, y and the column names.

    Every error names the file, the 1-based line and, for a cell, the
    column by 1-based index and header name.
    """
    records = _records(path, _decode(path))
    if not records:
        raise ValueError(
            f"{path}: the file is empty; expected a header line and at least 2 "
            "rows of numbers."
        )
    header_line, header = records[0]
    header = [name.strip() for name in header]
    _check_header(path, header_line, header)
    if target is None:
        target = header[-1]
    if target not in header:
        raise ValueError(
            f"{path}: no column named {target!r}; the columns are {header}."
        )
    rows = records[1:]
    if len(rows) < 2:
        raise ValueError(
            f"{path}: {len(rows)} data row{'s' if len(rows) != 1 else ''} after "
            f"the header on line {header_line}; need at least 2."
        )
    values = np.array(
        [_row_values(path, line, fields, header, header_line) for line, fields in rows],
        dtype=np.float64,
    )
    j = header.index(target)
    feature_names = header[:j] + header[j + 1 :]
    return np.delete(values, j, axis=1), values[:, j], feature_names, target


def load_data(data="concrete", target=None):
    """Load a bundled data set by name, or a CSV file by path.

    Parameters
    ----------
    data : str, default="concrete"
        ``"concrete"``, ``"mcycle"`` or the path to a CSV file with a header
        row and numeric columns.
    target : str, default=None
        Target column of a CSV file; None takes the last column. Must be None
        for the bundled data sets.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    description : str
        A one-line description of the data for the report.

    Examples
    --------
    >>> from skgp_bayes.__main__ import load_data
    >>> X, y, description = load_data("mcycle")
    >>> X.shape, description
    ((133, 1), 'mcycle: 133 rows, 1 feature (times), target accel')
    """
    if data in _BUILTIN and not os.path.isfile(data):
        if target is not None:
            raise ValueError("--target applies to CSV files only.")
        from .datasets import load_concrete, load_mcycle

        loader = {"concrete": load_concrete, "mcycle": load_mcycle}[data]
        bunch = loader()
        X, y = bunch.data, bunch.target
        feature_names, target = bunch.feature_names, bunch.target_names[0]
        name = data
    elif os.path.isfile(data):
        X, y, feature_names, target = _read_csv(data, target)
        name = os.path.basename(data)
    elif os.path.isdir(data):
        raise ValueError(f"{data}: a directory, not a CSV file.")
    else:
        raise ValueError(
            f"{data}: no such file (--data takes {', '.join(_BUILTIN)} or the "
            "path of a CSV file)."
        )
    n_features = X.shape[1]
    shown = ", ".join(feature_names[:4]) + (", ..." if n_features > 4 else "")
    description = (
        f"{name}: {X.shape[0]} rows, {n_features} feature"
        f"{'s' if n_features != 1 else ''} ({shown}), target {target}"
    )
    return X, y, description


def gaussian_log_density(y, mean, std):
    """Mean log density of ``y`` under independent normals ``N(mean, std^2)``.

    Parameters
    ----------
    y, mean, std : array-like of shape (n_samples,)
        Observations, predictive means and predictive standard deviations
        (observation noise included).

    Returns
    -------
    lpd : float
        ``mean_i log N(y_i; mean_i, std_i^2)``.

    Examples
    --------
    >>> from skgp_bayes.__main__ import gaussian_log_density
    >>> round(gaussian_log_density([0.0], [0.0], [1.0]), 4)
    -0.9189
    """
    y, mean, std = (np.asarray(a, dtype=np.float64) for a in (y, mean, std))
    var = std**2
    return float(np.mean(-0.5 * np.log(2 * np.pi * var) - 0.5 * (y - mean) ** 2 / var))


def _ard_kernel(n_features):
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    return ConstantKernel() * RBF(np.ones(n_features))


def fit_stein(
    X_train,
    y_train,
    X_test,
    y_test,
    *,
    n_particles=10,
    max_iter=None,
    init="map",
    map_restarts=None,
    seed=0,
    verbose=0,
):
    """Fit SteinGPRegressor on standardised inputs and score it on test data.

    Parameters
    ----------
    X_train, y_train, X_test, y_test : ndarray
        The split data.
    n_particles : int, default=10
        SVGD particles.
    max_iter : int, default=None
        SVGD iterations; None keeps the estimator's default.
    init : {"map", "prior"}, default="map"
        Particle initialisation.
    map_restarts : int, default=None
        ``n_restarts`` of the estimator (extra MAP searches from prior
        draws); None keeps its default.
    seed : int, default=0
        ``random_state`` of the estimator.
    verbose : int, default=0
        Passed to the estimator (1 shows its progress line).

    Returns
    -------
    result : dict
        ``name``, ``rmse``, ``lpd``, ``fit_time`` (seconds), ``n_iter`` and the
        fitted ``model`` (a Pipeline).

    Examples
    --------
    >>> from skgp_bayes.__main__ import fit_stein, load_data
    >>> X, y, _ = load_data("mcycle")
    >>> result = fit_stein(X[::2], y[::2], X[1::2], y[1::2],
    ...                    n_particles=2, max_iter=5)
    >>> sorted(result)
    ['fit_time', 'lpd', 'model', 'n_iter', 'name', 'rmse']
    """
    model = _stein_pipeline(
        X_train.shape[1], n_particles, max_iter, init, map_restarts, seed, verbose
    )
    start = time.perf_counter()
    model.fit(X_train, y_train)
    fit_time = time.perf_counter() - start

    gp = model[-1]
    mean = model.predict(X_test)
    # The predictive is a mixture over particles, not a normal, so its own
    # log density is used rather than N(mean, std^2).
    lpd = float(
        np.mean(gp.log_predictive_density(model[:-1].transform(X_test), y_test))
    )
    return {
        "name": f"SteinGPRegressor ({n_particles} particles)",
        "rmse": float(np.sqrt(np.mean((y_test - mean) ** 2))),
        "lpd": lpd,
        "fit_time": fit_time,
        "n_iter": getattr(gp, "n_iter_", None),
        "model": model,
    }


def _stein_pipeline(
    n_features, n_particles, max_iter, init, map_restarts, seed, verbose
):
    """Standardised inputs into a SteinGPRegressor; None keeps a default."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    from .stein import SteinGPRegressor

    params = {
        "kernel": _ard_kernel(n_features),
        "n_particles": n_particles,
        "init": init,
        "random_state": seed,
        "verbose": verbose,
    }
    if max_iter is not None:
        params["max_iter"] = max_iter
    if map_restarts is not None:
        params["n_restarts"] = map_restarts
    return Pipeline([("scale", StandardScaler()), ("gp", SteinGPRegressor(**params))])


def fit_sklearn(X_train, y_train, X_test, y_test, *, n_restarts=9, seed=0):
    """Fit scikit-learn's GaussianProcessRegressor (type-II ML) and score it.

    The kernel is ``ConstantKernel() * RBF(np.ones(d)) + WhiteKernel()`` with
    ``normalize_y=True`` on standardised inputs. Its predictive standard
    deviation includes the fitted ``WhiteKernel`` noise, so the log density is
    that of new observations, comparable with the Stein row.

    Parameters
    ----------
    X_train, y_train, X_test, y_test : ndarray
        The split data.
    n_restarts : int, default=9
        ``n_restarts_optimizer``.
    seed : int, default=0
        ``random_state`` (draws the restart points).

    Returns
    -------
    result : dict
        ``name``, ``rmse``, ``lpd``, ``fit_time`` (seconds), ``n_iter`` (None)
        and the fitted ``model`` (a Pipeline).

    Examples
    --------
    >>> from skgp_bayes.__main__ import fit_sklearn, load_data
    >>> X, y, _ = load_data("mcycle")
    >>> result = fit_sklearn(X[::2], y[::2], X[1::2], y[1::2], n_restarts=0)
    >>> bool(result["rmse"] < 40)
    True
    """
    from ._tour import peer_regressor

    model = peer_regressor(X_train.shape[1], seed, n_restarts=n_restarts)
    start = time.perf_counter()
    model.fit(X_train, y_train)
    fit_time = time.perf_counter() - start

    mean, std = model.predict(X_test, return_std=True)
    return {
        "name": "GaussianProcessRegressor (ML-II)",
        "rmse": float(np.sqrt(np.mean((y_test - mean) ** 2))),
        "lpd": gaussian_log_density(y_test, mean, std),
        "fit_time": fit_time,
        "n_iter": None,
        "model": model,
    }


def format_table(results):
    """Format result dicts as a fixed-width text table.

    Parameters
    ----------
    results : list of dict
        Dicts with keys ``name``, ``rmse``, ``lpd`` and ``fit_time``.

    Returns
    -------
    table : str
        One header line, a rule and one line per result.

    Examples
    --------
    >>> from skgp_bayes.__main__ import format_table
    >>> print(format_table([{"name": "model", "rmse": 1.0, "lpd": -1.5,
    ...                      "fit_time": 0.25}]))
    model  test RMSE  test LPD  fit time (s)
    -----  ---------  --------  ------------
    model     1.0000   -1.5000          0.25
    """
    headers = ("test RMSE", "test LPD", "fit time (s)")
    name_width = max([len("model")] + [len(r["name"]) for r in results])
    lines = [
        "  ".join(["model".ljust(name_width), *headers]),
        "  ".join(["-" * name_width, *("-" * len(h) for h in headers)]),
    ]
    for r in results:
        cells = (f"{r['rmse']:.4f}", f"{r['lpd']:.4f}", f"{r['fit_time']:.2f}")
        lines.append(
            "  ".join(
                [r["name"].ljust(name_width)]
                + [c.rjust(len(h)) for c, h in zip(cells, headers, strict=True)]
            )
        )
    return "\n".join(lines)


def _check_args(parser, args):
    if not 0.0 < args.test_size < 1.0:
        parser.error(f"--test-size must lie in (0, 1); got {args.test_size}.")
    if args.n_particles < 1:
        parser.error(f"--n-particles must be at least 1; got {args.n_particles}.")
    if args.max_iter is not None and args.max_iter < 1:
        parser.error(f"--max-iter must be at least 1; got {args.max_iter}.")
    if args.n_restarts < 0:
        parser.error(f"--n-restarts must be at least 0; got {args.n_restarts}.")


def main(argv=None):
    """Run the tour, one of its tasks, or the single comparison.

    Parameters
    ----------
    argv : list of str, default=None
        Command line arguments without the program name; None reads
        ``sys.argv[1:]``.

    Returns
    -------
    status : int
        0 on success. Invalid options or data exit through ``argparse`` with
        status 2.

    Examples
    --------
    >>> from skgp_bayes.__main__ import main
    >>> main(["--data", "mcycle", "--n-particles", "2", "--max-iter", "5",
    ...       "--n-restarts", "0", "--quiet"])  # doctest: +SKIP
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if _wants_tour(argv):
        return _run_tour(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_args(parser, args)
    try:
        X, y, description = load_data(args.data, args.target)
    except (OSError, ValueError) as err:
        parser.error(str(err))
    return _compare(args, X, y, description)


def _say(quiet, message):
    if not quiet:
        print(message, flush=True)


def _compare(args, X, y, description):
    """The single comparison: split, fit both models, print the table."""
    from sklearn.model_selection import train_test_split

    say = functools.partial(_say, args.quiet)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=args.test_size, random_state=args.seed
    )
    say(description)
    say(
        f"split: {len(y_train)} train / {len(y_test)} test "
        f"(test_size={args.test_size}, seed={args.seed})"
    )
    data = (X_train, y_train, X_test, y_test)
    results = [_run_stein(args, data, say)]
    if not args.no_sklearn:
        results.append(_run_sklearn(args, data, say))
    say("")
    print(format_table(results))
    if not args.quiet:
        print(
            "\nRMSE: in the units of the target, lower is better.\n"
            "LPD: mean log predictive density of the test targets, observation "
            "noise included, higher is better."
        )
    sys.stdout.flush()
    return 0


def _run_stein(args, data, say):
    say(
        f"fitting SteinGPRegressor: {args.n_particles} particles, "
        f"init={args.init}"
        + (f", max_iter={args.max_iter}" if args.max_iter is not None else "")
    )
    stein = fit_stein(
        *data,
        n_particles=args.n_particles,
        max_iter=args.max_iter,
        init=args.init,
        seed=args.seed,
        verbose=0 if args.quiet else 1,
    )
    iters = f" in {stein['n_iter']} iterations" if stein["n_iter"] is not None else ""
    say(f"  done{iters}, {stein['fit_time']:.2f} s")
    return stein


def _run_sklearn(args, data, say):
    say(
        "fitting GaussianProcessRegressor: "
        f"{args.n_restarts} optimiser restart"
        f"{'s' if args.n_restarts != 1 else ''}"
    )
    baseline = fit_sklearn(*data, n_restarts=args.n_restarts, seed=args.seed)
    say(f"  done, {baseline['fit_time']:.2f} s")
    say(f"  fitted kernel: {baseline['model'][-1].kernel_}")
    return baseline


if __name__ == "__main__":
    sys.exit(main())
