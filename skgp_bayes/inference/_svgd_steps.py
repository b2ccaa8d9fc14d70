"""Per-coordinate step control of whitened SVGD runs (Rprop).

Every particle and whitened coordinate keeps its own fraction of the
field, at most the learning rate (the cap): halved where the field's sign
flips between two iterations, grown by a fifth where it keeps it
(Riedmiller and Braun, 1993). The fractions stop at a floor, deeper where a
step diverges (the notes below).
"""

import numpy as np

__all__ = ["adapt_rates", "plain_step"]

# Per-coordinate step control: shrink on a sign flip of the field, grow
# while it keeps its sign, never below a floor (Rprop's factors and minimum
# step, Riedmiller and Braun 1993). A settled coordinate's field flips as
# the others move: unfloored, rates fell to 1e-10 and could not follow a
# ridge later (macrodata 16, bench_fresh_splits.py: 422 iterations, 249
# with it). cap / 64 damps curvatures up to 256 times the metric's and
# regains the cap in 23 growths (with cap / 4 that run never settled).
_SHRINK, _GROW, _MIN_RATE_FRACTION = 0.5, 1.2, 1.0 / 64.0
# The floor guards settled coordinates, whose fields flip by the others'
# moves; a coordinate whose field is above tol and flips without shrinking
# is overshooting, a step past twice its curvature (for a quadratic the
# field maps as f -> (1 - rate * c) f), which waiting does not mend. Its rate
# halves on to cap / 4096 (curvatures up to 16,384 times the metric's). On
# commuters' modes (4 classes, 8 inputs, 300 rows; split 1 of
# bench_fresh_splits.py) particles far from the Laplace mode met curvatures
# beyond 256 times its metric: fields of 2-23 sd flipped every iteration at
# the floor, and the run ended at max_iter with its field at 0.5 sd.
_DEEP_RATE_FRACTION = _MIN_RATE_FRACTION**2


def plain_step(field, learning_rate, max_step):
    """Whitened step ``learning_rate * field``, each coordinate capped.

    Returns the step and whether any coordinate hit ``max_step``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference._svgd_steps import plain_step
    >>> step, capped = plain_step(np.array([[0.5, 8.0]]), 0.5, 1.0)
    >>> step.tolist(), capped
    ([[0.25, 1.0]], True)
    """
    step = learning_rate * field
    capped = bool(np.any(np.abs(step) >= max_step))
    return np.clip(step, -max_step, max_step), capped


def adapt_rates(rates, last_field, field, cap, unsettled=np.inf):
    """Rprop's rule on each particle's coordinates (module notes).

    A flip that leaves the field no smaller, on a coordinate whose field
    exceeds ``unsettled`` (the stopping tolerance), is a step past twice the
    coordinate's stiffness: no wait mends it, so its rate may fall below the
    usual floor, to the deep one. Returns the new rates and the field,
    the ``last_field`` of the next call.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference._svgd_steps import adapt_rates
    >>> rates = np.full((1, 2), 0.5)
    >>> rates, last = adapt_rates(rates, None, np.array([[1.0, 1.0]]), 0.5)
    >>> rates, last = adapt_rates(rates, last, np.array([[-1.0, 2.0]]), 0.5)
    >>> rates.tolist()  # halved on the flip; the other at its cap
    [[0.25, 0.5]]
    """
    if last_field is not None:
        flipped = field * last_field < 0
        diverging = (
            flipped
            & (np.abs(field) >= np.abs(last_field))
            & (np.abs(field) > unsettled)
        )
        floor = np.where(
            diverging,
            cap * _DEEP_RATE_FRACTION,
            np.minimum(rates, cap * _MIN_RATE_FRACTION),
        )
        shrunk = np.maximum(rates * _SHRINK, floor)
        rates = np.where(flipped, shrunk, np.minimum(rates * _GROW, cap))
    return rates, field.copy()
