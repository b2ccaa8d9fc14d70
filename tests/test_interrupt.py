"""Ctrl-C arrives as ``KeyboardInterrupt``, never as ``SystemError``.

A Numba function that returns one of its own array arguments hands the
caller's object back, and a signal landing in that hand-back turns the
``KeyboardInterrupt`` into ``SystemError: ... returned a result with an
exception set``. The package's kernels must not do that (scanned here), the
public methods re-raise the interrupt if one ever does, and real timed
signals during fits arrive as ``KeyboardInterrupt``. An interrupt inside
Numba's thread-count calls must not leave its launch locks held.
"""

import ast
import inspect
import json
import pathlib
import signal
import subprocess
import sys
import time

import numba
import numpy as np
import pytest
from _estimators import ESTIMATOR_CLASSES
from _timed_interrupts import run_interrupted_loop
from sklearn.base import clone, is_classifier

import skgp_bayes
from skgp_bayes import (
    SelectiveSVGP,
    SGLDGPRegressor,
    SteinGPClassifier,
    SteinGPRegressor,
    VariationalMCMCRegressor,
)
from skgp_bayes._interrupt import keyboard_interrupt_passes

PACKAGE = pathlib.Path(skgp_bayes.__file__).parent
_JIT_NAMES = {"njit", "jit"}


# ---------------------------------------------------------------- the scan
def _is_jit(decorator):
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(node, ast.Name):
        return node.id in _JIT_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in _JIT_NAMES
    return False


def _returned_names(expr):
    """Names a return expression may hand back as they are."""
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, ast.Tuple | ast.List):
        return set().union(*(_returned_names(e) for e in expr.elts))
    if isinstance(expr, ast.IfExp):
        return _returned_names(expr.body) | _returned_names(expr.orelse)
    if isinstance(expr, ast.NamedExpr):
        return _returned_names(expr.value) | {expr.target.id}
    return set()


def _aliases_of_arguments(func):
    """Argument names and every local bound to one of them by plain assignment."""
    args = func.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    changed = True
    while changed:
        changed = False
        for node in ast.walk(func):
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value:
                pairs = [(node.target, node.value)]
            else:
                continue
            for target, value in pairs:
                for name, source in _bound_pairs(target, value):
                    if source & names and name not in names:
                        names.add(name)
                        changed = True
    return names


def _bound_pairs(target, value):
    """``(name, names it may alias)`` for an assignment, tuples unpacked."""
    if isinstance(target, ast.Name):
        return [(target.id, _returned_names(value))]
    if isinstance(target, ast.Tuple | ast.List) and isinstance(
        value, ast.Tuple | ast.List
    ):
        if len(target.elts) == len(value.elts):
            return [
                pair
                for t, v in zip(target.elts, value.elts, strict=True)
                for pair in _bound_pairs(t, v)
            ]
    return []


def returns_of_arguments(source, filename="<source>"):
    """``(function, line, names)`` for each jitted return of an argument."""
    found = []
    for func in ast.walk(ast.parse(source, filename)):
        if not isinstance(func, ast.FunctionDef):
            continue
        if not any(_is_jit(d) for d in func.decorator_list):
            continue
        aliases = _aliases_of_arguments(func)
        for node in ast.walk(func):
            if isinstance(node, ast.Return) and node.value is not None:
                hit = _returned_names(node.value) & aliases
                if hit:
                    found.append((func.name, node.lineno, sorted(hit)))
    return found


def _jitted_functions(source):
    return [
        f.name
        for f in ast.walk(ast.parse(source))
        if isinstance(f, ast.FunctionDef) and any(_is_jit(d) for d in f.decorator_list)
    ]


@pytest.mark.parametrize(
    "body",
    [
        "return a",
        "return a, 1.0",
        "b = a\n    return b",
        "b = c = a\n    return (c,)",
        "b, n = a, 3\n    return n, b",
        "return a if n else None",
    ],
)
@pytest.mark.parametrize("decorator", ["@njit", "@nb.njit(cache=True)", "@numba.jit"])
def test_scan_finds_a_returned_argument(body, decorator):
    source = f"{decorator}\ndef kernel(a, n):\n    {body}\n"
    assert returns_of_arguments(source)


@pytest.mark.parametrize(
    "body",
    ["return a.sum()", "return a.copy()", "b = np.empty(3)\n    return b", "a[0] = 1"],
)
def test_scan_passes_new_objects(body):
    source = f"@njit(cache=True)\ndef kernel(a, n):\n    {body}\n"
    assert returns_of_arguments(source) == []


def test_no_numba_function_returns_one_of_its_arguments():
    offenders, n_jitted = [], 0
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text()
        n_jitted += len(_jitted_functions(source))
        for name, line, names in returns_of_arguments(source, str(path)):
            rel = path.relative_to(PACKAGE.parent)
            offenders.append(f"{rel}:{line} {name} returns {names}")
    # The scan must see the kernels, or it proves nothing.
    assert n_jitted >= 10
    assert not offenders, (
        "Numba functions that return an argument turn Ctrl-C into "
        "SystemError; write into the argument and return None:\n" + "\n".join(offenders)
    )


# ------------------------------------------------------------ the decorator
def _system_error_from(interrupt, how):
    if how == "cause":
        try:
            raise SystemError("returned a result with an exception set") from interrupt
        except SystemError as error:
            return error
    try:
        try:
            raise interrupt
        except KeyboardInterrupt:
            raise SystemError("returned a result with an exception set")  # noqa: B904
    except SystemError as error:
        return error


@pytest.mark.parametrize("how", ["cause", "context"])
def test_decorator_unwraps_the_interrupt(how):
    interrupt = KeyboardInterrupt()
    error = _system_error_from(interrupt, how)

    @keyboard_interrupt_passes
    def method():
        raise error

    with pytest.raises(KeyboardInterrupt) as caught:
        method()
    assert caught.value is interrupt


def test_decorator_unwraps_an_interrupt_nested_deep():
    # Numba reports an interrupted unpickling of a compiled function's
    # constants as a SystemError per level; eight levels have been seen.
    interrupt = KeyboardInterrupt()
    error = interrupt
    for _ in range(8):
        error = _system_error_from(error, "cause")

    @keyboard_interrupt_passes
    def method():
        raise error

    with pytest.raises(KeyboardInterrupt) as caught:
        method()
    assert caught.value is interrupt


@pytest.mark.parametrize(
    "error", [SystemError("other"), RuntimeError("x"), KeyboardInterrupt()]
)
def test_decorator_lets_other_errors_pass_unchanged(error):
    @keyboard_interrupt_passes
    def method():
        raise error

    with pytest.raises(type(error)) as caught:
        method()
    assert caught.value is error


def test_decorator_keeps_name_doc_and_result():
    def method(a, b=2):
        """Doc."""
        return a + b

    wrapped = keyboard_interrupt_passes(method)
    assert wrapped(1) == 3
    assert wrapped.__name__ == "method" and wrapped.__doc__ == "Doc."
    assert inspect.signature(wrapped) == inspect.signature(method)


ESTIMATORS = ESTIMATOR_CLASSES
_GUARDED_PREFIXES = (
    "fit",
    "partial_fit",
    "predict",
    "sample_",
    "decision_function",
    "latent_",
    "log_",
)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_public_methods_are_guarded(cls):
    names = [
        name
        for name in dir(cls)
        if name.startswith(_GUARDED_PREFIXES) and callable(getattr(cls, name, None))
    ]
    assert "fit" in names and any(n.startswith("predict") for n in names)
    bare = [
        n for n in names if not getattr(getattr(cls, n), "passes_keyboard_interrupt", 0)
    ]
    assert not bare, f"{cls.__name__} methods without the guard: {bare}"


# ------------------------------------------------------------ real signals
@pytest.fixture
def alarm_interrupts():
    """SIGALRM raises KeyboardInterrupt, as SIGINT does; restored afterwards."""
    if not hasattr(signal, "setitimer"):
        pytest.skip("needs signal.setitimer")
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _in_place_kernels():
    from skgp_bayes.linalg import _numba_ops

    rng = np.random.default_rng(0)
    lower = np.tril(rng.random((200, 200))) + np.eye(200)
    alpha = rng.random(200)
    return [
        (_numba_ops.residual_weight_from_lower_inverse, (lower, alpha)),
        (_numba_ops.mirror_lower, (lower,)),
    ]


@pytest.mark.parametrize("index", [0, 1], ids=["residual_weight", "mirror_lower"])
def test_timed_signal_in_an_in_place_kernel(index, alarm_interrupts):
    # A kernel that handed back its argument turned nearly every interrupt
    # landing in it into SystemError (196 of 200 measured), so 40 interrupts
    # in a loop that does nothing else would all but surely show it.
    kernel, args = _in_place_kernels()[index]
    kernel(*args)  # compile outside the timing
    escaped = []
    for i in range(40):
        try:
            try:
                signal.setitimer(signal.ITIMER_REAL, 0.0005 + 0.0001 * (i % 17))
                while True:
                    kernel(*args)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except KeyboardInterrupt:
            pass
        except SystemError as error:
            escaped.append(repr(error))
    assert not escaped, escaped[:3]


def _data(n, d, classify=False):
    rng = np.random.RandomState(0)
    X = rng.randn(n, d)
    y = X[:, 0] + 0.1 * rng.randn(n)
    return X, (y > 0).astype(int) if classify else y


# Each fit takes one or two tenths of a second on 2 cores: long enough for
# 15 interrupt timings spread over it, short enough to bound the test. The
# SGLD fit starts with the L-BFGS search of its MAP, where interrupts used
# to become SystemError.
SIGNAL_CASES = [
    SGLDGPRegressor(n_iter=30, map_subset=60, n_chains=1, random_state=0),
    SteinGPRegressor(n_particles=6, max_iter=40, random_state=0),
    SteinGPClassifier(n_particles=4, max_iter=30, random_state=0),
    VariationalMCMCRegressor(
        n_inducing=8,
        n_chains=1,
        n_warmup=15,
        n_samples=10,
        max_samples=10,
        max_leapfrog=4,
        svgp_max_iter=30,
        random_state=0,
    ),
    SelectiveSVGP(
        n_candidates=15,
        n_pre_iter=40,
        n_select_iter=30,
        n_post_iter=30,
        random_state=0,
    ),
]
N_TIMINGS = 15


def _timed_outcome(fit, delay):
    """``"interrupt"``, ``"finished"`` or the exception that escaped."""
    try:
        # The outer handler also catches a signal that lands while the timer
        # is being cleared.
        try:
            signal.setitimer(signal.ITIMER_REAL, delay)
            fit()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except KeyboardInterrupt:
        return "interrupt"
    return "finished"


def _interrupt_refits(index):
    """Interrupt refits of ``SIGNAL_CASES[index]`` at 15 timings; a summary."""
    import warnings

    warnings.simplefilter("ignore")  # short fits warn of convergence
    estimator = SIGNAL_CASES[index]
    signal.signal(signal.SIGALRM, signal.default_int_handler)
    X, y = _data(120, 4, is_classifier(estimator))
    X_query = X[:17] + 0.05
    fitted = clone(estimator).fit(X, y)  # compiles, and times one fit
    predict = getattr(fitted, "predict_proba", fitted.predict)
    before = predict(X_query)
    # The faster of two fits: on a busy machine a refit seldom runs faster,
    # so nearly every delay below lands inside the fit.
    durations = []
    for _ in range(2):
        start = time.perf_counter()
        clone(estimator).fit(X, y)
        durations.append(time.perf_counter() - start)
    duration = min(durations)
    outcomes, unchanged = [], True
    for delay in np.linspace(0.02, 0.98, N_TIMINGS) * duration:
        # Refitting the fitted estimator: an interrupt must leave it as it was.
        try:
            outcomes.append(_timed_outcome(lambda: fitted.fit(X, y), delay))
        except SystemError as error:  # the failure this test guards against
            return {"system_error": f"at {delay:.3f} s: {error!r}"}
        unchanged = unchanged and np.array_equal(predict(X_query), before)
    return {"system_error": None, "outcomes": outcomes, "unchanged": unchanged}


@pytest.mark.parametrize(
    "index",
    range(len(SIGNAL_CASES)),
    ids=[type(e).__name__ for e in SIGNAL_CASES],
)
def test_timed_signal_arrives_as_keyboard_interrupt(index):
    # In a child process. An interrupt landing just as Numba takes its
    # thread-launch lock (numba.set_num_threads takes it on every call)
    # leaves the lock held for good; any later threaded fit in the same
    # process then waits on it forever. Two full test runs hung that way in
    # later tests, with worker threads waiting in numba's _launch_threads,
    # and a third in this child (the Stein regressor's, 2026-12-02): the
    # package now holds interrupts off inside those calls
    # (skgp_bayes._numba_threads; test below). A fourth hang, on 2026-12-05,
    # was in the thread pool's own locks (skgp_bayes._thread_pool).
    code = (
        # A hang prints every thread's stack before the timeout below.
        "import faulthandler, json, sys; "
        "faulthandler.dump_traceback_later(240, exit=True); "
        f"sys.path.insert(0, {str(pathlib.Path(__file__).parent)!r}); "
        "import test_interrupt; "
        f"print(json.dumps(test_interrupt._interrupt_refits({index})))"
    )
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert child.returncode == 0, child.stderr[-3000:]
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result["system_error"] is None, result["system_error"]
    assert result["unchanged"], "an interrupted refit changed the predictions"
    outcomes = result["outcomes"]
    # Not a vacuous pass: fits were in fact interrupted. The delays span the
    # fastest of two timed fits, so only a refit over five times faster than
    # both (a load spike during the timing) leaves fewer than 3 of 15 inside
    # it. Asking for most of them rested on the load staying the same
    # between the timing and the refits.
    assert outcomes.count("interrupt") >= 3, outcomes


def test_interrupts_inside_numba_thread_calls_leave_its_locks_free():
    # Timed interrupts landing inside loops of the guarded thread-count
    # calls: after each, another thread must still get Numba's thread count
    # (it waits on the launch locks). Measured with numba's own calls in the
    # same loop: a lock was left held after the 18th interrupt; through the
    # guard, none in 2,000 (skgp_bayes._numba_threads).
    setup = """
        import threading
        import numba
        from skgp_bayes._numba_threads import numba_threads, set_numba_threads

        def left_behind():
            done = []
            probe = threading.Thread(
                target=lambda: done.append(numba.get_num_threads()), daemon=True
            )
            probe.start()
            probe.join(5)
            return "" if done else "Numba's launch lock held"
    """
    body = """
        while time.perf_counter() < deadline:
            previous = numba_threads()
            set_numba_threads(1)
            set_numba_threads(previous)
    """
    run_interrupted_loop(setup, body, n=500, shortest=1e-4, longest=2e-3)


def test_numba_thread_counts_go_through_the_guard():
    # Every call that reads or sets Numba's thread count, from anywhere in
    # the package, goes through skgp_bayes._numba_threads.
    package = pathlib.Path(__file__).resolve().parents[1] / "skgp_bayes"
    unguarded = []
    for path in package.rglob("*.py"):
        if path.name == "_numba_threads.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("get_num_threads", "set_num_threads")
            ):
                unguarded.append(f"{path.relative_to(package)}:{node.lineno}")
    assert not unguarded, unguarded


def test_thread_counts_without_the_launch_locks_agree_with_numba(monkeypatch):
    # Once the threading layer is launched, the counts go through its own C
    # functions, which take no lock (about 10 us a guarded call less, on
    # every kernel evaluation); they must read and set what Numba's public
    # calls read and set, and fall back to those calls where missing.
    from skgp_bayes import _numba_threads as guard

    numba.get_num_threads()  # launches the layer
    assert guard._lock_free_calls() is not None, "the guarded calls would serve"
    previous = numba.get_num_threads()
    for lock_free in (True, False):
        if not lock_free:
            monkeypatch.setattr(guard, "_lock_free_calls", lambda: None)
        try:
            guard.set_numba_threads(1)
            assert numba.get_num_threads() == 1 == guard.numba_threads()
            with guard.serial_numba():
                assert numba.get_num_threads() == 1
            guard.set_numba_threads(previous)
            assert numba.get_num_threads() == previous == guard.numba_threads()
            with guard.serial_numba():
                assert numba.get_num_threads() == 1
            assert numba.get_num_threads() == previous
            with pytest.raises(ValueError):
                guard.set_numba_threads(numba.config.NUMBA_NUM_THREADS + 1)
        finally:
            numba.set_num_threads(previous)
