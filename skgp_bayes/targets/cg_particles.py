"""The matrix-free (``solver="cg"``) mode of :class:`SteinGPRegressor`.

Each particle's gradient of the exact log posterior comes from
:class:`~skgp_bayes.targets.StochasticMarginalGradient`: conjugate
gradients for ``K^-1 y`` and Hutchinson probes for the trace term (seed
002), with ``K @ V`` from the kernel without storing it when it does not fit
in memory, so no ``n x n`` matrix is ever factorised. The gradient is an
unbiased estimate, which SVGD then follows with a decaying step; the log
density itself is never computed.
"""

import copy

import numpy as np

from .stochastic import StochasticMarginalGradient

__all__ = []

# Points on which init="map" runs its exact (Cholesky) MAP search.
MAP_SUBSET = 1000
# Relative residual at which every CG solve stops.
CG_TOL = 1e-8
N_PROBES = 4
# Probes kept over several iterations correlate the gradient noise of
# successive steps, which then does not average out (see SGLDGPRegressor's
# probe_refresh).
PROBE_REFRESH = 1
# Pivoted-Cholesky preconditioner of every CG solve.
PRECONDITIONER_RANK = 100


class CGParticleGradients:
    """Unbiased gradients at every particle, one CG stream per particle.

    Each particle keeps its own probes and last solutions, so that its next
    solves start from them (warm starts), and its own random stream, so the
    result is the same however the particles are ordered.

    Parameters
    ----------
    adapter : KernelAdapter
    X, y : ndarray
        Training data (model scale).
    prior_set : PriorSet
    log_noise_variance : float or None
        Fixed log noise variance, or None when it is the last parameter.
    seeds : sequence of int
        One seed per particle.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.targets.cg_particles import CGParticleGradients
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> X = np.linspace(0, 1, 30)[:, None]
    >>> grads = CGParticleGradients(
    ...     KernelAdapter(RBF()), X, np.sin(3 * X[:, 0]), None, None, [0, 1])
    >>> values, g = grads(np.array([[0.0, -2.0], [0.1, -2.5]]))
    >>> bool(np.all(np.isnan(values))), g.shape
    (True, (2, 2))
    """

    def __init__(self, adapter, X, y, prior_set, log_noise_variance, seeds):
        self.streams = [
            StochasticMarginalGradient(
                adapter,
                X,
                y,
                prior_set,
                log_noise_variance,
                rng=np.random.default_rng(int(seed)),
                n_probes=N_PROBES,
                probe_refresh=PROBE_REFRESH,
                solver="cg",
                tol=CG_TOL,
                preconditioner_rank=PRECONDITIONER_RANK,
            )
            for seed in seeds
        ]
        self.max_jitter = 0.0
        self.last_error = None

    def __call__(self, particles):
        values = np.full(particles.shape[0], np.nan)
        grads = np.empty_like(particles)
        for j, params in enumerate(particles):
            grads[j] = self.streams[j](params)[1]
        return values, grads

    def check_initial(self, particles):
        """Nothing to check: CG needs no factorisation that could fail."""

    def get_state(self):
        """Random streams, probes and warm starts of every particle."""
        return [stream.get_state() for stream in self.streams]

    def set_state(self, states):
        """Continue the streams saved by :meth:`get_state`.

        The streams continue copies: the saved generators and arrays stay as
        they are, so a fit interrupted part-way leaves the fitted state that
        holds them unchanged.
        """
        for stream, state in zip(self.streams, states, strict=True):
            stream.set_state(copy.deepcopy(state))

    @property
    def cg_iterations(self):
        """Block CG iterations of every call, over all particles."""
        return [it for stream in self.streams for it in stream.cg_iterations]

    @property
    def max_residual(self):
        return max((stream.max_residual for stream in self.streams), default=0.0)

    @property
    def budget_exhausted(self):
        """Gradients whose solves ran out of the CG budget, over all particles."""
        return sum(stream.budget_exhausted for stream in self.streams)

    @property
    def budget_residual(self):
        """Largest relative residual those unfinished solves left."""
        return max((stream.budget_residual for stream in self.streams), default=0.0)
