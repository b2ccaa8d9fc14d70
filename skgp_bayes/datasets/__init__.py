"""Bundled real data sets and synthetic generators.

The real data sets are small public CSV files shipped with the package, so
examples, tests and benchmarks run offline.
"""

from ._loaders import bin_coal_counts, load_coal, load_concrete, load_mcycle
from ._synthetic import make_neal_multimodal

__all__ = [
    "bin_coal_counts",
    "load_coal",
    "load_concrete",
    "load_mcycle",
    "make_neal_multimodal",
]
