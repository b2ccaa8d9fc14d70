"""Warnings that point at the user's line, whatever the call depth.

A fixed ``stacklevel`` is right for one call path only: the same warning
raised from ``fit``, from ``Pipeline.fit`` or from scikit-learn's fit
wrapper sits at different depths. :func:`warn_user` walks the stack instead
and attributes the warning to the first frame outside this package and the
libraries that call into it on the user's behalf (scikit-learn, joblib and
``contextlib``'s context managers).
"""

import contextlib
import os
import sys
import warnings

import joblib
import sklearn

__all__ = ["warn_user"]

_INTERNAL_PREFIXES = tuple(
    os.path.dirname(os.path.abspath(module.__file__)) + os.sep
    for module in (sys.modules[__package__], sklearn, joblib)
) + (os.path.abspath(contextlib.__file__),)


def _is_internal(filename):
    return os.path.abspath(filename).startswith(_INTERNAL_PREFIXES)


def warn_user(message, category):
    """Issue ``message`` as ``category``, attributed to the user's line.

    The first frame outside the library on the way up the stack gets the
    warning; a stack with none (a worker thread) gives its outermost frame.

    Parameters
    ----------
    message : str
    category : type of Warning

    Examples
    --------
    >>> import warnings
    >>> from skgp_bayes._warnings import warn_user
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_user("something to know", UserWarning)
    >>> "skgp_bayes" in caught[0].filename
    False
    """
    frame = sys._getframe(1)
    level = 2  # warnings.warn's level of our caller's caller
    while frame.f_back is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
