"""Loaders for the real data sets shipped with skgp_bayes.

The CSV files live in ``skgp_bayes/datasets/data`` and are read through
:mod:`importlib.resources`, so the loaders work from a wheel, a zip or a source
checkout alike and never touch the network.
"""

import csv
import io
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_coal", "load_concrete", "load_mcycle", "bin_coal_counts"]

_DATA_PACKAGE = "skgp_bayes.datasets"

_CONCRETE_DESCR = """\
.. _concrete_dataset:

Concrete compressive strength
-----------------------------

**Data set characteristics:**

:Number of instances: 1030
:Number of attributes: 8 numeric inputs and the target
:Attributes:
    - cement             (kg in a m^3 mixture)
    - blast_furnace_slag (kg in a m^3 mixture)
    - fly_ash            (kg in a m^3 mixture)
    - water              (kg in a m^3 mixture)
    - superplasticizer   (kg in a m^3 mixture)
    - coarse_aggregate   (kg in a m^3 mixture)
    - fine_aggregate     (kg in a m^3 mixture)
    - age                (days, 1 to 365)
:Target: compressive_strength (MPa)
:Missing values: none

Concrete compressive strength is a highly non-linear function of age and of the
mixture's ingredients, a standard benchmark for exact Gaussian-process
regression with one lengthscale per input (used for the hyperparameter
posterior of the ULISSE paper).

**Origin and licence.** UCI Machine Learning Repository, "Concrete Compressive
Strength" (I-Cheng Yeh), released under CC BY 4.0; the copy here follows the
column names of the R package ``modeldata``.

.. topic:: References

    - Yeh, I-C. (1998). Modeling of strength of high-performance concrete using
      artificial neural networks. Cement and Concrete Research, 28(12),
      1797-1808.
"""

_MCYCLE_DESCR = """\
.. _mcycle_dataset:

Motorcycle crash helmet accelerations
-------------------------------------

**Data set characteristics:**

:Number of instances: 133
:Number of attributes: 1 input and the target
:Attributes:
    - times (ms after a simulated motorcycle impact)
:Target: accel (head acceleration, in g)
:Missing values: none

The inputs are not evenly spaced, several share a time stamp, and the noise
level changes strongly along the time axis, so a stationary Gaussian process
with constant noise is visibly misspecified: a small, honest 1-D test case.

**Origin and licence.** Data set ``mcycle`` of the R package ``MASS``
(distributed under GPL-2 | GPL-3); the measurements were published by
Silverman (1985).

.. topic:: References

    - Silverman, B. W. (1985). Some aspects of the spline smoothing approach to
      non-parametric curve fitting. Journal of the Royal Statistical Society,
      Series B, 47, 1-52.
    - Venables, W. N. and Ripley, B. D. (2002). Modern Applied Statistics with
      S. Fourth edition, Springer.
"""

_COAL_DESCR = """\
.. _coal_dataset:

British coal-mining disasters, 1851-1962
----------------------------------------

**Data set characteristics:**

:Number of instances: 191
:Number of attributes: 1
:Attributes:
    - date (decimal year of each explosion that killed ten or more miners)
:Target: none (a point pattern in time)
:Missing values: none

The events form a point pattern with a rate that drops around 1890. Binned on a
grid (see :func:`skgp_bayes.datasets.bin_coal_counts`), the counts are the
classic test case for a log-Gaussian Cox process with a Poisson likelihood, as
in Hensman et al. (2015), who use a grid of 100 bins.

**Origin and licence.** Data set ``coal`` of the R package ``boot``; the dates
are public records compiled by Jarrett (1979).

.. topic:: References

    - Jarrett, R. G. (1979). A note on the intervals between coal-mining
      disasters. Biometrika, 66(1), 191-193.
    - Hensman, J., Matthews, A. G. de G., Filippone, M. and Ghahramani, Z.
      (2015). MCMC for variationally sparse Gaussian processes. NeurIPS 28.
"""


def _read_csv(file_name):
    """Read a bundled CSV file into its header and a float64 array."""
    resource = resources.files(_DATA_PACKAGE) / "data" / file_name
    text = resource.read_text(encoding="utf-8")
    header = next(csv.reader(io.StringIO(text)))
    values = np.loadtxt(
        io.StringIO(text), delimiter=",", skiprows=1, dtype=np.float64, ndmin=2
    )
    return [name.strip() for name in header], values


def _make_bunch(
    file_name, descr, *, target_column, return_X_y, as_frame, target_name=None
):
    """Shared body of the loaders, in scikit-learn's ``Bunch`` layout."""
    header, values = _read_csv(file_name)
    if target_column is None:
        feature_names = header
        data, target = values, None
        target_names = []
    else:
        feature_names = [name for name in header if name != target_column]
        target_index = header.index(target_column)
        data = np.delete(values, target_index, axis=1)
        target = values[:, target_index].copy()
        target_names = [target_name or target_column]

    frame = None
    if as_frame:
        # pandas is optional for the package; only this code path needs it.
        import pandas as pd

        data = pd.DataFrame(data, columns=feature_names)
        if target is None:
            frame = data
        else:
            target = pd.Series(target, name=target_names[0])
            frame = pd.concat([data, target], axis=1)

    if return_X_y:
        return data, target

    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=feature_names,
        target_names=target_names,
        DESCR=descr,
        data_module=_DATA_PACKAGE + ".data",
        filename=file_name,
    )


def load_concrete(*, return_X_y=False, as_frame=False):
    """Load the concrete compressive strength data set (regression).

    ==============   ==============
    Samples total    1030
    Dimensionality   8
    Features         real, positive
    Target           real, MPa
    ==============   ==============

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame, ``target`` a Series and
        ``frame`` a DataFrame holding both (requires pandas).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with attributes ``data`` (1030, 8), ``target``
        (1030,), ``frame`` (DataFrame or None), ``feature_names``,
        ``target_names``, ``DESCR``, ``data_module`` and ``filename``.
    (data, target) : tuple if ``return_X_y`` is True

    Examples
    --------
    >>> from skgp_bayes.datasets import load_concrete
    >>> X, y = load_concrete(return_X_y=True)
    >>> X.shape, y.shape
    ((1030, 8), (1030,))
    """
    return _make_bunch(
        "concrete.csv",
        _CONCRETE_DESCR,
        target_column="compressive_strength",
        return_X_y=return_X_y,
        as_frame=as_frame,
    )


def load_mcycle(*, return_X_y=False, as_frame=False):
    """Load the motorcycle crash helmet data set (1-D regression).

    ==============   ==============
    Samples total    133
    Dimensionality   1
    Features         time (ms)
    Target           acceleration (g)
    ==============   ==============

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame, ``target`` a Series and
        ``frame`` a DataFrame holding both (requires pandas).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with attributes ``data`` (133, 1), ``target``
        (133,), ``frame``, ``feature_names`` (``["times"]``), ``target_names``
        (``["accel"]``), ``DESCR``, ``data_module`` and ``filename``.
    (data, target) : tuple if ``return_X_y`` is True

    Examples
    --------
    >>> from skgp_bayes.datasets import load_mcycle
    >>> data = load_mcycle()
    >>> data.data.shape, data.feature_names, data.target_names
    ((133, 1), ['times'], ['accel'])
    """
    return _make_bunch(
        "mcycle.csv",
        _MCYCLE_DESCR,
        target_column="accel",
        return_X_y=return_X_y,
        as_frame=as_frame,
    )


def load_coal(*, return_X_y=False, as_frame=False):
    """Load the dates of the British coal-mining disasters, 1851-1962.

    The data set is a point pattern and has no target: ``data`` holds the 191
    event dates as a column and ``target`` is None. Use
    :func:`bin_coal_counts` to turn it into Poisson counts on a grid.

    ==============   ==============
    Samples total    191
    Dimensionality   1
    Features         decimal year
    Target           none
    ==============   ==============

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, None)`` instead of a Bunch.
    as_frame : bool, default=False
        If True, ``data`` and ``frame`` are the same pandas DataFrame with the
        column ``date`` (requires pandas).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with attributes ``data`` (191, 1), ``target``
        (None), ``frame``, ``feature_names`` (``["date"]``), ``target_names``
        (empty), ``DESCR``, ``data_module`` and ``filename``.
    (data, None) : tuple if ``return_X_y`` is True

    Examples
    --------
    >>> from skgp_bayes.datasets import load_coal
    >>> dates, target = load_coal(return_X_y=True)
    >>> dates.shape, target is None
    ((191, 1), True)
    """
    return _make_bunch(
        "coal.csv",
        _COAL_DESCR,
        target_column=None,
        return_X_y=return_X_y,
        as_frame=as_frame,
    )


def bin_coal_counts(dates=None, n_bins=100, start=None, end=None):
    """Count events in equal-width bins, for a Poisson-count (Cox process) model.

    Parameters
    ----------
    dates : array-like of shape (n_events,) or (n_events, 1), default=None
        Event times. None uses the bundled coal-mining disaster dates
        (:func:`load_coal`).
    n_bins : int, default=100
        Number of equal-width bins (Hensman et al. 2015 use 100).
    start, end : float, default=None
        Edges of the binned interval. The defaults are ``floor(min(dates))``
        and ``ceil(max(dates))`` (1851 and 1963 for the coal data), so that
        every event is counted. Events outside ``[start, end]`` are dropped;
        an event at ``end`` falls in the last bin.

    Returns
    -------
    bin_centres : ndarray of shape (n_bins, 1)
        Centre of each bin, as a column ready to be used as ``X``.
    counts : ndarray of shape (n_bins,), dtype int64
        Number of events in each bin.
    bin_width : float
        Width of the bins, ``(end - start) / n_bins``; the expected count in a
        bin is ``bin_width`` times the rate.

    Examples
    --------
    >>> from skgp_bayes.datasets import bin_coal_counts
    >>> X, counts, width = bin_coal_counts()
    >>> X.shape, int(counts.sum()), round(width, 2)
    ((100, 1), 191, 1.12)
    """
    if dates is None:
        dates = load_coal().data
    dates = np.asarray(dates, dtype=np.float64)
    if dates.ndim == 2 and dates.shape[1] == 1:
        dates = dates[:, 0]
    if dates.ndim != 1:
        raise ValueError(
            f"dates must be 1-D or a single column; got shape {dates.shape}."
        )
    if not np.all(np.isfinite(dates)):
        raise ValueError("dates contains NaN or infinity.")
    if isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer):
        raise TypeError(f"n_bins must be an int; got {type(n_bins).__name__}.")
    if n_bins < 1:
        raise ValueError(f"n_bins must be at least 1; got {n_bins}.")
    if start is None or end is None:
        if dates.size == 0:
            raise ValueError("start and end are required when dates is empty.")
        if start is None:
            start = float(np.floor(dates.min()))
        if end is None:
            end = float(np.ceil(dates.max()))
    start, end = float(start), float(end)
    if not (np.isfinite(start) and np.isfinite(end)) or end <= start:
        raise ValueError(f"Need finite start < end; got start={start}, end={end}.")

    edges = np.linspace(start, end, n_bins + 1)
    counts, _ = np.histogram(dates, bins=edges)
    centres = 0.5 * (edges[:-1] + edges[1:])
    return centres[:, None], counts.astype(np.int64), (end - start) / n_bins
