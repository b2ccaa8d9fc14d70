"""Gaussian observation noise, with every expectation in closed form."""

import numbers

import numpy as np

from ._base import Likelihood

__all__ = ["Gaussian"]

_LOG_2PI = np.log(2.0 * np.pi)


class Gaussian(Likelihood):
    """Gaussian likelihood ``y = f + e``, ``e ~ N(0, noise_variance)``.

    Parameters
    ----------
    noise_variance : float, default=1.0
        Variance of the observation noise, positive. Samplers that treat it
        as a parameter work on ``log(noise_variance)`` and use
        :meth:`grad_log_noise`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.likelihoods import Gaussian
    >>> lik = Gaussian(noise_variance=0.1)
    >>> mean, var = lik.predictive(np.array([1.0]), np.array([0.5]))
    >>> mean, var
    (array([1.]), array([0.6]))
    """

    def __init__(self, noise_variance=1.0):
        self.noise_variance = noise_variance
        self._validate()

    def _validate(self):
        value = self.noise_variance
        if (
            not isinstance(value, numbers.Real)
            or isinstance(value, bool)
            or not np.isfinite(value)
            or value <= 0
        ):
            raise ValueError(
                f"noise_variance must be a positive finite number; got {value!r}."
            )

    def log_prob(self, y, f):
        """Elementwise ``log N(y_i; f_i, noise_variance)``.

        Parameters
        ----------
        y : array-like
            Observations.
        f : ndarray
            Latent values, broadcasting against ``y``.

        Returns
        -------
        ndarray

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> np.round(Gaussian().log_prob(np.array([0.0]), np.array([0.0])), 6)
        array([-0.918939])
        """
        s2 = float(self.noise_variance)
        r = np.asarray(y, dtype=np.float64) - f
        return -0.5 * (_LOG_2PI + np.log(s2) + r * r / s2)

    def grad_log_prob(self, y, f):
        """``(y - f) / noise_variance``.

        Parameters
        ----------
        y : array-like
            Observations.
        f : ndarray
            Latent values.

        Returns
        -------
        ndarray

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> Gaussian(0.5).grad_log_prob(np.array([1.0]), np.array([0.0]))
        array([2.])
        """
        return (np.asarray(y, dtype=np.float64) - f) / float(self.noise_variance)

    def hess_diag_log_prob(self, y, f):
        """``-1 / noise_variance``, broadcast to the shape of ``y - f``.

        Parameters
        ----------
        y : array-like
            Observations.
        f : ndarray
            Latent values.

        Returns
        -------
        ndarray

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> Gaussian(0.5).hess_diag_log_prob(np.zeros(2), np.zeros(2))
        array([-2., -2.])
        """
        shape = np.broadcast_shapes(np.shape(y), np.shape(f))
        return np.full(shape, -1.0 / float(self.noise_variance))

    def expected_log_prob(self, y, mu, var, grad=False):
        """Closed form ``-1/2 [log(2 pi s2) + ((y - mu)^2 + var) / s2]``.

        Parameters
        ----------
        y : array-like
            Observations.
        mu : array-like
            Latent means.
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
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> elp, d_mu, d_var = Gaussian(1.0).expected_log_prob(
        ...     np.array([1.0]), np.array([0.0]), np.array([1.0]), grad=True)
        >>> d_mu, d_var
        (array([1.]), array([-0.5]))
        """
        y, mu, var = self._moments(y, mu, var)
        s2 = float(self.noise_variance)
        r = y - mu
        elp = -0.5 * (_LOG_2PI + np.log(s2) + (r * r + var) / s2)
        if not grad:
            return elp
        return elp, r / s2, np.full(elp.shape, -0.5 / s2)

    def grad_log_noise(self, y, mu, var=0.0):
        """Derivative of :meth:`expected_log_prob` in ``log(noise_variance)``.

        ``-1/2 + ((y - mu)^2 + var) / (2 s2)`` per point. With ``var = 0``
        it is the derivative of :meth:`log_prob` at ``f = mu``.

        Parameters
        ----------
        y : array-like
            Observations.
        mu : array-like
            Latent means.
        var : array-like, default=0.0
            Latent variances, non-negative.

        Returns
        -------
        ndarray
            Per-point derivative; sum it for the total.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> Gaussian(1.0).grad_log_noise(np.array([2.0]), np.array([0.0]))
        array([1.5])
        """
        y, mu, var = self._moments(y, mu, var)
        r = y - mu
        return -0.5 + 0.5 * (r * r + var) / float(self.noise_variance)

    def predictive(self, mu, var):
        """Predictive mean and variance of ``y``: ``mu`` and ``var + s2``.

        Parameters
        ----------
        mu : array-like
            Latent means.
        var : array-like
            Latent variances.

        Returns
        -------
        mean : ndarray
        variance : ndarray

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> Gaussian(1.0).predictive(np.array([0.0]), np.array([1.0]))
        (array([0.]), array([2.]))
        """
        mu = np.asarray(mu, dtype=np.float64)
        var = np.asarray(var, dtype=np.float64)
        mu, var = np.broadcast_arrays(mu, var)
        return mu.copy(), var + float(self.noise_variance)

    def log_predictive_density(self, y, mu, var):
        """Closed form ``log N(y; mu, var + s2)``.

        Parameters
        ----------
        y : array-like
            Observations.
        mu : array-like
            Latent means.
        var : array-like
            Latent variances, non-negative.

        Returns
        -------
        ndarray

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> lpd = Gaussian(1.0).log_predictive_density(
        ...     np.array([0.0]), np.array([0.0]), np.array([1.0]))
        >>> np.round(lpd, 6)  # log N(0; 0, 2)
        array([-1.265512])
        """
        y, mu, var = self._moments(y, mu, var)
        total = var + float(self.noise_variance)
        r = y - mu
        return -0.5 * (_LOG_2PI + np.log(total) + r * r / total)
