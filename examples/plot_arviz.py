"""
The posterior in ArviZ: trace and pair plots
============================================

Every estimator's ``to_inference_data()`` hands its draws to ArviZ, the
common toolkit of Bayesian workflows. Here the two Langevin chains of
:class:`skgp_bayes.SGLDGPRegressor` on the motorcycle crash data (133 head
accelerations against time) are summarised with ``arviz.summary``, whose
R-hat and bulk ESS are the same numbers as the estimator's own ``rhat_`` and
``ess_``, and plotted: a trace plot per hyperparameter (log scale, one line
per chain) and a pair plot of the three hyperparameters.

The pair plot shows what a point estimate hides: the signal variance and the
length scale trade off along a ridge, and the noise is well determined.
"""

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import arviz as az  # noqa: E402

from skgp_bayes import SGLDGPRegressor  # noqa: E402
from skgp_bayes.datasets import load_mcycle  # noqa: E402

data = load_mcycle()
model = SGLDGPRegressor(random_state=0).fit(data.data, data.target)
idata = model.to_inference_data()
print(az.summary(idata, kind="diagnostics"))
print("estimator's own R-hat:", model.rhat_.round(3), "ESS:", model.ess_.round(0))

names = list(idata.posterior.data_vars)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # inside ArviZ's plots
    axes = az.plot_trace(idata, compact=False, figsize=(10, 2 * len(names)))
    trace_figure = axes.ravel()[0].figure
    trace_figure.tight_layout()
    pair = az.plot_pair(idata, var_names=names, kind="kde", figsize=(7, 7))
    pair_figure = pair.ravel()[0].figure

here = Path(globals().get("__file__", "plot_arviz.py"))
trace_figure.savefig(here.with_name(here.stem + "_trace.png"), dpi=70)
pair_figure.savefig(here.with_suffix(".png"), dpi=70)
