"""A Gaussian (mixture) log density over flat vectors, batched.

The Laplace approximations that place a sampler's starting points are also
a surrogate of the target that costs a few matrix products to evaluate.
Particle methods use it to settle their interaction before paying for the
target: SVGD's particles, drawn at random from a Gaussian, are not a fixed
point of SVGD for that Gaussian, and most of the Stein field at such a
start is the particles rearranging among themselves (spreading where they
clump, closing gaps), which the surrogate describes as well as the target
does wherever the Laplace approximation holds.
"""

import numpy as np
from scipy.special import logsumexp

__all__ = ["GaussianMixtureDensity"]


class GaussianMixtureDensity:
    """``log sum_k w_k N(x; m_k, S_k S_k')`` and its gradient, for a batch.

    Parameters
    ----------
    means : ndarray of shape (K, P)
        The components' means.
    roots : sequence of K ndarrays of shape (P, P)
        Square roots ``S_k`` of the covariances (any ``S`` with ``S S' =
        C``: a Cholesky factor, or the inverse transpose of a precision's).
    log_weights : ndarray of shape (K,), optional
        Unnormalised log weights; equal weights by default.
    inverse_roots : sequence of K ndarrays of shape (P, P), optional
        ``S_k^-1`` where the caller knows them (blockwise, from factors),
        instead of an inversion here.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.gaussian_surrogate import GaussianMixtureDensity
    >>> density = GaussianMixtureDensity(np.zeros((1, 2)), [2.0 * np.eye(2)])
    >>> values, grads = density(np.array([[2.0, 0.0]]))
    >>> grads
    array([[-0.5,  0. ]])
    >>> bool(np.isclose(values[0], -0.5 - np.log(2 * np.pi * 4.0)))
    True
    """

    def __init__(self, means, roots, log_weights=None, inverse_roots=None):
        self.means = np.atleast_2d(np.asarray(means, dtype=np.float64))
        n_components, n_params = self.means.shape
        if len(roots) != n_components:
            raise ValueError(f"{n_components} means but {len(roots)} covariance roots.")
        if inverse_roots is None:
            self.inverse_roots = [np.linalg.inv(root) for root in roots]
            log_dets = np.array([np.linalg.slogdet(root)[1] for root in roots])
        else:
            self.inverse_roots = [
                np.asarray(inv, dtype=np.float64) for inv in inverse_roots
            ]
            log_dets = -np.array(
                [np.linalg.slogdet(inv)[1] for inv in self.inverse_roots]
            )
        weights = (
            np.zeros(n_components)
            if log_weights is None
            else np.asarray(log_weights, dtype=np.float64)
        )
        # Each component's normalising constant joins its weight once.
        self.log_norms = (
            weights
            - logsumexp(weights)
            - log_dets
            - 0.5 * n_params * np.log(2.0 * np.pi)
        )

    def __call__(self, particles):
        """Values ``(J,)`` and gradients ``(J, P)`` at ``particles``."""
        particles = np.atleast_2d(particles)
        log_terms, grads = [], []
        for mean, inverse_root, log_norm in zip(
            self.means, self.inverse_roots, self.log_norms, strict=True
        ):
            whitened = (particles - mean) @ inverse_root.T
            log_terms.append(log_norm - 0.5 * np.sum(whitened**2, axis=1))
            grads.append(-whitened @ inverse_root)
        log_terms = np.array(log_terms)
        values = logsumexp(log_terms, axis=0)
        shares = np.exp(log_terms - values)
        return values, np.einsum("kj,kjp->jp", shares, np.array(grads))
