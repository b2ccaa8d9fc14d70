"""What stage 1 of a variational MCMC fit hands on: the maximised bound."""

import dataclasses

import numpy as np


@dataclasses.dataclass
class SVGPFit:
    """The maximised bound: parameters, trace, iterations, optimiser.

    Attributes
    ----------
    params : ndarray
        The bound's parameters at the end.
    trace : list of float
        The bound per iteration.
    n_iter : int
    use_adam : bool
        Minibatch Adam rather than full-batch L-BFGS-B.
    converged : bool
        The stopping rule was met within the iteration budget.
    """

    params: np.ndarray
    trace: list
    n_iter: int
    use_adam: bool
    converged: bool = True


@dataclasses.dataclass
class CollapsedOptimum:
    """The collapsed bound's maximum over the inducing-set sizes tried.

    Attributes
    ----------
    hyper : ndarray
        ``[theta, log s2]`` at the optimum.
    Z : ndarray of shape (m, n_features)
        The inducing inputs.
    learn_Z : bool
        Whether they were optimised.
    trace : list of float
        The optimiser's trace, all sizes in turn.
    n_iter : int
        Its iterations, all sizes together.
    exact : bool
        The inducing inputs are the distinct training inputs, chosen because
        the training rows are few (at most ``_EXACT_FROM_START_MAX_N``) or
        because no smaller set came within ``_GAP_TOL`` nats per point of
        the exact marginal posterior's mode; ``hyper`` is that mode, and the
        chains sample the exact target.
    """

    hyper: np.ndarray
    Z: np.ndarray
    learn_Z: bool
    trace: list
    n_iter: int
    exact: bool = False


def at_exact_mode(optimum, reference, distinct):
    """``optimum`` with the distinct training inputs as inducing inputs, at
    the exact marginal posterior's mode ``reference``: the exact target."""
    return dataclasses.replace(
        optimum, hyper=reference[1], Z=distinct, learn_Z=False, exact=True
    )
