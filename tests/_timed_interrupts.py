"""Loops of timed interrupts in a child process, for the guards against Ctrl-C.

Each test runs a body under a one-shot SIGALRM (raised as
``KeyboardInterrupt``) many times, and after each interrupt checks that
nothing was left behind: a lock held, a mode set, a log installed. In a
child process, so that a lock left held cannot hang the test run, and a
mode left set stays there.
"""

import subprocess
import sys
import textwrap

_LOOP = """
import faulthandler, random, signal, sys, time

faulthandler.dump_traceback_later({hang_seconds}, exit=True)
{setup}
signal.signal(signal.SIGALRM, signal.default_int_handler)
rng = random.Random({seed})
for i in range({n}):
    # The body loops until this deadline: CPython swallows an interrupt
    # raised inside a weakref callback or a finaliser ("Exception ignored
    # in ..."), so now and then a signal never arrives.
    deadline = time.perf_counter() + 2.0
    try:
        # armed inside the try: on a loaded machine a short timer can fire
        # before the next statement starts
        signal.setitimer(signal.ITIMER_REAL, rng.uniform({shortest}, {longest}))
{body}
    except KeyboardInterrupt:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    problem = left_behind()
    if problem:
        sys.exit(f"{{problem}} after interrupt {{i}}")
print("ok")
"""


def run_interrupted_loop(setup, body, n, shortest, longest, seed=0, timeout=150):
    """Interrupt ``body`` ``n`` times in a child; assert nothing was left behind.

    ``setup`` is module-level code that defines ``left_behind()``, which
    returns a description of what an interrupt left behind, or "". ``body``
    loops until ``time.perf_counter()`` passes ``deadline``. The timers
    are drawn uniformly between ``shortest`` and ``longest`` seconds.
    """
    code = _LOOP.format(
        hang_seconds=timeout - 30,
        setup=textwrap.dedent(setup),
        seed=seed,
        n=n,
        shortest=shortest,
        longest=longest,
        body=textwrap.indent(textwrap.dedent(body).strip(), " " * 8),
    )
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout
    )
    assert child.returncode == 0, child.stdout[-500:] + child.stderr[-3000:]
    assert child.stdout.strip().endswith("ok")
