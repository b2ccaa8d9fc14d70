"""Warnings that point at the user's line, once per fit, whatever the call depth.

A fixed ``stacklevel`` is right for one call path only: the same warning
raised from ``fit``, from ``Pipeline.fit`` or from scikit-learn's fit
wrapper sits at different depths. :func:`warn_user` walks the stack instead
and attributes the warning to the first frame outside this package and the
libraries that call into it on the user's behalf (scikit-learn, joblib and
``contextlib``'s context managers).

A fit also repeats itself: a solver that runs out of iterations at every
step would print one line per step. Every public ``fit`` and
``partial_fit`` therefore runs inside :func:`fit_warnings`, which behaves
as follows.

- Recording. While the fit runs, the warnings of this package
  (:func:`warn_user`) are recorded instead of shown, and so are warnings
  of other libraries (NumPy, SciPy, scikit-learn) that the user's filters
  let through. Worker threads that the package starts with
  :func:`bound_to_fit` record into the fit that started them; worker
  processes hand back what :func:`collect_warnings` recorded, and the fit
  adds it with :func:`report`.
- Grouping. Warnings of the same category whose messages are the same
  once the numbers are taken out (or that share the ``key`` given at the
  raise site) form one group. A group keeps the message of its worst
  occurrence (the largest ``worst`` figure given at the raise site, else
  the first) and, when it occurred more than once, says how many times.
- Re-emission. When the fit ends, each group is issued once through
  :func:`warnings.warn`, attributed to the user's line, so that the
  user's filters (``"ignore"``, ``"error"``, ``pytest.warns``) apply to
  it as to any warning. Under an ``"error"`` filter the exception is
  therefore raised when the fit ends, with the fitted attributes already
  set. Warnings of other libraries that the filters turn into errors are
  raised where they occur, as usual.
- Nesting. A fit inside another fit (a meta-estimator fitting one of ours,
  one of ours fitting another) records into the outermost fit, which
  reports everything once.
- Failure. When an exception escapes the fit, the recorded warnings are
  still issued before it propagates; one that a filter turns into an error
  is added to the escaping exception as a note instead of replacing it.

The interception replaces :func:`warnings.showwarning` while at least one
fit runs in the process and restores it when the last one ends; warnings
raised meanwhile in threads that belong to no fit are passed on unchanged.
"""

import contextlib
import contextvars
import os
import re
import sys
import threading
import warnings

import joblib
import sklearn

from ._thread_pool import interrupts_held

__all__ = [
    "WarningLog",
    "bound_to_fit",
    "collect_warnings",
    "fit_warnings",
    "report",
    "warn_user",
]

_INTERNAL_PREFIXES = tuple(
    os.path.dirname(os.path.abspath(module.__file__)) + os.sep
    for module in (sys.modules[__package__], sklearn, joblib)
) + (os.path.abspath(contextlib.__file__),)

# Numbers standing alone (not inside a name such as ``k1__length_scale``).
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")

_current = contextvars.ContextVar("skgp_bayes_warning_log", default=None)


def _is_internal(filename):
    return os.path.abspath(filename).startswith(_INTERNAL_PREFIXES)


class WarningLog:
    """Warnings recorded during a fit, grouped by kind.

    Picklable, so that a worker process can hand its log back.

    Examples
    --------
    >>> from skgp_bayes._warnings import WarningLog
    >>> log = WarningLog()
    >>> log.add("residual 0.5", RuntimeWarning, worst=0.5)
    >>> log.add("residual 2.5", RuntimeWarning, worst=2.5)
    >>> [(g["message"], g["count"]) for g in log.groups()]
    [('residual 2.5', 2)]
    """

    def __init__(self):
        self._groups = {}
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"_groups": self._groups}

    def __setstate__(self, state):
        self._groups = state["_groups"]
        self._lock = threading.Lock()

    def __len__(self):
        return len(self._groups)

    def add(self, message, category, *, key=None, worst=None, count=1):
        """Record ``count`` occurrences of one warning.

        Parameters
        ----------
        message : str
        category : type of Warning
        key : hashable, optional
            Groups warnings whose messages differ in more than numbers.
        worst : float, optional
            A figure where larger is worse; the group shows the message of
            its largest.
        count : int, default=1

        Examples
        --------
        >>> from skgp_bayes._warnings import WarningLog
        >>> log = WarningLog()
        >>> log.add("3 iterations", UserWarning)
        >>> log.add("4 iterations", UserWarning)
        >>> log.groups()[0]["count"]
        2
        """
        message = str(message)
        group_key = (category, _NUMBER.sub("#", message) if key is None else key)
        with self._lock:
            group = self._groups.get(group_key)
            if group is None:
                self._groups[group_key] = {
                    "category": category,
                    "message": message,
                    "count": count,
                    "worst": worst,
                }
                return
            group["count"] += count
            if worst is not None and (group["worst"] is None or worst > group["worst"]):
                group["message"], group["worst"] = message, worst

    def merge(self, other):
        """Add every group of ``other`` to this log.

        Parameters
        ----------
        other : WarningLog

        Examples
        --------
        >>> from skgp_bayes._warnings import WarningLog
        >>> a, b = WarningLog(), WarningLog()
        >>> a.add("x 1", UserWarning)
        >>> b.add("x 2", UserWarning)
        >>> a.merge(b)
        >>> a.groups()[0]["count"]
        2
        """
        for (_, key), group in list(other._groups.items()):
            self.add(
                group["message"],
                group["category"],
                key=key,
                worst=group["worst"],
                count=group["count"],
            )

    def groups(self):
        """The groups in the order they first occurred.

        Returns
        -------
        list of dict
            ``category``, ``message`` (of the worst occurrence), ``count``
            and ``worst``.

        Examples
        --------
        >>> from skgp_bayes._warnings import WarningLog
        >>> WarningLog().groups()
        []
        """
        with self._lock:
            return [dict(g) for g in self._groups.values()]


def _summary(group):
    message, count = group["message"], group["count"]
    if count == 1:
        return message
    which = "worst" if group["worst"] is not None else "first"
    figures = (
        f"; the figures are those of the {which} occurrence"
        if _NUMBER.search(message)
        else ""
    )
    return f"{message} (Raised {count} times during this fit{figures}.)"


def _stacklevel():
    """``warnings.warn``'s stacklevel of the first frame outside the library."""
    frame = sys._getframe(2)  # the caller of our caller
    level = 2  # counted from warnings.warn called by our caller
    while frame.f_back is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level


def warn_user(message, category, *, key=None, worst=None):
    """Issue ``message`` as ``category``, attributed to the user's line.

    The first frame outside the library on the way up the stack gets the
    warning; a stack with none (a worker thread) gives its outermost frame.
    Inside :func:`fit_warnings` the warning is recorded instead, and issued
    once, grouped with its repeats, when the fit ends.

    Parameters
    ----------
    message : str
    category : type of Warning
    key : hashable, optional
        Groups this warning with others of the same key (by default, with
        those whose message is the same but for its numbers).
    worst : float, optional
        A figure where larger is worse (a residual, a count); a group shows
        the message of its largest.

    Examples
    --------
    >>> import warnings
    >>> from skgp_bayes._warnings import warn_user
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_user("something to know", UserWarning)
    >>> caught[0].filename.endswith("_warnings.py")  # the caller's file instead
    False
    """
    log = _current.get()
    if log is not None:
        log.add(message, category, key=key, worst=worst)
        return
    warnings.warn(message, category, stacklevel=_stacklevel())


_hook_lock = threading.Lock()
_hook_users = 0
_passed_on = warnings.showwarning


def _showwarning(message, category, filename, lineno, file=None, line=None):
    log = _current.get()
    if log is None:
        _passed_on(message, category, filename, lineno, file, line)
    else:
        log.add(message, category)


def _install_hook():
    global _hook_users, _passed_on
    with _hook_lock:
        if _hook_users == 0 and warnings.showwarning is not _showwarning:
            _passed_on = warnings.showwarning
            warnings.showwarning = _showwarning
        _hook_users += 1


def _remove_hook():
    global _hook_users
    with _hook_lock:
        _hook_users -= 1
        # Someone who replaced the hook meanwhile restores it later; with no
        # fit running it then passes everything on.
        if _hook_users == 0 and warnings.showwarning is _showwarning:
            warnings.showwarning = _passed_on


class _LogInstalled:
    """The block's warnings go to ``log``: it is the current log, and shown
    warnings of threads inside a fit are routed into their log.

    A class rather than a generator context, with both changes made with
    interrupts held and undone again after an interrupt that was pending as
    the undo began: an interrupt landing between setting the log and the
    block that resets it left the log current for good (after 1-5 timed
    interrupts of a loop of empty fits), and every later fit's warnings,
    and the user's own, went into it unseen. What is left is the entry of
    ``__exit__`` itself, where Python checks for signals as every function
    starts: the same loop left the log current after 4-76 interrupts, and
    a fit whose body takes milliseconds rather than nothing gives that
    entry a share of its time thousands of times smaller.
    """

    __slots__ = ("_hooked", "_token", "log")

    def __init__(self, log):
        self.log, self._token, self._hooked = log, None, False

    def __enter__(self):
        try:
            with interrupts_held():
                self._token = _current.set(self.log)
                _install_hook()
                self._hooked = True
        except BaseException:  # raised as the guard ended: no block runs
            self._undo()
            raise
        return self.log

    def __exit__(self, exc_type, exc, traceback):
        try:
            self._undo()
        except BaseException:  # pending as the undo began
            self._undo()
            raise
        return False

    def _undo(self):
        with interrupts_held():
            if self._hooked:
                _remove_hook()
                self._hooked = False
            if self._token is not None:
                _current.reset(self._token)
                self._token = None


def collect_warnings():
    """Record the warnings raised inside the block into a fresh log.

    Nothing is issued: the caller hands the log to :func:`report` (a
    worker process returns it to the fit that started it).

    Returns
    -------
    context manager
        Entered, it gives the :class:`WarningLog` being filled.

    Examples
    --------
    >>> from skgp_bayes._warnings import collect_warnings, warn_user
    >>> with collect_warnings() as log:
    ...     warn_user("seen once", UserWarning)
    >>> log.groups()[0]["message"]
    'seen once'
    """
    return _LogInstalled(WarningLog())


def report(log):
    """Add ``log`` to the current fit's, or issue its groups when none runs.

    Parameters
    ----------
    log : WarningLog

    Examples
    --------
    >>> import warnings
    >>> from skgp_bayes._warnings import WarningLog, report
    >>> log = WarningLog()
    >>> log.add("handed back", UserWarning)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     report(log)
    >>> str(caught[0].message)
    'handed back'
    """
    current = _current.get()
    if current is not None:
        current.merge(log)
        return
    for group in log.groups():
        warnings.warn(_summary(group), group["category"], stacklevel=_stacklevel())


def bound_to_fit(function):
    """``function``, recording into the current fit from whatever thread runs it.

    Worker threads start with an empty context; this carries the fit's log
    into them.

    Parameters
    ----------
    function : callable

    Returns
    -------
    callable

    Examples
    --------
    >>> from skgp_bayes._warnings import bound_to_fit
    >>> bound_to_fit(len)([1, 2])
    2
    """
    log = _current.get()
    if log is None:
        return function

    def run(*args, **kwargs):
        token = _current.set(log)
        try:
            return function(*args, **kwargs)
        finally:
            _current.reset(token)

    return run


def _issue(log, failure=None):
    for group in log.groups():
        try:
            warnings.warn(_summary(group), group["category"], stacklevel=_stacklevel())
        except Exception as error:  # a filter made it an error
            if failure is None:
                raise
            _add_note(failure, f"The fit also raised {type(error).__name__}: {error}")


def _add_note(exception, note):
    # BaseException.add_note is new in Python 3.11; 3.10 keeps the note in
    # the same attribute, where a debugger or a later Python shows it.
    notes = getattr(exception, "__notes__", None)
    exception.__notes__ = [*(notes or []), note]


def fit_warnings():
    """Record a fit's warnings and issue each kind once, at the user's line.

    Use as a context manager or as a decorator of ``fit``; see the module
    notes for grouping, nesting, filters and exceptions.

    Returns
    -------
    context manager and decorator
        Entered, it gives the :class:`WarningLog` being filled, or None
        inside another fit, which reports.

    Examples
    --------
    >>> import warnings
    >>> from skgp_bayes._warnings import fit_warnings, warn_user
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with fit_warnings():
    ...         for residual in (0.5, 3.0, 1.0):
    ...             warn_user(f"residual {residual}", UserWarning, worst=residual)
    >>> [str(w.message) for w in caught]  # doctest: +NORMALIZE_WHITESPACE
    ['residual 3.0 (Raised 3 times during this fit; the figures are those of
      the worst occurrence.)']
    """
    return _FitWarnings()


class _FitWarnings(contextlib.ContextDecorator):
    """:func:`fit_warnings`; a fresh instance for each decorated call."""

    def _recreate_cm(self):
        return _FitWarnings()

    def __enter__(self):
        self._installed = None
        if _current.get() is not None:  # inside another fit, which reports
            return None
        self._installed = _LogInstalled(WarningLog())
        return self._installed.__enter__()

    def __exit__(self, exc_type, exc, traceback):
        installed = self._installed
        if installed is None:
            return False
        try:
            installed.__exit__(exc_type, exc, traceback)
        except BaseException as failure:  # an interrupt during the undo
            _issue(installed.log, failure)
            raise
        _issue(installed.log, exc)
        return False
