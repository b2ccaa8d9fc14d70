"""
Pathwise posterior samples that mix over hyperparameters
========================================================

The motorcycle-crash data (133 accelerometer readings against time) are fit
by :class:`skgp_bayes.SteinGPRegressor` with 20 particles over the kernel
amplitude, length scale and noise variance. ``sample_functions`` returns
posterior *functions*: each picks one particle, draws a prior function by
random Fourier features from that particle's kernel and moves it to the
posterior by Matheron's update (Wilson et al., 2020). They can be evaluated
anywhere at a cost linear in the number of query points, so the left panel
draws 30 of them on a grid of 20,000 points, coloured by particle length
scale; a joint Gaussian draw at 20,000 points would need a 3 GB covariance
matrix per particle.

The right panel checks the samples: the mean and the 95% band of 2,000
pathwise samples against the exact predictive mixture
(``predict(return_std=True)``).
"""

import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel  # noqa: E402

from skgp_bayes import SteinGPRegressor  # noqa: E402
from skgp_bayes.datasets import load_mcycle  # noqa: E402

data = load_mcycle()
X = np.asarray(data.data, dtype=np.float64).reshape(-1, 1)
y = np.asarray(data.target, dtype=np.float64)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    reg = SteinGPRegressor(
        ConstantKernel(1.0) * RBF(5.0), n_particles=20, max_iter=30, random_state=0
    ).fit(X, y)

grid = np.linspace(X.min() - 2, X.max() + 2, 20000)[:, None]
start = time.perf_counter()
functions = reg.sample_functions(n_samples=30, random_state=1)
paths = functions(grid)
elapsed = time.perf_counter() - start
print(f"30 function samples at {grid.shape[0]} points: {elapsed:.2f} s")

length_scales = np.array([k.k2.length_scale for k in reg.kernels_])
colour = plt.cm.viridis(
    (np.log(length_scales) - np.log(length_scales).min())
    / max(np.ptp(np.log(length_scales)), 1e-12)
)

mean, std = reg.predict(grid[::20], return_std=True)
many = reg.sample_y(grid[::20], n_samples=2000, random_state=2, method="pathwise")
lo, hi = np.percentile(many, [2.5, 97.5], axis=1)

fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
ax = axes[0]
for s in range(paths.shape[1]):
    ax.plot(grid[:, 0], paths[:, s], color=colour[functions.draws[s]], lw=0.7)
ax.scatter(X[:, 0], y, s=8, color="k", zorder=3, label="data")
ax.set_title("30 pathwise samples (colour: particle length scale)")
ax.set_xlabel("time (ms)")
ax.set_ylabel("acceleration (g)")
ax.legend(loc="lower right")

ax = axes[1]
ax.fill_between(
    grid[::20, 0],
    mean - 1.96 * std,
    mean + 1.96 * std,
    color="C0",
    alpha=0.25,
    label="exact mixture, mean +/- 1.96 sd",
)
ax.plot(grid[::20, 0], mean, color="C0", label="exact mixture mean")
ax.plot(grid[::20, 0], many.mean(axis=1), "--", color="C3", label="2,000 samples: mean")
ax.plot(grid[::20, 0], lo, ":", color="C3", label="2,000 samples: 2.5%, 97.5%")
ax.plot(grid[::20, 0], hi, ":", color="C3")
ax.scatter(X[:, 0], y, s=8, color="k", zorder=3)
ax.set_title("Pathwise samples against the exact predictive")
ax.set_xlabel("time (ms)")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
fig.savefig(
    Path(globals().get("__file__", "plot_pathwise_sampling.py")).with_suffix(".png"),
    dpi=110,
)
