"""One progress line per fit, and scikit-learn's fit callbacks.

The engines know nothing of estimators: each accepts ``progress``, a
callable ``progress(done, total, stats)`` called after every iteration with
the iterations done in the current run, that run's length and a small dict
of named figures (a field, an acceptance rate, an objective). The estimator
decides what becomes of it through :func:`fit_progress`:

- ``verbose=1``: one line per estimator on standard error, rewritten in
  place with a carriage return on a terminal. When standard error is not a
  terminal (a log file, a notebook's captured stream, CI) a carriage return
  would pile every update onto one unreadable line, so plain lines are
  written instead: the first iteration, one per tenth of the run, and one
  whenever ``PLAIN_INTERVAL`` seconds pass without a line. The line shows the
  iterations done, the figures and the estimated time left (the mean time
  per iteration so far times the iterations left). ``verbose >= 2`` leaves
  the engines' detailed lines as they were and shows no progress line.
- scikit-learn's callback API (``sklearn.callback``, from scikit-learn
  1.9): where it is installed every estimator is a
  ``CallbackSupportMixin``, ``set_callbacks`` registers ``FitCallback``
  objects (such as ``sklearn.callback.ProgressBar``), and each stage of a
  fit is a task whose iterations are its subtasks, each reported when it
  ends. Older scikit-learn has no such API: the estimators then have no
  ``set_callbacks`` and everything else is unchanged.

Chains that run in other processes (``n_jobs`` other than 1) cannot write
to this process's line or callbacks; their stage is then reported when it
ends. An optional ``tqdm`` is not used: the line needs no dependency.
"""

import functools
import sys
import time

__all__ = [
    "CallbackMixin",
    "FitProgress",
    "HAS_SKLEARN_CALLBACKS",
    "engine_verbose",
    "fit_callbacks",
    "fit_progress",
]

try:  # scikit-learn >= 1.9
    from sklearn.callback import CallbackSupportMixin as _CallbackBase
    from sklearn.callback._callback_support import callback_management_context

    HAS_SKLEARN_CALLBACKS = True
except ImportError:  # pragma: no cover - depends on the installed version

    class _CallbackBase:
        """Stand-in where scikit-learn has no callback API."""

    callback_management_context = None
    HAS_SKLEARN_CALLBACKS = False

# Least time between two rewrites of the line on a terminal: faster updates
# cost more than they show.
TTY_INTERVAL = 0.1
# A plain line is also written when this long has passed without one: a
# tenth of a long run can take minutes, and a log should show the fit lives.
PLAIN_INTERVAL = 30.0


class CallbackMixin(_CallbackBase):
    """Adds ``set_callbacks`` where scikit-learn offers its callback API.

    Examples
    --------
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes._progress import HAS_SKLEARN_CALLBACKS
    >>> hasattr(SteinGPRegressor(), "set_callbacks") == HAS_SKLEARN_CALLBACKS
    True
    """


def _has_callbacks(estimator):
    return HAS_SKLEARN_CALLBACKS and (
        bool(getattr(estimator, "_skl_callbacks", None))
        or hasattr(estimator, "_parent_callback_ctx")
    )


def fit_callbacks(method):
    """Run ``fit(X, y)`` as the root task of the estimator's callbacks.

    Without registered callbacks (or without the API) the method runs
    unchanged.

    Parameters
    ----------
    method : callable
        ``fit`` or ``partial_fit``.

    Returns
    -------
    callable

    Examples
    --------
    >>> from skgp_bayes._progress import fit_callbacks
    >>> class Model:
    ...     @fit_callbacks
    ...     def fit(self, X, y=None):
    ...         return self
    >>> m = Model()
    >>> m.fit([[0.0]]) is m
    True
    """

    @functools.wraps(method)
    def wrapper(self, X, y=None, *args, **kwargs):
        if not _has_callbacks(self):
            return method(self, X, y, *args, **kwargs)
        with callback_management_context(self):
            context = self._init_callback_context(max_subtasks=None)
            context.call_on_fit_task_begin(estimator=self, X=X, y=y)
            result = method(self, X, y, *args, **kwargs)
            context.call_on_fit_task_end(estimator=self, X=X, y=y)
        return result

    return wrapper


def engine_verbose(estimator):
    """The ``verbose`` an engine gets: its detailed lines only from 2 on.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from skgp_bayes._progress import engine_verbose
    >>> engine_verbose(SimpleNamespace(verbose=1)), engine_verbose(
    ...     SimpleNamespace(verbose=2))
    (0, 2)
    """
    verbose = int(estimator.verbose)
    return verbose if verbose >= 2 else 0


def _format_seconds(seconds):
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _format_stats(stats):
    parts = []
    for name, value in (stats or {}).items():
        if isinstance(value, float):
            parts.append(f"{name} {value:.4g}")
        else:
            parts.append(f"{name} {value}")
    return ", ".join(parts)


class FitProgress:
    """The progress of one stage of a fit: a line and callback subtasks.

    An instance is the ``progress`` callable an engine receives. A stage
    made of ``n_runs`` runs of ``total`` iterations (chains run one after
    the other) is counted as ``n_runs * total`` iterations: a run whose
    ``done`` falls back is the next run.

    Parameters
    ----------
    name : str
        The estimator's name, at the start of the line.
    stage : str
        What runs ("SVGD", "HMC", "selection").
    total : int
        Iterations of one run.
    n_runs : int, default=1
    show : bool, default=True
        Write the line (``verbose == 1``).
    stream : file-like, optional
        Standard error by default, read at each write.
    context : sklearn.callback.CallbackContext, optional
        The fit's root context: the stage becomes a subtask of it.
    estimator : estimator, optional
        Passed to the callbacks.
    stops_early : bool, default=False
        The stage ends by its own rule, usually long before ``total``, which
        is only a guard: the line then counts the iterations against it,
        without a share done or a time left, which the guard would set.

    Examples
    --------
    >>> import io
    >>> from skgp_bayes._progress import FitProgress
    >>> out = io.StringIO()
    >>> bar = FitProgress("Model", "SVGD", 10, stream=out)
    >>> for i in range(1, 11):
    ...     bar(i, 10, {"field": 0.5 / i})
    >>> bar.close()
    >>> out.getvalue().splitlines()[-1].startswith("[Model] SVGD 10/10")
    True
    """

    def __init__(
        self,
        name,
        stage,
        total,
        *,
        n_runs=1,
        show=True,
        stream=None,
        context=None,
        estimator=None,
        stops_early=False,
    ):
        self.name, self.stage = name, stage
        self.stops_early = bool(stops_early)
        self.total, self.n_runs = max(int(total), 0), max(int(n_runs), 1)
        self.show, self._stream = show, stream
        self.estimator = estimator
        self.start = time.perf_counter()
        self.done = 0
        self._run, self._last_local = 0, 0
        self._last_write, self._next_tenth = -float("inf"), 1
        self._width, self._written, self._stats = 0, False, {}
        self._written_done = -1
        self.in_process = True
        self._context = None
        if context is not None:
            self._context = context.subcontext(
                task_name=stage, max_subtasks=self.total * self.n_runs
            )
            self._context.call_on_fit_task_begin(estimator=estimator)

    @property
    def stream(self):
        return sys.stderr if self._stream is None else self._stream

    def __call__(self, done, total=None, stats=None):
        if total is not None and int(total) != self.total and self.done == 0:
            self.total = int(total)  # the engine knows its run's length best
        done = int(done)
        if done < self._last_local:
            self._run += 1
        self._last_local = done
        overall = self._run * self.total + done
        for _ in range(max(0, overall - self.done)):
            self._iteration_ended()
        self.done = max(self.done, overall)
        self._stats = stats or {}
        if self.show:
            self._maybe_write()

    def _iteration_ended(self):
        if self._context is None:
            return
        task = self._context.subcontext(task_name="iteration")
        task.call_on_fit_task_begin(estimator=self.estimator)
        task.call_on_fit_task_end(estimator=self.estimator)

    def line(self):
        """The current text of the line.

        Examples
        --------
        >>> from skgp_bayes._progress import FitProgress
        >>> bar = FitProgress("Model", "HMC", 100, n_runs=2, show=False)
        >>> bar(50, 100, {"acceptance": 0.8})
        >>> bar.line().split(",")[0]
        '[Model] HMC 50/200 (25%)'
        """
        planned = self.total * self.n_runs
        percent = 100.0 * self.done / planned if planned else 100.0
        elapsed = time.perf_counter() - self.start
        text = f"[{self.name}] {self.stage} {self.done}/{planned} ({percent:.0f}%)"
        if self.stops_early:
            text = (
                f"[{self.name}] {self.stage} iteration {self.done} (at most {planned})"
            )
        figures = _format_stats(self._stats)
        if figures:
            text += ", " + figures
        text += f", {_format_seconds(elapsed)} elapsed"
        if 0 < self.done < planned and not self.stops_early:
            left = elapsed / self.done * (planned - self.done)
            text += f", about {_format_seconds(left)} left"
        return text

    def _is_tty(self):
        isatty = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty and isatty())
        except ValueError:  # a closed stream
            return False

    def _maybe_write(self, final=False):
        now = time.perf_counter()
        planned = self.total * self.n_runs
        if self._is_tty():
            if final or now - self._last_write >= TTY_INTERVAL:
                text = self.line()
                pad = " " * max(0, self._width - len(text))
                self.stream.write("\r" + text + pad)
                self.stream.flush()
                self._width, self._last_write, self._written = len(text), now, True
            return
        tenth = planned and self.done * 10 >= self._next_tenth * planned
        if final or tenth or now - self._last_write >= PLAIN_INTERVAL:
            while planned and self.done * 10 >= self._next_tenth * planned:
                self._next_tenth += 1
            self.stream.write(self.line() + "\n")
            self.stream.flush()
            self._last_write, self._written = now, True
            self._written_done = self.done

    def close(self, completed=True):
        """End the line (and the callbacks' stage task).

        ``completed=False`` (the stage raised) reports runs in other
        processes as they were left, not as run to their end.

        Examples
        --------
        >>> import io
        >>> from skgp_bayes._progress import FitProgress
        >>> out = io.StringIO()
        >>> FitProgress("Model", "SVGD", 5, stream=out).close()
        >>> out.getvalue()
        '[Model] SVGD 0/5 (0%), 0.0 s elapsed\\n'
        """
        if not self.in_process and completed:
            # The runs went to their end elsewhere.
            self(self.total, self.total)
            for _ in range(self.n_runs - 1):
                self(0, self.total)
                self(self.total, self.total)
        if self.show:
            if self._is_tty():
                self._maybe_write(final=True)
                self.stream.write("\n")
                self.stream.flush()
            elif self._written_done != self.done or not self._written:
                self.stream.write(self.line() + "\n")
                self.stream.flush()
        if self._context is not None:
            self._context.call_on_fit_task_end(estimator=self.estimator)
            self._context = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(completed=exc_type is None)
        return False


class _Silent:
    """The reporter when nothing listens: one cheap call per iteration."""

    def __call__(self, done, total=None, stats=None):
        pass

    def close(self, completed=True):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def fit_progress(
    estimator, stage, total, *, n_runs=1, in_process=True, stops_early=False
):
    """The ``progress`` callable of one stage of ``estimator``'s fit.

    Parameters
    ----------
    estimator : estimator
        Its ``verbose`` and registered callbacks decide what is shown.
    stage : str
    total : int
        Iterations of one run.
    n_runs : int, default=1
        Runs of the stage done one after the other (chains).
    in_process : bool, default=True
        False when the runs happen in other processes: the engines then get
        no callable (``None``), and the stage is reported when it ends.
    stops_early : bool, default=False
        ``total`` is a guard that the stage's own rule usually beats (see
        :class:`FitProgress`).

    Returns
    -------
    progress : FitProgress or a silent stand-in
        A context manager; call ``close()`` (or leave the ``with`` block)
        when the stage ends. ``progress.engine`` is what to pass to the
        engine (``None`` when nothing listens or the runs are elsewhere).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from skgp_bayes._progress import fit_progress
    >>> quiet = SimpleNamespace(verbose=0)
    >>> with fit_progress(quiet, "SVGD", 10) as progress:
    ...     progress.engine is None
    True
    """
    context = getattr(estimator, "_callback_fit_ctx", None)
    show = int(getattr(estimator, "verbose", 0)) == 1
    if not show and context is None:
        reporter = _Silent()
        reporter.engine = None
        return reporter
    reporter = FitProgress(
        type(estimator).__name__,
        stage,
        total,
        n_runs=n_runs,
        show=show,
        context=context,
        estimator=estimator,
        stops_early=stops_early,
    )
    reporter.in_process = in_process
    reporter.engine = reporter if in_process else None
    return reporter
