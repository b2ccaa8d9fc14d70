"""The whitened sparse target's evaluation in compiled calls.

:class:`~skgp_bayes.targets.sparse.SparseWhitenedTarget` evaluates here
when its kernel has a compiled fast path and ``K(Z, Z)`` is small: the same
function and gradient as its NumPy path (to round-off), with the kernel
algebra in :mod:`skgp_bayes.targets._sparse_numba` and a Gaussian
likelihood's closed form written out rather than through a likelihood
object rebuilt for every noise value. HMC calls this tens of thousands of
times on small problems, where per-call overhead, not arithmetic, set the
cost; so a Bernoulli-logit or softmax target with no mean offset, the
variational MCMC classifier's, takes one compiled call for the whole value
and gradient (:func:`~skgp_bayes.targets._likelihood_numba.logit_joint`,
:func:`~skgp_bayes.targets._likelihood_numba.softmax_joint`): on fair
(n = 300, m = 18) one gradient in an HMC fit went from 127 to 112 us, the
Python between three compiled calls having been most of the difference.
"""

import threading

import numpy as np
from scipy.special import gammaln

from ..exceptions import NotPSDError
from ..likelihoods._base import SMALL_VAR
from ..priors import Gamma, HalfCauchyVariance, LogNormal
from . import _likelihood_numba, _sparse_numba
from ._sparse_numba import LAPACK
from ._sparse_shared import (
    gaussian_terms,
    likelihood_terms,
    poisson_terms,
    sparse_expected_log_prob,
)

__all__ = [
    "compiled_prior",
    "evaluate_compiled",
    "has_workspace",
    "thread_buffer",
    "workspace",
]

_LOG_2PI = float(np.log(2.0 * np.pi))

# One set of scratch matrices per thread, for the last shape it evaluated.
_SCRATCH = threading.local()
# Above this many bytes the matrices are allocated per evaluation: a buffer
# is kept alive between fits, and at that size the O(m^3) arithmetic dwarfs
# the page faults that reuse saves (about 5 ms in 28 at m = 600, batch 256).
SCRATCH_MAX_BYTES = 64 * 2**20
# Below this many inducing inputs the matrices are small enough for the
# allocator to recycle without page faults, and fresh ones were as quick or
# quicker (one logit gradient, n = 300, one core: 123 against 129 us at
# m = 20, 1.23 against 1.29 ms at 120, 2.38 against 2.47 at 180; and
# 3.9 against 2.95 ms at 200, where faults set in).
SCRATCH_MIN_INDUCING = 200
_NO_WORK = np.empty(0)


def has_workspace(m, n):
    """Whether :func:`workspace` gives ``m`` and ``n`` a buffer (not an empty one).

    Examples
    --------
    >>> from skgp_bayes.targets._sparse_compiled import has_workspace
    >>> has_workspace(300, 5), has_workspace(30, 5)
    (True, False)
    """
    if m < SCRATCH_MIN_INDUCING:
        return False
    return 8 * _sparse_numba.work_size(m, n) <= SCRATCH_MAX_BYTES


def workspace(m, n):
    """Scratch memory for evaluations with ``m`` inducing inputs and ``n`` rows.

    The same buffer on every call from one thread with the same shape, so
    successive evaluations (a particle's gradients, HMC's leapfrog steps)
    reuse the memory of the last (see
    :func:`~skgp_bayes.targets._sparse_numba.scratch`); each thread its
    own, so particles evaluated on threads never share one. Below
    :data:`SCRATCH_MIN_INDUCING` inducing inputs and beyond
    :data:`SCRATCH_MAX_BYTES`, an empty buffer: fresh matrices each time.

    Parameters
    ----------
    m, n : int

    Returns
    -------
    ndarray of shape (work_size(m, n),) or (0,)

    Examples
    --------
    >>> from skgp_bayes.targets._sparse_compiled import workspace
    >>> work = workspace(300, 5)
    >>> work.shape, workspace(300, 5) is work
    ((276000,), True)
    >>> workspace(30, 5).size  # small: fresh matrices
    0
    """
    if not has_workspace(m, n):
        return _NO_WORK
    return thread_buffer(_SCRATCH, (m, n), _sparse_numba.work_size(m, n))


def thread_buffer(store, key, size):
    """The calling thread's buffer in ``store`` for ``key``, kept for the next call.

    Each thread keeps one buffer, for the last ``key`` it asked for: a
    thread's successive evaluations reuse the memory of the last, and
    threads never share one.

    Parameters
    ----------
    store : threading.local
    key : hashable
    size : int
        Entries of a fresh buffer.

    Returns
    -------
    ndarray of shape (size,)

    Examples
    --------
    >>> import threading
    >>> from skgp_bayes.targets._sparse_compiled import thread_buffer
    >>> store = threading.local()
    >>> thread_buffer(store, 3, 3) is thread_buffer(store, 3, 3)
    True
    """
    kept = getattr(store, "kept", None)
    if kept is not None and kept[0] == key:
        return kept[1]
    buffer = np.empty(size)
    store.kept = (key, buffer)
    return buffer


def compiled_prior(prior_set):
    """Arrays for :func:`_sparse_numba.log_prior_theta`, or None.

    Only when every entry's prior is exactly a
    :class:`~skgp_bayes.priors.Gamma`, a
    :class:`~skgp_bayes.priors.LogNormal` or a
    :class:`~skgp_bayes.priors.HalfCauchyVariance` (the default policy's);
    any other prior keeps :meth:`~skgp_bayes.priors.PriorSet.log_prob`.

    Parameters
    ----------
    prior_set : PriorSet or None

    Returns
    -------
    tuple of ndarray or None
        ``(kind, a, b, const)``, one entry per hyperparameter.

    Examples
    --------
    >>> from skgp_bayes.priors import Gamma, PriorSet
    >>> from skgp_bayes.targets._sparse_compiled import compiled_prior
    >>> kind, a, b, const = compiled_prior(
    ...     PriorSet({"length_scale": slice(0, 2)}, {"length_scale": Gamma(2.0, 1.0)})
    ... )
    >>> kind.tolist(), a.tolist()
    ([0, 0], [2.0, 2.0])
    """
    entries = getattr(prior_set, "entry_priors", None)
    if not entries:
        return None
    kind, a, b, const = [], [], [], []
    for prior in entries:
        if type(prior) is Gamma:
            kind.append(0)
            a.append(prior.shape)
            b.append(prior.scale)
            const.append(-prior.shape * np.log(prior.scale) - gammaln(prior.shape))
        elif type(prior) is LogNormal:
            kind.append(1)
            a.append(prior.mu)
            b.append(prior.sigma)
            const.append(-np.log(prior.sigma) - 0.5 * _LOG_2PI)
        elif type(prior) is HalfCauchyVariance:
            kind.append(2)
            a.append(2.0 * np.log(prior.scale))
            b.append(prior.scale)
            const.append(-np.log(np.pi * prior.scale))
        else:
            return None
    return (np.array(kind), np.array(a), np.array(b), np.array(const))


def data_terms(target, y, mu, gamma, free, log_noise, scale, grad):
    """The expected log likelihood and its derivatives in ``mu``, ``gamma``.

    Returns ``(value, g_mu, gbar, d_noise_sum)``: the scaled sum of the
    expectations, ``d/dmu`` ``(n, C)``, ``d/dgamma`` (zero where the
    variance is clamped) and the noise derivative's sum (None without a
    learned noise); only the value when ``grad`` is False.
    """
    C = target.n_latent
    if target._closed_form:
        return gaussian_terms(y, mu[:, 0], gamma, free, log_noise, scale, grad)
    if target._poisson:
        log_factorials = (
            target._log_factorials if y is target.y else float(np.sum(gammaln(y + 1.0)))
        )
        return poisson_terms(y, mu[:, 0], gamma, free, log_factorials, scale, grad)
    if target._softmax:
        elp, d_mu, d_var = target._softmax_terms(y, mu, gamma)
        value = scale * float(np.sum(elp))
        if not grad:
            return value, None, None, None
        return value, scale * d_mu, scale * np.sum(d_var, axis=1) * free, None
    if target._logit and grad and gamma.min() >= SMALL_VAR:
        # Below SMALL_VAR the likelihood switches to the limit of the
        # variance derivative; the general branch keeps that rule.
        elp, d_mu, d_var = _likelihood_numba.logit_expectation(
            _labels(target, y), mu[:, 0], np.sqrt(gamma), *target._logit_rules
        )
        value = scale * float(np.sum(elp))
        return value, scale * d_mu[:, None], scale * d_var * free, None
    likelihood = target._likelihood_at(log_noise)
    var = np.repeat(gamma[:, None], C, axis=1)
    if not grad:
        elp = sparse_expected_log_prob(likelihood, y, mu, var, C)
        return scale * float(np.sum(elp)), None, None, None
    elp, d_mu, d_var, d_noise = likelihood_terms(
        likelihood, y, mu, var, C, target.learn_noise
    )
    value = scale * float(np.sum(elp))
    d_noise_sum = None if d_noise is None else float(np.sum(d_noise))
    return value, scale * d_mu, scale * np.sum(d_var, axis=1) * free, d_noise_sum


def _labels(target, y):
    return target._logit_y if y is target.y else np.asarray(y, dtype=np.float64)


def _not_psd(target, theta):
    return NotPSDError(
        f"The jittered K(Z, Z) is not positive definite ({target._context(theta)})."
    )


def _prior_terms(target, hyper):
    """``(value, gradient)`` of the log prior of the hyperparameters."""
    if target._prior_arrays is not None:
        return _sparse_numba.log_prior_theta(hyper, *target._prior_arrays)
    if target.prior_set is not None:
        return target.prior_set.log_prob(hyper)
    return 0.0, None


def _in_one_call(target, params, X, y, scale):
    """Value and gradient by one compiled call, or None.

    :func:`_likelihood_numba.logit_joint` or
    :func:`_likelihood_numba.softmax_joint`; None where a logit target's
    conditional variance is below ``SMALL_VAR`` (the general path applies
    the likelihood's rule there).
    """
    nk, nh, C = target.n_kernel_params, target.n_hyper, target.n_latent
    theta = params[:nk]
    v = np.ascontiguousarray(params[nh:]).reshape(target.n_inducing, C)
    spec = target.adapter.spec
    kernel = (X, target.Z, theta, spec.defaults, spec.theta_index, spec.base)
    if target._logit:
        status, value, g_theta, g_v = _likelihood_numba.logit_joint(
            *kernel, target.jitter, v, _labels(target, y), scale,
            *target._logit_rules, SMALL_VAR, LAPACK,
            workspace(target.n_inducing, X.shape[0]),
        )  # fmt: skip
    else:
        labels = (
            target._softmax_labels if y is target.y else target.likelihood._labels(y)
        )
        status, value, g_theta, g_v = _likelihood_numba.softmax_joint(
            *kernel, target.jitter, v, labels, scale, *target._softmax_nodes, LAPACK,
            workspace(target.n_inducing, X.shape[0]),
        )  # fmt: skip
    if status == _likelihood_numba.NOT_PSD:
        raise _not_psd(target, theta)
    if status != _likelihood_numba.DONE:
        return None
    prior_value, prior_grad = _prior_terms(target, params[:nh])
    out = np.empty(target.n_params)
    out[nh:] = g_v
    out[:nk] = g_theta
    if prior_grad is not None:
        out[:nh] += prior_grad
    value += prior_value
    return (value if np.isfinite(value) else -np.inf), out


def _checked_params(target, params):
    params = np.asarray(params, dtype=np.float64)
    if params.shape != (target.n_params,):
        raise ValueError(
            f"params must have shape ({target.n_params},); got {params.shape}."
        )
    return params


def evaluate_compiled(target, params, batch, grad):
    """``SparseWhitenedTarget._evaluate`` for fast-path kernels.

    Parameters
    ----------
    target : SparseWhitenedTarget
    params : array-like of shape (n_params,)
    batch : None, int or ndarray of int
        As in :meth:`~skgp_bayes.targets.sparse.SparseWhitenedTarget.log_prob`.
    grad : bool

    Returns
    -------
    float, or (float, ndarray of shape (n_params,)) when ``grad``
        ``-inf`` for a value that is not finite (NaN never escapes); a
        :class:`~skgp_bayes.exceptions.NotPSDError` when the jittered
        ``K(Z, Z)`` is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.targets import SparseWhitenedTarget
    >>> from skgp_bayes.targets._sparse_compiled import evaluate_compiled
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 2))
    >>> y = (X[:, 0] > 0).astype(float)
    >>> adapter = KernelAdapter(RBF([1.0, 1.0]))
    >>> target = SparseWhitenedTarget(adapter, X, y, X[:5], Bernoulli())
    >>> params = np.zeros(target.n_params)
    >>> value, grad = evaluate_compiled(target, params, None, True)
    >>> bool(np.isclose(value, target.log_prob(params))), grad.shape
    (True, (7,))
    """
    params = _checked_params(target, params)
    X, y, offset, scale = target._data(batch)
    if target._one_call and grad and offset is None:
        fused = _in_one_call(target, params, X, y, scale)
        if fused is not None:
            return fused
    nk, nh, C = target.n_kernel_params, target.n_hyper, target.n_latent
    theta = params[:nk]
    v = np.ascontiguousarray(params[nh:]).reshape(target.n_inducing, C)
    adapter, base = target.adapter, target.adapter.spec.base
    variance, noise, inv_ell, ard = adapter._fast_params(theta, X.shape[1])
    work = workspace(target.n_inducing, X.shape[0])
    ok, R, A, gamma, free, mu, Kuu, Kuf = _sparse_numba.forward(
        X, target.Z, inv_ell, variance, noise, base, target.jitter, v, LAPACK, work
    )
    if not ok:
        raise _not_psd(target, theta)
    if offset is not None:
        mu += offset[:, None]
    prior_value, prior_grad = _prior_terms(target, params[:nh])
    value = -0.5 * float(v.ravel() @ v.ravel()) + prior_value
    log_noise = float(params[nk]) if target.learn_noise else target._fixed_log_noise
    data, g_mu, gbar, d_noise_sum = data_terms(
        target, y, mu, gamma, free, log_noise, scale, grad
    )
    value += data
    if not grad:
        return value if np.isfinite(value) else -np.inf
    g_mu = np.ascontiguousarray(g_mu, dtype=np.float64)
    out = np.empty(target.n_params)
    out[nh:] = (A @ g_mu - v).ravel()
    if nk:
        gbar = np.ascontiguousarray(gbar, dtype=np.float64)
        g_phi = _sparse_numba.backward(
            X, target.Z, inv_ell, variance, noise, base, ard, target.jitter,
            R, A, Kuu, Kuf, v, g_mu, gbar, LAPACK, work,
        )  # fmt: skip
        out[:nk] = g_phi[adapter.spec.theta_index]
    if target.learn_noise:
        out[nk] = scale * d_noise_sum
    if prior_grad is not None:
        out[:nh] += prior_grad
    # -inf stays -inf for the engine to reject; NaN never escapes.
    return (value if np.isfinite(value) else -np.inf), out
