"""Whether particles may run on threads is decided even before any parallel
Numba kernel has run."""

import subprocess
import sys

_PROBE = """
import numba
from skgp_bayes.inference._chain_threads import numba_threads_are_safe
safe = numba_threads_are_safe()
print(safe, numba.threading_layer())
"""


def test_thread_safety_is_decided_in_a_fresh_interpreter():
    # A fresh interpreter: no parallel kernel has chosen Numba's layer yet.
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    ).stdout.split()
    safe, layer = out[0] == "True", out[1]
    assert safe == (layer in ("omp", "tbb"))
