"""Variational MCMC for Gaussian processes (Hensman, Filippone, Matthews and
Ghahramani, 2015).

``fit`` runs three stages:

1. **Gaussian approximation.** An SVGP bound
   (:class:`~skgp_bayes.targets.svgp.SVGPBound`) with inducing inputs
   initialised by k-means is maximised jointly in the whitened ``q(v)``, the
   hyperparameters (with their log prior, so a MAP-type estimate) and, when
   the kernel has input gradients, the inducing inputs. L-BFGS-B on the full
   data for small problems; Adam on minibatches for large ones.
2. **HMC** jointly over ``(theta, v)`` on the sparse whitened target
   (:class:`~skgp_bayes.targets.sparse.SparseWhitenedTarget`, the seed
   paper's eq. 7-8) with the inducing inputs fixed at the SVGP's. The
   chains run in curvature-scaled coordinates ``w``, ``(theta, v) = x0 +
   T w`` with ``T' H T = I`` for the negative Hessian ``H`` of the target at
   the SVGP's point ``x0`` (:mod:`skgp_bayes.inference.affine`): HMC with
   the dense mass matrix ``H``. Whitening makes ``v`` a priori standard
   normal, but with informative data its posterior is a narrow, correlated
   ellipse (precision ``I + A W A'``, up to hundreds of times the prior's),
   and it is coupled to the hyperparameters through ``f = A_theta' v``; a
   diagonal mass matrix cannot undo either, the dense curvature undoes both
   to first order (on diabetes, the bulk ESS of the worst parameter per
   gradient rose four-fold). The curvature costs ``2 d`` gradients and is
   used whenever that is at most one chain's warm-up. Every chain starts
   from its own draw of ``N(0, I)`` in ``w``; the step size (dual
   averaging) and a diagonal mass matrix in ``w`` are adapted in warm-up,
   whose first half ends with draws that re-estimate ``T`` (the point
   curvature misjudges skewed length scales; see ``_refine``);
   the number of leapfrog steps is uniform on ``1..ceil(pi / step)``, an
   integration time of up to ``pi`` (see ``max_leapfrog``). Chains
   run in parallel with joblib; their seeds are spawned up front, so
   ``n_jobs`` never changes the result.
3. **Run length.** After warm-up the chains sample in blocks of
   ``n_samples``; after each block the split R-hat and the bulk effective
   sample size of every parameter are computed over all kept draws, and
   sampling stops once R-hat <= 1.01 and the bulk ESS >= 100 everywhere, or
   when ``max_samples`` is spent, with one
   :class:`~skgp_bayes.exceptions.SamplerWarning` giving the worst figures.
   Continuing a chain keeps its adapted step size and mass matrix, so the
   blocks are one chain.

**Gaussian likelihood** (:class:`VariationalMCMCRegressor`'s default).
The target is Gaussian in ``v`` given ``theta``, and integrating ``v`` out
exactly leaves Titsias' collapsed bound plus the log prior
(:mod:`skgp_bayes.targets.collapsed`, with the derivation). Stage 1 then
maximises that bound over the hyperparameters and inducing inputs (the
SVGP bound at its optimal ``q(v)``, in far fewer parameters), stage 2 runs
HMC over ``[theta, log s2]`` alone and completes every kept draw with an
exact draw of ``v | theta``: the same joint distribution (a collapsed,
Rao-Blackwellised sampler), without the funnel between ``theta`` and
``v``, in ``d + 2`` dimensions. The default number of inducing inputs then
follows the data (see ``n_inducing`` in :class:`VariationalMCMCRegressor`).

Hyperparameters outside the kernel's ``bounds`` have zero density for the
sampler (the bounds act as hard walls; a leapfrog step beyond them counts as
a divergent, rejected transition).

``sample_functions`` (and ``sample_y`` with ``method="pathwise"``) builds
pathwise posterior samples (:mod:`skgp_bayes.sampling`): each picks a kept
draw ``(theta, v)``, maps it to inducing values ``u = R_theta v`` and updates
a random-Fourier-feature prior draw by Matheron's rule at the inducing
inputs, so the samples mix over hyperparameters and inducing values.
"""

import copy
import dataclasses
import time
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._arviz import InferenceDataMixin
from ._base import EstimatorBase, fit_method, sample_y_spec
from ._base import Printer as _Printer
from ._defaults import (
    NOISE_VARIANCE_BOUNDS,
    fit_input_scaling,
    in_natural_units,
    merged_priors,
)
from ._fit_checks import warn_at_bounds, warn_degenerate_fit
from ._interrupt import keyboard_interrupt_passes
from ._predictive_contract import (
    DEFAULT_QUANTILES,
    GaussianMixturePredictive,
    LatentDraws,
    PoissonMixturePredictive,
    binary_log_odds,
    check_coverage,
    check_quantiles,
    check_targets,
    has_two_classes,
    log_of_proba,
    lognormal_rate_prediction,
    mixture_prediction,
    per_chain_samples,
    proba_from_log_odds,
    sparse_latent_covariances,
)
from ._progress import engine_verbose, fit_progress
from ._sparse import SVGP_WINDOW as _SVGP_WINDOW
from ._sparse import fit_svgp_adam, fit_svgp_lbfgs, initial_inducing
from ._threads import blas_threads_for
from ._validation import (
    VersionedStateMixin,
    atomic_feature_state,
    check_bounds,
    check_finite_theta,
    check_input_magnitude,
    check_n_samples,
    check_single_target,
    safe_mean_std,
    variance_in_units,
)
from ._warnings import warn_user
from .diagnostics import (
    effective_sample_size,
    split_rhat,
)
from .diagnostics import rank_normalize as _rank_normalize
from .diagnostics import split_chains as _split_chains
from .exceptions import NotPSDError, SamplerWarning
from .inference import run_hmc_chains
from .inference.affine import (
    AffineTarget,
    coordinates_in,
    curvature_preconditioner,
    diagonal_inverse_mass,
    refine_from_draws,
)
from .kernels import KernelAdapter
from .likelihoods import Bernoulli, Gaussian, Poisson, RobustMax, Softmax
from .predictive.sparse import (
    q_draw,
    q_marginal_variances,
    q_moments_per_latent,
    sparse_draw_moments,
    sparse_function_samples,
    sparse_joint_draws,
)
from .priors import PriorSet
from .sampling import (
    require_spectral_spec,
)
from .targets.collapsed import CollapsedSparseTarget
from .targets.sparse import (
    SparseWhitenedTarget,
    softmax_rule_proba,
)
from .targets.svgp import SVGPBound

__all__ = ["VariationalMCMCClassifier", "VariationalMCMCRegressor"]

# Why the regressor takes one target (ValueError on a 2-D y).
_SINGLE_TARGET = (
    "HMC samples the whitened inducing values of one latent function jointly "
    "with the hyperparameters; a second target would need its own block of "
    "them and its own likelihood term, which the sparse target does not have."
)

# Above this many training points the SVGP is fitted by minibatch Adam
# (unless batch_size says otherwise); below, full-batch L-BFGS-B converges
# in far fewer passes over the data.
_LBFGS_MAX_N = 5000
_DEFAULT_BATCH = 512
# Initial inverse mass of a hyperparameter (log scale): posterior standard
# deviations of log hyperparameters are typically a few tenths.
_HYPER_INV_MASS = 0.1
# The run-length rule: split R-hat at most 1.01 (Vehtari et al., 2021) and
# a bulk effective sample size of at least 100 for every parameter, enough
# for posterior means and central intervals to about a tenth of a posterior
# standard deviation (the Monte Carlo error is sd / sqrt(ESS)).
_RHAT_MAX = 1.01
_BULK_ESS_MIN = 100
# Stopping rule of the Gaussian approximation, in nats per data point over
# the last _SVGP_WINDOW iterations. The approximation only places the
# inducing inputs and starts the chains (HMC then samples the sparse
# posterior itself), and 1e-4 nats per point is a thousandth of the
# differences in mean log predictive density that matter (0.05 and more).
_SVGP_TOL = 1e-4
# Log noise variance bounds of a Gaussian likelihood (standardised targets).
_LOG_NOISE_BOUNDS = tuple(np.log(NOISE_VARIANCE_BOUNDS))
# Default leapfrog bound (max_leapfrog=None): steps up to an integration
# time of pi, at most _LEAPFROG_CAP of them (the cap only stops a step size
# collapsed towards zero from making one transition endless). _TYPICAL_STEP
# is the adapted step seen in the curvature-scaled coordinates (0.15 to
# 0.4), used only to cost the curvature against the warm-up.
_LEAPFROG_CAP = 1024
_TYPICAL_STEP = 0.3
# Shortest warm-up split into a curvature-scaled quarter, a quarter of draws
# that refine the coordinates, and a half in the refined coordinates: each
# engine warm-up of at least 20 iterations adapts a mass matrix.
_MIN_REFINED_WARMUP = 80
# Most inducing inputs chosen by default (the former fixed default).
_MAX_DEFAULT_INDUCING = 50
# Query rows per block in prediction, bounding memory at O(rows * m).
_PREDICT_ROWS = 4096
# The Gaussian likelihood's default inducing set doubles while the collapsed
# bound's trace term, tr(K_ff - Q_ff) / (2 s2), exceeds _TRACE_TOL nats per
# point, up to _MAX_COLLAPSED_INDUCING inputs (see n_inducing in
# VariationalMCMCRegressor for the reasoning).
_TRACE_TOL = 0.05
_MAX_COLLAPSED_INDUCING = 64


class _GuardedTarget:
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
        if np.any(h < self.lower) or np.any(h > self.upper):
            return -np.inf, np.full(params.size, np.nan)
        try:
            return self.target.logp_and_grad(params)
        except NotPSDError:
            return -np.inf, np.full(params.size, np.nan)


def _default_n_inducing(n):
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
    >>> from skgp_bayes.variational_mcmc import _default_n_inducing
    >>> _default_n_inducing(93), _default_n_inducing(300), _default_n_inducing(10**5)
    (10, 18, 50)
    """
    return int(min(_MAX_DEFAULT_INDUCING, n, np.ceil(np.sqrt(n))))


class _Sampler:
    """The density HMC runs on, its chain starts and first inverse mass.

    With a ``transform`` ``T`` the chains run on ``w``, ``x = x0 + T w``,
    and start from ``w ~ N(0, I)`` (a draw from the Gaussian that the
    curvature describes, so the chains start overdispersed rather than at
    one point), pulled halfway towards ``x0`` until the density is finite
    there (a hyperparameter drawn beyond its bounds).
    """

    def __init__(
        self, guarded, x0, transform, rng, n_chains, inits=None, inv_mass=None
    ):
        self.transform = transform
        if transform is None:
            self.target, self.inits, self.inv_mass = guarded, inits, inv_mass
            return
        self.target = AffineTarget(guarded, x0, transform)
        inits = rng.standard_normal((n_chains, x0.size))
        for c in range(n_chains):
            for _ in range(30):
                if np.isfinite(self.target(inits[c])[0]):
                    break
                inits[c] *= 0.5
        self.inits = inits
        self.inv_mass = np.ones(x0.size)

    def to_x(self, w):
        return w if self.transform is None else self.target.to_x(w)

    def refined(self, chains, states):
        """The same density in coordinates refined from draws.

        ``chains`` are draws ``(n_chains, n_draws, d)`` and ``states`` the
        chains' current points ``(n_chains, d)``, both in this sampler's
        ``w``; the new sampler starts each chain from its current point,
        mapped, with a unit inverse mass (see :func:`refine_from_draws`).
        """
        center, factor = refine_from_draws(chains)
        # a copy keeps what a subclass adds (the collapsed sampler's exact
        # v | theta completion of every draw)
        new = copy.copy(self)
        new.transform = self.transform @ factor
        new.target = AffineTarget(
            self.target.logp_and_grad, self.target.to_x(center), new.transform
        )
        new.inits = coordinates_in(center, factor, states)
        new.inv_mass = np.ones(center.size)
        return new

    def x_inv_mass(self, inv_mass):
        """Diagonal of the inverse mass in ``(theta, v)`` coordinates."""
        if self.transform is None:
            return inv_mass
        return diagonal_inverse_mass(self.transform, inv_mass)


class _CollapsedSampler(_Sampler):
    """HMC over ``[theta, log s2]`` alone; each kept draw gets its exact ``v``.

    The chains move the hyperparameters on the collapsed target
    (:class:`~skgp_bayes.targets.collapsed.CollapsedSparseTarget`);
    :meth:`to_x` completes every draw with one draw of ``v | theta`` from
    its Gaussian, so the draws are those of the joint ``(theta, v)``
    posterior and keep its layout. The ``v`` of a chain's ``k``-th draw
    comes from that chain's own generator, drawn once and kept, so a draw
    does not change when later blocks extend the chain.
    """

    def __init__(self, guarded, x0, transform, rng, n_chains, target, seed):
        inits = inv_mass = None
        if transform is None:
            # No usable curvature (an optimum on a bound): start a few tenths
            # from the optimum, inside the bounds, pulled halfway back while
            # the density is not finite there.
            inits = x0 + np.sqrt(_HYPER_INV_MASS) * rng.standard_normal(
                (n_chains, x0.size)
            )
            inits = np.clip(inits, guarded.lower, guarded.upper)
            for c in range(n_chains):
                for _ in range(30):
                    if np.isfinite(guarded(inits[c])[0]):
                        break
                    inits[c] = x0 + 0.5 * (inits[c] - x0)
            inv_mass = np.full(x0.size, _HYPER_INV_MASS)
        super().__init__(guarded, x0, transform, rng, n_chains, inits, inv_mass)
        self.conditional = target
        self._rngs = [np.random.default_rng([seed, c]) for c in range(n_chains)]
        self._v = [np.empty((0, target.n_inducing)) for _ in range(n_chains)]

    def to_x(self, w):
        hyper = super().to_x(w)
        for c, chain in enumerate(hyper):
            new = chain[self._v[c].shape[0] :]
            if new.shape[0]:
                more = self.conditional.sample_v(new, self._rngs[c])
                self._v[c] = np.concatenate([self._v[c], more])
        v = np.stack([v_c[: hyper.shape[1]] for v_c in self._v])
        return np.concatenate([hyper, v], axis=2)

    def x_inv_mass(self, inv_mass):
        """Inverse mass of the hyperparameters; NaN for ``v``, which HMC never moves."""
        return np.concatenate(
            [super().x_inv_mass(inv_mass), np.full(self.conditional.n_inducing, np.nan)]
        )


def _merge(first, then):
    """One chain's :class:`HMCResult` followed by its continuation."""
    joined = {
        f: np.concatenate([getattr(first, f), getattr(then, f)])
        for f in (
            "samples",
            "log_density",
            "accept_prob",
            "accepted",
            "divergent",
            "n_leapfrog",
            "energy",
            "step_sizes",
        )
    }
    n_first = first.accept_prob.size - first.n_warmup
    n_then = then.accept_prob.size
    rate = (first.acceptance_rate * n_first + then.acceptance_rate * n_then) / (
        n_first + n_then
    )
    return dataclasses.replace(
        first,
        **joined,
        acceptance_rate=float(rate),
        n_divergent=first.n_divergent + then.n_divergent,
        elapsed=first.elapsed + then.elapsed,
        final_state=then.final_state,
    )


def _after_warmup(first, then):
    """``then``, with all of ``first``'s iterations counted as its warm-up."""
    joined = {
        f: np.concatenate([getattr(first, f), getattr(then, f)])
        for f in (
            "accept_prob",
            "accepted",
            "divergent",
            "n_leapfrog",
            "energy",
            "step_sizes",
        )
    }
    return dataclasses.replace(
        then,
        **joined,
        n_warmup=first.accept_prob.size + then.n_warmup,
        elapsed=first.elapsed + then.elapsed,
    )


def _rhat_and_bulk_ess(chains):
    """Rank-normalised split R-hat and bulk ESS per parameter (NaN with too few draws).

    The bulk ESS is the ESS of the rank-normalised split chains (Vehtari et
    al., 2021): it measures how well the draws pin down the centre of each
    marginal whatever its tails.
    """
    n_params = chains.shape[2]
    if chains.shape[1] < 4:
        return np.full(n_params, np.nan), np.full(n_params, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        rhat = np.atleast_1d(
            np.asarray(split_rhat(chains, rank_normalized=True), dtype=np.float64)
        )
        ranks = _rank_normalize(_split_chains(chains))
        ess = np.atleast_1d(np.asarray(effective_sample_size(ranks), dtype=np.float64))
    return rhat, ess


def _run_length_met(chains):
    """``(met, worst R-hat, worst bulk ESS)`` of the run-length rule."""
    rhat, ess = _rhat_and_bulk_ess(chains)
    if not np.any(np.isfinite(rhat)):
        return False, np.nan, np.nan
    worst_rhat, worst_ess = float(np.nanmax(rhat)), float(np.nanmin(ess))
    return worst_rhat <= _RHAT_MAX and worst_ess >= _BULK_ESS_MIN, worst_rhat, worst_ess


def _svgp_recent_gain(trace):
    if len(trace) <= _SVGP_WINDOW:
        return np.nan
    return float(trace[-1] - trace[-1 - _SVGP_WINDOW])


class _VariationalMCMCBase(
    EstimatorBase, InferenceDataMixin, VersionedStateMixin, BaseEstimator
):
    """Shared fit and prediction machinery; see the two public classes."""

    _common_constraints = {
        "kernel": [None, Kernel],
        "n_inducing": [None, Interval(Integral, 1, None, closed="left")],
        "inducing_points": [None, "array-like"],
        "optimize_inducing": ["boolean"],
        "n_chains": [Interval(Integral, 1, None, closed="left")],
        "n_warmup": [Interval(Integral, 0, None, closed="left")],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "max_samples": [Interval(Integral, 1, None, closed="left")],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "max_leapfrog": [None, Interval(Integral, 1, None, closed="left")],
        "target_accept": [Interval(Real, 0, 1, closed="neither")],
        "priors": [None, dict],
        "batch_size": [None, Interval(Integral, 1, None, closed="left")],
        "svgp_max_iter": [Interval(Integral, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "normalize_X": ["boolean"],
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
        "verbose": ["verbose"],
    }

    # ------------------------------------------------------------ helpers
    def _inducing(self, X, seed, scaling):
        if self.inducing_points is None:
            return initial_inducing(X, self._n_inducing(X.shape[0]), seed)
        Z = np.asarray(self.inducing_points, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != X.shape[1] or Z.shape[0] < 1:
            raise ValueError(
                f"inducing_points must have shape (m, {X.shape[1]}); got {Z.shape}."
            )
        if not np.all(np.isfinite(Z)):
            raise ValueError("inducing_points must be finite.")
        return np.ascontiguousarray(scaling.transform(Z))

    def _blas_limit(self, n_rows, n_inducing):
        # Small triangular solves are dominated by BLAS thread start-up (and
        # by threads fighting for the cores on a busy machine): measured at
        # n=60, m=8 on 2 cores, one target gradient took 48 ms with threaded
        # BLAS and 1.1 ms serial.
        return blas_threads_for(n_rows, n_inducing)

    def _n_inducing(self, n):
        if self.n_inducing is not None:
            return self.n_inducing
        return _default_n_inducing(n)

    def _fit_pipeline(self, X, y_lik, likelihood, offset):
        """All three stages; returns the fitted attributes as a dict."""
        m = (
            self._n_inducing(X.shape[0])
            if self.inducing_points is None
            else len(self.inducing_points)
        )
        X_model, scaling = fit_input_scaling(self, X)
        with self._blas_limit(X.shape[0], m):
            fitted = self._fit_stages(X_model, y_lik, likelihood, offset, scaling)
        fitted["input_scaling_"] = scaling
        return fitted

    def _fit_stages(self, X, y_lik, likelihood, offset, scaling):
        t_start = time.perf_counter()
        if self.thin > self.n_samples:
            raise ValueError(
                f"thin={self.thin} keeps no draw of n_samples={self.n_samples}."
            )
        check_input_magnitude(X)
        rng = check_random_state(self.random_state)
        seeds = rng.randint(0, 2**31 - 1, size=4)
        kernel = self._new_kernel(X.shape[1])
        adapter = KernelAdapter(kernel)
        check_finite_theta(kernel.theta, adapter.param_names)
        kernel_bounds = np.asarray(kernel.bounds, dtype=np.float64).reshape(-1, 2)
        check_bounds(kernel_bounds, adapter.param_names)
        is_gaussian = isinstance(likelihood, Gaussian)
        slices = dict(adapter.hyperparameter_slices)
        hyper_bounds = kernel_bounds
        if is_gaussian:
            slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
            hyper_bounds = np.vstack([kernel_bounds, [_LOG_NOISE_BOUNDS]])
        prior_set = PriorSet(slices, merged_priors(self.priors, slices, X.shape[1]))

        # 1. Gaussian approximation
        Z0 = self._inducing(X, int(seeds[0]), scaling)
        bound = SVGPBound(
            adapter,
            X,
            y_lik,
            Z0,
            likelihood,
            prior_set,
            learn_inducing=None if self.optimize_inducing else False,
            offset=offset,
        )
        theta0 = np.clip(kernel.theta, kernel_bounds[:, 0], kernel_bounds[:, 1])
        start = bound.initial_params(theta0)
        opt_bounds = np.tile([-np.inf, np.inf], (bound.n_params, 1))
        opt_bounds[: bound.n_hyper] = hyper_bounds
        n = X.shape[0]
        batch = self.batch_size
        use_adam = (batch is not None and batch < n) or (
            batch is None and n > _LBFGS_MAX_N
        )
        report = self._svgp_reporter(t_start)
        if self.svgp_max_iter == 0:
            svgp_params, svgp_trace, converged, n_iter = start, [], True, 0
        elif use_adam:
            svgp_params, svgp_trace, converged, n_iter = fit_svgp_adam(
                bound,
                start,
                opt_bounds,
                self.svgp_max_iter,
                batch or _DEFAULT_BATCH,
                self.learning_rate,
                np.random.default_rng(int(seeds[1])),
                report=report,
            )
        else:
            svgp_params, svgp_trace, converged, n_iter = fit_svgp_lbfgs(
                bound,
                start,
                opt_bounds,
                self.svgp_max_iter,
                tol=_SVGP_TOL,
                report=report,
            )
        if report is not None:
            report.close()
        if not converged:
            gain = _svgp_recent_gain(svgp_trace)
            why = (
                f"the bound still rose by {gain / n:.2g} nats per point over the "
                f"last {_SVGP_WINDOW} iterations, against a tolerance of "
                f"{_SVGP_TOL:g}"
                if np.isfinite(gain)
                else f"too few to apply the stopping rule over {_SVGP_WINDOW}"
            )
            warn_user(
                f"The Gaussian approximation did not converge in "
                f"{self.svgp_max_iter} L-BFGS iterations ({why}); increase "
                "svgp_max_iter.",
                ConvergenceWarning,
            )
        theta, log_noise, q_mean, q_L, Z = bound.split(svgp_params)
        Z = np.array(Z)
        svgp_elbo = (
            float(svgp_trace[-1]) if svgp_trace else float(bound.elbo(svgp_params))
        )
        if self.verbose:
            self._log(
                f"Gaussian approximation: ELBO {svgp_elbo:.4g} after {n_iter} "
                f"{'Adam' if use_adam else 'L-BFGS'} iterations "
                f"({time.perf_counter() - t_start:.2f} s)"
            )

        # 2. HMC over (theta, v) with Z fixed
        target = SparseWhitenedTarget(
            adapter, X, y_lik, Z, likelihood, prior_set, offset=offset
        )
        hyper = np.append(theta, log_noise) if is_gaussian else np.array(theta)
        guarded = _GuardedTarget(target, hyper_bounds[:, 0], hyper_bounds[:, 1])
        t_hmc = time.perf_counter()
        sampler = self._sampler_setup(
            guarded, target, hyper, q_mean, q_L, np.random.default_rng(int(seeds[2]))
        )
        chains, results, n_blocks = self._sample(sampler, int(seeds[3]), t_hmc)
        hmc_time = time.perf_counter() - t_hmc
        names = target.param_names
        samples = chains.reshape(-1, chains.shape[2])
        warn_at_bounds(samples, kernel_bounds, names, "HMC draws", "spread")

        # 3. diagnostics
        rhat, ess = _rhat_and_bulk_ess(chains)
        n_div = int(sum(r.n_divergent for r in results))
        self._warn_diagnostics(names, rhat, ess, n_div, chains.shape[1])
        if self.verbose:
            self._log(
                f"HMC: {self.n_chains} chains x {self.n_warmup} warm-up + "
                f"{chains.shape[1] * self.thin} sampling iterations in "
                f"{hmc_time:.2f} s; max R-hat {np.nanmax(rhat):.3f}, min bulk ESS "
                f"{np.nanmin(ess):.0f}, {n_div} divergences"
            )
        fitted_kernel = kernel.clone_with_theta(theta)
        total = time.perf_counter() - t_start
        return {
            "draws_": chains.reshape(-1, chains.shape[2]),
            "param_names_": names,
            "inducing_points_": Z,
            "kernel_": fitted_kernel,
            "rhat_": rhat,
            "ess_": ess,
            "acceptance_rate_": float(np.mean([r.acceptance_rate for r in results])),
            "n_divergences_": n_div,
            "step_size_": np.array([r.step_size for r in results]),
            "inv_mass_": np.stack([sampler.x_inv_mass(r.inv_mass) for r in results]),
            "svgp_params_": svgp_params,
            "svgp_elbo_": svgp_elbo,
            "trace_": {
                "svgp_elbo": np.asarray(svgp_trace),
                "accept_prob": np.stack([r.accept_prob for r in results]),
                "step_sizes": np.stack([r.step_sizes for r in results]),
                "divergent": np.stack([r.divergent for r in results]),
                "n_leapfrog": np.stack([r.n_leapfrog for r in results]),
                "energy": np.stack([r.energy for r in results]),
                "log_density": np.stack([r.log_density for r in results]),
            },
            "fit_time_": {"svgp": t_hmc - t_start, "hmc": hmc_time, "total": total},
            "diagnostics_": {
                "fit_time": total,
                "max_rhat": float(np.nanmax(rhat)) if np.size(rhat) else np.nan,
                "min_ess": float(np.nanmin(ess)) if np.size(ess) else np.nan,
                "n_divergences": int(n_div),
                "acceptance_rate": float(np.mean([r.acceptance_rate for r in results])),
                "step_size": [float(r.step_size) for r in results],
                "jitter": float(target.jitter),
                "svgp_elbo": float(svgp_elbo),
                "svgp_iterations": int(n_iter),
                "sampling_iterations": int(chains.shape[1] * self.thin),
                "sampling_blocks": int(n_blocks),
                "preconditioned": sampler.transform is not None,
            },
            "_adapter": adapter,
            "_likelihood": likelihood,
            "_jitter": target.jitter,
            "_n_hyper": target.n_hyper,
            "_n_latent": target.n_latent,
            "_q": (np.array(theta), log_noise, np.array(q_mean), np.array(q_L)),
        }

    def _svgp_reporter(self, t_start):
        every = max(1, self.svgp_max_iter // 10)
        progress = fit_progress(self, "Gaussian approximation", self.svgp_max_iter)
        if progress.engine is None and self.verbose < 2:
            return None

        def report(n_iter, elbo):
            if progress.engine is not None:
                progress(n_iter, self.svgp_max_iter, {"ELBO": float(elbo)})
            if self.verbose >= 2 and n_iter % every == 0:
                self._log(
                    f"Gaussian approximation: iteration {n_iter}/"
                    f"{self.svgp_max_iter}, ELBO {elbo:.6g} "
                    f"({time.perf_counter() - t_start:.1f} s)"
                )

        report.close = progress.close
        return report

    def _leapfrog_options(self):
        """The engine's step bound: a time of pi by default (see max_leapfrog)."""
        if self.max_leapfrog is None:
            return {"max_leapfrog": _LEAPFROG_CAP, "trajectory_length": np.pi}
        return {"max_leapfrog": self.max_leapfrog}

    def _mean_leapfrog(self):
        if self.max_leapfrog is None:
            return (np.ceil(np.pi / _TYPICAL_STEP) + 1) / 2
        return (self.max_leapfrog + 1) / 2

    def _sampler_setup(self, guarded, target, hyper, q_mean, q_L, rng):
        """Coordinates, starting points and initial inverse mass of HMC.

        The chains sample ``w`` with ``(theta, v) = x0 + T w``, ``T`` from
        the curvature of the target at the Gaussian approximation's point
        ``x0`` (see the module notes), when that costs at most one chain's
        warm-up in gradients; otherwise ``(theta, v)`` directly with the
        variances of ``q(v)`` as the first inverse mass.
        """
        x0 = np.concatenate([hyper, np.asarray(q_mean).reshape(-1)])
        d = x0.size
        warmup_gradients = self.n_warmup * self._mean_leapfrog()
        transform = None
        # The robust-max likelihood is piecewise constant in f: a Hessian
        # taken at one point describes no neighbourhood of it. Measured on
        # noise-free three-class data, curvature-scaled chains misclassified
        # up to 40% of the training points where unscaled ones got all right.
        smooth = not isinstance(target.likelihood, RobustMax)
        if smooth and 2 * d <= warmup_gradients:
            transform = curvature_preconditioner(guarded, x0)
        if transform is not None:
            return _Sampler(guarded, x0, transform, rng, self.n_chains)
        C, m = target.n_latent, target.n_inducing
        inits = np.empty((self.n_chains, d))
        for c in range(self.n_chains):
            z = rng.standard_normal((C, m))
            v = q_draw(q_mean, q_L, z)
            inits[c] = np.concatenate([hyper, v.reshape(-1)])
        q_var = q_marginal_variances(q_L).reshape(-1)
        inv_mass = np.concatenate(
            [np.full(hyper.size, _HYPER_INV_MASS), np.maximum(q_var, 1e-4)]
        )
        return _Sampler(guarded, None, None, rng, self.n_chains, inits, inv_mass)

    def _sample(self, sampler, seed, t_start):
        """Warm-up and sampling blocks until the run-length rule is met.

        Returns the kept draws ``(n_chains, n_kept, n_params)`` in
        ``(theta, v)`` coordinates, one merged :class:`HMCResult` per chain
        and the number of sampling blocks.
        """
        name = type(self).__name__
        options = dict(
            thin=self.thin,
            target_accept=self.target_accept,
            **self._leapfrog_options(),
        )
        n_warmup, first = self.n_warmup, None
        if sampler.transform is not None and n_warmup >= _MIN_REFINED_WARMUP:
            sampler, n_warmup, first = self._refine(sampler, seed, options)
        with self._hmc_progress("HMC chains", n_warmup + self.n_samples) as progress:
            results = run_hmc_chains(
                sampler.target,
                sampler.inits,
                random_state=seed,
                n_jobs=self.n_jobs,
                n_warmup=n_warmup,
                n_samples=self.n_samples,
                inv_mass=sampler.inv_mass,
                step_size=None if first is None else sampler.step_size,
                verbose=engine_verbose(self),
                print_fn=_Printer(name),
                progress=progress.engine,
                **options,
            )
        if first is not None:
            results = [_after_warmup(a, b) for a, b in zip(first, results, strict=True)]
        budget = max(self.max_samples, self.n_samples)
        done, n_blocks = self.n_samples, 1
        while True:
            chains = sampler.to_x(np.stack([r.samples for r in results]))
            met, rhat, ess = _run_length_met(chains)
            if self.verbose:
                self._log(
                    f"HMC: {done} sampling iterations per chain, max R-hat "
                    f"{rhat:.3f}, min bulk ESS {ess:.0f} "
                    f"({time.perf_counter() - t_start:.1f} s)"
                )
            if met or done >= budget:
                return chains, results, n_blocks
            block = min(self.n_samples, budget - done)
            with self._hmc_progress("HMC chains", block) as progress:
                more = run_hmc_chains(
                    sampler.target,
                    np.stack([r.final_state for r in results]),
                    random_state=[seed, n_blocks],
                    n_jobs=self.n_jobs,
                    n_warmup=0,
                    n_samples=block,
                    step_size=np.array([r.step_size for r in results]),
                    inv_mass=np.stack([r.inv_mass for r in results]),
                    adapt_step_size=False,
                    adapt_mass=False,
                    verbose=max(0, engine_verbose(self) - 1),
                    print_fn=_Printer(name),
                    progress=progress.engine,
                    **options,
                )
            results = [_merge(a, b) for a, b in zip(results, more, strict=True)]
            done += block
            n_blocks += 1

    def _hmc_progress(self, stage, length):
        """The progress of one block of HMC chains, each ``length`` long."""
        return fit_progress(
            self,
            stage,
            length,
            n_runs=self.n_chains,
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
        with self._hmc_progress("HMC warm-up", 2 * quarter) as progress:
            first = run_hmc_chains(
                sampler.target,
                sampler.inits,
                random_state=[seed, 0],
                n_jobs=self.n_jobs,
                n_warmup=quarter,
                n_samples=quarter,
                inv_mass=sampler.inv_mass,
                verbose=0,
                progress=progress.engine,
                **{**options, "thin": 1},
            )
        chains = np.stack([r.samples for r in first])
        states = np.stack([r.final_state for r in first])
        refined = sampler.refined(chains, states)
        # The new coordinates are closer to a standard normal than the old:
        # each chain's adapted step is a safe start for its adaptation (the
        # step search would begin from 1 again).
        refined.step_size = np.array([r.step_size for r in first])
        if self.verbose:
            self._log(
                f"HMC: coordinates refined from {chains.shape[0]} x "
                f"{chains.shape[1]} warm-up draws"
            )
        return refined, self.n_warmup - 2 * quarter, first

    def _warn_diagnostics(self, names, rhat, ess, n_div, n_kept):
        if n_div:
            warn_user(
                f"{n_div} divergent HMC transitions after warm-up: the steps "
                "were too large for the posterior's curvature somewhere, so the "
                "samples may miss that region. Lengthen n_warmup (the step size "
                "adapts for longer) or raise target_accept towards 0.99 (smaller "
                "steps, slower sampling).",
                SamplerWarning,
            )
        bad_rhat = np.any(np.isfinite(rhat)) and np.nanmax(rhat) > _RHAT_MAX
        bad_ess = np.any(np.isfinite(ess)) and np.nanmin(ess) < _BULK_ESS_MIN
        if bad_rhat or bad_ess:
            j = int(np.nanargmax(rhat))
            k = int(np.nanargmin(ess))
            warn_user(
                f"The chains did not meet the run-length rule in "
                f"{n_kept * self.thin} sampling iterations per chain (max_samples="
                f"{self.max_samples}): split R-hat {rhat[j]:.3f} for {names[j]} "
                f"(goal <= {_RHAT_MAX}), bulk effective sample size {ess[k]:.0f} "
                f"for {names[k]} (goal >= {_BULK_ESS_MIN}), the worst parameters. "
                "Raise max_samples, or n_warmup if R-hat is far above the goal.",
                SamplerWarning,
            )

    # ---------------------------------------------------------- prediction
    def _draw_moments(self, X):
        """Per-draw latent moments: means (S, k, C) and variances (S, k)."""
        Z, C = self.inducing_points_, self._n_latent
        S = self.draws_.shape[0]
        with self._blas_limit(min(X.shape[0], _PREDICT_ROWS), Z.shape[0]):
            return sparse_draw_moments(
                self._adapter,
                Z,
                self._jitter,
                self.draws_[:, : self._adapter.n_params],
                self.draws_[:, self._n_hyper :].reshape(S, -1, C),
                X,
            )

    def _gaussian_moments(self, X):
        """Moments of the Gaussian approximation ``q(f)``: (k, C) each."""
        theta, _, q_mean, q_L = self._q
        return q_moments_per_latent(
            self._adapter, theta, self.inducing_points_, self._jitter, q_mean, q_L, X
        )

    def _noise_draws(self):
        return np.exp(self.draws_[:, self._adapter.n_params])

    def _posterior_draws(self, posterior):
        """Kernel thetas (S, p), whitened ``v`` (S, m, C), ``q(v)`` factors.

        ``"mcmc"``: the kept HMC draws, factors None. ``"gaussian"``: the
        SVGP's ``q(v) = N(m, S)`` as one draw, with the lower factors of
        ``S`` per latent, shape (C, m, m).
        """
        if posterior == "gaussian":
            theta, _, q_mean, q_L = self._q
            return np.asarray(theta)[None, :], np.asarray(q_mean)[None], q_L
        if posterior != "mcmc":
            raise ValueError(
                f"posterior must be 'mcmc' or 'gaussian'; got {posterior!r}."
            )
        S, C = self.draws_.shape[0], self._n_latent
        thetas = self.draws_[:, : self._adapter.n_params]
        return thetas, self.draws_[:, self._n_hyper :].reshape(S, -1, C), None

    def _functions(self, n_samples, random_state, n_features, posterior, **kw):
        check_is_fitted(self)
        check_n_samples(n_samples)
        thetas, v, factors = self._posterior_draws(posterior)
        rng = check_random_state(random_state)
        return sparse_function_samples(
            self._adapter,
            self.inducing_points_,
            self._jitter,
            thetas,
            v,
            factors,
            n_samples,
            rng,
            n_features,
            **kw,
        )

    samples_ = per_chain_samples()

    @property
    def kernels_(self):
        """One kernel per kept draw, at that draw's hyperparameters.

        ``kernel_`` is the kernel at the Gaussian approximation's point
        estimate; ``kernels_[s]`` goes with ``draws_[s]``.

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, X[:, 0] > 0)
        >>> len(clf.kernels_) == clf.draws_.shape[0]
        True
        """
        thetas = self.draws_[:, : self._adapter.n_params]
        return [self.kernel_.clone_with_theta(theta) for theta in thetas]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags


# ==========================================================================


class VariationalMCMCClassifier(ClassifierMixin, _VariationalMCMCBase):
    """Gaussian-process classification by variational MCMC.

    A sparse variational (SVGP) fit places the inducing inputs and gives a
    Gaussian approximation; HMC then samples the hyperparameters and the
    whitened inducing values jointly from the sparse whitened posterior of
    Hensman et al. (2015), so predictions carry both the hyperparameter and
    the non-Gaussian latent uncertainty. See the module notes for the
    pipeline.

    Parameters
    ----------
    kernel : sklearn kernel, default=None
        Prior covariance, shared by all latent functions; its ``theta``
        starts the fit and its ``bounds`` bound the hyperparameters. None
        gives ``ConstantKernel(1.0) * RBF(sqrt(d) * ones(d))`` on
        standardised inputs, one length scale per input (see
        :ref:`defaults`).
    n_inducing : int, default=None
        Number of inducing inputs placed by k-means (fewer if ``X`` has
        fewer distinct rows). Ignored when ``inducing_points`` is given.
        None uses ``min(50, ceil(sqrt(n)))`` for ``n`` training points: a
        Nystrom approximation with centres of the order of ``sqrt(n)``
        (up to a log factor) already reaches the optimal statistical rate
        of the full kernel method (Rudi, Camoriano and Rosasco, 2015), and
        the smooth kernels used here, whose spectra decay fast, need fewer;
        the inducing inputs are optimised besides. Every inducing value is
        a sampled parameter: fewer of them make each gradient cheaper
        (``O(n m^2)``) and the chains shorter (the run-length rule must hold
        for every parameter). The cap of 50 keeps large problems at the
        cost of the former fixed default.
    inducing_points : array-like of shape (m, n_features), default=None
        Initial inducing inputs, instead of k-means. They are optimised
        with the SVGP when the kernel has input gradients (RBF or Matern,
        optionally times a constant plus a white kernel) and
        ``optimize_inducing`` is true.
    optimize_inducing : bool, default=True
        Optimise the inducing inputs with the Gaussian approximation (only
        possible for kernels with input gradients; others keep them where
        they start). They are fixed during sampling either way.
    link : {"logit", "probit"}, default="logit"
        Link of the Bernoulli likelihood for two classes.
    multiclass : {"robustmax", "softmax"}, default="softmax"
        Likelihood for more than two classes: softmax, whose expectations
        the sampled target and ``predict_proba`` take with a degree-5
        cubature rule up to five classes
        (:func:`~skgp_bayes.targets.sparse.softmax_rule`; the Gaussian
        approximation and more classes use fixed Monte Carlo draws), or
        robust-max with ``epsilon = 1e-3`` (the seed paper's section 4.4).
        Robust-max is almost a step
        function of the latent values where their conditional variance is
        small, and HMC then mixes slowly between class regions (a fixed
        ``WhiteKernel`` nugget in the kernel smooths it, as the seed paper
        suggests); softmax is smooth. On wine (124 training points) the
        default fit with robust-max spent the 2,000-iteration budget with
        split R-hat 1.024 and two divergences; with softmax it met the
        run-length rule after the first 250 iterations, without a
        divergence.
    n_chains : int, default=4
        Independent HMC chains.
    n_warmup : int, default=300
        Warm-up (adaptation) iterations per chain, discarded. The chains
        run in coordinates scaled by the curvature of the posterior (see
        the module notes); a quarter adapts step and diagonal mass there, a
        quarter draws, whose covariance over all chains refines the
        coordinates, and the remaining half adapts again in the refined
        ones (each part with Stan's schedule: a step-size buffer, doubling
        windows of the diagonal mass adaptation, a terminal buffer).
    n_samples : int, default=250
        Sampling iterations per chain in the first block after warm-up,
        and in every further block.
    max_samples : int, default=2000
        Budget of sampling iterations per chain. After each block the
        split R-hat and the bulk effective sample size of every parameter
        are computed over all kept draws; sampling stops once R-hat is at
        most 1.01 and the bulk ESS at least 100 for every parameter, and
        otherwise continues by another block of ``n_samples`` until the
        budget is spent, when a :class:`~skgp_bayes.exceptions.SamplerWarning`
        gives the figures.
    thin : int, default=1
        Keep every ``thin``-th sampling iteration.
    max_leapfrog : int or None, default=None
        Bound of the number of leapfrog steps, drawn uniformly from
        ``1..N`` for every transition (the jitter breaks periodicities,
        Neal 2011, section 3.2). None sets ``N = ceil(pi / step)`` for the
        adapted step: in the curvature-scaled coordinates, with the mass
        adapted, the posterior is close to a standard normal, whose
        Hamiltonian flow turns with period ``2 pi``; a time of ``pi / 2``
        (a quarter turn, the mean of the jittered times) maps a position to
        an independent one. A fixed ``N`` ties the path length to the step
        instead: on iris the step adapted to 0.17, ``N = 10`` gave paths of
        0.9 on average, and after 2,000 iterations the bulk ESS of a length
        scale was still 122 with R-hat 1.03; ``N = 20`` met the run-length
        rule after 1,500 iterations (bulk ESS 588), 3.4 times the ESS per
        gradient. An integer gives ``N`` directly.
    target_accept : float, default=0.9
        Target acceptance probability of the step-size adaptation. The
        whitened parametrisation couples the hyperparameters and ``v`` in
        a funnel (small length scales or signal variances narrow the
        posterior of ``v``), where Stan's advice for funnels is a target
        above its default 0.8; at 0.8 a default fit on diabetes diverged
        twice in 3,000 transitions.
    priors : dict, default=None
        Priors on the natural scale by hyperparameter name; missing
        names get the defaults of :ref:`defaults`.
    batch_size : int, default=None
        Minibatch size of the Adam fit of the Gaussian approximation. None
        uses full-batch L-BFGS-B up to 5000 points and minibatches of 512
        beyond; a ``batch_size`` below ``n_samples`` selects Adam.
    svgp_max_iter : int, default=1000
        Most L-BFGS-B iterations, or the Adam steps, of the Gaussian
        approximation. L-BFGS-B stops earlier, as converged, once the bound
        has risen by less than ``1e-4`` nats per training point over the
        last 10 iterations; a gain in nats does not depend on the units of
        ``X`` or ``y``.
    learning_rate : float, default=0.01
        Adam's learning rate (minibatch fits only).
    normalize_X : bool, default=True
        Standardise each input column (mean 0, standard deviation 1 on the
        training data) inside the estimator. The kernel's hyperparameters,
        their bounds and priors, and inducing inputs stored on the estimator
        are then in standardised units, so the defaults mean the same thing
        whatever the inputs' natural units; ``input_scaling_`` maps between
        the two. Set ``False`` to give a kernel in the inputs' own units.
    random_state : int, RandomState instance or None, default=None
        Seeds k-means, the minibatches, the chain starts and the chains.
    n_jobs : int, default=None
        Chains run in parallel with joblib; the result does not depend on
        it.
    verbose : int, default=0
        1 shows one progress line per stage on standard error, updated in
        place on a terminal (the Gaussian approximation's bound, then the
        chains' acceptance rate and divergences, with the time left), and
        R-hat and ESS after every block; 2 prints instead the detailed
        lines: the bound every tenth of ``svgp_max_iter``, about ten lines
        per chain through warm-up and the first sampling block; 3 also
        prints the chains' progress through the further blocks.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    draws_ : ndarray of shape (n_chains * n_kept, n_params)
        Kept draws, chain after chain: ``[kernel theta (log scale), v]``
        with ``v`` of shape ``(m, C)`` flattened in C order. Predictions
        average over them.
    samples_ : ndarray of shape (n_chains, n_kept, n_params)
        ``draws_`` split by chain (a view), the layout of ``rhat_`` and
        ``ess_``. Until this release ``samples_`` was the pooled array now
        in ``draws_``; the first read warns (``FutureWarning``).
    param_names_ : list of str
    inducing_points_ : ndarray of shape (m, n_features)
        Inducing inputs (from the SVGP), fixed during sampling.
    kernel_ : kernel
        The kernel at the Gaussian approximation's hyperparameters.
    kernels_ : list of kernel
        One kernel per row of ``draws_``.
    rhat_, ess_ : ndarray of shape (n_params,)
        Split R-hat and bulk effective sample size (of the rank-normalised
        split chains, Vehtari et al. 2021) per parameter (NaN when too few
        draws are kept to compute them).
    acceptance_rate_ : float
        Mean acceptance probability after warm-up, over chains.
    n_divergences_ : int
        Divergent transitions after warm-up, over chains.
    step_size_ : ndarray of shape (n_chains,)
        Step size of each chain after warm-up.
    inv_mass_ : ndarray of shape (n_chains, n_params)
        Diagonal of each chain's inverse mass matrix after warm-up, in
        ``(theta, v)`` coordinates (with the curvature scaling, the
        diagonal of ``T diag(m) T'``).
    svgp_params_ : ndarray
        Parameters of the fitted SVGP bound.
    svgp_elbo_ : float
        Its value (the ELBO plus the log prior).
    trace_ : dict of ndarray
        ``svgp_elbo`` per optimiser iteration; per chain and iteration
        ``accept_prob``, ``step_sizes``, ``divergent``, ``n_leapfrog``, ``energy``; the
        log density of the kept draws.
    fit_time_ : dict
        Seconds spent in the SVGP, in HMC and in total.
    diagnostics_ : dict
        ``fit_time`` (``fit_time_["total"]``), ``max_rhat``, ``min_ess``,
        ``n_divergences``, ``acceptance_rate``,
        the final ``step_size`` per chain, the relative ``jitter`` on
        ``K(Z, Z)``, the SVGP's ``svgp_elbo`` and ``svgp_iterations``, the
        ``sampling_iterations`` per chain that the run-length rule took and
        the number of ``sampling_blocks``, and whether the chains ran in
        curvature-scaled coordinates (``preconditioned``), in one place.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,)
        Only when ``X`` has string feature names.

    See Also
    --------
    VariationalMCMCRegressor : the same for counts and real targets.
    skgp_bayes.SteinGPClassifier : particle posterior over the exact GP.

    References
    ----------
    J. Hensman, A. G. de G. Matthews, M. Filippone and Z. Ghahramani,
    "MCMC for variationally sparse Gaussian processes", NeurIPS 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import VariationalMCMCClassifier
    >>> X = np.linspace(-3, 3, 40)[:, None]
    >>> y = (np.sin(2 * X[:, 0]) > 0).astype(int)
    >>> clf = VariationalMCMCClassifier(
    ...     n_inducing=8, n_chains=2, n_warmup=100, n_samples=100, max_samples=100,
    ...     max_leapfrog=10, random_state=0)
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     _ = clf.fit(X, y)
    >>> clf.predict_proba(X[:3]).shape, clf.draws_.shape
    ((3, 2), (200, 10))
    """

    _parameter_constraints = {
        **_VariationalMCMCBase._common_constraints,
        "link": [StrOptions({"logit", "probit"})],
        "multiclass": [StrOptions({"robustmax", "softmax"})],
    }

    def __init__(
        self,
        kernel=None,
        *,
        n_inducing=None,
        inducing_points=None,
        optimize_inducing=True,
        link="logit",
        multiclass="softmax",
        n_chains=4,
        n_warmup=300,
        n_samples=250,
        max_samples=2000,
        thin=1,
        max_leapfrog=None,
        target_accept=0.9,
        priors=None,
        batch_size=None,
        svgp_max_iter=1000,
        learning_rate=0.01,
        normalize_X=True,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.kernel = kernel
        self.n_inducing = n_inducing
        self.inducing_points = inducing_points
        self.optimize_inducing = optimize_inducing
        self.link = link
        self.multiclass = multiclass
        self.n_chains = n_chains
        self.n_warmup = n_warmup
        self.n_samples = n_samples
        self.max_samples = max_samples
        self.thin = thin
        self.max_leapfrog = max_leapfrog
        self.target_accept = target_accept
        self.priors = priors
        self.batch_size = batch_size
        self.svgp_max_iter = svgp_max_iter
        self.learning_rate = learning_rate
        self.normalize_X = normalize_X
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    @fit_method
    def fit(self, X, y):
        """Fit the Gaussian approximation, then sample by HMC.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : VariationalMCMCClassifier

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, max_samples=10,
        ...                                 random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, y)
        >>> clf.classes_
        array([0, 1])
        """
        with atomic_feature_state(self):
            X, y = validate_data(self, X, y, dtype=np.float64, order="C")
            check_classification_targets(y)
            classes, y_enc = np.unique(y, return_inverse=True)
            if classes.size < 2:
                raise ValueError(
                    f"{type(self).__name__} requires 2 classes; got 1 class "
                    f"(label {classes[0]!r})."
                )
            if classes.size == 2:
                likelihood = Bernoulli(link=self.link)
                y_lik = y_enc.astype(np.float64)
            elif self.multiclass == "robustmax":
                likelihood = RobustMax(classes.size, epsilon=1e-3)
                y_lik = y_enc
            else:
                likelihood = Softmax(classes.size, random_state=0)
                y_lik = y_enc
            fitted = self._fit_pipeline(X, y_lik, likelihood, None)
        fitted["classes_"] = classes
        self._set_fitted(fitted)
        warn_degenerate_fit(self, X, y)
        return self

    def _proba_from_moments(self, mu, var):
        """Class probabilities ``(..., k, n_classes)`` from latent moments."""
        lik = self._likelihood
        if self._n_latent == 1:
            p1 = lik.predictive(mu[..., 0], var[..., 0])
            return np.stack([1.0 - p1, p1], axis=-1)
        var = np.maximum(var, 1e-12)
        shape = mu.shape
        proba = lik.predictive(mu.reshape(-1, shape[-1]), var.reshape(-1, shape[-1]))
        return proba.reshape(shape)

    @keyboard_interrupt_passes
    def predict_proba(self, X, method="mcmc"):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        method : {"mcmc", "gaussian"}, default="mcmc"
            ``"mcmc"`` averages ``E[p(y | f)]`` over the kept draws, each
            with its latent ``f | v, theta ~ N(A' v, gamma)``;
            ``"gaussian"`` uses the SVGP approximation alone, for
            comparison.

        Returns
        -------
        proba : ndarray of shape (n_queries, n_classes)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, max_samples=10,
        ...                                 random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, y)
        >>> clf.predict_proba(X[:2]).shape
        (2, 2)
        >>> clf.predict_proba(X[:2], method="gaussian").shape
        (2, 2)
        """
        return self._proba(self._validate_query(X), method)

    def _softmax_by_rule(self):
        return isinstance(self._likelihood, Softmax) and self._n_latent - 1 <= 4

    def _proba(self, X, method):
        """``predict_proba`` at inputs already in the model's units."""
        means, var = self._latent_draws(X, method)
        if self._n_latent == 1:
            # Through the log odds, so that predict_log_proba is its log.
            return proba_from_log_odds(self._log_odds(means, var))
        if method == "mcmc" and self._softmax_by_rule():
            # The draws share one latent variance across classes, which the
            # target's cubature uses too; a loop over draws with the
            # likelihood's 100 Monte Carlo draws each cost seconds.
            proba = softmax_rule_proba(means, var[..., 0])
        else:
            total = np.zeros((X.shape[0], self.classes_.size))
            for s in range(means.shape[0]):
                total += self._proba_from_moments(means[s], var[s])
            proba = total / means.shape[0]
            proba /= proba.sum(axis=1, keepdims=True)
        # Through the log, so that classes whose probabilities differ by
        # round-off (the robust-max floor) rank alike in predict_log_proba.
        return np.exp(log_of_proba(proba))

    def _latent_draws(self, X, method):
        """Latent means and variances per draw, ``(S, k, C)`` each."""
        if method == "gaussian":
            mu, var = self._gaussian_moments(X)
            return mu[None], var[None]
        if method != "mcmc":
            raise ValueError(f"method must be 'mcmc' or 'gaussian'; got {method!r}.")
        means, variances = self._draw_moments(X)
        return means, np.repeat(variances[..., None], self._n_latent, axis=-1)

    def _log_odds(self, means, var):
        return binary_log_odds(self._likelihood, means[..., 0], var[..., 0])

    @keyboard_interrupt_passes
    def predict_log_proba(self, X, method="mcmc"):
        """Logarithm of :meth:`predict_proba`, finite in the tails for two classes.

        With two classes it is computed from each draw's log probabilities,
        so that it stays finite where a probability rounds to 0 or 1.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        method : {"mcmc", "gaussian"}, default="mcmc"
            As in :meth:`predict_proba`.

        Returns
        -------
        log_proba : ndarray of shape (n_queries, n_classes)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, y)
        >>> bool(np.allclose(np.exp(clf.predict_log_proba(X)), clf.predict_proba(X)))
        True
        """
        X = self._validate_query(X)
        if self._n_latent == 1:
            means, var = self._latent_draws(X, method)
            return proba_from_log_odds(self._log_odds(means, var), log=True)
        return log_of_proba(self._proba(X, method))

    @available_if(has_two_classes)
    @keyboard_interrupt_passes
    def decision_function(self, X, method="mcmc"):
        """Log predictive odds of ``classes_[1]`` (two classes only).

        ``log P(y = classes_[1]) - log P(y = classes_[0])`` under the
        draw-averaged predictive: positive exactly where :meth:`predict`
        returns ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        method : {"mcmc", "gaussian"}, default="mcmc"

        Returns
        -------
        scores : ndarray of shape (n_queries,)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, y)
        >>> clf.decision_function([[2.0]]) > 0
        array([ True])
        """
        X = self._validate_query(X)
        return self._log_odds(*self._latent_draws(X, method))

    @keyboard_interrupt_passes
    def predict(self, X, method="mcmc"):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        method : {"mcmc", "gaussian"}, default="mcmc"

        Returns
        -------
        ndarray of shape (n_queries,)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, max_samples=10,
        ...                                 random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, y)
        >>> clf.predict([[-2.0], [2.0]])
        array([0, 1])
        """
        proba = self.predict_proba(X, method=method)
        return self.classes_[np.argmax(proba, axis=1)]

    @keyboard_interrupt_passes
    def sample_functions(
        self, n_samples=1, random_state=0, n_features=None, posterior="mcmc"
    ):
        """Latent function samples from the posterior, callable anywhere.

        Each sample picks a kept HMC draw ``(theta, v)`` uniformly at random
        and is a pathwise draw of the latent GP given the inducing values
        ``u = R_theta v`` (``R_theta`` the Cholesky factor of the jittered
        ``K(Z, Z)``): a random-Fourier-feature prior draw plus Matheron's
        update ``k(x, Z) K(Z, Z)^-1 (u - f_prior(Z))``. So the samples mix
        over the hyperparameters and the inducing values, as
        :meth:`predict_proba` does. The functions are frozen (every call
        returns the same values), have analytic input gradients and pickle.
        Apply the link (sigmoid, probit, robust-max or softmax) to turn
        them into class probabilities.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0
        n_features : int, default=None
            Fourier features per draw; None uses 1024. The error of the
            prior covariance falls as ``1 / sqrt(n_features)``.
        posterior : {"mcmc", "gaussian"}, default="mcmc"
            ``"mcmc"``: mix over the kept HMC draws. ``"gaussian"``: the
            SVGP approximation, ``u = R (m + L z)`` with ``q(v) = N(m, L
            L')`` at its hyperparameters (as ``method="gaussian"`` in
            :meth:`predict_proba`).

        Returns
        -------
        functions : FunctionSamples or list of FunctionSamples
            For two classes one :class:`~skgp_bayes.sampling.FunctionSamples`
            (the latent of ``classes_[1]``); otherwise one per class, all on
            the same draws, so that ``[f(X) for f in functions]`` are
            jointly distributed latent values. A ``WhiteKernel``'s noise is
            not part of them.

        Raises
        ------
        ValueError
            If the kernel has no spectral density (use
            :meth:`predict_proba` at fixed points instead).

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, max_samples=10,
        ...                                 random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, y)
        >>> f = clf.sample_functions(5, random_state=0)
        >>> grid = np.linspace(-2, 2, 9)[:, None]
        >>> f(grid).shape, f.gradient(grid).shape
        ((9, 5), (9, 5, 1))
        >>> bool(np.array_equal(f(grid), f(grid)))
        True
        """
        check_is_fitted(self)
        require_spectral_spec(self._adapter.kernel, "predict_proba(X)")
        functions, _ = self._functions(n_samples, random_state, n_features, posterior)
        return in_natural_units(
            functions[0] if len(functions) == 1 else functions, self
        )


# ==========================================================================


def _check_exposure(exposure, n, likelihood_name):
    if exposure is None:
        return None
    if likelihood_name != "poisson":
        raise ValueError("exposure is only used with likelihood='poisson'.")
    exposure = np.asarray(exposure, dtype=np.float64)
    if exposure.ndim == 0:
        exposure = np.full(n, float(exposure))
    if exposure.shape != (n,):
        raise ValueError(f"exposure must have shape ({n},); got {exposure.shape}.")
    if not np.all(np.isfinite(exposure)) or np.any(exposure <= 0):
        raise ValueError("exposure must be positive and finite.")
    return exposure


class VariationalMCMCRegressor(RegressorMixin, _VariationalMCMCBase):
    """Gaussian-process regression on counts or real values by variational MCMC.

    The same pipeline as :class:`VariationalMCMCClassifier` (SVGP fit, then
    HMC over hyperparameters and whitened inducing values) with a Poisson
    likelihood for counts (log link, optional exposure), or a Gaussian
    likelihood whose noise variance is sampled with the kernel
    hyperparameters. For the Gaussian likelihood the whitened inducing
    values are integrated out exactly: HMC samples the hyperparameters on
    Titsias' collapsed bound (plus the log prior), which is the exact
    marginal of the joint target, and each kept draw gets an exact draw of
    ``v`` from its Gaussian conditional, so ``draws_`` holds draws of the
    same joint posterior in the same layout (see the module notes and
    :mod:`skgp_bayes.targets.collapsed`).

    Parameters
    ----------
    kernel : sklearn kernel, default=None
        Prior covariance of the latent function (log rate for Poisson).
        Default as in :class:`VariationalMCMCClassifier`.
    likelihood : {"poisson", "gaussian"}, default="gaussian"
        ``"poisson"``: ``y_i ~ Poisson(exposure_i * exp(f_i))``.
        ``"gaussian"``: ``y_i ~ N(f_i, noise_variance)``, with ``y``
        standardised internally and the noise variance a parameter (prior
        name ``"noise_variance"``, in standardised units).
    n_inducing : int, default=None
        As in :class:`VariationalMCMCClassifier` for Poisson counts. For the
        Gaussian likelihood, None starts from ``min(50, ceil(sqrt(n)))``
        and doubles the number of inducing inputs (new k-means centres,
        hyperparameters warm-started) while the collapsed bound's trace
        term ``tr(K_ff - Q_ff) / (2 s2)`` at its optimum exceeds 0.05 nats
        per training point, up to 64. The trace term is the bound's charge
        for prior variance the inducing values leave unexplained, through
        which Burt, Rasmussen and van der Wilk (2020) bound the divergence
        of the sparse posterior from the exact one; 0.05 nats per point is
        the smallest difference in mean log predictive density that
        matters. With ``v`` integrated out, more inducing inputs make each
        gradient dearer (``O(n m^2)``) but no longer lengthen the chains;
        the cap bounds the former.
    inducing_points, optimize_inducing, n_chains, n_warmup, \
n_samples, max_samples, thin, max_leapfrog, target_accept, priors, \
normalize_X, random_state, n_jobs, verbose
        As in :class:`VariationalMCMCClassifier`.
    batch_size, learning_rate, svgp_max_iter
        As in :class:`VariationalMCMCClassifier` for Poisson counts. The
        Gaussian likelihood maximises the collapsed bound by full-batch
        L-BFGS-B (one evaluation costs what one HMC gradient costs), with
        at most ``svgp_max_iter`` iterations per inducing-set size and the
        same stopping rule; ``batch_size`` and ``learning_rate`` do not
        apply to it.

    Attributes
    ----------
    draws_ : ndarray of shape (n_chains * n_kept, n_params)
        ``[kernel theta, (log noise variance), v]`` per kept draw (for the
        Gaussian likelihood ``v`` is the exact draw of ``v | theta``).
        ``inv_mass_`` is NaN for ``v`` then, as HMC never moves it, and
        ``diagnostics_["collapsed"]`` is True.
    noise_variance_ : ndarray of shape (n_chains * n_kept,)
        Gaussian likelihood only: the noise variance of each draw, in the
        units of ``y``.
    samples_, param_names_, inducing_points_, kernel_, kernels_, rhat_, \
ess_, acceptance_rate_, \
n_divergences_, step_size_, inv_mass_, svgp_params_, svgp_elbo_, trace_, \
fit_time_, diagnostics_, n_features_in_, feature_names_in_
        As in :class:`VariationalMCMCClassifier`.
    y_mean_, y_std_ : float
        Standardisation of ``y`` (0 and 1 for Poisson).

    See Also
    --------
    VariationalMCMCClassifier

    Examples
    --------
    >>> import warnings
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes import VariationalMCMCRegressor
    >>> from skgp_bayes.datasets import bin_coal_counts
    >>> X, counts, width = bin_coal_counts(n_bins=50)
    >>> reg = VariationalMCMCRegressor(
    ...     ConstantKernel(1.0) * RBF(10.0), likelihood="poisson",
    ...     inducing_points=X[::5], n_chains=2, n_warmup=100, n_samples=100,
    ...     max_samples=100,
    ...     max_leapfrog=10, random_state=0)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     _ = reg.fit(X, counts, exposure=width)
    >>> reg.predict(X[:2], exposure=width).shape
    (2,)
    """

    _parameter_constraints = {
        **_VariationalMCMCBase._common_constraints,
        "likelihood": [StrOptions({"poisson", "gaussian"})],
    }

    def __init__(
        self,
        kernel=None,
        *,
        likelihood="gaussian",
        n_inducing=None,
        inducing_points=None,
        optimize_inducing=True,
        n_chains=4,
        n_warmup=300,
        n_samples=250,
        max_samples=2000,
        thin=1,
        max_leapfrog=None,
        target_accept=0.9,
        priors=None,
        batch_size=None,
        svgp_max_iter=1000,
        learning_rate=0.01,
        normalize_X=True,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.kernel = kernel
        self.likelihood = likelihood
        self.n_inducing = n_inducing
        self.inducing_points = inducing_points
        self.optimize_inducing = optimize_inducing
        self.n_chains = n_chains
        self.n_warmup = n_warmup
        self.n_samples = n_samples
        self.max_samples = max_samples
        self.thin = thin
        self.max_leapfrog = max_leapfrog
        self.target_accept = target_accept
        self.priors = priors
        self.batch_size = batch_size
        self.svgp_max_iter = svgp_max_iter
        self.learning_rate = learning_rate
        self.normalize_X = normalize_X
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    @fit_method
    def fit(self, X, y, exposure=None):
        """Fit the Gaussian approximation, then sample by HMC.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Counts (non-negative integers) for Poisson, real values for
            Gaussian.
        exposure : float or array-like of shape (n_samples,), default=None
            Poisson only: time at risk (bin width) of each count, so that
            the expected count is ``exposure * exp(f)``. None means 1.

        Returns
        -------
        self : VariationalMCMCRegressor

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.random.default_rng(0).poisson(3.0, 20)
        >>> reg = VariationalMCMCRegressor(likelihood="poisson", n_inducing=4,
        ...                                n_chains=1, n_warmup=20, n_samples=10,
        ...                                max_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y, exposure=0.5)
        >>> reg.draws_.shape[0]
        10
        """
        with atomic_feature_state(self):
            check_single_target(y, type(self).__name__, _SINGLE_TARGET)
            X, y = validate_data(
                self, X, y, dtype=np.float64, order="C", y_numeric=True
            )
            exposure = _check_exposure(exposure, X.shape[0], self.likelihood)
            if self.likelihood == "poisson":
                if np.any(y < 0) or np.any(y != np.round(y)):
                    raise ValueError(
                        "likelihood='poisson' needs non-negative integer counts y."
                    )
                likelihood = Poisson()
                y_lik, y_mean, y_std = y, 0.0, 1.0
                offset = None if exposure is None else np.log(exposure)
            else:
                y_mean, y_std = safe_mean_std(y)
                y_lik = (y - y_mean) / y_std
                likelihood = Gaussian(0.1)
                offset = None
            fitted = self._fit_pipeline(X, y_lik, likelihood, offset)
        fitted["y_mean_"], fitted["y_std_"] = float(y_mean), float(y_std)
        self._set_fitted(fitted)
        warn_degenerate_fit(self, X, y)
        return self

    def _fit_stages(self, X, y_lik, likelihood, offset, scaling):
        if not isinstance(likelihood, Gaussian):
            return super()._fit_stages(X, y_lik, likelihood, offset, scaling)
        return self._fit_collapsed(X, y_lik, scaling)

    def _fit_collapsed(self, X, y, scaling):
        """The Gaussian likelihood's pipeline: ``v`` integrated out.

        1. Titsias' collapsed bound plus the log prior is maximised by
           L-BFGS-B over ``[theta, log s2]`` and the inducing inputs: the
           SVGP bound at its optimal ``q(v)``, so the same optimum as the
           joint SVGP fit in far fewer parameters (no ``q(v)`` to learn).
        2. HMC samples ``[theta, log s2]`` on the collapsed target, in the
           curvature-scaled coordinates at that optimum; every kept draw is
           completed by an exact draw of ``v | theta`` (see
           :mod:`skgp_bayes.targets.collapsed`).
        3. The run-length rule is checked over ``(theta, v)``.
        """
        t_start = time.perf_counter()
        if self.thin > self.n_samples:
            raise ValueError(
                f"thin={self.thin} keeps no draw of n_samples={self.n_samples}."
            )
        check_input_magnitude(X)
        rng = check_random_state(self.random_state)
        seeds = rng.randint(0, 2**31 - 1, size=4)
        kernel = self._new_kernel(X.shape[1])
        adapter = KernelAdapter(kernel)
        check_finite_theta(kernel.theta, adapter.param_names)
        kernel_bounds = np.asarray(kernel.bounds, dtype=np.float64).reshape(-1, 2)
        check_bounds(kernel_bounds, adapter.param_names)
        slices = dict(adapter.hyperparameter_slices)
        slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
        hyper_bounds = np.vstack([kernel_bounds, [_LOG_NOISE_BOUNDS]])
        prior_set = PriorSet(slices, merged_priors(self.priors, slices, X.shape[1]))
        theta0 = np.clip(kernel.theta, kernel_bounds[:, 0], kernel_bounds[:, 1])
        optimum = self._collapsed_optimum(
            adapter,
            X,
            y,
            int(seeds[0]),
            scaling,
            prior_set,
            theta0,
            hyper_bounds,
            t_start,
        )
        hyper, Z, learn_Z, trace, n_iter = optimum
        target = CollapsedSparseTarget(adapter, X, y, Z, prior_set)
        guarded = _GuardedTarget(target, hyper_bounds[:, 0], hyper_bounds[:, 1])
        t_hmc = time.perf_counter()
        transform = curvature_preconditioner(guarded, hyper)
        sampler = _CollapsedSampler(
            guarded,
            hyper,
            transform,
            np.random.default_rng(int(seeds[2])),
            self.n_chains,
            target,
            int(seeds[1]),
        )
        chains, results, n_blocks = self._sample(sampler, int(seeds[3]), t_hmc)
        hmc_time = time.perf_counter() - t_hmc
        # the joint target's layout: [theta, noise_variance, v[0], ...]
        names = [*target.param_names, *(f"v[{j}]" for j in range(Z.shape[0]))]
        samples = chains.reshape(-1, chains.shape[2])
        warn_at_bounds(samples, kernel_bounds, names, "HMC draws", "spread")
        rhat, ess = _rhat_and_bulk_ess(chains)
        n_div = int(sum(r.n_divergent for r in results))
        self._warn_diagnostics(names, rhat, ess, n_div, chains.shape[1])
        if self.verbose:
            self._log(
                f"HMC (v integrated out): {self.n_chains} chains x {self.n_warmup} "
                f"warm-up + {chains.shape[1] * self.thin} sampling iterations in "
                f"{hmc_time:.2f} s; max R-hat {np.nanmax(rhat):.3f}, min bulk ESS "
                f"{np.nanmin(ess):.0f}, {n_div} divergences"
            )
        q_mean, q_factor = target.conditional(hyper)
        svgp_elbo = float(trace[-1]) if trace else float(target.log_prob(hyper))
        acceptance = float(np.mean([r.acceptance_rate for r in results]))
        total = time.perf_counter() - t_start
        return {
            "draws_": samples,
            "param_names_": names,
            "inducing_points_": Z,
            "kernel_": kernel.clone_with_theta(hyper[:-1]),
            "rhat_": rhat,
            "ess_": ess,
            "acceptance_rate_": acceptance,
            "n_divergences_": n_div,
            "step_size_": np.array([r.step_size for r in results]),
            "inv_mass_": np.stack([sampler.x_inv_mass(r.inv_mass) for r in results]),
            "svgp_params_": self._svgp_layout(
                adapter, X, y, Z, prior_set, hyper, q_mean, q_factor, learn_Z
            ),
            "svgp_elbo_": svgp_elbo,
            "trace_": {
                "svgp_elbo": np.asarray(trace),
                "accept_prob": np.stack([r.accept_prob for r in results]),
                "step_sizes": np.stack([r.step_sizes for r in results]),
                "divergent": np.stack([r.divergent for r in results]),
                "n_leapfrog": np.stack([r.n_leapfrog for r in results]),
                "energy": np.stack([r.energy for r in results]),
                "log_density": np.stack([r.log_density for r in results]),
            },
            "fit_time_": {"svgp": t_hmc - t_start, "hmc": hmc_time, "total": total},
            "diagnostics_": {
                "fit_time": total,
                "max_rhat": float(np.nanmax(rhat)),
                "min_ess": float(np.nanmin(ess)),
                "n_divergences": n_div,
                "acceptance_rate": acceptance,
                "step_size": [float(r.step_size) for r in results],
                "jitter": float(target.jitter),
                "svgp_elbo": svgp_elbo,
                "svgp_iterations": int(n_iter),
                "sampling_iterations": int(chains.shape[1] * self.thin),
                "sampling_blocks": int(n_blocks),
                "preconditioned": transform is not None,
                "collapsed": True,
            },
            "_adapter": adapter,
            "_likelihood": Gaussian(float(np.exp(hyper[-1]))),
            "_jitter": target.jitter,
            "_n_hyper": target.n_hyper,
            "_n_latent": 1,
            "_q": (
                np.array(hyper[:-1]),
                float(hyper[-1]),
                q_mean[:, None],
                q_factor[None],
            ),
        }

    def _collapsed_optimum(
        self, adapter, X, y, seed, scaling, prior_set, theta0, hyper_bounds, t_start
    ):
        """Stage 1: the collapsed bound's maximum, and the default inducing set.

        With ``n_inducing`` and ``inducing_points`` both None the inducing
        set starts at :func:`_default_n_inducing` points and doubles (new
        k-means centres, the hyperparameters warm-started) while the
        bound's trace term ``tr(K_ff - Q_ff) / (2 s2)`` at the optimum
        exceeds ``_TRACE_TOL`` nats per point, up to
        ``_MAX_COLLAPSED_INDUCING`` (see ``n_inducing`` in
        :class:`VariationalMCMCRegressor`). Returns ``[theta, log s2]``,
        the inducing inputs, whether they were optimised, the optimiser's
        trace (all sizes in turn) and its iterations.
        """
        Z0 = self._inducing(X, seed, scaling)
        hyper = np.append(theta0, np.log(0.1))
        grow = self.n_inducing is None and self.inducing_points is None
        cap = min(_MAX_COLLAPSED_INDUCING, np.unique(X, axis=0).shape[0])
        traces, n_iter = [], 0
        while True:
            hyper, Z, learn_Z, trace, iters, slack = self._maximise_collapsed(
                adapter, X, y, Z0, prior_set, hyper, hyper_bounds, t_start
            )
            traces.extend(trace)
            n_iter += iters
            m = Z.shape[0]
            if not grow or slack <= _TRACE_TOL * X.shape[0] or m >= cap:
                return hyper, Z, learn_Z, traces, n_iter
            Z0 = initial_inducing(X, min(2 * m, cap), seed)

    def _maximise_collapsed(
        self, adapter, X, y, Z0, prior_set, start_hyper, hyper_bounds, t_start
    ):
        """L-BFGS-B on the collapsed bound plus the log prior, from ``Z0``.

        The stopping rule and its warning are those of the SVGP stage that
        the Gaussian likelihood no longer needs. Returns ``[theta, log s2]``,
        ``Z``, whether ``Z`` was optimised, the trace, the iterations and
        the trace term (nats) at the optimum.
        """
        learn_Z = bool(self.optimize_inducing and adapter.supports_input_gradients)
        bound = CollapsedSparseTarget(
            adapter, X, y, Z0, prior_set, learn_inducing=learn_Z
        )
        start = np.concatenate([start_hyper, Z0.reshape(-1) if learn_Z else []])
        opt_bounds = np.tile([-np.inf, np.inf], (bound.n_params, 1))
        opt_bounds[: bound.n_hyper] = hyper_bounds
        if self.svgp_max_iter == 0:
            params, trace, converged, n_iter = start, [], True, 0
        else:
            report = self._svgp_reporter(t_start)
            params, trace, converged, n_iter = fit_svgp_lbfgs(
                bound,
                start,
                opt_bounds,
                self.svgp_max_iter,
                tol=_SVGP_TOL,
                report=report,
            )
            if report is not None:
                report.close()
        if not converged:
            warn_user(
                f"The collapsed bound's maximisation did not converge in "
                f"{self.svgp_max_iter} L-BFGS iterations; increase svgp_max_iter.",
                ConvergenceWarning,
            )
        theta, log_noise, Z = bound.split(params)
        slack = bound.trace_term(params)
        if self.verbose:
            self._log(
                f"Collapsed bound with {Z.shape[0]} inducing inputs: "
                f"{trace[-1] if trace else np.nan:.4g} after {n_iter} L-BFGS "
                f"iterations, trace term {slack / X.shape[0]:.3g} nats per point "
                f"({time.perf_counter() - t_start:.2f} s)"
            )
        hyper = np.append(theta, log_noise)
        return hyper, np.array(Z), learn_Z, trace, n_iter, slack

    @staticmethod
    def _svgp_layout(adapter, X, y, Z, prior_set, hyper, q_mean, q_factor, learn_Z):
        """The optimum as an SVGP bound's parameter vector (``svgp_params_``)."""
        bound = SVGPBound(
            adapter, X, y, Z, Gaussian(0.1), prior_set, learn_inducing=learn_Z
        )
        params = bound.initial_params(hyper[:-1], hyper[-1])
        blocks = bound.blocks
        params[blocks["m"]] = q_mean
        rows, cols = np.tril_indices(Z.shape[0])
        packed = q_factor[rows, cols]
        on_diag = rows == cols
        packed[on_diag] = np.log(packed[on_diag])
        params[blocks["L"]] = packed
        if learn_Z:
            params[blocks["Z"]] = Z.reshape(-1)
        return params

    def _moments_per_draw(self, X, exposure):
        means, variances = self._draw_moments(X)
        mu = means[..., 0]
        if exposure is not None:
            mu = mu + np.log(exposure)
        return mu, variances

    @keyboard_interrupt_passes
    def predict(
        self,
        X,
        exposure=None,
        return_std=False,
        method="mcmc",
        *,
        return_cov=False,
        noise=False,
    ):
        """Posterior predictive mean (and spread) of the regression function.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        exposure : float or array-like of shape (n_queries,), default=None
            Poisson only: the expected count is ``exposure * E[exp(f)]``.
        return_std : bool, default=False
            Also return the standard deviation of the latent function
            (Gaussian likelihood, units of ``y``) or of the expected count
            ``exposure * exp(f)`` (Poisson), over the posterior draws.
        method : {"mcmc", "gaussian"}, default="mcmc"
            Average over the HMC draws, or use the SVGP approximation.
        return_cov : bool, default=False
            Also return the joint covariance of the same quantity.
        noise : bool, default=False
            Include the observation noise in the spread: each draw's
            noise variance (Gaussian) or the Poisson variance of a count.

        Returns
        -------
        mean : ndarray of shape (n_queries,)
        std : ndarray of shape (n_queries,), only if ``return_std``
        cov : ndarray of shape (n_queries, n_queries), only if ``return_cov``

        Notes
        -----
        In skgp_bayes 0.1.0 the standard deviation included the
        observation noise; it is now, as for every regressor of the package
        and as in scikit-learn, that of the latent function unless
        ``noise=True``.

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.random.default_rng(0).poisson(3.0, 20)
        >>> reg = VariationalMCMCRegressor(likelihood="poisson", n_inducing=4,
        ...                                n_chains=1, n_warmup=20, n_samples=10,
        ...                                max_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y, exposure=0.5)
        >>> mean, std = reg.predict(X[:3], exposure=0.5, return_std=True)
        >>> mean.shape, bool(np.all(std > 0))
        ((3,), True)
        >>> _, std_y = reg.predict(X[:3], exposure=0.5, return_std=True, noise=True)
        >>> bool(np.all(std_y > std))
        True
        """
        if return_std and return_cov:
            raise RuntimeError(
                "At most one of return_std or return_cov can be requested."
            )
        X = self._validate_query(X)
        exposure = _check_exposure(exposure, X.shape[0], self.likelihood)
        draws = self._predictive_draws(X, exposure, method, full_cov=return_cov)
        if self.likelihood == "poisson":
            return lognormal_rate_prediction(
                draws.means, draws.spread, return_std, return_cov, noise
            )
        return mixture_prediction(draws, return_std, return_cov, noise)

    def _predictive_draws(self, X, exposure, method, full_cov=False):
        """Per-draw latent moments as :class:`LatentDraws` (log rate for Poisson)."""
        if full_cov:
            thetas, v, factors = self._posterior_draws(method)
            mu, spread = sparse_latent_covariances(
                self._adapter,
                self.inducing_points_,
                self._jitter,
                thetas,
                v,
                None if factors is None else factors[0],
                X,
            )
            if exposure is not None:
                mu = mu + np.log(exposure)
        else:
            mu, spread = self._latent(X, exposure, method)
        if self.likelihood == "poisson":
            return LatentDraws(mu, spread, np.zeros(mu.shape[0]), 0.0, 1.0)
        noise = self._noise(method, mu.shape[0])
        return LatentDraws(mu, spread, noise, self.y_mean_, self.y_std_)

    def _observation_predictive(self, X, exposure=None, method="mcmc"):
        draws = self._predictive_draws(X, exposure, method)
        if self.likelihood == "poisson":
            return PoissonMixturePredictive(draws.means, draws.spread, self._likelihood)
        return GaussianMixturePredictive.from_draws(draws)

    def _latent(self, X, exposure, method):
        """Latent means and variances, ``(S, k)`` each (S=1 for gaussian)."""
        if method == "gaussian":
            mu, var = self._gaussian_moments(X)
            mu, var = mu[None, :, 0], var[None, :, 0]
            if exposure is not None:
                mu = mu + np.log(exposure)
            return mu, var
        if method != "mcmc":
            raise ValueError(f"method must be 'mcmc' or 'gaussian'; got {method!r}.")
        return self._moments_per_draw(X, exposure)

    def _noise(self, method, n_draws):
        if method == "gaussian":
            return np.array([np.exp(self._q[1])])
        return self._noise_draws()[:n_draws]

    @keyboard_interrupt_passes
    def log_predictive_density(self, X, y, exposure=None, method="mcmc"):
        """Log posterior predictive density (or probability) of each ``y``.

        ``log (1/S) sum_s p(y_i | draw s)`` with ``p(y_i | draw s)`` the
        likelihood integrated over ``f_i ~ N(mu_is, gamma_is)``; with
        ``method="gaussian"`` the integral under the SVGP's ``q(f_i)``.
        Gaussian likelihood: in the units of ``y``, each draw's noise
        variance included.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        y : array-like of shape (n_queries,)
        exposure : float or array-like, default=None
            Poisson only.
        method : {"mcmc", "gaussian"}, default="mcmc"

        Returns
        -------
        ndarray of shape (n_queries,)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.random.default_rng(0).poisson(3.0, 20)
        >>> reg = VariationalMCMCRegressor(likelihood="poisson", n_inducing=4,
        ...                                n_chains=1, n_warmup=20, n_samples=10,
        ...                                max_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y, exposure=0.5)
        >>> lpd = reg.log_predictive_density(X, y, exposure=0.5)
        >>> lpd.shape, bool(np.all(lpd < 0))
        ((20,), True)
        """
        X = self._validate_query(X)
        y = check_targets(y, X.shape[0])
        exposure = _check_exposure(exposure, X.shape[0], self.likelihood)
        return self._observation_predictive(X, exposure, method).logpdf(y)

    @keyboard_interrupt_passes
    def predict_quantiles(
        self, X, quantiles=DEFAULT_QUANTILES, *, exposure=None, method="mcmc"
    ):
        """Quantiles of the posterior predictive of a noisy observation ``y``.

        Gaussian likelihood: the mixture over the draws of ``N(mu_s, gamma_s
        + noise_s)``, solved by Newton steps on its distribution function to
        a relative error of about 1e-13. Poisson: the smallest count ``k``
        with ``P(y <= k) >= q`` under the mixture of Poisson-log-normal
        distributions (Gauss-Hermite rule over each draw's log rate).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        quantiles : float or sequence of float, default=(0.05, 0.5, 0.95)
        exposure : float or array-like of shape (n_queries,), default=None
            Poisson only.
        method : {"mcmc", "gaussian"}, default="mcmc"

        Returns
        -------
        ndarray of shape (n_queries, n_quantiles)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.random.default_rng(0).poisson(3.0, 20)
        >>> reg = VariationalMCMCRegressor(likelihood="poisson", n_inducing=4,
        ...                                n_chains=1, n_warmup=20, n_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y)
        >>> q = reg.predict_quantiles(X[:2], quantiles=[0.05, 0.95])
        >>> q.shape, bool(np.all(q == np.round(q)))  # counts
        ((2, 2), True)
        """
        levels = check_quantiles(quantiles)
        X = self._validate_query(X)
        exposure = _check_exposure(exposure, X.shape[0], self.likelihood)
        return self._observation_predictive(X, exposure, method).quantiles(levels)

    @keyboard_interrupt_passes
    def predict_interval(self, X, coverage=0.9, *, exposure=None, method="mcmc"):
        """Central predictive interval of a noisy observation ``y``.

        The ``(1 - coverage) / 2`` and ``(1 + coverage) / 2`` quantiles of
        :meth:`predict_quantiles`.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        coverage : float, default=0.9
        exposure : float or array-like of shape (n_queries,), default=None
            Poisson only.
        method : {"mcmc", "gaussian"}, default="mcmc"

        Returns
        -------
        lower, upper : ndarray of shape (n_queries,)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.sin(X[:, 0])
        >>> reg = VariationalMCMCRegressor(n_inducing=5, n_chains=1, n_warmup=20,
        ...                                n_samples=10, random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y)
        >>> lower, upper = reg.predict_interval(X[:3], coverage=0.9)
        >>> bool(np.all(lower < upper))
        True
        """
        levels = check_coverage(coverage)
        bounds = self.predict_quantiles(X, levels, exposure=exposure, method=method)
        return bounds[:, 0], bounds[:, 1]

    @property
    def noise_variance_(self):
        """Noise variance of each draw in ``draws_``, in the units of ``y``.

        Gaussian likelihood only.

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> reg = VariationalMCMCRegressor(n_inducing=5, n_chains=1, n_warmup=20,
        ...                                n_samples=10, max_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, np.sin(X[:, 0]))
        >>> reg.noise_variance_.shape
        (10,)
        """
        if not isinstance(getattr(self, "_likelihood", None), Gaussian):
            raise AttributeError(
                "noise_variance_ exists for a fitted likelihood='gaussian' model."
            )
        return variance_in_units(self._noise_draws(), self.y_std_)

    @keyboard_interrupt_passes
    def sample_latent(self, X, method="mcmc", n_samples=1000, random_state=0):
        """Draws of the latent function at ``X`` (marginally per point).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        method : {"mcmc", "gaussian"}, default="mcmc"
            ``"mcmc"``: one draw ``f = A' v + sqrt(gamma) z`` per kept HMC
            sample (``n_samples`` is ignored); ``"gaussian"``:
            ``n_samples`` draws from the SVGP's ``q(f)``.
        n_samples : int, default=1000
        random_state : int, RandomState instance or None, default=0

        Returns
        -------
        ndarray of shape (n_draws, n_queries)
            The latent function (the log rate without exposure for
            Poisson; standardised units for Gaussian).

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.random.default_rng(0).poisson(3.0, 20)
        >>> reg = VariationalMCMCRegressor(likelihood="poisson", n_inducing=4,
        ...                                n_chains=1, n_warmup=20, n_samples=10,
        ...                                max_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y, exposure=0.5)
        >>> reg.sample_latent(X[:3]).shape  # one draw per kept sample
        (10, 3)
        """
        X = self._validate_query(X)
        rng = check_random_state(random_state)
        mu, var = self._latent(X, None, method)
        if method == "gaussian":
            z = rng.standard_normal((int(n_samples), X.shape[0]))
            return mu + np.sqrt(var) * z
        return mu + np.sqrt(var) * rng.standard_normal(mu.shape)

    @keyboard_interrupt_passes
    def sample_functions(
        self, n_samples=1, random_state=0, n_features=None, posterior="mcmc"
    ):
        """Latent function samples from the posterior, callable anywhere.

        Each sample picks a kept HMC draw ``(theta, v)`` (and noise
        variance) uniformly at random and is a pathwise draw of the latent
        GP given the inducing values ``u = R_theta v``: a
        random-Fourier-feature prior draw plus Matheron's update ``k(x, Z)
        K(Z, Z)^-1 (u - f_prior(Z))``. The samples mix over the
        hyperparameters and the inducing values. The functions are frozen
        (every call returns the same values), have analytic input gradients
        and pickle; evaluation costs ``O(n_points (n_features + m))`` per
        function.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0
        n_features : int, default=None
            Fourier features per draw; None uses 1024.
        posterior : {"mcmc", "gaussian"}, default="mcmc"
            Mix over the kept HMC draws, or sample the SVGP approximation
            ``q(v) = N(m, S)`` at its hyperparameters (as ``method`` in
            :meth:`predict`).

        Returns
        -------
        functions : skgp_bayes.sampling.FunctionSamples
            ``functions(X)`` has shape ``(n_points, n_samples)``. For the
            Gaussian likelihood the latent function in the units of ``y``;
            for Poisson the log rate, without exposure (``exposure *
            np.exp(functions(X))`` is the expected count). A
            ``WhiteKernel``'s noise is not part of them.

        Raises
        ------
        ValueError
            If the kernel has no spectral density (use :meth:`sample_y` with
            ``method="exact"`` instead).

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.sin(X[:, 0])
        >>> reg = VariationalMCMCRegressor(n_inducing=5, n_chains=1, n_warmup=20,
        ...                                n_samples=10, max_samples=10, random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y)
        >>> f = reg.sample_functions(3, random_state=0)
        >>> f(X[:4]).shape, f.gradient(X[:4]).shape
        ((4, 3), (4, 3, 1))
        """
        check_is_fitted(self)
        require_spectral_spec(self._adapter.kernel, "sample_y(X, method='exact')")
        functions = self._regression_functions(
            n_samples, random_state, n_features, posterior
        )[0]
        return in_natural_units(functions, self)

    def _regression_functions(self, n_samples, random_state, n_features, posterior):
        functions, white = self._functions(
            n_samples,
            random_state,
            n_features,
            posterior,
            offset=self.y_mean_,
            scale=self.y_std_,
        )
        return functions[0], white

    @keyboard_interrupt_passes
    def sample_y(
        self,
        X,
        n_samples=1,
        random_state=0,
        method="auto",
        n_features=None,
        *,
        exposure=None,
        posterior="mcmc",
    ):
        """Joint draws of the regression function at ``X``.

        Each draw picks a kept HMC draw uniformly at random (one draw of
        ``q(v)`` for ``posterior="gaussian"``), then samples the latent
        function jointly over ``X`` from its Gaussian conditional: exactly
        from the dense covariance (``"exact"``) or as a pathwise sample
        (``"pathwise"``, see :meth:`sample_functions`).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0
        method : {"auto", "exact", "pathwise"}, default="auto"
            ``"exact"`` costs ``O(n_queries^3)`` time and
            ``O(n_queries^2)`` memory per draw used; ``"pathwise"`` costs
            ``O(n_queries (n_features + m))`` per sample and approximates
            the prior covariance with ``n_features`` Fourier features.
            ``"auto"`` samples pathwise from 100 query points on and
            exactly below; kernels without a spectral density are always
            sampled exactly.
        n_features : int, default=None
            Fourier features per draw for ``"pathwise"``; None uses 1024.
        exposure : float or array-like of shape (n_queries,), default=None
            Poisson only: the draws are ``exposure * exp(f)``.
        posterior : {"mcmc", "gaussian"}, default="mcmc"
            The kept HMC draws or the SVGP approximation.

        Returns
        -------
        y_samples : ndarray of shape (n_queries, n_samples)
            Gaussian likelihood: draws of the latent function in the units
            of ``y`` (plus a ``WhiteKernel``'s noise), without the sampled
            observation noise, as in scikit-learn and as :meth:`predict`'s
            ``std``. Poisson: draws of the expected
            count ``exposure * exp(f)``, whose average over draws is
            :meth:`predict`'s mean; counts themselves would add Poisson
            noise.

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.random.default_rng(0).poisson(3.0, 20)
        >>> reg = VariationalMCMCRegressor(likelihood="poisson", n_inducing=4,
        ...                                n_chains=1, n_warmup=20, n_samples=10,
        ...                                max_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y, exposure=0.5)
        >>> grid = np.linspace(0, 10, 500)[:, None]
        >>> rates = reg.sample_y(grid, n_samples=4, exposure=0.5)  # pathwise
        >>> rates.shape, bool(np.all(rates > 0))
        ((500, 4), True)
        >>> reg.sample_y(grid[:5], n_samples=4, method="exact").shape
        (5, 4)
        """
        X = self._validate_query(X)
        check_n_samples(n_samples)
        exposure = _check_exposure(exposure, X.shape[0], self.likelihood)
        thetas, v, factors = self._posterior_draws(posterior)
        spec = sample_y_spec(self._adapter.kernel, method, X.shape[0])
        rng = check_random_state(random_state)
        if spec is not None:
            functions, white = self._regression_functions(
                n_samples, rng, n_features, posterior
            )
            out = functions(X)
            noise_sd = np.sqrt(white[functions.draws]) * self.y_std_
            if np.any(noise_sd > 0):
                # A WhiteKernel adds independent noise at each query point.
                out += rng.standard_normal(out.shape) * noise_sd
        else:
            out = sparse_joint_draws(
                self._adapter,
                self.inducing_points_,
                self._jitter,
                thetas,
                v,
                None if factors is None else factors[0],
                X,
                n_samples,
                rng,
            )
            out = out * self.y_std_ + self.y_mean_
        if self.likelihood == "poisson":
            # y_mean_ = 0 and y_std_ = 1: out is the log rate
            if exposure is not None:
                out += np.log(exposure)[:, None]
            out = np.exp(out)
        return out
