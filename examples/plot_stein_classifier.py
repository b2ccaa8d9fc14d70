"""
Predictive probabilities that average over hyperparameters and latents
======================================================================

A two-dimensional binary problem (scikit-learn's two moons, 60 points with
label noise) is fit by :class:`skgp_bayes.SteinGPClassifier`: 10 SVGD
particles over the kernel amplitude, the length scale and the 60 whitened
latent values. ``predict_proba`` averages the logistic likelihood over each
particle's Gaussian latent predictive and then over particles.

The left panel shows the predictive probability of the upper class, with
the 0.5 contour of every single particle (thin lines) and of scikit-learn's
``GaussianProcessClassifier`` (dashed red). The right panel shows the
spread of the latent function: the standard deviation of
``latent_mean_and_variance`` over the plane, small near data and growing
away from it, and the particles' hyperparameters in the inset.
"""

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import make_moons  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.gaussian_process import GaussianProcessClassifier  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel  # noqa: E402
from sklearn.metrics import log_loss  # noqa: E402

from skgp_bayes import SteinGPClassifier  # noqa: E402

X, y = make_moons(n_samples=60, noise=0.25, random_state=3)
X_test, y_test = make_moons(n_samples=400, noise=0.25, random_state=4)
kernel = ConstantKernel(1.0) * RBF(1.0)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    clf = SteinGPClassifier(kernel, n_particles=10, random_state=0).fit(X, y)
skl = GaussianProcessClassifier(kernel, random_state=0).fit(X, y)

xx, yy = np.meshgrid(np.linspace(-2, 3, 120), np.linspace(-1.5, 2, 90))
grid = np.column_stack([xx.ravel(), yy.ravel()])
proba = clf.predict_proba(grid)[:, 1].reshape(xx.shape)
mean, var = clf.latent_mean_and_variance(grid)

fig, (ax_p, ax_s) = plt.subplots(1, 2, figsize=(11, 4.3))
cs = ax_p.contourf(xx, yy, proba, levels=np.linspace(0, 1, 11), cmap="RdBu_r")
fig.colorbar(cs, ax=ax_p, label="P(y = 1)")
# One particle at a time: its own latent predictive, through the same
# likelihood, shows how much the particles disagree about the boundary.
draws = clf._draws
lik = clf._target.likelihood
means, variances = draws.moments(grid)
# Far from the data every particle predicts about 0.5 and its 0.5 contour
# wanders; only the region the data inform is drawn.
far = (np.sqrt(var) > 1.5).reshape(xx.shape)
for j in range(draws.n_draws):
    p_j = lik.predictive(means[j, 0], variances[j, 0]).reshape(xx.shape)
    p_j = np.ma.masked_where(far, p_j)
    ax_p.contour(xx, yy, p_j, levels=[0.5], colors="k", linewidths=0.6, alpha=0.5)
ax_p.contour(
    xx,
    yy,
    skl.predict_proba(grid)[:, 1].reshape(xx.shape),
    levels=[0.5],
    colors="red",
    linestyles="--",
)
ax_p.scatter(X[:, 0], X[:, 1], c=y, cmap="RdBu_r", edgecolors="k", s=25)
loss_stein = log_loss(y_test, clf.predict_proba(X_test))
loss_skl = log_loss(y_test, skl.predict_proba(X_test))
ax_p.set_title(
    f"Predictive P(y=1); test log loss {loss_stein:.3f} (sklearn {loss_skl:.3f})",
    fontsize=10,
)

cs = ax_s.contourf(xx, yy, np.sqrt(var).reshape(xx.shape), levels=12, cmap="viridis")
fig.colorbar(cs, ax=ax_s, label="latent standard deviation")
ax_s.scatter(X[:, 0], X[:, 1], c="w", edgecolors="k", s=15)
ax_s.set_title("Spread of the latent function over particles", fontsize=10)
inset = ax_s.inset_axes([0.62, 0.06, 0.34, 0.34])
inset.scatter(
    np.exp(clf.particles_[:, 1]), np.sqrt(np.exp(clf.particles_[:, 0])), s=12, c="w"
)
inset.set_title("particles: length scale, amplitude", fontsize=7, color="w")
inset.tick_params(labelsize=6, colors="w")
inset.set_facecolor("0.2")

fig.tight_layout()
fig.savefig(
    Path(globals().get("__file__", "plot_stein_classifier.py")).with_suffix(".png"),
    dpi=110,
)
print(f"SteinGPClassifier test log loss {loss_stein:.4f}; sklearn {loss_skl:.4f}")
