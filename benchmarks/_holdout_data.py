"""Held-out real data sets: a check of the defaults on data they never saw.

The eighteen sets of ``_real_data.py`` are the ones the defaults were
reasoned about and measured on, session after session; a default that
only works there is tuned to them. These were added afterwards (eleven
on 2026-11-27, the eight from ``cancer`` on 2026-11-29) and are run with
``bench_defaults.py --holdout``: no default is to be chosen by looking at
them, so that they keep measuring how the estimators do on a user's data.
They are small and odd on purpose: eleven to 300 training rows, collinear
economic series, skewed spending and populations, counts, a binary input,
a seasonal time series, and 64 pixel intensities with constant columns.

Every loader returns a :class:`~_real_data.RealData` in natural units, as
the main suite's do; all but ``digits`` need statsmodels.
"""

import numpy as np
from _real_data import _labels, _make, _statsmodels
from sklearn import datasets as sk_datasets


def _frame(name):
    return getattr(_statsmodels(), name).load_pandas().data.dropna()


def _regression(name, target, description, source, inputs=None):
    data = _frame(name)
    inputs = inputs or [c for c in data.columns if c != target]
    return _make(
        data[inputs].to_numpy(),
        data[target].to_numpy(),
        "regression",
        description,
        f"statsmodels.datasets.{name} ({source})",
    )


def load_longley():
    """US total employment from six collinear economic series, 1947-1962."""
    return _regression(
        "longley",
        "TOTEMP",
        "Total employment (thousands, 60,171-70,551) from the GNP deflator, GNP "
        "($ million), unemployment and armed forces (thousands), population "
        "(thousands) and the year: sixteen years of nearly collinear series.",
        "Longley 1967",
    )


def load_stackloss():
    """Ammonia lost in a plant from air flow, water temperature and acid."""
    return _regression(
        "stackloss",
        "STACKLOSS",
        "Stack loss (tenths of a percent of ammonia lost, 7-42) from air flow, "
        "cooling-water temperature (C) and acid concentration (coded); n = 21.",
        "Brownlee 1965",
    )


def load_copper():
    """World copper consumption from prices, income and inventories."""
    return _regression(
        "copper",
        "WORLDCONSUMPTION",
        "World copper consumption (thousand metric tons, 3,173-7,441) from the "
        "copper price, an income index, the aluminium price, an inventory index "
        "and the year index; n = 25.",
        "Gill 2001",
    )


def load_ccard():
    """Average monthly credit-card spending from age, income and home ownership."""
    return _regression(
        "ccard",
        "AVGEXP",
        "Average monthly credit-card expenditure ($, 9.6-1,898, skewed) from "
        "age (years), income ($10,000), income squared (skewed) and home "
        "ownership (0/1); n = 72.",
        "Greene, Econometric Analysis",
    )


def load_nile():
    """Annual flow of the Nile at Aswan against the year, 1871-1970."""
    return _regression(
        "nile",
        "volume",
        "Annual flow of the Nile at Aswan (10^8 m^3, 456-1,370) against the "
        "year (1871-1970), with a drop near 1898.",
        "Cobb 1978",
    )


def load_strikes():
    """Duration of strikes against industrial production."""
    return _regression(
        "strikes",
        "duration",
        "Strike duration (days, 1-216, skewed) against the deviation of "
        "industrial production from its trend; n = 62.",
        "Kennan 1985",
    )


def load_scotland():
    """Share voting yes in the 1997 Scottish referendum, by council."""
    return _regression(
        "scotland",
        "YES",
        "Share of a council's votes for a Scottish parliament with taxing powers "
        "(%, 32-56) from council tax (GBP), female unemployment, standardised "
        "mortality, labour participation (%), GDP, the share over 65 (%) and a "
        "product of the first two; n = 32.",
        "Scottish Office 1997",
    )


def load_co2():
    """Weekly atmospheric CO2 at Mauna Loa against the decimal year."""
    data = _frame("co2")
    days = (data.index - data.index[0]).days.to_numpy(dtype=np.float64)
    return _make(
        (1958.0 + (data.index[0].dayofyear - 1) / 365.25 + days / 365.25)[:, None],
        data["co2"].to_numpy(),
        "regression",
        "Weekly mean CO2 at Mauna Loa (ppm, 313-366) against the decimal year "
        "(1958-2001): a trend with a yearly cycle.",
        "statsmodels.datasets.co2 (NOAA, Keeling)",
    )


def load_elnino():
    """Monthly sea-surface temperature from the year and the month."""
    data = _statsmodels().elnino.load_pandas().data
    months = list(data.columns[1:])
    X = np.array([[year, month + 1.0] for year in data["YEAR"] for month in range(12)])
    return _make(
        X,
        data[months].to_numpy().ravel(),
        "regression",
        "Monthly mean sea-surface temperature in the El Nino region (C, "
        "19.7-29.1) from the year (1950-2010) and the month (integer 1-12).",
        "statsmodels.datasets.elnino (NOAA)",
    )


def load_spector():
    """Whether a grade improved after a teaching method, from GPA and scores."""
    data = _frame("spector")
    return _make(
        data[["GPA", "TUCE", "PSI"]].to_numpy(),
        _labels(["same", "up"], data["GRADE"].to_numpy()),
        "classification",
        "Grade 'up' or 'same' after a course from grade point average (2.06-4), "
        "a pre-test score (12-29) and the new teaching method (0/1); n = 32.",
        "statsmodels.datasets.spector (Spector and Mazzeo 1980)",
    )


def load_digits():
    """Handwritten digits (ten classes) from 8 x 8 pixel intensities."""
    data = sk_datasets.load_digits()
    return _make(
        data.data,
        _labels([str(k) for k in range(10)], data.target),
        "classification",
        "Digit '0'-'9' from 64 pixel intensities (integers 0-16; some pixels "
        "are 0 in every image).",
        "sklearn.datasets.load_digits (UCI)",
    )


def load_cancer():
    """Cancer deaths against population in 301 US counties."""
    return _regression(
        "cancer",
        "cancer",
        "Breast-cancer deaths (counts, 0-360) against the population at risk "
        "(hundreds to hundreds of thousands; heavily skewed); n = 301.",
        "Rice 1995",
    )


def load_committee():
    """Bills assigned to US House committees in the 104th Congress."""
    return _regression(
        "committee",
        "BILLS104",
        "Bills assigned (counts, 1-355) from committee size, subcommittees, "
        "staff, a prestige dummy and the 103rd Congress's bills; n = 20.",
        "Gill 2001",
    )


def load_heart():
    """Survival after a heart transplant against age and a censoring flag."""
    return _regression(
        "heart",
        "survival",
        "Survival time (days, 1-1,775; skewed) from the censoring flag (0/1) "
        "and the age at transplant (years); n = 69.",
        "Stanford heart transplant data, Miller and Halpern 1982",
    )


def load_heart_status():
    """Whether a heart-transplant patient died, from survival time and age."""
    data = _frame("heart")
    return _make(
        data[["survival", "age"]].to_numpy(),
        _labels(["censored", "died"], data["censors"].to_numpy()),
        "classification",
        "'died' or 'censored' from the survival time (days) and the age at "
        "transplant (years); n = 69.",
        "statsmodels.datasets.heart (Miller and Halpern 1982)",
    )


def load_danish():
    """Danish log real money demand from income, prices and interest rates."""
    return _regression(
        "danish_data",
        "lrm",
        "Log real money M2 (about 11.6-12.1) from log real income, log prices "
        "and two interest rates (fractions near 0.1), quarterly 1974-1987; "
        "n = 55.",
        "Johansen and Juselius 1990",
    )


def load_interest():
    """German long-term interest rate from the year, quarter and inflation."""
    return _regression(
        "interest_inflation",
        "R",
        "Long-term interest rate (a fraction, 0.04-0.11) from the year, the "
        "quarter (1-4) and the quarterly inflation rate; n = 107.",
        "Luetkepohl 2005",
    )


def load_cpunish():
    """US executions in 1997 per state, from state covariates."""
    return _regression(
        "cpunish",
        "EXECUTIONS",
        "Executions (counts, 1-37) from median income ($), poverty, black "
        "population and degree shares (%), violent crime per 100,000 and a "
        "South flag; n = 17.",
        "Gill 2001",
    )


def load_fertility():
    """Fertility in 2000 from fertility in 1960, 1970 and 1980, by country."""
    data = _statsmodels().fertility.load_pandas().data
    data = data[["1960", "1970", "1980", "2000"]].dropna()
    return _make(
        data[["1960", "1970", "1980"]].to_numpy(),
        data["2000"].to_numpy(),
        "regression",
        "Births per woman in 2000 (0.9-7.7) from the same rate in 1960, 1970 "
        "and 1980, one row per country with all four.",
        "statsmodels.datasets.fertility (World Bank)",
    )


HOLDOUT_LOADERS = {
    "longley": load_longley,
    "stackloss": load_stackloss,
    "copper": load_copper,
    "ccard": load_ccard,
    "nile": load_nile,
    "strikes": load_strikes,
    "scotland": load_scotland,
    "co2": load_co2,
    "elnino": load_elnino,
    "spector": load_spector,
    "digits": load_digits,
    "cancer": load_cancer,
    "committee": load_committee,
    "heart": load_heart,
    "heart_status": load_heart_status,
    "danish": load_danish,
    "interest": load_interest,
    "cpunish": load_cpunish,
    "fertility": load_fertility,
}
