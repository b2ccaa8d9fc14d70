"""The sampler side of variational MCMC: the bounded target, the chains'
coordinates and starts, and the run-length rule.
"""

import copy
import dataclasses

import numpy as np

from .._run_length import BULK_ESS_MIN, RHAT_MAX, iterations_still_needed
from .._run_length import further_block as _further_block
from .._sparse import SVGP_WINDOW as _SVGP_WINDOW
from .._thread_pool import ThreadPool
from ..diagnostics import effective_sample_size, rank_rhat_and_bulk_ess
from ..exceptions import NotPSDError
from ..inference._hmc_state import TRACE_FIELDS
from ..inference.adaptation import calibrated_step
from ..inference.affine import (
    coordinates_in,
    diagonal_inverse_mass,
    refine_from_draws,
)
from ..inference.marginal_maps import (
    MIN_EFFECTIVE_DRAWS,
    MarginalMapTarget,
    fit_marginal_maps,
)
from ._trajectory import TrajectoryTarget

# Initial inverse mass of a hyperparameter (log scale): posterior standard
# deviations of log hyperparameters are typically a few tenths.
HYPER_INV_MASS = 0.1
# A sampling block with a divergent transition becomes warm-up, and the
# chains restart with their step times STEP_BACKOFF, at most MAX_BACKOFFS
# times (so down to half the adapted step; the usual remedy, a target
# acceptance of 0.95 rather than 0.8, shortens the step about as much).
# Dual averaging's step is noisy: the smallest of four chains' steps ranged
# from 0.07 to 0.22 over 14 seeds of the README's count data, and the
# largest of them diverged once to five times in 2,000 iterations (see
# pool_step_sizes for the step the chains share).
STEP_BACKOFF = 2.0**-0.5
MAX_BACKOFFS = 2
# The calibrated step at most this many times dual averaging's, and only
# from this many terminal-buffer transitions over all chains (see
# pool_step_sizes): near the target 0.9 the step's relative error is about
# five times that of the pairs' mean acceptance, whose standard error is
# about 0.2 / sqrt(pairs), so 100 pairs give about 10% and the default 200
# (four chains, 50 each) 7%. Fewer, the plain geometric mean is kept.
_MAX_CALIBRATED_RATIO = 2.0
_MIN_CALIBRATION_PAIRS = 100
# Most inducing inputs chosen by default (the former fixed default).
_MAX_DEFAULT_INDUCING = 50


class GuardedTarget:
    """The sampler's view of the target: zero density outside the bounds.

    Hyperparameters beyond the kernel's bounds, or a ``K(Z, Z)`` that is
    not positive definite, give ``-inf``, which the HMC engine rejects as a
    divergence. Picklable, for joblib workers.
    """

    def __init__(self, target, lower, upper):
        self.target = target
        self.lower = lower
        self.upper = upper

    def __call__(self, params):
        h = params[: self.lower.size]
        # The array methods: np.any's dispatch cost more than the test.
        if (h < self.lower).any() or (h > self.upper).any():
            return -np.inf, np.full(params.size, np.nan)
        try:
            return self.target.logp_and_grad(params)
        except NotPSDError:
            return -np.inf, np.full(params.size, np.nan)


def default_n_inducing(n):
    """Inducing inputs by default for ``n`` training points.

    Parameters
    ----------
    n : int

    Returns
    -------
    int
        ``min(50, n, ceil(sqrt(n)))``; see ``n_inducing`` in
        :class:`VariationalMCMCClassifier` for the reasoning.

    Examples
    --------
    >>> from skgp_bayes.variational_mcmc._sampling import default_n_inducing
    >>> default_n_inducing(93), default_n_inducing(300), default_n_inducing(10**5)
    (10, 18, 50)
    """
    return int(min(_MAX_DEFAULT_INDUCING, n, np.ceil(np.sqrt(n))))


class Sampler:
    """The density HMC runs on, its chain starts and first inverse mass.

    With a ``transform`` ``T`` the chains run on ``w``, ``x = x0 + T w``,
    and start from ``w ~ N(0, I)`` (a draw from the Gaussian that the
    curvature describes, so the chains start overdispersed rather than at
    one point), pulled halfway towards ``x0`` until the density is finite
    there (a hyperparameter drawn beyond its bounds).
    """

    # A ModeJumps mixture over x, or None: see jumps().
    mode_jumps = None
    # Searches for more modes from the chains' draws over x (a
    # skgp_bayes._sgld_modes.DrawModeSearch), or None.
    mode_search = None
    # A BoundCoordinates the chains move in, or None.
    coords = None
    # How many leading coordinates refined() may give a sinh map (the
    # hyperparameters), and the maps it fitted, or None.
    n_mapped = 0
    maps = None

    def __init__(
        self, guarded, x0, transform, rng, n_chains, inits=None, inv_mass=None
    ):
        self.transform = transform
        if transform is None:
            self.target, self.inits, self.inv_mass = guarded, inits, inv_mass
            return
        self.target = TrajectoryTarget(guarded, x0, transform)
        inits = rng.standard_normal((n_chains, x0.size))
        for c in range(n_chains):
            for _ in range(30):
                if np.isfinite(self.target(inits[c])[0]):
                    break
                inits[c] *= 0.5
        self.inits = inits
        self.inv_mass = np.ones(x0.size)

    def to_x(self, w, threads=1):
        """The chains' draws ``w`` in ``(theta, v)`` coordinates (``threads``
        is for :meth:`CollapsedSampler.to_x`)."""
        x = self.unmapped(w)
        return x if self.coords is None else self.coords.expand(x)

    def jumps(self):
        """``mode_jumps`` in the coordinates the chains run on, or None."""
        if self.mode_jumps is None or self.transform is None:
            return self.mode_jumps
        return self.mode_jumps.in_coordinates(self.target.shift, self.transform)

    def refined(self, chains, states):
        """The same density in coordinates refined from draws.

        ``chains`` are draws ``(n_chains, n_draws, d)`` and ``states`` the
        chains' current points ``(n_chains, d)``, both in this sampler's
        ``w``; the new sampler starts each chain from its current point,
        mapped, with a unit inverse mass (see :func:`refine_from_draws`).

        The first :attr:`n_mapped` coordinates whose draws are skewed get a
        sinh map fitted to the draws
        (:mod:`~skgp_bayes.inference.marginal_maps`), ``x = g(s)``, and the
        affine coordinates are then refined on ``s``. Not with mode jumps,
        whose proposals are Gaussian in the affine coordinates. Maps this
        sampler already has are replaced, not stacked: the new ones are
        fitted to the draws taken back through them, and map the density
        they were fitted on.
        """
        if self.transform is None:  # the chains move in x itself
            size = chains.shape[-1]
            base, shift, transform = self.target, np.zeros(size), np.eye(size)
        else:
            base, shift, transform = (
                self.target.logp_and_grad,
                self.target.shift,
                self.transform,
            )
        if self.maps is not None:
            base = base.logp_and_grad  # the density the earlier maps mapped
        inner, maps = self.unmapped(chains), None
        if self.n_mapped and self.mode_jumps is None:
            mapped = inner[..., : self.n_mapped]
            with np.errstate(divide="ignore", invalid="ignore"):
                ess = np.atleast_1d(effective_sample_size(mapped))
            maps = fit_marginal_maps(mapped, ess)
        if maps is not None or self.maps is not None:
            # the draws and states in the old frame through the inverse map:
            # refine_from_draws then shrinks towards the curvature's scales
            def in_old_frame(x):
                s = x if maps is None else maps.to_s(x)
                return coordinates_in(shift, transform, s)

            chains = in_old_frame(inner)
            states = in_old_frame(self.unmapped(states))
        if maps is not None:
            base = MarginalMapTarget(base, maps)
        center, factor = refine_from_draws(chains, modes=self.jumps())
        # a copy keeps what a subclass adds (the collapsed sampler's exact
        # v | theta completion of every draw)
        new = copy.copy(self)
        new.maps = maps
        new.transform = transform @ factor
        new.target = TrajectoryTarget(base, shift + transform @ center, new.transform)
        new.inits = coordinates_in(center, factor, states)
        new.inv_mass = np.ones(center.size)
        return new

    def unmapped(self, w):
        """Points ``w`` in the coordinates the chains move, before any sinh map
        (the free ``(theta, v)``, or ``[theta, log s2]``, in bound coordinates
        where the sampler has them)."""
        inner = w if self.transform is None else self.target.to_x(w)
        return inner if self.maps is None else self.maps.to_x(inner)

    @property
    def n_skew_maps(self):
        """Coordinates :meth:`refined` gave a map other than the identity."""
        return 0 if self.maps is None else int(self.maps.mapped.sum())

    def x_inv_mass(self, inv_mass):
        """Diagonal of the inverse mass in ``(theta, v)`` coordinates.

        With sinh maps, linearised at the centre of the coordinates.
        """
        if self.transform is not None:
            inv_mass = diagonal_inverse_mass(self.transform, inv_mass)
        if self.maps is not None:
            slope = self.maps.slope(self.target.shift)
            inv_mass = inv_mass.copy()
            inv_mass[: slope.size] *= slope**2
        if self.coords is None:
            return inv_mass
        # held coordinates never move (an infinite mass); a piled one's is
        # in its own log distance from the bound
        out = np.zeros(self.coords.x0.size)
        out[self.coords.free] = inv_mass
        return out


class CollapsedSampler(Sampler):
    """HMC over ``[theta, log s2]`` alone; each kept draw gets its exact ``v``.

    The chains move the hyperparameters on the collapsed target
    (:class:`~skgp_bayes.targets.collapsed.CollapsedSparseTarget`);
    :meth:`to_x` completes every draw with one draw of ``v | theta`` from
    its Gaussian, so the draws are those of the joint ``(theta, v)``
    posterior and keep its layout. The ``v`` of a chain's ``k``-th draw
    comes from that chain's own generator, drawn once and kept, so a draw
    does not change when later blocks extend the chain.
    """

    def __init__(
        self, guarded, x0, transform, rng, n_chains, target, seed, coords=None
    ):
        n_hyper = x0.size
        if coords is not None:  # the chains move in those coordinates
            guarded, x0 = coords, coords.start
        inits = inv_mass = None
        if transform is None:
            # No usable curvature (an optimum on a bound): start a few tenths
            # from the optimum, inside the bounds, pulled halfway back while
            # the density is not finite there.
            inits = x0 + np.sqrt(HYPER_INV_MASS) * rng.standard_normal(
                (n_chains, x0.size)
            )
            inits = np.clip(inits, guarded.lower, guarded.upper)
            for c in range(n_chains):
                for _ in range(30):
                    if np.isfinite(guarded(inits[c])[0]):
                        break
                    inits[c] = x0 + 0.5 * (inits[c] - x0)
            inv_mass = np.full(x0.size, HYPER_INV_MASS)
        super().__init__(guarded, x0, transform, rng, n_chains, inits, inv_mass)
        self.n_mapped = x0.size
        self.coords = coords
        self.conditional = target
        self._rngs = [np.random.default_rng([seed, c]) for c in range(n_chains)]
        # each chain's draws so far, completed: [theta, log s2, v] per row
        self._completed = [
            np.empty((0, n_hyper + target.n_inducing)) for _ in range(n_chains)
        ]

    def to_x(self, w, threads=1):
        """The draws ``w`` as ``[theta, log s2, v]``, each with its own ``v``.

        A chain that extends the draws of an earlier call keeps their
        ``v``; one that does not (its draws dropped after a divergence, see
        :func:`restarted_with_smaller_step`) has every ``v`` drawn anew:
        a ``v`` drawn for another ``theta`` is no draw of ``v | theta``.
        With ``threads`` above 1 the chains' new draws are completed on
        that many threads, each chain from its own stream, so the draws are
        the same: with the exact target each ``v`` costs two factorisations
        of the rows (one compiled call, without the interpreter lock for
        all of a chain's new draws), about 3 of grunfeld's 15 s fit (154
        rows, 1,949 iterations of four chains).
        """
        hyper = super().to_x(w)
        n_hyper = hyper.shape[2]
        kept = []
        for c, chain in enumerate(hyper):
            done = self._completed[c]
            if done.shape[0] > chain.shape[0] or not np.array_equal(
                chain[: done.shape[0]], done[:, :n_hyper]
            ):
                done = done[:0]
            kept.append(done)

        def completed(c):
            new = hyper[c][kept[c].shape[0] :]
            if not new.shape[0]:
                return kept[c]
            more = self.conditional.sample_v(new, self._rngs[c])
            return np.concatenate([kept[c], np.hstack([new, more])])

        chains = range(len(kept))
        if threads > 1 and len(kept) > 1:
            with ThreadPool(min(threads, len(kept))) as pool:
                self._completed = list(pool.map(completed, chains))
        else:
            self._completed = [completed(c) for c in chains]
        return np.stack(self._completed)

    def x_inv_mass(self, inv_mass):
        """Inverse mass of the hyperparameters; NaN for ``v``, which HMC never moves."""
        return np.concatenate(
            [super().x_inv_mass(inv_mass), np.full(self.conditional.n_inducing, np.nan)]
        )


def merge(first, then):
    """One chain's :class:`HMCResult` followed by its continuation."""
    joined = {
        f: np.concatenate([getattr(first, f), getattr(then, f)]) for f in TRACE_FIELDS
    }
    return dataclasses.replace(
        first,
        **joined,
        acceptance_rate=float(np.mean(joined["accept_prob"][first.n_warmup :])),
        n_divergent=first.n_divergent + then.n_divergent,
        elapsed=first.elapsed + then.elapsed,
        final_state=then.final_state,
        **_summed_counts(first, then),
    )


# The per-chain move counters that two consecutive runs add up.
_COUNTS = ("n_jumps", "n_jumps_accepted", "n_retried", "n_retried_accepted")


def _summed_counts(first, then):
    return {f: getattr(first, f) + getattr(then, f) for f in _COUNTS}


def retried_counts(results):
    """Second stages tried and accepted, over the chains' results."""
    return (
        sum(r.n_retried for r in results),
        sum(r.n_retried_accepted for r in results),
    )


def pool_step_sizes(results, tail=0, target_accept=None):
    """The chains' results after warm-up, all at one step.

    Each chain's dual averaging adapts to the part of the posterior its
    warm-up visited, and the chains sample one posterior: on modechoice the
    four steps ranged from 0.115 to 0.204, on the binned coal counts
    (Poisson) from 0.114 to 0.207. Their geometric mean pools the four
    noisy estimates of one step. A region that needs a shorter step than
    warm-up saw shows itself by a divergence, which
    :func:`restarted_with_smaller_step` answers; the smallest of the four
    steps, used before the restart existed, paid for that region on every
    fit. Over 14 default fits (breast cancer, modechoice and coal counts,
    4-6 seeds each, quiet) the geometric mean took 271 s against 338 s with
    the smallest step, with 2 restarts against 1 and no warning either way.

    With ``tail`` and ``target_accept``, the step is then calibrated
    (:func:`~skgp_bayes.inference.adaptation.calibrated_step`) on the last
    ``tail`` warm-up transitions of all chains (at least 100 of them in
    all), the terminal buffer where only the step adapts: dual averaging's
    averaged step rejects far less often than its target says. The
    calibrated step is kept between the
    geometric mean and twice it: the correction only undoes that bias,
    which shortens the step, and beyond twice it the fitted law would be
    extrapolated. Measured on default fits at target 0.9 (one run each,
    quiet): leapfrog steps per unit of bulk ESS of the slowest parameter in
    sampling fell from 217 to 155 on breast cancer, 269 to 213 on iris, 71
    to 56 on modechoice and 17 to 13 on diabetes, with realised
    acceptances of 0.93-0.94 against 0.96-0.975, no divergence, and the
    same test log loss or density to 0.002.
    """
    step = float(np.exp(np.mean([np.log(r.step_size) for r in results])))
    if tail and target_accept is not None:
        steps = np.concatenate([r.step_sizes[-tail:] for r in results])
        accept = np.concatenate([r.accept_prob[-tail:] for r in results])
        calibrated = None
        if steps.size >= _MIN_CALIBRATION_PAIRS:
            calibrated = calibrated_step(steps, accept, target_accept)
        if calibrated is not None:
            step = min(max(calibrated, step), _MAX_CALIBRATED_RATIO * step)
    return [dataclasses.replace(r, step_size=step) for r in results]


def restarted_with_smaller_step(results):
    """The chains' results with every iteration so far counted as warm-up.

    A divergence after warm-up shows that the pooled step is too large in
    some region the warm-up did not reach (the neck of a funnel). The draws
    so far are dropped, their iterations become warm-up, and the chains
    continue from where they are with the step shortened by
    ``STEP_BACKOFF``: the kept draws all come from one fixed kernel, as
    after any warm-up.
    """
    return [
        dataclasses.replace(
            r,
            samples=r.samples[:0],
            log_density=r.log_density[:0],
            n_warmup=r.accept_prob.size,
            acceptance_rate=np.nan,
            n_divergent=0,
            step_size=r.step_size * STEP_BACKOFF,
        )
        for r in results
    ]


def after_warmup(first, then):
    """``then``, with all of ``first``'s iterations counted as its warm-up."""
    joined = {
        f: np.concatenate([getattr(first, f), getattr(then, f)])
        for f in TRACE_FIELDS[2:]  # the statistics, not the kept draws
    }
    return dataclasses.replace(
        then,
        **joined,
        n_warmup=first.accept_prob.size + then.n_warmup,
        elapsed=first.elapsed + then.elapsed,
        **_summed_counts(first, then),
    )


def rhat_and_bulk_ess(chains):
    """Rank-normalised split R-hat and bulk ESS per parameter (NaN with too few draws).

    The bulk ESS is the ESS of the rank-normalised split chains (Vehtari et
    al., 2021): it measures how well the draws pin down the centre of each
    marginal whatever its tails.
    """
    n_params = chains.shape[2]
    if chains.shape[1] < 4:
        return np.full(n_params, np.nan), np.full(n_params, np.nan)
    rhat, ess = rank_rhat_and_bulk_ess(chains)
    return np.atleast_1d(rhat), np.atleast_1d(ess)


def further_block(done, first_block):
    """Iterations of the next sampling block after ``done`` kept ones.

    A quarter of ``done`` (rounded up), at least one and at most
    ``first_block``: :func:`skgp_bayes._run_length.further_block`, capped
    so that a check comes at most a first block later.

    Examples
    --------
    >>> from skgp_bayes.variational_mcmc._sampling import further_block
    >>> further_block(250, 250), further_block(1000, 250)
    (63, 250)
    """
    return _further_block(done, most=first_block)


def run_length_met(chains):
    """``(met, worst R-hat, worst bulk ESS)`` of the run-length rule."""
    return _verdict(*rhat_and_bulk_ess(chains))


def _verdict(rhat, ess):
    if not np.any(np.isfinite(rhat)):
        return False, np.nan, np.nan
    worst_rhat, worst_ess = float(np.nanmax(rhat)), float(np.nanmin(ess))
    return worst_rhat <= RHAT_MAX and worst_ess >= BULK_ESS_MIN, worst_rhat, worst_ess


class RunLengthRule:
    """:func:`run_length_met` over chains that grow block by block, for less.

    One parameter that misses the rule fails it, so while the parameters
    that missed at the last check still miss, only their draws are ranked;
    all of them are once those pass. The verdicts are
    :func:`run_length_met`'s at every check, and the rank transforms of all
    draws of all parameters, repeated after every block, are mostly
    avoided: on breast cancer's default classifier fit (49 parameters, 17
    checks up to 3,449 iterations of four chains) the checks took 0.39 s
    instead of 1.83 of a 15-16 s fit.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.variational_mcmc._sampling import RunLengthRule
    >>> chains = np.random.default_rng(0).standard_normal((4, 500, 3))
    >>> chains[0, :, 1] += 1.0  # one chain of one parameter elsewhere
    >>> rule = RunLengthRule()
    >>> rule.met(chains)[0], rule.missed
    (False, array([1]))
    >>> chains[0, :, 1] -= 1.0
    >>> bool(rule.met(chains)[0]), rule.missed.size
    (True, 0)
    """

    def __init__(self):
        # the parameters that missed at the last check
        self.missed = np.zeros(0, dtype=np.int64)
        # (R-hat, ESS) of every parameter where the last check computed them
        self.every = None

    def met(self, chains, every=False):
        """``(met, worst R-hat, worst bulk ESS)``.

        The worst values are over the parameters checked: all of them with
        ``every``, or where the rule is met.
        """
        if not every and self.missed.size:
            rhat, ess = rhat_and_bulk_ess(chains[:, :, self.missed])
            still = _missing(rhat, ess)
            if still.any():
                self.missed = self.missed[still]
                self.every = None
                return _verdict(rhat, ess)
        rhat, ess = rhat_and_bulk_ess(chains)
        self.missed = np.flatnonzero(_missing(rhat, ess))
        self.every = rhat, ess
        return _verdict(rhat, ess)


def remapped_sampler(sampler, chains, states, span, cost):
    """``sampler`` refined again from its sampling draws, with its skewed
    slow coordinates mapped, or None.

    The warm-up fits the sinh maps to its draws (:meth:`Sampler.refined`)
    and leaves out every coordinate with fewer than
    :data:`~skgp_bayes.inference.marginal_maps.MIN_EFFECTIVE_DRAWS`
    effective draws there: exactly the slow ones the maps are for. On a
    fresh split of the US macroeconomic series (142 rows) the two long-tailed
    log length scales had 15-16 effective warm-up draws, were not mapped,
    and the chains ran 2,449 iterations to split R-hat <= 1.01; with both
    mapped from the first block's draws, 313 after a new warm-up
    (benchmarks/RESULTS.md). The rule follows the SGLD chains'
    (:mod:`skgp_bayes._sgld_refine`): every coordinate that misses the
    run-length rule is one of the first :attr:`~Sampler.n_mapped` and gets
    a map (a slow symmetric coordinate is slow for a reason maps do not
    touch), every coordinate has at least ``MIN_EFFECTIVE_DRAWS`` effective
    draws so that each one's skew is tested, and at their rate so far the
    chains would still need more than ``cost`` iterations (a new warm-up
    and a first block). That rate counts R-hat's excess as well as the
    bulk ESS (:func:`~skgp_bayes._run_length.iterations_still_needed`):
    these runs are held by R-hat, and on that split the bulk ESS was 87 of
    the 100 wanted. The caller asks once, after the first sampling block;
    the SGLD chains, which ask after every block, keep the ESS alone, as
    the largest of many noisy R-hats asked again and again fired where they
    were about to meet the rule (doc/variational_mcmc.rst). Not with mode
    jumps, nor without the curvature's coordinates.

    Parameters
    ----------
    sampler : Sampler
    chains : ndarray of shape (n_chains, n_draws, d)
        The sampling draws so far, in the sampler's ``w``.
    states : ndarray of shape (n_chains, d)
        The chains' current points.
    span : int
        Iterations per chain the draws come from.
    cost : int
        Iterations per chain of a new warm-up and a first block.

    Returns
    -------
    Sampler or None
    """
    if sampler.transform is None or not sampler.n_mapped:
        return None
    if sampler.mode_jumps is not None:
        return None
    rhat, ess = rhat_and_bulk_ess(sampler.unmapped(chains))
    measured = np.isfinite(ess)
    slow = np.flatnonzero(_missing(rhat, ess) & measured)
    if not slow.size or slow[-1] >= sampler.n_mapped:
        return None
    if np.any(ess[measured] < MIN_EFFECTIVE_DRAWS):
        return None
    if iterations_still_needed(span, rhat, ess) <= cost:
        return None
    new = sampler.refined(chains, states)
    if new.maps is None or not np.all(new.maps.mapped[slow]):
        return None
    return new


def _missing(rhat, ess):
    """The parameters that miss the rule (NaN, like ``_verdict``, misses none)."""
    with np.errstate(invalid="ignore"):
        return (rhat > RHAT_MAX) | (ess < BULK_ESS_MIN)


def svgp_recent_gain(trace):
    if len(trace) <= _SVGP_WINDOW:
        return np.nan
    return float(trace[-1] - trace[-1 - _SVGP_WINDOW])
