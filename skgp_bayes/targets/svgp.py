"""Sparse variational Gaussian-process bound (SVGP) in whitened coordinates.

Model
-----
Inducing inputs ``Z`` (``m`` of them) and whitened inducing values ``v``
with ``u = R v``, ``R R' = K_uu`` (jittered as in
:mod:`skgp_bayes.targets.sparse`). The variational distribution is
``q(v_c) = N(m_c, S_c)`` for each latent ``c``, with ``S_c = L_c L_c'`` and
``L_c`` lower triangular. Then ``q(f_ic) = N(mu_ic, s_ic)`` with

``mu_ic = a_i' m_c (+ offset_i)``, ``s_ic = gamma_i + |L_c' a_i|^2``,

``A = R^-1 K_uf`` and ``gamma = diag(K_ff) - colsum(A * A)`` (the same
``A`` and clamped ``gamma`` as the sparse whitened target), and the bound is

``ELBO = sum_i E_q[log p(y_i | f_i)] - sum_c KL(N(m_c, S_c) || N(0, I))
(+ log p(theta))``,

``KL = 1/2 (|L_c|_F^2 + |m_c|^2 - m - 2 sum log diag L_c)``. The log prior
over the hyperparameters makes the maximiser a MAP-type estimate of
``theta``, the starting point the seed paper uses for its sampler.

Parametrisation
---------------
``[theta, (log noise), m, packed L, (Z)]``: ``m`` of shape ``(m, C)``
flattened in C order as ``v`` in the sparse target; for each latent the
lower triangle of ``L_c`` in ``numpy.tril_indices`` order, with the
diagonal entries stored as ``log L_jj`` (so ``S_c`` stays positive
definite without constraints); then ``Z`` flattened in C order when the
inducing inputs are learned.

Gradient
--------
With ``g_mu = dF/dmu`` and ``g_s = dF/ds`` (``(b, C)``) for the
minibatch-scaled data term ``F`` and ``B_c = L_c' A``:

* ``dF/dm = A g_mu``;
* ``dF/dL_c = tril(2 (A diag(g_s[:, c])) B_c')``; a log-diagonal entry
  gets the chain factor ``L_jj``;
* ``dF/dA = m g_mu' - 2 A diag(gbar) + 2 sum_c L_c B_c diag(g_s[:, c])``
  with ``gbar_i = sum_c g_s[i, c]`` (zero where the clamp on ``gamma`` is
  active), and ``dF/d diag(K_ff) = gbar``; this ``Abar`` goes through the
  shared pull-back of :mod:`skgp_bayes.targets.sparse` to ``theta`` and,
  with input gradients, to ``Z``;
* ``-KL`` adds ``-m`` to the ``m`` block, ``-L_ij`` to an off-diagonal
  entry and ``1 - L_jj^2`` to a log-diagonal entry.

The data term is a sum over points: a minibatch ``B`` scaled by
``n / |B|`` estimates it and its gradient without bias; the KL and the
prior are not scaled.
"""

import functools

import numpy as np

from ..likelihoods import Bernoulli, Gaussian, Softmax
from ..likelihoods._base import SMALL_VAR
from ..linalg.triangle import lower_triangle_indices
from ._likelihood_numba import DONE, logit_rules
from ._selective_numba import logit_subsets_into, softmax_subsets_into
from ._sparse_compiled import workspace
from ._sparse_numba import LAPACK
from ._sparse_shared import (
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
    pullback,
    sparse_expected_log_prob,
)
from ._svgp_numba import (
    logit_bound,
    logit_given_projection,
    logit_subset_into,
    softmax_bound,
    softmax_given_projection,
    softmax_subset_into,
)
from ._whitened_compiled import class_indices
from .sparse import JITTER

__all__ = ["SVGPBound"]


@functools.lru_cache(maxsize=8)
def _shared_logit_rules(n_quadrature):
    """:func:`logit_rules`, once per rule size: a selection of inducing inputs
    builds a bound per subset, hundreds a fit (the arrays are only read)."""
    return logit_rules(n_quadrature)


class SVGPBound:
    """Evidence lower bound of a sparse variational GP, with its gradient.

    See the module notes for the bound, the parametrisation and the
    gradient. ``q(v) = N(m, L L')`` is in whitened coordinates, so the
    same ``v`` is the state of :class:`~skgp_bayes.targets.sparse.
    SparseWhitenedTarget`: a fitted bound hands its inducing inputs,
    hyperparameters and ``q(v)`` to a sampler unchanged.

    Parameters
    ----------
    adapter : KernelAdapter
        The kernel, shared by all latent functions.
    X : ndarray of shape (n, d)
        Training inputs.
    y : ndarray of shape (n,)
        Observations in the likelihood's encoding.
    Z : ndarray of shape (m, d)
        Inducing inputs: the starting value when they are learned, the
        fixed value otherwise.
    likelihood : Likelihood
        Observation model with ``expected_log_prob(..., grad=True)``.
    prior_set : PriorSet or None, default=None
        Prior over ``[theta, (log noise)]``, added to the bound.
    learn_noise : bool or None, default=None
        Make a Gaussian likelihood's log noise variance a parameter;
        ``None`` does so exactly when the likelihood is Gaussian.
    learn_inducing : bool or None, default=None
        Make ``Z`` a parameter. Needs the kernel's input gradients (the
        compiled fast path); ``None`` learns ``Z`` exactly when they exist.
    jitter : float, default=1e-6
        Relative diagonal jitter on ``K(Z, Z)``.
    offset : array-like of shape (n,), optional
        Known shift of each latent mean (log exposure for counts).

    Attributes
    ----------
    n_params, n_hyper, n_latent, n_inducing : int
        Sizes of the parameter vector and its parts.
    learn_noise, learn_inducing : bool
        Which optional blocks are parameters.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.targets.svgp import SVGPBound
    >>> X = np.linspace(-2, 2, 20)[:, None]
    >>> y = (X[:, 0] > 0).astype(float)
    >>> bound = SVGPBound(KernelAdapter(RBF()), X, y, X[::5], Bernoulli())
    >>> params = bound.initial_params()
    >>> value, grad = bound.logp_and_grad(params)
    >>> bound.n_params, grad.shape  # theta, m, packed L, Z
    (19, (19,))
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
        learn_inducing=None,
        jitter=JITTER,
        offset=None,
    ):
        X, y, Z, n_latent = check_inputs(adapter, X, y, Z, likelihood)
        if learn_inducing is None:
            learn_inducing = adapter.supports_input_gradients
        if learn_inducing and not adapter.supports_input_gradients:
            raise ValueError(
                "learn_inducing=True needs input gradients, which this kernel "
                f"lacks ({adapter.kernel!r}); keep the inducing inputs fixed."
            )
        self.adapter = adapter
        self.X = X
        self.y = y
        self.Z = Z
        self.likelihood = likelihood
        self.prior_set = prior_set
        self.learn_noise = noise_is_free(likelihood, learn_noise)
        self.learn_inducing = bool(learn_inducing)
        self.jitter = check_jitter(jitter)
        self.offset = check_offset(offset, X.shape[0])
        self.n = X.shape[0]
        self.n_latent = n_latent
        self.n_inducing = m = Z.shape[0]
        self.n_kernel_params = adapter.n_params
        self.n_hyper = self.n_kernel_params + int(self.learn_noise)
        self._rows, self._cols = lower_triangle_indices(m)
        self._on_diag = self._rows == self._cols
        self._n_tri = self._rows.size
        self._m_slice = slice(self.n_hyper, self.n_hyper + m * n_latent)
        start = self._m_slice.stop
        self._L_slice = slice(start, start + n_latent * self._n_tri)
        start = self._L_slice.stop
        n_z = Z.size if self.learn_inducing else 0
        self._Z_slice = slice(start, start + n_z)
        self.n_params = start + n_z
        check_prior(prior_set, self.n_hyper)
        # The logit and softmax bounds' terms take one compiled call each
        # (._svgp_numba); the softmax call indexes by label, so only for
        # labels that are class indices.
        logit = type(likelihood) is Bernoulli and likelihood.link == "logit"
        self._logit_rules = None
        if logit and n_latent == 1 and not self.learn_noise:
            self._logit_rules = _shared_logit_rules(likelihood.n_quadrature)
        self._softmax_labels = None
        if type(likelihood) is Softmax and class_indices(self.y, n_latent):
            self._softmax_labels = np.ascontiguousarray(self.y, dtype=np.int64)
        # With a recognised kernel (one length scale or one per column) and no
        # offset, the whole logit or softmax bound is one compiled call
        # (logit_bound, softmax_bound).
        self._one_call = (
            (self._logit_rules is not None or self._softmax_labels is not None)
            and adapter.is_fast
            and adapter.spec.n_length_scales in (1, X.shape[1])
            and self.offset is None
        )

    # ------------------------------------------------------------ plumbing
    @property
    def compiled(self):
        """Whether value and gradient on all the data are one compiled call.

        The logit or softmax bound with a recognised kernel and no offset
        (``logit_bound``, ``softmax_bound``), which releases the GIL.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli, Gaussian
        >>> from skgp_bayes.targets.svgp import SVGPBound
        >>> X = np.linspace(0, 1, 8)[:, None]
        >>> y = (X[:, 0] > 0.5).astype(float)
        >>> for likelihood in (Bernoulli(), Gaussian()):
        ...     bound = SVGPBound(KernelAdapter(RBF()), X, y, X[:3], likelihood)
        ...     print(bound.compiled)
        True
        False
        """
        return bool(self._one_call)

    @property
    def blocks(self):
        """Slices of the parameter vector by block name.

        Returns
        -------
        dict of str to slice
            ``"theta"``, ``"log_noise"`` (if learned), ``"m"``, ``"L"`` and
            ``"Z"`` (if learned).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Poisson
        >>> from skgp_bayes.targets.svgp import SVGPBound
        >>> X = np.linspace(0, 1, 10)[:, None]
        >>> bound = SVGPBound(KernelAdapter(RBF()), X, np.ones(10), X[::3], Poisson())
        >>> sorted(bound.blocks)
        ['L', 'Z', 'm', 'theta']
        """
        out = {"theta": slice(0, self.n_kernel_params)}
        if self.learn_noise:
            out["log_noise"] = slice(self.n_kernel_params, self.n_hyper)
        out["m"] = self._m_slice
        out["L"] = self._L_slice
        if self.learn_inducing:
            out["Z"] = self._Z_slice
        return out

    def _factor_entries(self, packed):
        """The C packed triangles' entries (C, n_tri), diagonals exponentiated."""
        packed = packed.reshape(self.n_latent, self._n_tri)
        return np.where(self._on_diag, np.exp(packed), packed)

    def _unpack_L(self, packed):
        Ls = np.zeros((self.n_latent, self.n_inducing, self.n_inducing))
        Ls[:, self._rows, self._cols] = self._factor_entries(packed)
        return Ls

    def split(self, params):
        """The parts of a parameter vector.

        Parameters
        ----------
        params : ndarray of shape (n_params,)

        Returns
        -------
        theta : ndarray of shape (n_kernel_params,)
        log_noise : float or None
        mean : ndarray of shape (m, C)
            Whitened variational mean.
        Ls : ndarray of shape (C, m, m)
            Lower-triangular factors of the whitened covariances.
        Z : ndarray of shape (m, d)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Poisson
        >>> from skgp_bayes.targets.svgp import SVGPBound
        >>> X = np.linspace(0, 1, 10)[:, None]
        >>> bound = SVGPBound(KernelAdapter(RBF()), X, np.ones(10), X[::3], Poisson())
        >>> theta, log_noise, mean, Ls, Z = bound.split(bound.initial_params())
        >>> mean.shape, Ls.shape, log_noise is None
        ((4, 1), (1, 4, 4), True)
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
        mean = params[self._m_slice].reshape(self.n_inducing, self.n_latent)
        Ls = self._unpack_L(params[self._L_slice])
        if self.learn_inducing:
            Z = params[self._Z_slice].reshape(self.Z.shape)
        else:
            Z = self.Z
        return theta, log_noise, mean, Ls, Z

    def initial_params(self, theta=None, log_noise=None, scale=1.0):
        """A starting vector: ``m = 0``, ``L = scale * I``, ``Z`` as given.

        Parameters
        ----------
        theta : array-like, optional
            Kernel theta; the template kernel's by default.
        log_noise : float, optional
            Log noise variance (when learned); the likelihood's by default.
        scale : float, default=1.0
            Diagonal of the initial ``L``; ``1`` is the whitened prior.

        Returns
        -------
        params : ndarray of shape (n_params,)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Poisson
        >>> from skgp_bayes.targets.svgp import SVGPBound
        >>> X = np.linspace(0, 1, 10)[:, None]
        >>> bound = SVGPBound(KernelAdapter(RBF()), X, np.ones(10), X[::3], Poisson())
        >>> bound.initial_params().shape  # theta, m, packed L, Z
        (19,)
        """
        if theta is None:
            theta = self.adapter.kernel.theta
        parts = [np.asarray(theta, dtype=np.float64).reshape(-1)]
        if self.learn_noise:
            if log_noise is None:
                log_noise = np.log(self.likelihood.noise_variance)
            parts.append([float(log_noise)])
        parts.append(np.zeros(self.n_inducing * self.n_latent))
        tri = np.where(self._on_diag, np.log(scale), 0.0)
        parts.append(np.tile(tri, self.n_latent))
        if self.learn_inducing:
            parts.append(self.Z.reshape(-1))
        return np.concatenate(parts)

    def _likelihood_at(self, log_noise):
        if self.learn_noise:
            return gaussian_with_noise(self.likelihood, log_noise)
        return self.likelihood

    # ------------------------------------------------------------ bound
    def predict_f(self, params, Xnew):
        """Moments of ``q(f)`` at new inputs.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
        Xnew : ndarray of shape (k, d)

        Returns
        -------
        mean : ndarray of shape (k, C)
        var : ndarray of shape (k, C)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Gaussian
        >>> from skgp_bayes.targets.svgp import SVGPBound
        >>> X = np.linspace(0, 1, 6)[:, None]
        >>> bound = SVGPBound(KernelAdapter(RBF()), X, X[:, 0], X[::2], Gaussian())
        >>> mean, var = bound.predict_f(bound.initial_params(), X)
        >>> np.allclose(var, 1.0)  # q(v) = N(0, I) is the prior
        True
        """
        theta, _, mean, Ls, Z = self.split(params)
        Xnew = np.ascontiguousarray(Xnew, dtype=np.float64)
        R = inducing_factor(self.adapter, theta, Z, self.jitter)
        A, gamma, _ = project(self.adapter, theta, Z, Xnew, R)
        B = np.matmul(Ls.transpose(0, 2, 1), A)
        var = gamma[:, None] + np.einsum("cik,cik->kc", B, B)
        return A.T @ mean, var

    def elbo(self, params, batch=None):
        """The bound (plus the log prior), without the gradient.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
        batch : array-like of int, optional
            Minibatch indices; the data term is scaled by ``n / |B|``.

        Returns
        -------
        float

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Poisson
        >>> from skgp_bayes.targets.svgp import SVGPBound
        >>> X = np.linspace(0, 1, 10)[:, None]
        >>> bound = SVGPBound(KernelAdapter(RBF()), X, np.ones(10), X[::3], Poisson())
        >>> bool(np.isfinite(bound.elbo(bound.initial_params(), batch=[0, 5])))
        True
        """
        return self._evaluate(params, batch, grad=False)

    def logp_and_grad(self, params, batch=None):
        """The bound (plus the log prior) and its exact gradient.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
        batch : array-like of int, optional
            Minibatch indices; value and gradient of the data term are
            scaled by ``n / |B|``, an unbiased estimate of the full sum.

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Poisson
        >>> from skgp_bayes.targets.svgp import SVGPBound
        >>> X = np.linspace(0, 1, 10)[:, None]
        >>> bound = SVGPBound(KernelAdapter(RBF()), X, np.ones(10), X[::3], Poisson())
        >>> value, grad = bound.logp_and_grad(bound.initial_params())
        >>> grad.shape
        (19,)
        """
        return self._evaluate(params, batch, grad=True)

    # The name before every target shared logp_and_grad; public API.
    elbo_and_grad = logp_and_grad

    def _evaluate(self, params, batch, grad):
        theta, log_noise, mean, Ls, Z = self.split(params)
        idx, scale = batch_indices(batch, self.n)
        if idx is None:
            X, y, offset = self.X, self.y, self.offset
        else:
            X, y = self.X[idx], self.y[idx]
            offset = None if self.offset is None else self.offset[idx]
        # _in_one_call asks _compiled_q again: switching the rules off after
        # construction (as the tests and benchmarks do, to reach the
        # interpreted terms) must switch this path off too.
        if grad and self._one_call:
            done = self._in_one_call(theta, mean, Ls, Z, X, y, scale)
            if done is not None:
                return self._with_prior(params, *done)
        R = inducing_factor(self.adapter, theta, Z, self.jitter)
        A, gamma, free = project(self.adapter, theta, Z, X, R)
        terms = self._given_projection(
            mean, Ls, log_noise, (A, gamma, free), y, offset, scale, grad=grad
        )
        if not grad:
            return self._with_prior(params, terms[0])
        value, out, Abar, gbar = terms
        pulled = pullback(
            self.adapter,
            theta,
            Z,
            X,
            R,
            A,
            Abar,
            gbar,
            self.jitter,
            inputs=self.learn_inducing,
        )
        if self.learn_inducing:
            out[: self.n_kernel_params], grad_Z = pulled
            out[self._Z_slice] = grad_Z.reshape(-1)
        else:
            out[: self.n_kernel_params] = pulled
        return self._with_prior(params, value, out)

    def _with_prior(self, params, value, out=None):
        """``value`` plus the log prior, and ``out`` plus its gradient if given.

        A value that is not finite becomes ``-inf``. Returns the value, or
        ``(value, out)`` with ``out``.
        """
        if self.prior_set is not None:
            prior_value, prior_grad = self.prior_set.log_prob(params[: self.n_hyper])
            value += prior_value
            if out is not None:
                out[: self.n_hyper] += prior_grad
        value = value if np.isfinite(value) else -np.inf
        return value if out is None else (value, out)

    def _given_projection(
        self, mean, Ls, log_noise, projection, y, offset, scale, grad
    ):
        """The bound without the prior, given the projection ``(A, gamma, free)``.

        ``A = R^-1 K(Z, X)`` and ``gamma`` the clamped conditional
        variances (see ``project``). Returns a 1-tuple of the value, or
        with ``grad`` the value, the gradient with its ``m``, ``L`` (and log
        noise) entries filled, ``Abar = dF/dA`` and ``dF/d diag K(X, X)``,
        for a pullback to the kernel.
        """
        if grad and offset is None:
            done = self._compiled_terms(mean, Ls, projection, y, scale)
            if done is not None:
                return done
        A, gamma, free = projection
        # L_c' A for every latent; a batched matmul runs in BLAS, where
        # einsum's generic loop was 25 times slower (m = 80, n = 147, C = 4)
        B = np.matmul(Ls.transpose(0, 2, 1), A)
        mu = A.T @ mean
        if offset is not None:
            mu += offset[:, None]
        var = gamma[:, None] + np.einsum("cik,cik->kc", B, B)
        likelihood = self._likelihood_at(log_noise)

        diag_L = np.diagonal(Ls, axis1=1, axis2=2)
        kl = 0.5 * (
            float(np.sum(Ls * Ls))
            + float(np.vdot(mean, mean))
            - self.n_inducing * self.n_latent
            - 2.0 * float(np.sum(np.log(diag_L)))
        )
        value = -kl
        if not grad:
            elp = sparse_expected_log_prob(likelihood, y, mu, var, self.n_latent)
            return (value + scale * float(np.sum(elp)),)

        elp, d_mu, d_var, d_noise = likelihood_terms(
            likelihood, y, mu, var, self.n_latent, self.learn_noise
        )
        value += scale * float(np.sum(elp))
        g_mu = scale * d_mu
        g_s = scale * d_var
        gbar = np.sum(g_s, axis=1) * free

        out = np.empty(self.n_params)
        out[self._m_slice] = (A @ g_mu - mean).reshape(-1)
        Abar = mean @ g_mu.T - 2.0 * A * gbar
        packed = np.empty((self.n_latent, self._n_tri))
        for c in range(self.n_latent):
            Ag = A * g_s[:, c]
            Lbar = 2.0 * Ag @ B[c].T - Ls[c]  # data term, then -KL off-diagonal
            Abar += 2.0 * Ls[c] @ (B[c] * g_s[:, c])
            tri = Lbar[self._rows, self._cols]
            d = diag_L[c]
            # log-diagonal: chain factor L_jj on the data part, and -KL gives
            # 1 - L_jj^2 in total (the -L_jj above already holds -L_jj * L_jj
            # once multiplied by the chain factor).
            tri[self._on_diag] = tri[self._on_diag] * d + 1.0
            packed[c] = tri
        out[self._L_slice] = packed.reshape(-1)
        if self.learn_noise:
            out[self.n_kernel_params] = scale * float(np.sum(d_noise))
        return value, out, Abar, gbar

    def _subset_in_one_call(self, params, idx, kernels, weights, y, scale):
        """A selection's subset bound in one compiled call, or None.

        By :func:`logit_subset_into` or :func:`softmax_subset_into`:
        ``kernels`` are the candidates' ``(K(Z, Z), K(Z, X), diag K(X, X))``
        and ``weights`` their ``dF/dK`` so far, added to in place; ``idx``
        the subset, of which this bound is made. Returns the value (no
        prior) and the gradient with its kernel entries zero. None, with
        ``weights`` untouched, where :meth:`_in_one_call` would be.
        """
        if self.offset is not None:
            return None
        _, _, mean, Ls, _ = self.split(params)
        compiled = self._compiled_q(mean, Ls, y, scale)
        if compiled is None:
            return None
        kind, q = compiled
        subset_into = logit_subset_into if kind == "logit" else softmax_subset_into
        status, value, g_m, g_L = subset_into(
            *kernels, np.asarray(idx, dtype=np.int64), self.jitter, *q,
            LAPACK, *weights,
        )  # fmt: skip
        if status != DONE:
            return None
        return value, self._q_gradient(g_m, g_L)

    def _prior_bound(self, params, X, y, scale):
        """The bound with no inducing inputs (``q(f)`` the prior), and its
        gradient, the prior of the hyperparameters included.

        A selection of inducing inputs scores the empty subset by it.
        ``X`` and ``y`` are rows of the data (a minibatch) and ``scale``
        weights their terms to the whole set; the gradient is zero outside
        the kernel's (and noise's) entries.
        """
        n_kernel = self.n_kernel_params
        theta = params[:n_kernel]
        kdiag = self.adapter.diag(theta, X)
        likelihood = self.likelihood
        if self.learn_noise:
            likelihood = gaussian_with_noise(likelihood, params[n_kernel])
        C = self.n_latent
        elp, _, d_var, d_noise = likelihood_terms(
            likelihood,
            y,
            np.zeros((kdiag.size, C)),
            np.repeat(kdiag[:, None], C, axis=1),
            C,
            self.learn_noise,
        )
        grad = np.zeros(self.n_params)
        # every latent has the same prior variance, so their terms add
        grad[:n_kernel] = scale * (d_var.sum(axis=1) @ self.adapter.diag_grad(theta, X))
        if self.learn_noise:
            grad[n_kernel] = scale * float(np.sum(d_noise))
        value = scale * float(np.sum(elp))
        if self.prior_set is not None:
            prior_value, prior_grad = self.prior_set.log_prob(params[: self.n_hyper])
            value += prior_value
            grad[: self.n_hyper] += prior_grad
        return value, grad

    def _subsets_in_one_call(self, params, masks, kernels, weights, y, scale):
        """A runner of subset bounds in compiled calls, or None.

        For a selection among this bound's inducing inputs (``masks``, one
        row per subset): ``run(first, values, total)`` scores subsets
        ``first, first + 1, ...`` of ``masks``
        (:mod:`~._selective_numba`), each bound's value (no prior) into
        ``values`` and its gradient added to the ``m`` and ``L`` entries
        of ``total`` (this bound's vector), as :meth:`_subset_in_one_call`
        scores one subset, and returns the subset it stopped at (empty, or
        handed back to NumPy). None where :meth:`_subset_in_one_call`
        would be.
        """
        if self.offset is not None:
            return None
        compiled = self._compiled_likelihood(y, scale)
        if compiled is None:
            return None
        kind, likelihood = compiled
        m, C = self.n_inducing, self.n_latent
        mean = np.ascontiguousarray(params[self._m_slice].reshape(m, C))
        L_values = self._factor_entries(params[self._L_slice]).reshape(-1)
        subsets_into = logit_subsets_into if kind == "logit" else softmax_subsets_into
        tail = (*likelihood, LAPACK, *weights)

        def run(first, values, total):
            return subsets_into(
                *kernels, masks, first, self.jitter, mean, L_values, *tail,
                values, total[self._m_slice], total[self._L_slice],
            )  # fmt: skip

        return run

    def _compiled_q(self, mean, Ls, y, scale):
        """The compiled likelihood's kind and its ``q(u)`` arguments, or None.

        ``("logit", args)`` or ``("softmax", args)``, ``args`` being what the
        compiled terms (:func:`logit_given_projection`,
        :func:`softmax_given_projection`) and the subset passes take after
        the projection or the kernels: ``q(u)``'s mean and factors (one
        latent's for the logit), then :meth:`_compiled_likelihood`'s.
        """
        compiled = self._compiled_likelihood(y, scale)
        if compiled is None:
            return None
        kind, likelihood = compiled
        if kind == "logit":
            mean, Ls = mean[:, 0], Ls[0]
        q = (np.ascontiguousarray(a, dtype=np.float64) for a in (mean, Ls))
        return kind, (*q, *likelihood)

    def _compiled_likelihood(self, y, scale):
        """``("logit", (y, scale, *rules, small_var))`` or ``("softmax", (labels,
        scale, draws, small_var))``, the compiled terms' arguments after ``q(u)``;
        None without a compiled form, or for labels that are not class indices."""
        if getattr(self, "_logit_rules", None) is not None:
            y = np.ascontiguousarray(y, dtype=np.float64)
            return "logit", (y, float(scale), *self._logit_rules, SMALL_VAR)
        if getattr(self, "_softmax_labels", None) is None:
            return None
        if y is self.y:
            # the full data's labels, checked and converted at construction
            labels = self._softmax_labels
        elif class_indices(y, self.n_latent):
            labels = np.ascontiguousarray(y, dtype=np.int64)
        else:
            return None
        draws = np.ascontiguousarray(self.likelihood.default_draws())
        return "softmax", (labels, float(scale), draws, SMALL_VAR)

    def _q_gradient(self, g_m, g_L):
        """A gradient vector with the ``m`` and ``L`` entries filled, the rest 0."""
        out = np.zeros(self.n_params)
        out[self._m_slice] = g_m
        out[self._L_slice] = g_L
        return out

    def _in_one_call(self, theta, mean, Ls, Z, X, y, scale):
        """The bound (no prior) and its gradient by :func:`logit_bound` or
        :func:`softmax_bound`, or None.

        None where the likelihood has no compiled form (rules switched off,
        labels that are not class indices), where the jittered ``K(Z, Z)``
        is not positive definite or a latent variance is below the
        likelihood's small-variance limit: the NumPy path raises, or
        switches rule, there.
        """
        compiled = self._compiled_q(mean, Ls, y, scale)
        if compiled is None:
            return None
        kind, q = compiled
        spec = self.adapter.spec
        whole_bound = logit_bound if kind == "logit" else softmax_bound
        status, value, g_theta, g_m, g_L, g_Z = whole_bound(
            X, np.ascontiguousarray(Z, dtype=np.float64), theta, spec.defaults,
            spec.theta_index, spec.base, self.jitter, *q, self.learn_inducing,
            LAPACK, workspace(self.n_inducing, X.shape[0]),
        )  # fmt: skip
        if status != DONE:
            return None
        out = self._q_gradient(g_m, g_L)
        out[: self.n_kernel_params] = g_theta
        if self.learn_inducing:
            out[self._Z_slice] = g_Z.reshape(-1)
        return value, out

    def _compiled_terms(self, mean, Ls, projection, y, scale):
        """:meth:`_given_projection`'s outputs from one compiled call, or None.

        None where the likelihood has no compiled form, for labels other than
        the bound's own (a selection's subsets pass theirs), and where a
        latent variance is below the likelihood's small-variance limit (the
        logit rule switches there).
        """
        compiled = self._compiled_q(mean, Ls, y, scale)
        if compiled is None:
            return None
        kind, q = compiled
        terms = logit_given_projection if kind == "logit" else softmax_given_projection
        A, gamma, free = projection
        ok, value, g_m, g_L, Abar, gbar = terms(
            np.ascontiguousarray(A, dtype=np.float64),
            np.ascontiguousarray(gamma, dtype=np.float64),
            np.ascontiguousarray(free, dtype=np.bool_),
            *q,
        )
        if not ok:
            return None
        return value, self._q_gradient(g_m, g_L), Abar, gbar

    def __repr__(self):
        return (
            f"SVGPBound(n={self.n}, m={self.n_inducing}, n_latent={self.n_latent}, "
            f"n_params={self.n_params}, learn_inducing={self.learn_inducing})"
        )
