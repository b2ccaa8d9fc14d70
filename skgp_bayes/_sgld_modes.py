"""Modes that :class:`~skgp_bayes.SGLDGPRegressor`'s MALA chains reached
and the MAP searches did not.

The searches before the chains (:func:`~skgp_bayes._sgld_setup.
map_and_preconditioner`) start from the default point, the length-scale
screen's points and one climb beside the optimum; the chains' moves between
the modes they reach are the independence moves of
:mod:`skgp_bayes.inference.mode_jumps`. A mode none of those starts leads
to is still found by the chains, by their own small steps, and then crossed
as rarely as it was found: on ARD kernels, where two inputs can explain the
same signal, or an input's length scale is short in one mode and long in
another, the default chains ran their whole budget (``max_iter=20000``)
without mixing.

So, after a block that has not met the run-length rule and
whose slow coordinates would need more than a new warm-up and a first
block's draws at their rate so far (:func:`~skgp_bayes._sgld_refine.
worth_a_new_warmup`), L-BFGS starts from where the chains went: each
chain's last position and, for the slowest coordinates, the pooled draws at
that coordinate's 5% and 95% quantiles (a mode the chains visit in turn
shows in the tails of the pooled draws, not at the chains' ends). When the
maxima these searches reach, with the MAP and the modes already known, make
a Laplace mixture of more modes than the chains jump between, the chains go
on from their states with the new mixture, adapt again, and everything
before the new warm-up's end is discarded (:func:`~skgp_bayes._sgld_refine.
refined_chains`). The draws start searches again, for modes the chains
reach later, once the chains have run twice the iterations they had at the
last search (:data:`~skgp_bayes._sgld_refine.SEARCH_AGAIN_AFTER`). The
mixture is only a proposal: whatever it is, the
moves leave the posterior invariant, so the searches decide how fast the
chains mix, not what they sample.

Measured on default fits of the fresh-split benchmark that ended at
``max_iter`` (one BLAS thread; times of whole fits): see
``benchmarks/RESULTS.md``, "Modes the chains found".
"""

import numpy as np

from ._run_length import BULK_ESS_MIN, RHAT_MAX
from ._sgld_setup import MODE_JUMP_EVERY
from ._starts import subset_rows
from .inference.laplace import find_map, same_mode
from .inference.mode_jumps import laplace_mixture
from .targets import ExactMarginalTarget

__all__ = ["DrawModeSearch", "ModeSearch", "modes_from_draws", "search_starts"]

# Quantiles of the pooled draws of a slow coordinate at which searches
# start: a mode the chains visit in turn lies in the tails of the pooled
# draws, while the chains' last positions are where they happen to be.
TAIL_QUANTILES = (0.05, 0.95)
# Searches start from the tails of at most this many of the slowest
# coordinates (two searches each): with eleven slow coordinates the
# searches would cost more than they save on a fit that is short of its
# target by less than a few thousand iterations.
MAX_TAIL_COORDINATES = 4


def search_starts(kept, ends, rhat, ess):
    """Where the searches for the chains' modes start.

    Parameters
    ----------
    kept : ndarray of shape (n_chains, n_draws, n_params)
        The kept draws so far.
    ends : sequence of ndarray of shape (n_params,)
        Each chain's last position.
    rhat, ess : ndarray of shape (n_params,)
        Split R-hat and bulk ESS of the kept draws.

    Returns
    -------
    ndarray of shape (n_starts, n_params)
        The chains' ends, then, for each of the slowest coordinates (lowest
        bulk ESS first, at most :data:`MAX_TAIL_COORDINATES` of those that
        miss the run-length rule), the pooled draws at its
        :data:`TAIL_QUANTILES`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_modes import search_starts
    >>> kept = np.arange(24.0).reshape(2, 6, 2)  # coordinate 0 slow
    >>> starts = search_starts(kept, [kept[0, -1], kept[1, -1]],
    ...                        np.array([1.2, 1.0]), np.array([20.0, 500.0]))
    >>> starts.tolist()
    [[10.0, 11.0], [22.0, 23.0], [2.0, 3.0], [20.0, 21.0]]
    """
    kept = np.asarray(kept, dtype=np.float64)
    pooled = kept.reshape(-1, kept.shape[-1])
    rhat, ess = np.asarray(rhat, dtype=float), np.asarray(ess, dtype=float)
    met = (rhat <= RHAT_MAX) & (ess >= BULK_ESS_MIN)
    slow = np.flatnonzero(~met)
    # NaN ESS (a constant coordinate) sorts last
    slow = slow[np.argsort(np.nan_to_num(ess[slow], nan=np.inf), kind="stable")]
    starts = [np.asarray(end, dtype=np.float64) for end in ends]
    last = pooled.shape[0] - 1
    for j in slow[:MAX_TAIL_COORDINATES]:
        order = np.argsort(pooled[:, j], kind="stable")
        starts.extend(pooled[order[round(q * last)]] for q in TAIL_QUANTILES)
    return np.array(starts)


class DrawModeSearch:
    """Searches for modes from the chains' draws on one target, as a callable.

    ``search(kept, ends, rhat, ess, jumps)`` is :func:`modes_from_draws` on
    :meth:`target`, from the mode the chains started in: the variational
    MCMC regressor's chains (on the collapsed or exact target they sample)
    use it as it is, the SGLD chains through :class:`ModeSearch`.

    Parameters
    ----------
    target : object
        With ``logp_and_grad(params) -> (value, grad)``.
    map_params : ndarray of shape (n_params,)
        The mode the chains started in.
    bounds : ndarray of shape (n_params, 2)
    every : int
        The mixture's jump interval (``ModeJumps.every``).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_modes import DrawModeSearch
    >>> class Bump:  # one mode, at 0
    ...     def logp_and_grad(self, x):
    ...         return float(-0.5 * x @ x), -x
    >>> search = DrawModeSearch(Bump(), np.zeros(1), np.array([[-3.0, 3.0]]), 2)
    >>> kept = np.random.default_rng(0).normal(0.0, 1.0, size=(2, 50, 1))
    >>> print(search(kept, kept[:, -1], np.array([1.2]), np.array([5.0]), None))
    None
    """

    def __init__(self, target, map_params, bounds, every):
        self._target = target
        self.map_params = np.asarray(map_params, dtype=np.float64)
        self.bounds = bounds
        self.every = every

    def target(self):
        """The density the searches climb."""
        return self._target

    def __call__(self, kept, ends, rhat, ess, jumps):
        """A mixture of more modes than ``jumps`` (ModeJumps or None), or None.

        Arguments as for :func:`search_starts`, and the chains' mixture.
        """
        return modes_from_draws(
            self.target(),
            (kept, ends, rhat, ess),
            (self.map_params, jumps),
            self.bounds,
            every=self.every,
        )


class ModeSearch(DrawModeSearch):
    """The searches from the chains' draws, on the exact marginal.

    On every training row up to ``map_subset`` (the MAP search's rows
    then), else on ``map_subset`` evenly spaced ones
    (:func:`~skgp_bayes._starts.subset_rows`; the MAP search draws its
    subset at random, with the fit's generator, which a search here must
    not touch). Its maxima are only where the proposals are centred; the
    chains' own densities, on every row, accept or refuse them.

    Parameters
    ----------
    data : tuple
        ``(adapter, X, y, prior_set, log_noise)`` on the model's scale.
    map_params : ndarray of shape (n_params,)
        The MAP the chains started from.
    bounds : ndarray of shape (n_params, 2)
    map_subset : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._sgld_modes import ModeSearch
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> X = np.linspace(-2, 2, 20)[:, None]
    >>> data = (KernelAdapter(RBF()), X, np.sin(2 * X[:, 0]), None, np.log(0.01))
    >>> search = ModeSearch(data, np.zeros(1), np.array([[-3.0, 3.0]]), 500)
    >>> kept = np.random.default_rng(0).normal(0.0, 0.1, size=(2, 50, 1))
    >>> print(search(kept, kept[:, -1], np.array([1.0]), np.array([500.0]), None))
    None
    """

    def __init__(self, data, map_params, bounds, map_subset):
        super().__init__(None, map_params, bounds, MODE_JUMP_EVERY)
        self.data = data
        self.map_subset = map_subset

    def target(self):
        """The exact marginal on the search's rows."""
        adapter, X, y, prior_set, log_noise = self.data
        rows = subset_rows(X.shape[0], self.map_subset)
        return ExactMarginalTarget(adapter, X[rows], y[rows], prior_set, log_noise)


def modes_from_draws(target, draws, known, bounds, every):
    """The Laplace mixture of more modes than the chains know, or None.

    L-BFGS-B on ``target`` from the :func:`search_starts` of the chains'
    draws; the maxima, with the modes already known, make the mixture
    (:func:`~skgp_bayes.inference.mode_jumps.laplace_mixture`). None
    where it holds no mode that none of the known ones is.

    Parameters
    ----------
    target : object
        With ``logp_and_grad(params) -> (value, grad)``: the density the
        chains sample, in their parameters.
    draws : tuple
        ``(kept, ends, rhat, ess)`` as for :func:`search_starts`.
    known : tuple
        ``(map_params, jumps)``: the mode the chains started in and their
        :class:`~skgp_bayes.inference.mode_jumps.ModeJumps` (or None).
    bounds : ndarray of shape (n_params, 2)
    every : int
        The mixture's jump interval (``ModeJumps.every``).

    Returns
    -------
    ModeJumps or None

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_modes import modes_from_draws
    >>> class TwoBumps:  # modes at -2 and 2, each of unit curvature
    ...     def logp_and_grad(self, x):
    ...         a, b = np.exp(-0.5 * (x + 2) ** 2), np.exp(-0.5 * (x - 2) ** 2)
    ...         return np.log(a + b).item(), ((-(x + 2) * a - (x - 2) * b) / (a + b))
    >>> kept = np.array([[[-2.1], [-1.9], [2.0], [-2.0]],
    ...                  [[-2.0], [-2.2], [-1.8], [-2.0]]])
    >>> found = modes_from_draws(TwoBumps(), (kept, kept[:, -1], np.array([1.2]),
    ...                          np.array([5.0])), (np.array([-2.0]), None),
    ...                          np.array([[-6.0, 6.0]]), every=2)
    >>> np.round(np.sort(found.means[:, 0]), 2)
    array([-2.,  2.])
    """
    kept, ends, rhat, ess = draws
    map_params, jumps = known
    known = [np.asarray(map_params, dtype=np.float64)]
    if jumps is not None:
        known.extend(jumps.means)
    starts = search_starts(kept, ends, rhat, ess)
    found = [find_map(target, start, bounds).params for start in starts]
    # The chains' ends come first among the starts: the modes they reach are
    # where the chains are, which the mixture must keep for them to leave.
    # On grunfeld (154 rows, the split at seed 15 of
    # benchmarks/bench_fresh_splits.py) one chain had found a mode 15 nats
    # above the MAP; with the MAP's mode left out for its share, the search
    # returned nothing and the other chain stayed there.
    mixture = laplace_mixture(
        target, [*known, *found], bounds, every=every, keep_near=found[: len(ends)]
    )
    if mixture is None or not _has_new_mode(mixture.means, known):
        return None
    return mixture


def _has_new_mode(means, known):
    """Whether a mixture's means include one none of ``known`` is the mode of."""
    return any(not any(same_mode(mean, point) for point in known) for mean in means)
