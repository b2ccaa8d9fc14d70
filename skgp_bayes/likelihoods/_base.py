"""The interface every likelihood implements, with Gauss-Hermite defaults."""

import inspect

import numpy as np
from scipy.special import logsumexp

from ._quadrature import gauss_hermite

__all__ = ["Likelihood"]

# Below this latent variance the derivative of the Gauss-Hermite rule in the
# variance, sum(w g(mu + s x) x) / (2 s), loses digits to cancellation; there
# the rule's own s -> 0 limit, E[g'] / 2, is used instead. The two differ by
# O(var) times a fourth derivative, far below the cancellation error.
SMALL_VAR = 1e-10


class Likelihood:
    """Base class for observation models ``p(y | f)``.

    Subclasses with one latent function per point (``n_latent == 1``)
    implement :meth:`log_prob`, :meth:`grad_log_prob` and
    :meth:`hess_diag_log_prob` elementwise (inputs broadcast against each
    other); the expectations under ``N(mu, var)`` then default to a
    Gauss-Hermite rule with ``n_quadrature`` nodes. Subclasses override them
    where a closed form exists. Multi-latent subclasses
    (``n_latent == C``) take latent arrays of shape ``(n, C)`` and override
    every expectation.

    Parameters
    ----------
    n_quadrature : int, default=20
        Number of Gauss-Hermite nodes for expectations without a closed form.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.likelihoods import Likelihood
    >>> class Laplace(Likelihood):
    ...     def log_prob(self, y, f):
    ...         return -np.abs(np.asarray(y) - f) - np.log(2.0)
    >>> lik = Laplace()
    >>> elp = lik.expected_log_prob(np.zeros(1), np.zeros(1), np.zeros(1))
    >>> np.round(elp, 4)
    array([-0.6931])
    """

    #: Number of latent functions per observation.
    n_latent = 1

    #: Whether ``log p(y | f)`` is concave in ``f``; subclasses that set it
    #: get the adaptive rule in :meth:`log_predictive_density`.
    log_concave = False

    def __init__(self, n_quadrature=20):
        self.n_quadrature = n_quadrature
        self._validate()

    # -- parameter plumbing (scikit-learn's clone and set_params use these) --

    def _validate(self):
        if getattr(self, "n_quadrature", None) is not None:
            gauss_hermite(self.n_quadrature)

    @classmethod
    def _param_names(cls):
        signature = inspect.signature(cls.__init__)
        return sorted(
            name
            for name, p in signature.parameters.items()
            if name != "self" and p.kind == p.POSITIONAL_OR_KEYWORD
        )

    def get_params(self, deep=True):
        """Constructor parameters of this likelihood.

        Parameters
        ----------
        deep : bool, default=True
            Ignored; likelihoods hold no nested objects.

        Returns
        -------
        params : dict

        Examples
        --------
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> Gaussian(noise_variance=0.5).get_params()
        {'noise_variance': 0.5}
        """
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor parameters and validate them.

        Parameters
        ----------
        **params : dict
            New values, by constructor parameter name.

        Returns
        -------
        self : Likelihood

        Examples
        --------
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> Gaussian().set_params(noise_variance=0.1).noise_variance
        0.1
        """
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for {type(self).__name__}; "
                    f"valid parameters are {valid}."
                )
            setattr(self, name, value)
        self._validate()
        return self

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # -- pointwise log density ----------------------------------------------

    def log_prob(self, y, f):
        """Elementwise ``log p(y_i | f_i)``.

        Parameters
        ----------
        y : array-like
            Observations.
        f : ndarray
            Latent values, broadcasting against ``y``.

        Returns
        -------
        ndarray
            Log densities (log probabilities for discrete ``y``).

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> float(Bernoulli().log_prob(np.array([1.0]), np.array([0.0]))[0])
        -0.6931471805599453
        """
        raise NotImplementedError

    def grad_log_prob(self, y, f):
        """Derivative of :meth:`log_prob` in ``f``, elementwise.

        Parameters
        ----------
        y : array-like
            Observations.
        f : ndarray
            Latent values.

        Returns
        -------
        ndarray of the broadcast shape of ``y`` and ``f``

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Poisson
        >>> Poisson().grad_log_prob(np.array([3.0]), np.array([0.0]))
        array([2.])
        """
        raise NotImplementedError

    def hess_diag_log_prob(self, y, f):
        """Second derivative of :meth:`log_prob` in ``f``, elementwise.

        Parameters
        ----------
        y : array-like
            Observations.
        f : ndarray
            Latent values.

        Returns
        -------
        ndarray of the broadcast shape of ``y`` and ``f``

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> Gaussian(noise_variance=0.5).hess_diag_log_prob(
        ...     np.array([1.0]), np.array([0.0]))
        array([-2.])
        """
        raise NotImplementedError

    # -- expectations under N(mu, var) ---------------------------------------

    @staticmethod
    def _moments(y, mu, var):
        y = np.asarray(y, dtype=np.float64)
        mu = np.asarray(mu, dtype=np.float64)
        var = np.asarray(var, dtype=np.float64)
        if np.any(var < 0):
            raise ValueError("var must be non-negative.")
        return np.broadcast_arrays(y, mu, var)

    def _nodes(self, mu, var):
        x, w = gauss_hermite(self.n_quadrature)
        scale = np.sqrt(var)
        return mu[..., None] + scale[..., None] * x, x, w, scale

    def expected_log_prob(self, y, mu, var, grad=False):
        """``E[log p(y_i | f_i)]`` under ``f_i ~ N(mu_i, var_i)``.

        The default is a Gauss-Hermite rule; its gradients are the exact
        derivatives of the rule (so they agree with finite differences of
        the returned value), except below ``var = 1e-10``, where the
        rule's own limit ``E[d2 log p / df2] / 2`` is used for the variance
        derivative.

        Parameters
        ----------
        y : array-like
            Observations.
        mu : array-like
            Latent means, broadcasting against ``y``.
        var : array-like
            Latent variances, non-negative.
        grad : bool, default=False
            Also return the gradients in ``mu`` and ``var``.

        Returns
        -------
        elp : ndarray
            Expected log density per point.
        d_mu, d_var : ndarray
            Only when ``grad`` is true; same shape as ``elp``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> lik = Bernoulli(link="probit")
        >>> elp, d_mu, d_var = lik.expected_log_prob(
        ...     np.array([1.0]), np.array([0.5]), np.array([0.2]), grad=True)
        >>> bool(d_mu[0] > 0), bool(d_var[0] < 0)
        (True, True)
        """
        y, mu, var = self._moments(y, mu, var)
        f, x, w, scale = self._nodes(mu, var)
        yq = y[..., None]
        elp = self.log_prob(yq, f) @ w
        if not grad:
            return elp
        g = self.grad_log_prob(yq, f)
        d_mu = g @ w
        small = var < SMALL_VAR
        with np.errstate(divide="ignore", invalid="ignore"):
            d_var = (g @ (w * x)) / (2.0 * scale)
        if np.any(small):
            h = self.hess_diag_log_prob(yq, f) @ w
            d_var = np.where(small, 0.5 * h, d_var)
        return elp, d_mu, d_var

    def predictive(self, mu, var):
        """Predictive mean of ``y`` under ``f ~ N(mu, var)``.

        Parameters
        ----------
        mu : array-like
            Latent means.
        var : array-like
            Latent variances.

        Returns
        -------
        ndarray
            See the subclass for what is returned.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Poisson
        >>> Poisson().predictive(np.array([0.0]), np.array([2.0]))
        array([2.71828183])
        """
        raise NotImplementedError

    def log_predictive_density(self, y, mu, var):
        """``log of the integral of p(y | f) N(f; mu, var) df``, per point.

        A Gauss-Hermite rule on ``p(y | f)``, summed in log space. For
        log-concave likelihoods (``log_concave = True``) the rule is
        adaptive: centred at the mode of ``p(y | f) N(f; mu, var)`` and
        scaled by its curvature there (Liu and Pierce, 1994), which keeps
        it accurate when the likelihood is much narrower than ``N(mu, var)``
        or far from ``mu``, as for large Poisson counts. Accuracy still
        falls for very wide marginals (``var`` of 10 or more); raise
        ``n_quadrature`` there.

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
            Log predictive density per point.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> lpd = Bernoulli().log_predictive_density(
        ...     np.array([1.0]), np.array([0.0]), np.array([1.0]))
        >>> np.round(lpd, 6)  # log(1/2) by symmetry
        array([-0.693147])
        """
        y, mu, var = self._moments(y, mu, var)
        x, w = gauss_hermite(self.n_quadrature)
        if not self.log_concave:
            f = mu[..., None] + np.sqrt(var)[..., None] * x
            return logsumexp(self.log_prob(y[..., None], f) + np.log(w), axis=-1)
        positive = var > 0
        # Zero variance makes the integral log p(y | mu); a unit stand-in
        # keeps the arithmetic finite and np.where discards it.
        v = np.where(positive, var, 1.0)
        centre, scale = self._laplace_approximation(y, mu, v)
        f = centre[..., None] + scale[..., None] * x
        # log p(y|f) + log N(f; mu, v) + log(scale sqrt(2 pi)) + x^2 / 2, with
        # the constants cancelled before they are formed.
        log_terms = (
            self.log_prob(y[..., None], f)
            + np.log(scale / np.sqrt(v))[..., None]
            - 0.5 * ((f - mu[..., None]) ** 2 / v[..., None] - x * x)
            + np.log(w)
        )
        lpd = logsumexp(log_terms, axis=-1)
        if np.all(positive):
            return lpd
        return np.where(positive, lpd, self.log_prob(y, mu))

    def _laplace_approximation(self, y, mu, var, max_iter=200):
        """Mode and curvature scale of ``p(y | f) N(f; mu, var)``.

        Safeguarded Newton on the slope of the concave log integrand.
        Log-concavity gives a bracket for free: ``g = d log p / df`` is
        non-increasing, so the mode lies between ``mu`` and
        ``mu + var * g(mu)``. Newton steps that leave the bracket, or fail
        to halve the previous step, are replaced by bisection; plain Newton
        cycles for the logistic likelihood under wide ``N(mu, var)``.
        """
        g0 = self.grad_log_prob(y, mu)
        lo = np.minimum(mu, mu + var * g0)
        hi = np.maximum(mu, mu + var * g0)
        f = mu.copy()
        last_step = hi - lo
        # The bracket can reach where exp(f) overflows; the resulting
        # infinite slopes still carry the right sign, which is all that the
        # bisection uses.
        with np.errstate(over="ignore", invalid="ignore"):
            for _ in range(max_iter):
                slope = self.grad_log_prob(y, f) - (f - mu) / var
                curvature = 1.0 / var - self.hess_diag_log_prob(y, f)
                lo = np.where(slope > 0, f, lo)
                hi = np.where(slope > 0, hi, f)
                newton = f + slope / curvature
                bisect = (
                    ~np.isfinite(newton)
                    | (newton <= lo)
                    | (newton >= hi)
                    | (np.abs(newton - f) > 0.5 * np.abs(last_step))
                )
                f_new = np.where(bisect, 0.5 * (lo + hi), newton)
                last_step = f_new - f
                f = f_new
                done = (np.abs(last_step) <= 1e-12 * (1.0 + np.abs(f))) | (
                    hi - lo <= 1e-12 * (1.0 + np.abs(f))
                )
                if np.all(done):
                    break
        curvature = 1.0 / var - self.hess_diag_log_prob(y, f)
        return f, 1.0 / np.sqrt(curvature)
