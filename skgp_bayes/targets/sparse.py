"""Sparse whitened joint posterior of hyperparameters and inducing values.

Model (Hensman, Filippone, Matthews and Ghahramani, 2015, eq. 7-8)
-------------------------------------------------------------------
Inducing inputs ``Z`` (``m`` of them, fixed) carry the inducing values
``u = f(Z)``. Whitening writes ``u = R v`` with ``R R' = K_uu`` and
``v ~ N(0, I)``, so that ``v`` and ``theta`` are independent a priori. Given
``v``, the latent function at a data point is normal,

``f_i | v ~ N(mu_i, gamma_i)``, ``A = R^-1 K_uf``, ``mu = A' v``,
``gamma = diag(K_ff) - colsum(A * A)``,

and the optimal free-form variational distribution over ``(v, theta)`` is

``log q(v, theta) = sum_i E_{N(mu_i, gamma_i)}[log p(y_i | f_i)]
- 1/2 v'v + log p(theta) + c``.

With ``C`` latent functions (multiclass likelihoods) the kernel, hence
``R``, ``A`` and ``gamma``, is shared and ``v`` is an ``(m, C)`` matrix whose
column ``c`` whitens latent ``c``; ``mu = A' v`` is then ``(n, C)`` and every
latent has the variance ``gamma``.

Jitter
------
``K_uu = K(Z, Z) + delta I`` with ``delta = jitter * mean(diag K(Z, Z))``
(``jitter = 1e-6`` by default): a fixed fraction of the kernel's own scale,
never escalated, so ``log q`` stays one smooth function of ``theta``. Its
dependence on ``theta`` is part of the exact gradient below.

Clamp
-----
Rounding can leave ``gamma_i`` slightly negative when an inducing input sits
on a data point. The target uses ``max(gamma_i, 1e-200)`` (the floor keeps
the multiclass expectations, which need a positive variance, defined). The
gradient is the exact derivative of this clamped function: a clamped point
passes no gradient through ``gamma_i``. The clamp only ever acts at the
level of rounding error; the kink it adds is never met in practice.

Gradient
--------
Let ``F`` be the (minibatch-scaled) data term and write
``g_mu = dF/dmu`` (``(b, C)``), ``g_var = dF/dvar`` (``(b, C)``) and
``gbar_i = sum_c g_var[i, c]`` (zero where the clamp is active), the
gradient in the shared ``gamma_i``.

*In v.* ``mu = A' v`` gives ``dF/dv = A g_mu``; the prior adds ``-v``.

*In A.* ``dmu = dA' v`` and ``dgamma_i = d diag(K_ff)_i - 2 sum_j A_ji dA_ji``
give ``Abar = v g_mu' - 2 A diag(gbar)`` and ``diag(K_ff)bar = gbar``.

*Through A = R^-1 K_uf.* ``dA = R^-1 dK_uf - R^-1 dR A``, so
``sum(Abar * dA) = sum(K_ufbar * dK_uf) + sum(Rbar * dR)`` with
``K_ufbar = R^-T Abar`` and ``Rbar = -K_ufbar A'`` (only its lower triangle
matters, as ``dR`` is lower triangular).

*Through R.* The reverse-mode Cholesky rule (Murray, 2016;
:func:`~skgp_bayes.linalg.cholesky_reverse`) turns ``Rbar`` into the
symmetric ``K_uubar``. The jitter's derivative,
``d delta = jitter / m * tr(dK(Z, Z))``, adds ``jitter / m * tr(K_uubar)``
to its diagonal.

*In theta.* ``dF/dtheta_j = sum(K_uubar * dK(Z, Z)/dtheta_j)
+ sum(K_ufbar' * dK(X, Z)/dtheta_j) + sum_i gbar_i d diag(K_ff)_i/dtheta_j``:
one :meth:`~skgp_bayes.kernels.KernelAdapter.grad_contract`, one
:meth:`~skgp_bayes.kernels.KernelAdapter.cross_grad_contract` and one
:meth:`~skgp_bayes.kernels.KernelAdapter.diag_grad`, none of which builds a
gradient tensor.

*In Z* (used by :class:`~skgp_bayes.targets.svgp.SVGPBound`). The same
weights contract against the input gradients,
``sum(K_uubar * dK(Z, Z)/dZ) + sum(K_ufbar' * dK(X, Z)/dZ)``; for the
stationary kernels that have input gradients ``diag K`` does not depend on
the inputs, so neither the jitter nor ``diag(K_ff)`` contributes.

*In the log noise* (Gaussian likelihood with a free noise). The closed-form
expected log density gives
``sum_i [-1/2 + ((y_i - mu_i)^2 + gamma_i) / (2 s2)]``.

Minibatches
-----------
The data term is a sum over points, so for an index array ``B`` it is
estimated without bias by ``n / |B| sum_{i in B}`` (Liu and Wang's SVGD
with minibatches, seed 000 eq. 10); every gradient above carries the same
factor. One evaluation costs ``O(|B| m^2 + m^3)``.
"""

import numpy as np
from scipy.special import gammaln

from ..likelihoods import Bernoulli, Gaussian, Poisson, Softmax
from ..linalg import inverse_congruence, triangular_solve
from . import _likelihood_numba
from ._softmax_rule import (
    softmax_mixture_proba,
    softmax_nodes,
    softmax_rule,
    softmax_rule_proba,
)
from ._sparse_compiled import compiled_prior, evaluate_compiled
from ._sparse_shared import (
    add_jitter_weight,
    batch_indices,
    check_inputs,
    check_jitter,
    check_offset,
    check_prior,
    gaussian_with_noise,
    inducing_factor,
    likelihood_terms,
    noise_is_free,
    project,
    sparse_expected_log_prob,
)

__all__ = [
    "SparseWhitenedTarget",
    "JITTER",
    "softmax_mixture_proba",
    "softmax_rule",
    "softmax_rule_proba",
]

#: Relative diagonal jitter on ``K(Z, Z)``.
JITTER = 1e-6

_LOG_2PI = float(np.log(2.0 * np.pi))


def _whitened_pullback(adapter, theta, Z, X, R, A, v, g_mu, gbar, jitter):
    """:func:`pullback` for ``Abar = v g_mu' - 2 A diag(gbar)``, faster.

    ``K_ufbar = R^-T Abar``. For ``K_uubar``, Murray's ``P = Phi(R' Rbar)``
    with ``Rbar = -K_ufbar A'`` is ``-Phi(Abar A')`` (see
    :func:`~skgp_bayes.targets._sparse_shared.kernel_weights`), and
    ``K_uubar = R^-T sym(P) R^-1``. Its two parts are cheap to form: the
    mean's ``v g_mu' A'`` is ``v H'`` with ``H = A g_mu`` (rank ``C``, and
    only a triangle is read), and the ``gamma`` term
    ``2 A diag(gbar) A'`` is symmetric already. So one ``m x b x m``
    product and one congruence make ``K_uubar``, where the general rule
    needs a second product, a triangular product and two solves. Same
    result as :func:`pullback` to round-off.
    """
    H = A @ g_mu
    Kufbar = triangular_solve(R, v @ g_mu.T - 2.0 * A * gbar, trans=True)
    # -Abar A' / 2 = A diag(gbar) A' - v H' / 2 in the lower triangle.
    inner = (A * gbar) @ A.T
    inner -= 0.5 * (v @ H.T)
    Kuubar = inverse_congruence(R, inner, overwrite=True)
    if not adapter.n_params:
        return np.zeros(0)
    add_jitter_weight(Kuubar, jitter)
    return (
        adapter.grad_contract(theta, Z, Kuubar)
        + adapter.cross_grad_contract(theta, X, Z, np.ascontiguousarray(Kufbar.T))
        + adapter.diag_grad(theta, X).T @ gbar
    )


# --------------------------------------------------------------------------


class SparseWhitenedTarget:
    """Joint log density of hyperparameters and whitened inducing values.

    ``log q(v, theta) = sum_i E_{N(mu_i, gamma_i)}[log p(y_i | f_i)]
    - 1/2 v'v + log p(theta)`` with ``mu = A' v``, ``A = R^-1 K_uf``,
    ``gamma = diag(K_ff) - colsum(A * A)`` and ``R R' = K_uu`` (Hensman et
    al., 2015, eq. 7-8). SVGD and HMC sample it alike; see the module notes
    for the model, the jitter and the gradient.

    The parameter vector is ``[theta, (log noise), v]``: ``kernel.theta``
    (log scale); the log noise variance when the likelihood is Gaussian
    and its noise is free; then ``v`` of shape ``(m, C)`` flattened in C
    order (entry ``j * C + c`` is inducing value ``j`` of latent ``c``).

    Parameters
    ----------
    adapter : KernelAdapter
        The kernel, shared by all latent functions.
    X : ndarray of shape (n, d)
        Training inputs.
    y : ndarray of shape (n,)
        Observations in the likelihood's encoding (``{0, 1}`` for
        Bernoulli, ``0..C-1`` for multiclass).
    Z : ndarray of shape (m, d)
        Inducing inputs, fixed.
    likelihood : Likelihood
        Its ``expected_log_prob(y, mu, var, grad=True)`` is used, with
        latent arrays of shape ``(b,)`` when ``likelihood.n_latent == 1``
        and ``(b, C)`` otherwise. A :class:`~skgp_bayes.likelihoods.Softmax`
        of up to eight classes is the exception: its expectation is taken
        with the degree-5 rule of :func:`softmax_rule` rather than the
        likelihood's Monte Carlo draws (more accurate with a tenth to a
        half of the nodes); the likelihood's ``n_samples`` then plays no
        part.
    prior_set : PriorSet or None, default=None
        Prior over the hyperparameter vector ``[theta, (log noise)]``;
        ``None`` leaves it flat.
    learn_noise : bool or None, default=None
        Make the Gaussian likelihood's log noise variance a parameter.
        ``None`` does so exactly when the likelihood is Gaussian; ``False``
        keeps ``likelihood.noise_variance`` fixed.
    jitter : float, default=1e-6
        Relative diagonal jitter on ``K(Z, Z)`` (times its mean diagonal).
    offset : array-like of shape (n,), optional
        Known per-point shift of every latent mean, ``mu_i = a_i' v +
        offset_i``: the log exposure of a Poisson count (the rate is then
        ``exposure_i * exp(f_i)``). A constant, so it adds nothing to the
        gradient.
    n_total : float, optional
        Number of points the data stand for: the data term is scaled by
        ``n_total / n`` (full batch) or ``n_total / |B|`` (minibatch). A
        stream fitted chunk by chunk passes the count seen so far, so that
        the current chunk, a random sample of the stream, estimates the sum
        over all of it without bias. ``None`` is ``n``.

    Attributes
    ----------
    n_params : int
        Length of the parameter vector.
    n_hyper : int
        Number of hyperparameter entries (kernel theta and the log noise).
    n_latent : int
        Number of latent functions ``C``.
    n_inducing : int
        Number of inducing inputs ``m``.
    learn_noise : bool
        Whether the log noise variance is a parameter.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.targets.sparse import SparseWhitenedTarget
    >>> X = np.linspace(-2, 2, 20)[:, None]
    >>> y = (X[:, 0] > 0).astype(float)
    >>> Z = np.linspace(-2, 2, 4)[:, None]
    >>> target = SparseWhitenedTarget(
    ...     KernelAdapter(ConstantKernel() * RBF()), X, y, Z, Bernoulli())
    >>> value, grad = target.logp_and_grad(np.zeros(target.n_params))
    >>> target.n_params, grad.shape
    (6, (6,))
    >>> value_b, grad_b = target.logp_and_grad(
    ...     np.zeros(target.n_params), batch=np.arange(5))
    >>> grad_b.shape
    (6,)
    """

    def __init__(
        self,
        adapter,
        X,
        y,
        Z,
        likelihood,
        prior_set=None,
        *,
        learn_noise=None,
        jitter=JITTER,
        offset=None,
        n_total=None,
    ):
        X, y, Z, n_latent = check_inputs(adapter, X, y, Z, likelihood)
        self.offset = check_offset(offset, X.shape[0])
        if n_total is None:
            n_total = X.shape[0]
        if not (np.isfinite(n_total) and n_total >= X.shape[0]):
            raise ValueError(
                f"n_total must be a finite count of at least n={X.shape[0]}; "
                f"got {n_total}."
            )
        self.n_total = float(n_total)
        self.adapter = adapter
        self.X = X
        self.y = y
        self.Z = Z
        self.likelihood = likelihood
        self.prior_set = prior_set
        self.learn_noise = noise_is_free(likelihood, learn_noise)
        self.jitter = check_jitter(jitter)
        self.n = X.shape[0]
        self.n_latent = n_latent
        self.n_inducing = Z.shape[0]
        self.n_kernel_params = adapter.n_params
        self.n_hyper = self.n_kernel_params + int(self.learn_noise)
        self.n_params = self.n_hyper + self.n_inducing * n_latent
        check_prior(prior_set, self.n_hyper)
        # Facts fixed for the target's life, looked up once rather than on
        # every evaluation (see _sparse_compiled.evaluate_compiled).
        # The compiled pass at every m: its loops beat NumPy's per-call
        # overhead at small m (0.18 against 0.68 ms at m = 25), and from
        # _sparse_numba.LAPACK_MIN_INDUCING it factorises and solves with
        # LAPACK and BLAS itself, without the interpreter lock. Batches of
        # 256, one BLAS thread: 6.1-9.7 against 6.6-12.0 ms at m = 260-300,
        # 29-40 against 33-45 ms at 600, 0.97-1.00 times NumPy's at 2,000.
        self._compiled = bool(adapter.is_fast)
        self._closed_form = type(likelihood) is Gaussian
        self._softmax = type(likelihood) is Softmax
        self._prior_arrays = compiled_prior(prior_set)
        if self._softmax:
            self._softmax_nodes = softmax_nodes(likelihood)
            # Validated once: the full-data labels are passed on every call.
            self._softmax_labels = likelihood._labels(y)
        self._poisson = type(likelihood) is Poisson
        if self._poisson:
            # log(y!) of the full data, summed once (minibatches sum theirs)
            self._log_factorials = float(np.sum(gammaln(np.asarray(y) + 1.0)))
        self._logit = type(likelihood) is Bernoulli and likelihood.link == "logit"
        # The one-call path maps theta to the kernel's scales itself, for one
        # length scale or one per column; a mismatch is the general path's
        # error to raise.
        self._one_call = (
            (self._logit or self._softmax)
            and self._compiled
            and adapter.spec.n_length_scales in (1, X.shape[1])
        )
        if self._logit:
            self._logit_rules = _likelihood_numba.logit_rules(likelihood.n_quadrature)
            self._logit_y = np.asarray(y, dtype=np.float64)
        self._fixed_log_noise = (
            float(np.log(likelihood.noise_variance))
            if isinstance(likelihood, Gaussian)
            else None
        )

    # ------------------------------------------------------------ plumbing
    @property
    def param_names(self):
        """Names of the parameter vector's entries.

        The kernel's hyperparameter names (their entries are on log scale),
        ``"noise_variance"`` for the log noise variance when it is free,
        then ``v[j]`` (one latent) or ``v[j,c]`` (several).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> from skgp_bayes.targets.sparse import SparseWhitenedTarget
        >>> X = np.linspace(0, 1, 8)[:, None]
        >>> target = SparseWhitenedTarget(  # noise free: it is a parameter
        ...     KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::2], Gaussian(0.1))
        >>> target.param_names
        ['length_scale', 'noise_variance', 'v[0]', 'v[1]', 'v[2]', 'v[3]']
        >>> len(target.param_names) == target.n_params
        True
        """
        names = list(self.adapter.param_names)
        if self.learn_noise:
            names.append("noise_variance")
        if self.n_latent == 1:
            names.extend(f"v[{j}]" for j in range(self.n_inducing))
        else:
            names.extend(
                f"v[{j},{c}]"
                for j in range(self.n_inducing)
                for c in range(self.n_latent)
            )
        return names

    def split(self, params):
        """Kernel theta, log noise variance and ``v`` of a parameter vector.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
            ``[theta, (log noise), v]``, as laid out in the class notes.

        Returns
        -------
        theta : ndarray of shape (n_kernel_params,)
            Kernel hyperparameters (log scale).
        log_noise : float or None
            The free log noise variance, or the fixed one of a Gaussian
            likelihood, or None for other likelihoods.
        v : ndarray of shape (m, C)
            Whitened inducing values, one column per latent function.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> from skgp_bayes.targets.sparse import SparseWhitenedTarget
        >>> X = np.linspace(0, 1, 8)[:, None]
        >>> target = SparseWhitenedTarget(  # noise free: it is a parameter
        ...     KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::2], Gaussian(0.1))
        >>> theta, log_noise, v = target.split(np.arange(target.n_params, dtype=float))
        >>> theta, log_noise, v.ravel()
        (array([0.]), 1.0, array([2., 3., 4., 5.]))
        """
        params = np.asarray(params, dtype=np.float64)
        if params.shape != (self.n_params,):
            raise ValueError(
                f"params must have shape ({self.n_params},); got {params.shape}."
            )
        theta = params[: self.n_kernel_params]
        if self.learn_noise:
            log_noise = float(params[self.n_kernel_params])
        elif isinstance(self.likelihood, Gaussian):
            log_noise = float(np.log(self.likelihood.noise_variance))
        else:
            log_noise = None
        v = params[self.n_hyper :].reshape(self.n_inducing, self.n_latent)
        return theta, log_noise, v

    def join(self, theta, v, log_noise=None):
        """Inverse of :meth:`split`.

        Parameters
        ----------
        theta : array-like of shape (n_kernel_params,)
        v : array-like of shape (m, C) or (m * C,)
        log_noise : float, optional
            Required when the noise is free; ignored otherwise.

        Returns
        -------
        params : ndarray of shape (n_params,)
            The flat parameter vector ``[theta, (log noise), v]``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> from skgp_bayes.targets.sparse import SparseWhitenedTarget
        >>> X = np.linspace(0, 1, 8)[:, None]
        >>> target = SparseWhitenedTarget(  # noise free: it is a parameter
        ...     KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::2], Gaussian(0.1))
        >>> params = np.random.default_rng(0).normal(size=target.n_params)
        >>> theta, log_noise, v = target.split(params)
        >>> np.array_equal(target.join(theta, v, log_noise), params)
        True
        """
        theta = np.asarray(theta, dtype=np.float64).reshape(-1)
        v = np.asarray(v, dtype=np.float64).reshape(-1)
        if theta.size != self.n_kernel_params:
            raise ValueError(f"theta must have {self.n_kernel_params} entries.")
        if v.size != self.n_inducing * self.n_latent:
            raise ValueError(f"v must have {self.n_inducing * self.n_latent} entries.")
        parts = [theta]
        if self.learn_noise:
            if log_noise is None:
                raise ValueError("log_noise is required: the noise is a parameter.")
            parts.append([float(log_noise)])
        parts.append(v)
        return np.concatenate(parts)

    def _context(self, theta):
        values = ", ".join(
            f"{n}={v:.4g}"
            for n, v in zip(self.adapter.param_names, np.exp(theta), strict=True)
        )
        return "hyperparameters " + values

    def _likelihood_at(self, log_noise):
        if self.learn_noise:
            return gaussian_with_noise(self.likelihood, log_noise)
        return self.likelihood

    def _data(self, batch):
        idx, scale = batch_indices(batch, self.n)
        scale *= self.n_total / self.n
        if idx is None:
            return self.X, self.y, self.offset, scale
        offset = None if self.offset is None else self.offset[idx]
        return self.X[idx], self.y[idx], offset, scale

    # ------------------------------------------------------------ target
    def predict_f(self, params, Xnew):
        """Conditional moments of the latent functions given ``v``.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
        Xnew : ndarray of shape (k, d)

        Returns
        -------
        mean : ndarray of shape (k, C)
            ``A_*' v``.
        var : ndarray of shape (k,)
            ``gamma_*``, shared by every latent.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> from skgp_bayes.targets.sparse import SparseWhitenedTarget
        >>> X = np.linspace(0, 1, 8)[:, None]
        >>> target = SparseWhitenedTarget(
        ...     KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::2], Gaussian(0.1))
        >>> mean, var = target.predict_f(np.zeros(target.n_params), X)
        >>> mean.shape, var.shape
        ((8, 1), (8,))
        """
        theta, _, v = self.split(params)
        Xnew = np.ascontiguousarray(Xnew, dtype=np.float64)
        R = inducing_factor(self.adapter, theta, self.Z, self.jitter)
        A, gamma, _ = project(self.adapter, theta, self.Z, Xnew, R)
        return A.T @ v, gamma

    def log_prob(self, params, batch=None):
        """Log density (up to a constant), without the gradient.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
            ``[theta, (log noise), v]``, as laid out in the class notes.
        batch : array-like of int, optional
            Indices of a minibatch; the data term is scaled by ``n / |B|``.

        Returns
        -------
        float
            The same value as :meth:`logp_and_grad`; ``-inf`` where it is
            not finite.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> from skgp_bayes.targets.sparse import SparseWhitenedTarget
        >>> X = np.linspace(0, 1, 8)[:, None]
        >>> target = SparseWhitenedTarget(  # noise free: it is a parameter
        ...     KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::2], Gaussian(0.1))
        >>> params = np.random.default_rng(0).normal(size=target.n_params)
        >>> full = target.log_prob(params)
        >>> bool(np.isclose(full, target.log_prob(params, batch=np.arange(8))))
        True
        >>> bool(np.isclose(full, target.logp_and_grad(params)[0]))
        True
        """
        return self._evaluate(params, batch, grad=False)

    def logp_and_grad(self, params, batch=None):
        """Log density (up to a constant) and its exact gradient.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
            ``[theta, (log noise), v]``, as laid out in the class notes.
        batch : array-like of int, optional
            Indices of a minibatch. The data term and its gradient are
            scaled by ``n / |B|``, an unbiased estimate of the full sum.

        Returns
        -------
        value : float
            ``-inf`` where the value is not finite.
        grad : ndarray of shape (n_params,)
            Gradient in the parameter vector, laid out as ``params``.

        Raises
        ------
        NotPSDError
            When the jittered ``K(Z, Z)`` is not positive definite.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> from skgp_bayes.targets.sparse import SparseWhitenedTarget
        >>> X = np.linspace(0, 1, 8)[:, None]
        >>> target = SparseWhitenedTarget(  # noise free: it is a parameter
        ...     KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::2], Gaussian(0.1))
        >>> params = np.random.default_rng(0).normal(size=target.n_params)
        >>> value, grad = target.logp_and_grad(params)
        >>> grad.shape
        (6,)
        >>> h = 1e-6 * np.eye(target.n_params)[1]  # d/d log noise variance
        >>> fd = (target.log_prob(params + h) - target.log_prob(params - h)) / 2e-6
        >>> bool(np.isclose(fd, grad[1], rtol=1e-5, atol=1e-8))
        True
        """
        return self._evaluate(params, batch, grad=True)

    def _softmax_terms(self, y, mu, gamma):
        """Softmax ``elp``, ``d_mu``, ``d_var`` by :func:`_softmax_nodes`."""
        # the nodes themselves, in any rule: the general form is the
        # reference the compiled simplex form is tested against
        nodes, weights, _ = self._softmax_nodes
        labels = self._softmax_labels if y is self.y else self.likelihood._labels(y)
        return _likelihood_numba.softmax_expectation(
            labels,
            np.ascontiguousarray(mu),
            np.sqrt(gamma),
            nodes,
            weights,
        )

    def _evaluate(self, params, batch, grad):
        if self._compiled:
            return evaluate_compiled(self, params, batch, grad)
        theta, log_noise, v = self.split(params)
        X, y, offset, scale = self._data(batch)
        R = inducing_factor(
            self.adapter, theta, self.Z, self.jitter, self._context(theta)
        )
        A, gamma, free = project(self.adapter, theta, self.Z, X, R)
        mu = A.T @ v
        if offset is not None:
            mu += offset[:, None]
        var = np.repeat(gamma[:, None], self.n_latent, axis=1)
        likelihood = self._likelihood_at(log_noise)

        value = -0.5 * float(np.vdot(v, v))
        prior_grad = None
        if self.prior_set is not None:
            prior_value, prior_grad = self.prior_set.log_prob(params[: self.n_hyper])
            value += prior_value
        if not grad:
            if self._softmax:
                elp = self._softmax_terms(y, mu, gamma)[0]
            else:
                elp = sparse_expected_log_prob(likelihood, y, mu, var, self.n_latent)
            value += scale * float(np.sum(elp))
            return value if np.isfinite(value) else -np.inf

        if self._softmax:
            elp, d_mu, d_var = self._softmax_terms(y, mu, gamma)
            d_noise = None
        else:
            elp, d_mu, d_var, d_noise = likelihood_terms(
                likelihood, y, mu, var, self.n_latent, self.learn_noise
            )
        value += scale * float(np.sum(elp))
        g_mu = scale * d_mu
        # gamma is shared by the latents; the clamp stops its gradient.
        gbar = scale * np.sum(d_var, axis=1) * free

        out = np.empty(self.n_params)
        out[self.n_hyper :] = (A @ g_mu - v).reshape(-1)
        out[: self.n_kernel_params] = _whitened_pullback(
            self.adapter, theta, self.Z, X, R, A, v, g_mu, gbar, self.jitter
        )
        if self.learn_noise:
            out[self.n_kernel_params] = scale * float(np.sum(d_noise))
        if prior_grad is not None:
            out[: self.n_hyper] += prior_grad
        if not np.isfinite(value):
            # -inf stays -inf for the engine to reject; NaN never escapes.
            value = -np.inf
        return value, out

    def __repr__(self):
        return (
            f"SparseWhitenedTarget(n={self.n}, m={self.n_inducing}, "
            f"n_latent={self.n_latent}, n_params={self.n_params})"
        )
