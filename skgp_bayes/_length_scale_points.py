"""The points the mode searches start from or screen: length-scale grids,
one input at a time, and inputs a mode leaves unused.

Why the searches need them is in :mod:`skgp_bayes._starts`, which screens
and searches from these points.
"""

import numpy as np

from .linalg.rows import unique_rows

__all__ = [
    "SCREEN_ROWS",
    "length_scale_grid",
    "per_input_candidates",
    "shortened_length_scales",
    "shortest_resolvable_scale",
    "subset_rows",
    "noise_neighbours",
    "unused_input_starts",
    "with_lower_noise",
]

#: Most training rows the screen evaluates the log posterior on.
SCREEN_ROWS = 500
_N_FACTORS = 16
# Grid points at least this far apart in log length scale (a factor of
# 1.65): a basin narrower than that is no basin a search needs to find.
_FACTOR_STEP = 0.5
_NOISE_FRACTIONS = (0.01, 0.1, 0.5)
# The grid's best point is tried again with its noise half a decade above
# and below: the levels lie a decade apart, and a basin between two of them
# stayed hidden. On the monthly electrical-equipment index (179 rows, the
# decimal year and the month) the best point, at 10% noise, led the search
# to a mode 0.8 nats below the one at 5%, whose year length scale is two
# thirds as long (test mean log density of the exact GP at each mode -3.48
# and -3.26); at 3.2% the same point is 1.7 nats higher and its search
# reaches the higher mode. Two evaluations, where a finer grid (six levels,
# 1, 2, 5, 10, 20 and 50%) found the same mode at 48 more. Only inside the
# levels' range: above 50% the noise takes what the levels leave to the
# signal (a point at 158% beat the grid's best on a test case, and the
# one-input stage then found no short length scale at that noise).
_NEIGHBOUR_STEP = 0.5 * np.log(10.0)
_LONGEST_FACTOR = 10.0
_N_PER_INPUT = 8
# Inputs that agree to this many decimals of their column's spread are one.
_SAME_INPUT_DIGITS = 9


def _length_scale_entries(names):
    return [
        i
        for i, name in enumerate(names)
        if name.split("__")[-1].split("[")[0] == "length_scale"
    ]


def _per_input_entries(names, n_features):
    """Length-scale entries that belong one to each input column, or [].

    One ARD kernel's ``length_scale[0]`` ... ``length_scale[d-1]``, in the
    order of the columns; an isotropic length scale, or several kernels'
    length scales, give nothing (the common grid covers them).
    """
    entries = _length_scale_entries(names)
    prefixes = {names[i].split("[")[0] for i in entries}
    indexed = all("[" in names[i] for i in entries)
    if len(prefixes) != 1 or not indexed or len(entries) != n_features:
        return []
    return entries


def _noise_entry(names):
    for i, name in enumerate(names):
        if name == "noise_variance" or name.split("__")[-1] == "noise_level":
            return i
    return None


def shortest_resolvable_scale(X):
    """Median distance from a training input to its nearest distinct neighbour.

    The shortest length scale the data can tell from independence: below
    it every point is uncorrelated with every other. Measured in the full
    input space because the grid scales all length scales together.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Inputs in the units of the length scales.

    Returns
    -------
    float or None
        None when there are fewer than two distinct inputs.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._starts import shortest_resolvable_scale
    >>> shortest_resolvable_scale(np.array([[0.0], [1.0], [3.0], [3.0]]))
    1.0
    """
    X = np.asarray(X, dtype=np.float64)
    # The distances are n x n: beyond SCREEN_ROWS rows an evenly spaced
    # subset, whose nearest neighbours are a little further apart (the
    # grid then starts a little higher; its step is 0.5 in log anyway).
    # Inputs equal to _SAME_INPUT_DIGITS decimals of their column's spread
    # are one input: a duplicated row and one moved by 1e-15 must give the
    # same grid, and so the same fit (RELIABILITY.md, duplicate rows).
    X = X[subset_rows(X.shape[0])]
    spread = np.std(X, axis=0)
    spread = np.where(spread > 0, spread, 1.0)
    rounded = np.round(X / spread, _SAME_INPUT_DIGITS)
    _, first = unique_rows(rounded, return_index=True)
    X = X[np.sort(first)]
    if X.shape[0] < 2:
        return None
    squares = np.sum(X * X, axis=1)
    d2 = squares[:, None] + squares[None, :] - 2.0 * (X @ X.T)
    np.fill_diagonal(d2, np.inf)
    return float(np.median(np.sqrt(np.maximum(d2.min(axis=1), 0.0))))


def shortened_length_scales(names, theta, factor):
    """``theta`` with every length scale divided by ``factor`` (log scale).

    Parameters
    ----------
    names : list of str
        Hyperparameter names, as in :func:`length_scale_grid`.
    theta : ndarray of shape (n_params,)
    factor : float

    Returns
    -------
    ndarray of shape (n_params,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._starts import shortened_length_scales
    >>> shortened_length_scales(["k1__constant_value", "k2__length_scale"],
    ...                         np.zeros(2), np.e).tolist()
    [0.0, -1.0]
    """
    theta = np.array(theta, dtype=float)
    theta[_length_scale_entries(names)] -= np.log(factor)
    return theta


def length_scale_grid(names, start, X):
    """Candidate starts: length scales scaled together, crossed with noise levels.

    Parameters
    ----------
    names : list of str
        Hyperparameter names (``"k2__length_scale[0]"``, ``"noise_variance"``).
    start : ndarray of shape (n_params,)
        The default start, log scale.
    X : ndarray of shape (n_samples, n_features)
        Training inputs in the units of the length scales.

    Returns
    -------
    ndarray of shape (n_candidates, n_params)
        Empty when there is no length scale or no resolvable spacing.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._starts import length_scale_grid
    >>> X = np.linspace(-1.7, 1.7, 50)[:, None]
    >>> grid = length_scale_grid(["k2__length_scale", "noise_variance"],
    ...                          np.zeros(2), X)
    >>> grid.shape  # 11 factors, 0.46 apart in log, by 3 noise levels
    (33, 2)
    """
    start = np.asarray(start, dtype=np.float64)
    entries = _length_scale_entries(names)
    shortest = shortest_resolvable_scale(X)
    if not entries or shortest is None:
        return np.empty((0, start.size))
    # The factors take the geometric mean of the start's length scales from
    # the shortest resolvable scale to ten times the start.
    centre = float(np.mean(start[entries]))
    low = min(np.log(shortest) - centre, 0.0)
    high = np.log(_LONGEST_FACTOR)
    count = int(min(_N_FACTORS, np.ceil((high - low) / _FACTOR_STEP) + 1))
    factors = np.linspace(low, high, count)
    noise = _noise_entry(names)
    levels = [None] if noise is None else np.log(_NOISE_FRACTIONS)
    candidates = []
    for level in levels:
        for factor in factors:
            point = start.copy()
            point[entries] += factor
            if level is not None:
                point[noise] = level
            candidates.append(point)
    return np.array(candidates)


def per_input_candidates(names, base, X):
    """Candidates that shorten one input's length scale at a time from ``base``.

    Parameters
    ----------
    names : list of str
    base : ndarray of shape (n_params,)
        The point the candidates vary, log scale: every other entry keeps
        its value there.
    X : ndarray of shape (n_samples, n_features)
        Training inputs in the units of the length scales.

    Returns
    -------
    ndarray of shape (n_candidates, n_params)
        For each input of an ARD kernel, length scales from the shortest
        that input resolves alone (:func:`shortest_resolvable_scale` of its
        column) up to, not including, its value in ``base``, at least 0.5
        apart in log and at most ``_N_PER_INPUT`` of them; empty without an
        ARD kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._starts import per_input_candidates
    >>> X = np.column_stack([np.linspace(-1.7, 1.7, 35), np.tile([-1.0, 1.0], 35)[:35]])
    >>> names = ["k2__length_scale[0]", "k2__length_scale[1]", "noise_variance"]
    >>> grid = per_input_candidates(names, np.zeros(3), X)
    >>> grid.shape  # input 0 from log 0.1 towards 0; input 1 resolves only 2.0
    (5, 3)
    >>> bool(np.all(grid[:, 1] == 0.0))
    True
    """
    base = np.asarray(base, dtype=np.float64)
    candidates = []
    for column, entry in enumerate(_per_input_entries(names, X.shape[1])):
        shortest = shortest_resolvable_scale(X[:, [column]])
        if shortest is None or np.log(shortest) >= base[entry]:
            continue
        low = np.log(shortest)
        count = int(min(_N_PER_INPUT, np.ceil((base[entry] - low) / _FACTOR_STEP)))
        for value in np.linspace(low, base[entry], count + 1)[:-1]:
            point = base.copy()
            point[entry] = value
            candidates.append(point)
    return np.array(candidates).reshape(-1, base.size)


def unused_input_starts(names, optimum, X, bounds=None):
    """Starts that give each input ``optimum`` leaves unused its own spread.

    Two inputs that carry the same signal give a posterior a mode for each:
    on star98 (212 schools, 13 inputs), the Stein regressor's search found
    the mode that explains the scores by one of two related shares and
    leaves the other input at 59 standard deviations; the other mode, 0.6
    nats lower in log density and a sixth of the Laplace mass, uses that
    input at 2.8 sds, and with it in the mixture the test mean log density
    rose from -5.78 to -5.53 (scikit-learn's restarts found that mode:
    -5.58). The climb beside the optimum
    (:func:`~skgp_bayes._starts.climb_point`) does not look there, because
    the point with the input shortened lies below the optimum until a
    search has moved the others. So, for each input of an
    ARD kernel whose length scale at ``optimum`` is longer than the
    input's spread (its standard deviation in ``X``), a start at
    ``optimum`` with that length scale set to the spread.

    Parameters
    ----------
    names : list of str
    optimum : ndarray of shape (n_params,)
        Log scale.
    X : ndarray of shape (n_samples, n_features)
        Training inputs in the units of the length scales.
    bounds : ndarray of shape (n_params, 2), optional
        Log-scale box the starts are clipped into (a spread shorter than a
        length scale's lower bound starts on that bound).

    Returns
    -------
    ndarray of shape (n_starts, n_params)
        Empty without an ARD kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._starts import unused_input_starts
    >>> X = np.column_stack([np.linspace(-1.0, 1.0, 21), np.linspace(0.0, 4.0, 21)])
    >>> names = ["k2__length_scale[0]", "k2__length_scale[1]", "noise_variance"]
    >>> starts = unused_input_starts(names, np.log([10.0, 0.5, 0.1]), X)
    >>> np.round(np.exp(starts), 3)  # input 0's length scale set to its sd
    array([[0.606, 0.5  , 0.1  ]])
    """
    optimum = np.asarray(optimum, dtype=np.float64)
    starts = []
    for column, entry in enumerate(_per_input_entries(names, X.shape[1])):
        spread = float(np.std(X[:, column]))
        if spread > 0.0 and optimum[entry] > np.log(spread):
            point = optimum.copy()
            point[entry] = np.log(spread)
            starts.append(point)
    starts = np.array(starts).reshape(-1, optimum.size)
    if bounds is None:
        return starts
    return np.clip(starts, bounds[:, 0], bounds[:, 1])


def subset_rows(n, cap=None):
    """Rows the screen evaluates: all up to ``cap``, else evenly spaced.

    Evenly spaced rather than random, so that the screen draws no random
    number (the fit's random stream is the same with or without it) and
    data ordered in time keep their spacing.

    Parameters
    ----------
    n : int
    cap : int, optional
        Most rows; ``SCREEN_ROWS`` by default.

    Returns
    -------
    ndarray of int

    Examples
    --------
    >>> from skgp_bayes._starts import subset_rows
    >>> subset_rows(10).size, subset_rows(900).size, subset_rows(900, 100).size
    (10, 500, 100)
    """
    cap = SCREEN_ROWS if cap is None else cap
    if n <= cap:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, cap).round().astype(int))


def noise_neighbours(names, point):
    """``point`` with its noise half a decade higher and lower, inside the
    grid's levels (so one neighbour only at its lowest or highest level).

    Parameters
    ----------
    names : list of str
    point : ndarray of shape (n_params,)
        Log scale.

    Returns
    -------
    ndarray of shape (k, n_params), k <= 2
        Empty when no entry is the noise.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._length_scale_points import noise_neighbours
    >>> names = ["k2__length_scale", "noise_variance"]
    >>> np.round(np.exp(noise_neighbours(names, np.log([1.0, 0.1]))), 3)
    array([[1.   , 0.316],
           [1.   , 0.032]])
    >>> np.round(np.exp(noise_neighbours(names, np.log([1.0, 0.5]))), 3)
    array([[1.   , 0.158]])
    """
    point = np.asarray(point, dtype=np.float64)
    noise = _noise_entry(names)
    if noise is None:
        return np.empty((0, point.size))
    neighbours = np.tile(point, (2, 1))
    neighbours[:, noise] += [_NEIGHBOUR_STEP, -_NEIGHBOUR_STEP]
    # inside the levels' range only (see _NEIGHBOUR_STEP)
    levels = np.log(_NOISE_FRACTIONS)
    inside = (neighbours[:, noise] > levels.min()) & (
        neighbours[:, noise] < levels.max()
    )
    return neighbours[inside]


def with_lower_noise(names, grid, optimum):
    """``grid``, and again at each screened noise level below the optimum's.

    A length scale shortened to follow what the optimum calls noise needs
    less noise; at the optimum's own noise the basin can stay hidden (a
    sine of one of four inputs at a third of a linear trend's size, 40
    points: the optimum put it in a noise of a tenth of the variance, and
    no shortened point beat it there, while at a hundredth the basin 19
    nats higher showed).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._length_scale_points import with_lower_noise
    >>> names = ["k2__length_scale[0]", "noise_variance"]
    >>> grid = np.array([[0.0, np.log(0.2)]])
    >>> np.round(np.exp(with_lower_noise(names, grid, grid[0])[:, 1]), 2)
    array([0.2 , 0.01, 0.1 ])
    """
    noise = _noise_entry(names)
    if noise is None or grid.shape[0] == 0:
        return grid
    copies = [grid]
    for level in np.log(_NOISE_FRACTIONS):
        if level < optimum[noise] - _FACTOR_STEP:
            lowered = grid.copy()
            lowered[:, noise] = level
            copies.append(lowered)
    return np.vstack(copies)
