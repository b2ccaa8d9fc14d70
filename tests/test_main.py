"""Tests of ``python -m skgp_bayes``; they need skgp_bayes.stein."""

import subprocess
import sys

import numpy as np
import pytest

from skgp_bayes.__main__ import (
    build_parser,
    format_table,
    gaussian_log_density,
    load_data,
    main,
)

# Five iterations cannot converge; the warning saying so is expected.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

FAST = ["--max-iter", "5", "--n-particles", "2", "--n-restarts", "0", "--quiet"]


def test_help_runs_as_module():
    result = subprocess.run(
        [sys.executable, "-m", "skgp_bayes", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "--n-particles" in result.stdout
    assert "--no-sklearn" in result.stdout


def test_main_mcycle_prints_both_rows(capsys):
    assert main(["--data", "mcycle", *FAST]) == 0
    out = capsys.readouterr().out
    assert "SteinGPRegressor" in out
    assert "GaussianProcessRegressor" in out
    assert "test RMSE" in out and "test LPD" in out
    # --quiet prints the table only: header, rule and two rows.
    assert len(out.strip().splitlines()) == 4
    for line in out.strip().splitlines()[2:]:
        rmse, lpd, seconds = (float(v) for v in line.split()[-3:])
        assert np.isfinite(rmse) and rmse > 0
        assert np.isfinite(lpd)
        assert seconds >= 0


def test_main_csv_path(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(40, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(40)
    path = tmp_path / "toy.csv"
    # The target is not the last column, so --target is needed.
    np.savetxt(
        path,
        np.column_stack([X[:, 0], y, X[:, 1]]),
        delimiter=",",
        header="a,response,b",
        comments="",
    )
    assert main(["--data", str(path), "--target", "response", *FAST]) == 0
    out = capsys.readouterr().out
    assert "SteinGPRegressor" in out and "GaussianProcessRegressor" in out


def test_main_no_sklearn_and_progress(capsys):
    argv = ["--data", "mcycle", "--max-iter", "5", "--n-particles", "2"]
    assert main([*argv, "--no-sklearn", "--init", "prior"]) == 0
    out = capsys.readouterr().out
    assert "SteinGPRegressor" in out
    assert "GaussianProcessRegressor" not in out
    assert "mcycle: 133 rows" in out  # progress lines without --quiet


# The helpers below do not need the estimator.


def test_parser_defaults():
    args = build_parser().parse_args([])
    assert args.data == "concrete"
    assert args.test_size == 0.3
    assert args.n_particles == 10
    assert args.n_restarts == 9
    assert args.init == "map"
    assert args.max_iter is None
    assert not args.no_sklearn and not args.quiet


def test_load_data_builtin_and_csv(tmp_path):
    X, y, description = load_data("concrete")
    assert X.shape == (1030, 8) and y.shape == (1030,)
    assert "compressive_strength" in description

    path = tmp_path / "d.csv"
    path.write_text("x1,x2,t\n1,2,3\n4,5,6\n7,8,9\n")
    X, y, _ = load_data(str(path))
    np.testing.assert_array_equal(y, [3, 6, 9])
    X, y, _ = load_data(str(path), target="x1")
    np.testing.assert_array_equal(X, [[2, 3], [5, 6], [8, 9]])


@pytest.mark.parametrize(
    "content, target, message",
    [
        ("x,t\n1,2\n3,4\n", "missing", "no column named 'missing'"),
        ("x,t\n1,a\n3,4\n", None, ", line 2, column 2 ('t'): could not read 'a'"),
        (
            "x,age,t\n1,2,3\n4,5,6\n7,,9\n",
            None,
            ", line 4, column 2 ('age'): empty cell",
        ),
        ("x,t\n1,2\n\n \n3, \n", None, ", line 5, column 2 ('t'): empty cell"),
        ("x,t\n1,2\n3,4,5\n", None, ", line 3: 3 fields, expected 2 as in the header"),
        ("x,t\n1,2\n3\n", None, ", line 3: 1 fields, expected 2"),
        ("x,t\n1,inf\n3,4\n", None, ", line 2, column 2 ('t'): 'inf' is not a finite"),
        (
            "x,t\n1,2\n-nan,4\n",
            None,
            ", line 3, column 1 ('x'): '-nan' is not a finite",
        ),
        ("x,t\n1,2\n1e999,4\n", None, ", line 3, column 1 ('x'): '1e999' is not"),
        ('x,t\n"1\n2",3\n4,5\n', None, ", line 2, column 1 ('x'): could not read"),
        ('x,t\n"1\n",3\n4,a\n', None, ", line 4, column 2 ('t'): could not read 'a'"),
        ("", None, ": the file is empty"),
        ("\n\n", None, ": the file is empty"),
        ("x,t\n", None, ": 0 data rows after the header on line 1; need at least 2"),
        ("x,t\n1,2\n", None, ": 1 data row after the header on line 1"),
        ("t\n1\n2\n", None, ", line 1: need at least one feature column"),
        ("x,,t\n1,2,3\n4,5,6\n", None, ", line 1, column 2: empty column name"),
        (
            "x,t,x\n1,2,3\n4,5,6\n",
            None,
            ", line 1, column 3 ('x'): the same name as column 1",
        ),
    ],
)
def test_load_data_bad_csv_names_line_and_column(tmp_path, content, target, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(ValueError) as info:
        load_data(str(path), target=target)
    assert str(info.value).startswith(str(path))
    assert message in str(info.value)


def test_load_data_bad_bytes_name_the_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"x,t\n1,2\n3,\xff4\n")
    with pytest.raises(ValueError, match=r", line 3: not UTF-8 text"):
        load_data(str(path))


def test_load_data_missing_path_and_directory(tmp_path):
    with pytest.raises(ValueError, match=r"nope\.csv: no such file"):
        load_data(str(tmp_path / "nope.csv"))
    with pytest.raises(ValueError, match="a directory, not a CSV file"):
        load_data(str(tmp_path))


def test_csv_error_reaches_the_command_line(tmp_path, capsys):
    path = tmp_path / "data.csv"
    path.write_text("x,age,t\n1,2,3\n4,5,6\n7,,9\n")
    with pytest.raises(SystemExit) as info:
        main(["--data", str(path), *FAST])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {path}, line 4, column 2 ('age'): empty cell." in err


def test_bad_options_exit_with_usage_error(tmp_path):
    for argv in (
        ["--data", str(tmp_path / "nope.csv")],
        ["--data", "mcycle", "--target", "accel"],
        ["--test-size", "1.5"],
        ["--n-particles", "0"],
        ["--init", "random"],
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2


def test_gaussian_log_density_and_table():
    lpd = gaussian_log_density([1.0, -1.0], [0.0, 0.0], [2.0, 2.0])
    assert lpd == pytest.approx(-0.5 * np.log(2 * np.pi * 4) - 1 / 8)
    table = format_table(
        [
            {"name": "a", "rmse": 1.0, "lpd": -1.0, "fit_time": 0.1},
            {"name": "longer name", "rmse": 2.0, "lpd": -2.0, "fit_time": 0.2},
        ]
    )
    lines = table.splitlines()
    assert len(lines) == 4
    assert len({len(line) for line in lines}) == 1


# ------------------------------------------------------------------ the tour
@pytest.mark.parametrize(
    "argv,tour",
    [
        ([], True),
        (["--plot", "x.png", "--seed", "2"], True),
        (["--quiet"], True),
        (["counts"], True),
        (["--data", "mcycle"], False),
        (["--seed", "1", "--n-particles", "3"], False),
        (["--help"], False),
    ],
)
def test_the_tour_is_the_default_and_old_options_keep_their_meaning(argv, tour):
    from skgp_bayes.__main__ import _wants_tour

    assert _wants_tour(argv) is tour


def test_one_task_runs_end_to_end_with_its_figure(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    figure = tmp_path / "tour.png"
    assert main(["classification", "--quiet", "--plot", str(figure)]) == 0
    out = capsys.readouterr().out
    assert "SteinGPClassifier" in out and "GaussianProcessClassifier" in out
    assert "Averaging over the posterior" in out
    assert figure.stat().st_size > 10_000
    ours, peer = (line for line in out.splitlines() if "Classifier " in line)
    accuracy, log_loss = (float(v) for v in ours.split()[1:3])
    assert accuracy > 0.9 and 0 < log_loss < 0.3  # iris is nearly separable


def test_tour_summary_reports_losses_plainly():
    from skgp_bayes._tour import summary_line

    worse = {"density": -2.0, "coverage": 0.7, "fit_time": 3.0}
    better = {"density": -1.0, "coverage": 0.9, "fit_time": 1.0}
    line = summary_line([{"task": "counts", "rows": [worse, better]}])
    assert "on 0 of 1 task" in line and "-1.00 nats" in line and "3.0x" in line


def test_unknown_tour_task_is_a_usage_error():
    with pytest.raises(SystemExit) as exit_info:
        main(["tour", "--plot"])
    assert exit_info.value.code == 2
    from skgp_bayes._tour import run_task

    with pytest.raises(ValueError, match="task must be one of"):
        run_task("survival")
