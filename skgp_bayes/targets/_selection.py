"""The selection side of the selective bounds: the Bernoulli point process
over the candidate inducing inputs, with its prior, and the greedy choice of
candidates spread by conditional variance."""

import numpy as np
from scipy.special import expit, gammaln, logsumexp


def _softplus(x):
    return np.logaddexp(0.0, x)


def log_prior_normaliser(n_candidates, alpha, power=2):
    """``log sum_{j=0}^K binom(K, j) exp(-alpha j^power)``, i.e. ``-log C``.

    Parameters
    ----------
    n_candidates : int
        ``K``, the number of candidates.
    alpha : float
        Strength of the prior (non-negative).
    power : {1, 2}, default=2
        Exponent of the cardinality in the prior.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets.selective import log_prior_normaliser
    >>> bool(np.isclose(log_prior_normaliser(3, 0.0), np.log(8.0)))  # 2^K subsets
    True
    """
    j = np.arange(int(n_candidates) + 1, dtype=np.float64)
    log_binom = (
        gammaln(n_candidates + 1.0) - gammaln(j + 1.0) - gammaln(n_candidates - j + 1.0)
    )
    return float(logsumexp(log_binom - alpha * j**power))


def greedy_variance_points(adapter, theta, X, n_points):
    """Rows of ``X`` chosen one by one where the conditional variance is largest.

    The greedy conditional-variance selection recommended by Burt,
    Rasmussen and van der Wilk (2020, JMLR): each step adds the input whose
    prior variance given the points already chosen is largest, the pivot
    rule of a partial pivoted Cholesky factorisation of ``K(X, X)``. The
    remaining variances sum to ``t = tr(K - Q)``, the trace of the Nystrom
    residual; the collapsed bound carries ``-t / (2 s2)``, and their bounds
    on the gap to the exact log marginal likelihood shrink with ``t``. A
    random subset leaves ``t`` large where inputs are clustered or skewed
    (a few points of a dense cluster, none of a sparse region); this rule
    spreads the points over the inputs as the kernel sees them. Costs
    ``O(n k)`` kernel entries and ``O(n k^2)`` arithmetic for ``k`` points.

    Parameters
    ----------
    adapter : KernelAdapter
    theta : ndarray of shape (n_params,)
        Log-scale hyperparameters of the kernel that measures the variance.
    X : ndarray of shape (n, d)
    n_points : int
        Number of rows to choose (at most ``n``); fewer are returned once
        the residual variance is exhausted (zero to round-off).

    Returns
    -------
    index : ndarray of int, shape (k,)
        Chosen rows, in the order chosen.
    residual_trace : ndarray of shape (k,)
        ``tr(K - Q)`` after each choice.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets.selective import greedy_variance_points
    >>> X = np.array([[0.0], [0.01], [5.0], [10.0]])
    >>> adapter = KernelAdapter(RBF(1.0))
    >>> index, rest = greedy_variance_points(adapter, adapter.kernel.theta, X, 3)
    >>> sorted(index.tolist())  # the near-duplicate 0.01 is left out
    [0, 2, 3]
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    k_max = int(min(max(int(n_points), 0), n))
    d = np.maximum(adapter.diag(theta, X), 0.0)
    floor = 1e-12 * float(d.max()) if n else 0.0
    L = np.zeros((k_max, n))
    index, residual = [], []
    for k in range(k_max):
        i = int(np.argmax(d))
        if not d[i] > floor:
            break
        column = adapter.cross(theta, X[i : i + 1], X)[0]
        # the pivot from the cross kernel, so that a WhiteKernel's variance
        # (in the diagonal, not in the cross kernel) cannot enter the factor
        pivot = column[i] - L[:k, i] @ L[:k, i]
        if not pivot > floor:
            break
        row = (column - L[:k, i] @ L[:k]) / np.sqrt(pivot)
        L[k] = row
        d = np.maximum(d - row * row, 0.0)
        d[i] = 0.0
        index.append(i)
        residual.append(float(d.sum()))
    return np.asarray(index, dtype=np.intp), np.asarray(residual)


class BernoulliPointProcess:
    """Independent inclusion of each candidate, and its prior over counts.

    See the module notes for ``q``, the prior and the closed-form
    divergence. All methods take the logits ``l`` (shape ``(K,)``), never
    the probabilities, so gradients stay finite when ``lambda`` saturates.

    Parameters
    ----------
    n_candidates : int
        ``K``, the number of candidate inducing inputs.
    alpha : float
        Prior strength: ``p(b)`` is proportional to ``exp(-alpha |b|^power)``.
    power : {1, 2}, default=2
        ``2`` is the seed paper's squared cardinality.

    Attributes
    ----------
    log_normaliser : float
        ``log(1 / C)``, a constant of the divergence.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets.selective import BernoulliPointProcess
    >>> process = BernoulliPointProcess(4, alpha=0.1)
    >>> logits = np.zeros(4)
    >>> process.cardinality_moments(logits)  # E|b| and Var|b| at lambda = 1/2
    (2.0, 1.0)
    >>> kl, grad = process.kl_and_grad(logits)
    >>> grad.shape
    (4,)
    """

    def __init__(self, n_candidates, alpha, power=2):
        n_candidates = int(n_candidates)
        if n_candidates < 1:
            raise ValueError(f"n_candidates must be at least 1; got {n_candidates}.")
        alpha = float(alpha)
        if not np.isfinite(alpha) or alpha < 0:
            raise ValueError(
                f"alpha must be a finite non-negative number; got {alpha}."
            )
        if power not in (1, 2):
            raise ValueError(f"power must be 1 or 2; got {power!r}.")
        self.n_candidates = n_candidates
        self.alpha = alpha
        self.power = int(power)
        self.log_normaliser = log_prior_normaliser(n_candidates, alpha, power)

    def _check(self, logits):
        logits = np.asarray(logits, dtype=np.float64)
        if logits.shape != (self.n_candidates,):
            raise ValueError(
                f"logits must have shape ({self.n_candidates},); got {logits.shape}."
            )
        return logits

    def probabilities(self, logits):
        """Inclusion probabilities ``lambda = sigmoid(logits)``.

        Parameters
        ----------
        logits : ndarray of shape (K,)

        Returns
        -------
        ndarray of shape (K,)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.selective import BernoulliPointProcess
        >>> BernoulliPointProcess(2, 0.1).probabilities(np.zeros(2))
        array([0.5, 0.5])
        """
        return expit(self._check(logits))

    def sample(self, logits, n_samples, rng):
        """Draws of the inclusion mask ``b``.

        Parameters
        ----------
        logits : ndarray of shape (K,)
        n_samples : int
        rng : numpy.random.Generator or RandomState

        Returns
        -------
        ndarray of bool, shape (n_samples, K)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.selective import BernoulliPointProcess
        >>> rng = np.random.default_rng(0)
        >>> BernoulliPointProcess(3, 0.1).sample(np.full(3, 50.0), 2, rng)
        array([[ True,  True,  True],
               [ True,  True,  True]])
        """
        lam = self.probabilities(logits)
        return rng.random((int(n_samples), self.n_candidates)) < lam

    def log_prob(self, b, logits):
        """``log q_lambda(b)`` for one mask or a stack of masks.

        Parameters
        ----------
        b : array-like of shape (K,) or (S, K)
            0/1 (or boolean) inclusion masks.
        logits : ndarray of shape (K,)

        Returns
        -------
        float or ndarray of shape (S,)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.selective import BernoulliPointProcess
        >>> float(BernoulliPointProcess(2, 0.1).log_prob([1, 0], np.zeros(2)))
        -1.3862943611198906
        """
        logits = self._check(logits)
        b = np.asarray(b, dtype=np.float64)
        # log sigmoid(l) = -softplus(-l); log(1 - sigmoid(l)) = -softplus(l)
        return np.sum(b * logits - _softplus(logits), axis=-1)

    def score(self, b, logits):
        """``d log q_lambda(b) / d logits = b - lambda``.

        Parameters
        ----------
        b : array-like of shape (K,) or (S, K)
        logits : ndarray of shape (K,)

        Returns
        -------
        ndarray, the shape of ``b``

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.selective import BernoulliPointProcess
        >>> BernoulliPointProcess(2, 0.1).score([1, 0], np.zeros(2))
        array([ 0.5, -0.5])
        """
        return np.asarray(b, dtype=np.float64) - self.probabilities(logits)

    def log_prior(self, b):
        """``log p(b) = -alpha |b|^power - log(1 / C)``.

        Parameters
        ----------
        b : array-like of shape (K,) or (S, K)

        Returns
        -------
        float or ndarray of shape (S,)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.selective import BernoulliPointProcess
        >>> bool(np.isclose(BernoulliPointProcess(1, 0.0).log_prior([1]), np.log(0.5)))
        True
        """
        count = np.sum(np.asarray(b, dtype=np.float64), axis=-1)
        return -self.alpha * count**self.power - self.log_normaliser

    def cardinality_moments(self, logits):
        """Mean and variance of ``|b|`` (Poisson-binomial).

        Parameters
        ----------
        logits : ndarray of shape (K,)

        Returns
        -------
        mean, variance : float

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.selective import BernoulliPointProcess
        >>> BernoulliPointProcess(2, 0.1).cardinality_moments(np.zeros(2))
        (1.0, 0.5)
        """
        lam = self.probabilities(logits)
        return float(np.sum(lam)), float(np.sum(lam * (1.0 - lam)))

    def kl_and_grad(self, logits):
        """Closed-form ``KL(q_lambda || p)`` and its gradient in the logits.

        Parameters
        ----------
        logits : ndarray of shape (K,)

        Returns
        -------
        kl : float
        grad : ndarray of shape (K,)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.selective import BernoulliPointProcess
        >>> kl, grad = BernoulliPointProcess(1, 0.0).kl_and_grad(np.zeros(1))
        >>> round(kl, 12), grad  # q equals the flat prior over {}, {z}
        (0.0, array([0.]))
        """
        logits = self._check(logits)
        lam = expit(logits)
        log_lam = -_softplus(-logits)
        log_one_minus = -_softplus(logits)
        neg_entropy = float(np.sum(lam * log_lam + (1.0 - lam) * log_one_minus))
        mean = float(np.sum(lam))
        dlam = lam * (1.0 - lam)
        if self.power == 2:
            moment = float(np.sum(dlam)) + mean**2
            dmoment = 1.0 - 2.0 * lam + 2.0 * mean
        else:
            moment = mean
            dmoment = np.ones_like(lam)
        kl = neg_entropy + self.alpha * moment + self.log_normaliser
        # d(neg_entropy)/dlambda_k = log(lambda_k / (1 - lambda_k)) = l_k
        grad = dlam * (logits + self.alpha * dmoment)
        return kl, grad

    def __repr__(self):
        return (
            f"BernoulliPointProcess(n_candidates={self.n_candidates}, "
            f"alpha={self.alpha}, power={self.power})"
        )
