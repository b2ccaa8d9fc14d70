"""The run-length rule both samplers stop by, and how often they check it.

The variational MCMC chains (HMC) and the SGLD regressor's chains (MALA)
run in blocks until every parameter's split R-hat is at most
:data:`RHAT_MAX` and its bulk ESS at least :data:`BULK_ESS_MIN` (Vehtari,
Gelman, Simpson, Carpenter and Buerkner, 2021), or their budget ends. One
rule, so that "converged" means the same on every estimator.
"""

import numpy as np

__all__ = [
    "BULK_ESS_MIN",
    "FURTHER_BLOCK_FRACTION",
    "RHAT_MAX",
    "further_block",
    "iterations_still_needed",
]

# Split R-hat at most 1.01 and a bulk effective sample size of at least 100
# for every parameter: enough for posterior means and central intervals to
# about a tenth of a posterior standard deviation (the Monte Carlo error is
# sd / sqrt(ESS)).
RHAT_MAX = 1.01
BULK_ESS_MIN = 100
# After a block that misses the rule, the next makes the kept span a
# quarter longer, so a run ends at most a quarter past the length it
# needed (an eighth on average) and the checks stay logarithmic in the run
# length. With fixed blocks of 250 HMC iterations a rule met at 260 ran to
# 500: on the sunspot numbers R-hat was 1.011 at 250 and 1.008 at 300. A
# check costs a rank transform of every parameter's draws, a few hundredths
# of a second for tens of parameters and thousands of draws; the chains of
# the suite's fits take tenths of a second to seconds a block. The SGLD
# chains grew by half their span until 2026-12: a quarter took their 108
# default fits of four fresh splits of every regression set from 137 s to
# 115 s in all, at equal test scores (benchmarks/RESULTS.md). Checking more
# often lets R-hat's noise stop a run a little earlier, at run lengths
# where the bulk ESS is already in the hundreds.
FURTHER_BLOCK_FRACTION = 0.25


def further_block(span, least=1, most=None):
    """Iterations of the next block after ``span`` kept iterations per chain.

    ``ceil(FURTHER_BLOCK_FRACTION * span)``, at least ``least`` and at most
    ``most`` (no bound when None).

    Parameters
    ----------
    span : int
        Iterations per chain kept so far (after burn-in, before thinning).
    least : int, default=1
    most : int or None, default=None

    Returns
    -------
    int

    Examples
    --------
    >>> from skgp_bayes._run_length import further_block
    >>> further_block(250), further_block(1000, most=200), further_block(10, least=50)
    (63, 200, 50)
    """
    block = max(int(least), int(np.ceil(FURTHER_BLOCK_FRACTION * span)))
    return block if most is None else min(block, int(most))


def iterations_still_needed(span, rhat, ess):
    """Iterations per chain the slowest parameter still needs, at its rate so far.

    Where a parameter misses the rule, its bulk ESS grows in proportion to
    the run's length, and so does the inverse of its split R-hat's excess
    over 1: with ``M`` split chains of ``n`` draws, the between-chain
    variance of their means is the variance over ``ESS / M`` effective
    draws, so ``R-hat^2 = 1 - 1/n + M / ESS`` and ``R-hat - 1`` is about
    ``M / (2 ESS)`` (four chains, eight halves: R-hat <= 1.01 asks for a
    bulk ESS of about 400). A parameter needs its span multiplied by
    ``max(BULK_ESS_MIN / ESS, (R-hat - 1) / (RHAT_MAX - 1))``; the estimate
    is that factor's largest, less one, times ``span``. An estimate, for
    chains in one stationary regime: chains apart in two modes do not come
    together at this rate.

    Parameters
    ----------
    span : int
        Iterations per chain the draws come from.
    rhat, ess : ndarray of shape (n_params,)
        Split R-hat and bulk ESS of each parameter (NaN where not measured:
        left out).

    Returns
    -------
    float
        0 where every measured parameter meets the rule.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._run_length import iterations_still_needed
    >>> rhat, ess = np.array([1.03, 1.0]), np.array([300.0, 900.0])
    >>> float(iterations_still_needed(250, rhat, ess))
    500.0
    >>> float(iterations_still_needed(250, np.array([1.005]), np.array([50.0])))
    250.0
    """
    rhat, ess = np.asarray(rhat, dtype=float), np.asarray(ess, dtype=float)
    measured = np.isfinite(rhat) & np.isfinite(ess)
    with np.errstate(divide="ignore"):
        factor = np.maximum(
            BULK_ESS_MIN / ess[measured], (rhat[measured] - 1.0) / (RHAT_MAX - 1.0)
        )
    if not factor.size or np.max(factor) <= 1.0:
        return 0.0
    return float(span * (np.max(factor) - 1.0))
