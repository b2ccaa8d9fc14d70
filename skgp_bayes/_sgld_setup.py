"""What :class:`~skgp_bayes.SGLDGPRegressor`'s chains start from, how they
step and how long they run.

The MAP and Laplace preconditioner on a subset, the chains' starts, the
step-size schedule and MALA's warm-up (step adaptation and metric windows),
and the run-length rule: blocks of iterations until every split R-hat and
bulk ESS is on target, the burn-in, and the diagnostics of the kept draws.
"""

import numpy as np

from ._run_length import BULK_ESS_MIN, RHAT_MAX, further_block
from ._starts import PRIOR_RESTARTS, exact_map_search
from ._threads import serial_blas
from .diagnostics import effective_sample_size, rank_rhat_and_bulk_ess
from .inference import sgld_schedule
from .inference.laplace import (
    find_map,
    gaussian_draws,
    gaussian_factor,
    laplace_covariance,
)
from .inference.mode_jumps import laplace_mixture
from .inference.particles import automatic_threads, evaluation_seconds
from .targets import ExactMarginalTarget

# A MALA chain's independence move between modes after every second
# iteration. The mode a chain is in mixes only through these moves: on
# credit-card spending (two modes of Laplace mass 0.42 and 0.58, 40-50% of
# the moves accepted, some of them within a mode) one move every ten
# iterations left the two chains' shares of the short mode at 0.44 and
# 0.18 after 1,000 kept iterations and took 11,889 iterations to the
# run-length rule. A move costs one evaluation, as a MALA step does, so
# every second iteration adds half the cost of an iteration and switches
# modes five times as often.
MODE_JUMP_EVERY = 2

__all__ = [
    "RunLength",
    "chain_diagnostics",
    "chain_options",
    "chain_starts",
    "chains_apart",
    "map_and_preconditioner",
    "mixed",
    "not_mixed_message",
    "worst",
]

# Warm-up per chain with n_iter="auto", discarded as burn-in: MALA's step
# adaptation (dual averaging settles within a few hundred transitions) and
# two re-estimates of the preconditioner, at the ends of the fractions
# METRIC_WINDOWS of it (Stan's schedule in outline: a first stretch for the
# step alone, metric windows, a last stretch that re-tunes the step to the
# final metric). The Laplace preconditioner is the curvature at the MAP; the
# length scales of weakly relevant inputs have posteriors skewed toward long
# scales, several times wider than that curvature says (on diabetes, star98
# and coal one direction had 5-9 times the Laplace variance), and MALA's
# step, set by the narrow directions, crossed them slowly (integrated
# autocorrelation times of 20-45 against 5-8 for the rest). The windows'
# estimate (inference.sgld.fisher_metric) needs no crossing of them.
WARMUP = 500
# Stochastic-gradient chains keep the warm-up they had: 200 iterations unless
# the step froze earlier.
SGLD_WARMUP = 200
METRIC_WINDOWS = ((0.1, 0.4), (0.4, 0.75))
# Fewer warm-up iterations than this adapt the step only: a window would
# hold fewer draws than a dense metric needs.
MIN_METRIC_WARMUP = 100
# Post-warm-up iterations of the first block with n_iter="auto". Two chains
# split in four halves of total ESS E give E[R-hat - 1] of about 2 / E, so
# R-hat <= 1.01 needs an ESS of a few hundred: about 1000 MALA iterations
# per chain (integrated autocorrelation times of 2 to 5) before a check can
# pass. Each further block adds a quarter of the post-warm-up span
# (skgp_bayes._run_length), and n_iter="auto" runs until the rule there is
# met or until max_iter.
FIRST_DRAWS = 1000
# Roberts and Rosenthal's (1998) optimal MALA scale: proposal variance
# 1.65^2 d^(-1/3) times the target covariance.
MALA_SCALE = 1.65
# Fewer kept draws per chain than this make R-hat and ESS unreliable.
MIN_DIAGNOSTIC_DRAWS = 100


class RunLength:
    """Warm-up, blocks and burn-in of the chains.

    Parameters
    ----------
    n_iter : int or "auto"
    max_iter : int
    burn_in : int or None
    thin : int

    Examples
    --------
    >>> from skgp_bayes._sgld_setup import RunLength
    >>> run = RunLength("auto", 20000, None, 1)
    >>> run.warmup(exact=True), run.first_block(exact=True)
    (500, 1500)
    >>> run.next_block(1500, 500, None)
    250
    """

    def __init__(self, n_iter, max_iter, burn_in, thin):
        self.n_iter = n_iter
        self.max_iter = max_iter
        self.burn_in = burn_in
        self.thin = thin

    def warmup(self, exact):
        """Warm-up iterations per chain (MALA's adaptation), then discarded."""
        if self.burn_in is not None:
            return self.burn_in
        full = WARMUP if exact else SGLD_WARMUP
        if self.n_iter == "auto":
            return full
        return min(full, self.n_iter // 2)

    def metric_windows(self):
        """MALA's metric windows: ranges of the warm-up (none if short)."""
        warmup = self.warmup(exact=True)
        if warmup < MIN_METRIC_WARMUP:
            return ()
        return tuple((int(lo * warmup), int(hi * warmup)) for lo, hi in METRIC_WINDOWS)

    def first_block(self, exact):
        """Iterations of a fit's first run of the chains."""
        if self.n_iter != "auto":
            return self.n_iter
        draws = max(FIRST_DRAWS, self.thin * MIN_DIAGNOSTIC_DRAWS)
        return min(self.max_iter, self.warmup(exact) + draws)

    def next_block(self, n_total, burn, limit):
        """A quarter of the kept span more, and at least enough for 50 kept
        draws (:func:`~skgp_bayes._run_length.further_block`)."""
        least = self.thin * MIN_DIAGNOSTIC_DRAWS // 2
        block = further_block(n_total - burn, least=least)
        if limit is not None:
            block = min(block, limit - n_total)
        return max(block, 1)

    def discarded(self, n_total, frozen_at, notes, freeze_threshold):
        """The burn-in of chains ``n_total`` long; ``notes`` gets the reason
        when it falls back to half the chains."""
        if self.burn_in is not None:
            return min(self.burn_in, n_total - 1)
        if all(f is not None for f in frozen_at):
            return min(max(frozen_at) + 1, n_total - 1)
        if self.n_iter == "auto":
            return min(self.warmup(exact=False), n_total - 1)
        if freeze_threshold is not None:
            notes.append(
                "the step size did not freeze in every chain; the first half "
                "of each chain was discarded"
            )
        return n_total // 2


def chain_options(metropolis, run, n_params, steps):
    """The engine's options for the first block of a fresh fit.

    Parameters
    ----------
    metropolis : bool
        Exact log densities: MALA's step and warm-up; else SGLD's schedule.
    run : RunLength
    n_params : int
    steps : dict
        ``step_size_start``, ``step_size_end``, ``step_size_gamma``,
        ``freeze_threshold`` and ``freeze_window``.

    Returns
    -------
    dict
        ``n_iter``, the schedule ``a``, ``b``, ``gamma``, ``adapt_steps``,
        ``metric_windows``, ``freeze_threshold``, ``freeze_window``.

    Examples
    --------
    >>> from skgp_bayes._sgld_setup import RunLength, chain_options
    >>> steps = dict(step_size_start=0.1, step_size_end=None, step_size_gamma=1.0,
    ...              freeze_threshold=None, freeze_window=100)
    >>> options = chain_options(False, RunLength(50, 100, None, 1), 3, steps)
    >>> options["n_iter"], options["a"], options["gamma"]
    (50, 0.1, 0.0)
    """
    start, end = steps["step_size_start"], steps["step_size_end"]
    if end is not None and end > start:
        raise ValueError(
            f"step_size_end={end} must not exceed step_size_start={start}."
        )
    n_iter = run.first_block(metropolis)
    if metropolis:
        # MALA's step starts at Roberts and Rosenthal's optimal scaling
        # 1.65^2 d^(-1/3) for a preconditioner equal to the covariance.
        a, b, gamma = MALA_SCALE**2 * n_params ** (-1.0 / 3.0), 1.0, 0.0
    else:
        # No end, or the start again: the constant step (a decay from a
        # to itself would still decay as a (1 + t)^-gamma).
        constant = end is None or end == start
        end = start if constant else end
        gamma = 0.0 if constant else steps["step_size_gamma"]
        a, b = sgld_schedule(start, end, n_iter, gamma)
    return {
        "n_iter": n_iter,
        "a": a,
        "b": b,
        "gamma": gamma,
        "adapt_steps": run.warmup(metropolis) if metropolis else 0,
        "metric_windows": run.metric_windows() if metropolis else (),
        "freeze_threshold": steps["freeze_threshold"],
        "freeze_window": steps["freeze_window"],
    }


def map_and_preconditioner(
    data, start, bounds, rng, map_subset, identity, log=None, n_jobs=None
):
    """MAP and preconditioner from a random subset of the data.

    Parameters
    ----------
    data : tuple
        ``(adapter, X, y, prior_set, log_noise)``.
    start : ndarray of shape (n_params,)
    bounds : ndarray of shape (n_params, 2)
    rng : numpy.random.RandomState
        Draws the subset when there are more than ``map_subset`` points.
    map_subset : int
    identity : bool
        The identity preconditioner instead of the Laplace covariance.
    log : callable, optional
        Receives one line about the MAP search.
    n_jobs : int, optional
        The estimator's: where the MAP search's starts may go on threads,
        which changes no result (:func:`_search_threads`).

    Returns
    -------
    map_params : ndarray of shape (n_params,)
    M : ndarray of shape (n_params, n_params)
    jumps : ModeJumps or None
        The Laplace mixture of the distinct maxima the searches reached
        (:func:`~skgp_bayes.inference.mode_jumps.laplace_mixture`), for the
        MALA chains' moves between them; None with one.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._sgld_setup import map_and_preconditioner
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> X = np.linspace(0, 1, 10)[:, None]
    >>> data = (KernelAdapter(RBF()), X, np.sin(6 * X[:, 0]), None, None)
    >>> bounds = np.array([[-3.0, 3.0], [-6.0, 1.0]])
    >>> _, M, _ = map_and_preconditioner(data, np.array([0.0, -2.0]), bounds,
    ...                                  np.random.RandomState(0), 500, True)
    >>> M.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    adapter, X, y, prior_set, log_noise = data
    n = X.shape[0]
    if n > map_subset:
        idx = np.sort(rng.choice(n, map_subset, replace=False))
        X, y = X[idx], y[idx]
    target = ExactMarginalTarget(adapter, X, y, prior_set, log_noise)
    searches = []
    result = exact_map_search(
        target,
        lambda search_start: find_map(target, search_start, bounds),
        start,
        bounds,
        threads=1 if log is not None else _search_threads(target, start, n, n_jobs),
        searched=searches,
    )
    map_params = result.params
    # The MAP first, so that it stands for its own mode.
    optima = [map_params, *(s.params for s in searches)]
    jumps = laplace_mixture(target, optima, bounds, every=MODE_JUMP_EVERY)
    if log is not None:
        log(
            f"MAP on {X.shape[0]} points after {result.n_iter} "
            f"L-BFGS iterations: {target.describe(map_params)}"
        )
    if log is not None and jumps is not None:
        log(
            f"{jumps.describe()}: the MALA chains also jump between them every "
            f"{jumps.every} iterations"
        )
    if identity:
        return map_params, np.eye(start.shape[0]), jumps
    return map_params, laplace_covariance(target, map_params, bounds), jumps


def _search_threads(target, start, n, n_jobs):
    """Threads for the MAP search's starts on ``target`` (``n`` rows in the fit).

    With ``n_jobs`` None, no log lines (checked by the caller) and rows few
    enough for the fit to keep BLAS to one thread
    (:func:`~skgp_bayes._threads.serial_blas`), by the rule the Stein
    regressor's searches follow
    (:func:`~skgp_bayes.inference.particles.automatic_threads`).
    """
    # On threads each search has one BLAS thread: the same bits as one
    # search after another only where the fit keeps BLAS to one thread.
    if not serial_blas(n):
        return 1
    return automatic_threads(
        target, 1 + PRIOR_RESTARTS, lambda: evaluation_seconds(target, start), n_jobs
    )


def chain_starts(map_params, M, bounds, n_chains, identity, rng):
    """Starts from ``N(MAP, M)`` (the MAP itself when ``identity``) and one
    seed per chain.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_setup import chain_starts
    >>> bounds = np.array([[-5.0, 5.0]])
    >>> starts = chain_starts(np.zeros(1), np.eye(1), bounds, 2, True,
    ...                       np.random.RandomState(0))
    >>> [s["start"].tolist() for s in starts]
    [[0.0], [0.0]]
    """
    starts = gaussian_draws(map_params, gaussian_factor(M), n_chains, rng)
    if identity:
        starts[:] = map_params
    starts = np.clip(starts, bounds[:, 0], bounds[:, 1])
    seeds = np.random.SeedSequence(rng.randint(np.iinfo(np.int32).max)).spawn(n_chains)
    return [{"start": starts[c], "seed": seeds[c]} for c in range(n_chains)]


def chain_diagnostics(kept, notes):
    """Rank-normalised split R-hat and bulk ESS (Vehtari et al., 2021).

    NaN where they cannot be computed; ``notes`` gets the reason.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_setup import chain_diagnostics
    >>> notes = []
    >>> rhat, ess = chain_diagnostics(np.zeros((2, 10, 1)), notes)
    >>> bool(np.isnan(rhat[0])), len(notes)
    (True, 1)
    """
    p = kept.shape[2]
    if kept.shape[1] < MIN_DIAGNOSTIC_DRAWS:
        notes.append(
            f"R-hat and ESS were not computed: {kept.shape[1]} kept draws per "
            f"chain, fewer than {MIN_DIAGNOSTIC_DRAWS}"
        )
        return np.full(p, np.nan), np.full(p, np.nan)
    rhat, ess = rank_rhat_and_bulk_ess(kept)
    if kept.shape[0] < 2:
        notes.append("R-hat was not computed: it needs at least 2 chains")
        return np.full(p, np.nan), np.atleast_1d(ess)
    return np.atleast_1d(rhat), np.atleast_1d(ess)


def mixed(rhat, ess):
    """The run-length rule: every split R-hat and bulk ESS on target.

    R-hat is NaN with one chain: the rule is then the ESS alone.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_setup import mixed
    >>> ess = np.array([150.0])
    >>> mixed(np.array([1.005]), ess), mixed(np.array([1.1]), ess)
    (True, False)
    """
    if np.any(np.isnan(ess)):
        return False
    rhat_ok = np.all(np.isnan(rhat)) or np.all(rhat <= RHAT_MAX)
    return bool(rhat_ok and np.all(ess >= BULK_ESS_MIN))


def worst(values, reduce):
    """``reduce`` over the non-NaN values; NaN (not a warning) if none.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_setup import worst
    >>> float(worst(np.array([1.0, np.nan, 3.0]), np.nanmax))
    3.0
    """
    return reduce(values) if np.any(~np.isnan(values)) else float("nan")


def not_mixed_message(rhat, ess, names, ran, max_iter, kept=None):
    """The warning of chains that missed the rule within ``max_iter``.

    With the kept draws ``kept`` (n_chains, n_draws, n_params), it also
    names the parameters whose chains sit apart (:func:`chains_apart`).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_setup import not_mixed_message
    >>> message = not_mixed_message(np.array([1.2]), np.array([20.0]), ["a"], 50, 50)
    >>> "a (R-hat 1.200, ESS 20)" in message
    True
    """
    missed = []
    for name, r, e in zip(names, rhat, ess, strict=True):
        if not (r <= RHAT_MAX or np.isnan(r)) or not e >= BULK_ESS_MIN:
            missed.append(f"{name} (R-hat {r:.3f}, ESS {e:.0f})")
    apart = "" if kept is None else chains_apart(kept, names)
    return (
        f"The chains did not mix within the budget of max_iter={max_iter} "
        f"iterations per chain ({ran} run by this fit): split R-hat up to "
        f"{worst(rhat, np.nanmax):.3f} where {RHAT_MAX} is wanted and bulk "
        f"ESS down to {worst(ess, np.nanmin):.0f} where {BULK_ESS_MIN} is "
        "wanted, for "
        f"{', '.join(missed)}. Summaries of these draws are unreliable; "
        "increase max_iter, or continue the chains with warm_start=True." + apart
    )


# Chains whose means differ by more than this many of their own standard
# deviations sit in different places: within one mode, two chains of a
# few effective draws each differ by about one sd.
APART_SDS = 2.0
# ... provided each chain has this many effective draws of the parameter on
# its own: chains that barely move (a step far too small) also have
# distant means and small sds, and no modes are to be inferred from them.
APART_MIN_ESS = 10.0


def chains_apart(kept, names):
    """A sentence naming the parameters whose chains sit apart, or "".

    A parameter's chains sit apart when two chain means differ by more than
    :data:`APART_SDS` times the largest within-chain standard deviation
    while every chain has at least :data:`APART_MIN_ESS` effective draws of
    it on its own: the chains then explore different regions (modes, as
    where either of two redundant inputs can carry the signal), which more
    iterations of the same chains may never join.

    Parameters
    ----------
    kept : ndarray of shape (n_chains, n_draws, n_params)
    names : list of str

    Returns
    -------
    str

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_setup import chains_apart
    >>> rng = np.random.default_rng(0)
    >>> kept = rng.normal(size=(2, 500, 2))
    >>> kept[1, :, 0] += 3.0
    >>> message = chains_apart(kept, ["ls", "noise"])
    >>> "apart for ls (chain means" in message, "noise" in message
    (True, False)
    >>> chains_apart(kept[:, :, 1:], ["noise"])
    ''
    """
    kept = np.asarray(kept, dtype=np.float64)
    if kept.shape[0] < 2 or kept.shape[1] < 2:
        return ""
    means, sds = kept.mean(axis=1), kept.std(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        own_ess = np.array([effective_sample_size(chain[None]) for chain in kept])
    found = []
    for j, name in enumerate(names):
        gap = means[:, j].max() - means[:, j].min()
        moving = bool(np.all(own_ess[:, j] >= APART_MIN_ESS))
        if moving and gap > APART_SDS * sds[:, j].max():
            found.append(
                f"{name} (chain means {means[:, j].min():.2f} and "
                f"{means[:, j].max():.2f}, within-chain sd at most "
                f"{sds[:, j].max():.2f})"
            )
    if not found:
        return ""
    return (
        f" The chains sit apart for {', '.join(found)}: the posterior may have "
        "several modes the chains do not cross (one chain's draws are in "
        "chains_), and a longer run of the same chains may not join them."
    )
