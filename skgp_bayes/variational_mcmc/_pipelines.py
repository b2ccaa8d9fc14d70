"""The two variational MCMC fits, each a composition of target x stages.

:func:`fit_joint` (any likelihood): the SVGP bound, then HMC over
``(theta, v)`` on the sparse whitened target. :func:`fit_collapsed`
(Gaussian likelihood): the collapsed bound, then HMC over ``[theta, log
s2]`` with every draw completed by an exact ``v | theta``. Both return the
fitted attributes as one dict, assembled by :func:`chain_attributes` for
what the chains share.
"""

import dataclasses
import time

import numpy as np

from .._defaults import estimator_prior_set
from .._fit_checks import warn_at_bounds
from .._sgld_modes import DrawModeSearch
from .._starts import (
    screened_exact_starts,
    shortened_length_scales,
    unused_input_starts,
)
from ..inference._chain_threads import mapped_on_threads
from ..inference.affine import curvature_preconditioner
from ..inference.laplace import find_map
from ..inference.mode_jumps import jump_record, laplace_mixture
from ..kernels import KernelAdapter
from ..likelihoods import Gaussian
from ..linalg.triangle import lower_triangle_indices
from ..priors import PriorSet
from ..targets.collapsed import CollapsedSparseTarget
from ..targets.exact import ExactMarginalTarget
from ..targets.exact_inducing import ExactInducingConditional
from ..targets.sparse import SparseWhitenedTarget
from ..targets.svgp import SVGPBound
from ._bounds import bound_coordinates, jumps_in_bound_coordinates
from ._sampling import (
    CollapsedSampler,
    GuardedTarget,
    retried_counts,
    rhat_and_bulk_ess,
)

# Mode searches for the jumps up to this many training points, the size up
# to which stage 1 also searches the exact marginal: each search is an
# L-BFGS run on the sampled target.
_MODE_SEARCH_MAX_N = 1000
# The last of the SVGP bound's further k-means starts (a classifier's or a
# Poisson model's, see _approximation._SVGP_STARTS) begins with its length
# scales divided by this. The bound of a non-Gaussian likelihood has a flat
# optimum, a long length scale that explains little of the labels, and the
# default start (sqrt(d) in standardised inputs) can lie in its basin: on
# 40-point binary toy data (labels from the sign of sin(1.5 x), 8 inducing
# inputs) all starts stopped there at 8 of 100 seeds, ELBO about -30, where
# a start at a quarter of the length scale reaches -21 and a method="gaussian"
# prediction 0.4-0.6 closer to the sampled one. A quarter is the prior's
# short end (its median is e times the start); the highest ELBO is kept, as
# for the inducing inputs' starts, so the start costs nothing where the
# default basin is the better one.
SHORT_START_FACTOR = 4.0
# One jump after every HMC transition: a move costs one density evaluation,
# a transition up to max_leapfrog gradients.
_MODE_JUMP_EVERY = 1
# The mode searches also start from the optimum with every length scale
# divided and multiplied by this: a Gaussian-process marginal likelihood
# often has one mode where the data are a wiggly function with little noise
# and one where they are a smooth one with more (Rasmussen and Williams,
# 2006, section 5.4.1), and the screen climbs from the initial point only.
# On engel (a split at seed 7 of benchmarks/bench_fresh_splits.py, 164
# rows, one input) the fit's optimum had log length scale 1.00 and log
# posterior -85.86; a search from 1.00 - log 4 reached -0.42 at -84.15, one
# from 1.00 + log 4 a third mode at 1.63, and with jumps between the three
# the chains met the run-length rule after 250 sampling iterations in 1.7 s,
# where without them they missed it after 5,000 (split R-hat 1.066, 6.1 s).
# A factor of 4 is the prior's short end, as for SHORT_START_FACTOR.
MODE_SEARCH_FACTOR = 4.0


@dataclasses.dataclass
class FitStart:
    """What every fit starts from: clock, seeds, kernel and the hyperparameter space.

    Attributes
    ----------
    t_start : float
        ``time.perf_counter()`` when the fit began.
    seeds : ndarray of shape (4,)
        Seeds of the inducing inputs, the minibatches (or the collapsed
        draws of ``v``), the chains' starts and the chains.
    kernel : kernel
    adapter : KernelAdapter
    kernel_bounds : ndarray of shape (n_theta, 2)
    hyper_bounds : ndarray of shape (n_hyper, 2)
        ``kernel_bounds`` and, for a Gaussian likelihood, the log noise
        variance's.
    prior_set : PriorSet
    log_noise0 : float
        A Gaussian likelihood's initial log noise variance.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.variational_mcmc._pipelines import FitStart
    >>> kernel = RBF(1.0)
    >>> head = (0.0, np.arange(4), kernel, KernelAdapter(kernel))
    >>> box = (np.array([-9.0, 2.0]), -1.0)  # log bounds, log start
    >>> start = FitStart.build(head, np.log([[1e-5, 1e5]]), box, None, 1)
    >>> start.hyper_bounds.shape, start.log_noise0
    ((2, 2), -1.0)
    """

    t_start: float
    seeds: np.ndarray
    kernel: object
    adapter: KernelAdapter
    kernel_bounds: np.ndarray
    hyper_bounds: np.ndarray
    prior_set: PriorSet
    log_noise0: float = float(np.log(0.1))

    @classmethod
    def build(cls, head, kernel_bounds, noise_box, user_priors, n_features):
        """The start of a fit from ``head = (t_start, seeds, kernel, adapter)``.

        ``noise_box`` is None for a likelihood without a noise variance,
        else its log bounds and log start
        (:func:`~skgp_bayes._validation.noise_box`); the user's priors are
        merged over the defaults.
        """
        t_start, seeds, kernel, adapter = head
        hyper_bounds, log_noise0 = kernel_bounds, cls.log_noise0
        if noise_box is not None:
            hyper_bounds = np.vstack([kernel_bounds, [noise_box[0]]])
            log_noise0 = noise_box[1]
        prior_set = estimator_prior_set(
            adapter,
            user_priors,
            n_features,
            noise=noise_box is not None,
            regression=noise_box is not None,  # the Gaussian likelihood's
        )
        return cls(
            t_start,
            seeds,
            kernel,
            adapter,
            kernel_bounds,
            hyper_bounds,
            prior_set,
            log_noise0,
        )

    def theta0(self):
        """The kernel's ``theta``, clipped into its bounds."""
        bounds = self.kernel_bounds
        return np.clip(self.kernel.theta, bounds[:, 0], bounds[:, 1])


def fit_joint(start, stages, data, Z0):
    """SVGP bound, then HMC over ``(theta, v)``; the fitted attributes.

    ``stages`` is ``(ApproximationStage, HMCStage)``, ``data`` is ``(X, y,
    likelihood, offset)`` and ``Z0`` the initial inducing inputs.
    """
    approximation, hmc = stages
    X, y, likelihood, offset = data
    is_gaussian = isinstance(likelihood, Gaussian)
    bound, svgp, svgp_elbo, n_starts, n_iter = gaussian_approximation(
        start, approximation, data, Z0
    )
    theta, log_noise, q_mean, q_L, Z = bound.split(svgp.params)
    Z = np.array(Z)
    if approximation.verbose:
        approximation.log(
            f"Gaussian approximation: ELBO {svgp_elbo:.4g}, the best of "
            f"{n_starts} start{'s' if n_starts > 1 else ''}, after {n_iter} "
            f"{'Adam' if svgp.use_adam else 'L-BFGS'} iterations in all "
            f"({time.perf_counter() - start.t_start:.2f} s)"
        )
    target = SparseWhitenedTarget(
        start.adapter, X, y, Z, likelihood, start.prior_set, offset=offset
    )
    hyper = np.append(theta, log_noise) if is_gaussian else np.array(theta)
    bounds = start.hyper_bounds
    guarded = GuardedTarget(target, bounds[:, 0], bounds[:, 1])
    t_hmc = time.perf_counter()
    sampler = hmc.joint_sampler(
        guarded, target, hyper, q_mean, q_L, np.random.default_rng(int(start.seeds[2]))
    )
    run = hmc.sample(sampler, int(start.seeds[3]), t_hmc)
    fitted = chain_attributes(start, hmc, run, sampler, target, target.param_names)
    fitted["fit_time_"]["svgp"] = t_hmc - start.t_start
    fitted["diagnostics_"].update(svgp_elbo=svgp_elbo, svgp_iterations=int(n_iter))
    fitted.update(
        inducing_points_=Z,
        kernel_=start.kernel.clone_with_theta(theta),
        svgp_params_=svgp.params,
        svgp_elbo_=svgp_elbo,
        _likelihood=likelihood,
        _n_latent=target.n_latent,
        _q=(np.array(theta), log_noise, np.array(q_mean), np.array(q_L)),
    )
    fitted["trace_"]["svgp_elbo"] = np.asarray(svgp.trace)
    return fitted


def gaussian_approximation(start, approximation, data, Z0):
    """The SVGP bound's maximum from ``Z0`` and any further k-means starts.

    Returns ``(bound, SVGPFit, ELBO)`` of the start that reached the highest
    ELBO (see :meth:`ApproximationStage.more_inducing_starts`), the number
    of starts and their iterations in all, and warns when that start's
    optimiser ran out of iterations.
    """
    X, y, likelihood, offset = data
    seed = int(start.seeds[0])
    starts = [Z0, *approximation.more_inducing_starts(X, Z0, seed)]
    theta0 = start.theta0()

    def prepared(k, Z_start):
        theta_start = theta0
        if k > 0 and k == len(starts) - 1:
            names = start.adapter.param_names
            theta_start = shortened_length_scales(names, theta0, SHORT_START_FACTOR)
            theta_start = np.clip(theta_start, *start.kernel_bounds.T)
        bound = SVGPBound(
            start.adapter,
            X,
            y,
            Z_start,
            likelihood,
            start.prior_set,
            learn_inducing=None if approximation.optimize_inducing else False,
            offset=offset,
        )
        return bound, bound.initial_params(theta_start)

    def maximised(bound_and_start):
        bound, params0 = bound_and_start
        opt_bounds = np.tile([-np.inf, np.inf], (bound.n_params, 1))
        opt_bounds[: bound.n_hyper] = start.hyper_bounds
        svgp = approximation.joint(
            bound, params0, opt_bounds, X.shape[0], int(start.seeds[1]), start.t_start
        )
        elbo = float(svgp.trace[-1]) if svgp.trace else float(bound.elbo(svgp.params))
        return bound, svgp, elbo

    ready = [prepared(k, Z_start) for k, Z_start in enumerate(starts)]
    threads = approximation.start_threads(
        *ready[0], len(starts), X.shape[0], starts[0].shape[0]
    )
    with mapped_on_threads(threads) as map_fn:
        results = list(map_fn(maximised, ready))
    best = max(results, key=lambda result: result[2])  # the first of equal ELBOs
    # Only the kept start's stopping rule matters: a start left behind at a
    # lower ELBO is no part of the fit, converged or not.
    approximation.warn_unconverged(best[1], X.shape[0])
    return (*best, len(starts), sum(svgp.n_iter for _, svgp, _ in results))


def fit_collapsed(start, stages, data, Z0):
    """The Gaussian likelihood's fit: ``v`` integrated out.

    1. Titsias' collapsed bound plus the log prior is maximised by
       L-BFGS-B over ``[theta, log s2]`` and the inducing inputs: the SVGP
       bound at its optimal ``q(v)``, so the same optimum as the joint SVGP
       fit in far fewer parameters (no ``q(v)`` to learn).
    2. HMC samples ``[theta, log s2]`` on the collapsed target, in the
       curvature-scaled coordinates at that optimum; every kept draw is
       completed by an exact draw of ``v | theta`` (see
       :mod:`skgp_bayes.targets.collapsed`).
    3. The run-length rule is checked over ``(theta, v)``.

    Arguments as in :func:`fit_joint` (the likelihood and offset unused).
    """
    approximation, hmc = stages
    X, y = data[0], data[1]
    adapter, prior_set, bounds = start.adapter, start.prior_set, start.hyper_bounds
    initial = np.append(start.theta0(), start.log_noise0)
    optimum = approximation.collapsed(
        (adapter, X, y, prior_set, bounds),
        Z0,
        int(start.seeds[0]),
        initial,
        start.t_start,
    )
    hyper, Z = optimum.hyper, optimum.Z
    target = CollapsedSparseTarget(adapter, X, y, Z, prior_set)
    sampled, draws_v = _sampled_and_conditional(optimum, target, prior_set)
    guarded = GuardedTarget(sampled, bounds[:, 0], bounds[:, 1])
    t_hmc = time.perf_counter()
    sampler = _collapsed_sampler(
        start, hmc, (guarded, sampled, draws_v), (initial, hyper), (X, y)
    )
    run = hmc.sample(sampler, int(start.seeds[3]), t_hmc)
    # the joint target's layout: [theta, noise_variance, v[0], ...]
    names = [*target.param_names, *(f"v[{j}]" for j in range(Z.shape[0]))]
    fitted = chain_attributes(
        start, hmc, run, sampler, target, names, "HMC (v integrated out)"
    )
    q_mean, q_factor = target.conditional(hyper)
    trace = optimum.trace
    # The bound at the kept optimum: the trace runs over every inducing-set
    # size tried, and a doubling that gained too little is dropped for the
    # smaller set, so its last value can be another set's (mcycle: -82.24 at
    # 20 inducing inputs where the fit keeps 10 at -82.73).
    svgp_elbo = float(target.log_prob(hyper))
    fitted["fit_time_"]["svgp"] = t_hmc - start.t_start
    fitted["diagnostics_"].update(
        svgp_elbo=svgp_elbo,
        svgp_iterations=int(optimum.n_iter),
        collapsed=True,
        exact_marginal=bool(optimum.exact),
        # the jumps the chains ended with: their draws' searches may add modes
        mode_jumps=jump_record(
            (sampler if run.sampler is None else run.sampler).mode_jumps,
            [(r.n_jumps, r.n_jumps_accepted) for r in run.results],
        ),
    )
    fitted.update(
        inducing_points_=Z,
        kernel_=start.kernel.clone_with_theta(hyper[:-1]),
        svgp_params_=svgp_layout(start, X, y, optimum, q_mean, q_factor),
        svgp_elbo_=svgp_elbo,
        _likelihood=Gaussian(float(np.exp(hyper[-1]))),
        _n_latent=1,
        _q=(np.array(hyper[:-1]), float(hyper[-1]), q_mean[:, None], q_factor[None]),
        _exact_training=_sorted_rows(X, y) if optimum.exact else None,
    )
    fitted["trace_"]["svgp_elbo"] = np.asarray(trace)
    return fitted


def _sorted_rows(X, y):
    """The training data, rows in ``np.unique``'s order, that the exact GP's
    draws predict by (``VariationalMCMCBase._exact_data``).

    The order changes no prediction beyond round-off, but it is the one
    that made the sparse algebra fast: at a short length scale sorted
    inputs give ``K + s2 I`` a banded factor, while shuffled ones fill it
    with subnormal numbers, whose arithmetic is slow. On 216 yearly
    sunspot numbers the exact moments took 1.4 ms a draw in the shuffled
    order and 1.1 ms in this one (one BLAS thread).
    """
    order = np.lexsort(X.T[::-1])
    return np.ascontiguousarray(X[order]), np.ascontiguousarray(y[order])


def _collapsed_sampler(start, hmc, targets, points, data):
    """The chains' sampler: curvature-scaled at the optimum, in
    :func:`bound_coordinates` where needed, else with mode jumps.

    ``targets`` is ``(guarded, sampled, draws_v)``, ``points`` ``(initial,
    hyper)`` and ``data`` ``(X, y)``.
    """
    guarded, sampled, draws_v = targets
    hyper = points[1]
    mode_jumps = None
    if bound_coordinates(guarded, hyper) is None:  # no optimum on a bound
        mode_jumps = collapsed_mode_jumps(
            sampled,
            points,
            start.hyper_bounds,
            (start.adapter, *data, start.prior_set),
            hmc.log,
        )
    # A bound within the chains' reach is moved away in log-distance
    # coordinates too (nearly exact data put the noise floor there), and so
    # is one within reach of another mode, with the jumps and the searches
    # in the same coordinates.
    noise = np.array([name == "noise_variance" for name in sampled.param_names])
    coords, mode_jumps = _walls_away(guarded, hyper, mode_jumps, noise[: hyper.size])
    if coords is None:
        transform = curvature_preconditioner(guarded, hyper)
    else:
        transform = curvature_preconditioner(coords, coords.start)
        _log_held(hmc.log, coords, sampled.param_names)
    sampler = CollapsedSampler(
        guarded,
        hyper,
        transform,
        np.random.default_rng(int(start.seeds[2])),
        hmc.n_chains,
        draws_v,
        int(start.seeds[1]),
        coords,
    )
    sampler.mode_jumps = mode_jumps  # in the coordinates the chains move in
    # searches from the chains' draws, for modes they reach later (on a
    # split of Boston's house values, 300 rows, the searches before
    # sampling found one of the exact posterior's modes and the chains ran
    # their whole budget; see variational_mcmc._chains.DrawSearches)
    if data[0].shape[0] <= _MODE_SEARCH_MAX_N:
        searched = (sampled, hyper, start.hyper_bounds)
        if coords is not None:
            searched = (coords, coords.start, coords.bounds())
        sampler.mode_search = DrawModeSearch(*searched, _MODE_JUMP_EVERY)
    return sampler


def _walls_away(guarded, hyper, mode_jumps, ridges=None):
    """``(coords, mode_jumps)``: the bounds within the chains' reach of the
    optimum ``hyper`` or of another mode of ``mode_jumps`` as log distances
    (:func:`bound_coordinates`; ``ridges``, the noise variance, is looked
    for along its ridge), with the jumps in those coordinates; the
    coordinates None (and the jumps as they were) where no bound is in
    reach, or where the jumps cannot be carried over.

    On a wall every trajectory that reaches it is rejected as divergent,
    whatever the step. Posteriors with a mode of little signal reach the
    signal variance's floor: on fresh splits of credit-card spending,
    strikes and Freedman's city crime rates the chains jumped between two
    modes, one within reach of that floor, and every fit ended with a
    divergent transition after two step back-offs (benchmarks/RESULTS.md,
    "Mode jumps in log-distance coordinates").
    """
    if mode_jumps is None:
        return bound_coordinates(guarded, hyper, walls=True, ridges=ridges), None
    coords = bound_coordinates(
        guarded, hyper, walls=True, modes=mode_jumps.means, ridges=ridges
    )
    if coords is None:
        return None, mode_jumps
    mapped = jumps_in_bound_coordinates(coords, mode_jumps)
    if mapped is None:
        return None, mode_jumps
    return coords, mapped


def _log_held(log, coords, names):
    if log is None:
        return
    free = np.array(names)[coords.free]
    piled = ", ".join(free[coords.piled_coordinates()])
    held_names = ", ".join(np.array(names)[coords.fixed])
    if piled:
        log(
            f"HMC samples {piled} as the log distance from the bound its "
            "optimum lies on or near"
        )
    if held_names:
        log(f"HMC holds {held_names} fixed")


def _sampled_and_conditional(optimum, target, prior_set):
    """The target the chains sample and the one that draws ``v | theta``.

    With the training inputs as inducing inputs the bound is the exact
    marginal likelihood, which the exact target computes in one ``n x n``
    factorisation rather than the bound's several, and ``v | theta`` comes
    by Matheron's rule in two factorisations rather than four.
    """
    if not optimum.exact:
        return target, target
    adapter, X, y = target.adapter, target.X, target.y
    return (
        ExactMarginalTarget(adapter, X, y, prior_set),
        ExactInducingConditional(adapter, X, y, optimum.Z, target.jitter),
    )


def collapsed_mode_jumps(sampled, points, bounds, problem, log=None):
    """The Laplace mixture of the sampled target's distinct modes, or None.

    HMC moves by small steps and crosses a valley between two modes rarely:
    on credit-card spending (72 households) a mode where one skewed input's
    length scale is short held about 40% of the posterior and the chains,
    all started at the collapsed bound's optimum, never visited it. Up to
    ``_MODE_SEARCH_MAX_N`` training points the length-scale screen's points
    from the fit's initial point (the common grid's and the per-input one,
    :func:`~skgp_bayes._starts.screened_exact_starts`, on the exact marginal)
    start L-BFGS searches on the sampled target, and so does the optimum
    ``hyper`` with every length scale divided and multiplied by
    :data:`MODE_SEARCH_FACTOR`; with two or more distinct
    maxima, the optimum ``hyper`` among them, the chains also jump between
    them (:mod:`skgp_bayes.inference.mode_jumps`). ``points`` is
    ``(initial, hyper)``, ``problem`` ``(adapter, X, y, prior_set)``;
    ``log`` receives one line when there are jumps.
    """
    (initial, hyper), (adapter, X, y, prior_set) = points, problem
    if X.shape[0] > _MODE_SEARCH_MAX_N:
        return None
    screen = (
        sampled
        if isinstance(sampled, ExactMarginalTarget)
        else ExactMarginalTarget(adapter, X, y, prior_set)
    )
    starts = screened_exact_starts(screen, initial, bounds)
    for factor in (MODE_SEARCH_FACTOR, 1.0 / MODE_SEARCH_FACTOR):
        point = shortened_length_scales(sampled.param_names, hyper, factor)
        starts.append(np.clip(point, bounds[:, 0], bounds[:, 1]))
    starts.extend(unused_input_starts(sampled.param_names, hyper, X, bounds))
    optima = [hyper, *(find_map(sampled, point, bounds).params for point in starts)]
    jumps = laplace_mixture(sampled, optima, bounds, every=_MODE_JUMP_EVERY)
    if log is not None and jumps is not None:
        log(f"{jumps.describe()}: the HMC chains also jump between them")
    return jumps


def chain_attributes(start, hmc, run, sampler, target, names, label="HMC"):
    """The fitted attributes that come from the chains, with their warnings.

    ``sampler`` is the one the chains were set up with; the one they ended
    with (``run.sampler``, refined in warm-up) maps the engine's inverse
    masses to ``(theta, v)``. The stage-1 entries
    (``svgp_elbo`` of ``trace_``, ``svgp_elbo`` and ``svgp_iterations`` of
    ``diagnostics_``, the ``svgp`` time) are None, in their places, for the
    caller to fill.
    """
    chains, results = run.chains, run.results
    final = sampler if run.sampler is None else run.sampler
    retried, retried_accepted = retried_counts(results)
    samples = chains.reshape(-1, chains.shape[2])
    warn_at_bounds(
        samples,
        start.hyper_bounds,
        names,
        "HMC draws",
        "spread",
        y=target.y,
    )
    computed = run.rhat_and_ess
    rhat, ess = rhat_and_bulk_ess(chains) if computed is None else computed
    n_div = hmc.report(run, names, rhat, ess, label)
    total = time.perf_counter() - start.t_start
    acceptance = float(np.mean([r.acceptance_rate for r in results]))
    return {
        "draws_": samples,
        "param_names_": names,
        "rhat_": rhat,
        "ess_": ess,
        "acceptance_rate_": acceptance,
        "n_divergences_": n_div,
        "step_size_": np.array([r.step_size for r in results]),
        "inv_mass_": np.stack([final.x_inv_mass(r.inv_mass) for r in results]),
        "trace_": {
            "svgp_elbo": None,
            "accept_prob": np.stack([r.accept_prob for r in results]),
            "step_sizes": np.stack([r.step_sizes for r in results]),
            "divergent": np.stack([r.divergent for r in results]),
            "n_leapfrog": np.stack([r.n_leapfrog for r in results]),
            "energy": np.stack([r.energy for r in results]),
            "log_density": np.stack([r.log_density for r in results]),
        },
        "fit_time_": {"svgp": None, "hmc": run.seconds, "total": total},
        "diagnostics_": {
            "fit_time": total,
            "max_rhat": float(np.nanmax(rhat)) if np.size(rhat) else np.nan,
            "min_ess": float(np.nanmin(ess)) if np.size(ess) else np.nan,
            "n_divergences": n_div,
            "acceptance_rate": acceptance,
            "step_size": [float(r.step_size) for r in results],
            "jitter": float(target.jitter),
            "svgp_elbo": None,
            "svgp_iterations": None,
            "sampling_iterations": int(chains.shape[1] * hmc.thin),
            "sampling_blocks": int(run.n_blocks),
            "step_backoffs": int(run.n_backoffs),
            "retried_trajectories": int(retried),
            "retried_accepted": int(retried_accepted),
            "preconditioned": sampler.transform is not None,
            "skew_maps": final.n_skew_maps,
            "maps_refitted": bool(run.maps_refitted),
        },
        "_adapter": start.adapter,
        "_jitter": target.jitter,
        "_n_hyper": target.n_hyper,
    }


def svgp_layout(start, X, y, optimum, q_mean, q_factor):
    """The collapsed optimum as an SVGP bound's parameter vector (``svgp_params_``)."""
    Z, hyper, learn_Z = optimum.Z, optimum.hyper, optimum.learn_Z
    bound = SVGPBound(
        start.adapter,
        X,
        y,
        Z,
        Gaussian(0.1),
        start.prior_set,
        learn_inducing=learn_Z,
    )
    params = bound.initial_params(hyper[:-1], hyper[-1])
    blocks = bound.blocks
    params[blocks["m"]] = q_mean
    rows, cols = lower_triangle_indices(Z.shape[0])
    packed = q_factor[rows, cols]
    on_diag = rows == cols
    packed[on_diag] = np.log(packed[on_diag])
    params[blocks["L"]] = packed
    if learn_Z:
        params[blocks["Z"]] = Z.reshape(-1)
    return params
