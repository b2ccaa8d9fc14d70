"""Inference engines over flat parameter vectors; no GP knowledge here."""

from .adam import AdamState, adam_init, adam_update
from .svgd import SVGDResult, median_bandwidth, run_svgd, svgd_direction

__all__ = [
    "AdamState",
    "adam_init",
    "adam_update",
    "SVGDResult",
    "median_bandwidth",
    "run_svgd",
    "svgd_direction",
]
