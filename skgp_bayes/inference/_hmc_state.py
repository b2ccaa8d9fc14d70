"""The state of an HMC chain, shared by the static and the No-U-Turn step,
a block of transitions run by the density, and a chain's result."""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

__all__ = ["HMCBlock", "HMCResult", "HMCState", "TRACE_FIELDS"]


# The per-transition arrays of an HMCResult, in order: what a continued
# chain joins and what two runs of the same chain must agree on.
TRACE_FIELDS = (
    "samples",
    "log_density",
    "accept_prob",
    "accepted",
    "divergent",
    "n_leapfrog",
    "energy",
    "step_sizes",
)


@dataclass
class HMCState:
    """A point of an HMC chain with its log density and gradient.

    Attributes
    ----------
    x : ndarray of shape (n_params,)
        Position.
    logp : float
        Log density at ``x``.
    grad : ndarray of shape (n_params,)
        Gradient of the log density at ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import hmc_init
    >>> state = hmc_init(lambda x: (-0.5 * x @ x, -x), np.ones(2))
    >>> state.logp
    -1.0
    """

    x: np.ndarray
    logp: float
    grad: np.ndarray


class HMCBlock(NamedTuple):
    """Static HMC transitions that a density ran itself (``hmc_block``).

    A density that can run a block of :func:`~skgp_bayes.inference.hmc_step`
    transitions in one call (a compiled one, say) offers ``hmc_block(x,
    logp, grad, rng, step, inv_mass, path, max_energy_error, retry, n_iter,
    adaptation, jumps=None)``: ``path`` is ``(max_leapfrog,
    trajectory_length)`` (a length of 0 for none), ``retry`` the second
    stage's step factor (0: none) and ``jumps``, where given, ``(ModeJumps,
    first)``: the block is ``run_hmc``'s iterations from ``first`` on, with
    their mode jumps. It draws from ``rng`` what ``hmc_step`` and
    ``mode_jump`` draw, in their order, and
    adapts as :class:`~skgp_bayes.inference.adaptation.WarmupAdaptation`
    does where ``adaptation``, the ``(dual, moments, accumulate)`` of its
    :meth:`~skgp_bayes.inference.adaptation.WarmupAdaptation.block_plan`,
    asks it to (updating those arrays in place); a sampling block has an
    empty ``dual`` and ``accumulate`` False. It returns this record, or
    ``NotImplemented`` where the interpreted steps must run the block (the
    caller then restores ``rng``).

    Attributes
    ----------
    x : ndarray of shape (n_params,)
        The chain's state after the block, with ``logp`` and ``grad``.
    logp : float
    grad : ndarray of shape (n_params,)
    positions : ndarray of shape (n_iter, n_params)
        The state after each transition (and its mode jump).
    log_densities : ndarray of shape (n_iter,)
    accept_prob : ndarray of shape (n_iter,)
        Each first stage's acceptance probability (0 where it diverged).
    accepted, divergent, retried : ndarray of bool of shape (n_iter,)
    n_leapfrog : ndarray of int of shape (n_iter,)
    energies : ndarray of shape (n_iter,)
        The Hamiltonian of the state kept.
    step_sizes : ndarray of shape (n_iter,)
        The step of each transition.
    n_jumps, n_jumps_accepted : int, default=0
        Mode jumps tried and accepted.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference._hmc_state import HMCBlock
    >>> block = HMCBlock(np.zeros(1), 0.0, np.zeros(1), np.zeros((2, 1)),
    ...                  np.zeros(2), np.ones(2), np.ones(2, bool),
    ...                  np.zeros(2, bool), np.zeros(2, bool),
    ...                  np.ones(2, np.int64), np.zeros(2), np.full(2, 0.1))
    >>> block.positions.shape
    (2, 1)
    """

    x: np.ndarray
    logp: float
    grad: np.ndarray
    positions: np.ndarray
    log_densities: np.ndarray
    accept_prob: np.ndarray
    accepted: np.ndarray
    divergent: np.ndarray
    retried: np.ndarray
    n_leapfrog: np.ndarray
    energies: np.ndarray
    step_sizes: np.ndarray
    n_jumps: int = 0
    n_jumps_accepted: int = 0


@dataclass
class HMCResult:
    """The output of one chain of :func:`run_hmc`.

    Attributes
    ----------
    samples : ndarray of shape (n_kept, n_params)
        Kept draws (every ``thin``-th sampling iteration).
    log_density : ndarray of shape (n_kept,)
        Log density at the kept draws.
    accept_prob : ndarray of shape (n_warmup + n_samples,)
        Metropolis acceptance probability of every transition.
    accepted : ndarray of bool of shape (n_warmup + n_samples,)
    divergent : ndarray of bool of shape (n_warmup + n_samples,)
    n_leapfrog : ndarray of int of shape (n_warmup + n_samples,)
    energy : ndarray of shape (n_warmup + n_samples,)
        Hamiltonian (potential plus kinetic energy) of the state each
        transition kept, as Stan reports it; its spread against the spread of
        its changes is the E-BFMI.
    step_sizes : ndarray of shape (n_warmup + n_samples,)
        Step size of every transition.
    step_size : float
        Step size used after warm-up.
    inv_mass : ndarray of shape (n_params,)
        Diagonal inverse mass matrix used after warm-up.
    n_warmup : int
    acceptance_rate : float
        Mean acceptance probability over the sampling iterations (NaN for a
        warm-up-only run).
    n_divergent : int
        Divergent transitions after warm-up.
    elapsed : float
        Seconds spent.
    final_state : ndarray of shape (n_params,)
        The chain's last state (kept or not), from which a continuation
        with ``n_warmup=0`` picks up.
    n_jumps, n_jumps_accepted : int
        Mode-jumping moves tried and accepted (``jumps``; 0 without).
    n_retried, n_retried_accepted : int
        Transitions, warm-up included, whose failed first stage was tried
        again with a shorter step, and those whose second stage was
        accepted (``delayed_rejection``; 0 without).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import run_hmc
    >>> res = run_hmc(lambda x: (-0.5 * x @ x, -x), np.zeros(1), n_warmup=20,
    ...               n_samples=10, random_state=0)
    >>> res.samples.shape, res.accept_prob.shape
    ((10, 1), (30,))
    """

    samples: np.ndarray
    log_density: np.ndarray
    accept_prob: np.ndarray
    accepted: np.ndarray
    divergent: np.ndarray
    n_leapfrog: np.ndarray
    energy: np.ndarray
    step_sizes: np.ndarray
    step_size: float
    inv_mass: np.ndarray
    n_warmup: int
    acceptance_rate: float
    n_divergent: int
    elapsed: float
    final_state: np.ndarray = None
    n_jumps: int = 0
    n_jumps_accepted: int = 0
    n_retried: int = 0
    n_retried_accepted: int = 0
