"""Shared machinery of the sparse (inducing-point) estimators.

Choosing inducing inputs and fitting the SVGP Gaussian approximation that
initialises the samplers. The sparse draws live in
:mod:`skgp_bayes.predictive.sparse`; ``SparseGPDraws`` is named here too so
that estimators pickled before the move still unpickle.
"""

import warnings

import numpy as np
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.exceptions import ConvergenceWarning

from .inference.optimize import epoch_batches, maximize, settled
from .linalg.rows import unique_rows
from .predictive.sparse import SparseGPDraws  # noqa: F401  (pickles)

__all__ = []

# k-means on more points than this uses MiniBatchKMeans.
MINIBATCH_KMEANS_N = 10000
# Iterations over which the SVGP stopping rule measures the bound's gain.
SVGP_WINDOW = 10


def initial_inducing(X, n_inducing, seed):
    """k-means centres (or the distinct inputs when there are few)."""
    unique = unique_rows(X)
    m = min(int(n_inducing), unique.shape[0])
    if m == unique.shape[0]:
        return unique.copy()
    if X.shape[0] > MINIBATCH_KMEANS_N:
        km = MiniBatchKMeans(n_clusters=m, random_state=seed, n_init=3)
    else:
        km = KMeans(n_clusters=m, random_state=seed, n_init=10)
    with warnings.catch_warnings():
        # Duplicated inputs can leave k-means with fewer distinct clusters;
        # the jitter on K(Z, Z) copes with coincident inducing inputs.
        warnings.simplefilter("ignore", ConvergenceWarning)
        km.fit(X)
    return np.ascontiguousarray(km.cluster_centers_, dtype=np.float64)


def fit_svgp_lbfgs(bound, start, bounds, max_iter, tol=None, report=None):
    """L-BFGS-B on the bound; returns ``(params, trace, converged, n_iter)``.

    ``tol`` (nats per data point) adds a stopping rule: the optimiser stops
    once the bound has risen by less than ``tol * n`` nats over the last
    ``SVGP_WINDOW`` iterations. A gain in nats is a log likelihood ratio,
    so the rule does not depend on the units of ``X`` or ``y`` (unlike a
    tolerance on the gradient, whose entries carry the units of the
    parameters, or scipy's ``ftol``, relative to the bound's value and so
    to the offset a change of units adds to it). ``report(n_iter, elbo)``
    is called after every iteration, for progress lines.
    """
    n = bound.n
    scale = 1.0 / n

    def per_point(params, _):
        # Multiplying by 1/n, not dividing by n: the rounding the fitted
        # models have always had.
        value, grad = bound.logp_and_grad(params)
        return value * scale, grad * scale

    trace = []

    def stop(per_point_trace):
        trace.append(per_point_trace[-1] * n)
        if report is not None:
            report(len(trace), trace[-1])
        return (
            tol is not None
            and len(trace) > SVGP_WINDOW
            and trace[-1] - trace[-1 - SVGP_WINDOW] < tol * n
        )

    out = maximize(per_point, start, bounds, max_iter=max_iter, stop=stop)
    return out.params, trace, out.converged, out.n_iter


def fit_svgp_adam(
    bound,
    start,
    bounds,
    max_iter,
    batch_size,
    learning_rate,
    rng,
    settle_window=None,
    report=None,
):
    """Adam on minibatch estimates of the SVGP bound.

    With ``settle_window`` the run stops once the mean of the last
    ``settle_window`` minibatch bounds exceeds the mean of the window before
    it by less than twice the standard error of that difference: the bound
    no longer rises by more than its own minibatch noise shows. Returns
    ``(params, trace, converged, n_iter)``. ``report(n_iter, elbo)`` is
    called after every step, with that step's minibatch estimate.
    """
    settle = None if settle_window is None else settled(settle_window)
    stop = settle
    if report is not None:

        def stop(trace):
            report(len(trace), trace[-1])
            return settle is not None and settle(trace)

    out = maximize(
        bound.logp_and_grad,
        start,
        bounds,
        max_iter=max_iter,
        # The bound is a sum over n points: dividing by n keeps Adam's
        # effective step independent of the data size.
        n=bound.n,
        stop=stop,
        batches=epoch_batches(rng, bound.n, batch_size),
        learning_rate=learning_rate,
    )
    # Without a settling rule the budget is the plan: the run converged.
    converged = out.converged or settle is None
    return out.params, out.trace, converged, out.n_iter


def resolve_inducing(inducing_points, X, seed, scaling=None):
    """Inducing inputs from an estimator's ``inducing_points`` argument.

    An int picks that many by k-means on ``X`` (all distinct inputs when
    there are fewer); an array, in the user's units, is checked and brought
    to the model's units by ``scaling`` (the estimator's input scaling).
    """
    if isinstance(inducing_points, (int, np.integer)):
        if inducing_points < 1:
            raise ValueError(
                f"inducing_points must be a positive count; got {inducing_points}."
            )
        return initial_inducing(X, int(inducing_points), seed)
    Z = np.asarray(inducing_points, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[0] < 1:
        raise ValueError(
            "inducing_points must be an int or a 2-D array with at least one "
            f"row; got an array of shape {Z.shape}."
        )
    if Z.shape[1] != X.shape[1]:
        raise ValueError(
            f"inducing_points has {Z.shape[1]} features but X has {X.shape[1]}."
        )
    if not np.all(np.isfinite(Z)):
        raise ValueError("inducing_points contains NaN or infinity.")
    if scaling is not None:
        Z = scaling.transform(Z)
    return np.ascontiguousarray(Z)
