"""
Thompson-sampling Bayesian optimisation with function samples
=============================================================

Thompson sampling picks the next point to evaluate by drawing one function
from the posterior and minimising it. With
:meth:`skgp_bayes.SteinGPRegressor.sample_functions` the draw is a real
function: it can be evaluated anywhere, at a cost linear in the number of
points, and has an analytic gradient, so each draw is minimised by L-BFGS-B
from the best of 2,000 random candidates. Each draw also picks one particle
of the hyperparameter posterior, so the search accounts for the uncertainty
in the length scales as well as in the function.

The objective is the Branin function on ``[-5, 10] x [0, 15]`` (three global
minima of value 0.397887). Starting from 5 random points, 25 Thompson steps
are compared with 30 uniformly random evaluations.
"""

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel, Matern  # noqa: E402

from skgp_bayes import SteinGPRegressor  # noqa: E402

LOW = np.array([-5.0, 0.0])
HIGH = np.array([10.0, 15.0])
F_MIN = 0.397887


def branin(X):
    x1, x2 = X[:, 0], X[:, 1]
    b, c = 5.1 / (4 * np.pi**2), 5 / np.pi
    r, s, t = 6.0, 10.0, 1 / (8 * np.pi)
    return (x2 - b * x1**2 + c * x1 - r) ** 2 + s * (1 - t) * np.cos(x1) + s


def to_unit(X):
    return (X - LOW) / (HIGH - LOW)


def thompson_step(X, y, rng, step):
    """Fit the particle posterior, draw one function and minimise it.

    The model works on the unit square, where the default priors on the
    length scales (Gamma with mean 2) are weakly informative.
    """
    kernel = ConstantKernel(1.0) * Matern([0.3, 0.3], nu=2.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg = SteinGPRegressor(
            kernel, n_particles=8, max_iter=20, random_state=step
        ).fit(to_unit(X), y)
    f = reg.sample_functions(n_samples=1, random_state=step)[0]
    candidates = rng.uniform(0.0, 1.0, (2000, 2))
    start = candidates[np.argmin(f(candidates))]
    result = minimize(
        lambda u: f(u[None, :])[0],
        start,
        jac=lambda u: f.gradient(u[None, :])[0],
        method="L-BFGS-B",
        bounds=[(0.0, 1.0), (0.0, 1.0)],
    )
    return LOW + result.x * (HIGH - LOW)


rng = np.random.RandomState(0)
X = rng.uniform(LOW, HIGH, (5, 2))
y = branin(X)
for step in range(25):
    x_next = thompson_step(X, y, rng, step)
    X = np.vstack([X, x_next])
    y = np.append(y, branin(x_next[None, :]))
    print(f"step {step + 1:2d}: f = {y[-1]:8.4f}, best so far {y.min():.4f}")

X_random = np.random.RandomState(1).uniform(LOW, HIGH, (30, 2))
y_random = branin(X_random)
print(f"best Thompson value {y.min():.4f}, best random value {y_random.min():.4f}")

g1, g2 = np.meshgrid(np.linspace(*[LOW[0], HIGH[0]], 200), np.linspace(0, 15, 200))
surface = branin(np.column_stack([g1.ravel(), g2.ravel()])).reshape(g1.shape)

fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
ax = axes[0]
ax.contourf(g1, g2, np.log(surface), levels=30, cmap="Greys_r")
ax.scatter(X[:5, 0], X[:5, 1], marker="s", color="C1", label="initial points")
ax.scatter(X[5:, 0], X[5:, 1], c=np.arange(25), cmap="viridis", label="Thompson steps")
minima = np.array([[-np.pi, 12.275], [np.pi, 2.275], [9.42478, 2.475]])
ax.scatter(minima[:, 0], minima[:, 1], marker="*", s=150, color="C3", label="minima")
ax.set_xlabel("x1")
ax.set_ylabel("x2")
ax.set_title("Branin (log scale) and the evaluated points")
ax.legend(loc="upper right", fontsize=8)

ax = axes[1]
ax.semilogy(np.arange(1, 31), np.minimum.accumulate(y) - F_MIN, "o-", label="Thompson")
ax.semilogy(
    np.arange(1, 31), np.minimum.accumulate(y_random) - F_MIN, "s-", label="random"
)
ax.axvline(5.5, color="0.6", ls=":")
ax.set_xlabel("evaluations")
ax.set_ylabel("best value - global minimum")
ax.set_title("Simple regret")
ax.legend()
fig.tight_layout()
fig.savefig(
    Path(globals().get("__file__", "plot_thompson_sampling.py")).with_suffix(".png"),
    dpi=110,
)
