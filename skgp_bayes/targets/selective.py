"""Bernoulli point process over candidate inducing inputs (Uhrenholt et al.).

Variational process
-------------------
Each of ``K`` candidate inducing inputs is kept independently:
``q_lambda(b) = prod_k lambda_k^b_k (1 - lambda_k)^(1 - b_k)`` with
``lambda_k = sigmoid(l_k)``. The logits ``l`` are unconstrained, so an
optimiser needs no bounds; ``d log q / d l_k = b_k - lambda_k``.

Prior
-----
``p(b) = C exp(-alpha |b|^power)`` with ``|b| = sum_k b_k``. The seed paper
uses the squared cardinality (``power=2``) because prediction costs
``O(|Z|^2)``; ``power=1`` (a Poisson-type penalty on the count) is the other
choice offered. The normaliser sums over *every* subset, the empty one
included: ``1 / C = sum_{j=0}^K binom(K, j) exp(-alpha j^power)``. (The seed
paper writes the sum from ``j = 1``; but ``q`` gives the empty set positive
mass, so a prior without it would make the divergence infinite.)

Divergence (seed 004, section 3.2)
----------------------------------
``|b|`` under ``q`` is Poisson-binomial with ``E = sum lambda_k`` and
``V = sum lambda_k (1 - lambda_k)``, hence ``E|b|^2 = V + E^2`` and

``KL(q || p) = sum_k [lambda_k log lambda_k + (1 - lambda_k) log(1 - lambda_k)]
+ alpha E|b|^power + log(1 / C)``.

(The seed's entropy has ``log lambda_k`` twice, a misprint.) In the logits,
with ``dlambda_k / dl_k = lambda_k (1 - lambda_k)``:

``dKL/dl_k = lambda_k (1 - lambda_k) [l_k + alpha (1 - 2 lambda_k + 2 E)]``
for ``power=2`` and ``lambda_k (1 - lambda_k) (l_k + alpha)`` for
``power=1``.

The SVGP bound of one subset (Gaussian likelihood)
--------------------------------------------------
For a kept subset ``Z`` of the candidates, ``L(Z)`` is the SVGP bound
(:class:`~skgp_bayes.targets.svgp.SVGPBound`) at the *optimal* whitened
``q(v) = N(m, S)``: with ``A = R^-1 K(Z, X)`` and noise variance ``s2``,

``S^-1 = I + A A' / s2``, ``m = S A y / s2``

(Titsias' collapsed bound; the seed paper's "collapsed" case). Because
``q`` maximises the bound, the envelope theorem makes the bound's own
gradient in ``[theta, log s2]`` at that ``q`` the exact gradient of
``L(Z)``: no further derivation is needed. The empty subset leaves
``q(f)`` at the prior: ``L = sum_i -1/2 log(2 pi s2) - (y_i^2 + k_ii) / (2 s2)``.

Non-Gaussian likelihoods: shared variational parameters
-------------------------------------------------------
Without a closed-form optimum, one whitened ``q(v*) = N(m*, L* L*')`` over
all ``K`` candidates is learned, and a subset ``I`` uses
``q(v_I) = N(m*_I, L*_II L*_II')`` (the sub-vector and the sub-block of the
lower-triangular factor, itself lower triangular with a positive
diagonal). Any ``q`` per subset gives a valid bound ``L(Z)``, so the
objective stays a lower bound; the gradient of ``L(Z)`` in the shared
parameters is the subset bound's gradient scattered back to the entries
it read.
"""

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.linalg.blas import dtrmm as _dtrmm
from scipy.linalg.lapack import dpotrf as _dpotrf
from scipy.linalg.lapack import dtrtri as _dtrtri

from ..exceptions import NotPSDError
from ..linalg._numba_ops import flush_tiny
from ..linalg.diagonal import add_to_diagonal
from ..linalg.triangle import lower_triangle_indices
from ._selection import (
    BernoulliPointProcess,
    greedy_variance_points,
    log_prior_normaliser,
)
from ._sparse_shared import (
    MIN_VAR,
    add_jitter_weight,
    batch_indices,
    factor_of_gram,
    inducing_factor,
    kernel_weights,
    project,
    project_cross,
    with_jitter_weight,
)
from .sparse import JITTER
from .svgp import SVGPBound

__all__ = [
    "BernoulliPointProcess",
    "SharedSubsetBound",
    "SubsetBound",
    "greedy_variance_points",
    "log_prior_normaliser",
]

_LOG_2PI = float(np.log(2.0 * np.pi))


def _factor(matrix):
    """Lower Cholesky factor, no jitter; NotPSDError when it does not exist."""
    factor, info = _dpotrf(matrix, lower=1, clean=1, overwrite_a=1)
    if info != 0 or not np.all(np.isfinite(np.diagonal(factor))):
        raise NotPSDError(
            "The kernel matrix of a subset of candidates is not positive definite."
        )
    return factor


def _inverse_factor(matrix):
    """Inverse of the lower Cholesky factor of ``matrix``, zero above."""
    return _dtrtri(_factor(matrix), lower=1, overwrite_c=1)[0]


class SubsetBound:
    """SVGP bound of a Gaussian-likelihood GP on a subset of candidates.

    See the module notes: the bound of each subset is evaluated at its
    optimal ``q(v)``, which makes the value Titsias' collapsed bound and the
    gradient in the hyperparameters exact.

    Parameters
    ----------
    adapter : KernelAdapter
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    candidates : ndarray of shape (K, d)
        Candidate inducing inputs; a subset is an index array into them.
    jitter : float, default=1e-6
        Relative diagonal jitter on ``K(Z, Z)``.
    prior_set : PriorSet or None, default=None
        Log prior of ``[kernel theta, log s2]``, added to every value and
        gradient (the bound then bounds the log joint density, and its
        maximum is a MAP estimate); ``None`` leaves the hyperparameters flat.

    Attributes
    ----------
    n_hyper : int
        Length of the hyperparameter vector ``[kernel theta, log s2]``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets.selective import SubsetBound
    >>> X = np.linspace(0, 5, 30)[:, None]
    >>> bound = SubsetBound(KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::3])
    >>> hyper = np.array([0.0, np.log(0.1)])
    >>> value, grad = bound.logp_and_grad(hyper, np.arange(4))
    >>> grad.shape
    (2,)
    """

    def __init__(self, adapter, X, y, candidates, jitter=JITTER, prior_set=None):
        self.adapter = adapter
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.candidates = np.ascontiguousarray(candidates, dtype=np.float64)
        self.jitter = float(jitter)
        self.prior_set = prior_set
        self.n_kernel_params = adapter.n_params
        self.n_hyper = self.n_kernel_params + 1

    def _split(self, hyper):
        hyper = np.asarray(hyper, dtype=np.float64)
        if hyper.shape != (self.n_hyper,):
            raise ValueError(
                f"hyper must have shape ({self.n_hyper},); got {hyper.shape}."
            )
        return hyper[: self.n_kernel_params], float(hyper[-1])

    def optimal_q(self, hyper, idx):
        """Optimal whitened ``q(v) = N(mean, L L')`` for the subset ``idx``.

        Parameters
        ----------
        hyper : ndarray of shape (n_hyper,)
            ``[kernel theta, log noise variance]``.
        idx : array-like of int
            Indices of the kept candidates (at least one).

        Returns
        -------
        mean : ndarray of shape (m,)
        L : ndarray of shape (m, m)
            Lower-triangular factor of the covariance.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets.selective import SubsetBound
        >>> X = np.linspace(0, 5, 30)[:, None]
        >>> bound = SubsetBound(KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::3])
        >>> mean, L = bound.optimal_q(np.array([0.0, -2.0]), [0, 2, 5])
        >>> mean.shape, L.shape
        ((3,), (3, 3))
        """
        theta, log_noise = self._split(hyper)
        Z = self.candidates[np.asarray(idx, dtype=np.intp)]
        R = inducing_factor(self.adapter, theta, Z, self.jitter)
        A, _, _ = project(self.adapter, theta, Z, self.X, R)
        return self._optimal_from_A(A, np.exp(log_noise))

    def _optimal_from_A(self, A, noise):
        m = A.shape[0]
        precision = A @ A.T / noise
        add_to_diagonal(precision, 1.0)
        factor = cho_factor(precision, lower=True, check_finite=False)
        mean = cho_solve(factor, A @ self.y / noise, check_finite=False)
        cov = cho_solve(factor, np.eye(m), check_finite=False)
        # the eigenvalues of cov lie in (0, 1]: its Cholesky needs no jitter
        L = np.linalg.cholesky(0.5 * (cov + cov.T))
        return mean, L

    def logp_and_grad(self, hyper, idx):
        """``L(Z)`` and its gradient in ``[kernel theta, log noise variance]``.

        Parameters
        ----------
        hyper : ndarray of shape (n_hyper,)
        idx : array-like of int
            Indices of the kept candidates; empty means no inducing points.

        Returns
        -------
        value : float
        grad : ndarray of shape (n_hyper,)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets.selective import SubsetBound
        >>> X = np.linspace(0, 5, 30)[:, None]
        >>> bound = SubsetBound(KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::3])
        >>> hyper = np.array([0.0, np.log(0.1)])
        >>> few = bound.logp_and_grad(hyper, [0])[0]
        >>> more = bound.logp_and_grad(hyper, np.arange(10))[0]
        >>> bool(more > few)  # more inducing points, a tighter bound
        True
        """
        idx = np.asarray(idx, dtype=np.intp).reshape(-1)
        mask = np.zeros((1, self.candidates.shape[0]), dtype=bool)
        mask[0, idx] = True
        values, grad = self.values_and_mean_grad(hyper, mask)
        return float(values[0]), grad

    # The name before every target shared logp_and_grad; public API.
    value_and_grad = logp_and_grad

    def values_and_mean_grad(self, hyper, masks):
        """``L(Z_s)`` of several subsets and the mean of their gradients.

        The kernel matrices of all candidates are computed once; each subset
        reads its blocks, and the gradients of all subsets are gathered into
        one pair of ``(K, K)`` and ``(K, n)`` weight matrices before the
        single contraction with the kernel's derivatives. A subset's own
        work is then ``O(n m^2 + m^3)`` dense algebra, the cost of its bound.

        Because the bound is Titsias' collapsed bound, it depends on
        ``A = R^-1 K(Z, X)`` only through ``A'A = K_fu K_uu^-1 K_uf``; with
        ``Abar = dL/dA`` from the bound at the optimal ``q(v)`` (envelope
        theorem), ``dL/dK_uf = R^-T Abar`` and
        ``dL/dK_uu = -sym(R^-T Abar A' R^-1) / 2``, with no Cholesky
        reverse pass.

        Parameters
        ----------
        hyper : ndarray of shape (n_hyper,)
        masks : array-like of bool, shape (S, K)
            One row per subset; an empty row means no inducing points.

        Returns
        -------
        values : ndarray of shape (S,)
        mean_grad : ndarray of shape (n_hyper,)
            Mean over the subsets of the gradient in ``[theta, log s2]``.

        Raises
        ------
        NotPSDError
            When ``K(Z, Z)`` of a subset is not positive definite.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets.selective import SubsetBound
        >>> X = np.linspace(0, 5, 30)[:, None]
        >>> bound = SubsetBound(KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::3])
        >>> masks = np.array([[True] * 5 + [False] * 5, [False] * 10])
        >>> values, grad = bound.values_and_mean_grad(np.array([0.0, -2.0]), masks)
        >>> values.shape, grad.shape
        ((2,), (2,))
        """
        values, grad = self._bound_values_and_mean_grad(hyper, masks)
        if self.prior_set is not None:
            prior_value, prior_grad = self.prior_set.log_prob(
                np.asarray(hyper, dtype=np.float64)
            )
            values += prior_value
            grad += prior_grad
        return values, grad

    def _bound_values_and_mean_grad(self, hyper, masks):
        """:meth:`values_and_mean_grad` without the log prior."""
        theta, log_noise = self._split(hyper)
        masks = np.asarray(masks, dtype=bool)
        K, n = self.candidates.shape[0], self.X.shape[0]
        if masks.ndim != 2 or masks.shape[1] != K:
            raise ValueError(f"masks must have shape (S, {K}); got {masks.shape}.")
        noise = float(np.exp(log_noise))
        Kcc = self.adapter.gram(theta, self.candidates)
        flush_tiny(Kcc)
        Kcf = self.adapter.cross(theta, self.candidates, self.X)
        flush_tiny(Kcf)
        kdiag = self.adapter.diag(theta, self.X)
        sums = {
            "cc": np.zeros((K, K)),
            "cf": np.zeros((K, n)),
            "kdiag": np.zeros(n),
            "noise": 0.0,
        }
        values = np.empty(masks.shape[0])
        for s, mask in enumerate(masks):
            values[s] = self._accumulate(
                np.flatnonzero(mask), Kcc, Kcf, kdiag, noise, log_noise, sums
            )
        grad = np.empty(self.n_hyper)
        if self.n_kernel_params:
            grad[:-1] = (
                self.adapter.grad_contract(theta, self.candidates, sums["cc"])
                + self.adapter.cross_grad_contract(
                    theta, self.X, self.candidates, np.ascontiguousarray(sums["cf"].T)
                )
                + self.adapter.diag_grad(theta, self.X).T @ sums["kdiag"]
            )
        grad[-1] = sums["noise"]
        return values, grad / masks.shape[0]

    def _accumulate(self, idx, Kcc, Kcf, kdiag, noise, log_noise, sums):
        """Bound of one subset; its gradient weights are added to ``sums``.

        LAPACK without SciPy's checks; the triangular factors are inverted
        and applied by products, quicker here than OpenBLAS's ``dtrsm``.
        """
        y = self.y
        if idx.size == 0:
            sq = y**2 + kdiag
            sums["kdiag"] -= 0.5 / noise
            sums["noise"] += float(np.sum(-0.5 + sq / (2.0 * noise)))
            return float(np.sum(-0.5 * (_LOG_2PI + log_noise) - sq / (2.0 * noise)))
        m = idx.size
        block = (idx[:, None] * Kcc.shape[0] + idx).ravel()
        Kuu = Kcc.ravel()[block].reshape(m, m)
        add_to_diagonal(Kuu, self.jitter * float(np.mean(np.diagonal(Kuu))))
        R_inv = _inverse_factor(Kuu)
        A = _dtrmm(1.0, R_inv, Kcf[idx], lower=1)
        gamma = kdiag - np.einsum("ji,ji->i", A, A)
        free = gamma > MIN_VAR
        gamma = np.where(free, gamma, MIN_VAR)
        # optimal whitened q(v): S^-1 = I + A A' / s2 = P P', mean = S A y / s2
        precision = (A @ A.T) / noise
        add_to_diagonal(precision, 1.0)
        P_inv = _inverse_factor(precision)
        W = _dtrmm(1.0, P_inv, A, lower=1)
        SA = _dtrmm(1.0, P_inv, W, lower=1, trans_a=1)
        mean = SA @ y / noise
        resid = y - mean @ A
        var = gamma + np.einsum("ji,ji->i", W, W)  # diag(A' S A)
        # log det S = 2 sum log diag(P^-1); tr S = |P^-1|_F^2
        kl = 0.5 * (
            float(np.sum(P_inv * P_inv))
            + float(mean @ mean)
            - m
            - 2.0 * float(np.sum(np.log(np.diagonal(P_inv))))
        )
        sq = resid**2 + var
        value = float(np.sum(-0.5 * (_LOG_2PI + log_noise) - sq / (2.0 * noise))) - kl
        # dL/dA at the optimal q: mean g_mu' - 2 A diag(gbar) + 2 S A diag(g_s)
        # with g_mu = resid / s2 and g_s = -1 / (2 s2) (gbar: g_s where free)
        gbar = np.where(free, -0.5 / noise, 0.0)
        Abar = np.outer(mean, resid / noise)
        Abar -= 2.0 * A * gbar
        Abar -= SA / noise
        # dL/dK_uf = R^-T Abar, and dL/dK_uu from it and B = R^-T A
        Kufbar = _dtrmm(1.0, R_inv, Abar, lower=1, trans_a=1)
        Kuubar = Kufbar @ _dtrmm(1.0, R_inv, A, lower=1, trans_a=1).T
        Kuubar = -0.25 * (Kuubar + Kuubar.T)
        add_jitter_weight(Kuubar, self.jitter)
        sums["cc"].ravel()[block] += Kuubar.ravel()
        sums["cf"][idx] += Kufbar
        sums["kdiag"] += gbar
        sums["noise"] += float(np.sum(-0.5 + sq / (2.0 * noise)))
        return value

    def value(self, hyper, idx):
        """``L(Z)`` alone (see :meth:`value_and_grad`).

        Parameters
        ----------
        hyper : ndarray of shape (n_hyper,)
        idx : array-like of int

        Returns
        -------
        float

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets.selective import SubsetBound
        >>> X = np.linspace(0, 5, 30)[:, None]
        >>> bound = SubsetBound(KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::3])
        >>> bool(np.isfinite(bound.value(np.array([0.0, -2.0]), [])))
        True
        """
        return self.logp_and_grad(hyper, idx)[0]


class SharedSubsetBound:
    """SVGP bound of a subset of candidates, with ``q`` shared by all subsets.

    See the module notes. The parameter vector is that of
    :class:`~skgp_bayes.targets.svgp.SVGPBound` on all candidates with fixed
    inducing inputs: ``[theta, m* (K,), packed L*]``.

    Parameters
    ----------
    adapter : KernelAdapter
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    candidates : ndarray of shape (K, d)
    likelihood : Likelihood
        Bernoulli, Gaussian, or a multi-latent one (Softmax, RobustMax):
        each of the ``C`` latents has its own ``q(v*_c)`` over all
        candidates, and a subset takes the same candidates from every one.
    jitter : float, default=1e-6
    learn_noise : bool or None, default=None
        Make a Gaussian likelihood's log noise variance a parameter, after
        ``theta``; None does so exactly when the likelihood is Gaussian.
    prior_set : PriorSet or None, default=None
        Log prior of the hyperparameters (the first ``n_hyper`` entries),
        added to every subset's bound: the bounds are then those of the
        joint density, maximised for MAP hyperparameters.

    Attributes
    ----------
    full : SVGPBound
        The bound on all candidates; defines the parameter layout.
    n_latent : int
        Number of latent functions ``C``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.targets.selective import SharedSubsetBound
    >>> X = np.linspace(-2, 2, 30)[:, None]
    >>> y = (X[:, 0] > 0).astype(float)
    >>> bound = SharedSubsetBound(KernelAdapter(RBF()), X, y, X[::3], Bernoulli())
    >>> params = bound.full.initial_params()
    >>> value, grad = bound.logp_and_grad(params, [0, 4, 7])
    >>> grad.shape == params.shape
    True
    """

    def __init__(
        self,
        adapter,
        X,
        y,
        candidates,
        likelihood,
        jitter=JITTER,
        learn_noise=None,
        prior_set=None,
    ):
        self.prior_set = prior_set
        self.full = SVGPBound(
            adapter,
            X,
            y,
            candidates,
            likelihood,
            learn_noise=learn_noise,
            learn_inducing=False,
            jitter=jitter,
            prior_set=prior_set,
        )
        self.n_latent = self.full.n_latent
        self.adapter = adapter
        self.likelihood = likelihood
        self.learn_noise = self.full.learn_noise
        self.jitter = float(jitter)
        self.n_params = self.full.n_params
        self.n_hyper = self.full.n_hyper
        self.blocks = self.full.blocks

    def subset_index(self, idx):
        """Positions in the full vector of the subset bound's parameters.

        Parameters
        ----------
        idx : array-like of int
            Sorted, distinct candidate indices.

        Returns
        -------
        ndarray of int
            ``full_params[index]`` is the subset bound's parameter vector.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.selective import SharedSubsetBound
        >>> X = np.linspace(-2, 2, 10)[:, None]
        >>> bound = SharedSubsetBound(KernelAdapter(RBF()), X, X[:, 0] > 0, X[:3],
        ...                           Bernoulli())
        >>> bound.subset_index([0, 2])  # theta, m_0, m_2, L_00, L_20, L_22
        array([0, 1, 3, 4, 7, 9])
        """
        idx = np.asarray(idx, dtype=np.intp).reshape(-1)
        C, K = self.n_latent, self.full.n_inducing
        rows, cols = lower_triangle_indices(idx.size)
        i, j = idx[rows], idx[cols]
        # m is (K, C) in C order; L holds C packed lower triangles in turn
        latent = np.arange(C)
        tri = i * (i + 1) // 2 + j
        return np.concatenate(
            [
                np.arange(self.n_hyper),
                self.blocks["m"].start + (idx[:, None] * C + latent).ravel(),
                self.blocks["L"].start
                + (latent[:, None] * (K * (K + 1) // 2) + tri).ravel(),
            ]
        )

    def subset_bound(self, idx):
        """The :class:`SVGPBound` of the candidates ``idx`` (at least one).

        Parameters
        ----------
        idx : array-like of int

        Returns
        -------
        SVGPBound

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.selective import SharedSubsetBound
        >>> X = np.linspace(-2, 2, 10)[:, None]
        >>> bound = SharedSubsetBound(KernelAdapter(RBF()), X, X[:, 0] > 0, X[:3],
        ...                           Bernoulli())
        >>> bound.subset_bound([0, 2]).n_inducing
        2
        """
        idx = np.asarray(idx, dtype=np.intp).reshape(-1)
        return SVGPBound(
            self.adapter,
            self.full.X,
            self.full.y,
            self.full.Z[idx],
            self.likelihood,
            learn_noise=self.learn_noise,
            learn_inducing=False,
            jitter=self.jitter,
            prior_set=self.prior_set,
        )

    def _rows(self, batch):
        """Inputs and targets of the minibatch (all rows for None), and the
        factor ``n / |B|`` that scales its data term to the whole set."""
        rows, scale = batch_indices(batch, self.full.n)
        X = self.full.X if rows is None else self.full.X[rows]
        y = self.full.y if rows is None else self.full.y[rows]
        return X, y, scale

    def _empty(self, params, batch):
        return self.full._prior_bound(params, *self._rows(batch))

    def values_and_mean_grad(self, params, masks, batch=None):
        """The bounds of several subsets and the mean of their gradients.

        The same numbers as :meth:`value_and_grad` subset by subset, at a
        fraction of the kernel work: ``K(Z*, Z*)``, ``K(Z*, X)`` and the
        diagonal are computed once for all ``K`` candidates, each subset
        reads its blocks, and the subsets' weights on the kernel matrices
        are summed into one ``(K, K)`` and one ``(K, n)`` matrix before a
        single contraction with the kernel's derivatives (as
        :meth:`SubsetBound.values_and_mean_grad` does for the collapsed
        bound). With many inputs the kernel and its derivatives are most of
        the cost of a subset's bound (a third on 300 points in 30
        dimensions), and a selection step evaluates several subsets.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
        masks : array-like of bool, shape (S, K)
            One row per subset; an empty row means no inducing points.
        batch : array-like of int, optional
            Minibatch, as in :meth:`value_and_grad`.

        Returns
        -------
        values : ndarray of shape (S,)
        mean_grad : ndarray of shape (n_params,)

        Raises
        ------
        NotPSDError
            When ``K(Z, Z)`` of a subset is not positive definite.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.selective import SharedSubsetBound
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> bound = SharedSubsetBound(KernelAdapter(RBF()), X, X[:, 0] > 0, X[::4],
        ...                           Bernoulli())
        >>> masks = np.array([[True, False, True, True, False], [False] * 5])
        >>> params = bound.full.initial_params()
        >>> values, grad = bound.values_and_mean_grad(params, masks)
        >>> values.shape, grad.shape == (bound.n_params,)
        ((2,), True)
        """
        params = np.asarray(params, dtype=np.float64)
        masks = np.asarray(masks, dtype=bool)
        K = self.full.n_inducing
        if masks.ndim != 2 or masks.shape[1] != K:
            raise ValueError(f"masks must have shape (S, {K}); got {masks.shape}.")
        n_kernel = self.full.n_kernel_params
        theta = params[:n_kernel]
        X, y, scale = self._rows(batch)
        kernels = (
            self.adapter.gram(theta, self.full.Z),
            self.adapter.cross(theta, self.full.Z, X),
            self.adapter.diag(theta, X),
        )
        weights = [np.zeros((K, K)), np.zeros((K, X.shape[0])), np.zeros(X.shape[0])]
        values, total = self._subset_terms(
            params, masks, batch, (kernels, weights, y, scale)
        )
        if n_kernel:
            total[:n_kernel] += self._kernel_grad(theta, X, weights)
        return values, total / masks.shape[0]

    def _subset_terms(self, params, masks, batch, shared):
        """Values of the subsets and the sum of their gradients, less the
        kernel entries, which the subsets add to the weights in ``shared``.

        The prior enters every non-empty subset's value and gradient here;
        the empty set's own evaluation carries it already.
        """
        prior = (0.0, np.zeros(self.n_hyper))
        if self.prior_set is not None:
            prior = self.prior_set.log_prob(params[: self.n_hyper])
        values, total = np.empty(masks.shape[0]), np.zeros(self.n_params)
        compiled = self.full._subsets_in_one_call(params, masks, *shared)
        s = 0
        while s < masks.shape[0]:
            # a compiled run of subsets, then the one it stopped at here
            stop = s if compiled is None else compiled(s, values, total)
            for _ in range(s, stop):
                total[: self.n_hyper] += prior[1]
            values[s:stop] += prior[0]
            if stop == masks.shape[0]:
                break
            idx, s = np.flatnonzero(masks[stop]), stop + 1
            if idx.size == 0:
                values[stop], grad = self._empty(params, batch)
                total += grad
                continue
            value, where, q_grad = self._accumulate(params, idx, *shared)
            values[stop] = value + prior[0]
            total[where] += q_grad
            total[: self.n_hyper] += prior[1]
        return values, total

    def _kernel_grad(self, theta, X, weights):
        """The summed kernel weights contracted with the kernel's derivatives."""
        W_cc, W_cf, w_diag = weights
        Zc = self.full.Z
        return (
            self.adapter.grad_contract(theta, Zc, W_cc)
            + self.adapter.cross_grad_contract(
                theta, X, Zc, np.ascontiguousarray(W_cf.T)
            )
            + self.adapter.diag_grad(theta, X).T @ w_diag
        )

    def _accumulate(self, params, idx, kernels, weights, y, scale):
        """Bound of one non-empty subset, without the prior (compiled if it can).

        Adds the subset's weights on the candidates' kernel matrices to
        ``weights``; returns the value, the positions of the subset's
        parameters in the shared vector and the gradient there, kernel
        entries zero."""
        Kcc, Kcf, kdiag = kernels
        sub = self.subset_bound(idx)
        where = self.subset_index(idx)
        done = sub._subset_in_one_call(params[where], idx, kernels, weights, y, scale)
        if done is not None:
            return done[0], where, done[1]
        _, log_noise, mean, Ls, _ = sub.split(params[where])
        R = factor_of_gram(Kcc[np.ix_(idx, idx)], self.jitter)
        projection = project_cross(Kcf[idx], kdiag, R)
        value, q_grad, Abar, gbar = sub._given_projection(
            mean, Ls, log_noise, projection, y, None, scale, grad=True
        )
        Kuubar, Kufbar = kernel_weights(R, projection[0], Abar)
        weights[0][np.ix_(idx, idx)] += with_jitter_weight(Kuubar, self.jitter)
        weights[1][idx] += Kufbar
        weights[2] += gbar
        q_grad[: self.full.n_kernel_params] = 0.0
        return value, where, q_grad

    def logp_and_grad(self, params, idx, batch=None):
        """``L(Z)`` of the subset ``idx`` and its gradient in the shared vector.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
        idx : array-like of int
            Sorted, distinct candidate indices; empty means no inducing points.
        batch : array-like of int, optional
            Minibatch; the data term is scaled by ``n / |B|``.

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.selective import SharedSubsetBound
        >>> X = np.linspace(-2, 2, 10)[:, None]
        >>> bound = SharedSubsetBound(KernelAdapter(RBF()), X, X[:, 0] > 0, X[:3],
        ...                           Bernoulli())
        >>> value, grad = bound.logp_and_grad(bound.full.initial_params(), [])
        >>> bool(np.all(grad[1:] == 0))  # no inducing point reads q
        True
        """
        params = np.asarray(params, dtype=np.float64)
        idx = np.asarray(idx, dtype=np.intp).reshape(-1)
        if idx.size == 0:
            return self._empty(params, batch)
        where = self.subset_index(idx)
        value, sub_grad = self.subset_bound(idx).logp_and_grad(params[where], batch)
        grad = np.zeros(self.n_params)
        grad[where] = sub_grad
        return float(value), grad

    # The name before every target shared logp_and_grad; public API.
    value_and_grad = logp_and_grad
