"""Independence Metropolis-Hastings moves between known modes.

A Langevin or Hamiltonian chain moves by small steps: between two modes of
a posterior separated by a valley it crosses rarely, and chains started in
one mode can look converged while the other holds much of the mass. When
the modes are known (L-BFGS searches from several starts, each with its
Laplace covariance), an independence proposal from the mixture of their
Gaussians, accepted by Metropolis-Hastings, moves a chain from one to
another in one step (Tjelmeland and Hegstad, 2001, use such mode-jumping
proposals). The move leaves the target invariant whatever the mixture is
(a poor mixture is only accepted less often), so interleaving it with the
chain's own transitions keeps the chain exact.

The engine knows nothing about Gaussian processes: it calls
``logp_and_grad(x) -> (value, gradient)``.

References
----------
H. Tjelmeland and B. K. Hegstad, "Mode jumping proposals in MCMC",
Scandinavian Journal of Statistics 28(1), 2001.
"""

import math

import numpy as np
from scipy.special import logsumexp

from ._ordered_numba import mixture_log_density, ordered_matvec
from .leapfrog import log_uniform

__all__ = ["ModeJumps", "jump_record", "laplace_mixture", "mode_jump"]


class ModeJumps:
    """A mixture of Gaussians to propose from, and how often.

    Parameters
    ----------
    means : ndarray of shape (k, d)
        The modes.
    factors : ndarray of shape (k, d, d)
        Lower Cholesky factors of the components' covariances.
    log_weights : ndarray of shape (k,)
        Unnormalised log weights (a Laplace estimate of each mode's mass).
    every : int, default=10
        One move after every ``every`` transitions of the chain.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.mode_jumps import ModeJumps
    >>> jumps = ModeJumps(np.array([[-2.0], [2.0]]), np.ones((2, 1, 1)),
    ...                   np.log([0.5, 0.5]))
    >>> bool(np.isclose(jumps.log_q(np.array([2.0])),
    ...                 np.log(0.5 / np.sqrt(2 * np.pi) * (1 + np.exp(-8)))))
    True
    """

    def __init__(self, means, factors, log_weights, every=10):
        self.means = np.asarray(means, dtype=np.float64)
        self.factors = np.asarray(factors, dtype=np.float64)
        log_weights = np.asarray(log_weights, dtype=np.float64)
        self.log_weights = log_weights - logsumexp(log_weights)
        self.every = int(every)
        if self.every < 1:
            raise ValueError(f"every must be at least 1; got {every}.")
        k, d = self.means.shape
        if self.factors.shape != (k, d, d) or self.log_weights.shape != (k,):
            raise ValueError(
                "means (k, d), factors (k, d, d) and log_weights (k,) must agree; "
                f"got {self.means.shape}, {self.factors.shape}, "
                f"{self.log_weights.shape}."
            )
        diagonals = np.diagonal(self.factors, axis1=1, axis2=2)
        if not np.all(diagonals > 0):
            raise ValueError("factors must be lower Cholesky factors.")
        # log N(x; m, L L') = -d/2 log 2 pi - sum log diag L - |L^-1 (x - m)|^2 / 2
        self._log_norm = -0.5 * d * math.log(2 * math.pi) - np.sum(
            np.log(diagonals), axis=1
        )
        # A move runs between two cheap transitions: the inverse factors and
        # the cumulative weights are computed once, not per move. The
        # components' whitening maps are stacked into one (k d, d) matrix, so
        # that log_q is one product where per-component einsums cost 17 us
        # of a 130 us move (two modes, d = 6).
        inverse_factors = np.linalg.inv(self.factors)
        self._stacked_inverse = inverse_factors.reshape(k * d, d)
        shift = np.einsum("kij,kj->ki", inverse_factors, self.means)
        self._stacked_shift = shift.reshape(k * d)
        self._log_const = self.log_weights + self._log_norm
        self._cumulative = np.cumsum(np.exp(self.log_weights))

    def log_q(self, x):
        """Log density of the mixture at ``x`` (shape ``(d,)``).

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.mode_jumps import ModeJumps
        >>> one = ModeJumps(np.zeros((1, 1)), np.ones((1, 1, 1)), np.zeros(1))
        >>> bool(np.isclose(one.log_q(np.zeros(1)), -0.5 * np.log(2 * np.pi)))
        True
        """
        # the compiled moves' order of summation, not BLAS's (_ordered_numba)
        return float(
            mixture_log_density(
                np.asarray(x, dtype=np.float64),
                self._stacked_inverse,
                self._stacked_shift,
                self._log_const,
            )
        )

    def nearest(self, points):
        """The component of highest weighted density at each of ``points`` (n, d).

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.mode_jumps import ModeJumps
        >>> jumps = ModeJumps(np.array([[-2.0], [2.0]]), np.ones((2, 1, 1)),
        ...                   np.log([0.5, 0.5]))
        >>> jumps.nearest(np.array([[-3.0], [0.5], [9.0]]))
        array([0, 1, 1])
        """
        points = np.asarray(points, dtype=np.float64)
        return np.argmax(self._weighted_log_densities(points), axis=1)

    def _weighted_log_densities(self, points):
        """``log w_k + log N(x; m_k, L_k L_k')`` of every point (n, d), every k."""
        z = points @ self._stacked_inverse.T
        z -= self._stacked_shift
        z *= z
        k, d = self.means.shape
        return self._log_const - 0.5 * z.reshape(-1, k, d).sum(axis=2)

    def as_arrays(self):
        """The mixture as arrays, for a compiled sampler.

        Returns
        -------
        tuple of ndarray
            ``(means, factors, cumulative weights, stacked inverse factors,
            stacked whitened means, log constants)``: :meth:`propose` picks
            the first component whose cumulative weight exceeds a uniform
            times the last, and :meth:`log_q` whitens ``x`` by the stacked
            ``(k d, d)`` inverse factors, subtracts the stacked means and
            adds each component's log constant to minus half its squared
            norm.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.mode_jumps import ModeJumps
        >>> jumps = ModeJumps([[-2.0], [2.0]], [[[1.0]], [[0.5]]], np.log([1, 3]))
        >>> [a.shape for a in jumps.as_arrays()]
        [(2, 1), (2, 1, 1), (2,), (2, 1), (2,), (2,)]
        """
        return (
            self.means,
            self.factors,
            self._cumulative,
            self._stacked_inverse,
            self._stacked_shift,
            self._log_const,
        )

    def describe(self):
        """The modes and their weights, for a progress line.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.mode_jumps import ModeJumps
        >>> ModeJumps(np.zeros((2, 1)), np.ones((2, 1, 1)), np.log([1, 3])).describe()
        '2 modes, Laplace masses 0.250, 0.750'
        """
        shares = ", ".join(f"{w:.3f}" for w in np.exp(self.log_weights))
        return f"{self.means.shape[0]} modes, Laplace masses {shares}"

    def in_coordinates(self, shift, transform):
        """The same mixture in coordinates ``w``, where ``x = shift + transform w``.

        A sampler that runs on affine coordinates (HMC scaled by the
        curvature) proposes in them; the Jacobian is constant and cancels
        from the acceptance ratio, so the moves are those of the original
        mixture.

        Parameters
        ----------
        shift : ndarray of shape (d,)
        transform : ndarray of shape (d, d)
            Invertible.

        Returns
        -------
        ModeJumps

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.mode_jumps import ModeJumps
        >>> jumps = ModeJumps(np.array([[3.0]]), np.full((1, 1, 1), 2.0), np.zeros(1))
        >>> w = jumps.in_coordinates(np.array([1.0]), np.array([[2.0]]))
        >>> w.means, w.factors
        (array([[1.]]), array([[[1.]]]))
        """
        inverse = np.linalg.inv(np.asarray(transform, dtype=np.float64))
        means = (self.means - np.asarray(shift, dtype=np.float64)) @ inverse.T
        mapped = inverse @ self.factors  # (k, d, d): factors, not triangular
        covs = mapped @ np.transpose(mapped, (0, 2, 1))
        factors = np.linalg.cholesky(0.5 * (covs + np.transpose(covs, (0, 2, 1))))
        return ModeJumps(means, factors, self.log_weights, self.every)

    def propose(self, rng):
        """One draw from the mixture.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.mode_jumps import ModeJumps
        >>> far = ModeJumps(np.array([[-50.0], [50.0]]), np.ones((2, 1, 1)),
        ...                 np.log([1e-300, 1.0]))
        >>> bool(far.propose(np.random.default_rng(0))[0] > 40)
        True
        """
        u = rng.random() * self._cumulative[-1]
        k = int(np.searchsorted(self._cumulative, u, side="right"))
        k = min(k, self.means.shape[0] - 1)  # u at the total, by round-off
        z = rng.standard_normal(self.means.shape[1])
        return self.means[k] + ordered_matvec(self.factors[k], z)


def mode_jump(x, logp, logp_and_grad, rng, jumps, bounds=None):
    """One independence Metropolis-Hastings move from ``jumps``' mixture.

    Parameters
    ----------
    x : ndarray of shape (d,)
        The chain's state.
    logp : float
        Its log density.
    logp_and_grad : callable
        ``x -> (value, grad)``, both exact.
    rng : numpy.random.Generator
    jumps : ModeJumps
    bounds : ndarray of shape (d, 2), optional
        The target is zero outside: a proposal there is rejected.

    Returns
    -------
    accepted : bool
    x_new, logp_new, grad_new
        The proposal, its log density and gradient when accepted; None
        otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.mode_jumps import ModeJumps, mode_jump
    >>> jumps = ModeJumps(np.zeros((1, 1)), np.ones((1, 1, 1)), np.zeros(1))
    >>> normal = lambda x: (-0.5 * float(x @ x), -x)  # the proposal itself
    >>> mode_jump(np.ones(1), -0.5, normal, np.random.default_rng(0), jumps)[0]
    True
    """
    proposal = jumps.propose(rng)
    log_u = log_uniform(rng)
    if bounds is not None and (
        np.any(proposal < bounds[:, 0]) or np.any(proposal > bounds[:, 1])
    ):
        return False, None, None, None
    with np.errstate(all="ignore"):
        try:
            value, grad = logp_and_grad(proposal)
        except (ArithmeticError, np.linalg.LinAlgError):
            return False, None, None, None
        value = float(value)
        grad = np.asarray(grad, dtype=np.float64)
    if not (math.isfinite(value) and np.all(np.isfinite(grad))):
        return False, None, None, None
    log_ratio = value - logp + jumps.log_q(x) - jumps.log_q(proposal)
    if log_u < log_ratio:
        return True, proposal, value, grad
    return False, None, None, None


# A mode whose Laplace mass is below this share of the total is left out:
# the mixture would propose it too rarely to matter.
MIN_MODE_SHARE = 1e-3


def jump_record(jumps, counts):
    """A fit's record of its mode jumps, as ``diagnostics_["mode_jumps"]``.

    Parameters
    ----------
    jumps : ModeJumps or None
    counts : iterable of (int, int)
        Moves tried and accepted, per chain or per run.

    Returns
    -------
    dict
        ``modes`` (0 without jumps), and ``tried`` and ``accepted`` summed.

    Examples
    --------
    >>> from skgp_bayes.inference.mode_jumps import jump_record
    >>> jump_record(None, [(0, 0)])
    {'modes': 0, 'tried': 0, 'accepted': 0}
    """
    tried, accepted = np.sum(np.reshape(list(counts), (-1, 2)), axis=0, dtype=int)
    return {
        "modes": 0 if jumps is None else int(jumps.means.shape[0]),
        "tried": int(tried),
        "accepted": int(accepted),
    }


def laplace_mixture(target, optima, bounds, every=10, keep_near=()):
    """The mixture of the distinct optima's Laplace approximations, or None.

    Parameters
    ----------
    target : object
        With ``logp_and_grad(params) -> (value, grad)``.
    optima : sequence of ndarray of shape (d,)
        Local maxima (L-BFGS results from several starts), repeats allowed:
        optima closer than ``SAME_MODE`` in every coordinate are one mode.
    bounds : ndarray of shape (d, 2)
    every : int, default=10
        As in :class:`ModeJumps`.
    keep_near : sequence of ndarray of shape (d,), default=()
        Modes the chains occupy (the same mode as one of these points, as
        :func:`~skgp_bayes.inference.laplace.same_mode` judges): kept
        whatever their share. A chain in
        a mode the mixture leaves out sees a proposal density there of
        nearly zero, and no move out of it is ever accepted; with the
        mode in, at its small weight, the move to a far more probable mode
        is accepted with odds of order one.

    Returns
    -------
    ModeJumps or None
        Components weighted by each mode's Laplace mass (log density plus
        log volume, covariances capped as in
        :func:`~skgp_bayes.inference.laplace.laplace_covariance`); None
        when fewer than two modes hold at least ``MIN_MODE_SHARE`` of it
        or are kept by ``keep_near``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.mode_jumps import laplace_mixture
    >>> class TwoBumps:
    ...     def logp_and_grad(self, x):
    ...         a, b = np.exp(-(x - 2.0) ** 2), np.exp(-(x + 2.0) ** 2)
    ...         grad = (-2 * (x - 2) * a - 2 * (x + 2) * b) / (a + b)
    ...         return float(np.log(a + b)[0]), grad
    >>> jumps = laplace_mixture(TwoBumps(), [np.array([2.0]), np.array([-2.0])],
    ...                         np.array([[-5.0, 5.0]]))
    >>> np.round(np.exp(jumps.log_weights), 2)
    array([0.5, 0.5])
    >>> laplace_mixture(TwoBumps(), [np.array([2.0])] * 2, np.array([[-5.0, 5.0]]))
    """
    from .laplace import distinct_optima, laplace_component, same_mode

    distinct = distinct_optima(optima)
    if len(distinct) < 2:  # no Hessian to pay for
        return None
    modes = []
    for optimum in distinct:
        component = laplace_component(target, optimum, bounds)
        if component is None or not math.isfinite(component[1]):
            continue
        try:
            factor = np.linalg.cholesky(component[0])
        except np.linalg.LinAlgError:
            continue
        modes.append((optimum, factor, component[1]))
    if len(modes) < 2:
        return None
    log_mass = np.array([m[2] for m in modes])
    keep = np.exp(log_mass - logsumexp(log_mass)) >= MIN_MODE_SHARE
    for point in keep_near:
        keep |= [same_mode(m[0], point) for m in modes]
    if keep.sum() < 2:
        return None
    modes = [m for m, k in zip(modes, keep, strict=True) if k]
    return ModeJumps(
        np.array([m[0] for m in modes]),
        np.array([m[1] for m in modes]),
        np.array([m[2] for m in modes]),
        every,
    )
