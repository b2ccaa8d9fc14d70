"""Pathwise posterior function samples (Wilson et al., seed 001).

A posterior function sample is a prior sample plus a data-dependent update
(Matheron's rule). The prior sample uses random Fourier features,

``f_prior(x) = sum_f W_f sqrt(2 s2 a_f / F) cos(w_f' x + b_f)``,

with three quarters of the frequencies ``w_f`` from the kernel's spectral
density and a quarter from a wider copy of it, weighted by ``a_f`` (see
:func:`skgp_bayes.kernels.spectral.weighted_frequencies`: between clustered
conditioning points the update leaves only the density's far tail), and
the update is a finite sum over ``m`` canonical points ``P``:

``f(x) = f_prior(x) + k(x, P) V``, ``V = A^-1 (t - f_prior(P))``,

where the model supplies ``P``, the Cholesky factor of ``A`` and the targets
``t``:

* exact regression: ``P = X``, ``A = K + s2 I``, ``t = y - eps``,
  ``eps ~ N(0, s2 I)``;
* whitened latent models (``f = L nu`` given): ``P = X``, ``A = K``,
  ``t = L nu``;
* sparse models: ``P = Z``, ``A = K_uu``, ``t = u ~ q(u)``.

Each function sample picks one hyperparameter draw (a particle or an MCMC
sample) uniformly at random, so the samples mix over the hyperparameter
posterior. Samples that share a draw share its Fourier features (frequencies
and phases) but have their own weights: they are independent given the
features, and the approximation error of the features, which falls as
``1 / sqrt(F)``, is common to them. Evaluation costs ``O(K (F + m))`` per
sample at ``K`` points instead of the ``O(K^3)`` of a joint Gaussian draw.
"""

import numpy as np
from sklearn.utils import check_random_state

from .._numba_threads import serial_numba
from ..kernels import lower_kernel
from ..kernels.spectral import spectral_parameters, weighted_frequencies
from ..linalg import cho_solve
from ._numba import evaluate_group, gradient_group

__all__ = [
    "FunctionSample",
    "add_white_noise",
    "FunctionSamples",
    "exact_conditioner",
    "latent_conditioner",
    "pathwise_functions",
    "require_spectral_spec",
    "sparse_conditioner",
    "with_prior_noise",
]

DEFAULT_N_FEATURES = 1024
# Query sets below this many rows are evaluated on one thread (see _run).
_PARALLEL_ROWS = 2048


class _Group:
    """Plain-array state of the samples that share one hyperparameter draw."""

    def __init__(self, base, variance, inv_ell, omega_t, phases, Wt, Zs, Vt, cols):
        self.base = int(base)
        self.variance = float(variance)
        self.inv_ell = np.ascontiguousarray(inv_ell, dtype=np.float64)
        self.omega_t = np.ascontiguousarray(omega_t, dtype=np.float64)
        self.phases = np.ascontiguousarray(phases, dtype=np.float64)
        self.Wt = np.ascontiguousarray(Wt, dtype=np.float64)
        self.Zs = np.ascontiguousarray(Zs, dtype=np.float64)
        self.Vt = np.ascontiguousarray(Vt, dtype=np.float64)
        self.cols = np.ascontiguousarray(cols, dtype=np.intp)

    def _args(self, keep):
        cols = self.cols
        Wt, Vt = self.Wt, self.Vt
        if keep is not None:
            Wt, Vt, cols = Wt[keep], Vt[keep], cols[keep]
        return (
            self.omega_t,
            self.phases,
            np.ascontiguousarray(Wt),
            self.inv_ell,
            self.Zs,
            self.variance,
            self.base,
            np.ascontiguousarray(Vt),
        ), cols

    def evaluate(self, X, out, keep=None, col_map=None):
        args, cols = self._args(keep)
        cols = cols if col_map is None else col_map[cols]
        _run(evaluate_group, X, *args, out, np.ascontiguousarray(cols))

    def gradient(self, X, out, keep=None, col_map=None):
        args, cols = self._args(keep)
        cols = cols if col_map is None else col_map[cols]
        _run(gradient_group, X, *args, out, np.ascontiguousarray(cols))


def _run(func, X, *args):
    """Call a compiled kernel, on the calling thread only for small inputs.

    Numba's worker threads keep spinning after a parallel region and slow
    the LAPACK solve that follows (measured on 2 cores: 40 ms for a
    cho_solve with an 8 x 2000 right-hand side right after a parallel
    evaluation of 8 rows); a few rows do not repay starting them. Values do
    not depend on the thread count.
    """
    if X.shape[0] >= _PARALLEL_ROWS:
        return func(X, *args)
    with serial_numba():
        return func(X, *args)


def _check_query(X, n_features_in):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1 and n_features_in == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[1] != n_features_in:
        raise ValueError(
            f"X must have shape (n_points, {n_features_in}), got {X.shape}."
        )
    if not np.all(np.isfinite(X)):
        raise ValueError("Input X contains NaN or infinity.")
    return np.ascontiguousarray(X)


class FunctionSamples:
    """A fixed set of posterior function samples, callable anywhere.

    Every call evaluates the same functions: frequencies, phases and weights
    are frozen when the object is built. Values at a point do not depend on
    the other query points, so overlapping query sets agree exactly. The
    state is plain NumPy arrays, so the object pickles.

    Built by :func:`pathwise_functions` or an estimator's
    ``sample_functions``; not meant to be constructed directly.

    Parameters
    ----------
    groups : list
        Internal per-draw state.
    n_samples : int
    n_features_in : int
    draws : ndarray of int of shape (n_samples,)
        Hyperparameter draw used by each sample.
    offset, scale : float, default=0.0 and 1.0
        Output transformation ``offset + scale * f`` (undoes target
        normalisation).

    Attributes
    ----------
    n_samples : int
        Number of functions.
    n_features_in : int
        Input dimension.
    draws : ndarray of int of shape (n_samples,)
        Index of the hyperparameter draw (particle, MCMC sample) of each
        function.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import lower_kernel
    >>> from skgp_bayes.sampling import pathwise_functions, latent_conditioner
    >>> from skgp_bayes.linalg import cholesky
    >>> X = np.linspace(0, 1, 5)[:, None]
    >>> kernel = RBF(0.5)
    >>> L = cholesky(kernel(X) + 1e-8 * np.eye(5))[0]
    >>> cond = latent_conditioner(X, [L], np.ones((1, 5)))
    >>> fs = pathwise_functions(lower_kernel(kernel), kernel.theta[None, :],
    ...                         n_samples=3, conditioner=cond, random_state=0)
    >>> fs(X).shape, fs.gradient(X).shape
    ((5, 3), (5, 3, 1))
    >>> np.array_equal(fs(X)[1:3], fs(X[1:3]))
    True
    """

    def __init__(self, groups, n_samples, n_features_in, draws, offset=0.0, scale=1.0):
        self._groups = list(groups)
        self.n_samples = int(n_samples)
        self.n_features_in = int(n_features_in)
        self.draws = np.asarray(draws, dtype=np.intp)
        self._offset = float(offset)
        self._scale = float(scale)
        self._input_scaling = None

    def __len__(self):
        return self.n_samples

    def __repr__(self):
        return (
            f"FunctionSamples(n_samples={self.n_samples}, "
            f"n_features_in={self.n_features_in})"
        )

    def __getitem__(self, index):
        index = int(index)
        if not -self.n_samples <= index < self.n_samples:
            raise IndexError(f"index {index} out of range for {self.n_samples}.")
        return FunctionSample(self, index % self.n_samples)

    def _select(self, columns):
        """(group, keep mask, column map) for the groups holding ``columns``."""
        col_map = np.full(self.n_samples, -1, dtype=np.intp)
        col_map[columns] = np.arange(len(columns))
        for group in self._groups:
            keep = col_map[group.cols] >= 0
            if np.any(keep):
                yield group, keep, col_map

    def _model_inputs(self, X):
        X = _check_query(X, self.n_features_in)
        scaling = self._input_scaling
        return X if scaling is None else scaling.transform(X)

    def _evaluate(self, X, columns=None):
        X = self._model_inputs(X)
        if columns is None:
            out = np.zeros((X.shape[0], self.n_samples))
            for group in self._groups:
                group.evaluate(X, out)
        else:
            out = np.zeros((X.shape[0], len(columns)))
            for group, keep, col_map in self._select(columns):
                group.evaluate(X, out, keep, col_map)
        out *= self._scale
        out += self._offset
        return out

    def _gradient(self, X, columns=None):
        X = self._model_inputs(X)
        n_out = self.n_samples if columns is None else len(columns)
        out = np.zeros((X.shape[0], n_out, X.shape[1]))
        if columns is None:
            for group in self._groups:
                group.gradient(X, out)
        else:
            for group, keep, col_map in self._select(columns):
                group.gradient(X, out, keep, col_map)
        out *= self._scale
        if self._input_scaling is not None:
            out /= self._input_scaling.scale  # chain rule back to the natural units
        return out

    def __call__(self, X):
        """Values of every function sample at ``X``.

        Parameters
        ----------
        X : array-like of shape (n_points, n_features_in)

        Returns
        -------
        values : ndarray of shape (n_points, n_samples)
        """
        return self._evaluate(X)

    def gradient(self, X):
        """Gradient of every function sample in its inputs.

        Parameters
        ----------
        X : array-like of shape (n_points, n_features_in)

        Returns
        -------
        gradients : ndarray of shape (n_points, n_samples, n_features_in)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import lower_kernel
        >>> from skgp_bayes.sampling import pathwise_functions, latent_conditioner
        >>> X = np.array([[0.0, 0.0]])
        >>> cond = latent_conditioner(X, [np.eye(1)], np.zeros((1, 1)))
        >>> fs = pathwise_functions(lower_kernel(RBF([1.0, 2.0])),
        ...                         np.log([[1.0, 2.0]]), 4, cond, random_state=0)
        >>> fs.gradient(np.ones((3, 2))).shape
        (3, 4, 2)
        """
        return self._gradient(X)


class FunctionSample:
    """One function of a :class:`FunctionSamples` set.

    Parameters
    ----------
    samples : FunctionSamples
    index : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import lower_kernel
    >>> from skgp_bayes.sampling import pathwise_functions, latent_conditioner
    >>> from skgp_bayes.linalg import cholesky
    >>> X = np.linspace(0, 1, 4)[:, None]
    >>> L = cholesky(RBF(0.5)(X) + 1e-8 * np.eye(4))[0]
    >>> fs = pathwise_functions(lower_kernel(RBF(0.5)), np.log([[0.5]]), 2,
    ...                         latent_conditioner(X, [L], np.zeros((1, 4))),
    ...                         random_state=0)
    >>> f = fs[1]
    >>> f(X).shape, f.gradient(X).shape
    ((4,), (4, 1))
    >>> np.array_equal(f(X), fs(X)[:, 1])
    True
    """

    def __init__(self, samples, index):
        self.samples = samples
        self.index = int(index)

    def __call__(self, X):
        """Values at ``X``: ndarray of shape (n_points,)."""
        return self.samples._evaluate(X, [self.index])[:, 0]

    def gradient(self, X):
        """Input gradient at ``X``: ndarray of shape (n_points, n_features_in).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import lower_kernel
        >>> from skgp_bayes.sampling import pathwise_functions, latent_conditioner
        >>> cond = latent_conditioner(np.zeros((1, 1)), [np.eye(1)], np.zeros((1, 1)))
        >>> f = pathwise_functions(lower_kernel(RBF(1.0)), np.zeros((1, 1)), 1,
        ...                        cond, random_state=0)[0]
        >>> x, h = np.array([[0.3]]), 1e-6
        >>> fd = (f(x + h) - f(x - h)) / (2 * h)
        >>> bool(np.allclose(f.gradient(x)[:, 0], fd, atol=1e-6))
        True
        """
        return self.samples._gradient(X, [self.index])[:, 0, :]


def _as_factor_fn(factors):
    return factors if callable(factors) else (lambda j: factors[j])


def exact_conditioner(X, y, factors, noise_variances):
    """Matheron update of an exact GP with Gaussian noise.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Training inputs.
    y : ndarray of shape (n,)
        Training targets (model scale).
    factors : sequence or callable
        ``factors[j]`` (or ``factors(j)``): lower Cholesky factor of
        ``K_j(X, X) + noise_j I`` for draw ``j``.
    noise_variances : ndarray of shape (n_draws,)
        Total noise variance of each draw, WhiteKernel included, as it
        appears on the diagonal of the factored matrix.

    Returns
    -------
    conditioner : callable
        ``conditioner(j, n, rng) -> (X, factor, y - eps)`` with
        ``eps ~ N(0, noise_j I)`` of shape (n_points, n).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import cholesky
    >>> X = np.zeros((2, 1))
    >>> L = cholesky(np.eye(2) * 1.5)[0]
    >>> cond = exact_conditioner(X, np.ones(2), [L], np.array([0.5]))
    >>> cond(0, 3, np.random.RandomState(0))[2].shape
    (2, 3)
    """
    factor = _as_factor_fn(factors)
    noise = np.asarray(noise_variances, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)

    def condition(j, n, rng):
        eps = rng.standard_normal((y.shape[0], n)) * np.sqrt(noise[j])
        return X, factor(j), y[:, None] - eps

    return condition


def latent_conditioner(X, factors, latents):
    """Matheron update from given latent values ``f_j = L_j nu_j`` at ``X``.

    For whitened latent models the latent function at the training inputs
    is part of each draw; the function sample then passes through it.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    factors : sequence or callable
        Lower Cholesky factor ``L_j`` of ``K_j(X, X)`` (with its jitter).
    latents : ndarray of shape (n_draws, n)
        Latent function values of each draw at ``X`` (``L_j @ nu_j``).

    Returns
    -------
    conditioner : callable

    Examples
    --------
    >>> import numpy as np
    >>> cond = latent_conditioner(np.zeros((2, 1)), [np.eye(2)], np.ones((1, 2)))
    >>> cond(0, 3, np.random.RandomState(0))[2]
    array([[1., 1., 1.],
           [1., 1., 1.]])
    """
    factor = _as_factor_fn(factors)
    latents = np.asarray(latents, dtype=np.float64)

    def condition(j, n, rng):
        return X, factor(j), np.repeat(latents[j][:, None], n, axis=1)

    return condition


def sparse_conditioner(Z, factors, u_means, u_cov_factors=None):
    """Matheron update of a sparse (inducing-point) model.

    Parameters
    ----------
    Z : ndarray of shape (m, d) or sequence of such arrays
        Inducing inputs (one array, or one per draw).
    factors : sequence or callable
        Lower Cholesky factor of ``K_j(Z, Z)`` for draw ``j``.
    u_means : ndarray of shape (n_draws, m)
        Inducing values (``R_j v_j`` for a whitened MCMC draw) or the mean of
        ``q(u)``.
    u_cov_factors : sequence or callable, default=None
        Lower factor of the covariance of ``q(u)`` per draw; None when ``u``
        is a point value (MCMC draws of ``v``).

    Returns
    -------
    conditioner : callable

    Examples
    --------
    >>> import numpy as np
    >>> cond = sparse_conditioner(np.zeros((2, 1)), [np.eye(2)], np.zeros((1, 2)),
    ...                           [np.eye(2)])
    >>> cond(0, 4, np.random.RandomState(0))[2].shape
    (2, 4)
    """
    factor = _as_factor_fn(factors)
    u_means = np.asarray(u_means, dtype=np.float64)
    cov_factor = None if u_cov_factors is None else _as_factor_fn(u_cov_factors)

    def condition(j, n, rng):
        points = Z if isinstance(Z, np.ndarray) else Z[j]
        u = np.repeat(u_means[j][:, None], n, axis=1)
        if cov_factor is not None:
            u = u + cov_factor(j) @ rng.standard_normal((u.shape[0], n))
        return points, factor(j), u

    return condition


def pathwise_functions(
    spec,
    kernel_thetas,
    n_samples,
    conditioner,
    *,
    n_features=None,
    random_state=None,
    offset=0.0,
    scale=1.0,
    draws=None,
):
    """Posterior function samples mixing over hyperparameter draws.

    Each sample picks draw ``j`` uniformly at random; the samples that share
    a draw get one set of ``n_features`` Fourier features from the spectral
    density of ``K_j`` and their own weights, and are updated by Matheron's
    rule with the points, factor and targets that ``conditioner`` returns.

    Parameters
    ----------
    spec : KernelSpec
        The lowered kernel (:func:`skgp_bayes.kernels.lower_kernel`); a
        WhiteKernel in it is ignored here (it has no smooth part).
    kernel_thetas : ndarray of shape (n_draws, n_kernel_params)
        Log-scale kernel hyperparameters of each draw.
    n_samples : int
    conditioner : callable
        ``conditioner(j, n, rng) -> (points, factor, targets)`` with
        ``points`` of shape (m, d), ``factor`` the lower Cholesky factor of
        the (m, m) matrix to solve with (or a callable ``rhs -> solution``,
        for instance conjugate gradients) and ``targets`` of shape (m, n). See
        :func:`exact_conditioner`, :func:`latent_conditioner` and
        :func:`sparse_conditioner`.
    n_features : int or None, default=None
        Fourier features per draw; None takes ``DEFAULT_N_FEATURES``
        (1024), the estimators' ``sample_functions`` default.
    random_state : int, RandomState instance or None, default=None
    offset, scale : float, default=0.0 and 1.0
        Returned functions are ``offset + scale * f``.
    draws : array-like of int of shape (n_samples,), default=None
        Hyperparameter draw of each sample; None draws them uniformly at
        random. Pass the same array to several calls to build several
        latent functions (one per class) on the same draws.

    Returns
    -------
    FunctionSamples

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import lower_kernel
    >>> from skgp_bayes.linalg import cholesky
    >>> X = np.linspace(0, 1, 5)[:, None]
    >>> y = np.sin(3 * X[:, 0])
    >>> K = RBF(0.3)(X) + 0.01 * np.eye(5)
    >>> cond = exact_conditioner(X, y, [cholesky(K)[0]], np.array([0.01]))
    >>> fs = pathwise_functions(lower_kernel(RBF(0.3)), np.log([[0.3]]), 200,
    ...                         cond, random_state=0)
    >>> bool(np.abs(fs(X).mean(axis=1) - y).max() < 0.1)
    True
    """
    rng = check_random_state(random_state)
    kernel_thetas = np.atleast_2d(np.asarray(kernel_thetas, dtype=np.float64))
    n_samples = _positive_int("n_samples", n_samples)
    n_features = _positive_int("n_features", n_features, DEFAULT_N_FEATURES)
    which = _draw_indices(draws, kernel_thetas.shape[0], n_samples, rng)
    built = []
    n_dims = None
    for j in np.unique(which):
        cols = np.flatnonzero(which == j)
        group = _conditioned_group(
            spec, kernel_thetas[j], conditioner, j, cols, n_features, rng
        )
        built.append(group)
        n_dims = group.Zs.shape[1]
    return FunctionSamples(built, n_samples, n_dims, which, offset, scale)


def _positive_int(name, value, default=None):
    value = int(default if value is None else value)
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}.")
    return value


def _draw_indices(draws, n_draws, n_samples, rng):
    """The hyperparameter draw of each sample: given and checked, or uniform."""
    if draws is None:
        return rng.randint(n_draws, size=n_samples)
    which = np.asarray(draws, dtype=np.intp).reshape(-1)
    if which.shape != (n_samples,) or np.any((which < 0) | (which >= n_draws)):
        raise ValueError(f"draws must hold {n_samples} indices below {n_draws}.")
    return which


def _conditioned_group(spec, theta, conditioner, j, cols, n_features, rng):
    """The samples ``cols`` of draw ``j``: prior features updated by Matheron's rule."""
    # The canonical points come first: they fix the input dimension.
    points, factor, targets = _conditioned(conditioner, j, cols.size, rng)
    n_dims = points.shape[1]
    variance, inv_ell, _ = spectral_parameters(spec, theta, n_dims)
    omega, weights = weighted_frequencies(spec, theta, n_features, n_dims, rng)
    phases = rng.uniform(0.0, 2.0 * np.pi, n_features)
    Wt = rng.standard_normal((cols.size, n_features))
    Wt *= np.sqrt(2.0 * variance / n_features * weights)
    prior = _Group(
        spec.base,
        variance,
        inv_ell,
        omega.T,
        phases,
        Wt,
        np.empty((0, n_dims)),
        np.empty((cols.size, 0)),
        np.arange(cols.size),
    )
    at_points = np.zeros((points.shape[0], cols.size))
    prior.evaluate(np.ascontiguousarray(points, dtype=np.float64), at_points)
    rhs = targets - at_points
    V = factor(rhs) if callable(factor) else cho_solve(factor, rhs)
    return _Group(
        spec.base,
        variance,
        inv_ell,
        omega.T,
        phases,
        Wt,
        points * inv_ell,
        V.T,
        cols,
    )


def _conditioned(conditioner, j, n, rng):
    points, factor, targets = conditioner(int(j), n, rng)
    points = np.ascontiguousarray(points, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64).reshape(points.shape[0], n)
    return points, factor, targets


def with_prior_noise(conditioner, extra):
    """Give the prior sample at the conditioning points extra diagonal variance.

    The Cholesky factor a conditioner returns may hold diagonal terms that
    Fourier features do not carry (a WhiteKernel's variance, jitter).
    Matheron's update is exact only when the prior sample at the
    conditioning points has the covariance that is solved with, so
    independent noise of variance ``extra[j]`` is subtracted from the
    targets of draw ``j`` (as the observation noise of the exact regressor
    is).

    Parameters
    ----------
    conditioner : callable
        ``conditioner(j, n, rng) -> (points, factor, targets)``.
    extra : ndarray of shape (n_draws,)
        Missing variance per draw.

    Returns
    -------
    conditioner : callable

    Examples
    --------
    >>> import numpy as np
    >>> base = latent_conditioner(np.zeros((2, 1)), [np.eye(2)], np.ones((1, 2)))
    >>> noisy = with_prior_noise(base, np.array([0.5]))
    >>> targets = noisy(0, 1000, np.random.RandomState(0))[2]
    >>> bool(abs(targets.var() - 0.5) < 0.05)
    True
    """
    extra = np.asarray(extra, dtype=np.float64)

    def condition(j, n, rng):
        points, factor, targets = conditioner(j, n, rng)
        if extra[j] > 0:
            targets = targets - np.sqrt(extra[j]) * rng.standard_normal(targets.shape)
        return points, factor, targets

    return condition


def add_white_noise(values, draws, white, scale, rng):
    """``values`` plus a ``WhiteKernel``'s noise, independent at each query.

    Parameters
    ----------
    values : ndarray of shape (n_queries, n_samples)
        Function samples, sample ``j`` from hyperparameter draw ``draws[j]``.
    draws : ndarray of int, shape (n_samples,)
    white : ndarray of shape (n_draws,)
        Each hyperparameter draw's ``WhiteKernel`` variance (0 without one),
        on the scale the model was fitted on.
    scale : float
        The target's scale: the noise's standard deviation is
        ``sqrt(white) * scale``.
    rng : numpy.random.RandomState or Generator

    Returns
    -------
    ndarray of shape (n_queries, n_samples)
        ``values`` itself, with the noise added in place where any.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.sampling import add_white_noise
    >>> out = add_white_noise(np.zeros((1000, 2)), np.array([0, 1]),
    ...                       np.array([0.0, 4.0]), 0.5, np.random.default_rng(0))
    >>> float(out[:, 0].std()), round(float(out[:, 1].std()), 1)
    (0.0, 1.0)
    """
    noise_sd = np.sqrt(white[draws]) * scale
    if np.any(noise_sd > 0):
        values += rng.standard_normal(values.shape) * noise_sd
    return values


def require_spectral_spec(kernel, fallback):
    """The lowered kernel, or a ValueError naming what to call instead.

    Parameters
    ----------
    kernel : sklearn kernel
    fallback : str
        The method to suggest for sampling at fixed query points.

    Returns
    -------
    KernelSpec

    Raises
    ------
    ValueError
        When the kernel has no spectral density (random Fourier features
        need one).

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import RBF, RationalQuadratic
    >>> require_spectral_spec(RBF(), "sample_y(X)") is not None
    True
    >>> try:
    ...     require_spectral_spec(RationalQuadratic(), "sample_y(X)")
    ... except ValueError as err:
    ...     print("no spectral density" in str(err))
    True
    """
    spec = lower_kernel(kernel)
    if spec is None:
        raise ValueError(
            f"The kernel {kernel!r} has no spectral density, so function samples "
            f"cannot be built; use {fallback} at fixed query points."
        )
    return spec
