"""Observation models ``p(y | f)`` and their expectations under ``N(mu, var)``.

Every likelihood gives the pointwise log density with its first and second
derivatives in the latent value, the expected log density under normal
latent marginals with its gradients in the mean and the variance, the
predictive mean and the log predictive density. None of them knows about
Gaussian processes.
"""

from ._base import Likelihood
from ._quadrature import gauss_hermite, sobol_normal_blocks, standard_normal_draws
from .bernoulli import Bernoulli
from .gaussian import Gaussian
from .multiclass import RobustMax, Softmax
from .poisson import Poisson

__all__ = [
    "Likelihood",
    "Gaussian",
    "Bernoulli",
    "Poisson",
    "Softmax",
    "RobustMax",
    "gauss_hermite",
    "sobol_normal_blocks",
    "standard_normal_draws",
]
