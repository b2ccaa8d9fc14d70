"""The Stein template and what the two Stein estimators share.

A Stein fit is one of six models (the regressor's exact Cholesky,
stochastic-trace, exact CG and sparse models; the classifier's latent and
sparse models, in
:mod:`skgp_bayes._stein_models`), chosen once from the estimator's
parameters. Each model is a :class:`SteinModel`: it gives the target, the
starting particles, the particle evaluator, SVGD's settings and the fitted
attributes, and :meth:`SteinModel.fit` runs them in one order. This module
also holds SVGD's settings from the estimator's parameters, and the checks
and warnings the models share.
"""

import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from . import _config
from ._base import seconds_since
from ._fit_checks import warn_at_bounds
from ._progress import engine_verbose, fit_progress
from ._threads import serial_blas
from ._validation import copied_columns
from ._warnings import collect_warnings, warn_user
from .diagnostics import kernel_stein_discrepancy
from .inference import SVGDResult, run_svgd
from .inference.particles import (
    ParticleEvaluator,
    automatic_threads,
    requested_threads,
)
from .inference.stein_kernel import SteinCoordinates, choose_kernel

__all__ = []

# Time scale (iterations) of the Robbins-Monro decay used with minibatches
# when learning_rate_decay="auto": the rate halves by about iteration 250.
AUTO_DECAY = 100.0


def check_sparse_options(estimator, n_samples):
    """Validated ``batch_size`` (None for the full data) of a sparse fit."""
    batch = estimator.batch_size
    if batch is not None and estimator.inducing_points is None:
        raise ValueError(
            "batch_size needs inducing_points: the exact model evaluates the "
            "marginal likelihood of all the data at once. Set inducing_points "
            "(for example to 100) to fit on minibatches."
        )
    if batch is None or batch >= n_samples:
        return None
    return int(batch)


def check_same_model(estimator, continuing):
    """ValueError when a continued fit would switch between exact and sparse."""
    sparse = estimator.inducing_points is not None
    if continuing and sparse != hasattr(estimator, "inducing_points_"):
        raise ValueError(
            "Cannot continue a fit of the "
            f"{'exact' if sparse else 'sparse'} model as the "
            f"{'sparse' if sparse else 'exact'} one; set warm_start=False "
            "to refit."
        )
    return sparse


def check_sparse_memory(n_rows, n_inducing, estimator_name):
    """MemoryError before building ``(m, rows)`` projections that cannot fit."""
    _config.check_dense_bytes(
        4 * 8 * n_rows * n_inducing,
        f"{estimator_name} with {n_inducing} inducing points on batches of "
        f"{n_rows} points",
        "Set batch_size.",
    )


def svgd_decay(learning_rate_decay, stochastic):
    """The ``decay`` argument of :func:`~skgp_bayes.inference.run_svgd`.

    ``"auto"`` decays only when the gradients are stochastic (minibatches
    or trace estimates).
    """
    if learning_rate_decay == "auto":
        return AUTO_DECAY if stochastic else None
    return learning_rate_decay


# tol="auto" is AUTO_TOL_SCALE / sqrt(n_particles) posterior sds: the
# particles stop within a tenth of the Monte Carlo error of their mean
# (1/sqrt(J) sds), so the unfinished optimisation adds at most about
# 1% to the variance of any particle average.
AUTO_TOL_SCALE = 0.1
# Fraction of the whitened, mass-normalised field taken per step
# (learning_rate="auto" with a preconditioner): a Gaussian target whose
# covariance is the preconditioner then contracts by about half per step, and
# the engine halves it where the field starts to oscillate.
WHITENED_STEP = 0.5


def batch_evaluator(target, estimator, n_rows):
    """A :class:`~skgp_bayes.inference.particles.ParticleEvaluator` over ``target``.

    Every particle's exact value and gradient on all ``n_rows`` training
    rows. The particles go on threads as ``estimator.n_jobs`` says, and
    with ``n_jobs=None`` where the rows are few enough for BLAS to run on
    one thread (:func:`~skgp_bayes._threads.serial_blas`) and the target's
    compiled evaluation pays for the hand-over.
    """
    return ParticleEvaluator(
        target, n_jobs=estimator.n_jobs, auto_threads=serial_blas(n_rows)
    )


def search_threads(estimator, target, n_rows, n_searches, seconds):
    """Threads for ``n_searches`` independent searches on ``target``.

    The MAP searches from several starts, the modes' covariances and the
    classifier's Laplace draws are independent, as the particles are; with
    ``n_jobs=None`` they go on threads under the particles' rule (the rows
    few enough for BLAS to run on one thread, ``target.compiled``, and
    ``seconds()``, one search's or evaluation's time, at least
    :data:`~skgp_bayes.inference.particles.THREADED_PARTICLE_SECONDS`),
    ``n_jobs=1`` keeps them on one, and an integer sets the threads. The
    searches' results do not depend on it.
    """
    if estimator.n_jobs is not None:
        return requested_threads(estimator.n_jobs, n_searches)
    if not serial_blas(n_rows):
        return 1
    return automatic_threads(target, n_searches, seconds)


def warn_not_converged(estimator, result, X=None):
    """ConvergenceWarning when SVGD stopped at ``max_iter`` above ``tol``.

    With the training inputs ``X``, it names input columns that are copies
    of each other, whose length scales form a ridge the particles cross
    slowly (see :func:`~skgp_bayes._validation.copied_columns`).
    """
    field = result.history["field"][-1] if result.history["field"] else np.nan
    copies = [] if X is None else copied_columns(X)
    hint = (
        " Input columns "
        + ", ".join(f"{i} and {j}" for i, j in copies)
        + " are affine copies of each other: their length scales trade off "
        "along a ridge of equal likelihood that the particles cross slowly, "
        "and the predictions do not depend on where along it they are. "
        "Dropping one column of each pair removes the ridge."
        if copies
        else ""
    )
    warn_user(
        f"SVGD did not meet its stopping rule in {estimator.max_iter} "
        f"iterations: the Stein field was still {field:.2e} posterior "
        "standard deviations (root mean square), above "
        f"tol={svgd_tol(estimator):.2e}. "
        "The particles are about that far from SVGD's fixed point; "
        "predictions average over them as they stand. A larger max_iter, or "
        "warm_start=True and another fit, continues the run." + hint,
        ConvergenceWarning,
        worst=field,
    )


def svgd_tol(estimator):
    """The stopping tolerance in posterior sds: ``"auto"`` is ``0.1/sqrt(J)``."""
    if estimator.tol == "auto":
        return AUTO_TOL_SCALE / np.sqrt(estimator.n_particles)
    return float(estimator.tol)


def svgd_learning_rate(estimator, whitened):
    """The step: a fraction of the whitened field, or the estimator's Adam rate."""
    if estimator.learning_rate != "auto":
        return float(estimator.learning_rate)
    return WHITENED_STEP if whitened else estimator._adam_rate


def check_dense_memory(n_samples, estimator_name):
    """MemoryError before allocating kernel matrices that cannot fit."""
    _config.check_dense_bytes(
        4 * 8 * n_samples**2,  # K, its factor, the inverse and one copy
        f"{estimator_name} with {n_samples} samples (dense kernel matrices)",
        "Subsample the data or use a sparse (inducing-point) model.",
    )


def describe_hyper(names, values):
    """``name=value`` pairs of log-scale hyperparameters, for progress lines."""
    return ", ".join(f"{n}={v:.4g}" for n, v in zip(names, np.exp(values), strict=True))


def is_sparse_config(estimator):
    """True with ``inducing_points`` set; AttributeError (hiding
    ``partial_fit``) otherwise."""
    if estimator.inducing_points is None:
        raise AttributeError(
            "partial_fit needs the sparse model: set inducing_points (for "
            "example to 100). The exact model conditions on all the data at "
            "once."
        )
    return True


def check_particle_shape(estimator, n_params, action):
    """ValueError unless the fitted particles are ``(n_particles, n_params)``."""
    if estimator.particles_.shape != (estimator.n_particles, n_params):
        raise ValueError(
            f"{action} needs the same number of particles and parameters: "
            f"have {estimator.particles_.shape}, asked for "
            f"({estimator.n_particles}, {n_params})."
        )


def run_stein_svgd(
    estimator,
    evaluator,
    particles,
    bounds,
    state,
    stochastic,
    preconditioner=None,
    **options,
):
    """SVGD with the estimator's step, tolerance, decay and progress lines.

    ``options`` go to :func:`~skgp_bayes.inference.run_svgd` as they are
    (the SVGD kernel and step control of the classifier's latent model).
    """
    tol = svgd_tol(estimator)
    # A stochastic field never settles under tol, so only the exact run's
    # max_iter is a guard rather than its length.
    stops_early = tol > 0 and not stochastic
    with fit_progress(
        estimator, "SVGD", estimator.max_iter, stops_early=stops_early
    ) as progress:
        return run_svgd(
            evaluator,
            particles,
            max_iter=estimator.max_iter,
            learning_rate=svgd_learning_rate(estimator, preconditioner is not None),
            tol=tol,
            preconditioner=preconditioner,
            bounds=bounds,
            state=state,
            verbose=engine_verbose(estimator),
            print_fn=estimator._log,
            decay=svgd_decay(estimator.learning_rate_decay, stochastic),
            stochastic=stochastic,
            progress=progress.engine,
            **options,
        )


# The surrogate run's tolerance as a fraction of the target run's: the
# target's run then starts from the field that the surrogate does not
# describe (how far the posterior is from its Laplace approximation), not
# from what is left of the surrogate's own.
SURROGATE_TOL_FRACTION = 0.25


def settle_on_surrogate(estimator, start, evaluator, bounds, options, max_iter):
    """The start's particles moved to SVGD's fixed point for its surrogate.

    Drawn at random from the Laplace approximation, the particles are far
    from any fixed point of SVGD: the Stein field at such a start is about
    one posterior sd, and most of it is the particles' arrangement among
    themselves (clumps to spread, gaps to close), which is also what SVGD
    is slowest to settle. A Gaussian describes that arrangement for the
    price of a few matrix products an iteration. Settled on it first, the
    run on the target starts from what the surrogate does not describe (how
    far the posterior is from its Laplace approximation), and the target's
    own run then moves the particles to the target's fixed point: the
    result is a fixed point of the same SVGD; only the start differs.

    Measured on the eleven regression sets of ``benchmarks/bench_defaults.py``
    (default ``SteinGPRegressor``), the target's iterations fell from 9-43
    to 3-29 (diabetes 43 to 25, concrete 21 to 14) and rose on none; see
    ``benchmarks/RESULTS.md``.

    ``max_iter`` bounds the surrogate's iterations: the model's
    :attr:`SteinModel.surrogate_max_iter`.

    Returns the particles, and their values and gradients: the target's, at
    the settled particles, which the run's first step reuses. Where the
    start has no surrogate or no preconditioner to whiten it with, where
    ``max_iter`` is 0, or where the target is not finite at every settled
    particle, the drawn particles stay and the values are ``None``; so they
    do where the engine warned about the run on the surrogate (steps that
    kept hitting their cap, particles that collapsed), which says nothing
    about the posterior and is not reported.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from skgp_bayes._stein_base import Start, settle_on_surrogate
    >>> from skgp_bayes.inference.gaussian_surrogate import GaussianMixtureDensity
    >>> rng = np.random.default_rng(0)
    >>> surrogate = GaussianMixtureDensity(np.zeros((1, 2)), [np.eye(2)])
    >>> start = Start(rng.standard_normal((10, 2)), preconditioner=np.eye(2),
    ...               surrogate=surrogate)
    >>> est = SimpleNamespace(max_iter=100, tol="auto", n_particles=10,
    ...                       learning_rate="auto")
    >>> options = {"kernel": "rbf+linear", "step_control": "per_coordinate"}
    >>> particles, evaluated = settle_on_surrogate(
    ...     est, start, surrogate, None, options, max_iter=30)
    >>> particles.shape, evaluated[0].shape
    ((10, 2), (10,))
    """
    particles = start.particles
    if (
        start.surrogate is None
        or start.preconditioner is None
        or not estimator.max_iter
    ):
        return particles, None
    with collect_warnings() as engine_warnings:
        settled = run_svgd(
            start.surrogate,
            particles,
            max_iter=max_iter,
            learning_rate=svgd_learning_rate(estimator, True),
            tol=SURROGATE_TOL_FRACTION * svgd_tol(estimator),
            preconditioner=start.coordinates(),
            bounds=bounds,
            **options,
        )
    if len(engine_warnings):
        # The engine found the run on the surrogate unstable (steps at their
        # cap: a surrogate far stiffer than the preconditioner says, as when
        # the latents' slope in theta is steep); such particles are no start.
        return particles, None
    values, grads = evaluator(settled.particles)
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(grads))):
        return particles, None
    return settled.particles, (values, grads)


@dataclass
class Start:
    """Where SVGD starts: the particles and what came with them.

    Parameters
    ----------
    particles : ndarray of shape (n_particles, n_params)
    state : dict or None
        The engine's state to continue from (a continued fit).
    centre : ndarray or None
        The point the particles spread from (``map_params_``).
    preconditioner : ndarray or None
        Root of SVGD's preconditioner; None for none.
    preconditioner_inverse : ndarray or None
        Its inverse where the model knows it blockwise; None to invert it.
    elbo : float or None
        Bound of the Gaussian approximation that placed the particles.
    surrogate : callable or None
        ``surrogate(particles) -> (values, grads)``: the Laplace
        approximation the particles were drawn from, on which SVGD settles
        them before it evaluates the target (:func:`settle_on_surrogate`).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._stein_base import Start
    >>> Start(np.zeros((3, 2))).particles.shape
    (3, 2)
    """

    particles: np.ndarray
    state: dict = None
    centre: np.ndarray = None
    preconditioner: np.ndarray = None
    preconditioner_inverse: np.ndarray = None
    elbo: float = None
    surrogate: object = None
    _coordinates: SteinCoordinates = field(
        default=None, init=False, repr=False, compare=False
    )

    def coordinates(self):
        """SVGD's working coordinates, built once for every run from here.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes._stein_base import Start
        >>> start = Start(np.zeros((3, 2)), preconditioner=2.0 * np.eye(2))
        >>> start.coordinates().S_inv
        array([[0.5, 0. ],
               [0. , 0.5]])
        >>> start.coordinates() is start.coordinates()
        True
        """
        if self.preconditioner is not None and self._coordinates is None:
            self._coordinates = SteinCoordinates(
                self.preconditioner,
                self.particles.shape[1],
                inverse=self.preconditioner_inverse,
            )
        return self._coordinates


def merged_history(estimator, continuing, result):
    """The previous fit's history (when continuing) extended by this run's.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from skgp_bayes._stein_base import merged_history
    >>> fitted = SimpleNamespace(history_={"field": [3.0, 2.0]})
    >>> run = SimpleNamespace(history={"field": [1.0]})
    >>> merged_history(fitted, True, run), merged_history(fitted, False, run)
    ({'field': [3.0, 2.0, 1.0]}, {'field': [1.0]})
    """
    history = {k: list(v) for k, v in estimator.history_.items()} if continuing else {}
    for key, trace in result.history.items():
        history.setdefault(key, []).extend(trace)
    return history


class SteinModel:
    """One model of a Stein estimator, and the fit every model runs.

    A subclass gives the pieces: :meth:`prepare` (checks, the target, its
    parameter names and bounds), :meth:`initial` or :meth:`resume` (where
    SVGD starts), :meth:`make_evaluator` and :meth:`svgd_options` (how SVGD
    runs), :meth:`finish` and :meth:`diagnostics` (what the fit leaves).
    :meth:`fit` puts them together in one order, so the estimators hold no
    branch on the model.

    Parameters
    ----------
    estimator : SteinGPRegressor or SteinGPClassifier
        Parameters are read from it, and its fitted state when continuing.
    X : ndarray of shape (n_samples, n_features)
        Validated inputs, on the model's (standardised) scale.
    y : ndarray
        Validated targets or labels.
    continuing : bool
        Continue from the fitted particles (``warm_start``, ``partial_fit``).
    partial : bool, default=False
        A ``partial_fit`` call: the data is one chunk of a stream.
    scaling : InputScaling or None, default=None
        The input standardisation (places inducing inputs given in the
        inputs' own units).

    Attributes
    ----------
    stochastic : bool
        Whether SVGD follows noisy gradients (minibatches, trace
        estimates): it then runs ``max_iter`` iterations with a decaying
        step, and never warns that its stopping rule was not met.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes._stein_models import ExactCholeskyModel
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (20, 1))
    >>> y = np.sin(X[:, 0])
    >>> est = SteinGPRegressor(n_particles=3, max_iter=5, random_state=0)
    >>> est.n_features_in_ = 1
    >>> fitted = ExactCholeskyModel(est, X, y, continuing=False).fit()
    >>> fitted["particles_"].shape
    (3, 3)
    """

    stochastic = False
    # Whether the particles settled on the start's surrogate before the run.
    settled = False
    # Iterations SVGD may take on the start's surrogate. Over a handful of
    # hyperparameters one costs microseconds beside the target's O(n^3)
    # evaluation, and the target's runs shortened most when it had 30:
    # from random draws the field on a Gaussian whose covariance is the
    # preconditioner falls below a fifth of a posterior sd in 4-6 iterations
    # and then shrinks by 0.6-0.9 an iteration (the regression sets of
    # bench_defaults.py: 152 target iterations in all after 30, 180 after
    # 10, 232 without). Models whose surrogate spans their latents set less.
    surrogate_max_iter = 30

    def __init__(self, estimator, X, y, *, continuing, partial=False, scaling=None):
        self.estimator = estimator
        self.X, self.y = X, y
        self.continuing, self.partial, self.scaling = continuing, partial, scaling

    def fit(self):
        """Run the fit and return the fitted attributes (a dict)."""
        t_start = time.perf_counter()
        self.rng = check_random_state(self.estimator.random_state)
        self.prepare()
        with self.threads():
            start = self.resume() if self.continuing else self.initial()
            init_time = seconds_since(t_start)
            result = self.run(start)
            h = self.n_hyper
            warn_at_bounds(
                result.particles[:, :h],
                self.bounds[:h],
                self.names[:h],
                "particles",
                y=self.y,
            )
            fitted = self.fitted(result, start)
        fitted["diagnostics_"] = self.diagnostics(
            result, start, init_time, seconds_since(t_start)
        )
        fitted["diagnostics_"]["settled"] = self.settled
        return fitted

    def run(self, start):
        """SVGD from ``start``; the start itself where nothing is free."""
        particles = start.particles
        if particles.shape[1] == 0:
            values = self.log_density(particles)
            return SVGDResult(particles, values, particles, 0, True, {}, start.state)
        evaluator = self.make_evaluator(start)
        try:
            result = self.run_with(evaluator, start)
        finally:
            # an evaluator with threads of its own ends them with the run
            if hasattr(evaluator, "close"):
                evaluator.close()
        if self.warns_unconverged(result):
            warn_not_converged(self.estimator, result, self.X)
        self.after_run(evaluator)
        return result

    def run_with(self, evaluator, start):
        """Settle the start on the surrogate where it can, then run SVGD."""
        particles = start.particles
        # A run on noisy gradients has no stopping rule to reach sooner.
        if self.stochastic:
            evaluator.check_initial(particles)
        else:
            settled, at_settled = settle_on_surrogate(
                self.estimator,
                start,
                evaluator,
                self.bounds,
                self.svgd_options(start),
                self.surrogate_max_iter,
            )
            if at_settled is not None:
                # every settled particle was finite: nothing to check at the
                # draws, which would cost one evaluation of each
                particles, evaluated = settled, at_settled
                self.settled = True
            else:
                evaluated = evaluator.check_initial(particles)
            # Exact targets give the same numbers again: the last evaluation,
            # at the particles the run starts from, is its first.
            evaluator.replay_first(particles, *evaluated)
        return run_stein_svgd(
            self.estimator,
            evaluator,
            particles,
            self.bounds,
            start.state,
            self.stochastic,
            start.coordinates(),
            **self.svgd_options(start),
        )

    def fitted(self, result, start):
        """The attributes every model leaves, then the model's own."""
        estimator, particles = self.estimator, result.particles
        ksd = (
            kernel_stein_discrepancy(particles, result.grads)
            if particles.shape[1]
            else 0.0
        )
        return {
            "particles_": particles,
            "param_names_": self.names,
            "log_posterior_": result.log_density,
            "n_iter_": (estimator.n_iter_ if self.continuing else 0) + result.n_iter,
            "converged_": bool(result.converged),
            "history_": merged_history(estimator, self.continuing, result),
            "ksd_": float(ksd),
            "map_params_": start.centre,
            "_svgd_state": result.state,
            **self.finish(result, start),
        }

    def warns_unconverged(self, result):
        """Whether SVGD's unmet stopping rule deserves a ConvergenceWarning."""
        return (
            not self.stochastic and not result.converged and self.estimator.max_iter > 0
        )

    # The pieces every model gives.
    def prepare(self):
        """Checks; set ``target``, ``names``, ``bounds`` and ``n_hyper``."""
        raise NotImplementedError

    def threads(self):
        """The BLAS thread limit the start and SVGD run under."""
        raise NotImplementedError

    def initial(self):
        """The :class:`Start` of a new fit."""
        raise NotImplementedError

    def resume(self):
        """The :class:`Start` of a continued fit, from the fitted state."""
        raise NotImplementedError

    def make_evaluator(self, start):
        """``evaluator(particles) -> (values, grads)`` for SVGD."""
        raise NotImplementedError

    def finish(self, result, start):
        """The model's own fitted attributes (a dict)."""
        raise NotImplementedError

    def diagnostics(self, result, start, init_time, fit_time):
        """``diagnostics_``, with ``converged`` and ``fit_time``."""
        raise NotImplementedError

    # Hooks with a default: most models need nothing here.
    def svgd_options(self, start):
        """The SVGD kernel for the particles' shape and, where a preconditioner
        whitens the coordinates, each coordinate its own step: for every model
        (:func:`~skgp_bayes.inference.stein_kernel.choose_kernel`). Without a
        preconditioner these are the engine's defaults."""
        root = start.preconditioner
        return {
            "kernel": choose_kernel(root, start.particles.shape),
            "step_control": "global" if root is None else "per_coordinate",
        }

    def after_run(self, evaluator):
        """Warnings about the evaluator's work (none by default)."""

    def log_density(self, particles):
        """Log density at particles with no free coordinate."""
        raise NotImplementedError
