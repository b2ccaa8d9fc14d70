"""Stage 2 of a variational MCMC fit: the HMC chains.

The sampler's coordinates and starts, the warm-up (with its refinement of
the coordinates), the sampling blocks of the run-length rule and the
warnings on the chains, for both the joint and the collapsed target. The
estimator hands in the engine (``run_chains``) and how to report; nothing
here knows which estimator runs it.
"""

import copy
import dataclasses
import functools
import time
from collections.abc import Callable

import numpy as np
from joblib import effective_n_jobs

from .._base import Printer
from .._progress import engine_verbose, fit_progress
from .._run_length import BULK_ESS_MIN, RHAT_MAX, iterations_still_needed
from .._sgld_refine import searched_too_recently
from .._warnings import warn_user
from ..exceptions import SamplerWarning
from ..inference._chain_threads import default_chain_threads
from ..inference.adaptation import terminal_buffer
from ..inference.affine import curvature_preconditioner
from ..likelihoods import RobustMax
from ..predictive.sparse import q_draw, q_marginal_variances
from ._sampling import (
    HYPER_INV_MASS,
    MAX_BACKOFFS,
    RunLengthRule,
    Sampler,
    after_warmup,
    further_block,
    merge,
    pool_step_sizes,
    remapped_sampler,
    restarted_with_smaller_step,
    retried_counts,
    rhat_and_bulk_ess,
)
from ._trajectory import TrajectoryTarget

# Default leapfrog bound (max_leapfrog=None): steps up to an integration
# time of pi, at most _LEAPFROG_CAP of them (the cap only stops a step size
# collapsed towards zero from making one transition endless). _TYPICAL_STEP
# is the adapted step seen in the curvature-scaled coordinates (0.15 to
# 0.4), used only to cost the curvature against the warm-up.
_LEAPFROG_CAP = 1024
_TYPICAL_STEP = 0.3
# A static trajectory that fails (rejected with an energy error above
# inference.leapfrog.RETRY_ENERGY_ERROR, or divergent) is tried again with
# the step divided by _RETRY_FACTOR over the same time (delayed rejection,
# see skgp_bayes.inference.leapfrog). Leapfrog is stable while the step
# times the local frequency stays below 2, and the pooled step is
# calibrated to an acceptance of 0.9 in the bulk, where that product is
# below 1: a factor of 4 keeps the second stage stable where the curvature
# is up to 16 times the bulk's. The divergent trajectories of default fits
# met such a region as a cliff in the log density, the gradient's norm
# jumping from about 10 to 100-250 within a step (modechoice, breast
# cancer). Failed trajectories are rare (1-4% of the transitions of the
# default fits measured, warm-up included), so the 5 extra trajectories'
# worth of a retry cost little in all; without it each divergence
# restarted the sampling at a shorter step for every transition
# (restarted_with_smaller_step), doubling some fits' time. The restart
# stays for second stages that diverge too.
_RETRY_FACTOR = 4
# The least compiled work a transition must hold (its mean leapfrog steps
# at the chains' step times a step's time) for the chains to go on threads
# by default. The interpreted part of a transition (the engine's step,
# records, the shared progress flag) holds the GIL, 40-65 us under the
# profiler. benchmarks/bench_chain_threads.py, same draws each way (one
# BLAS thread, 2 cores): at 42-79 us of compiled work a transition (coal,
# mcycle, engel, statecrime, spector, heart_status) forced threads took
# 0.98-1.35 times as long as one chain after another; at 212-616 us (iris,
# wine, modechoice, macrodata) 1.45-1.65 times less. Iris and wine, steps
# of 33-45 us, 6.5-7.5 a transition, fell below the former rule (a step of
# at least 50 us) and ran on one thread.
THREADED_TRANSITION_SECONDS = 150e-6
# The same for static transitions (and their mode jumps), which run in
# compiled blocks where the trajectories are compiled (inference.HMCBlock),
# warm-up's too, and hold the GIL only between blocks: any compiled work.
# Measured (one BLAS thread, 2 cores, the same draws each way, three fits each):
# coal, mcycle, cpunish and statecrime (11-93 rows) 0.85-1.11 of the time
# on one thread, spector 0.75, iris (105 rows, three classes) 0.56.
THREADED_BLOCK_SECONDS = 0.0
# Shortest warm-up split into a curvature-scaled quarter, a quarter of draws
# that refine the coordinates, and a half in the refined coordinates: each
# engine warm-up of at least 20 iterations adapts a mass matrix.
_MIN_REFINED_WARMUP = 80


@dataclasses.dataclass
class ChainRun:
    """What the chains returned, in ``(theta, v)`` coordinates.

    Attributes
    ----------
    chains : ndarray of shape (n_chains, n_kept, n_params)
    results : list of HMCResult
        One merged result per chain.
    n_blocks : int
        Sampling blocks the run-length rule took.
    seconds : float
        Time spent from the sampler's set-up to the last block.
    n_backoffs : int
        Restarts with a shorter step after a divergence (see
        :func:`~skgp_bayes.variational_mcmc._sampling.restarted_with_smaller_step`).
    sampler : Sampler or None
        The sampler the kept draws came from (refined in warm-up): it maps
        the engine's inverse masses to ``(theta, v)``.
    rhat_and_ess : tuple of ndarray or None
        Every parameter's split R-hat and bulk ESS of ``chains``, where the
        last check of the run-length rule computed them all.
    maps_refitted : bool
        Whether the coordinates were refined again after a sampling block
        (``HMCStage._remapped``).
    """

    chains: np.ndarray
    results: list
    n_blocks: int
    seconds: float
    n_backoffs: int = 0
    sampler: object = None
    rhat_and_ess: tuple = None
    maps_refitted: bool = False


class DrawSearches:
    """When the chains' draws start searches for more modes, and how.

    As the SGLD chains' (:mod:`skgp_bayes._sgld_refine`): after a sampling
    block that misses the run-length rule, where the sampler can search
    (its ``mode_search``, set for the collapsed target in the
    hyperparameters' own coordinates), the budget holds a new warm-up and a
    first block (``cost``), and at their rate so far the chains would need
    more than that; again only once the chains have run
    :data:`~skgp_bayes._sgld_refine.SEARCH_AGAIN_AFTER` times the sampling
    iterations they had at the last search. The searches draw no random
    numbers: where they find nothing new the chains are the same to the
    bit.

    Parameters
    ----------
    cost : int
        Iterations per chain of a new warm-up and a first block.

    Examples
    --------
    >>> from skgp_bayes.variational_mcmc._chains import DrawSearches
    >>> searches = DrawSearches(550)
    >>> searches.last is None and searches.found == 0
    True
    """

    def __init__(self, cost):
        self.cost = cost
        self.last = None  # sampling iterations per chain at the last search
        self.found = 0  # searches that found more modes

    def due(self, sampler, results, lengths):
        """The draws to search from now, ``(sampled, hyperparameters, rhat,
        ess)``, or None; ``lengths`` is ``(done, sampled, budget)``: the
        kept sampling iterations per chain, all of them this fit, and the
        sampling budget."""
        done, sampled, budget = lengths
        if sampler.mode_search is None or budget - done < self.cost:
            return None
        if searched_too_recently(self.last, sampled):
            return None
        hyper = sampler.unmapped(np.stack([r.samples for r in results]))
        rhat, ess = rhat_and_bulk_ess(hyper)
        if iterations_still_needed(done, rhat, ess) <= self.cost:
            return None
        return sampled, hyper, rhat, ess

    def search(self, sampler, states, due):
        """The mixture of more modes than the sampler's, or None (counted),
        from the draws ``due`` (:meth:`due`'s answer)."""
        self.last, hyper, rhat, ess = due
        ends = sampler.unmapped(states)
        jumps = sampler.mode_search(hyper, ends, rhat, ess, sampler.mode_jumps)
        self.found += jumps is not None
        return jumps


@dataclasses.dataclass
class HMCStage:
    """The chains' settings, their engine and how they report.

    Parameters
    ----------
    n_chains, n_warmup, n_samples, max_samples, thin, max_leapfrog, \
sampler, target_accept, n_jobs
        The estimator's parameters of the same names.
    run_chains : callable
        The engine, :func:`~skgp_bayes.inference.run_hmc_chains`.
    progress : callable
        ``progress(stage, length, n_runs=..., in_process=...)``, a
        :func:`~skgp_bayes._progress.fit_progress` bound to the estimator.
    log : callable or None
        Writes one progress line; None when not verbose.
    engine_verbose : int
        The engine's ``verbose``.
    name : str
        The prefix of the engine's lines.

    Examples
    --------
    >>> from skgp_bayes import VariationalMCMCClassifier
    >>> from skgp_bayes.inference import run_hmc_chains
    >>> from skgp_bayes.variational_mcmc._chains import HMCStage
    >>> stage = HMCStage.of(VariationalMCMCClassifier(), run_hmc_chains)
    >>> stage.leapfrog_options()["max_leapfrog"], stage.n_chains
    (1024, 4)
    """

    n_chains: int
    n_warmup: int
    n_samples: int
    max_samples: int
    thin: int
    max_leapfrog: int | None
    sampler: str
    target_accept: float
    n_jobs: int | None
    run_chains: Callable
    progress: Callable
    log: Callable | None
    engine_verbose: int
    name: str

    @classmethod
    def of(cls, estimator, run_chains):
        """The stage of ``estimator``'s fit, its parameters read once."""
        fields = (
            "n_chains",
            "n_warmup",
            "n_samples",
            "max_samples",
            "thin",
            "max_leapfrog",
            "sampler",
            "target_accept",
            "n_jobs",
        )
        return cls(
            **{f: getattr(estimator, f) for f in fields},
            run_chains=run_chains,
            progress=functools.partial(fit_progress, estimator),
            log=estimator._log if estimator.verbose else None,
            engine_verbose=engine_verbose(estimator),
            name=type(estimator).__name__,
        )

    def leapfrog_options(self):
        """The engine's step bound: a time of pi by default (see max_leapfrog).

        Static trajectories that fail are retried with a shorter step
        (``_RETRY_FACTOR``). For NUTS, the deepest tree whose ``2^k - 1``
        steps fit in ``max_leapfrog`` (``k = 10`` by default).
        """
        if self.sampler == "nuts":
            cap = _LEAPFROG_CAP - 1 if self.max_leapfrog is None else self.max_leapfrog
            return {"algorithm": "nuts", "max_tree_depth": int(np.log2(cap + 1))}
        retry = {"delayed_rejection": _RETRY_FACTOR}
        if self.max_leapfrog is None:
            return {"max_leapfrog": _LEAPFROG_CAP, "trajectory_length": np.pi, **retry}
        return {"max_leapfrog": self.max_leapfrog, **retry}

    def _engine_options(self):
        """The engine options every run of the chains shares."""
        return dict(
            thin=self.thin, target_accept=self.target_accept, **self.leapfrog_options()
        )

    def mean_leapfrog(self, step_size=None):
        """Leapfrog steps of a transition on average.

        At the chains' ``step_size`` where it is known (the static bound is
        drawn uniformly from 1 to ``ceil(pi / step)``), at a typical adapted
        step otherwise (to cost the curvature before any adaptation). A
        NUTS trajectory runs until it has turned, about a full time of pi
        and up to twice that with the doubling: twice the static mean.
        """
        step = _TYPICAL_STEP if step_size is None else float(step_size)
        if self.max_leapfrog is None:
            static = (min(_LEAPFROG_CAP, np.ceil(np.pi / step)) + 1) / 2
        else:
            static = (self.max_leapfrog + 1) / 2
        return 2 * static if self.sampler == "nuts" else static

    def joint_sampler(self, guarded, target, hyper, q_mean, q_L, rng):
        """Coordinates, starting points and initial inverse mass of HMC.

        The chains sample ``w`` with ``(theta, v) = x0 + T w``, ``T`` from
        the curvature of the target at the Gaussian approximation's point
        ``x0`` (see the module notes of :mod:`skgp_bayes.variational_mcmc`),
        when that costs at most one chain's warm-up in gradients; otherwise
        ``(theta, v)`` directly with the variances of ``q(v)`` as the first
        inverse mass.
        """
        x0 = np.concatenate([hyper, np.asarray(q_mean).reshape(-1)])
        d = x0.size
        warmup_gradients = self.n_warmup * self.mean_leapfrog()
        transform = None
        # The robust-max likelihood is piecewise constant in f: a Hessian
        # taken at one point describes no neighbourhood of it. Measured on
        # noise-free three-class data, curvature-scaled chains misclassified
        # up to 40% of the training points where unscaled ones got all right.
        smooth = not isinstance(target.likelihood, RobustMax)
        if smooth and 2 * d <= warmup_gradients:
            transform = curvature_preconditioner(guarded, x0)
        if transform is not None:
            sampler = Sampler(guarded, x0, transform, rng, self.n_chains)
            sampler.n_mapped = hyper.size  # v is Gaussian given theta a priori
            return sampler
        C, m = target.n_latent, target.n_inducing
        inits = np.empty((self.n_chains, d))
        for c in range(self.n_chains):
            z = rng.standard_normal((C, m))
            v = q_draw(q_mean, q_L, z)
            inits[c] = np.concatenate([hyper, v.reshape(-1)])
        q_var = q_marginal_variances(q_L).reshape(-1)
        inv_mass = np.concatenate(
            [np.full(hyper.size, HYPER_INV_MASS), np.maximum(q_var, 1e-4)]
        )
        return Sampler(guarded, None, None, rng, self.n_chains, inits, inv_mass)

    def sample(self, sampler, seed, t_start):
        """Warm-up and sampling blocks until the run-length rule is met.

        Returns a :class:`ChainRun`: the kept draws ``(n_chains, n_kept,
        n_params)`` in ``(theta, v)`` coordinates, one merged
        :class:`HMCResult` per chain and the number of sampling blocks.
        """
        options = self._engine_options()
        n_warmup, first = self.n_warmup, None
        if sampler.transform is not None and n_warmup >= _MIN_REFINED_WARMUP:
            sampler, n_warmup, first = self._refine(sampler, seed, options)
        results = self._warmup(sampler, seed, options, n_warmup, first)
        if first is not None:
            results = [after_warmup(a, b) for a, b in zip(first, results, strict=True)]
        results = self._pooled(results, n_warmup)
        budget = max(self.max_samples, self.n_samples)
        done, n_blocks, n_runs, backoffs = 0, 0, 0, 0
        refit_tried, refitted = False, False
        # sampling iterations per chain this fit ran, kept or not, and the
        # searches for modes from the draws (DrawSearches)
        sampled, searches = 0, DrawSearches(self.n_samples + n_warmup)
        steps = [r.step_size for r in results]
        rule, threads = RunLengthRule(), self._workers(sampler, steps)["threads"]
        while True:
            wanted = further_block(done, self.n_samples) if done else self.n_samples
            block = min(wanted, budget - done)
            # [seed, 0] drew the refinement's iterations.
            n_runs += 1
            more = self._further_block(sampler, results, [seed, n_runs], block, options)
            results = [merge(a, b) for a, b in zip(results, more, strict=True)]
            if backoffs < MAX_BACKOFFS and any(r.n_divergent for r in more):
                backoffs += 1
                results = restarted_with_smaller_step(results)
                done, n_blocks = 0, 0
                if self.log is not None:
                    self.log(
                        "HMC: a divergent transition; the draws so far become "
                        f"warm-up and the chains restart with step "
                        f"{results[0].step_size:.3g}"
                    )
                continue
            done += block
            n_blocks += 1
            chains = sampler.to_x(np.stack([r.samples for r in results]), threads)
            # a log line reports every parameter's worst values
            met, rhat, ess = rule.met(chains, every=self.log is not None)
            if self.log is not None:
                self.log(
                    f"HMC: {done} sampling iterations per chain, max R-hat "
                    f"{rhat:.3f}, min bulk ESS {ess:.0f} "
                    f"({time.perf_counter() - t_start:.1f} s)"
                )
            if met or done >= budget:
                seconds = time.perf_counter() - t_start
                return ChainRun(
                    chains, results, n_blocks, seconds, backoffs, sampler, rule.every,
                    refitted,
                )  # fmt: skip
            sampled += block
            due = searches.due(sampler, results, (done, sampled, budget))
            if due:
                found = self._with_found_modes(
                    sampler, results, (done, budget), (searches, due), (seed, n_warmup)
                )
                if found is not None:
                    sampler, results, budget = found
                    done, n_blocks, rule = 0, 0, RunLengthRule()
                    continue
            if not refit_tried:
                refit_tried = True
                refit = self._remapped(sampler, results, done, budget, seed, n_warmup)
                if refit is not None:
                    sampler, results, budget = refit
                    done, n_blocks, rule, refitted = 0, 0, RunLengthRule(), True

    def _with_found_modes(self, sampler, results, lengths, search, seeds):
        """The chains with jumps between more modes, found from their draws.

        Where :meth:`DrawSearches.search` finds modes the chains do not
        jump between, each chain goes on from where it is, in coordinates
        refined from the draws (without sinh maps, which the jumps'
        Gaussian proposals exclude), with the new mixture and a warm-up of
        ``n_warmup`` iterations; everything before counts as warm-up, as
        in :meth:`_remapped`. ``lengths`` is ``(done, budget)``, ``search``
        the :class:`DrawSearches` and the draws it found due, and ``seeds``
        ``(seed, n_warmup)``. Returns ``(sampler, results,
        sampling budget left)``, or None where nothing new was found.
        """
        (done, budget), (searches, due), (seed, n_warmup) = lengths, search, seeds
        draws = np.stack([r.samples for r in results])
        states = np.stack([r.final_state for r in results])
        jumps = searches.search(sampler, states, due)
        if jumps is None:
            return None
        with_jumps = copy.copy(sampler)
        with_jumps.mode_jumps = jumps
        new = with_jumps.refined(draws, states)
        if self.log is not None:
            self.log(
                f"HMC: {jumps.describe()} from searches that started where the "
                f"chains went, after {searches.last} sampling iterations per "
                f"chain; the chains jump between them and adapt again for "
                f"{n_warmup} iterations"
            )
        stream = [seed, 0, 2, searches.found]  # [seed, 0, 1] is _remapped's
        results = self._adapted_again(new, results, stream, n_warmup)
        return new, results, budget - done - n_warmup

    def _remapped(self, sampler, results, done, budget, seed, n_warmup):
        """Once per fit, after a block that missed the run-length rule: the
        chains in coordinates refined again from their sampling draws, with
        sinh maps for the skewed slow ones
        (:func:`~skgp_bayes.variational_mcmc._sampling.remapped_sampler`).

        Each chain goes on from where it is, with a warm-up of ``n_warmup``
        iterations (the refinement's second half) in the new coordinates;
        everything before counts as warm-up. Returns ``(sampler, results,
        sampling budget left)``, or None where the rule says no or the
        budget cannot hold that warm-up and a first block.
        """
        cost = n_warmup + self.n_samples
        if budget - done < cost:
            return None
        draws = np.stack([r.samples for r in results])
        states = np.stack([r.final_state for r in results])
        new = remapped_sampler(sampler, draws, states, done, cost)
        if new is None:
            return None
        if self.log is not None:
            self.log(
                f"HMC: sinh maps for {new.n_skew_maps} skewed coordinates, fitted "
                f"to {done} sampling iterations per chain; those draws become "
                f"warm-up and the chains adapt again for {n_warmup} iterations"
            )
        results = self._adapted_again(new, results, [seed, 0, 1], n_warmup)
        return new, results, budget - done - n_warmup

    def _adapted_again(self, new, results, stream, n_warmup):
        """The chains from where they are, in ``new``'s coordinates, after
        a warm-up of ``n_warmup`` iterations drawn from the random
        ``stream``: every draw before counts as warm-up. Returns the pooled
        results (:meth:`_pooled`)."""
        new.step_size = np.array([r.step_size for r in results])
        more = self._warmup(new, stream, self._engine_options(), n_warmup, results)
        results = [after_warmup(a, b) for a, b in zip(results, more, strict=True)]
        return self._pooled(results, n_warmup)

    def _pooled(self, results, n_warmup):
        """The chains after warm-up at one step, calibrated for static HMC.

        :func:`~skgp_bayes.inference.adaptation.calibrated_step` fits the
        leapfrog's acceptance law of static trajectories; NUTS's statistic
        averages over a tree, and its step stays dual averaging's.
        """
        if self.sampler == "nuts":
            return pool_step_sizes(results)
        return pool_step_sizes(results, terminal_buffer(n_warmup), self.target_accept)

    def _warmup(self, sampler, seed, options, n_warmup, first):
        """(The rest of) warm-up: each chain adapts its step and mass."""
        steps = None if first is None else sampler.step_size
        with self._progress("HMC warm-up", n_warmup) as progress:
            return self.run_chains(
                sampler.target,
                sampler.inits,
                random_state=seed,
                **self._workers(sampler, steps),
                n_warmup=n_warmup,
                n_samples=0,
                inv_mass=sampler.inv_mass,
                step_size=steps,
                verbose=self.engine_verbose,
                print_fn=Printer(self.name),
                progress=progress.engine,
                jumps=sampler.jumps(),
                **options,
            )

    def _further_block(self, sampler, results, seed, block, options):
        """``block`` more iterations per chain, adaptation held."""
        steps = np.array([r.step_size for r in results])
        with self._progress("HMC chains", block) as progress:
            return self.run_chains(
                sampler.target,
                np.stack([r.final_state for r in results]),
                random_state=seed,
                **self._workers(sampler, steps),
                n_warmup=0,
                n_samples=block,
                step_size=steps,
                inv_mass=np.stack([r.inv_mass for r in results]),
                adapt_step_size=False,
                adapt_mass=False,
                verbose=max(0, self.engine_verbose - 1),
                print_fn=Printer(self.name),
                progress=progress.engine,
                jumps=sampler.jumps(),
                **options,
            )

    def _workers(self, sampler, step_sizes=None):
        """How the chains share the machine: ``run_chains``' ``n_jobs`` and ``threads``.

        With ``n_jobs=None`` the chains run on threads where their
        trajectories are compiled and release the GIL and a transition at
        the chains' ``step_sizes`` (their median; a typical step before
        adaptation) holds enough compiled work to pay for them
        (``THREADED_TRANSITION_SECONDS``), as many as Numba's thread count
        (:func:`numba.get_num_threads`; ``NUMBA_NUM_THREADS``, which
        joblib's workers set to their share of the cores), up to one per
        chain: like BLAS's threads, a default use of the cores that changes
        no result. Breast cancer's default fit (300 rows, 30 inputs, 2
        cores): 21.1 s one chain after another, 13.3 s on threads, the same
        draws. Interpreted trajectories hold the GIL most of the time and
        stay on one thread, as does a Numba threading layer that cannot be
        entered from two threads at once.
        """
        step = None if step_sizes is None else float(np.median(step_sizes))
        # Static transitions and their mode jumps run in compiled blocks
        # where the trajectories are compiled (HMCBlock), and hold the GIL
        # only between them.
        blocks = self.sampler != "nuts"
        threads = chain_threads(
            self.n_jobs,
            sampler.target,
            self.n_chains,
            sampler.inits[0],
            self.mean_leapfrog(step),
            THREADED_BLOCK_SECONDS if blocks else THREADED_TRANSITION_SECONDS,
        )
        return {"n_jobs": self.n_jobs, "threads": threads}

    def _progress(self, stage, length):
        """The progress of one block of HMC chains, each ``length`` long."""
        return self.progress(
            stage,
            length,
            n_runs=self.n_chains,
            # None: this process, on threads or not (see _workers)
            in_process=effective_n_jobs(self.n_jobs) == 1,
        )

    def _refine(self, sampler, seed, options):
        """First half of warm-up: draws that re-estimate the coordinates.

        A quarter of ``n_warmup`` adapts the step and the diagonal mass in
        the curvature-scaled coordinates; the next quarter draws with them
        held. The draws of all chains re-estimate the coordinates
        (:func:`~skgp_bayes.inference.affine.refine_from_draws`): on iris
        the point curvature left one direction of the posterior 14 times
        wider (in variance) than the unit it was scaled to, mostly a
        length scale, whose skewed posterior no curvature at one point
        describes; in the refined coordinates the widest was 3.6. The
        remaining half of ``n_warmup`` adapts step and mass again in the
        new coordinates.

        Returns the new sampler (with each chain's step size so far), the
        remaining warm-up length, and the first half's results per chain
        (their iterations count as warm-up in the chains' trace).
        """
        quarter = self.n_warmup // 4
        with self._progress("HMC warm-up", 2 * quarter) as progress:
            first = self.run_chains(
                sampler.target,
                sampler.inits,
                random_state=[seed, 0],
                **self._workers(sampler),
                n_warmup=quarter,
                n_samples=quarter,
                inv_mass=sampler.inv_mass,
                verbose=0,
                progress=progress.engine,
                jumps=sampler.jumps(),
                **{**options, "thin": 1},
            )
        chains = np.stack([r.samples for r in first])
        states = np.stack([r.final_state for r in first])
        refined = sampler.refined(chains, states)
        # The new coordinates are closer to a standard normal than the old:
        # each chain's adapted step is a safe start for its adaptation (the
        # step search would begin from 1 again).
        refined.step_size = np.array([r.step_size for r in first])
        if self.log is not None:
            skewed = refined.n_skew_maps
            self.log(
                f"HMC: coordinates refined from {chains.shape[0]} x "
                f"{chains.shape[1]} warm-up draws"
                + (f"; {skewed} skewed ones given sinh maps" if skewed else "")
            )
        return refined, self.n_warmup - 2 * quarter, first

    def report(self, run, names, rhat, ess, label="HMC"):
        """The chains' warnings, and their summary line when verbose."""
        n_div = int(sum(r.n_divergent for r in run.results))
        n_iterations = run.chains.shape[1] * self.thin
        warn_diagnostics(names, rhat, ess, n_div, n_iterations, self.max_samples)
        if self.log is not None:
            self.log(
                f"{label}: {self.n_chains} chains x {self.n_warmup} "
                f"warm-up + {n_iterations} sampling iterations in "
                f"{run.seconds:.2f} s; max R-hat {np.nanmax(rhat):.3f}, min bulk ESS "
                f"{np.nanmin(ess):.0f}, {n_div} divergences"
                + _retried_clause(run.results)
            )
        return n_div


def chain_threads(
    n_jobs, target, n_chains, x, mean_steps, threshold=THREADED_TRANSITION_SECONDS
):
    """Threads for ``n_chains`` chains on ``target`` (see ``HMCStage._workers``).

    One unless the trajectories are compiled and ``mean_steps`` leapfrog
    steps from ``x`` take at least ``threshold`` seconds
    (:func:`~skgp_bayes.inference._chain_threads.default_chain_threads`).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.variational_mcmc._chains import chain_threads
    >>> chain_threads(None, lambda x: (-0.5 * x @ x, -x), 4, np.zeros(2), 6.0)
    1
    """

    def transition_seconds():
        step = None
        if isinstance(target, TrajectoryTarget):
            step = target.seconds_per_step(x)
        return None if step is None else mean_steps * step  # None: interpreted

    return default_chain_threads(n_jobs, n_chains, transition_seconds, threshold)


def _retried_clause(results):
    retried, accepted = retried_counts(results)
    if not retried:
        return ""
    return (
        f"; {retried} failed trajectories retried with a shorter step "
        f"({accepted} accepted)"
    )


def warn_diagnostics(names, rhat, ess, n_div, n_iterations, max_samples):
    """A :class:`SamplerWarning` for divergences, one for an unmet run length.

    Parameters
    ----------
    names : list of str
        Parameter names, in the order of ``rhat`` and ``ess``.
    rhat, ess : ndarray of shape (n_params,)
        Split R-hat and bulk effective sample size (NaN where unknown).
    n_div : int
        Divergent transitions after warm-up, over chains.
    n_iterations : int
        Sampling iterations per chain.
    max_samples : int
        The budget, named in the warning.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from skgp_bayes.variational_mcmc._chains import warn_diagnostics
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_diagnostics(["a"], np.array([1.2]), np.array([50.0]), 0, 100, 100)
    >>> [type(w.message).__name__ for w in caught]
    ['SamplerWarning']
    """
    if n_div:
        warn_user(
            f"{n_div} divergent HMC transitions after warm-up: the steps "
            "were too large for the posterior's curvature somewhere, so the "
            "samples may miss that region. Lengthen n_warmup (the step size "
            "adapts for longer) or raise target_accept towards 0.99 (smaller "
            "steps, slower sampling).",
            SamplerWarning,
        )
    # Either statistic can be NaN for every parameter (one chain of a few
    # draws has no split R-hat) while the other is known.
    has_rhat, has_ess = np.any(np.isfinite(rhat)), np.any(np.isfinite(ess))
    bad_rhat = has_rhat and np.nanmax(rhat) > RHAT_MAX
    bad_ess = has_ess and np.nanmin(ess) < BULK_ESS_MIN
    if bad_rhat or bad_ess:
        worst = []
        if has_rhat:
            j = int(np.nanargmax(rhat))
            worst.append(
                f"split R-hat {rhat[j]:.3f} for {names[j]} (goal <= {RHAT_MAX})"
            )
        if has_ess:
            k = int(np.nanargmin(ess))
            worst.append(
                f"bulk effective sample size {ess[k]:.0f} for {names[k]} "
                f"(goal >= {BULK_ESS_MIN})"
            )
        warn_user(
            f"The chains did not meet the run-length rule in "
            f"{n_iterations} sampling iterations per chain (max_samples="
            f"{max_samples}): {', '.join(worst)}, the worst parameters. "
            "Raise max_samples, or n_warmup if R-hat is far above the goal.",
            SamplerWarning,
        )
