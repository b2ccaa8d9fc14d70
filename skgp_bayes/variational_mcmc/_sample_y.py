"""``VariationalMCMCRegressor.sample_y``'s two samplers and the Poisson map."""

import numpy as np

from ..predictive.exact_inducing import exact_joint_draws
from ..predictive.sparse import sparse_joint_draws
from ..sampling import add_white_noise

__all__ = ["exact_y", "expected_counts", "pathwise_y"]


def expected_counts(likelihood, out, exposure):
    """Poisson: the log-rate draws ``out`` as expected counts; else ``out``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.variational_mcmc._sample_y import expected_counts
    >>> expected_counts("poisson", np.zeros((2, 3)), np.array([1.0, 2.0]))[:, 0]
    array([1., 2.])
    """
    if likelihood == "poisson":
        # y_std_ = 1 and out includes y_mean_: out is the log rate
        if exposure is not None:
            out += np.log(exposure)[:, None]
        out = np.exp(out)
    return out


def pathwise_y(reg, X, n_samples, rng, n_features, posterior):
    """``sample_y`` of the fitted ``reg`` by pathwise samples, units of ``y``.

    Examples
    --------
    See :meth:`skgp_bayes.VariationalMCMCRegressor.sample_y`.
    """
    functions, white = reg._regression_functions(n_samples, rng, n_features, posterior)
    return add_white_noise(functions(X), functions.draws, white, reg.y_std_, rng)


def exact_y(reg, X, n_samples, rng, draws, exact=None):
    """``sample_y`` of ``reg`` from each draw's dense conditional, units of ``y``.

    ``draws`` are ``reg._posterior_draws``'; ``exact`` is
    ``reg._exact_data``', where the draws predict as the exact GP.

    Examples
    --------
    See :meth:`skgp_bayes.VariationalMCMCRegressor.sample_y`.
    """
    thetas, v, factors = draws
    if exact is not None:
        out = exact_joint_draws(exact, thetas, reg._noise_draws(), X, n_samples, rng)
        return out * reg.y_std_ + reg.y_mean_
    out = sparse_joint_draws(
        reg._adapter,
        reg.inducing_points_,
        reg._jitter,
        thetas,
        v,
        None if factors is None else factors[0],
        X,
        n_samples,
        rng,
    )
    return out * reg.y_std_ + reg.y_mean_
