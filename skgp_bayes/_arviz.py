"""Fitted estimators as ArviZ ``InferenceData``: ``to_inference_data()``.

ArviZ is the common currency of Bayesian workflows (summaries, R-hat and
ESS, trace, pair, rank and energy plots). Every estimator hands over:

- ``posterior``: the draws of the parameters named by ``param_names_`` (log
  coordinates, as sampled), one variable per name with dims ``(chain,
  draw)``. MCMC chains are chains; SVGD particles are one chain of draws
  that are *not* Markov draws (``attrs["draws"]`` says so, and ArviZ's
  R-hat and ESS mean nothing for them); a point estimate is one draw.
- ``sample_stats``: per draw, what the engine measured: for HMC the
  acceptance probability, divergences, step size, leapfrog steps (``n_steps``,
  ``tree_depth`` as its base-2 logarithm) and the Hamiltonian of the kept
  state (``energy``); for MALA / SGLD the step size and acceptance,
  with the mean block-CG iterations a gradient in ``attrs``; for SVGD the
  log posterior of each particle, and per iteration (dim ``iteration``) the
  Stein field and the learning rate, with the kernel Stein discrepancy in
  ``attrs``.
- ``observed_data``: the training targets, when the estimator keeps them or
  they are passed as ``y``.

ArviZ (``pip install skgp_bayes[arviz]``) is imported only here. Versions
before 1.0 get an ``arviz.InferenceData``; from 1.0 on, whose
``InferenceData`` is an ``xarray.DataTree``, a ``DataTree`` with the same
groups.
"""

from collections import namedtuple

import numpy as np

from .kernels import KernelAdapter

__all__ = ["InferenceDataMixin", "to_inference_data"]


def _import_arviz():
    try:
        import arviz
        import xarray
    except ImportError as exc:
        raise ImportError(
            "to_inference_data needs the optional package 'arviz': "
            "pip install skgp_bayes[arviz] (or pip install arviz)."
        ) from exc
    return arviz, xarray


def _variable_name(name):
    """ArviZ variable names: no spaces or brackets that break plot labels."""
    return name.replace(" ", "_")


# ------------------------------------------------------------ per engine
# What each engine hands over: draws (chain, draw, param) with their names;
# per-draw statistics; attributes; per-iteration statistics (SVGD); and the
# candidates' inclusion probabilities (selective models), else None.
_Groups = namedtuple(
    "_Groups", "draws names stats attrs per_iteration inclusion", defaults=(None, None)
)


def _posterior_and_stats(estimator):
    """The :data:`_Groups` of a fitted estimator."""
    if hasattr(estimator, "chains_") and hasattr(estimator, "samples_"):
        return _mala_groups(estimator)
    if hasattr(estimator, "trace_") and hasattr(estimator, "step_size_"):
        return _hmc_groups(estimator)
    if hasattr(estimator, "particles_"):
        return _svgd_groups(estimator)
    if hasattr(estimator, "inclusion_probabilities_"):
        return _point_groups(estimator)
    raise TypeError(f"{type(estimator).__name__} has no posterior draws to convert.")


def _mala_groups(est):
    kept = np.asarray(est.samples_)
    burn = int(est.burn_in_)
    n_kept = kept.shape[1]
    # The kept samples are the chains' iterations after burn-in, thinned.
    thin = max(1, (est.chains_.shape[1] - burn) // max(n_kept, 1))
    index = burn + thin * np.arange(n_kept)
    stats = {"step_size": np.asarray(est.step_sizes_)[:, index]}
    accepted = getattr(est, "_accepted", None)
    if accepted is not None and np.shape(accepted)[1] == est.chains_.shape[1]:
        stats["accepted"] = np.asarray(accepted)[:, index].astype(bool)
    attrs = {
        "draws": "Markov chain draws after burn-in (MALA or SGLD)",
        "solver": str(est.solver_),
        "cg_iterations_mean": float(est.diagnostics_["cg_iterations_mean"]),
        "burn_in": burn,
    }
    return _Groups(kept, list(est.param_names_), stats, attrs)


def _hmc_groups(est):
    n_chains = np.asarray(est.step_size_).shape[0]
    draws = np.asarray(est.draws_).reshape(n_chains, -1, len(est.param_names_))
    n_kept = draws.shape[1]
    trace = est.trace_
    n_transitions = np.asarray(trace["accept_prob"]).shape[1]
    thin = int(est.thin)
    warmup = n_transitions - n_kept * thin
    # The engine keeps sampling iterations thin, 2 thin, ... (1-based).
    index = warmup + thin - 1 + thin * np.arange(n_kept)
    n_steps = np.asarray(trace["n_leapfrog"])[:, index]
    stats = {
        "acceptance_rate": np.asarray(trace["accept_prob"])[:, index],
        "diverging": np.asarray(trace["divergent"])[:, index].astype(bool),
        "step_size": np.asarray(trace["step_sizes"])[:, index],
        "n_steps": n_steps,
        "tree_depth": np.log2(np.maximum(n_steps, 1)),
    }
    if "energy" in trace:
        stats["energy"] = np.asarray(trace["energy"])[:, index]
    if "log_density" in trace:
        stats["lp"] = np.asarray(trace["log_density"]).reshape(n_chains, n_kept)
    attrs = {"draws": "Hamiltonian Monte Carlo draws after warm-up"}
    return _Groups(draws, list(est.param_names_), stats, attrs)


def _svgd_groups(est):
    names = list(est.param_names_)
    particles = np.asarray(est.particles_)[:, : len(names)]
    stats = {"lp": np.asarray(est.log_posterior_)[None, :]}
    history = getattr(est, "history_", {}) or {}
    per_iteration = {
        key: np.asarray(history[key], dtype=np.float64)
        for key in ("field", "learning_rate", "max_move")
        if len(history.get(key, ())) > 0
    }
    attrs = {
        "draws": (
            "SVGD particles, one chain of draws that are not Markov draws: "
            "R-hat and ESS do not apply"
        ),
        "kernel_stein_discrepancy": float(est.ksd_),
        "n_iter": int(est.n_iter_),
    }
    return _Groups(particles[None, :, :], names, stats, attrs, per_iteration)


def _point_groups(est):
    kernel = est.kernel_
    # The names every sampled estimator's param_names_ uses.
    names = list(KernelAdapter(kernel).param_names)
    if hasattr(est, "draws_"):
        # the regressor's hyperparameter draws, the noise in the units of y
        draws = np.array(est.draws_, dtype=np.float64)
        draws[:, -1] += 2.0 * np.log(est.y_std_)
        names.append("noise_variance")
        described = (
            "draws of the Laplace approximation of the hyperparameters' "
            "posterior at the point maximising the variational bound (one "
            "draw, the point itself, with n_hyperparameter_draws=0)"
        )
    else:
        draws = np.atleast_1d(kernel.theta)[None, :]
        described = (
            "a point estimate (the hyperparameters maximising the variational "
            "bound): one draw"
        )
    attrs = {
        "draws": described,
        "expected_n_inducing": float(est.expected_n_inducing_),
    }
    inclusion = np.asarray(est.inclusion_probabilities_)
    return _Groups(draws[None], names, {}, attrs, inclusion=inclusion)


# ------------------------------------------------------------- assembly
def _observed(estimator, y):
    if y is not None:
        return np.asarray(y)
    kept = getattr(estimator, "y_train_", None)
    if kept is None:
        return None
    # Kept in model units; observed data are in the user's.
    mean = getattr(estimator, "_y_mean", 0.0)
    std = getattr(estimator, "_y_std", 1.0)
    return np.asarray(mean + std * np.asarray(kept), dtype=np.float64)


def to_inference_data(estimator, y=None):
    """The posterior of a fitted estimator as ArviZ data (see the module notes).

    Parameters
    ----------
    estimator : fitted estimator of skgp_bayes
    y : array-like of shape (n_samples,), default=None
        Training targets for ``observed_data``, when the estimator does not
        keep them.

    Returns
    -------
    arviz.InferenceData (ArviZ < 1.0) or xarray.DataTree (ArviZ >= 1.0)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (30, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
    >>> reg = SteinGPRegressor(n_particles=5, random_state=0).fit(X, y)
    >>> data = reg.to_inference_data()  # doctest: +SKIP
    >>> data.posterior.sizes["draw"]  # doctest: +SKIP
    5
    """
    arviz, xarray = _import_arviz()
    parts = _posterior_and_stats(estimator)
    n_chains, n_draws = parts.draws.shape[:2]
    coords = {"chain": np.arange(n_chains), "draw": np.arange(n_draws)}
    posterior = {
        _variable_name(name): (("chain", "draw"), parts.draws[:, :, j])
        for j, name in enumerate(parts.names)
    }
    if parts.inclusion is not None:
        posterior["inclusion_probability"] = (
            ("chain", "draw", "candidate"),
            # the same for every draw: the draws share the kept set
            np.tile(parts.inclusion, (n_chains, n_draws, 1)),
        )
    stat_vars = {key: (("chain", "draw"), value) for key, value in parts.stats.items()}
    for key, value in (parts.per_iteration or {}).items():
        stat_vars[key] = (("iteration",), value)
    common = {
        "created_by": f"skgp_bayes {type(estimator).__name__}.to_inference_data",
    }
    groups = {
        "posterior": xarray.Dataset(
            posterior, coords=coords, attrs={**common, **parts.attrs}
        ),
        "sample_stats": xarray.Dataset(stat_vars, coords=coords, attrs=common),
    }
    observed = _observed(estimator, y)
    if observed is not None:
        groups["observed_data"] = xarray.Dataset(
            {"y": (tuple(f"y_dim_{i}" for i in range(observed.ndim)), observed)},
            attrs=common,
        )
    if _arviz_major(arviz) >= 1:
        return xarray.DataTree.from_dict(groups)
    return arviz.InferenceData(**groups)


def _arviz_major(arviz):
    return int(str(arviz.__version__).split(".")[0])


class InferenceDataMixin:
    """Adds :meth:`to_inference_data` to an estimator."""

    def to_inference_data(self, y=None):
        """The posterior draws and sampler statistics as ArviZ data.

        ``posterior`` holds one variable per name in ``param_names_`` with
        dims ``(chain, draw)``; ``sample_stats`` what the engine measured
        per draw (HMC: acceptance, divergences, step size, leapfrog steps;
        MALA / SGLD: step size, acceptance; SVGD: each particle's log
        posterior and, per iteration, the Stein field); ``observed_data``
        the training targets where they are known. SVGD particles form one
        chain whose draws are not Markov draws; a point estimate is one
        draw. Needs ArviZ (the ``arviz`` extra).

        Parameters
        ----------
        y : array-like of shape (n_samples,), default=None
            Training targets for ``observed_data`` when the estimator does
            not keep them (classifiers, sparse models).

        Returns
        -------
        arviz.InferenceData (ArviZ < 1.0) or xarray.DataTree (ArviZ >= 1.0)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (30, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
        >>> reg = SteinGPRegressor(n_particles=5, random_state=0).fit(X, y)
        >>> idata = reg.to_inference_data()
        >>> idata.posterior.sizes["chain"], idata.posterior.sizes["draw"]
        (1, 5)
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        return to_inference_data(self, y=y)
