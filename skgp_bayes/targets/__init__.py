"""Log densities over flat parameter vectors, with exact gradients."""

from .exact import ExactMarginalTarget

__all__ = ["ExactMarginalTarget"]
