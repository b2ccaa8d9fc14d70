"""The Stein field of SVGD and the coordinates it is measured in.

``phi(x_i) = 1/J sum_j [k(x_j, x_i) grad log p(x_j) + grad_{x_j} k(x_j, x_i)]``
with an RBF kernel and the median bandwidth rule (Liu and Wang, 2016), on
the whole vector or one coordinate at a time.

Coordinate-wise kernel. With ``kernel="coordinatewise"`` the matrix-valued
kernel is diagonal, ``K(x, y) = diag(k_p(x_p, y_p))``, each entry an RBF
kernel on one (whitened) coordinate with its own median-rule bandwidth. It
is positive definite, so the Stein identity and the KL-descent argument of
SVGD hold for it (Wang, Tang, Bajaj and Liu, 2019), and in the limit of many
particles its fixed point makes ``E_q[d_p log p - d_p log q | x_p] = 0`` for
every coordinate (the local Stein condition of Zhuo et al., 2018, and Wang,
Zeng and Liu, 2018). In whitened coordinates, where the target is close to
a standard normal, that is close to the target itself; and because each
kernel sees one dimension, the repulsion keeps its strength whatever the
number of coordinates, where the joint RBF kernel with a few particles in
hundreds of dimensions pulls them to a point near the joint mode (Ba et
al., 2021).

RBF plus linear kernel. With ``kernel="rbf+linear"`` the scalar kernel is
``exp(-|x - y|^2 / h) + 1 + (x - xbar)'(y - xbar) / s``, ``xbar`` and ``s``
the particles' mean and mean squared distance from it, held fixed within
an iteration as the bandwidth is. The linear part's field is ``(1/J sum_j
grad log p(x_j) (x_j - xbar)' + I)(x_i - xbar) / s + mean_j grad log
p(x_j)``: it vanishes when the particles satisfy the Stein identity for
every linear function, which for a Gaussian target means its mean and
covariance (Liu and Wang, 2018); :func:`choose_kernel` gives the reasons
and the measurements.

The engine knows nothing about Gaussian processes.
"""

import numpy as np

__all__ = [
    "SteinCoordinates",
    "choose_kernel",
    "median_bandwidth",
    "stein_field",
    "svgd_direction",
]


_BANDWIDTH_FLOOR = 1e-8


def median_bandwidth(sq_dists, n_particles):
    """Median-rule RBF bandwidth ``h = med^2 / log(J + 1)``, with a floor.

    Parameters
    ----------
    sq_dists : ndarray of shape (J, J)
        Squared distances between particles.
    n_particles : int

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.stein_kernel import median_bandwidth
    >>> d2 = np.array([[0.0, 4.0], [4.0, 0.0]])
    >>> round(float(median_bandwidth(d2, 2)), 4)  # median of [0, 4, 4, 0] is 2
    1.8205
    """
    if n_particles < 2:
        return 1.0
    med = float(np.median(sq_dists))
    # Coincident particles give med = 0: the floor keeps the repulsive term
    # finite and lets it push them apart.
    return max(med / np.log(n_particles + 1.0), _BANDWIDTH_FLOOR)


def choose_kernel(root, shape):
    """The SVGD kernel: RBF plus linear, or one RBF kernel per coordinate.

    SVGD with one RBF kernel on the whole vector shrinks the particles'
    spread as the dimension grows against the number of particles (Ba et
    al., 2022). It starts early: on a standard normal target in whitened
    coordinates, 20 particles at their fixed point had an sd of 0.89 in 2
    dimensions, 0.81 in 3, 0.62 in 5, 0.55 in 9 and 0.39 in 20 (three
    seeds each; the posteriors of a GP's 5 to 9 hyperparameters on small
    real sets came out at 0.5-0.6 of the MCMC sds). Two remedies, chosen by
    the shape:

    - fewer coordinates than particles: the RBF kernel plus the linear
      kernel ``1 + (x - xbar)'(y - xbar) / s`` (``s`` the particles' mean
      squared distance from their mean, so that both kernels are of order
      one). With the linear kernel alone SVGD's fixed points match the
      target's mean and covariance exactly for a Gaussian target whenever
      the centred particles span the space, that is with fewer coordinates
      than particles (Liu and Wang, 2018, *Stein variational gradient
      descent as moment matching*); with the sum, the RBF part keeps the
      particles' shape free. 20 particles: sd 0.99, 0.97, 0.93 and 0.88 in
      1, 3, 5 and 9 dimensions; correlations left by whitening (0.5, 0.8)
      kept; on the log of a Gamma(2) variable in 3 dimensions sd 0.80
      against the exact 0.80 (RBF alone 0.60) and its 10%, 50% and 90%
      quantiles within 0.04; two modes kept with their weights
      (``/tmp`` study, a plain SVGD loop);
    - at least as many coordinates as particles: the diagonal kernel, one
      RBF kernel per whitened coordinate, which keeps the repulsion of a
      one-dimensional problem in every coordinate (module notes; sd 0.96 on
      the standard normal in any dimension). It gives the conditional
      rather than the marginal sds where whitening leaves correlations
      (0.49 against 1 at correlation 0.8 in 5 dimensions), so it is kept
      for the shapes where the linear kernel cannot span.

    Without a preconditioner the joint RBF kernel is kept, on each
    coordinate divided by the particles' spread in it
    (:meth:`SteinCoordinates.field`): the linear kernel there, tried on
    2026-11-30, left particles drawn from the prior far out after 1,500
    iterations (sd 1.29 of the exact posterior's on one length scale).

    Parameters
    ----------
    root : ndarray of shape (n_params, n_params) or None
        Root ``S`` of the preconditioner ``S S'``; ``None`` for none.
    shape : tuple of int
        ``(n_particles, n_params)``, the shape of the particle array.

    Returns
    -------
    {"rbf", "rbf+linear", "coordinatewise"}
        The ``kernel`` argument of :func:`run_svgd`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.stein_kernel import choose_kernel
    >>> choose_kernel(np.eye(100), (10, 100))
    'coordinatewise'
    >>> choose_kernel(np.eye(5), (10, 5)), choose_kernel(None, (10, 100))
    ('rbf+linear', 'rbf')
    """
    n_particles, n_params = shape
    if root is None:
        return "rbf"
    if n_params < n_particles:
        return "rbf+linear"
    return "coordinatewise"


def _median_over_ordered_pairs(pair_sq, n_particles):
    """``np.median`` over all ``J * J`` ordered pairs, per coordinate, from
    the ``J (J - 1) / 2`` unordered ones ``pair_sq`` (M, P).

    In sorted order the ``J`` zeros of the diagonal come first and every
    other value twice, so the median is one or two order statistics of the
    unordered pairs: the same numbers from a partition of under half the
    rows (the partition was most of an SVGD step over a few hundred
    whitened coordinates).
    """
    total = n_particles * n_particles
    middle = [total // 2] if total % 2 else [total // 2 - 1, total // 2]
    ranks = sorted({(i - n_particles) // 2 for i in middle if i >= n_particles})
    ordered = np.partition(pair_sq, ranks, axis=0) if ranks else pair_sq

    def value(i):
        if i < n_particles:
            return np.zeros(pair_sq.shape[1])
        return ordered[(i - n_particles) // 2]

    if len(middle) == 1:
        return value(middle[0]).copy()
    return (value(middle[0]) + value(middle[1])) / 2.0


def _coordinatewise_field(particles, grads):
    """SVGD field of the diagonal kernel ``diag(k_p(x_p, y_p))``.

    Returns the field (J, P), the median of the per-coordinate bandwidths
    and the kernel mass of each particle and coordinate (J, P).
    """
    n_particles, n_dims = particles.shape
    diff = particles[:, None, :] - particles[None, :, :]  # x_j - x_i at [j, i]
    sq = diff * diff
    # sq is symmetric to the bit (x_i - x_j is exactly -(x_j - x_i)): the
    # median and the exponentials need only the pairs above the diagonal.
    upper = np.triu_indices(n_particles, 1)
    pair_sq = sq[upper]
    if n_particles < 2:
        bandwidth = np.ones(n_dims)
    else:
        med = _median_over_ordered_pairs(pair_sq, n_particles)
        bandwidth = np.maximum(med / np.log(n_particles + 1.0), _BANDWIDTH_FLOOR)
    k = np.empty_like(sq)
    k[upper] = np.exp(-pair_sq / bandwidth)
    k[upper[1], upper[0]] = k[upper]
    k[np.arange(n_particles), np.arange(n_particles)] = 1.0  # exp(-0 / h)
    drive = np.einsum("jip,jp->ip", k, grads)
    repulse = -2.0 / bandwidth * np.einsum("jip,jip->ip", k, diff)
    mass = k.sum(axis=0) / n_particles
    median_h = float(np.median(bandwidth)) if n_dims else 1.0
    return (drive + repulse) / n_particles, median_h, mass


def _field(particles, grads, bandwidth=None, linear=False):
    """SVGD field, bandwidth and each particle's kernel mass."""
    n_particles = particles.shape[0]
    diff = particles[:, None, :] - particles[None, :, :]  # x_j - x_i at [j, i]
    sq_dists = np.einsum("jip,jip->ji", diff, diff)
    if bandwidth is None:
        bandwidth = median_bandwidth(sq_dists, n_particles)
    k = np.exp(-sq_dists / bandwidth)
    # grad_{x_j} k(x_j, x_i) = -2 (x_j - x_i) / h k_ji
    repulse = -2.0 / bandwidth * np.einsum("ji,jip->ip", k, diff)
    if linear:
        centred = particles - particles.mean(axis=0)
        spread = float(np.mean(np.einsum("jp,jp->j", centred, centred)))
        if spread > 0.0:
            # k_lin(x_j, x_i) = 1 + c_j'c_i / s; grad_{x_j} of it is c_i / s
            k = k + 1.0 + (centred @ centred.T) / spread
            repulse = repulse + (n_particles / spread) * centred
    drive = k.T @ grads
    mass = k.sum(axis=0) / n_particles
    return (drive + repulse) / n_particles, bandwidth, mass


def svgd_direction(particles, grads, bandwidth=None):
    """The SVGD update field at every particle.

    ``phi(x_i) = 1/J sum_j [k(x_j, x_i) grad log p(x_j) + grad_{x_j} k(x_j, x_i)]``
    with ``k(x, y) = exp(-|x - y|^2 / h)``.

    Parameters
    ----------
    particles : ndarray of shape (J, P)
    grads : ndarray of shape (J, P)
        Gradients of the log density at the particles.
    bandwidth : float, optional
        ``h``; the median rule when omitted.

    Returns
    -------
    phi : ndarray of shape (J, P)
    bandwidth : float

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import svgd_direction
    >>> phi, h = svgd_direction(np.array([[0.0]]), np.array([[2.0]]))
    >>> phi  # one particle: plain gradient ascent
    array([[2.]])
    """
    phi, bandwidth, _ = _field(particles, grads, bandwidth)
    return phi, bandwidth


def _finite_square(matrix, n, name):
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.shape != (n, n) or not np.all(np.isfinite(matrix)):
        raise ValueError(
            f"{name} must be a finite ({n}, {n}) matrix; got shape {matrix.shape}."
        )
    return matrix


class SteinCoordinates:
    """Working coordinates of an SVGD run and the posterior-sd unit of its rule.

    With a preconditioner ``S`` (``Q = S S'``) SVGD runs on ``z = S^-1 x``:
    for a constant ``Q`` this is the matrix-valued-kernel SVGD of Wang,
    Tang, Bajaj and Liu (2019), whose update ``Q phi_Q`` uses the RBF kernel
    in the ``Q^-1`` metric and equals plain SVGD on ``z`` mapped back.

    Parameters
    ----------
    preconditioner : ndarray of shape (n_params, n_params) or None
        ``S``; None runs on the parameters themselves.
    n_params : int
    inverse : ndarray of shape (n_params, n_params), optional
        ``S^-1`` where the caller has it (a factor's inverse, known
        blockwise), instead of an inversion here.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.stein_kernel import SteinCoordinates
    >>> coords = SteinCoordinates(np.diag([2.0, 0.5]), 2)
    >>> coords.to_work(np.array([[2.0, 2.0]]))
    array([[1., 4.]])
    """

    def __init__(self, preconditioner, n_params, inverse=None):
        self.n_params = n_params
        if preconditioner is None:
            self.S = self.S_inv = None
            return
        self.S = _finite_square(preconditioner, n_params, "preconditioner")
        self.S_inv = (
            np.linalg.inv(self.S)
            if inverse is None
            else _finite_square(inverse, n_params, "inverse")
        )

    @classmethod
    def of(cls, preconditioner, n_params):
        """``preconditioner`` as coordinates: built from ``S`` (or None), or
        an instance already built for ``n_params`` parameters, as it is.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.stein_kernel import SteinCoordinates
        >>> coords = SteinCoordinates(np.eye(2), 2)
        >>> SteinCoordinates.of(coords, 2) is coords
        True
        """
        if not isinstance(preconditioner, cls):
            return cls(preconditioner, n_params)
        if preconditioner.n_params != n_params:
            raise ValueError(
                f"the coordinates were built for {preconditioner.n_params} "
                f"parameters; the particles have {n_params}."
            )
        return preconditioner

    @property
    def whitened(self):
        """Whether a preconditioner whitens the coordinates.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.stein_kernel import SteinCoordinates
        >>> coords = SteinCoordinates(np.diag([2.0, 0.5]), 2)
        >>> coords.whitened
        True
        """
        return self.S is not None

    def to_work(self, x):
        """Particles ``x`` (J, P) in the working coordinates ``S^-1 x``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.stein_kernel import SteinCoordinates
        >>> coords = SteinCoordinates(np.diag([2.0, 0.5]), 2)
        >>> coords.to_work(np.array([[2.0, 2.0]]))
        array([[1., 4.]])
        """
        return x if self.S is None else x @ self.S_inv.T

    def to_params(self, z):
        """Working coordinates back to parameters, ``S z``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.stein_kernel import SteinCoordinates
        >>> coords = SteinCoordinates(np.diag([2.0, 0.5]), 2)
        >>> coords.to_params(np.array([[1.0, 4.0]]))
        array([[2., 2.]])
        """
        return z if self.S is None else z @ self.S.T

    def work_grads(self, grads):
        """Gradients in the working coordinates, ``S' grad_x``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.stein_kernel import SteinCoordinates
        >>> coords = SteinCoordinates(np.diag([2.0, 0.5]), 2)
        >>> coords.work_grads(np.array([[1.0, 1.0]]))
        array([[2. , 0.5]])
        """
        # d/dz log p(S z) = S' grad_x
        return grads if self.S is None else grads @ self.S

    def field(self, particles, grads, kernel):
        """SVGD's field at the particles: ``(work, phi, normalised, bandwidth)``.

        ``work`` are the working coordinates, ``phi`` the field there (the
        step direction), ``normalised`` the field divided by each particle's
        kernel mass, which keeps its zeros and makes it a distance (module
        notes of :mod:`.svgd`), as :meth:`residual` reads it.

        Without a preconditioner the kernel is taken on every coordinate
        divided by the particles' spread in it, a diagonal whitening by
        their own sd, redrawn each iteration as the median bandwidth is. On
        the raw coordinates one bandwidth, set by the widest coordinate,
        left a narrow one without repulsion: on a Gaussian with sds 0.05, 2
        and 0.5 and 10 particles its particles' sd came out 3e-13 of the
        target's, and on a GP posterior a log noise variance's sd 0.026
        against 0.125. ``phi`` is then the field in the parameters (the
        scaled field times the spread) and ``normalised`` the scaled field's,
        already in the particles' sds, as :meth:`residual` reads it.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.stein_kernel import SteinCoordinates
        >>> x = np.array([[0.0, 0.0], [0.01, 2.0], [0.02, 4.0]])
        >>> work, phi, normalised, h = SteinCoordinates(None, 2).field(x, -x, "rbf")
        >>> phi.shape, bool(np.all(np.isfinite(normalised)))
        ((3, 2), True)
        """
        if self.S is not None:
            work = self.to_work(particles)
            phi, bandwidth, mass = stein_field(work, self.work_grads(grads), kernel)
            return work, phi, phi / _per_row(mass), bandwidth
        # A coordinate without spread (one particle, or particles that
        # coincide) keeps its own units.
        spread = np.std(particles, axis=0)
        spread = np.where(spread > 0.0, spread, 1.0)
        phi, bandwidth, mass = stein_field(particles / spread, grads * spread, kernel)
        return particles, phi * spread, phi / _per_row(mass), bandwidth

    def _held(self, field, particles, bounds):
        """The bounded coordinates and where a bound holds each of them
        against the field: ``(columns, mask (J, len(columns)))``, or None
        where no bound holds any coordinate.

        Only the bounded coordinates' moves ``S field`` are formed: an
        unbounded coordinate is never held, and in the latent models most
        coordinates are unbounded.
        """
        if bounds is None:
            return None
        bounded = np.flatnonzero(np.isfinite(bounds).any(axis=1))
        move = field[:, bounded] if self.S is None else field @ self.S[bounded].T
        at = particles[:, bounded]
        held = ((at <= bounds[bounded, 0]) & (move < 0)) | (
            (at >= bounds[bounded, 1]) & (move > 0)
        )
        return (bounded, held) if held.any() else None

    def residual(self, field, particles, bounds):
        """RMS of the field in posterior sds, bound-held coordinates removed.

        Parameters
        ----------
        field : ndarray of shape (J, P)
            Normalised field in working coordinates: whitened ones, or
            without a preconditioner the particles' spread-scaled ones
            (:meth:`field`); either way in posterior sds.
        particles : ndarray of shape (J, P)
        bounds : ndarray of shape (P, 2) or None

        Returns
        -------
        float

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.stein_kernel import SteinCoordinates
        >>> coords = SteinCoordinates(np.eye(1), 1)
        >>> coords.residual(np.ones((2, 1)), np.zeros((2, 1)), None)
        1.0
        """
        if field.size == 0:
            return 0.0
        held = self._held(field, particles, bounds)
        if held is None:
            # with S, S^-1 S field: the field itself, without two products
            return float(np.sqrt(np.mean(field**2)))
        bounded, mask = held
        # Without S the spread-scaled coordinates are the parameters' own,
        # each divided by a positive number: the same ones are held.
        move = self.to_params(field).copy()
        move[:, bounded] = np.where(mask, 0.0, move[:, bounded])
        sd_units = move if self.S is None else move @ self.S_inv.T
        return float(np.sqrt(np.mean(sd_units**2)))


def _per_row(mass):
    """The kernel mass as a divisor of a (J, P) field."""
    return mass if mass.ndim == 2 else mass[:, None]


def stein_field(particles, grads, kernel="rbf"):
    """SVGD field, bandwidth and each particle's kernel mass.

    Parameters
    ----------
    particles, grads : ndarray of shape (J, P)
        Particles (in working coordinates) and the log density's gradients.
    kernel : {"rbf", "rbf+linear", "coordinatewise"}, default="rbf"
        One RBF kernel on the whole vector, that kernel plus a linear one,
        or one RBF kernel per coordinate (module notes).

    Returns
    -------
    phi : ndarray of shape (J, P)
    bandwidth : float
        The median-rule bandwidth (the median over coordinates with
        ``"coordinatewise"``).
    mass : ndarray of shape (J,) or (J, P)
        ``1/J sum_j k(x_j, x_i)``, per coordinate with ``"coordinatewise"``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.stein_kernel import stein_field
    >>> phi, h, mass = stein_field(np.array([[0.0]]), np.array([[2.0]]))
    >>> phi, mass
    (array([[2.]]), array([1.]))
    """
    if kernel == "coordinatewise":
        return _coordinatewise_field(particles, grads)
    return _field(particles, grads, linear=kernel == "rbf+linear")
