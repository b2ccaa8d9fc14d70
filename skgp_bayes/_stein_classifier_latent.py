"""The latent side of :class:`~skgp_bayes.SteinGPClassifier`'s predictions:
class probabilities from the particles' latent moments, and the sparse
model's function samples."""

import numpy as np
from scipy.special import expit
from sklearn.utils import check_random_state

from ._predictive_contract import binary_log_odds
from .kernels.spectral import spectral_parameters
from .predictive.latent import SparseLatentDraws
from .predictive.sparse import sparse_function_samples
from .sampling import (
    latent_conditioner,
    pathwise_functions,
    require_spectral_spec,
    with_prior_noise,
)
from .targets.sparse import softmax_mixture_proba

# Floor on a latent predictive variance: at a training input the exact value
# is the jitter, near rounding level, and round-off can take it below zero.
_MIN_LATENT_VAR = 1e-12


class SteinClassifierLatentMixin:
    """Prediction helpers of :class:`~skgp_bayes.SteinGPClassifier`."""

    def _is_sparse(self):
        return isinstance(self._draws, SparseLatentDraws)

    def _binary_log_odds(self, X):
        """Log predictive odds, averaged over particles in probability space."""
        means, variances = self._draws.moments(X)
        return binary_log_odds(self._draws.likelihood, means[:, 0], variances[:, 0])

    def _proba(self, X):
        if self.classes_.size == 2:
            d = self._binary_log_odds(X)
            # p1 / (p0 + p1) from the two averaged log probabilities: the
            # renormalisation, exact in the tails.
            return np.column_stack([expit(-d), expit(d)])
        means, variances = self._draws.moments(X)
        # Each particle its own block of quasi-random nodes, for its own
        # per-class variances: no error shared by every particle, and on
        # wine and modechoice a sixth of the error of the 256 random nodes
        # the particles shared before, at half the node evaluations
        # (softmax_mixture_proba).
        return softmax_mixture_proba(
            means.transpose(0, 2, 1),
            np.maximum(variances, _MIN_LATENT_VAR).transpose(0, 2, 1),
            random_state=0,
        )

    def _sparse_function_samples(self, n_samples, random_state, n_features):
        draws = self._draws
        require_spectral_spec(draws.adapter.kernel, "sample_latent(X)")
        functions, _ = sparse_function_samples(
            draws.adapter,
            draws.Z,
            draws.jitter,
            draws.kernel_thetas,
            draws.v,
            None,
            n_samples,
            check_random_state(random_state),
            n_features,
        )
        return functions[0] if len(functions) == 1 else functions

    def _exact_function_samples(self, n_samples, random_state, n_features):
        """Pathwise latent samples of the exact model: Matheron's update on
        each particle's ``f = L_theta nu`` at the training inputs."""
        draws, target = self._draws, self._target
        spec = require_spectral_spec(target.adapter.kernel, "sample_latent(X)")
        rng = check_random_state(random_state)
        which = rng.randint(draws.n_draws, size=n_samples)
        functions = []
        for c in range(target.n_latent):
            block = target.block_of_latent(c)
            thetas = np.array([draws.theta(j, block) for j in range(draws.n_draws)])
            latents = np.array(
                [
                    draws.factor(j, block) @ target.split(draws.particles[j])[1][c]
                    for j in range(draws.n_draws)
                ]
            )
            conditioner = with_prior_noise(
                latent_conditioner(
                    target.X, lambda j, block=block: draws.factor(j, block), latents
                ),
                self._feature_free_variance(spec, thetas),
            )
            functions.append(
                pathwise_functions(
                    spec,
                    thetas,
                    n_samples,
                    conditioner,
                    n_features=n_features,
                    random_state=rng,
                    draws=which,
                )
            )
        return functions[0] if len(functions) == 1 else functions

    def _feature_free_variance(self, spec, thetas):
        """Per-draw diagonal variance in ``K`` that Fourier features lack.

        The latent values were drawn with the jittered Gram matrix, whose
        diagonal also holds a WhiteKernel's variance; Matheron's update is
        exact only if the prior sample at ``X`` carries the same extra
        variance, so it is added there as independent noise.
        """
        target = self._target
        n_dims = target.X.shape[1]
        extra = np.empty(thetas.shape[0])
        for j, theta in enumerate(thetas):
            white = spectral_parameters(spec, theta, n_dims)[2]
            mean_diag = float(np.mean(target.adapter.diag(theta, target.X)))
            extra[j] = white + target.jitter * mean_diag
        return extra
