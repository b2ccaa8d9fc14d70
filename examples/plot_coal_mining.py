"""
Rate of coal-mining disasters by variational MCMC
=================================================

The dates of 191 British coal-mining disasters (1851-1962) are binned into
100 intervals and modelled as Poisson counts whose log rate is a Gaussian
process, with 30 evenly spaced inducing inputs, as in Hensman et al. (2015,
figure 2). :class:`~skgp_bayes.VariationalMCMCRegressor` first fits a
Gaussian (SVGP) approximation, then samples the kernel hyperparameters and
the whitened inducing values jointly by HMC.

Left: the posterior rate (disasters per year) from HMC and from the
Gaussian approximation, with 90% bands; the events are the bars along the
bottom. Right: HMC draws of the kernel's variance and length scale; the
Gaussian approximation has a single point estimate of them.
"""

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel  # noqa: E402

from skgp_bayes import VariationalMCMCRegressor  # noqa: E402
from skgp_bayes.datasets import bin_coal_counts, load_coal  # noqa: E402
from skgp_bayes.exceptions import SamplerWarning  # noqa: E402

dates = load_coal().data[:, 0]
X, counts, width = bin_coal_counts(dates, n_bins=100)
Z = np.linspace(X.min(), X.max(), 30)[:, None]

model = VariationalMCMCRegressor(
    ConstantKernel(1.0) * RBF(10.0),
    likelihood="poisson",
    inducing_points=Z,
    optimize_inducing=False,
    n_chains=2,
    n_warmup=300,
    n_samples=300,
    random_state=0,
)
with warnings.catch_warnings():
    # Short chains for a quick example; the diagnostics are printed below.
    warnings.simplefilter("ignore", SamplerWarning)
    model.fit(X, counts, exposure=width)
print(
    f"max R-hat {model.rhat_.max():.3f}, min ESS {model.ess_.min():.0f}, "
    f"acceptance {model.acceptance_rate_:.2f}, divergences {model.n_divergences_}"
)

grid = np.linspace(X.min(), X.max(), 300)[:, None]
rate_mcmc = np.exp(model.sample_latent(grid))
rate_gauss = np.exp(model.sample_latent(grid, method="gaussian", n_samples=2000))

fig, (ax, ax_h) = plt.subplots(1, 2, figsize=(11, 4), width_ratios=[2, 1])
for rates, label, colour in [
    (rate_mcmc, "HMC", "C0"),
    (rate_gauss, "Gaussian approximation", "C1"),
]:
    low, mid, high = np.percentile(rates, [5, 50, 95], axis=0)
    ax.plot(grid[:, 0], mid, color=colour, label=label)
    ax.fill_between(grid[:, 0], low, high, color=colour, alpha=0.25)
ax.vlines(dates, 0, 0.15, color="k", linewidth=0.5)
ax.set_xlabel("year")
ax.set_ylabel("disasters per year")
ax.legend()

names = model.param_names_
variance = np.exp(model.draws_[:, names.index("k1__constant_value")])
length = np.exp(model.draws_[:, names.index("k2__length_scale")])
ax_h.scatter(variance, length, s=4, alpha=0.4, label="HMC draws")
ax_h.scatter(
    model.kernel_.k1.constant_value,
    model.kernel_.k2.length_scale,
    color="C1",
    marker="x",
    s=80,
    label="Gaussian approximation",
)
ax_h.set_xlabel("kernel variance")
ax_h.set_ylabel("length scale (years)")
ax_h.legend()
fig.tight_layout()
fig.savefig(
    Path(globals().get("__file__", "plot_coal_mining.py")).with_suffix(".png"), dpi=100
)
