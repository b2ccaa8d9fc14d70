"""Shared settings of the variational MCMC estimators' tests."""

import warnings

from skgp_bayes.exceptions import SamplerWarning

# Fixed-length runs (max_samples = n_samples): these tests check the fit and
# its predictions, not the run-length rule, which has tests of its own.
SMALL = dict(
    n_chains=2,
    n_warmup=60,
    n_samples=60,
    max_samples=60,
    max_leapfrog=8,
    random_state=0,
)

# Short fixed-length runs of the regressors' default model.
SHORT_CHAINS = dict(n_chains=2, n_warmup=100, n_samples=100, max_samples=100)


def quiet_fit(est, *args, **kwargs):
    """``est.fit`` with sampler warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        return est.fit(*args, **kwargs)


def seeded(seed, **changes):
    """SMALL with ``random_state`` offset by the statistical seed."""
    if "n_samples" in changes:
        changes.setdefault("max_samples", changes["n_samples"])
    return {**SMALL, "random_state": SMALL["random_state"] + seed, **changes}
