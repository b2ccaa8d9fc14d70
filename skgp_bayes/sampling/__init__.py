"""Sampling layer: pathwise posterior function samples (seed 001).

Prior draws by random Fourier features, updated to posterior draws by
Matheron's rule; every sample uses one hyperparameter draw, so a set of
samples mixes over the hyperparameter posterior.
"""

from .pathwise import (
    DEFAULT_N_FEATURES,
    FunctionSample,
    FunctionSamples,
    add_white_noise,
    exact_conditioner,
    latent_conditioner,
    pathwise_functions,
    require_spectral_spec,
    sparse_conditioner,
    with_prior_noise,
)

__all__ = [
    "DEFAULT_N_FEATURES",
    "FunctionSample",
    "FunctionSamples",
    "add_white_noise",
    "exact_conditioner",
    "latent_conditioner",
    "pathwise_functions",
    "require_spectral_spec",
    "sparse_conditioner",
    "with_prior_noise",
]
