"""The guards every public method of an estimator runs under."""

from ._interrupt import keyboard_interrupt_passes
from ._subnormals import flushes_subnormals

__all__ = ["public_method"]


def public_method(method):
    """``method`` with Ctrl-C passed on and subnormals flushed.

    :func:`~skgp_bayes._interrupt.keyboard_interrupt_passes` outside (a
    ``KeyboardInterrupt`` reaches the caller as itself) and
    :func:`~skgp_bayes._subnormals.flushes_subnormals` inside (the
    factorisations of kernel matrices with far-apart inputs run at full
    speed).

    Parameters
    ----------
    method : callable
        A public method of an estimator (``fit``, ``predict``, ...).

    Returns
    -------
    callable
        The method, wrapped; name, docstring and signature are kept.

    Examples
    --------
    >>> from skgp_bayes._public import public_method
    >>> @public_method
    ... def predict(X):
    ...     return [2 * x for x in X]
    >>> predict([1, 2]), predict.passes_keyboard_interrupt, predict.flushes_subnormals
    ([2, 4], True, True)
    """
    return keyboard_interrupt_passes(flushes_subnormals(method))
