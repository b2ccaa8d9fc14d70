"""The latent model of :class:`~skgp_bayes.SteinGPClassifier`.

The particles hold ``(theta, nu)``: kernel hyperparameters and whitened
latent values at the training inputs, ``f = L_theta nu``
(:class:`~skgp_bayes.targets.whitened.WhitenedLatentTarget`). With
``init="map"`` they start from the Laplace approximation (see the module
notes of :mod:`skgp_bayes.stein_classifier`), whose curvature at the MAP,
in ``theta`` and in the whitened latents, preconditions SVGD.
"""

import time

import numpy as np
from scipy.linalg import block_diag

from .._base import mean_kernel
from .._starts import LAPLACE_SCREEN_ROWS, screened_start, subset_rows
from .._stein_base import (
    Start,
    SteinModel,
    batch_evaluator,
    check_dense_memory,
    search_threads,
)
from .._threads import blas_threads_for
from .._validation import check_input_magnitude
from ..inference._chain_threads import mapped_on_threads
from ..inference.gaussian_surrogate import GaussianMixtureDensity
from ..inference.laplace import (
    MAX_LAPLACE_STD,
    find_map,
    gaussian_draws,
    gaussian_factor,
)
from ..likelihoods import Bernoulli
from ..predictive.latent import LatentDraws
from ..targets.laplace import (
    BinaryLaplaceProblem,
    LaplaceSurrogate,
    binary_laplace_draw,
    binary_precision_factor,
    covariance_root,
    softmax_chord_draw,
    softmax_laplace_draw,
    surrogate_cov,
)
from ..targets.whitened import WhitenedLatentTarget
from .common import kernel_prior, latent_likelihood

__all__ = ["LatentModel"]


# Largest number of whitened unknowns (n * n_classes) for which the softmax
# Laplace step forms its dense Hessian; beyond it one-vs-rest draws are used.
_DENSE_NEWTON_MAX = 2000


def latent_target(adapter, X, y_enc, likelihood, prior_set, shared_kernel):
    """The whitened latent target of encoded labels ``y_enc`` at inputs ``X``.

    One latent function (binary) takes the labels as 0/1 floats, several
    (softmax or robust-max) the class indices.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._stein_models.latent import latent_target
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> X = np.linspace(-2, 2, 10)[:, None]
    >>> target = latent_target(KernelAdapter(RBF()), X, (X[:, 0] > 0).astype(int),
    ...                        Bernoulli(), None, True)
    >>> target.n_latent, target.y.dtype
    (1, dtype('float64'))
    """
    n_latent = likelihood.n_latent
    labels = y_enc.astype(np.float64) if n_latent == 1 else y_enc
    return WhitenedLatentTarget(
        adapter, X, labels, likelihood, prior_set, n_latent, shared_kernel
    )


def coupled_laplace(modes, theta_root, latent_root, theta_inverse, latent_inverse):
    """The Gaussian the particles were drawn from, as one joint density.

    ``theta ~ N(theta_0, S_t S_t')`` and ``nu | theta ~ N(nu_0 + B (theta -
    theta_0), S_n S_n')``: the latents' Laplace approximation at the MAP,
    its mode moving with ``theta`` as the particles' conditional modes
    ``modes`` do (``B`` their least-squares slope, the smallest that fits
    them exactly where there are fewer particles than hyperparameters).
    Without the slope the latents' mode stays at the MAP's, and settling on
    it undoes what drawing each particle's latents at its own ``theta`` got
    right: on two binary data sets of 300 rows and 8-9 inputs the target's
    Stein field after settling was larger than before (1.2-1.4 against 1.0
    posterior sds); settled on the coupled surrogate, 0.31-0.34 on the
    first. The joint root is ``[[S_t, 0], [B S_t, S_n]]``, and its inverse
    ``[[S_t^-1, 0], [-S_n^-1 B, S_n^-1]]`` needs only the blocks' inverses
    (``theta_inverse``, and ``latent_inverse``, known from the precision's
    factors), which the preconditioner uses too.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._stein_models.latent import coupled_laplace
    >>> modes = np.array([[0.0, 1.0], [1.0, 3.0]])  # nu_hat = 1 + 2 theta
    >>> eye = np.eye(1)
    >>> density = coupled_laplace(modes, eye, eye, eye, eye)
    >>> density(np.array([[1.0, 3.0]]))[1]  # the conditional mode: no pull on nu
    array([[-1.,  0.]])
    """
    n_theta = theta_root.shape[0]
    offsets = modes[1:] - modes[0]
    slope = (
        np.linalg.lstsq(offsets[:, :n_theta], offsets[:, n_theta:], rcond=None)[0].T
        if n_theta and offsets.shape[0]
        else np.zeros((latent_root.shape[0], n_theta))
    )
    zeros = np.zeros((n_theta, latent_root.shape[0]))
    root = np.block([[theta_root, zeros], [slope @ theta_root, latent_root]])
    inverse = np.block(
        [
            [theta_inverse, zeros],
            [-latent_inverse @ slope, latent_inverse],
        ]
    )
    return GaussianMixtureDensity(modes[:1], [root], inverse_roots=[inverse])


def laplace_surrogate(target, y_enc):
    """Laplace marginal of the binary problem, or one-vs-rest problems.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._stein_models.latent import laplace_surrogate
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.priors import PriorSet
    >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
    >>> X = np.linspace(-2, 2, 10)[:, None]
    >>> y = (X[:, 0] > 0).astype(float)
    >>> prior_set = PriorSet({"length_scale": slice(0, 1)}, {})
    >>> target = WhitenedLatentTarget(
    ...     KernelAdapter(RBF()), X, y, Bernoulli(), prior_set, 1, True)
    >>> len(laplace_surrogate(target, y).problems)
    1
    """
    if target.n_latent == 1:
        problems = [BinaryLaplaceProblem(target, y_enc, target.likelihood)]
    else:
        logistic = Bernoulli(link="logit")
        problems = [
            BinaryLaplaceProblem(target, (y_enc == c).astype(float), logistic)
            for c in range(target.n_latent)
        ]
    return LaplaceSurrogate(
        problems, target.n_blocks, target.prior_set, target.n_kernel_params
    )


class LatentModel(SteinModel):
    """The exact classifier: hyperparameters and whitened latents jointly.

    ``O(n^3)`` per particle and iteration. With ``init="map"`` SVGD is
    preconditioned by the Laplace approximation at the MAP and runs one
    RBF kernel per whitened coordinate where coordinates outnumber the
    particles (:func:`~skgp_bayes.inference.svgd.choose_kernel`), each
    coordinate with its own step. Parameters as for
    :class:`~skgp_bayes._stein_base.SteinModel`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPClassifier
    >>> from skgp_bayes._stein_models import LatentModel
    >>> X = np.linspace(-2, 2, 20)[:, None]
    >>> est = SteinGPClassifier(n_particles=3, max_iter=5, random_state=0)
    >>> est.n_features_in_ = 1
    >>> fitted = LatentModel(est, X, X[:, 0] > 0, continuing=False).fit()
    >>> fitted["particles_"].shape  # amplitude, length scale, 20 latents
    (3, 22)
    """

    # The surrogate spans the latents too (P = n C + p coordinates), so one
    # of its iterations is dense products of that size, a few milliseconds
    # (2.5 on iris, 317 coordinates): as dear as a small target's
    # evaluation. With 10 the target's iterations fell as far as with 30
    # (isotropic kernel on breast cancer, iris and wine, seeds 0-2: 5-11
    # either way), and settling with 30 had made the iris and wine fits
    # slower than not settling.
    surrogate_max_iter = 10

    def prepare(self):
        """Labels, checks against the fit continued, and the target."""
        estimator, X = self.estimator, self.X
        classes, y_enc = np.unique(self.y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(
                f"{type(estimator).__name__} requires 2 classes; got "
                f"{classes.size} class (label {classes[0]!r})."
            )
        check_input_magnitude(X)
        # Kernel matrices are n x n per block; the dense softmax Newton system
        # is capped at _DENSE_NEWTON_MAX unknowns.
        check_dense_memory(X.shape[0], type(estimator).__name__)
        if self.continuing:
            self.check_same_data(classes, y_enc)
        self.classes, self.y_enc = classes, y_enc
        self.build_target(classes.size)

    def check_same_data(self, classes, y_enc):
        """ValueError unless a continued fit has the previous training set."""
        estimator = self.estimator
        if not np.array_equal(classes, estimator.classes_):
            raise ValueError(
                "warm_start needs the classes of the previous fit "
                f"{estimator.classes_.tolist()}; got {classes.tolist()}."
            )
        if not (
            np.array_equal(self.X, estimator.X_train_)
            and np.array_equal(y_enc, estimator._y_train)
        ):
            # The particles' whitened latents belong to the old inputs and
            # labels: continuing on other data would silently mix models.
            raise ValueError(
                "warm_start continues the previous fit and needs its training "
                "set; got different X or y. Set warm_start=False to refit."
            )

    def build_target(self, n_classes):
        """The whitened latent target, names, bounds and MAP start."""
        X, y_enc = self.X, self.y_enc
        kernel, adapter, block_bounds, prior_set = kernel_prior(
            self.estimator, X.shape[1]
        )
        likelihood, n_latent = latent_likelihood(n_classes, self.estimator.link)
        target = latent_target(
            adapter, X, y_enc, likelihood, prior_set, self.estimator.shared_kernel
        )
        n = X.shape[0]
        names = []
        for b in range(target.n_blocks):
            prefix = "" if target.n_blocks == 1 else f"latent{b}__"
            names.extend(prefix + name for name in adapter.param_names)
        if n_latent == 1:
            names.extend(f"nu[{i}]" for i in range(n))
        else:
            names.extend(f"nu[{c},{i}]" for c in range(n_latent) for i in range(n))
        theta_bounds = np.tile(block_bounds, (target.n_blocks, 1))
        nu_bounds = np.tile([-np.inf, np.inf], (n * n_latent, 1))
        self.bounds = np.vstack([theta_bounds, nu_bounds])
        self.start = np.tile(
            np.clip(kernel.theta, block_bounds[:, 0], block_bounds[:, 1]),
            target.n_blocks,
        )
        self.kernel, self.target, self.names = kernel, target, names
        self.n_hyper = target.n_theta

    def threads(self):
        """BLAS threads for ``n x n`` factorisations."""
        return blas_threads_for(self.X.shape[0])

    def initial(self):
        """Particles from the prior, or from the Laplace approximation."""
        if self.estimator.init == "prior":
            return Start(self.prior_particles())
        surrogate = laplace_surrogate(self.target, self.y_enc)
        thetas, map_theta, theta_root = self.map_thetas(surrogate)
        particles, precision_factors, modes = self.laplace_latents(surrogate, thetas)
        # The first particle sits at the MAP: the Laplace curvature there, in
        # theta and in the whitened latents, preconditions SVGD.
        latent_root = covariance_root(precision_factors)
        theta_inverse = np.linalg.inv(theta_root)
        latent_inverse = block_diag(*[R.T for R in precision_factors])
        # The latents' slope in theta is identified by the particles' modes
        # only with fewer hyperparameters than particles; past that the
        # surrogate is arbitrary between them; with ARD kernels on six data
        # sets a surrogate without the slope saved no iterations (12-26
        # against 16-21).
        identified = self.target.n_theta < particles.shape[0]
        return Start(
            particles,
            centre=map_theta,
            preconditioner=block_diag(theta_root, latent_root),
            preconditioner_inverse=block_diag(theta_inverse, latent_inverse),
            surrogate=(
                coupled_laplace(
                    modes, theta_root, latent_root, theta_inverse, latent_inverse
                )
                if identified
                else None
            ),
        )

    def prior_particles(self):
        """Hyperparameters from their prior, latents from ``N(0, I)``."""
        target, rng, J = self.target, self.rng, self.estimator.n_particles
        theta_bounds = self.bounds[: target.n_theta]
        thetas = (
            np.hstack([target.prior_set.sample(rng, J) for _ in range(target.n_blocks)])
            if target.n_theta
            else np.empty((J, 0))
        )
        thetas = np.clip(thetas, theta_bounds[:, 0], theta_bounds[:, 1])
        nus = rng.standard_normal((J, target.n * target.n_latent))
        return np.hstack([thetas, nus])

    def map_thetas(self, surrogate):
        """Hyperparameters spread by the surrogate's Laplace covariance.

        Returns the particles' ``theta`` ``(J, n_theta)``, the MAP and the
        root of the (capped) covariance.
        """
        estimator, target, J = self.estimator, self.target, self.estimator.n_particles
        if not target.n_theta:
            return np.empty((J, 0)), np.empty(0), np.empty((0, 0))
        theta_bounds = self.bounds[: target.n_theta]
        # From the length-scale screen's best point where it beats the start
        # (skgp_bayes._starts: the start misses short-length-scale modes).
        # One search, not two: each surrogate evaluation runs Newton to the
        # latent mode, and a second search took the default fit past twice
        # scikit-learn's time on two data sets without changing a result.
        # For the same reason the screen varies the length scales together
        # only: shortening one input's at a time (up to 8 evaluations an
        # input) took breast cancer's default fit (30 inputs) from 4.7 s to
        # 8.3 s, against scikit-learn's 3.5 s, for the same log loss.
        rows = subset_rows(self.X.shape[0], LAPLACE_SCREEN_ROWS)
        screened = screened_start(
            self.screen_surrogate(rows).log_prob,
            self.names[: target.n_theta],
            self.start,
            self.X[rows],
            theta_bounds,
            per_input=False,
        )
        start = self.start if screened is None else screened
        result = find_map(surrogate, start, theta_bounds)
        map_theta = result.params
        if estimator.verbose:
            estimator._log(
                f"Laplace MAP after {result.n_iter} L-BFGS iterations: "
                + "; ".join(
                    target.describe(t) for t in map_theta.reshape(target.n_blocks, -1)
                )
            )
        cov = surrogate_cov(surrogate, map_theta, theta_bounds, MAX_LAPLACE_STD)
        theta_root = gaussian_factor(cov)
        if J == 1:
            return map_theta[None, :], map_theta, theta_root
        thetas = gaussian_draws(map_theta, theta_root, J, self.rng)
        thetas = np.clip(thetas, theta_bounds[:, 0], theta_bounds[:, 1])
        # One particle stays at the MAP: the surrogate's best guess.
        thetas[0] = map_theta
        return thetas, map_theta, theta_root

    def screen_surrogate(self, rows):
        """The Laplace surrogate of the model on ``rows`` of the data."""
        target = self.target
        if rows.size == self.X.shape[0]:
            return laplace_surrogate(target, self.y_enc)
        y_enc = self.y_enc[rows]
        subset = latent_target(
            target.adapter,
            self.X[rows],
            y_enc,
            target.likelihood,
            target.prior_set,
            self.estimator.shared_kernel,
        )
        return laplace_surrogate(subset, y_enc)

    def laplace_latents(self, surrogate, thetas):
        """Each particle's latents drawn from ``p(nu | theta, y)``'s Laplace
        approximation; the particles, the precision factors at the MAP (the
        first particle's ``theta``), and the particles with their latents'
        conditional modes in place of the draws."""
        target = self.target
        if target.n_latent > 1 and target.n * target.n_latent <= _DENSE_NEWTON_MAX:
            return self.softmax_latents(surrogate, thetas)
        return self.binary_latents(surrogate, thetas)

    def binary_latents(self, surrogate, thetas):
        """:meth:`laplace_latents` from one binary problem per latent.

        The first particle (the MAP) starts Newton from the surrogate's last
        mode; the others from the first one's mode in ``f``, which is
        closer to theirs than its ``a = K^-1 f`` is. Their draws are
        independent and go on threads under the particles' rule
        (:func:`~skgp_bayes._stein_base.search_threads`, the first draw's
        time deciding), with the normal draws taken up front in the order
        one thread takes them: the particles do not depend on the threads.
        """
        target, problems = self.target, surrogate.problems
        J, C, n = thetas.shape[0], target.n_latent, target.n
        blocks = thetas.reshape(J, target.n_blocks, target.n_kernel_params)
        noise = self.rng.standard_normal((J, C, 2, n))

        def draw(task, a0=None, f0=None):
            j, c = task
            block = blocks[j, target.block_of_latent(c)]
            return binary_laplace_draw(problems[c], block, noise[j, c], a0, f0)

        began = time.perf_counter()
        first = [draw((0, c), a0=problem.a) for c, problem in enumerate(problems)]
        seconds = (time.perf_counter() - began) / C
        tasks = [(j, c) for j in range(1, J) for c in range(C)]
        threads = search_threads(
            self.estimator, surrogate, n, len(tasks), lambda: seconds
        )
        with mapped_on_threads(threads) as map_fn:
            rest = map_fn(lambda task: draw(task, f0=first[task[1]].f), tasks)
            draws = first + list(rest)
        particles = np.empty((J, target.n_params))
        modes = np.empty_like(particles)
        for j in range(J):
            mine = draws[j * C : (j + 1) * C]
            particles[j] = target.join(blocks[j], np.stack([d.nu for d in mine]))
            modes[j] = target.join(blocks[j], np.stack([d.nu_hat for d in mine]))
        factors = [binary_precision_factor(d.L, d.W) for d in first]
        return particles, factors, modes

    def softmax_latents(self, surrogate, thetas):
        """:meth:`laplace_latents` from the joint softmax Laplace step.

        The first particle's Newton starts from the one-vs-rest modes; the
        others take a chord step from the first one's mode and curvature.
        """
        target, rng = self.target, self.rng
        n, C = target.n, target.n_latent
        warm = [problem.a for problem in surrogate.problems]
        particles = np.empty((thetas.shape[0], target.n_params))
        modes = np.empty_like(particles)
        for j, theta in enumerate(thetas):
            blocks = theta.reshape(target.n_blocks, target.n_kernel_params)
            if j == 0:
                nu_start = np.stack(
                    [
                        target.factor(blocks[target.block_of_latent(c)]).T
                        @ (warm[c] if warm[c] is not None else np.zeros(n))
                        for c in range(C)
                    ]
                )
                nu, mode, R = softmax_laplace_draw(target, blocks, nu_start, rng)
                nu_hat = mode
            else:
                nu, nu_hat = softmax_chord_draw(target, blocks, mode, R, rng)
            particles[j] = target.join(blocks, nu)
            modes[j] = target.join(blocks, nu_hat)
        return particles, [R], modes

    def resume(self):
        """The fitted particles, engine state and preconditioner."""
        estimator = self.estimator
        if estimator.particles_.shape != (estimator.n_particles, len(self.names)):
            raise ValueError(
                "warm_start needs the same training set size, number of "
                f"particles and parameters: have {estimator.particles_.shape}, "
                f"asked for ({estimator.n_particles}, {len(self.names)})."
            )
        return Start(
            estimator.particles_,
            state=estimator._svgd_state,
            centre=estimator.map_params_,
            preconditioner=getattr(estimator, "_preconditioner", None),
            # the first fit's inverse, so that its continuation runs as one
            preconditioner_inverse=getattr(estimator, "_preconditioner_inverse", None),
        )

    def make_evaluator(self, start):
        """Every particle's exact value and gradient."""
        return batch_evaluator(self.target, self.estimator, self.X.shape[0])

    def finish(self, result, start):
        """Classes, kernels (one per block), training data and draws."""
        target, kernel, particles = self.target, self.kernel, result.particles
        kernels = []
        for p in particles:
            thetas, _ = target.split(p)
            fitted = [kernel.clone_with_theta(t) for t in thetas]
            kernels.append(fitted[0] if target.n_blocks == 1 else fitted)
        # (n_particles, n_blocks, n_theta): one summary kernel per block
        block_thetas = np.array([target.split(p)[0] for p in particles])
        summary = [
            mean_kernel(kernel, block_thetas[:, b]) for b in range(target.n_blocks)
        ]
        return {
            "classes_": self.classes,
            "kernels_": kernels,
            "kernel_": summary[0] if target.n_blocks == 1 else summary,
            "n_samples_seen_": self.X.shape[0],
            "X_train_": self.X,
            "_y_train": self.y_enc,
            "_draws": LatentDraws(target, particles),
            "_target": target,
            "_preconditioner": start.preconditioner,
            "_preconditioner_inverse": start.preconditioner_inverse,
        }

    def diagnostics(self, result, start, init_time, fit_time):
        """Jitter, ``converged``, ``init_time``, ``fit_time``."""
        return {
            "jitter": self.target.jitter,
            "converged": result.converged,
            "init_time": init_time,
            "fit_time": fit_time,
        }
