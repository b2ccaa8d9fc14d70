"""The state of an HMC chain, shared by the static and the No-U-Turn step."""

from dataclasses import dataclass

import numpy as np

__all__ = ["HMCState"]


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
