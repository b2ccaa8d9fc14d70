"""Ctrl-C reaches the caller as ``KeyboardInterrupt``, whatever it interrupted.

A signal that lands while a compiled (Numba) function hands its result back
to Python can surface as ``SystemError: ... returned a result with an
exception set``, with the ``KeyboardInterrupt`` only as its cause, so a
user's ``except KeyboardInterrupt:`` never runs. The kernels of this package
are written not to trigger it (none returns one of its own array arguments);
this decorator on the public methods is the safety net for any that would.
"""

import functools

__all__ = ["keyboard_interrupt_passes"]


def _interrupt_inside(error):
    """The ``KeyboardInterrupt`` that ``error`` wraps, however deep, or None.

    Numba nests the failure: a compiled function that unpickles its
    constants reports each interrupted unpickling as one more ``SystemError``
    (eight deep has been seen), so the whole chain is walked.
    """
    seen = set()
    pending = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, KeyboardInterrupt):
            return current
        pending.extend((current.__cause__, current.__context__))
    return None


def keyboard_interrupt_passes(method):
    """Re-raise a ``SystemError`` caused by ``KeyboardInterrupt`` as the latter.

    Any other ``SystemError`` propagates unchanged.

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
    >>> from skgp_bayes._interrupt import keyboard_interrupt_passes
    >>> @keyboard_interrupt_passes
    ... def interrupted():
    ...     try:
    ...         raise KeyboardInterrupt
    ...     except KeyboardInterrupt as stop:
    ...         raise SystemError("returned a result with an exception set") from stop
    >>> try:
    ...     interrupted()
    ... except KeyboardInterrupt:
    ...     print("caught")
    caught
    """

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except SystemError as error:
            interrupt = _interrupt_inside(error)
            if interrupt is None:
                raise
            # The KeyboardInterrupt's own traceback points at the line that
            # was running when the signal came; the SystemError adds nothing.
            raise interrupt.with_traceback(interrupt.__traceback__) from None

    # Outer wrappers (functools.wraps) copy this, so a test can find the
    # guard under scikit-learn's own decorators.
    wrapper.passes_keyboard_interrupt = True
    return wrapper
