"""
Learning which inducing points to keep
======================================

A sparse GP conditions on a few inducing points; :class:`skgp_bayes.SelectiveSVGP`
learns which of them are worth keeping, and so how many (Uhrenholt et al.,
Figure 1). A Bernoulli point process over 50 candidates (a random subset of
the training inputs) is fitted by score-function gradients under a prior
that penalises the squared number of points.

(a) The sparse GP on all 50 candidates. (b) The inclusion probability of
each candidate after the selection phase: of two neighbouring candidates
that carry the same information one is usually dropped, so the kept points
spread out over the inputs, about one per length scale. (c) The final
model, post-trained on the points with probability above one half; its
predictions match (a) with about a third of the points.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel  # noqa: E402

from skgp_bayes import SelectiveSVGP  # noqa: E402

rng = np.random.default_rng(0)
X = np.sort(rng.uniform(0, 10, 200))[:, None]
f = np.sin(3 * X[:, 0]) * np.exp(-0.3 * X[:, 0]) + 0.3 * np.cos(X[:, 0])
y = f + 0.1 * rng.standard_normal(200)
grid = np.linspace(-0.5, 10.5, 400)[:, None]
kernel = ConstantKernel(1.0) * RBF(1.0)

# (a) every candidate kept: no selection steps, probabilities stay at 0.9,
# all above the threshold of one half (keep="expected" would keep the 45
# candidates of E|Z| = 0.9 x 50)
candidates = X[np.sort(rng.choice(200, 50, replace=False))]
full = SelectiveSVGP(
    kernel,
    candidates=candidates,
    n_select_iter=0,
    n_post_iter=0,
    keep="threshold",
    random_state=0,
).fit(X, y)
# (b, c) the selective model on the same candidates
selective = SelectiveSVGP(
    kernel, candidates=candidates, alpha=0.05, n_select_iter=400, random_state=0
).fit(X, y)


def band(ax, reg, title):
    mean, std = reg.predict(grid, return_std=True)
    total = np.sqrt(std**2 + reg.noise_variance_)
    ax.fill_between(grid[:, 0], mean - 2 * total, mean + 2 * total, alpha=0.25)
    ax.plot(grid[:, 0], mean, lw=1.5)
    ax.plot(X[:, 0], y, "x", color="0.6", ms=3)
    Z = reg.inducing_points_[:, 0]
    ax.plot(Z, reg.predict(Z[:, None]), "o", mfc="none", mec="k", ms=6)
    ax.set_title(f"{title}: {reg.n_inducing_} inducing points")
    ax.set_xlabel("x")


fig, axes = plt.subplots(1, 3, figsize=(15, 4), sharey=True)
band(axes[0], full, "(a) all candidates")
lam = selective.inclusion_probabilities_
axes[1].plot(X[:, 0], y, "x", color="0.75", ms=3)
points = axes[1].scatter(
    selective.candidates_[:, 0],
    full.predict(selective.candidates_),
    c=lam,
    cmap="viridis",
    vmin=0,
    vmax=1,
    edgecolors="k",
    zorder=3,
)
fig.colorbar(points, ax=axes[1], label="inclusion probability")
axes[1].set_title(
    f"(b) point process: E|Z| = {selective.expected_n_inducing_:.1f} "
    f"+- {np.sqrt(selective.var_n_inducing_):.1f}"
)
axes[1].set_xlabel("x")
band(axes[2], selective, "(c) after selection")
fig.tight_layout()
fig.savefig(
    Path(globals().get("__file__", "plot_selective_svgp.py")).with_suffix(".png"),
    dpi=90,
)
print(
    f"kept {selective.n_inducing_} of 50 candidates; bound {selective.elbo_:.1f} "
    f"(all 50: {full.elbo_:.1f})"
)
