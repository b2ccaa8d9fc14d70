"""Convergence and sample-quality diagnostics.

Plain array functions with no dependence on the rest of the package but one
compiled pass over sorted draws (:mod:`skgp_bayes._ranks_numba`). Draws are
laid out as numpyro and ArviZ lay them out: ``samples[chain, draw, ...]``, and
every function returns one value per trailing parameter index.

- :func:`split_rhat`: potential scale reduction, classic split-R-hat (Gelman et
  al., BDA3) or the rank-normalised, folded version of Vehtari et al. (2021).
- :func:`effective_sample_size`: multi-chain ESS with Geyer's initial monotone
  sequence, autocorrelations by FFT (the Stan / numpyro estimator).
- :func:`rank_rhat_and_bulk_ess`: the rank-normalised split R-hat and the bulk
  ESS together, the ranks of the split chains computed once for both.
- :func:`kernel_stein_discrepancy`: RBF-kernel Stein discrepancy of a weighted
  point set against a target known through its score (SVGD particles).
"""

import functools

import numpy as np
from scipy.fft import irfft, next_fast_len, rfft
from scipy.special import ndtri as _normal_quantile

from ._ranks_numba import folded_order, tied_average_ranks

__all__ = [
    "split_rhat",
    "effective_sample_size",
    "rank_rhat_and_bulk_ess",
    "kernel_stein_discrepancy",
]


def _as_chains(samples, min_draws):
    """Validate a (chain, draw, ...) array and return it as float64."""
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim < 2:
        raise ValueError(
            "samples must have shape (n_chains, n_draws, ...); "
            f"got an array with {x.ndim} dimension(s)."
        )
    if x.shape[0] < 1 or x.shape[1] < min_draws:
        raise ValueError(
            f"Need at least 1 chain and {min_draws} draws per chain; "
            f"got shape {x.shape}."
        )
    return x


def split_chains(x):
    """Cut every chain in two halves, dropping the middle draw if n is odd."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)


def _classic_rhat(x):
    """Gelman-Rubin R-hat of chains that are already split (BDA3, 11.4)."""
    n = x.shape[1]
    chain_means = x.mean(axis=1)
    within = x.var(axis=1, ddof=1).mean(axis=0)
    between_over_n = chain_means.var(axis=0, ddof=1)
    var_plus = (n - 1) / n * within + between_over_n
    # Constant chains give 0/0: R-hat is undefined there, so NaN is the answer.
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(var_plus / within)


def _average_ranks(values):
    """Ranks 1..n along axis 0, ties given their average rank.

    SciPy's ``rankdata(values, method="average", axis=0)``, the same values
    and NaN through every column that holds one, in about a fifth of its
    time (:func:`~skgp_bayes._ranks_numba.tied_average_ranks`).
    """
    return _ranking(values)[0]


def _ranking(values, scored=False):
    """``(ranks, median, rows, order)`` of ``values`` from one sort.

    :func:`_average_ranks` (with ``scored`` their normal scores, Blom's,
    instead), ``np.median(values, axis=0)`` read off the order the ranks
    come from (the middle value, or the mean of the middle two as NumPy
    takes it, and NaN in every column that holds one), and the columns of
    ``values`` as contiguous rows with the order that sorts them.
    """
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[0]
    if values.size == 0:
        empty = np.empty((0, n))
        return (np.empty(values.shape), np.full(values.shape[1:], np.nan), empty,
                empty.astype(np.intp))  # fmt: skip
    rows = np.ascontiguousarray(values.reshape(n, -1).T)
    order = np.argsort(rows, axis=1)
    ranks = _tied_ranks(rows, order, scored)
    middle = np.take_along_axis(rows, order[:, [(n - 1) // 2, n // 2]], axis=1)
    median = np.where(
        np.isnan(rows).any(axis=1), np.nan, (middle[:, 0] + middle[:, 1]) / 2.0
    )
    return ranks.T.reshape(values.shape), median.reshape(values.shape[1:]), rows, order


def _tied_ranks(rows, order, scored=False):
    """Average ranks of each row sorted by ``order``, or with ``scored``
    their normal scores ``ndtri((rank - 3/8) / (n + 1/4))`` (Blom's); NaN
    through a row that holds one.

    An average rank of ``n`` draws is one of the ``2 n - 1`` halves ``1,
    1.5, ..., n``, so the scores are looked up, in the ranking's own pass,
    in one table of those quantiles, computed from the same arguments and
    so the same to the bit. A run-length rule ranks every parameter's
    draws after every block, and the quantile function of every draw was
    half the ranking's time.
    """
    ranks = np.empty(rows.shape)
    table = _score_table(rows.shape[1]) if scored else np.empty(0)
    tied_average_ranks(rows, order, ranks, table)
    ranks[np.isnan(rows).any(axis=1)] = np.nan
    return ranks


@functools.lru_cache(maxsize=1)
def _score_table(size):
    """The normal scores of the average ranks ``1, 1.5, ..., size``; the
    last size's kept, as the bulk and the folded draws of one R-hat share
    it."""
    halves = np.arange(2 * size - 1) / 2.0 + 1.0
    table = _normal_quantile((halves - 0.375) / (size + 0.25))
    table.setflags(write=False)
    return table


def rank_normalize(x):
    """Pool all draws, rank them and map ranks to normal scores (Blom offsets)."""
    return _pooled_ranking(x)[0]


def _pooled_ranking(x):
    """:func:`_ranking` (scored) of the pooled draws of chains ``x``, the
    scores in the shape of ``x``."""
    n_chains, n_draws = x.shape[:2]
    pooled = x.reshape((n_chains * n_draws,) + x.shape[2:])
    scores, median, rows, order = _ranking(pooled, scored=True)
    return scores.reshape(x.shape), median, rows, order


def split_rhat(samples, *, rank_normalized=False):
    """Split potential scale reduction factor (R-hat).

    Every chain is cut into two halves (the middle draw is dropped when the
    number of draws is odd), so that drift within one chain is detected as
    well as disagreement between chains. Values near 1 are necessary, not
    sufficient, for convergence; Vehtari et al. (2021) suggest requiring
    ``R-hat < 1.01``.

    Parameters
    ----------
    samples : array-like of shape (n_chains, n_draws, ...)
        Draws, chain first. A single chain is allowed: its two halves are
        compared. At least 4 draws per chain are needed.
    rank_normalized : bool, default=False
        If False, the classic split-R-hat of Gelman et al. (BDA3, section
        11.4). If True, the rank-normalised split-R-hat of Vehtari et al.
        (2021): the maximum of the bulk R-hat (computed on normal scores of
        the pooled ranks) and the tail R-hat (the same on the draws folded
        about their median). It is robust to heavy tails and detects chains
        that differ only in scale.

    Returns
    -------
    rhat : float or ndarray of shape samples.shape[2:]
        One value per parameter; NaN where every draw of a parameter is equal.

    References
    ----------
    Gelman, A., Carlin, J. B., Stern, H. S., Dunson, D. B., Vehtari, A. and
    Rubin, D. B. (2013). Bayesian Data Analysis, third edition. CRC Press.

    Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Buerkner, P.-C.
    (2021). Rank-normalization, folding, and localization: an improved R-hat
    for assessing convergence of MCMC. Bayesian Analysis, 16(2), 667-718.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.diagnostics import split_rhat
    >>> rng = np.random.default_rng(0)
    >>> draws = rng.standard_normal((4, 500, 2))
    >>> bool(np.all(split_rhat(draws) < 1.01))
    True
    >>> draws[0] += 3.0  # one chain stuck elsewhere
    >>> bool(np.all(split_rhat(draws, rank_normalized=True) > 1.1))
    True
    """
    x = split_chains(_as_chains(samples, min_draws=4))
    rhat = _rank_split_rhat(x)[0] if rank_normalized else _classic_rhat(x)
    return rhat[()] if rhat.ndim == 0 else rhat


def _rank_split_rhat(x):
    """Rank-normalised R-hat of split chains ``x``, and their normal scores.

    The maximum of the bulk R-hat (normal scores of the pooled ranks) and
    the tail R-hat (the same on the draws folded about their median). The
    folded draws' order is merged from the draws' own
    (:func:`~skgp_bayes._ranks_numba.folded_order`), not sorted again.
    """
    scores, median, rows, order = _pooled_ranking(x)
    bulk = _classic_rhat(scores)
    folded_rows = np.abs(rows - np.reshape(median, (-1, 1)))
    folded_sort = np.empty_like(order)
    folded_order(rows, order, np.reshape(median, -1), folded_sort)
    folded = _tied_ranks(folded_rows, folded_sort, scored=True)
    tail = _classic_rhat(folded.T.reshape(x.shape))
    return np.fmax(bulk, tail), scores


def rank_rhat_and_bulk_ess(samples):
    """Rank-normalised split R-hat and bulk ESS, the ranks computed once.

    ``split_rhat(samples, rank_normalized=True)`` and
    ``effective_sample_size`` of the rank-normalised split chains (the bulk
    ESS of Vehtari et al., 2021), the same values, from one ranking of the
    split chains instead of two: a run-length rule that checks both after
    every block of draws pays for the ranking, a sort of every parameter's
    draws, once.

    Parameters
    ----------
    samples : array-like of shape (n_chains, n_draws, ...)
        Draws, chain first; at least 4 draws per chain.

    Returns
    -------
    rhat, ess : float or ndarray of shape samples.shape[2:]
        NaN where every draw of a parameter is equal.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.diagnostics import rank_rhat_and_bulk_ess, split_rhat
    >>> draws = np.random.default_rng(0).standard_normal((4, 500, 2))
    >>> rhat, ess = rank_rhat_and_bulk_ess(draws)
    >>> bool(np.all(rhat == split_rhat(draws, rank_normalized=True)))
    True
    >>> bool(np.all(ess > 1000))
    True
    """
    x = split_chains(_as_chains(samples, min_draws=4))
    with np.errstate(divide="ignore", invalid="ignore"):
        rhat, scores = _rank_split_rhat(x)
        ess = np.asarray(effective_sample_size(scores))
    if rhat.ndim == 0:
        return rhat[()], ess[()]
    return rhat, ess


def _autocovariance(x):
    """Biased autocovariance of every chain along axis 1, by FFT.

    Dividing every lag by n (not n - k) keeps the sequence positive
    semi-definite, as Geyer's estimator assumes.
    """
    n = x.shape[1]
    # Draws along the last, contiguous axis, where the transforms take two
    # thirds of their time across a strided one.
    centred = np.ascontiguousarray(
        np.moveaxis(x - x.mean(axis=1, keepdims=True), 1, -1)
    )
    # Zero-padding to at least 2n turns the FFT's circular correlation into
    # the linear one; a length of factors 2, 3 and 5 keeps the FFT fast and
    # pads less than the next power of two.
    n_fft = next_fast_len(2 * n, real=True)
    spectrum = rfft(centred, n=n_fft, axis=-1)
    acov = irfft(spectrum.real**2 + spectrum.imag**2, n=n_fft, axis=-1)
    return np.moveaxis(acov[..., :n], -1, 1) / n


def effective_sample_size(samples):
    """Effective sample size of correlated draws from one or more chains.

    The multi-chain estimator of Stan and numpyro (BDA3, section 11.5):
    autocorrelations are combined across chains through the between- and
    within-chain variances, paired into Geyer's sums ``rho_{2t} + rho_{2t+1}``,
    truncated before the first pair that is not positive, ``K``, and made
    monotone (the initial monotone sequence estimator). Then ``ESS = n_chains
    * n_draws / tau`` with ``tau = -1 + 2 * sum_{t < K} (rho_{2t} +
    rho_{2t+1}) + max(rho_{2K}, 0)``, the last term Stan's correction for the
    truncation; the figures equal Stan's and ArviZ's. As in Stan, ``tau`` is
    floored at ``1 / log10(n_chains * n_draws)`` so that antithetic chains get
    a large but finite ESS.

    Parameters
    ----------
    samples : array-like of shape (n_chains, n_draws, ...)
        Draws, chain first. At least 2 draws per chain are needed.

    Returns
    -------
    ess : float or ndarray of shape samples.shape[2:]
        One value per parameter; NaN where every draw of a parameter is equal.

    References
    ----------
    Geyer, C. J. (1992). Practical Markov chain Monte Carlo. Statistical
    Science, 7(4), 473-483.

    Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Buerkner, P.-C.
    (2021). Rank-normalization, folding, and localization: an improved R-hat
    for assessing convergence of MCMC. Bayesian Analysis, 16(2), 667-718.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.diagnostics import effective_sample_size
    >>> rng = np.random.default_rng(0)
    >>> iid = rng.standard_normal((4, 1000))
    >>> ess = effective_sample_size(iid)
    >>> bool(3000 < ess < 5000)
    True
    """
    x = _as_chains(samples, min_draws=2)
    n_chains, n_draws = x.shape[:2]

    acov = _autocovariance(x)
    # Within-chain variance (ddof=1) and the pooled variance estimate var+.
    within = acov[:, 0].mean(axis=0) * n_draws / (n_draws - 1)
    var_plus = within * (n_draws - 1) / n_draws
    if n_chains > 1:
        var_plus = var_plus + x.mean(axis=1).var(axis=0, ddof=1)

    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (within - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0

    # Geyer's pairs rho_{2k} + rho_{2k+1}, as far as Stan's estimator looks
    # (lags below n_draws - 1).
    n_pairs = max(1, (n_draws - 3) // 2 + 1)
    pairs = rho[: 2 * n_pairs : 2] + rho[1 : 2 * n_pairs : 2]
    # The sum stops before the first pair k >= 1 that is not positive (or
    # before the last pair looked at), K; the pairs before it are made
    # monotone; and, as in Stan, rho_{2K} is added once when positive.
    stop = pairs[1:] <= 0.0
    if n_pairs > 1:
        first = np.where(stop.any(axis=0), stop.argmax(axis=0) + 1, n_pairs - 1)
    else:
        first = np.zeros(pairs.shape[1:], dtype=np.intp)
    monotone = np.minimum.accumulate(pairs, axis=0)
    before = np.arange(n_pairs).reshape((-1,) + (1,) * (pairs.ndim - 1)) < first
    tail = np.take_along_axis(rho, 2 * np.asarray(first)[None, ...], axis=0)[0]
    tau = -1.0 + 2.0 * np.where(before, monotone, 0.0).sum(axis=0)
    tau = tau + np.where(tail > 0.0, tail, 0.0)
    tau = np.maximum(tau, 1.0 / np.log10(n_chains * n_draws))
    ess = n_chains * n_draws / tau
    return ess[()] if ess.ndim == 0 else ess


# Smallest bandwidth allowed, for particles that all sit on one point.
_MIN_BANDWIDTH = 1e-8


def kernel_stein_discrepancy(particles, scores, bandwidth=None):
    """Kernel Stein discrepancy of particles against a target, RBF kernel.

    With ``k(x, y) = exp(-|x - y|^2 / h)`` and the target score
    ``s(x) = grad log p(x)``, the Stein kernel is::

        u(x, y) = s(x)' s(y) k + s(x)' grad_y k + grad_x k' s(y)
                  + trace(grad_x grad_y k)

    and the discrepancy is the V-statistic ``sqrt(mean_ij u(x_i, x_j))``. It is
    zero in the limit of exact samples of ``p`` and needs ``p`` only up to its
    normalising constant. It is the quantity SVGD drives down (Liu, Lee and
    Jordan 2016), so it is a natural check on SVGD particles.

    Parameters
    ----------
    particles : array-like of shape (n_particles, n_dims) or (n_particles,)
        The points, e.g. SVGD particles or MCMC draws flattened over chains.
    scores : array-like of the same shape as ``particles``
        ``grad log p`` at each point.
    bandwidth : float, default=None
        ``h`` in the kernel. None uses the median rule of SVGD,
        ``h = med^2 / log(n_particles + 1)`` with ``med`` the median distance
        between distinct pairs; it is floored at 1e-8 when the particles
        coincide, and set to 1 for a single particle.

    Returns
    -------
    ksd : float
        The kernel Stein discrepancy (not squared).

    References
    ----------
    Liu, Q., Lee, J. D. and Jordan, M. I. (2016). A kernelized Stein
    discrepancy for goodness-of-fit tests. ICML.

    Gorham, J. and Mackey, L. (2017). Measuring sample quality with kernels.
    ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.diagnostics import kernel_stein_discrepancy
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((200, 1))
    >>> right = kernel_stein_discrepancy(x, -x)  # score of N(0, 1)
    >>> wrong = kernel_stein_discrepancy(x, -(x - 1.0))  # score of N(1, 1)
    >>> bool(right < wrong)
    True
    """
    x, s = _points_and_scores(particles, scores)
    n_dims = x.shape[1]
    sq_dists = _squared_distances(x)
    h = _ksd_bandwidth(sq_dists, bandwidth)
    k = np.exp(-sq_dists / h)
    # With d_ij = x_i - x_j: grad_y k(x_i, x_j) = 2 d_ij k / h and
    # grad_x k(x_i, x_j) = -2 d_ij k / h, so the cross terms reduce to
    # s_i'd_ij and d_ij's_j, built from matrix products without a
    # (J, J, d) tensor.
    s_dot_x = np.einsum("ij,ij->i", s, x)
    s_i_d_ij = s_dot_x[:, None] - s @ x.T
    d_ij_s_j = x @ s.T - s_dot_x[None, :]
    u = k * (
        s @ s.T
        + (2.0 / h) * (s_i_d_ij - d_ij_s_j)
        + 2.0 * n_dims / h
        - 4.0 * sq_dists / h**2
    )
    # The V-statistic is a squared RKHS norm, so only round-off can make it
    # negative.
    return float(np.sqrt(max(u.mean(), 0.0)))


def _points_and_scores(particles, scores):
    """Particles and scores as checked, finite (n_particles, n_dims) arrays."""
    x = np.asarray(particles, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if s.ndim == 1:
        s = s[:, None]
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(
            "particles must have shape (n_particles, n_dims) with at least one "
            f"particle; got shape {np.shape(particles)}."
        )
    if s.shape != x.shape:
        raise ValueError(
            f"scores must have the shape of particles {x.shape}; got {s.shape}."
        )
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(s))):
        raise ValueError("particles and scores must be finite.")
    return x, s


def _squared_distances(x):
    sq_norms = np.einsum("ij,ij->i", x, x)
    sq_dists = np.maximum(sq_norms[:, None] + sq_norms[None, :] - 2.0 * x @ x.T, 0.0)
    np.fill_diagonal(sq_dists, 0.0)
    return sq_dists


def _ksd_bandwidth(sq_dists, bandwidth):
    """The given bandwidth, checked, or SVGD's median rule."""
    n_particles = sq_dists.shape[0]
    if bandwidth is None:
        if n_particles == 1:
            return 1.0
        upper = np.triu_indices(n_particles, k=1)
        med = np.median(np.sqrt(sq_dists[upper]))
        return max(med**2 / np.log(n_particles + 1.0), _MIN_BANDWIDTH)
    h = float(bandwidth)
    if not (np.isfinite(h) and h > 0):
        raise ValueError(f"bandwidth must be a positive number; got {bandwidth}.")
    return h
