"""Laplace approximation of a Gaussian-process classifier's latent posterior.

The mode of ``p(f | theta, y)`` by Newton's method and the Laplace-approximate
log marginal likelihood with its gradient (Rasmussen and Williams, 2006,
algorithms 3.1 and 5.1) for a Bernoulli likelihood; the sum of such marginals
over one-vs-rest problems as a surrogate for the hyperparameters; and draws of
the whitened latents from the Gaussian (Laplace) approximation, for binary and
softmax likelihoods, with the precision factors that precondition a sampler.
"""

from typing import NamedTuple

import numpy as np
from scipy.linalg import block_diag, solve_triangular
from scipy.special import expit, softmax

from ..likelihoods import Bernoulli
from ..linalg import cho_inverse, cho_solve, cholesky
from ..linalg._numba_ops import flush_tiny
from ..linalg.diagonal import add_to_diagonal
from ._laplace_numba import (
    LAPLACE_ROUTINES,
    NEWTON_MAX_ITER,
    NEWTON_TOL,
    laplace_logit,
    laplace_logit_draw,
)
from ._laplace_numba import OK as _COMPILED_OK
from ._sparse_shared import add_jitter_weight
from ._whitened_compiled import rbf_arguments

__all__ = [
    "example_binary_problem",
    "BinaryLaplaceProblem",
    "LaplaceDraw",
    "LaplaceSurrogate",
    "binary_laplace_draw",
    "binary_precision_factor",
    "covariance_root",
    "softmax_chord_draw",
    "softmax_laplace_draw",
    "surrogate_cov",
]

# One-sided step of the surrogate's Hessian in log units (see surrogate_cov).
_HESSIAN_STEP = 1e-4


def _third_derivative(likelihood, y, f):
    """``d^3 log p(y | f) / df^3`` for a Bernoulli likelihood."""
    if likelihood.link == "logit":
        s = expit(f)
        return -s * (1.0 - s) * (1.0 - 2.0 * s)
    sign = 2.0 * np.asarray(y, dtype=np.float64) - 1.0
    z = sign * f
    # lambda = phi(z) / Phi(z) = d log Phi / dz, from the likelihood's slope.
    lam = likelihood.grad_log_prob(np.ones_like(z), z)
    return sign * lam * ((z + lam) * (z + 2.0 * lam) - 1.0)


class _LaplaceFit:
    """Mode and curvature of ``p(f | theta, y)`` for a Bernoulli likelihood."""

    __slots__ = ("a", "f", "objective", "W", "sW", "Lb")

    def __init__(self, a, f, objective, W, sW, Lb):
        self.a, self.f, self.objective = a, f, objective
        self.W, self.sW, self.Lb = W, sW, Lb


def _curvature(K, y, likelihood, f):
    W = np.maximum(-likelihood.hess_diag_log_prob(y, f), 0.0)
    sW = np.sqrt(W)
    B = sW[:, None] * K * sW[None, :]
    # Subnormal entries (a saturated likelihood has W near 1e-300) slow the
    # factorisation down a hundredfold and change nothing: flush them.
    flush_tiny(B)
    add_to_diagonal(B, 1.0)
    # B = I + sW K sW has eigenvalues >= 1: it always factorises.
    Lb, _ = cholesky(B, max_tries=0, warn=False)
    return W, sW, Lb


def _psi(a, f, y, likelihood):
    return -0.5 * float(a @ f) + float(np.sum(likelihood.log_prob(y, f)))


def _newton_mode(K, y, likelihood, a0=None):
    """Algorithm 3.1 of Rasmussen and Williams with a backtracking step.

    Parameters are the (jittered) Gram matrix, labels in {0, 1}, the
    likelihood and an optional warm start ``a0`` (``f = K a``). Newton's
    proposal is taken unless it would move ``f`` by at most ``NEWTON_TOL
    (1 + max |f|)``, where the iterations end with the curvature already at
    hand: one factorisation fewer per mode than moving first and factorising
    again (three against four from the warm starts of an optimiser's path).
    A backtracked step whose gain is negligible ends them after the
    curvature at its end. :func:`._laplace_numba.laplace_logit` takes the
    same steps.
    """
    n = K.shape[0]
    a = np.zeros(n) if a0 is None else np.array(a0, dtype=np.float64)
    f = K @ a
    obj = _psi(a, f, y, likelihood)
    stalled = False
    for it in range(NEWTON_MAX_ITER + 1):
        W, sW, Lb = _curvature(K, y, likelihood, f)
        if stalled or it == NEWTON_MAX_ITER or not n:
            break
        b = W * f + likelihood.grad_log_prob(y, f)
        a_new = b - sW * cho_solve(Lb, sW * (K @ b))
        f_new = K @ a_new
        if np.max(np.abs(f_new - f)) <= NEWTON_TOL * (1.0 + np.max(np.abs(f))):
            break
        step = a_new - a
        t = 1.0
        a_try, f_try = a_new, f_new
        obj_try = _psi(a_try, f_try, y, likelihood)
        while not (obj_try >= obj - 1e-12 * abs(obj) or t < 1e-6):
            t *= 0.5
            a_try = a + t * step
            f_try = K @ a_try
            obj_try = _psi(a_try, f_try, y, likelihood)
        stalled = abs(obj_try - obj) <= 1e-13 * (1.0 + abs(obj_try))
        a, f, obj = a_try, f_try, obj_try
    return _LaplaceFit(a, f, obj, W, sW, Lb)


def _compiled_plan(base, likelihood, y):
    """:func:`laplace_logit`'s arguments but theta, the warm start and the
    gradient flag, or None where the problem has no compiled form (a probit
    link, a kernel other than ``[c *] RBF [+ White]``)."""
    if not (type(likelihood) is Bernoulli and likelihood.link == "logit"):
        return None
    kernel = rbf_arguments(base)
    if kernel is None:
        return None
    return (*kernel, np.ascontiguousarray(y, dtype=np.float64))


class BinaryLaplaceProblem:
    """Laplace-approximate log marginal likelihood of one binary problem.

    Uses the whitened target's jittered Gram matrix, so the surrogate and
    the sampled model share one covariance. The Newton start is the last
    mode found (warm start), which makes the optimiser's path cheap.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets.laplace import BinaryLaplaceProblem
    >>> from skgp_bayes.targets.laplace import example_binary_problem
    >>> target, y, problem = example_binary_problem()
    >>> value, grad = problem.log_marginal_and_grad(np.zeros(2))
    >>> round(value, 4), grad.shape
    (-3.8646, (2,))
    """

    def __init__(self, base, y01, likelihood):
        self.base = base  # a WhitenedLatentTarget: adapter, X, gram
        self.y = np.asarray(y01, dtype=np.float64)
        self.likelihood = likelihood
        self.a = None
        self._plan = _compiled_plan(base, likelihood, self.y)

    def _compiled(self, theta, with_grad):
        """``(value, grad)`` from :func:`laplace_logit`, or None where it failed.

        The mode's ``a`` is kept as the next warm start, as on the
        interpreted path.
        """
        a0 = np.zeros(self.y.size) if self.a is None else self.a
        status, value, a, grad = laplace_logit(
            np.ascontiguousarray(theta, dtype=np.float64),
            np.ascontiguousarray(a0, dtype=np.float64),
            *self._plan,
            with_grad,
            LAPLACE_ROUTINES,
        )
        if status != _COMPILED_OK:
            return None
        self.a = a
        return value, grad

    @property
    def compiled(self):
        """Whether the problem's evaluations and draws are compiled calls.

        Examples
        --------
        >>> from skgp_bayes.targets.laplace import example_binary_problem
        >>> target, y, problem = example_binary_problem()
        >>> problem.compiled
        True
        """
        return self._plan is not None

    def compiled_draw(self, theta, noise, a0, f0=None):
        """:func:`binary_laplace_draw` in one compiled call, or None.

        None without a compiled plan or where a factorisation failed (the
        interpreted draw then raises). Reads nothing of the problem's
        state and changes none of it.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.laplace import example_binary_problem
        >>> target, y, problem = example_binary_problem()
        >>> draw = problem.compiled_draw(np.zeros(2), np.zeros((2, 6)), np.zeros(6))
        >>> bool(np.allclose(draw.nu, draw.nu_hat))
        True
        """
        if self._plan is None:
            return None
        X, phi_defaults, theta_index, jitter, y = self._plan
        status, nu, nu_hat, f, L, W = laplace_logit_draw(
            np.ascontiguousarray(theta, dtype=np.float64),
            np.ascontiguousarray(a0, dtype=np.float64),
            np.zeros(0) if f0 is None else np.ascontiguousarray(f0, dtype=float),
            X,
            phi_defaults,
            theta_index,
            jitter,
            y,
            np.ascontiguousarray(noise, dtype=np.float64),
            LAPLACE_ROUTINES,
        )
        if status != _COMPILED_OK:
            return None
        return LaplaceDraw(nu, nu_hat, f, np.ascontiguousarray(L), W)

    def mode(self, theta, K=None):
        """Gram matrix and Newton mode of ``p(f | theta, y)``, from the warm start.

        ``K`` is the target's jittered Gram matrix at ``theta``, formed
        here when not given. The fit holds the mode ``f = K a``, the Newton
        objective, the curvature ``W`` with its root and the Cholesky factor
        of ``B = I + W^1/2 K W^1/2``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.laplace import BinaryLaplaceProblem
        >>> from skgp_bayes.targets.laplace import example_binary_problem
        >>> target, y, problem = example_binary_problem()
        >>> K, fit = problem.mode(np.zeros(2))
        >>> K.shape, bool(np.all(np.sign(fit.f) == 2 * y - 1))
        ((6, 6), True)
        """
        if K is None:
            K, _ = self.base.gram(theta)
        return K, _newton_mode(K, self.y, self.likelihood, self.a)

    def log_marginal(self, theta):
        """The Laplace-approximate log marginal likelihood alone.

        No gradient: the value a screen of starting points needs
        (:mod:`skgp_bayes._starts`), at the cost of the Newton iterations
        only. The mode is kept as the next warm start, as by
        :meth:`log_marginal_and_grad`: the screen's points come in order
        along its grid, so each starts Newton near its neighbour's mode.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.laplace import example_binary_problem
        >>> target, y, problem = example_binary_problem()
        >>> round(problem.log_marginal(np.zeros(2)), 4)
        -3.8646
        """
        if self._plan is not None:
            done = self._compiled(theta, False)
            if done is not None:
                return done[0]
        return self._warm_mode(theta)[2]

    def _warm_mode(self, theta):
        """Gram matrix, mode and log marginal; the mode kept as warm start."""
        K, fit = self.mode(theta)
        self.a = fit.a
        return K, fit, fit.objective - float(np.sum(np.log(np.diag(fit.Lb))))

    def log_marginal_and_grad(self, theta):
        """Algorithm 5.1 of Rasmussen and Williams, one fused contraction.

        Returns the Laplace-approximate log marginal likelihood at ``theta``
        and its gradient, and keeps the mode as the next warm start.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.laplace import BinaryLaplaceProblem
        >>> from skgp_bayes.targets.laplace import example_binary_problem
        >>> target, y, problem = example_binary_problem()
        >>> value, grad = problem.log_marginal_and_grad(np.zeros(2))
        >>> round(value, 4), grad.shape
        (-3.8646, (2,))
        """
        if self._plan is not None:
            done = self._compiled(theta, True)
            if done is not None:
                return done
        K, fit, value = self._warm_mode(theta)
        base = self.base
        if base.n_kernel_params == 0:
            return value, np.zeros(0)
        sW = fit.sW
        R = sW[:, None] * cho_inverse(fit.Lb) * sW[None, :]
        C = solve_triangular(fit.Lb, sW[:, None] * K, lower=True, check_finite=False)
        diag_sigma = np.diag(K) - np.einsum("ij,ij->j", C, C)
        # d log Z / d f_hat_i = -1/2 d log|B| / d f_hat_i = 1/2 Sigma_ii f'''_i,
        # with f''' the third derivative of log p (W = -f'').
        s2 = 0.5 * diag_sigma * _third_derivative(self.likelihood, self.y, fit.f)
        g = self.likelihood.grad_log_prob(self.y, fit.f)
        u = s2 - R @ (K @ s2)
        # d log Z = 1/2 a' dK a - 1/2 tr(R dK) + s2' (I - K R) dK g, each term
        # written as sum_ab W_ab dK_ab.
        Wt = 0.5 * np.outer(fit.a, fit.a) - 0.5 * R
        Wt += 0.5 * (np.outer(u, g) + np.outer(g, u))
        add_jitter_weight(Wt, base.jitter)
        return value, base.grad_contract(theta, Wt)


class LaplaceSurrogate:
    """Sum of binary Laplace marginals plus the prior, over theta blocks.

    One problem (binary) or one per class (one-vs-rest), with a shared
    theta or one block per class.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets.laplace import BinaryLaplaceProblem, LaplaceSurrogate
    >>> from skgp_bayes.targets.laplace import example_binary_problem
    >>> target, y, problem = example_binary_problem()
    >>> surrogate = LaplaceSurrogate([problem], 1, None, target.n_kernel_params)
    >>> value, grad = surrogate.logp_and_grad(np.zeros(2))
    >>> round(value, 4), grad.shape
    (-3.8646, (2,))
    """

    def __init__(self, problems, n_blocks, prior_set, n_kernel_params):
        self.problems = problems
        self.n = problems[0].y.size
        self.n_blocks = n_blocks
        self.prior_set = prior_set
        self.p = n_kernel_params

    @property
    def compiled(self):
        """Whether every problem evaluates and draws in one compiled call.

        Examples
        --------
        >>> from skgp_bayes.targets.laplace import LaplaceSurrogate
        >>> from skgp_bayes.targets.laplace import example_binary_problem
        >>> target, y, problem = example_binary_problem()
        >>> LaplaceSurrogate([problem], 1, None, 2).compiled
        True
        """
        return all(problem.compiled for problem in self.problems)

    def logp_and_grad(self, params):
        """Surrogate log density and gradient at the flat hyperparameters ``params``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.laplace import (
        ...     BinaryLaplaceProblem, LaplaceSurrogate)
        >>> from skgp_bayes.targets.laplace import example_binary_problem
        >>> target, y, problem = example_binary_problem()
        >>> surrogate = LaplaceSurrogate([problem], 1, None, 2)
        >>> value, grad = surrogate.logp_and_grad(np.zeros(2))
        >>> round(value, 4), grad.shape
        (-3.8646, (2,))
        """
        thetas = np.asarray(params, dtype=np.float64).reshape(self.n_blocks, self.p)
        value = 0.0
        grad = np.zeros_like(thetas)
        for c, problem in enumerate(self.problems):
            b = 0 if self.n_blocks == 1 else c
            v, g = problem.log_marginal_and_grad(thetas[b])
            value += v
            grad[b] += g
        if self.prior_set is not None:
            for b in range(self.n_blocks):
                v, g = self.prior_set.log_prob(thetas[b])
                value += v
                grad[b] += g
        return value, grad.reshape(-1)

    def log_prob(self, params):
        """The surrogate log density alone (see :meth:`logp_and_grad`).

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.targets.laplace import LaplaceSurrogate
        >>> from skgp_bayes.targets.laplace import example_binary_problem
        >>> target, y, problem = example_binary_problem()
        >>> surrogate = LaplaceSurrogate([problem], 1, None, 2)
        >>> round(surrogate.log_prob(np.zeros(2)), 4)
        -3.8646
        """
        thetas = np.asarray(params, dtype=np.float64).reshape(self.n_blocks, self.p)
        value = 0.0
        for c, problem in enumerate(self.problems):
            value += problem.log_marginal(thetas[0 if self.n_blocks == 1 else c])
        if self.prior_set is not None:
            for b in range(self.n_blocks):
                value += self.prior_set.log_prob(thetas[b])[0]
        return value


# One-sided step of the surrogate's Hessian in log units (see surrogate_cov).
_HESSIAN_STEP = 1e-4


def surrogate_cov(surrogate, centre, bounds, max_std):
    """Inverse negative Hessian of the surrogate at its MAP, one-sided differences.

    The Hessian is needed to a few percent (it spreads the initial
    hyperparameters and sets SVGD's preconditioner in ``theta``), so one
    extra gradient per coordinate (forward differences, truncation error
    ``h/2`` times the third derivative, about 1e-4 relative) does instead
    of two (central differences): ``p + 1`` surrogate evaluations in place
    of ``2 p``, the largest part of the initialisation with 31
    hyperparameters. A step that would leave the box goes the other way.
    The centre is evaluated last, so that every problem's Newton warm start
    is its mode at the MAP. The covariance's standard deviations are capped
    at ``max_std`` log units, and a diagonal stands in where it is not
    positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets.laplace import (
    ...     BinaryLaplaceProblem, LaplaceSurrogate, surrogate_cov)
    >>> from skgp_bayes.targets.laplace import example_binary_problem
    >>> target, y, problem = example_binary_problem()
    >>> surrogate = LaplaceSurrogate([problem], 1, None, target.n_kernel_params)
    >>> bounds = np.array([[-5.0, 5.0], [-5.0, 5.0]])
    >>> cov = surrogate_cov(surrogate, np.zeros(2), bounds, max_std=1.0)
    >>> cov.shape, bool(np.all(np.sqrt(np.diag(cov)) <= 1.0))
    ((2, 2), True)
    """
    p = centre.shape[0]
    shifted = np.empty((p, p))
    steps = np.where(centre + _HESSIAN_STEP <= bounds[:, 1], 1.0, -1.0) * _HESSIAN_STEP
    for i in range(p):
        point = centre.copy()
        point[i] += steps[i]
        shifted[i] = surrogate.logp_and_grad(point)[1]
    grad = surrogate.logp_and_grad(centre)[1]
    hess = (shifted - grad) / steps[:, None]
    precision = -0.5 * (hess + hess.T)
    try:
        cov = np.linalg.inv(precision)
        np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        cov = np.diag(1.0 / np.maximum(np.abs(np.diag(precision)), 1.0))
    std = np.sqrt(np.diag(cov))
    shrink = np.minimum(1.0, max_std / np.maximum(std, 1e-300))
    return cov * np.outer(shrink, shrink)


class LaplaceDraw(NamedTuple):
    """One particle's whitened latents from the Laplace approximation.

    Attributes
    ----------
    nu : ndarray of shape (n,)
        The draw.
    nu_hat : ndarray of shape (n,)
        The mode in whitened coordinates, ``L^-1 f``.
    f : ndarray of shape (n,)
        The mode of ``p(f | theta, y)``.
    L : ndarray of shape (n, n)
        The Gram matrix's lower Cholesky factor.
    W : ndarray of shape (n,)
        The likelihood's curvature at the mode.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets.laplace import LaplaceDraw
    >>> draw = LaplaceDraw(*(np.zeros(2),) * 3, np.eye(2), np.ones(2))
    >>> draw.L.shape
    (2, 2)
    """

    nu: np.ndarray
    nu_hat: np.ndarray
    f: np.ndarray
    L: np.ndarray
    W: np.ndarray


def binary_laplace_draw(problem, theta, noise, a0=None, f0=None):
    """Mode and one Laplace draw of the whitened latents at ``theta``.

    ``nu ~ N(nu_hat, P^-1)`` with ``P = I + A'A``, ``A = W^1/2 L``: the
    perturbation ``r = z1 + A' z2`` has covariance ``P``, and ``P^-1 r =
    r - A' B^-1 A r`` with ``B = I + A A' = I + W^1/2 K W^1/2``, already
    factorised by Newton's method.

    Newton starts from ``f0`` where given (``a0 = K^-1 f0``: the modes of
    nearby hyperparameters are close in ``f``, where ``a`` is not), else
    from ``a0``, else from zero. Nothing of ``problem`` changes, so draws
    may run on several threads at once; with a compiled plan (logit link,
    ``[c *] RBF [+ White]``) the draw is one call that releases the
    interpreter lock (:func:`~skgp_bayes.targets._laplace_numba.laplace_logit_draw`).

    Parameters
    ----------
    problem : BinaryLaplaceProblem
    theta : ndarray of shape (p,)
    noise : ndarray of shape (2, n)
        Standard normal ``(z1, z2)``.
    a0, f0 : ndarray of shape (n,), optional
        Newton's start.

    Returns
    -------
    LaplaceDraw

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets.laplace import binary_laplace_draw
    >>> from skgp_bayes.targets.laplace import example_binary_problem
    >>> target, y, problem = example_binary_problem()
    >>> noise = np.random.default_rng(0).standard_normal((2, 6))
    >>> draw = binary_laplace_draw(problem, np.zeros(2), noise)
    >>> draw.nu.shape, draw.L.shape, bool(np.allclose(draw.L @ draw.nu_hat, draw.f))
    ((6,), (6, 6), True)
    """
    n = problem.y.size
    a0 = np.zeros(n) if a0 is None else np.asarray(a0, dtype=np.float64)
    drawn = problem.compiled_draw(theta, noise, a0, f0)
    if drawn is not None:
        return drawn
    K, _ = problem.base.gram(theta)
    L, _ = cholesky(K, max_tries=0, warn=False)
    if f0 is not None:
        a0 = cho_solve(L, f0)
    fit = _newton_mode(K, problem.y, problem.likelihood, a0)
    nu_hat = L.T @ fit.a  # L^-1 f_hat with f_hat = K a = L L' a
    r = noise[0] + L.T @ (fit.sW * noise[1])
    Ar = fit.sW * (L @ r)
    nu = nu_hat + r - L.T @ (fit.sW * cho_solve(fit.Lb, Ar))
    return LaplaceDraw(nu, nu_hat, fit.f, L, fit.W)


def binary_precision_factor(L, W):
    """Lower Cholesky factor of the whitened Laplace precision ``I + L'WL``.


    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets.laplace import binary_precision_factor
    >>> L = np.array([[1.0, 0.0], [0.5, 1.0]])
    >>> W = np.array([0.25, 0.25])
    >>> R = binary_precision_factor(L, W)
    >>> bool(np.allclose(R @ R.T, np.eye(2) + L.T @ (W[:, None] * L)))
    True
    """
    P = L.T @ (W[:, None] * L)
    add_to_diagonal(P, 1.0)
    R, _ = cholesky(P, max_tries=0, warn=False)
    return R


def covariance_root(precision_factors):
    """``S`` with ``S S' = P^-1`` for a block-diagonal ``P = blockdiag(R R')``.

    ``S = R^-T`` per block: the preconditioner of the latent coordinates.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets.laplace import covariance_root
    >>> R = np.array([[2.0, 0.0], [1.0, 1.0]])
    >>> S = covariance_root([R, np.array([[3.0]])])
    >>> P = np.zeros((3, 3))
    >>> P[:2, :2], P[2, 2] = R @ R.T, 9.0
    >>> S.shape, bool(np.allclose(S @ S.T, np.linalg.inv(P)))
    ((3, 3), True)
    """
    blocks = []
    for R in precision_factors:
        eye = np.eye(R.shape[0])
        blocks.append(solve_triangular(R, eye, lower=True, trans=1, check_finite=False))
    return block_diag(*blocks)


def softmax_laplace_draw(target, thetas, nu0, rng):
    """Newton mode and one Laplace draw of ``nu`` for the softmax target.

    The Hessian of ``sum_i log softmax(F_i)[y_i]`` in ``F`` is
    ``-(diag(pi_i) - pi_i pi_i')`` per point, so in whitened coordinates
    the precision is ``I + Lam' W Lam`` with block ``(c, c')`` equal to
    ``L_c' diag(delta_cc' pi_c - pi_c pi_c') L_c'``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Softmax
    >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
    >>> from skgp_bayes.targets.laplace import softmax_laplace_draw
    >>> X = np.linspace(-2, 2, 6)[:, None]
    >>> y = np.array([0, 0, 1, 1, 2, 2])
    >>> target = WhitenedLatentTarget(
    ...     KernelAdapter(ConstantKernel() * RBF()), X, y, Softmax(3), None,
    ...     n_latent=3)
    >>> thetas = np.zeros((target.n_blocks, target.n_kernel_params))
    >>> rng = np.random.default_rng(0)
    >>> nu, mode, R = softmax_laplace_draw(target, thetas, np.zeros((3, 6)), rng)
    >>> nu.shape, mode.shape, R.shape
    ((3, 6), (3, 6), (18, 18))
    """
    C, n = target.n_latent, target.n
    factors = target.factors(thetas)
    Ls = [factors[target.block_of_latent(c)] for c in range(C)]
    nu = np.array(nu0, dtype=np.float64).reshape(C, n)

    def evaluate(nu):
        params = target.join(thetas, nu)
        F = target.latent(params, factors)
        value = target.log_likelihood(F) - 0.5 * float(np.vdot(nu, nu))
        return value, F

    value, F = evaluate(nu)
    for _ in range(NEWTON_MAX_ITER):
        G = target.likelihood.grad_log_prob(target.y, F)
        grad = np.stack([Ls[c].T @ G[:, c] for c in range(C)]) - nu
        R = _softmax_precision_factor(Ls, softmax(F, axis=1))
        step = cho_solve(R, grad.reshape(-1)).reshape(C, n)
        t = 1.0
        while True:
            new_value, new_F = evaluate(nu + t * step)
            if new_value >= value - 1e-12 * abs(value) or t < 1e-6:
                break
            t *= 0.5
        nu = nu + t * step
        gain = new_value - value
        value, F = new_value, new_F
        if t * float(np.max(np.abs(step))) <= NEWTON_TOL * (
            1.0 + float(np.max(np.abs(nu)))
        ) or abs(gain) <= 1e-13 * (1.0 + abs(value)):
            break
    R = _softmax_precision_factor(Ls, softmax(F, axis=1))
    z = rng.standard_normal(C * n)
    draw = solve_triangular(R, z, lower=True, trans=1, check_finite=False)
    return nu + draw.reshape(C, n), nu, R


def softmax_chord_draw(target, thetas, mode, R, rng):
    """One Laplace draw of ``nu`` at ``thetas`` from the MAP's Newton system,
    and the conditional mode it is drawn about.

    A chord step: one Newton step from the mode at the MAP hyperparameters
    with the precision factor ``R`` there, ``mode + P^-1 grad``, which is
    the conditional mode at ``thetas`` to first order in the hyperparameter
    offset (the implicit-function derivative of the mode), then a draw with
    covariance ``P^-1``. It replaces a Newton iteration to convergence at
    every particle, each of whose steps forms and factorises the dense
    ``(n C) x (n C)`` precision: the initial particles only need to be close
    to the posterior, and SVGD, preconditioned by the same ``P``, corrects
    the rest.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Softmax
    >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
    >>> from skgp_bayes.targets.laplace import softmax_chord_draw, softmax_laplace_draw
    >>> X = np.linspace(-2, 2, 6)[:, None]
    >>> y = np.array([0, 0, 1, 1, 2, 2])
    >>> target = WhitenedLatentTarget(
    ...     KernelAdapter(ConstantKernel() * RBF()), X, y, Softmax(3), None,
    ...     n_latent=3)
    >>> thetas = np.zeros((target.n_blocks, target.n_kernel_params))
    >>> rng = np.random.default_rng(0)
    >>> nu, mode, R = softmax_laplace_draw(target, thetas, np.zeros((3, 6)), rng)
    >>> draw, centre = softmax_chord_draw(target, thetas + 0.1, mode, R, rng)
    >>> draw.shape, centre.shape
    ((3, 6), (3, 6))
    """
    C, n = target.n_latent, target.n
    factors = target.factors(thetas)
    F = target.latent(target.join(thetas, mode), factors)
    G = target.likelihood.grad_log_prob(target.y, F)
    grad = np.stack([factors[target.block_of_latent(c)].T @ G[:, c] for c in range(C)])
    grad -= mode
    centre = mode + cho_solve(R, grad.reshape(-1)).reshape(C, n)
    z = rng.standard_normal(C * n)
    draw = solve_triangular(R, z, lower=True, trans=1, check_finite=False)
    return centre + draw.reshape(C, n), centre


def _softmax_precision_factor(Ls, pi):
    C = len(Ls)
    n = pi.shape[0]
    P = np.zeros((C * n, C * n))
    for c in range(C):
        for d in range(c + 1):
            w = -pi[:, c] * pi[:, d]
            if c == d:
                w = w + pi[:, c]
            P[c * n : (c + 1) * n, d * n : (d + 1) * n] = Ls[c].T @ (w[:, None] * Ls[d])
    add_to_diagonal(P, 1.0)
    # Only the lower triangle is read by the factorisation; the precision is
    # I plus a positive semi-definite term, so no jitter is ever needed.
    R, _ = cholesky(P, max_tries=0, warn=False)
    return R


def example_binary_problem():
    """A six-point binary problem for examples: ``(target, y, problem)``.

    Examples
    --------
    >>> from skgp_bayes.targets.laplace import example_binary_problem
    >>> target, y, problem = example_binary_problem()
    >>> y.tolist()
    [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    """
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    from ..kernels import KernelAdapter
    from ..likelihoods import Bernoulli
    from .whitened import WhitenedLatentTarget

    X = np.linspace(-2, 2, 6)[:, None]
    y = (X[:, 0] > 0).astype(float)
    kernel = KernelAdapter(ConstantKernel() * RBF())
    target = WhitenedLatentTarget(kernel, X, y, Bernoulli(), None)
    return target, y, BinaryLaplaceProblem(target, y, target.likelihood)
