"""Public real data sets in their natural units, for ``bench_defaults.py``.

Every loader returns a :class:`RealData`: the inputs ``X`` (float64, the
columns as published, neither centred nor scaled), the target ``y`` (float64
for regression, strings for classification), the task, a description that
names the units, and the source. Data sets of more than :data:`MAX_ROWS`
rows are cut to a fixed-seed subsample, and the description says so.

The sets come from the package itself (``skgp_bayes.datasets``), from
scikit-learn's bundled loaders and from ``statsmodels.datasets``; none
needs the network. statsmodels is an optional benchmark dependency
(``pip install skgp_bayes[bench]``).
"""

from typing import NamedTuple

import numpy as np
from sklearn import datasets as sk_datasets

from skgp_bayes import datasets as own_datasets

MAX_ROWS = 2000
SUBSAMPLE_SEED = 0


class RealData(NamedTuple):
    """One data set: ``X, y, task, description, source``."""

    X: np.ndarray
    y: np.ndarray
    task: str  # "regression" or "classification"
    description: str
    source: str


def _statsmodels():
    try:
        import statsmodels.datasets as sm_datasets
    except ImportError as error:
        raise ImportError(
            "This data set ships with statsmodels, an optional benchmark "
            "dependency: pip install 'skgp_bayes[bench]' (or pip install "
            "statsmodels), or leave it out with --datasets."
        ) from error
    return sm_datasets


def _cap_rows(X, y, description):
    """Fixed-seed subsample of ``MAX_ROWS`` rows, said in the description."""
    n = X.shape[0]
    if n <= MAX_ROWS:
        return X, y, description
    rows = np.sort(
        np.random.default_rng(SUBSAMPLE_SEED).choice(n, MAX_ROWS, replace=False)
    )
    note = f" Subsample of {MAX_ROWS:,} of {n:,} rows (seed {SUBSAMPLE_SEED})."
    return X[rows], y[rows], description + note


def _make(X, y, task, description, source):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64 if task == "regression" else str)
    X, y, description = _cap_rows(X, y, description)
    return RealData(X, y, task, description, source)


def _labels(names, codes):
    """Class labels as strings, as a user's data frame would hold them."""
    return np.asarray(names, dtype=str)[np.asarray(codes, dtype=int)]


# ------------------------------------------------------------------ regression
def load_concrete():
    """Concrete compressive strength (MPa) from eight ingredients (kg/m^3, days)."""
    X, y = own_datasets.load_concrete(return_X_y=True)
    return _make(
        X,
        y,
        "regression",
        "Compressive strength (MPa) from seven ingredients (kg per m^3) and age "
        "(days, 1-365, skewed).",
        "skgp_bayes.datasets.load_concrete (UCI, Yeh 1998)",
    )


def load_mcycle():
    """Head acceleration (g) against time after impact (ms)."""
    X, y = own_datasets.load_mcycle(return_X_y=True)
    return _make(
        X,
        y,
        "regression",
        "Head acceleration (g) against time after a simulated impact (ms); "
        "noise level changes along the axis.",
        "skgp_bayes.datasets.load_mcycle (R MASS, Silverman 1985)",
    )


def load_coal_counts():
    """Coal-mining disasters per bin (counts) against the year."""
    X, y, width = own_datasets.bin_coal_counts()
    return _make(
        X,
        y,
        "regression",
        f"Number of coal-mining disasters per {width:.2f}-year bin (counts "
        f"{y.min()}-{y.max()}) against the bin's centre (calendar year, "
        "1851-1963).",
        "skgp_bayes.datasets.bin_coal_counts (R boot, Jarrett 1979)",
    )


def load_diabetes():
    """Disease progression after one year from ten baseline measurements."""
    X, y = sk_datasets.load_diabetes(return_X_y=True, scaled=False)
    return _make(
        X,
        y,
        "regression",
        "Disease progression one year after baseline (a score, 25-346) from age "
        "(years), sex (coded 1/2), BMI, blood pressure and six serum measurements "
        "(unscaled).",
        "sklearn.datasets.load_diabetes(scaled=False) (Efron et al. 2004)",
    )


def load_engel():
    """Household food expenditure against household income (Belgian francs)."""
    data = _statsmodels().engel.load_pandas().data
    return _make(
        data[["income"]].to_numpy(),
        data["foodexp"].to_numpy(),
        "regression",
        "Annual household food expenditure (Belgian francs, 242-2,033) against "
        "household income (Belgian francs, right-skewed, 377-4,958).",
        "statsmodels.datasets.engel (Koenker and Bassett 1982)",
    )


_STAR98_INPUTS = [
    "LOWINC",
    "PERASIAN",
    "PERBLACK",
    "PERHISP",
    "PERMINTE",
    "AVYRSEXP",
    "AVSALK",
    "PERSPENK",
    "PTRATIO",
    "PCTAF",
    "PCTCHRT",
    "PCTYRRND",
]


def load_star98():
    """Pupils above the national median in maths, per Californian school district."""
    data = _statsmodels().star98.load_pandas().data
    tested = (data["NABOVE"] + data["NBELOW"]).to_numpy()
    X = np.column_stack([data[_STAR98_INPUTS].to_numpy(), tested])
    return _make(
        X,
        data["NABOVE"].to_numpy(),
        "regression",
        "Number of pupils above the national median in maths per school "
        "district (counts 4-9,324, heavily skewed) from 12 district covariates "
        "(percentages, salaries in $1,000, spending in $1,000 per pupil) and "
        "the number of pupils tested.",
        "statsmodels.datasets.star98 (California STAR test 1998, Gill 2001)",
    )


def load_statecrime():
    """Violent crimes per 100,000 people in the 50 US states and DC."""
    data = _statsmodels().statecrime.load_pandas().data
    inputs = ["hs_grad", "poverty", "single", "white", "urban"]
    return _make(
        data[inputs].to_numpy(),
        data["violent"].to_numpy(),
        "regression",
        "Violent crimes per 100,000 people (120-1,349) from high-school "
        "graduation, poverty, single-parent, white and urban shares (percent); "
        "n = 51.",
        "statsmodels.datasets.statecrime (US states 2009)",
    )


def load_grunfeld():
    """Gross investment of ten US firms, 1935-1954 (millions of dollars)."""
    data = _statsmodels().grunfeld.load_pandas().data
    firm_code = data["firm"].astype("category").cat.codes.to_numpy()
    X = np.column_stack([data[["value", "capital", "year"]].to_numpy(), firm_code])
    return _make(
        X,
        data["invest"].to_numpy(),
        "regression",
        "Gross investment ($ million, 0.9-1,487, skewed) from market value and "
        "capital stock ($ million, skewed), calendar year and the firm "
        "(integer code 0-9).",
        "statsmodels.datasets.grunfeld (Grunfeld 1958)",
    )


def load_sunspots():
    """Yearly mean sunspot numbers, 1700-2008, against the year."""
    data = _statsmodels().sunspots.load_pandas().data
    return _make(
        data[["YEAR"]].to_numpy(),
        data["SUNACTIVITY"].to_numpy(),
        "regression",
        "Yearly sunspot number (0-190) against the calendar year (1700-2008): "
        "an eleven-year cycle, some 28 of them over the input's range, so a "
        "length scale near 1% of the range.",
        "statsmodels.datasets.sunspots (SIDC)",
    )


def load_macrodata():
    """US real private investment from other quarterly macroeconomic series."""
    data = _statsmodels().macrodata.load_pandas().data
    inputs = ["realgdp", "cpi", "tbilrate", "unemp", "pop"]
    return _make(
        data[inputs].to_numpy(),
        data["realinv"].to_numpy(),
        "regression",
        "Real gross private investment ($ billion, 2005 dollars, 397-2,262) "
        "from real GDP ($ billion), the CPI, the 3-month T-bill rate (%), "
        "unemployment (%) and population (millions), quarterly 1959-2009: "
        "inputs trending together and nearly noiseless.",
        "statsmodels.datasets.macrodata (US Federal Reserve, BLS, BEA)",
    )


def load_elec_equip():
    """Monthly EU manufacture of electrical equipment (an index), from the date."""
    _statsmodels()  # the optional dependency's message where it is missing
    from statsmodels.datasets import elec_equip

    data = elec_equip.load_pandas().data
    dates = data.index
    X = np.column_stack(
        [dates.year + (dates.month - 1) / 12.0, dates.month.astype(np.float64)]
    )
    return _make(
        X,
        data.iloc[:, 0].to_numpy(),
        "regression",
        "Monthly EU manufacture of electrical equipment (an index, 65-134) "
        "from the decimal year (1995-2016) and the month (integer 1-12): a "
        "trend, a yearly cycle and the 2009 slump. Added "
        "on 2026-12-03 after the variational MCMC regressor's held-out-rows "
        "rule was derived on it (its 64 inducing inputs predicted 0.24 nats "
        "per point worse than the exact GP).",
        "statsmodels.datasets.elec_equip (Eurostat)",
    )


def load_randhie():
    """Outpatient doctor visits per year in the RAND health insurance experiment."""
    data = _statsmodels().randhie.load_pandas().data
    inputs = [c for c in data.columns if c != "mdvis"]
    return _make(
        data[inputs].to_numpy(),
        data["mdvis"].to_numpy(),
        "regression",
        "Outpatient doctor visits in a year (counts 0-77, skewed) from log "
        "coinsurance, deductible indicator, log participation incentive, log "
        "maximum expenditure, physical limitation, number of chronic diseases "
        "and three 0/1 health indicators.",
        "statsmodels.datasets.randhie (RAND HIE, Deb and Trivedi 2002)",
    )


# -------------------------------------------------------------- classification
def load_breast_cancer():
    """Malignant or benign, from 30 measurements of cell nuclei."""
    data = sk_datasets.load_breast_cancer()
    return _make(
        data.data,
        _labels(data.target_names, data.target),
        "classification",
        "Tumour 'malignant' or 'benign' from 30 nucleus measurements (lengths, "
        "areas up to 4,254, smoothness near 0.1: scales differ by 10^5).",
        "sklearn.datasets.load_breast_cancer (UCI WDBC)",
    )


def load_iris():
    """Iris species (three) from four flower measurements (cm)."""
    data = sk_datasets.load_iris()
    return _make(
        data.data,
        _labels(data.target_names, data.target),
        "classification",
        "Species 'setosa', 'versicolor' or 'virginica' from sepal and petal "
        "length and width (cm).",
        "sklearn.datasets.load_iris (Fisher 1936)",
    )


def load_wine():
    """Wine cultivar (three) from 13 chemical measurements."""
    data = sk_datasets.load_wine()
    return _make(
        data.data,
        _labels(data.target_names, data.target),
        "classification",
        "Cultivar 'class_0', 'class_1' or 'class_2' from 13 chemical "
        "measurements (proline 278-1,680, hue near 1).",
        "sklearn.datasets.load_wine (UCI Wine)",
    )


def load_fair():
    """Whether a married woman reports any extramarital affair."""
    data = _statsmodels().fair.load_pandas().data
    inputs = [c for c in data.columns if c != "affairs"]
    some = (data["affairs"] > 0).to_numpy().astype(int)
    return _make(
        data[inputs].to_numpy(),
        _labels(["none", "some"], some),
        "classification",
        "'none' or 'some' time spent in extramarital affairs from marriage "
        "rating (1-5), age and years married (years), children, religiousness "
        "(1-4), education (years) and both occupations (integer codes 1-6).",
        "statsmodels.datasets.fair (Redbook survey 1974, Fair 1978)",
    )


def load_anes96():
    """1996 US presidential vote, Clinton or Dole."""
    data = _statsmodels().anes96.load_pandas().data
    inputs = [
        "popul",
        "TVnews",
        "selfLR",
        "ClinLR",
        "DoleLR",
        "PID",
        "age",
        "educ",
        "income",
    ]
    return _make(
        data[inputs].to_numpy(),
        _labels(["Clinton", "Dole"], data["vote"].to_numpy()),
        "classification",
        "Vote 'Clinton' or 'Dole' from town population (1,000s, skewed, "
        "0-7,300), days watching TV news, four 7-point scales, age (years), "
        "education and income (integer codes 1-7 and 1-24).",
        "statsmodels.datasets.anes96 (American National Election Studies 1996)",
    )


_MODES = ["air", "train", "bus", "car"]


def load_modechoice():
    """Travel mode chosen between Sydney and Melbourne (four modes)."""
    data = _statsmodels().modechoice.load_pandas().data
    data = data.sort_values(["individual", "mode"])
    n_people = data["individual"].nunique()
    per_mode = data[["ttme", "invc", "invt", "gc"]].to_numpy().reshape(n_people, -1)
    first = data.groupby("individual", sort=True).first()
    X = np.column_stack([per_mode, first[["hinc", "psize"]].to_numpy()])
    chosen = data["mode"].to_numpy()[data["choice"].to_numpy() == 1]
    return _make(
        X,
        _labels(_MODES, chosen.astype(int) - 1),
        "classification",
        "Mode chosen ('air', 'train', 'bus' or 'car') from each mode's terminal "
        "time (min), in-vehicle cost ($), in-vehicle time (min) and generalised "
        "cost ($), household income ($1,000) and party size (integer).",
        "statsmodels.datasets.modechoice (Greene, Econometric Analysis)",
    )


LOADERS = {
    "concrete": load_concrete,
    "mcycle": load_mcycle,
    "coal": load_coal_counts,
    "diabetes": load_diabetes,
    "engel": load_engel,
    "star98": load_star98,
    "statecrime": load_statecrime,
    "grunfeld": load_grunfeld,
    "randhie": load_randhie,
    "sunspots": load_sunspots,
    "macrodata": load_macrodata,
    "elec_equip": load_elec_equip,
    "breast_cancer": load_breast_cancer,
    "iris": load_iris,
    "wine": load_wine,
    "fair": load_fair,
    "anes96": load_anes96,
    "modechoice": load_modechoice,
}
