"""The sparse (inducing-point) models of both Stein estimators.

The particles hold ``(theta, v)``: the kernel hyperparameters (and the log
noise variance of a regressor) and the whitened inducing values of
:class:`~skgp_bayes.targets.sparse.SparseWhitenedTarget` (seed 000, sections
3-4). With ``batch_size`` the data term is estimated on one random minibatch
per iteration, shared by all particles, scaled by ``n / |B|`` so that the
estimate is unbiased (seed 000, eq. 10); SVGD then follows noisy gradients.
The particles start from an SVGP Gaussian approximation on the same
inducing inputs (``init="map"``) or from the prior.
"""

import joblib
import numpy as np

from .._base import mean_kernel
from .._sparse import fit_svgp_adam, fit_svgp_lbfgs, resolve_inducing
from .._stein_base import (
    Start,
    SteinModel,
    check_particle_shape,
    check_sparse_memory,
    check_sparse_options,
    describe_hyper,
)
from .._threads import blas_threads_for
from .._validation import check_input_magnitude, target_scale
from ..exceptions import NotPSDError
from ..inference.particles import ParticleEvaluator
from ..likelihoods import Gaussian
from ..predictive.latent import SparseLatentDraws
from ..predictive.sparse import SparseGPDraws
from ..targets.sparse import SparseWhitenedTarget
from ..targets.svgp import SVGPBound
from .common import kernel_prior, latent_likelihood, regressor_attributes

__all__ = ["SparseClassifierModel", "SparseModel", "SparseRegressorModel"]

# Spread (log units) of the particles' hyperparameters around the Gaussian
# approximation's optimum: SVGD's repulsion widens it where the posterior is
# wider.
_HYPER_SPREAD = 0.1
# L-BFGS iterations (full data) or Adam steps (minibatches) of the Gaussian
# approximation that places the particles.
_SVGP_LBFGS_ITER = 200
_SVGP_ADAM_STEPS = 500
_SVGP_ADAM_RATE = 0.01
# The minibatch warm-up stops once its bound, averaged over one epoch (and at
# least this many batches), rises by less than twice its standard error from
# one such window to the next: further Adam steps would be lost in the noise
# that SVGD's own minibatch steps add; _SVGP_ADAM_STEPS is then a budget.
_SETTLE_MIN_BATCHES = 20


def svgp_approximation(
    target, *, hyper_start, hyper_bounds, prior_set, rng, batch_size
):
    """The SVGP Gaussian approximation that places a sparse fit's particles.

    Fitted with the target's inducing inputs, likelihood and priors:
    L-BFGS-B on the full data, or Adam on minibatches with ``batch_size``.
    Returns ``(bound, params, elbo)``: the SVGP bound, its optimum and the
    bound's value there (None on minibatches or where it fails).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._stein_models.sparse import svgp_approximation
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.priors import PriorSet
    >>> from skgp_bayes.targets.sparse import SparseWhitenedTarget
    >>> X = np.linspace(-2, 2, 30)[:, None]
    >>> prior_set = PriorSet({"length_scale": slice(0, 1)}, {})
    >>> target = SparseWhitenedTarget(
    ...     KernelAdapter(RBF()), X, (X[:, 0] > 0).astype(float), X[::6],
    ...     Bernoulli(), prior_set)
    >>> bound, params, elbo = svgp_approximation(
    ...     target, hyper_start=np.zeros(1), hyper_bounds=np.array([[-5.0, 5.0]]),
    ...     prior_set=prior_set, rng=np.random.default_rng(0), batch_size=None)
    >>> bool(np.isfinite(elbo))
    True
    """
    h = target.n_hyper
    bound = SVGPBound(
        target.adapter,
        target.X,
        target.y,
        target.Z,
        target.likelihood,
        prior_set,
        learn_noise=target.learn_noise,
        learn_inducing=False,
        jitter=target.jitter,
        offset=target.offset,
    )
    p = target.n_kernel_params
    log_noise = hyper_start[p] if target.learn_noise else None
    start = bound.initial_params(hyper_start[:p], log_noise)
    opt_bounds = np.tile([-np.inf, np.inf], (bound.n_params, 1))
    opt_bounds[:h] = hyper_bounds
    if batch_size is None:
        params, _, _, _ = fit_svgp_lbfgs(bound, start, opt_bounds, _SVGP_LBFGS_ITER)
    else:
        params, _, _, _ = fit_svgp_adam(
            bound,
            start,
            opt_bounds,
            _SVGP_ADAM_STEPS,
            batch_size,
            _SVGP_ADAM_RATE,
            rng,
            settle_window=max(_SETTLE_MIN_BATCHES, -(-target.n // batch_size)),
        )
    try:
        elbo = float(bound.elbo(params)) if batch_size is None else None
    except NotPSDError:
        elbo = None
    return bound, params, elbo


def sparse_initial_particles(
    target,
    *,
    init,
    n_particles,
    hyper_start,
    hyper_bounds,
    prior_set,
    rng,
    batch_size,
):
    """Starting particles ``(J, n_params)`` and the point they spread from.

    ``init="prior"``: hyperparameters from the prior, ``v`` from its
    ``N(0, I)`` prior. ``init="map"``: a sparse variational (SVGP) Gaussian
    approximation with the same inducing inputs is fitted (L-BFGS-B on the
    full data, or Adam on minibatches with ``batch_size``); the particles'
    hyperparameters scatter ``_HYPER_SPREAD`` log units around its optimum
    and their ``v`` are drawn from its ``q(v)``. Returns ``(particles,
    centre, elbo)``; ``centre`` and ``elbo`` are None for ``"prior"``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._stein_models.sparse import sparse_initial_particles
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.priors import PriorSet
    >>> from skgp_bayes.targets.sparse import SparseWhitenedTarget
    >>> X = np.linspace(-2, 2, 30)[:, None]
    >>> prior_set = PriorSet({"length_scale": slice(0, 1)}, {})
    >>> target = SparseWhitenedTarget(
    ...     KernelAdapter(RBF()), X, (X[:, 0] > 0).astype(float), X[::6],
    ...     Bernoulli(), prior_set)
    >>> particles, centre, elbo = sparse_initial_particles(
    ...     target, init="prior", n_particles=4, hyper_start=np.zeros(1),
    ...     hyper_bounds=np.array([[-5.0, 5.0]]), prior_set=prior_set,
    ...     rng=np.random.default_rng(0), batch_size=None)
    >>> particles.shape, centre, elbo  # length scale, then 5 whitened values
    ((4, 6), None, None)
    """
    J, h, m, C = n_particles, target.n_hyper, target.n_inducing, target.n_latent
    particles = np.empty((J, target.n_params))
    if init == "prior":
        if h:
            hyper = prior_set.sample(rng, J)
            particles[:, :h] = np.clip(hyper, hyper_bounds[:, 0], hyper_bounds[:, 1])
        particles[:, h:] = rng.standard_normal((J, m * C))
        return particles, None, None

    bound, params, elbo = svgp_approximation(
        target,
        hyper_start=hyper_start,
        hyper_bounds=hyper_bounds,
        prior_set=prior_set,
        rng=rng,
        batch_size=batch_size,
    )
    theta, log_noise, q_mean, q_L, _ = bound.split(params)
    centre_hyper = np.append(theta, log_noise) if target.learn_noise else theta
    z = rng.standard_normal((J, C, m))
    v = q_mean[None] + np.einsum("cjk,sck->sjc", q_L, z)
    particles[:, h:] = v.reshape(J, -1)
    spread = _HYPER_SPREAD * rng.standard_normal((J, h))
    # One particle stays at the optimum: the approximation's best guess.
    spread[0] = 0.0
    particles[:, :h] = np.clip(
        centre_hyper + spread, hyper_bounds[:, 0], hyper_bounds[:, 1]
    )
    centre = np.concatenate([centre_hyper, q_mean.reshape(-1)])
    return particles, centre, elbo


class SparseModel(SteinModel):
    """The sparse model's fit, shared by the regressor and the classifier.

    Subclasses give the data checks (:meth:`check_data`), the kernel,
    prior and likelihood (:meth:`set_hyperparameters`), the target
    (:meth:`make_target`) and the fitted attributes. Parameters as for
    :class:`~skgp_bayes._stein_base.SteinModel`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes._stein_models import SparseRegressorModel
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (60, 1))
    >>> est = SteinGPRegressor(inducing_points=5, batch_size=20, n_particles=3,
    ...                        max_iter=5, random_state=0)
    >>> est.n_features_in_ = 1
    >>> model = SparseRegressorModel(est, X, np.sin(X[:, 0]), continuing=False)
    >>> fitted = model.fit()
    >>> model.stochastic, fitted["inducing_points_"].shape
    (True, (5, 1))
    """

    def prepare(self):
        """Checks, inducing inputs, the target and its minibatch evaluator."""
        estimator, X = self.estimator, self.X
        self.check_data()
        check_input_magnitude(X)
        self.batch_size = check_sparse_options(estimator, X.shape[0])
        self.set_hyperparameters()
        seeds = self.rng.randint(0, 2**31 - 1, size=3)
        if self.continuing:
            self.Z = estimator.inducing_points_
        else:
            self.Z = resolve_inducing(
                estimator.inducing_points, X, int(seeds[0]), self.scaling
            )
        check_sparse_memory(
            self.batch_size or X.shape[0], self.Z.shape[0], type(estimator).__name__
        )
        self.n_seen = X.shape[0]
        if self.partial and self.continuing:
            self.n_seen += estimator.n_samples_seen_
        self.target = target = self.make_target()
        self.names, self.n_hyper = target.param_names, target.n_hyper
        free = np.tile([-np.inf, np.inf], (target.n_params - target.n_hyper, 1))
        self.bounds = np.vstack([self.hyper_bounds, free])
        self.evaluator = ParticleEvaluator(
            target,
            batch_size=self.batch_size,
            rng=np.random.default_rng(int(seeds[1])),
            n_jobs=estimator.n_jobs,
        )
        self.init_rng = np.random.default_rng(int(seeds[2]))
        self.stochastic = self.batch_size is not None

    def threads(self):
        """BLAS threads for ``(batch, m)`` projections."""
        return blas_threads_for(self.batch_size or self.X.shape[0], self.Z.shape[0])

    def initial(self):
        """Particles around an SVGP approximation's optimum, or from the prior."""
        estimator, h = self.estimator, self.n_hyper
        particles, centre, elbo = sparse_initial_particles(
            self.target,
            init=estimator.init,
            n_particles=estimator.n_particles,
            hyper_start=self.hyper_start,
            hyper_bounds=self.bounds[:h],
            prior_set=self.prior_set,
            rng=self.init_rng,
            batch_size=self.batch_size,
        )
        if estimator.verbose and centre is not None:
            estimator._log(
                f"Gaussian approximation with {self.Z.shape[0]} inducing points: "
                f"{describe_hyper(self.names[:h], centre[:h])}"
            )
        return Start(particles, centre=self.summary_centre(centre), elbo=elbo)

    def resume(self):
        """The fitted particles and engine state; the batch stream carries on."""
        estimator = self.estimator
        check_particle_shape(estimator, len(self.names), "Continuing a fit")
        # The permutation of the last chunk means nothing for a new one; the
        # random stream carries on.
        self.evaluator.set_state(estimator._batch_state)
        self.replay(estimator.particles_)
        return Start(
            estimator.particles_,
            state=estimator._svgd_state,
            centre=estimator.map_params_,
            elbo=estimator.diagnostics_.get("svgp_elbo"),
        )

    def summary_centre(self, centre):
        """What of the approximation's optimum ``map_params_`` keeps."""
        return centre

    def replay(self, particles):
        """Reuse the last gradient before continuing (nothing by default)."""

    def make_evaluator(self, start):
        """The minibatch evaluator built with the target."""
        return self.evaluator


class SparseRegressorModel(SparseModel):
    """The sparse regressor: Gaussian likelihood on inducing values.

    Parameters as for :class:`~skgp_bayes._stein_base.SteinModel`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes._stein_models import SparseRegressorModel
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (60, 1))
    >>> est = SteinGPRegressor(inducing_points=5, n_particles=3, max_iter=5,
    ...                        init="prior", random_state=0)
    >>> est.n_features_in_ = 1
    >>> fitted = SparseRegressorModel(est, X, np.sin(X[:, 0]),
    ...                               continuing=False).fit()
    >>> fitted["particles_"].shape  # amplitude, length scale, noise, 5 v
    (3, 8)
    """

    def check_data(self):
        """ValueError for one sample: no hyperparameter can be inferred."""
        if self.X.shape[0] < 2 and not self.continuing:
            raise ValueError(
                f"{type(self.estimator).__name__} needs at least 2 samples to "
                f"infer hyperparameters; got {self.X.shape[0]} sample."
            )

    def set_hyperparameters(self):
        """Target scaling (kept when continuing), kernel, noise and priors."""
        estimator = self.estimator
        if self.continuing:
            self.y_mean, self.y_std = estimator._y_mean, estimator._y_std
        else:
            self.y_mean, self.y_std = target_scale(self.y, estimator.normalize_y)
        self.y_model = (self.y - self.y_mean) / self.y_std
        kernel, adapter, _, hyper_bounds, start, prior_set, fixed_log_noise = (
            estimator._hyperparameters()
        )
        self.kernel, self.adapter, self.prior_set = kernel, adapter, prior_set
        self.hyper_bounds, self.hyper_start = hyper_bounds, start
        self.learn_noise = fixed_log_noise is None
        self.noise0 = float(np.exp(start[-1] if self.learn_noise else fixed_log_noise))
        # Unchanged data lets a continued fit replay its last gradient.
        self.fingerprint = joblib.hash((self.X, self.y_model))

    def make_target(self):
        """The sparse whitened posterior with a Gaussian likelihood."""
        return SparseWhitenedTarget(
            self.adapter,
            self.X,
            self.y_model,
            self.Z,
            Gaussian(noise_variance=self.noise0),
            self.prior_set,
            learn_noise=self.learn_noise,
            n_total=self.n_seen,
        )

    def replay(self, particles):
        """On unchanged data, the first SVGD step reuses the last gradient,
        so that fit(a) + fit(b) equals fit(a + b)."""
        estimator = self.estimator
        if not self.partial and self.fingerprint == estimator._data_fingerprint:
            self.evaluator.replay_first(
                particles, estimator.log_posterior_, estimator._last_grads
            )

    def finish(self, result, start):
        """Kernels, noise, inducing inputs, draws and the streams' state."""
        particles, p, h = result.particles, self.adapter.n_params, self.n_hyper
        kernel_thetas = particles[:, :p]
        if self.learn_noise:
            noise = np.exp(particles[:, p])
        else:
            noise = np.full(particles.shape[0], self.noise0)
        draws = SparseGPDraws(
            self.adapter,
            self.Z,
            self.target.jitter,
            kernel_thetas,
            particles[:, h:],
            noise,
        )
        return {
            **regressor_attributes(
                self.kernel, kernel_thetas, noise, self.y, self.y_std
            ),
            "inducing_points_": self.Z,
            "n_samples_seen_": self.n_seen,
            "_y_mean": self.y_mean,
            "_y_std": self.y_std,
            "_draws": draws,
            "_batch_state": self.evaluator.get_state(),
            "_last_grads": result.grads,
            "_data_fingerprint": self.fingerprint,
            "_bounds": self.bounds,
        }

    def diagnostics(self, result, start, init_time, fit_time):
        """Jitter, ``converged``, ``fit_time``, the SVGP bound, ``batch_size``."""
        return {
            "max_jitter": 0.0,
            "jitter": self.target.jitter,
            "converged": result.converged,
            "fit_time": fit_time,
            "svgp_elbo": start.elbo,
            "batch_size": self.batch_size,
        }


def stream_classes(estimator, classes, continuing):
    """The classes of a ``partial_fit`` stream, checked against earlier calls.

    Examples
    --------
    >>> from skgp_bayes import SteinGPClassifier
    >>> from skgp_bayes._stein_models.sparse import stream_classes
    >>> stream_classes(SteinGPClassifier(), ["b", "a"], False).tolist()
    ['a', 'b']
    """
    if classes is None:
        if not continuing:
            raise ValueError(
                "classes must be passed on the first call to partial_fit: "
                "a chunk need not hold every class of the stream."
            )
        return estimator.classes_
    classes = np.unique(np.asarray(classes))
    if continuing and not np.array_equal(classes, estimator.classes_):
        raise ValueError(
            f"classes={classes.tolist()} is not the same as on earlier calls "
            f"to partial_fit, {estimator.classes_.tolist()}."
        )
    if classes.size < 2:
        raise ValueError(
            f"{type(estimator).__name__} requires 2 classes; got {classes.size} "
            "in classes."
        )
    return classes


def sparse_labels(estimator, y, classes, continuing):
    """Classes and label codes of a sparse fit (``classes`` from partial_fit).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPClassifier
    >>> from skgp_bayes._stein_models.sparse import sparse_labels
    >>> classes, codes = sparse_labels(
    ...     SteinGPClassifier(), np.array(["b", "a", "b"]), None, False)
    >>> classes.tolist(), codes.tolist()
    (['a', 'b'], [1, 0, 1])
    """
    if classes is None:
        classes, y_enc = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(
                f"{type(estimator).__name__} requires 2 classes; got "
                f"{classes.size} class (label {classes[0]!r})."
            )
        if continuing and not np.array_equal(classes, estimator.classes_):
            raise ValueError(
                "warm_start needs the classes of the previous fit "
                f"{estimator.classes_.tolist()}; got {classes.tolist()}."
            )
        return classes, y_enc
    unseen = ~np.isin(y, classes)
    if np.any(unseen):
        raise ValueError(
            f"y holds labels {np.unique(y[unseen]).tolist()} that are not in "
            f"classes={classes.tolist()}."
        )
    return classes, np.searchsorted(classes, y)


class SparseClassifierModel(SparseModel):
    """The sparse classifier: every latent function's inducing values.

    Parameters
    ----------
    classes : array-like or None, default=None
        The ``classes`` argument of ``partial_fit``; a ``fit`` takes them
        from ``y``.
    **kwargs
        As for :class:`~skgp_bayes._stein_base.SteinModel`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPClassifier
    >>> from skgp_bayes._stein_models import SparseClassifierModel
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(60, 1))
    >>> est = SteinGPClassifier(inducing_points=5, n_particles=3, max_iter=5,
    ...                         init="prior", random_state=0)
    >>> est.n_features_in_ = 1
    >>> fitted = SparseClassifierModel(est, X, (X[:, 0] > 0).astype(int),
    ...                                continuing=False).fit()
    >>> fitted["classes_"].tolist(), fitted["particles_"].shape
    ([0, 1], (3, 7))
    """

    def __init__(self, estimator, X, y, *, classes=None, **kwargs):
        super().__init__(estimator, X, y, **kwargs)
        self.classes = classes

    def check_data(self):
        """The labels, and the one kernel the latents share."""
        if self.partial:
            self.classes = stream_classes(self.estimator, self.classes, self.continuing)
        self.classes, self.y_enc = sparse_labels(
            self.estimator, self.y, self.classes, self.continuing
        )
        if self.classes.size > 2 and not self.estimator.shared_kernel:
            raise ValueError(
                "shared_kernel=False is not available with inducing_points: the "
                "sparse model shares one kernel across the latent functions. "
                "Set shared_kernel=True, or inducing_points=None for the exact "
                "model with one kernel per class."
            )

    def set_hyperparameters(self):
        """Kernel, bounds, prior and the likelihood of the classes."""
        estimator = self.estimator
        kernel, adapter, hyper_bounds, prior_set = kernel_prior(
            estimator, self.X.shape[1]
        )
        self.likelihood, self.n_latent = latent_likelihood(
            self.classes.size, estimator.link
        )
        self.kernel, self.adapter, self.prior_set = kernel, adapter, prior_set
        self.hyper_bounds = hyper_bounds
        self.hyper_start = np.clip(kernel.theta, hyper_bounds[:, 0], hyper_bounds[:, 1])

    def make_target(self):
        """The sparse whitened posterior with a Bernoulli or softmax likelihood."""
        y_enc = self.y_enc
        return SparseWhitenedTarget(
            self.adapter,
            self.X,
            y_enc.astype(np.float64) if self.n_latent == 1 else y_enc,
            self.Z,
            self.likelihood,
            self.prior_set,
            n_total=self.n_seen,
        )

    def summary_centre(self, centre):
        """The approximation's hyperparameters only."""
        return None if centre is None else centre[: self.n_hyper]

    def finish(self, result, start):
        """Classes, kernels, inducing inputs, draws and the stream's state."""
        particles, p, h = result.particles, self.adapter.n_params, self.n_hyper
        kernel_thetas = particles[:, :p]
        v = particles[:, h:].reshape(particles.shape[0], self.Z.shape[0], self.n_latent)
        draws = SparseLatentDraws(
            self.adapter, self.Z, self.target.jitter, kernel_thetas, v, self.likelihood
        )
        return {
            "classes_": self.classes,
            "kernels_": [self.kernel.clone_with_theta(t) for t in kernel_thetas],
            "kernel_": mean_kernel(self.kernel, kernel_thetas),
            "inducing_points_": self.Z,
            "n_samples_seen_": self.n_seen,
            "_draws": draws,
            "_batch_state": self.evaluator.get_state(),
        }

    def diagnostics(self, result, start, init_time, fit_time):
        """Jitter, ``converged``, times, the SVGP bound, ``batch_size``."""
        return {
            "jitter": self.target.jitter,
            "converged": result.converged,
            "init_time": 0.0 if self.continuing else init_time,
            "fit_time": fit_time,
            "svgp_elbo": start.elbo,
            "batch_size": self.batch_size,
        }
