"""Counts: Poisson with a log link."""

import numpy as np
from scipy.special import gammaln

from ._base import Likelihood

__all__ = ["Poisson"]


class Poisson(Likelihood):
    """Poisson likelihood with rate ``exp(f)``.

    Exposure (time at risk, population) enters through the latent value:
    the caller adds ``log(exposure_i)`` to ``f_i`` (or to the latent mean
    ``mu_i``), so that the rate is ``exp(f_i) * exposure_i``. The likelihood
    itself holds no per-point state.

    Parameters
    ----------
    n_quadrature : int, default=20
        Gauss-Hermite nodes for :meth:`log_predictive_density`, the only
        expectation here without a closed form. The rule is adaptive
        (centred on the mode of the integrand), so large counts are
        handled; accuracy falls for latent variances of 10 or more.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.likelihoods import Poisson
    >>> exposure = np.array([1.0, 10.0])
    >>> mu = np.zeros(2) + np.log(exposure)   # offset by log-exposure
    >>> Poisson().predictive(mu, np.zeros(2))
    array([ 1., 10.])
    """

    log_concave = True

    def __init__(self, n_quadrature=20):
        self.n_quadrature = n_quadrature
        self._validate()

    def log_prob(self, y, f):
        """Elementwise ``y f - exp(f) - log(y!)``.

        Parameters
        ----------
        y : array-like
            Non-negative counts.
        f : ndarray
            Log rates (log-exposure included), broadcasting against ``y``.

        Returns
        -------
        ndarray

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Poisson
        >>> np.round(Poisson().log_prob(np.array([2.0]), np.array([0.0])), 6)
        array([-1.693147])
        """
        y = np.asarray(y, dtype=np.float64)
        return y * f - np.exp(f) - gammaln(y + 1.0)

    def grad_log_prob(self, y, f):
        """``y - exp(f)``.

        Parameters
        ----------
        y : array-like
            Counts.
        f : ndarray
            Log rates.

        Returns
        -------
        ndarray

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Poisson
        >>> Poisson().grad_log_prob(np.array([1.0]), np.array([0.0]))
        array([0.])
        """
        return np.asarray(y, dtype=np.float64) - np.exp(f)

    def hess_diag_log_prob(self, y, f):
        """``-exp(f)``, broadcast to the shape of ``y`` and ``f``.

        Parameters
        ----------
        y : array-like
            Counts.
        f : ndarray
            Log rates.

        Returns
        -------
        ndarray

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Poisson
        >>> Poisson().hess_diag_log_prob(np.array([5.0]), np.array([0.0]))
        array([-1.])
        """
        shape = np.broadcast_shapes(np.shape(y), np.shape(f))
        return np.broadcast_to(-np.exp(f), shape).copy()

    def expected_log_prob(self, y, mu, var, grad=False):
        """Closed form ``y mu - exp(mu + var / 2) - log(y!)``.

        Parameters
        ----------
        y : array-like
            Counts.
        mu : array-like
            Latent means (log-exposure included).
        var : array-like
            Latent variances, non-negative.
        grad : bool, default=False
            Also return the gradients in ``mu`` and ``var``.

        Returns
        -------
        elp : ndarray
        d_mu, d_var : ndarray
            Only when ``grad`` is true.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Poisson
        >>> elp, d_mu, d_var = Poisson().expected_log_prob(
        ...     np.array([1.0]), np.array([0.0]), np.array([0.0]), grad=True)
        >>> elp, d_mu, d_var
        (array([-1.]), array([0.]), array([-0.5]))
        """
        y, mu, var = self._moments(y, mu, var)
        mean_rate = np.exp(mu + 0.5 * var)
        elp = y * mu - mean_rate - gammaln(y + 1.0)
        if not grad:
            return elp
        return elp, y - mean_rate, -0.5 * mean_rate

    def predictive(self, mu, var):
        """Predictive mean count ``exp(mu + var / 2)``.

        Parameters
        ----------
        mu : array-like
            Latent means (log-exposure included).
        var : array-like
            Latent variances, non-negative.

        Returns
        -------
        ndarray

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Poisson
        >>> Poisson().predictive(np.array([0.0]), np.array([0.0]))
        array([1.])
        """
        _, mu, var = self._moments(0.0, mu, var)
        return np.exp(mu + 0.5 * var)
