"""
Streaming the blocks of a Dask array through ``partial_fit``
============================================================

A Dask array is a grid of NumPy blocks that are computed only when asked
for, so it can describe data far larger than memory (read from Parquet, Zarr
or HDF5 files, or, as here, generated). :class:`skgp_bayes.SteinGPRegressor`
with ``inducing_points`` and ``batch_size`` is a sparse model whose
``partial_fit`` continues the particles from where the last call left them;
feeding it one block at a time holds one block in memory, never the array.

Here 120,000 noisy observations of a two-input function, in twelve blocks of
10,000 rows, are generated lazily from a seeded Dask random state. Each block
is computed, passed to ``partial_fit`` and dropped. The left panel shows the
held-out log predictive density after each block, the right panel the fitted
mean on a grid against the truth.
"""

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import dask  # noqa: E402
import dask.array as da  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from skgp_bayes import SteinGPRegressor  # noqa: E402

NOISE = 0.2


def truth(X):
    return np.sin(2 * X[:, 0]) * np.cos(X[:, 1])


def make_blocks(n_rows, block_rows, seed):
    """Lazy inputs and targets: nothing is computed until a block is asked for."""
    state = da.random.RandomState(seed)
    X = state.uniform(-2, 2, size=(n_rows, 2), chunks=(block_rows, 2))
    noise = state.normal(0, NOISE, size=n_rows, chunks=block_rows)
    y = da.sin(2 * X[:, 0]) * da.cos(X[:, 1]) + noise
    return X, y


X, y = make_blocks(120_000, 10_000, seed=0)
print(
    f"{X.numblocks[0]} blocks of {X.chunks[0][0]} rows; array {X.nbytes / 1e6:.1f} MB"
)
X_test, y_test = (a.compute() for a in make_blocks(2_000, 2_000, seed=1))

model = SteinGPRegressor(
    inducing_points=30, batch_size=256, n_particles=6, max_iter=25, random_state=0
)
scores = []
with warnings.catch_warnings():
    # 25 iterations a block are a budget, not a stopping rule.
    warnings.simplefilter("ignore", ConvergenceWarning)
    for X_block, y_block in zip(X.blocks, y.blocks, strict=True):
        X_np, y_np = dask.compute(X_block, y_block)  # one block in memory
        model.partial_fit(X_np, y_np)
        scores.append(model.log_predictive_density(X_test, y_test).mean())

oracle = np.mean(
    -0.5 * np.log(2 * np.pi * NOISE**2) - 0.5 * (y_test - truth(X_test)) ** 2 / NOISE**2
)
print(f"held-out log density after the stream {scores[-1]:.3f} (oracle {oracle:.3f})")

side = np.linspace(-2, 2, 60)
grid = np.column_stack([g.ravel() for g in np.meshgrid(side, side)])
mean = model.predict(grid).reshape(60, 60)

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
left.plot(np.arange(1, len(scores) + 1), scores, "o-", label="after each block")
left.axhline(oracle, color="k", ls=":", label="true function and noise")
left.set(xlabel="blocks seen", ylabel="held-out log predictive density")
left.legend()
image = right.contourf(side, side, mean, levels=20, cmap="RdBu_r")
right.contour(
    side, side, truth(grid).reshape(60, 60), levels=8, colors="k", linewidths=0.5
)
right.set(xlabel="x1", ylabel="x2", title="fitted mean (colour), truth (lines)")
fig.colorbar(image, ax=right)
fig.tight_layout()
here = Path(globals().get("__file__", "plot_dask_streaming.py"))
fig.savefig(here.with_suffix(".png"), dpi=80)
