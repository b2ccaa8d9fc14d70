"""Skewed coordinates of :class:`~skgp_bayes.SGLDGPRegressor`'s MALA chains,
mapped once per fit to nearly normal ones, and modes the chains found.

A metric, dense or diagonal, rescales and rotates; it cannot make a skewed
marginal symmetric, and MALA then crosses a long tail with the step the
steep side allows. Log length scales of weakly relevant inputs are like
that. On the US macroeconomic series (142 rows, five inputs; a split of the
fresh-split benchmark) two log length scales had skewness 1.7 and 2.2, and
the default chains ended at ``max_iter=20000`` with 121-132 effective
draws of those two and split R-hat 1.025. Sinh maps fitted to the first
3,000 draws of each chain (60-70 effective draws of the slow coordinates)
and chains continued under them for 8,000 iterations from the same states
gave 734-1,086 effective draws of those coordinates, against 6-19 for
chains continued without maps (one run each;
:mod:`~skgp_bayes.inference.marginal_maps`). The maps change how fast the
chains mix, not what they sample: a draw ``s`` of the mapped density,
mapped back, is a draw of the posterior whatever the map.

The rule. After a block of the automatic run length that has not met the
run-length rule, the kept draws are tested for skew
(:func:`~skgp_bayes.inference.marginal_maps.fit_marginal_maps`, counted in
effective draws) once every coordinate has
:data:`~skgp_bayes.inference.marginal_maps.MIN_EFFECTIVE_DRAWS`, so that
each coordinate's skew is tested before the one refinement a fit makes.
The chains go on under the maps when two things hold.

* Every coordinate that has not met its target (split R-hat or bulk ESS)
  is skewed. Where a slow coordinate is symmetric, the slow direction is
  one the marginal maps cannot straighten (several parameters moving
  together, or chains apart in two modes). On a concrete-strength split a
  rule that mapped wherever some slow coordinate was skewed mapped one of
  three slow coordinates and ended with 1.8 effective draws of the slowest
  per 1,000 kept, against 3.3 for the chains left alone; on that
  macroeconomic split both slow coordinates were skewed.
* Without the maps the chains would still need more iterations than a
  refinement costs before its first check: at the slow coordinates' rate
  so far, the bulk ESS target lies more than a new warm-up and a first
  block's draws away. A fit short of its target by a few hundred
  iterations (or only by R-hat, which more draws of the same chains
  settle) should not pay a new warm-up.

The chains continue from their current states, mapped, with a new warm-up
(the step and the metric adapt again in the new coordinates), and
everything before its end is discarded as burn-in. Not with mode jumps,
whose proposals are Gaussian in the original coordinates; not under a
``burn_in`` the user fixed, which would keep the draws before the maps; and
only when the budget left holds the warm-up and a first block's draws.

Before the maps, and under the same conditions, the slow chains' draws start
searches for modes that the chains visit and the MAP searches missed
(:mod:`skgp_bayes._sgld_modes`): slow coordinates whose chains sit in, or
travel between, separate modes are what the maps cannot straighten. Where
the searches find more modes, the chains go on with jumps between them
(and so without maps), adapting again as above.

A mode the chains first reach after a search is crossed as rarely as it
was found, so the draws start searches again, but only once the chains
have run at least :data:`SEARCH_AGAIN_AFTER` times the iterations they had
at the last search: the searches of a fit are then at most about
``log2(max_iter / first search)``, each after as many iterations as all
before it, and a search that finds nothing new costs its L-BFGS runs and
no draws. On a split of Boston's house values (300 rows, 13 inputs) the
one search of a fit ran at iteration 1,500, before the chains had visited
a fifth mode (log density within 0.2 of the MAP's, 14% of the draws); the
chains then crossed to it three times in 20,000 iterations and the fit
warned (``benchmarks/RESULTS.md``, "Searches again where the chains went
later").
"""

import numpy as np

from ._run_length import BULK_ESS_MIN, RHAT_MAX
from ._sgld_setup import FIRST_DRAWS, WARMUP
from .inference.marginal_maps import MIN_EFFECTIVE_DRAWS, fit_marginal_maps
from .inference.sgld import readapting_state

__all__ = [
    "SEARCH_AGAIN_AFTER",
    "continuation",
    "mapped_bounds",
    "maps_line",
    "modes_wanted",
    "refined_chains",
    "searched_too_recently",
    "skew_maps_for",
    "worth_a_new_warmup",
]


# The chains search for modes again only after this many times the
# iterations they had at the last search: as long again as all the
# iterations before it, so that the chains have had as much time to reach a
# new mode as they had to reach the ones already searched from.
SEARCH_AGAIN_AFTER = 2.0


def continuation(runs, diagnosed, options, run, limit, find_modes=None):
    """The options and chain inputs of the next block of the run length.

    The same chains further by :meth:`RunLength.next_block
    <skgp_bayes._sgld_setup.RunLength.next_block>`, or the chains with
    jumps between more modes (``find_modes``, where :func:`modes_wanted`),
    or, once per fit, the chains in coordinates that map their skewed
    parameters (:func:`skew_maps_for`); either way :func:`refined_chains`
    adapts them again.

    Parameters
    ----------
    runs : list of dict
        The last block's chain records.
    diagnosed : tuple
        ``(iterations so far, burn-in, kept draws, split R-hat, bulk ESS)``.
    options : dict
        The chains' options.
    run : RunLength
    limit : int
        The iteration at which the budget ends.
    find_modes : callable, optional
        ``find_modes(kept, ends, rhat, ess, jumps) -> ModeJumps or None``
        (:class:`~skgp_bayes._sgld_modes.ModeSearch`): a mixture of more
        modes than the chains' ``jumps``, from the kept draws and each
        chain's last position ``ends``.

    Returns
    -------
    options : dict
    chain_inputs : list of dict

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_refine import continuation
    >>> from skgp_bayes._sgld_setup import RunLength
    >>> from skgp_bayes._sgld_solvers import CholeskySolver
    >>> rng = np.random.default_rng(0)
    >>> kept = rng.normal(size=(2, 1000, 2))  # symmetric: no maps
    >>> diagnosed = (1500, 500, kept, np.array([1.02, 1.0]), np.array([40.0, 900.0]))
    >>> options = {"solver": CholeskySolver(), "jumps": None, "n_iter": 1500}
    >>> runs = [{"state": "chain 0"}, {"state": "chain 1"}]
    >>> run = RunLength("auto", 20000, None, 1)
    >>> new, inputs = continuation(runs, diagnosed, options, run, 20000)
    >>> new["n_iter"], inputs
    (250, [{'state': 'chain 0'}, {'state': 'chain 1'}])
    """
    n_done, burn, kept, rhat, ess = diagnosed
    # a burn-in the user fixed would keep the draws before the change
    if run.burn_in is not None:
        return _further(runs, options, run, (n_done, burn, limit))
    span, budget_left = n_done - burn, limit - n_done
    if find_modes is not None and modes_wanted(
        span, rhat, ess, options, budget_left, WARMUP, n_done
    ):
        ends = [r["state"]["sgld"].x for r in runs]
        jumps = find_modes(kept, ends, rhat, ess, options.get("jumps"))
        options = {**options, "modes_searched_at": n_done}
        if jumps is not None:
            options["jumps"] = jumps
            return refined_chains(
                runs, options, None, n_done, WARMUP, run.metric_windows()
            )
    maps = skew_maps_for(kept, span, rhat, ess, options, budget_left, WARMUP)
    if maps is not None:
        return refined_chains(runs, options, maps, n_done, WARMUP, run.metric_windows())
    return _further(runs, options, run, (n_done, burn, limit))


def _further(runs, options, run, lengths):
    """The same chains, one block of the run length further."""
    n_done, burn, limit = lengths
    n_next = run.next_block(n_done, burn, limit)
    return {**options, "n_iter": n_next}, [{"state": r["state"]} for r in runs]


def maps_line(names, maps):
    """The progress line that says which parameters the chains map.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_refine import maps_line
    >>> from skgp_bayes.inference.marginal_maps import SinhMaps
    >>> maps = SinhMaps(np.zeros(2), np.ones(2), np.array([1.0, 0.0]),
    ...                 np.array([0.5, 0.0]))
    >>> maps_line(["length_scale", "noise_variance"], maps).split(";")[0]
    'sinh maps for the skewed length_scale'
    """
    mapped = [name for name, m in zip(names, maps.mapped, strict=True) if m]
    return (
        f"sinh maps for the skewed {', '.join(mapped)}; the chains adapt again "
        "in the mapped coordinates"
    )


def skew_maps_for(kept, span, rhat, ess, options, budget_left, warmup):
    """The sinh maps the chains should continue under, or None.

    Parameters
    ----------
    kept : ndarray of shape (n_chains, n_draws, n_params)
        The kept draws of the chains so far.
    span : int
        The iterations per chain those draws come from (after the burn-in,
        before thinning).
    rhat, ess : ndarray of shape (n_params,)
        Their split R-hat and bulk ESS.
    options : dict
        The chains' options (``solver``, ``jumps``, ``maps``).
    budget_left : int
        Iterations per chain the run may still take.
    warmup : int
        Iterations of a new warm-up.

    Returns
    -------
    SinhMaps or None

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_refine import skew_maps_for
    >>> from skgp_bayes._sgld_solvers import CholeskySolver
    >>> rng = np.random.default_rng(0)
    >>> kept = np.stack([np.exp(rng.normal(size=(2, 1000))),  # a long right tail
    ...                  rng.normal(size=(2, 1000))], axis=-1)
    >>> options = {"solver": CholeskySolver(), "jumps": None}
    >>> maps = skew_maps_for(kept, 3000, np.array([1.02, 1.0]),
    ...                      np.array([40.0, 900.0]), options, 10000, 500)
    >>> maps.mapped
    array([ True, False])
    >>> skew_maps_for(kept, 3000, np.array([1.0, 1.02]), np.array([900.0, 40.0]),
    ...               options, 10000, 500) is None  # the slow one is symmetric
    True
    >>> skew_maps_for(kept, 1000, np.array([1.02, 1.0]), np.array([80.0, 900.0]),
    ...               options, 10000, 500) is None  # 250 more iterations would do
    True
    """
    if options.get("maps") is not None or options.get("jumps") is not None:
        return None
    if not options["solver"].metropolis or budget_left < warmup + FIRST_DRAWS:
        return None
    rhat, ess = np.asarray(rhat, dtype=float), np.asarray(ess, dtype=float)
    measured = np.isfinite(ess)
    if not measured.any() or np.any(ess[measured] < MIN_EFFECTIVE_DRAWS):
        return None
    slow = (rhat > RHAT_MAX) | (ess < BULK_ESS_MIN)
    if not worth_a_new_warmup(span, rhat, ess, warmup):
        return None
    # The slow coordinates alone first: where one of them keeps the identity
    # no maps are taken, and their fit costs a fraction of all of them
    # (chains held block after block by one symmetric coordinate refit every
    # coordinate at every block).
    if slow.any():
        alone = fit_marginal_maps(kept[:, :, slow], ess[slow])
        if alone is None or not np.all(alone.mapped):
            return None
    maps = fit_marginal_maps(kept, ess)
    if maps is None or not np.all(maps.mapped[slow]):
        return None
    return maps


def worth_a_new_warmup(span, rhat, ess, warmup):
    """Whether the slow coordinates need more than a new warm-up and a first
    block's draws.

    At the slowest coordinate's rate of effective draws over the ``span``
    iterations of the kept draws so far. A fit short of its target by a few
    hundred iterations, or only by R-hat (which more draws of the same
    chains settle), should not pay for a new warm-up.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_refine import worth_a_new_warmup
    >>> worth_a_new_warmup(1000, np.array([1.02, 1.0]), np.array([30.0, 900.0]), 500)
    True
    >>> worth_a_new_warmup(1000, np.array([1.02, 1.0]), np.array([80.0, 900.0]), 500)
    False
    """
    rhat, ess = np.asarray(rhat, dtype=float), np.asarray(ess, dtype=float)
    slow = ((rhat > RHAT_MAX) | (ess < BULK_ESS_MIN)) & np.isfinite(ess)
    if not slow.any():
        return False
    still_needed = span * (BULK_ESS_MIN / max(np.min(ess[slow]), 1e-12) - 1.0)
    return bool(still_needed > warmup + FIRST_DRAWS)


def searched_too_recently(searched_at, n_done):
    """Whether the chains, ``n_done`` iterations in, are short of
    :data:`SEARCH_AGAIN_AFTER` times the ``searched_at`` of the last search
    from their draws (None: no search yet).

    Examples
    --------
    >>> from skgp_bayes._sgld_refine import searched_too_recently
    >>> searched_too_recently(None, 10), searched_too_recently(1500, 2999)
    (False, True)
    """
    return searched_at is not None and n_done < SEARCH_AGAIN_AFTER * searched_at


def modes_wanted(span, rhat, ess, options, budget_left, warmup, n_done):
    """Whether the chains' draws should start searches for more modes.

    For MALA chains (the moves need exact log densities) in the original
    coordinates (the proposals are Gaussian there), with a warm-up and a
    first block left in the budget, slow enough that a new warm-up is worth
    it (:func:`worth_a_new_warmup`), and, where the draws have started
    searches before (at iteration ``options["modes_searched_at"]``), at
    :data:`SEARCH_AGAIN_AFTER` times those iterations or more.

    Parameters
    ----------
    span : int
        Iterations per chain of the kept draws.
    rhat, ess : ndarray of shape (n_params,)
    options : dict
    budget_left : int
    warmup : int
    n_done : int
        Iterations per chain so far (a warm start's included).

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_refine import modes_wanted
    >>> from skgp_bayes._sgld_solvers import CholeskySolver
    >>> slow = (np.array([1.3, 1.0]), np.array([5.0, 900.0]))
    >>> modes_wanted(1000, *slow, {"solver": CholeskySolver()}, 10000, 500, 1500)
    True
    >>> searched = {"solver": CholeskySolver(), "modes_searched_at": 1500}
    >>> modes_wanted(1000, *slow, searched, 10000, 500, 2500)  # too soon
    False
    >>> modes_wanted(1000, *slow, searched, 10000, 500, 3000)
    True
    """
    if options.get("maps") is not None:
        return False
    if searched_too_recently(options.get("modes_searched_at"), n_done):
        return False
    if not options["solver"].metropolis or budget_left < warmup + FIRST_DRAWS:
        return False
    return worth_a_new_warmup(span, rhat, ess, warmup)


def refined_chains(runs, options, maps, n_done, warmup, windows):
    """The options and chain inputs that continue ``runs`` under ``maps``
    (None: in the same coordinates, as after new mode jumps in ``options``).

    Parameters
    ----------
    runs : list of dict
        The last block's chain records (``state`` of each).
    options : dict
        The chains' options.
    maps : SinhMaps or None
    n_done : int
        Iterations per chain so far (the chains' counter).
    warmup : int
        Iterations of the new warm-up.
    windows : tuple of (int, int)
        The metric windows of a warm-up, counted from its start.

    Returns
    -------
    options : dict
        With ``maps``, a block of the warm-up and a first block's draws, and
        the adaptation moved to follow ``n_done``.
    chain_inputs : list of dict
        Each chain's state, moved to the mapped coordinates, adapting again.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_refine import refined_chains
    >>> from skgp_bayes.inference import run_sgld
    >>> from skgp_bayes.inference.marginal_maps import SinhMaps
    >>> first = run_sgld(lambda x: (-0.5 * float(x @ x), -x), np.zeros(1),
    ...                  n_iter=300, a=1.0, gamma=0.0, metropolis=True,
    ...                  adapt_steps=200, rng=np.random.default_rng(0))
    >>> maps = SinhMaps(np.zeros(1), np.ones(1), np.ones(1), np.ones(1))
    >>> options, inputs = refined_chains([{"state": {"sgld": first.state}}],
    ...                                  {"n_iter": 100}, maps, 300, 500,
    ...                                  ((50, 200), (200, 375)))
    >>> options["n_iter"], options["adapt_steps"], options["metric_windows"]
    (1500, 800, ((350, 500), (500, 675)))
    """
    options = {
        **options,
        "maps": maps,
        "n_iter": warmup + FIRST_DRAWS,
        "adapt_steps": n_done + warmup,
        "metric_windows": tuple((n_done + lo, n_done + hi) for lo, hi in windows),
    }
    inputs = []
    for r in runs:
        state = r["state"]["sgld"]
        x = state.x if maps is None else maps.to_s(state.x)
        moved = readapting_state(state, x)
        inputs.append({"state": {**r["state"], "sgld": moved}})
    return options, inputs


def mapped_bounds(bounds, maps):
    """The box ``bounds`` (n_params, 2) in the mapped coordinates.

    The maps are increasing, so the box's corners map to the new box's.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_refine import mapped_bounds
    >>> from skgp_bayes.inference.marginal_maps import SinhMaps
    >>> maps = SinhMaps(np.zeros(1), np.ones(1), np.ones(1), np.ones(1))
    >>> box = np.array([[-1.0, 2.0], [0.0, 1.0]])
    >>> bool(np.allclose(maps.to_x(mapped_bounds(box, maps).T), box.T))
    True
    """
    return np.ascontiguousarray(maps.to_s(np.asarray(bounds, dtype=float).T).T)
