"""Log densities over flat parameter vectors, with exact gradients."""

from .exact import ExactMarginalTarget
from .exact_array import ArrayExactMarginalTarget
from .sparse import SparseWhitenedTarget
from .stochastic import StochasticMarginalGradient, StochasticTraceTarget
from .svgp import SVGPBound

__all__ = [
    "ArrayExactMarginalTarget",
    "ExactMarginalTarget",
    "SparseWhitenedTarget",
    "StochasticMarginalGradient",
    "StochasticTraceTarget",
    "SVGPBound",
]
