"""Adam (Kingma and Ba, 2015) over a flat array, as an ascent method."""

import numpy as np

__all__ = ["AdamState", "adam_init", "adam_update"]


class AdamState:
    """Moments and step count of Adam; plain arrays so it pickles.

    Parameters
    ----------
    first_moment, second_moment : ndarray
        Running averages of the direction and its square.
    step : int
        Number of updates taken.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import adam_init
    >>> adam_init(np.zeros(3)).step
    0
    """

    def __init__(self, first_moment, second_moment, step=0):
        self.first_moment = first_moment
        self.second_moment = second_moment
        self.step = step

    def copy(self):
        """Independent copy of the state.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference import adam_init
        >>> state = adam_init(np.zeros(2))
        >>> clone = state.copy()
        >>> clone.first_moment[0] = 1.0
        >>> float(state.first_moment[0])
        0.0
        """
        return AdamState(self.first_moment.copy(), self.second_moment.copy(), self.step)


def adam_init(params):
    """Zero moments matching the shape of ``params``.

    Parameters
    ----------
    params : ndarray

    Returns
    -------
    AdamState

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import adam_init
    >>> adam_init(np.zeros((2, 3))).first_moment.shape
    (2, 3)
    """
    params = np.asarray(params, dtype=np.float64)
    return AdamState(np.zeros_like(params), np.zeros_like(params), 0)


def adam_update(
    state,
    direction,
    learning_rate,
    *,
    beta1=0.9,
    beta2=0.999,
    eps=1e-8,
    max_step=None,
    clip=None,
):
    """One Adam step along an ascent ``direction``.

    Parameters
    ----------
    state : AdamState
        Updated in place.
    direction : ndarray
        Ascent direction (a gradient, or the SVGD field).
    learning_rate : float
    beta1, beta2, eps : float
        Adam's constants.
    max_step : float, optional
        Cap on the absolute size of any coordinate's step, which bounds how
        far one bad direction can throw a parameter.
    clip : float, optional
        Cut each coordinate of ``direction`` to ``clip`` times its running
        root mean square (the second moment so far) before it enters the
        moments, once the first moment's memory (``1 / (1 - beta1)`` steps)
        has passed. For heavy-tailed stochastic gradients: one outlier
        otherwise throws the parameters by about ``1 / (1 - beta1)`` steps
        and inflates the second moment for ``1 / (1 - beta2)`` steps, which
        then crawl (clipping against heavy-tailed noise: Zhang et al., "Why
        are adaptive methods good for attention models?", NeurIPS 2020).

    Returns
    -------
    step : ndarray
        The increment to add to the parameters.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import adam_init, adam_update
    >>> state = adam_init(np.zeros(2))
    >>> adam_update(state, np.array([1.0, -2.0]), 0.1)  # first step: lr * sign
    array([ 0.1, -0.1])
    """
    if clip is not None and state.step >= 1.0 / (1.0 - beta1):
        rms = np.sqrt(state.second_moment / (1.0 - beta2**state.step))
        direction = np.clip(direction, -clip * rms, clip * rms)
    state.step += 1
    state.first_moment *= beta1
    state.first_moment += (1.0 - beta1) * direction
    state.second_moment *= beta2
    state.second_moment += (1.0 - beta2) * direction**2
    m_hat = state.first_moment / (1.0 - beta1**state.step)
    v_hat = state.second_moment / (1.0 - beta2**state.step)
    step = learning_rate * m_hat / (np.sqrt(v_hat) + eps)
    if max_step is not None:
        np.clip(step, -max_step, max_step, out=step)
    return step
