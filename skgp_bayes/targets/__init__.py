"""Log densities over flat parameter vectors, with exact gradients."""

from .exact import ExactMarginalTarget
from .sparse import SparseWhitenedTarget
from .stochastic import StochasticMarginalGradient, StochasticTraceTarget
from .svgp import SVGPBound

__all__ = [
    "ExactMarginalTarget",
    "SparseWhitenedTarget",
    "StochasticMarginalGradient",
    "StochasticTraceTarget",
    "SVGPBound",
]
