"""
Multimodal hyperparameter posterior
===================================

Neal's (1997) one-dimensional data with outliers can admit two explanations: a
short length scale that chases the outliers with little noise, and a long one
that treats them as noise. The marginal likelihood has a mode for each.
scikit-learn's ``GaussianProcessRegressor`` returns one of them;
:class:`skgp_bayes.SteinGPRegressor` moves 20 particles towards the whole
posterior (Pinder et al., section 5.2 and Figure 1). Its initialisation runs
L-BFGS from several prior draws and gives each local maximum a share of the
particles in proportion to its Laplace mass; SVGD then shapes the particles
within each mode. By quadrature on a grid, the short-length-scale mode holds
45% of the posterior mass here.

The left panel shows the log posterior of (length scale, noise variance),
maximised over the signal amplitude, with the particles and scikit-learn's
point estimate on top. The right panel compares the predictive bands.
"""

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import (  # noqa: E402
    RBF,
    ConstantKernel,
    WhiteKernel,
)

from skgp_bayes import SteinGPRegressor  # noqa: E402
from skgp_bayes.datasets import make_neal_multimodal  # noqa: E402

# With 40 training points the two explanations are about equally probable.
X, y = make_neal_multimodal(200, random_state=0)
X_train, y_train, X_test, y_test = X[:40], y[:40], X[40:], y[40:]

kernel = ConstantKernel(1.0) * RBF(1.0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    stein = SteinGPRegressor(kernel, n_particles=20, max_iter=400, random_state=0).fit(
        X_train, y_train
    )
sklearn_gp = GaussianProcessRegressor(
    kernel + WhiteKernel(0.1), normalize_y=True, n_restarts_optimizer=5, random_state=0
).fit(X_train, y_train)

# Log posterior on a grid of (log length scale, log noise), maximised over the
# log amplitude; the target is the one the particles were moved on.
target = stein._target
log_ell = np.linspace(-3.0, 2.0, 40)
log_noise = np.linspace(-6.0, 0.5, 40)
log_amp = np.linspace(-3.0, 3.0, 13)
surface = np.full((log_noise.size, log_ell.size), -np.inf)
for i, ln in enumerate(log_noise):
    for j, le in enumerate(log_ell):
        values = []
        for la in log_amp:
            try:
                params = np.array([la, le, ln])
                value = target.log_likelihood(params, eval_gradient=False)
                values.append(value + target.prior_set.log_prob(params)[0])
            except np.linalg.LinAlgError:
                continue
        surface[i, j] = max(values) if values else -np.inf

fig, (ax_post, ax_pred) = plt.subplots(1, 2, figsize=(11, 4.2))
levels = np.sort(surface.max() - np.array([40.0, 20.0, 10.0, 5.0, 2.0, 0.0]))
contour = ax_post.contourf(
    log_ell, log_noise, surface, levels=levels, cmap="Blues", extend="min"
)
fig.colorbar(contour, ax=ax_post, label="log posterior (max over amplitude)")
ax_post.scatter(
    stein.particles_[:, 1],
    stein.particles_[:, 2],
    s=25,
    c="black",
    label=f"{stein.n_particles} SVGD particles",
)
# both fits standardise y, so their noise variances are on the same scale
skl_theta = sklearn_gp.kernel_.theta  # log amplitude, log ell, log white noise
ax_post.scatter(
    skl_theta[1], skl_theta[2], marker="*", s=220, c="red", label="scikit-learn"
)
ax_post.set_xlabel("log length scale")
ax_post.set_ylabel("log noise variance (normalised y)")
ax_post.legend(loc="lower left", fontsize=8)
ax_post.set_title("Hyperparameter posterior")

grid = np.linspace(X.min() - 0.3, X.max() + 0.3, 300)[:, None]
mean, std = stein.predict(grid, return_std=True)
noise_sd = np.sqrt(np.mean(stein.noise_variance_))
band = np.sqrt(std**2 + noise_sd**2)
ax_pred.fill_between(
    grid[:, 0],
    mean - 2 * band,
    mean + 2 * band,
    color="C0",
    alpha=0.25,
    label="SteinGP 95% predictive",
)
ax_pred.plot(grid[:, 0], mean, "C0")
skl_mean, skl_std = sklearn_gp.predict(grid, return_std=True)
ax_pred.plot(grid[:, 0], skl_mean - 2 * skl_std, "r--", lw=1, label="scikit-learn 95%")
ax_pred.plot(grid[:, 0], skl_mean + 2 * skl_std, "r--", lw=1)
ax_pred.scatter(X_train[:, 0], y_train, s=10, c="k", label="training data")
ax_pred.scatter(X_test[:, 0], y_test, s=10, c="0.6", label="test data")
lpd_stein = stein.log_predictive_density(X_test, y_test).mean()
ax_pred.set_title(f"Predictions (SteinGP test log density {lpd_stein:.3f})")
ax_pred.legend(loc="lower right", fontsize=8)
fig.tight_layout()
fig.savefig(
    Path(globals().get("__file__", "plot_stein_regressor.py")).with_suffix(".png"),
    dpi=110,
)
print(f"SteinGP test log predictive density: {lpd_stein:.4f}")
