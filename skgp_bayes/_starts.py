"""Where the searches for posterior modes start: a screen over length scales.

A Gaussian process's hyperparameter posterior is often multimodal in the
length scales: a short one that follows a fast oscillation and a long one
that calls it noise. L-BFGS finds the mode whose basin it starts in, and
the default start (every length scale ``sqrt(d)`` in standardised units)
and draws from the default prior (median ``e sqrt(d)``) all lie in the
long one. On yearly sunspot numbers (216 years of 1700-2008, about eleven
years a cycle) the short mode, length scale 0.024 of the input's spread
(two years), has a log posterior 118 nats above the long one (0.27, 24
years); every estimator started from the default point missed it and
predicted the test years with three times scikit-learn's error, whose
optimiser restarts from log-uniform draws over the bounds and found it.

So before a mode search the log posterior is screened (values only, no
gradients) on a grid: every length scale multiplied by one common factor,
from the shortest length scale the training points can resolve (the median
distance from an input to its nearest distinct neighbour) to ten times the
start, in steps of at least 0.5 in log (at most 16 factors), crossed with
three noise levels (1%, 10% and 50% of the standardised target's variance)
where the noise is a hyperparameter, every other hyperparameter at its
start; the best of them is tried again with its noise half a decade above
and below, as a basin between two levels can stay hidden. The screen's
best point starts one more search when it is better than the start (the
only search, for the classifier's Laplace surrogate, whose evaluations are
dear). It costs at most ``16 x 3 + 2`` evaluations of the log posterior,
on at most ``SCREEN_ROWS`` training points (evenly spaced rows beyond
that), a fraction of one L-BFGS search.

A common factor cannot reach a mode where one input is relevant at a short
scale and the others are not, which is what one length scale per input is
for. On credit-card spending against age, income, income squared (skewed:
most households within a tenth of its standard deviation) and home
ownership, 50 households, the posterior's highest mode has the
income-squared length scale at 0.25 standard deviations and the others
long, 2 nats above the mode the start and the common grid reach; a
Langevin run that visited both kept about 40% of its draws there, and a
Stein fit started in the long mode alone predicted held-out households 0.2
nats per point worse than scikit-learn (whose restarts draw every length
scale independently). So a second stage starts from the common grid's best
point (or the start) and shortens one input's length scale at a time, down
to the shortest scale that input alone resolves (its median spacing), in
steps of at least 0.5 in log, at most ``_N_PER_INPUT`` of them: at most
``_N_PER_INPUT`` evaluations per input. The exact-target regressors (Stein,
Langevin) use it, and so does the selective regressor since its
pre-training maximises the bound plus the default log prior: with ML-II
its selection did not settle on the star98 counts (13 inputs) from the
per-input point, and concrete's fit took 7 times as long; under the prior,
without the stage, the interest-rate series (year and inflation, 74 rows)
stayed behind the prior's slope in a mode of length scale 3.2 on the year
where the data want 0.15, and with it star98 settles in 300 steps and
concrete fits in 1.5 s. The variational MCMC regressor's collapsed bound
keeps the common grid alone (with the stage it ran a third search). The
Stein classifier's Laplace screen keeps the common grid too (the cost of
its evaluations, see ``skgp_bayes._stein_models.latent``).

Both stages vary the length scales from a point whose amplitude and noise
sit at their starting values. A search then settles them, and where it
settles the noise high enough to absorb a signal of one input, no shorter
length scale of that input looks better at that noise, though a basin many
nats higher lies there at a lower one. So the best optimum is screened the
same way, one input at a time and also at the screened noise levels below
its own, and one more search starts where a point beats it
(:func:`climb_point`, :func:`climbed`): the selective regressor's
pre-training, the Stein regressor's searches and the Langevin regressor's
MAP search do so.
"""

import numpy as np
from scipy.optimize import minimize_scalar

from ._length_scale_points import (
    SCREEN_ROWS,
    length_scale_grid,
    noise_neighbours,
    per_input_candidates,
    shortened_length_scales,
    shortest_resolvable_scale,
    subset_rows,
    unused_input_starts,
    with_lower_noise,
)
from .exceptions import NotPSDError
from .inference._chain_threads import mapped_on_threads

__all__ = [
    "BETTER_BY",
    "LAPLACE_SCREEN_ROWS",
    "best_of_searches",
    "climb_point",
    "climbed",
    "exact_climb_point",
    "exact_map_search",
    "finite_value",
    "SCREEN_ROWS",
    "length_scale_grid",
    "noise_neighbours",
    "per_input_candidates",
    "prior_restarts",
    "screened_exact_start",
    "screened_exact_starts",
    "screened_start",
    "screened_starts",
    "shortened_length_scales",
    "shortest_resolvable_scale",
    "subset_rows",
    "unused_input_starts",
]

#: The same for a Laplace surrogate (the Stein classifier), whose every
#: evaluation runs Newton's method to the latent mode at O(n^3) an
#: iteration: on breast cancer (300 rows, 30 inputs) the screen on all rows
#: took 0.27 s, a fifth of the whole fit. 200 rows cost a third of that and
#: still resolve length scales of a two-hundredth of an input's range.
LAPLACE_SCREEN_ROWS = 200
#: A search from the screen's point replaces the default one only when its
#: maximum is higher by this many nats: a distinct mode, not the same one
#: reached to round-off by another path (which would change a fit's draws
#: for nothing).
BETTER_BY = 0.01
#: Draws from the prior that the exact MAP searches also start from, as the
#: Stein regressor's restarts do (its ``n_restarts``). The screen and the
#: climb move one length scale, or all together, from the start; a mode
#: where several inputs swap roles lies beyond both: on grunfeld (154 rows,
#: four inputs; the fresh split at seed 15) a mode 15 nats above the one
#: they reached had one input's length scale a tenth and another's seven
#: times as long, with a fifth of the noise. One of four prior draws led
#: there; the variational MCMC regressor's chains, started from the lower
#: mode, sampled a mode of negligible mass.
PRIOR_RESTARTS = 4
# The draws come from their own generator with a fixed seed, as the screen
# draws none: the fit's random stream is the same with or without them.
_PRIOR_RESTART_SEED = 0


def finite_value(log_density, params):
    """``log_density(params)``, or ``-inf`` where it fails or is not finite.

    Grid points far from the data's scales overflow or lose definiteness;
    they score ``-inf``, silently: a screen or a choice between searches
    only ranks.

    Parameters
    ----------
    log_density : callable
        ``params -> float``.
    params : ndarray

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._starts import finite_value
    >>> finite_value(lambda p: float(np.log(p[0])), np.array([0.0]))
    -inf
    """
    try:
        with np.errstate(all="ignore"):
            value = float(log_density(params))
    except (NotPSDError, np.linalg.LinAlgError, FloatingPointError):
        return -np.inf
    return value if np.isfinite(value) else -np.inf


def _best_point(log_density, grid, bounds):
    """The grid's best point, clipped into ``bounds``, and its value."""
    if grid.shape[0] == 0:
        return None, -np.inf
    grid = np.clip(grid, bounds[:, 0], bounds[:, 1])
    values = np.array([finite_value(log_density, point) for point in grid])
    top = int(np.argmax(values))
    return grid[top], values[top]


def screened_starts(
    log_density, names, start, X, bounds, per_input=True, refine_noise=True
):
    """The screen's points that beat ``start``: at most two, better each.

    The best point of :func:`length_scale_grid` or of its
    :func:`noise_neighbours`, when it beats ``start``; then
    (``per_input``) the best of :func:`per_input_candidates` around it (or
    around ``start``), when that beats both. Each starts a search of
    its own (:func:`best_of_searches`): a point that shortens one input may
    climb to a lower mode than the common grid's, on data where no single
    input needs it.

    Parameters
    ----------
    log_density : callable
        ``params -> log posterior`` (values only); a non-finite value or a
        :class:`~skgp_bayes.exceptions.NotPSDError` counts as ``-inf``.
    names : list of str
    start : ndarray of shape (n_params,)
    X : ndarray of shape (n_samples, n_features)
        The inputs ``log_density`` is evaluated on, in length-scale units.
    bounds : ndarray of shape (n_params, 2)
        Screened points are clipped into them.
    per_input : bool, default=True
        Also shorten one ARD length scale at a time (at most
        ``_N_PER_INPUT`` evaluations per input).
    refine_noise : bool, default=True
        Also try the grid's best point with its :func:`noise_neighbours`.
        They move the noise alone, which decides where a search from the
        point goes; a caller that reads the point's length scales without
        searching from it (the selective regressor's candidate spread)
        leaves them out.

    Returns
    -------
    list of ndarray of shape (n_params,)
        Empty when no screened point has a higher log posterior than
        ``start``; otherwise in increasing log posterior.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._starts import screened_starts
    >>> X = np.random.default_rng(0).normal(size=(40, 2))
    >>> def log_density(p):  # input 1 matters at scale 0.2, input 0 not
    ...     return -(p[0] - 1.0) ** 2 - (p[1] - np.log(0.2)) ** 2
    >>> names = ["length_scale[0]", "length_scale[1]"]
    >>> found = screened_starts(log_density, names, np.zeros(2), X,
    ...                         np.tile([-5.0, 5.0], (2, 1)))
    >>> len(found), bool(found[-1][0] > found[-1][1])
    (2, True)
    """
    start = np.asarray(start, dtype=np.float64)
    base_value = finite_value(log_density, start)
    base, found = start, []
    point, value = _best_point(log_density, length_scale_grid(names, start, X), bounds)
    if point is not None and refine_noise:
        near, near_value = _best_point(
            log_density, noise_neighbours(names, point), bounds
        )
        if near_value > value:
            point, value = near, near_value
    if value > base_value:
        found.append(point)
        base, base_value = point, value
    if per_input:
        grid = per_input_candidates(names, base, X)
        point, value = _best_point(log_density, grid, bounds)
        if value > base_value:
            found.append(point)
    return found


def screened_start(log_density, names, start, X, bounds, per_input=True):
    """The best of :func:`screened_starts`, or None.

    Parameters as for :func:`screened_starts`.

    Returns
    -------
    ndarray of shape (n_params,) or None
        None when no screened point has a higher log posterior than
        ``start``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._starts import screened_start
    >>> X = np.linspace(0, 1, 30)[:, None]
    >>> def log_density(p):  # a posterior whose mode is at length scale 0.1
    ...     return -(p[0] - np.log(0.1)) ** 2
    >>> best = screened_start(log_density, ["length_scale"], np.zeros(1), X,
    ...                       np.array([[-5.0, 5.0]]))
    >>> bool(abs(np.exp(best[0]) - 0.1) < 0.05)
    True
    """
    found = screened_starts(log_density, names, start, X, bounds, per_input)
    return found[-1] if found else None


def screened_exact_starts(
    target, start, bounds, cap=None, per_input=True, refine_noise=True
):
    """:func:`screened_starts` for an exact marginal target.

    The log posterior (marginal likelihood plus log prior, values only) of
    ``target``'s model on :func:`subset_rows` of its data.

    Parameters
    ----------
    target : ExactMarginalTarget
    start : ndarray of shape (n_params,)
    bounds : ndarray of shape (n_params, 2)
    cap : int, optional
        Most rows, as in :func:`subset_rows`.
    per_input, refine_noise : bool, default=True
        As in :func:`screened_starts`.

    Returns
    -------
    list of ndarray of shape (n_params,)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes._starts import screened_exact_starts
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> X = np.linspace(-1.7, 1.7, 200)[:, None]
    >>> y = np.sin(40 * X[:, 0])  # a length scale far below the start's 1
    >>> target = ExactMarginalTarget(
    ...     KernelAdapter(ConstantKernel() * RBF()), X, y, None)
    >>> bounds = np.tile([-11.0, 11.0], (3, 1))
    >>> best = screened_exact_starts(target, np.zeros(3), bounds)[-1]
    >>> bool(np.exp(best[1]) < 0.2)
    True
    """
    screen = _screen_target(target, cap)
    return screened_starts(
        screen.log_prob,
        screen.param_names,
        start,
        screen.X,
        bounds,
        per_input,
        refine_noise,
    )


def screened_exact_start(
    target, start, bounds, cap=None, per_input=True, refine_noise=True
):
    """The best of :func:`screened_exact_starts`, or None.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._starts import screened_exact_start
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> X = np.linspace(-1.7, 1.7, 100)[:, None]
    >>> y = np.sin(30 * X[:, 0])
    >>> target = ExactMarginalTarget(KernelAdapter(RBF()), X, y, None)
    >>> bounds = np.tile([-11.0, 11.0], (2, 1))
    >>> best = screened_exact_start(target, np.zeros(2), bounds)
    >>> bool(np.exp(best[0]) < 0.2)
    True
    """
    found = screened_exact_starts(target, start, bounds, cap, per_input, refine_noise)
    return found[-1] if found else None


def best_of_searches(search, value, start, screened, threads=1, record=None):
    """``search`` from ``start`` and from ``screened``; the higher maximum.

    Parameters
    ----------
    search : callable
        ``start -> result``, one maximisation (L-BFGS-B, say).
    value : callable
        ``result -> float``, the maximum a result reached; an error or a
        non-finite value counts as ``-inf``.
    start : ndarray of shape (n_params,)
    screened : ndarray of shape (n_params,), list of them, or None
        The screen's points (:func:`screened_starts`); None or an empty
        list searches from ``start`` alone.
    threads : int, default=1
        Above 1 the searches run at once on that many threads (each with
        one BLAS thread); they are independent, and the kept one is chosen
        in the same order, so the result is the same. ``search`` must then
        be safe to call from several threads.
    record : list, optional
        Receives every search's result, in the order of the starts
        (``start`` first), whether on threads or not.

    Returns
    -------
    object
        A search from a screened point only when its maximum is higher by
        more than ``BETTER_BY`` nats than every earlier one's.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._starts import best_of_searches
    >>> from skgp_bayes.inference.laplace import find_map
    >>> class TwoModes:
    ...     def logp_and_grad(self, x):
    ...         a, b = np.exp(-(x - 2.0) ** 2), 3 * np.exp(-(x + 2.0) ** 2)
    ...         grad = (-2 * (x - 2) * a - 2 * (x + 2) * b) / (a + b)
    ...         return float(np.log(a + b)[0]), grad
    >>> target, bounds = TwoModes(), np.array([[-5.0, 5.0]])
    >>> best = best_of_searches(
    ...     lambda s: find_map(target, s, bounds),
    ...     lambda r: target.logp_and_grad(r.params)[0],
    ...     np.array([1.5]),
    ...     np.array([-1.5]),
    ... )
    >>> round(float(best.params[0]), 3)
    -2.0
    """
    if screened is None:
        points = []
    elif isinstance(screened, np.ndarray):
        points = [screened]
    else:
        points = [point for point in screened if point is not None]
    if threads > 1 and points:
        with mapped_on_threads(min(threads, 1 + len(points))) as map_fn:
            found = list(map_fn(search, [start, *points]))
        if record is not None:
            record.extend(found)
        result = found[0]
        for other in found[1:]:
            result = _higher(value, result, other)
        return result
    result = search(start)
    if record is not None:
        record.append(result)
    for point in points:
        other = search(point)
        if record is not None:
            record.append(other)
        result = _higher(value, result, other)
    return result


def climbed(search, value, result, point):
    """``result``, or the search from ``point`` when it ends higher.

    Parameters
    ----------
    search : callable
        ``start -> result``, one maximisation.
    value : callable
        ``result -> float``, the maximum a result reached.
    result : object
        The best search so far.
    point : ndarray of shape (n_params,) or None
        Where to search (:func:`climb_point`); None: nowhere.

    Returns
    -------
    object
        The new search's result when its maximum is higher than
        ``result``'s by more than ``BETTER_BY`` nats, else ``result``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._starts import climbed
    >>> def search(start):  # climbs to the nearest integer
    ...     return np.round(start)
    >>> def value(found):
    ...     return float(found[0])
    >>> climbed(search, value, np.array([1.0]), np.array([2.8])).tolist()
    [3.0]
    >>> climbed(search, value, np.array([1.0]), None).tolist()
    [1.0]
    """
    if point is None:
        return result
    return _higher(value, result, search(point))


def _higher(value, result, other):
    """``other`` where its maximum beats ``result``'s by more than ``BETTER_BY``."""
    if finite_value(value, other) > finite_value(value, result) + BETTER_BY:
        return other
    return result


def climb_point(log_density, names, X, bounds, optimum):
    """Where a search beside ``optimum`` should start, or None.

    The screen's per-input stage shortens one length scale at a time from
    the common grid's point, where the amplitude and the noise sit at their
    starting values. A search then settles them, and a basin that the
    unsettled point did not reveal can open beside the optimum: on Danish
    money demand (38 quarters, four inputs), the selective regressor's
    pre-training ended with every length scale long (log posterior -22.43);
    with the real-income length scale alone shortened from 11.8 to 0.78
    standard deviations at that optimum the log posterior was -22.40, and
    the search from there reached a mode 6 nats higher (length scale 0.53,
    the mode scikit-learn's restarts and the Stein particles found), and
    the test mean log density went from 1.49 to 2.27. Where the search has
    settled the noise high enough to absorb a signal of one input, no
    shorter length scale of that input beats the optimum at that noise, so
    the candidates are tried at each screened noise level below the
    optimum's too (:func:`_with_lower_noise`). So: the best of
    :func:`per_input_candidates` around ``optimum``, at its noise and at the
    lower levels, when it beats ``optimum``; a search from it goes through
    :func:`climbed`. At most ``3 x _N_PER_INPUT`` evaluations an input.

    Parameters
    ----------
    log_density : callable
        ``params -> log posterior`` (values only).
    names : list of str
    X : ndarray of shape (n_samples, n_features)
        The inputs ``log_density`` is evaluated on, in length-scale units.
    bounds : ndarray of shape (n_params, 2)
    optimum : ndarray of shape (n_params,)

    Returns
    -------
    ndarray of shape (n_params,) or None

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._starts import climb_point
    >>> X = np.linspace(-1.7, 1.7, 40)[:, None]
    >>> def log_density(p):  # higher at log length scale -1 than at 1
    ...     return float(-0.1 * (p[0] - 1.0) ** 2 + 2.0 * np.exp(-4 * (p[0] + 1) ** 2))
    >>> point = climb_point(log_density, ["length_scale[0]"], X,
    ...                     np.array([[-5.0, 5.0]]), np.array([1.0]))
    >>> bool(-1.5 < point[0] < -0.5)
    True
    """
    optimum = np.asarray(optimum, dtype=np.float64)
    grid = with_lower_noise(names, per_input_candidates(names, optimum, X), optimum)
    point, point_value = _best_point(log_density, grid, bounds)
    if point is None or not point_value > finite_value(log_density, optimum):
        return None
    return point


def exact_climb_point(target, optimum, bounds, cap=None):
    """:func:`climb_point` for an exact marginal target, on :func:`subset_rows`.

    Parameters
    ----------
    target : ExactMarginalTarget
    optimum : ndarray of shape (n_params,)
    bounds : ndarray of shape (n_params, 2)
    cap : int, optional
        Most rows, as in :func:`subset_rows`.

    Returns
    -------
    ndarray of shape (n_params,) or None

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes._starts import exact_climb_point
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> X = np.linspace(-1.7, 1.7, 60)[:, None]
    >>> target = ExactMarginalTarget(
    ...     KernelAdapter(ConstantKernel() * RBF([1.0])), X, X[:, 0], None)
    >>> bounds = np.tile([-11.0, 11.0], (2, 1))
    >>> exact_climb_point(target, np.array([0.0, 3.0]), bounds) is None
    True
    """
    screen = _screen_target(target, cap)
    return climb_point(screen.log_prob, screen.param_names, screen.X, bounds, optimum)


def prior_restarts(prior_set, bounds, n=PRIOR_RESTARTS):
    """``n`` draws from ``prior_set``, the same on every call, inside ``bounds``.

    Parameters
    ----------
    prior_set : PriorSet or None
    bounds : ndarray of shape (n_params, 2)
    n : int, default=PRIOR_RESTARTS

    Returns
    -------
    list of ndarray of shape (n_params,)
        Empty without priors or where a prior cannot be sampled (a user's
        :class:`~skgp_bayes.priors.Prior` without ``sample``); draws that
        are not finite are left out.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._starts import prior_restarts
    >>> from skgp_bayes.priors import PriorSet
    >>> bounds = np.tile([-3.0, 3.0], (2, 1))
    >>> draws = prior_restarts(PriorSet({"a": slice(0, 2)}), bounds)
    >>> len(draws), bool(np.all(np.abs(draws) <= 3.0))
    (4, True)
    """
    if prior_set is None or n == 0:
        return []
    try:
        draws = prior_set.sample(np.random.default_rng(_PRIOR_RESTART_SEED), n)
    except NotImplementedError:
        return []
    with np.errstate(invalid="ignore"):
        draws = np.clip(draws, bounds[:, 0], bounds[:, 1])
    return [draw for draw in draws if np.all(np.isfinite(draw))]


def exact_map_search(target, search, start, bounds, cap=None, threads=1, searched=None):
    """The ``MaximizeResult`` of an exact marginal target's MAP, by one policy.

    ``search`` (``start -> MaximizeResult``) from ``start``, the screen's
    points and :func:`prior_restarts`, the highest kept, then once more
    from beside it (:func:`climbed`
    from :func:`exact_climb_point`): the Langevin regressor's MAP and the
    variational MCMC regressor's exact reference.

    Parameters
    ----------
    target : ExactMarginalTarget
    search : callable
    start : ndarray of shape (n_params,)
    bounds : ndarray of shape (n_params, 2)
    cap : int, optional
        Most rows of the screen and the climb (:func:`subset_rows`).
    threads : int, default=1
        Threads for the searches from the start, the screen's points and the
        prior draws (:func:`best_of_searches`); the climb follows them.
    searched : list, optional
        Receives every search's result: from the start, the screen's points
        and the prior draws in that order, then the climb's, if any.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._starts import exact_map_search
    >>> from skgp_bayes.inference.laplace import find_map
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> X = np.linspace(-1.7, 1.7, 40)[:, None]
    >>> target = ExactMarginalTarget(KernelAdapter(RBF()), X, np.sin(3 * X[:, 0]), None)
    >>> bounds = np.tile([-8.0, 8.0], (2, 1))
    >>> search = lambda s: find_map(target, s, bounds)
    >>> found = exact_map_search(target, search, np.zeros(2), bounds)
    >>> bool(np.exp(found.params[0]) < 1.0)  # a length scale for sin(3x)
    True
    """

    def value(found):
        return target.log_prob(found.params)

    candidates = [
        *screened_exact_starts(target, start, bounds, cap=cap),
        *prior_restarts(target.prior_set, bounds),
    ]
    result = best_of_searches(search, value, start, candidates, threads, searched)
    point = exact_climb_point(target, result.params, bounds, cap=cap)
    if point is None:
        return result
    other = search(point)
    if searched is not None:
        searched.append(other)
    return _higher(value, result, other)


def _screen_target(target, cap):
    from .targets import ExactMarginalTarget

    rows = subset_rows(target.X.shape[0], cap)
    # A target of its own even on all rows: grid points far from the data
    # need jitter, which the fit's target would record and warn about.
    return ExactMarginalTarget(
        target.adapter,
        target.X[rows],
        target.y[rows],
        target.prior_set,
        target.log_noise_variance,
    )


def exact_noise_alone(target, point, bounds, cap=None):
    """``point`` with its noise moved alone to the exact posterior's best.

    A bounded one-dimensional search (Brent's, to a tenth of a nat in log
    noise) over the last entry of ``point``, the log noise variance, every
    other entry held, on :func:`subset_rows` of ``target``'s data. The
    screen's noise levels lie a decade apart with the lowest at 1% of the
    variance, so on near-noiseless data a screened point's noise can be two
    decades too high; a caller that sizes something by the noise (the
    selective regressor's candidate pool) reads it from here.

    Parameters
    ----------
    target : ExactMarginalTarget
    point : ndarray of shape (n_params,)
        Log scale; the last entry is the log noise variance.
    bounds : ndarray of shape (n_params, 2)
        The search stays inside the last row.
    cap : int, optional
        Most rows, as in :func:`subset_rows`.

    Returns
    -------
    ndarray of shape (n_params,)
        ``point`` itself where the search finds nothing higher.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._starts import exact_noise_alone
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> X = np.linspace(0, 3, 60)[:, None]
    >>> y = np.sin(X[:, 0]) + 0.001 * np.random.default_rng(0).normal(size=60)
    >>> target = ExactMarginalTarget(KernelAdapter(RBF()), X, y, None)
    >>> bounds = np.array([[-5.0, 5.0], [np.log(1e-8), np.log(10.0)]])
    >>> moved = exact_noise_alone(target, np.array([0.0, np.log(0.01)]), bounds)
    >>> bool(np.exp(moved[-1]) < 1e-4)
    True
    """
    screen = _screen_target(target, cap)
    point = np.asarray(point, dtype=np.float64)

    def negative(log_noise):  # finite_value gives -inf where it fails
        return -finite_value(screen.log_prob, np.append(point[:-1], log_noise))

    low, high = bounds[-1]
    found = minimize_scalar(
        negative, bounds=(low, high), method="bounded", options={"xatol": 0.1}
    )
    if not found.fun < negative(point[-1]):
        return point
    return np.append(point[:-1], found.x)
