"""
Streaming a large data set through a sparse Stein GP
====================================================

:class:`skgp_bayes.SteinGPRegressor` with ``inducing_points`` and
``batch_size`` moves particles that hold the kernel hyperparameters and the
whitened values at 25 inducing inputs, on random minibatches of 256 points
(Pinder et al., sections 3-4 and eq. 10). Here 40,000 noisy observations of a
function whose wiggles tighten to the right arrive in eight chunks, as they
would from a file too large for memory; ``partial_fit`` takes one chunk at a
time, so no more than 5,000 points are ever held.

The left panel shows the predictive band after the stream, the inducing
inputs (placed by k-means on the first chunk) and three posterior function
draws. The right panel tracks the held-out log predictive density after each
chunk, against one ``fit`` on all 40,000 points and against the oracle that
knows the true function and noise.
"""

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel, Matern  # noqa: E402

from skgp_bayes import SteinGPRegressor  # noqa: E402


def truth(x):
    return np.sin(x**2 / 3.0) + 0.3 * x / 5.0


rng = np.random.default_rng(0)
n, n_chunks = 40_000, 8
X = rng.uniform(0, 6, (n, 1))
y = truth(X[:, 0]) + 0.3 * rng.standard_normal(n)
X_test = rng.uniform(0, 6, (2000, 1))
y_test = truth(X_test[:, 0]) + 0.3 * rng.standard_normal(2000)

options = dict(
    kernel=ConstantKernel(1.0) * Matern(1.0, nu=2.5),
    inducing_points=25,
    batch_size=256,
    n_particles=6,
    max_iter=40,
    random_state=0,
)
stream = SteinGPRegressor(**options)
scores = []
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    for chunk in np.array_split(np.arange(n), n_chunks):
        stream.partial_fit(X[chunk], y[chunk])
        scores.append(stream.log_predictive_density(X_test, y_test).mean())
    whole = SteinGPRegressor(**{**options, "max_iter": 40 * n_chunks}).fit(X, y)
whole_score = whole.log_predictive_density(X_test, y_test).mean()
# The oracle: the true function with the true noise, on the same test points.
oracle = np.mean(
    -0.5 * np.log(2 * np.pi * 0.3**2)
    - 0.5 * (y_test - truth(X_test[:, 0])) ** 2 / 0.3**2
)

grid = np.linspace(0, 6, 400)[:, None]
mean, std = stream.predict(grid, return_std=True)
draws = stream.sample_y(grid, n_samples=3, random_state=1)

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
shown = rng.choice(n, 1500, replace=False)
left.scatter(X[shown, 0], y[shown], s=2, color="0.7", label="data (1,500 of 40,000)")
left.fill_between(
    grid[:, 0], mean - 2 * std, mean + 2 * std, alpha=0.3, label="mean ± 2 sd (f)"
)
left.plot(grid[:, 0], mean, lw=2, label="predictive mean")
left.plot(grid[:, 0], truth(grid[:, 0]), "k--", lw=1, label="truth")
left.plot(grid[:, 0], draws, lw=0.8, alpha=0.8)
z = stream.inducing_points_[:, 0]
left.plot(z, np.full_like(z, y.min()), "|", ms=12, color="C3", label="inducing inputs")
left.set(xlabel="x", ylabel="y", title="After eight chunks of 5,000 points")
left.legend(loc="upper left", fontsize=8)

right.plot(np.arange(1, n_chunks + 1), scores, "o-", label="partial_fit, after chunk")
right.axhline(whole_score, color="C1", label="fit on all 40,000 points")
right.axhline(oracle, color="k", ls=":", label="true function and noise")
right.set(
    xlabel="chunks seen",
    ylabel="held-out log predictive density",
    title="Streaming reaches the full fit",
)
right.legend(fontsize=8)
fig.tight_layout()
fig.savefig(
    Path(globals().get("__file__", "plot_stein_streaming.py")).with_suffix(".png")
)
print(f"log predictive density: stream {scores[-1]:.3f}, full fit {whole_score:.3f}")
