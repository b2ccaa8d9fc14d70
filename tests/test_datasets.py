import numpy as np
import pytest
from sklearn.utils import Bunch

from skgp_bayes.datasets import (
    bin_coal_counts,
    load_coal,
    load_concrete,
    load_mcycle,
    make_neal_multimodal,
)


def _neal_mean(x):
    return 0.3 + 0.3 * x + 0.5 * np.sin(2.7 * x) + 1.1 / (1 + x**2)


@pytest.mark.parametrize(
    "loader, n_rows, n_features, target_name",
    [
        (load_concrete, 1030, 8, "compressive_strength"),
        (load_mcycle, 133, 1, "accel"),
    ],
)
def test_regression_loaders(loader, n_rows, n_features, target_name):
    data = loader()
    assert isinstance(data, Bunch)
    for field in ("data", "target", "frame", "feature_names", "target_names", "DESCR"):
        assert field in data
    assert data.data.shape == (n_rows, n_features)
    assert data.target.shape == (n_rows,)
    assert data.data.dtype == np.float64
    assert not np.isnan(data.data).any()
    assert not np.isnan(data.target).any()
    assert len(data.feature_names) == n_features
    assert target_name not in data.feature_names
    assert data.target_names == [target_name]
    assert data.frame is None
    assert "licen" in data.DESCR.lower()

    X, y = loader(return_X_y=True)
    np.testing.assert_array_equal(X, data.data)
    np.testing.assert_array_equal(y, data.target)


def test_concrete_values_match_csv_columns():
    data = load_concrete()
    # First row of the CSV: 540, 0, 0, 162, 2.5, 1040, 676, 28 -> 79.99 MPa.
    np.testing.assert_allclose(
        data.data[0], [540.0, 0.0, 0.0, 162.0, 2.5, 1040.0, 676.0, 28.0]
    )
    assert data.target[0] == pytest.approx(79.99)
    assert data.feature_names[0] == "cement"
    assert data.feature_names[-1] == "age"


def test_coal_loader():
    data = load_coal()
    assert data.data.shape == (191, 1)
    assert data.target is None
    assert data.feature_names == ["date"]
    assert data.target_names == []
    assert not np.isnan(data.data).any()
    assert 1851 <= data.data.min() and data.data.max() < 1963
    assert np.all(np.diff(data.data[:, 0]) >= 0)
    dates, target = load_coal(return_X_y=True)
    assert dates.shape == (191, 1) and target is None


def test_as_frame():
    pd = pytest.importorskip("pandas")
    data = load_concrete(as_frame=True)
    assert isinstance(data.data, pd.DataFrame)
    assert isinstance(data.target, pd.Series)
    assert data.target.name == "compressive_strength"
    assert data.frame.shape == (1030, 9)
    assert list(data.frame.columns) == data.feature_names + data.target_names

    X, y = load_mcycle(as_frame=True, return_X_y=True)
    assert list(X.columns) == ["times"] and y.name == "accel"

    coal = load_coal(as_frame=True)
    assert list(coal.frame.columns) == ["date"]
    assert coal.frame.shape == (191, 1)


def test_bin_coal_counts_defaults():
    X, counts, width = bin_coal_counts()
    assert X.shape == (100, 1)
    assert counts.shape == (100,)
    assert counts.sum() == 191
    assert width == pytest.approx((1963 - 1851) / 100)
    np.testing.assert_allclose(np.diff(X[:, 0]), width)
    assert X[0, 0] == pytest.approx(1851 + width / 2)
    # The rate falls around 1890: more disasters in the first 40 years.
    assert counts[X[:, 0] < 1891].sum() > counts[X[:, 0] >= 1891].sum()


def test_bin_coal_counts_custom_range():
    dates = np.array([0.1, 0.2, 0.5, 0.99, 1.0, 2.5])
    X, counts, width = bin_coal_counts(dates, n_bins=2, start=0.0, end=1.0)
    # 2.5 is outside [0, 1]; 1.0 falls in the last (closed) bin.
    np.testing.assert_array_equal(counts, [2, 3])
    np.testing.assert_allclose(X[:, 0], [0.25, 0.75])
    assert width == 0.5


@pytest.mark.parametrize(
    "kwargs", [{"n_bins": 0}, {"start": 2.0, "end": 1.0}, {"end": np.inf}]
)
def test_bin_coal_counts_bad_input(kwargs):
    with pytest.raises(ValueError):
        bin_coal_counts(**kwargs)


def test_make_neal_shapes_and_reproducible():
    X, y = make_neal_multimodal(50, random_state=3)
    assert X.shape == (50, 1) and y.shape == (50,)
    X2, y2 = make_neal_multimodal(50, random_state=3)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    X3, _ = make_neal_multimodal(50, random_state=4)
    assert not np.array_equal(X, X3)
    rng = np.random.RandomState(3)
    X4, y4 = make_neal_multimodal(50, random_state=rng)
    np.testing.assert_array_equal(y, y4)


def test_make_neal_outlier_fraction():
    n = 40_000
    # Without inlier noise, a point is an outlier exactly when its residual
    # is non-zero, so the outlier flags can be read off.
    X, y = make_neal_multimodal(n, noise_std=0.0, random_state=0)
    outliers = np.abs(y - _neal_mean(X[:, 0])) > 1e-12
    # Binomial(n, 0.05) has sd sqrt(0.05 * 0.95 / n) = 0.0011 in the fraction;
    # 0.005 is more than 4 sd.
    assert abs(outliers.mean() - 0.05) < 0.005
    # Outlier residuals have sd 1.
    assert np.std(y[outliers] - _neal_mean(X[outliers, 0])) == pytest.approx(
        1.0, rel=0.1
    )


def test_make_neal_noise_levels():
    n = 40_000
    X, y = make_neal_multimodal(n, random_state=1)
    # x ~ N(0, 1).
    assert abs(X.mean()) < 0.03 and X.std() == pytest.approx(1.0, rel=0.03)
    resid = y - _neal_mean(X[:, 0])
    # Inlier residuals (sd 0.1) essentially never exceed 0.5; an outlier
    # (sd 1) does with probability P(|Z| > 0.5) = 0.617, so the expected
    # fraction is 0.05 * 0.617 = 0.031 (binomial sd 0.0009).
    assert abs(np.mean(np.abs(resid) > 0.5) - 0.05 * 0.6171) < 0.004
    # The draw order is fixed, so the same seed without inlier noise flags
    # exactly the same points as outliers.
    X0, y0 = make_neal_multimodal(n, noise_std=0.0, random_state=1)
    np.testing.assert_array_equal(X0, X)
    inliers = np.abs(y0 - _neal_mean(X0[:, 0])) < 1e-12
    assert np.std(resid[inliers]) == pytest.approx(0.1, rel=0.03)
    assert np.std(resid[~inliers]) == pytest.approx(1.0, rel=0.1)

    _, y_clean = make_neal_multimodal(n, outlier_prob=0.0, random_state=1)
    assert np.max(np.abs(y_clean - _neal_mean(X[:, 0]))) < 0.6


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_samples": 0},
        {"n_samples": 2.5},
        {"outlier_prob": 1.5},
        {"outlier_prob": -0.1},
        {"noise_std": -1.0},
        {"outlier_std": np.nan},
    ],
)
def test_make_neal_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        make_neal_multimodal(**kwargs)
