"""The one default policy: input scaling, default kernel, priors and bounds.

Every estimator takes its defaults from here, so that the same data meets the
same model whichever estimator is fitted.

Why these defaults
------------------
*Inputs are standardised inside the estimator* (``normalize_X=True``): each
column is centred and divided by its standard deviation, computed on the
training data. A length scale is then measured in units of its input's
spread, whatever the input's natural units (dollars, days, kg per m^3), so the
default prior, the default bounds ``(1e-5, 1e5)`` and the starting point mean
the same thing on every data set, and multiplying a column by 1e6 changes
nothing but the units. This is the practice of the Stan and PyMC GP guides
(length scales relative to the spread of each input) done once for the user.

*The spread is the bulk's where a few rows set the standard deviation*: a
column's scale is its standard deviation, capped at :data:`BULK_MULTIPLE`
times the spread of its middle half (the interquartile range over 1.349,
the standard deviation of a normal distribution). Light and moderate tails
stay below the cap, and their columns keep their standard deviation: it is
0.8 times that spread for a uniform column, 1.0 for a normal one, 1.2 for
an exponential one, 1.5 for a Student t with three degrees of freedom;
the cap itself is a log-normal's of log-sd 1. Beyond it, a handful of
extreme rows (an elephant among mammals weighed in kg, a metropolis among
towns) would set the unit of the length scale, and the prior would call a
function that varies across the rows where most of the data lie
improbably wiggly. On the mammals' body weights (43 training species,
0.005 kg to 6,654 kg) the standard deviation is 46 times the bulk's
spread; scaled by it, the length scale that fits the small species (3.7
kg, scikit-learn's) lay 6.7 prior standard deviations below the prior's
centre (3.5 with the cap), and every regressor predicted the test species
1.4 nats per point worse than scikit-learn (0.03-0.08 with the cap). The
cap is continuous in the data and, like the standard deviation, follows
any rescaling and shift of the column, so the predictions stay scale-free.

*Targets are standardised* for every regressor (``normalize_y=True``), for the
same reason: the signal variance and the noise variance are then fractions of
``Var(y)``.

*The default kernel* is ``ConstantKernel(1.0) * RBF(length_scale=sqrt(d) *
ones(d))``: one length scale per input (automatic relevance determination,
the kernel of the five source papers' UCI experiments and the peer a user
compares against), starting at ``sqrt(d)``. With standardised inputs the
squared distance between two random training points is about ``2 d``; a
length scale proportional to ``sqrt(d)`` keeps the prior correlation between
them the same in every dimension (Hvarfner, Hellsten and Nardi, 2024, make
the same argument for Bayesian optimisation).

*The default priors* are weakly informative on these standardised scales:

- every length scale ``log l ~ N(log sqrt(d) + 1, 1)`` (log-normal, median
  ``e sqrt(d)``): the ``sqrt(d)`` scaling and the log-normal family follow
  Hvarfner, Hellsten and Nardi (2024), the centre and spread the prior
  predictive. For random pairs of standardised Gaussian inputs, the median
  prior correlation of ``f`` between the two points is 0.96 in one dimension,
  0.67 in ten and 0.47 in a hundred, and under 5% of pairs are nearly
  uncorrelated (below 0.01) in any dimension. An exponential prior with the
  same ``sqrt(d)`` scaling collapses as ``d`` grows (median 0.01 at ``d =
  10``): independent length scales with mass near zero make the shortest
  one dominate the distance. A log-normal has no such mass, still allows a
  length scale of a fifth of an input's spread (two prior sds below the
  centre in one dimension) and leaves an irrelevant input's length scale
  free to grow tens of times its spread;
- a regressor's noise variance, a fraction of ``Var(y)``, ``~ Gamma(1, 2)``:
  mean 2, so noise at the level of the data is typical while noise ten
  times the data's variance is a priori unlikely (probability ``exp(-5)``);
- a regressor's signal variance ``~ HalfCauchyVariance(1)``: its square root
  is half-Cauchy with the standardised targets' unit scale, the weakly
  informative prior of a scale parameter (Gelman 2006; Polson and Scott
  2012). The median is the data's variance; the tail is heavy because the
  signal variance and the length scale trade along a ridge (a smooth curve
  over the data's range is as well described by a longer length scale with
  a larger variance; for Matern kernels only the variance over a power of
  the length scale can be learnt on a bounded region, Zhang 2004). On
  nearly exact data the likelihood climbs that ridge far beyond ``Var(y)``:
  13 rows of the vapour pressure of mercury put scikit-learn's variance at
  475 times it, where ``Gamma(1, 2)``'s exponential tail held every
  regressor near 7 and 0.7-2.1 nats per point below scikit-learn;
- a classifier's latent signal variance ``~ Gamma(1, 2)``: there is no
  target to standardise, and nearly separable classes give the likelihood
  no maximum along the ridge, so a heavy tail would let it run away (see
  ``doc/defaults.rst``).

``tests/test_defaults.py`` checks the prior predictive: draws of the latent
function at real training inputs, standardised, have a spread on the scale of
the standardised targets, and their correlation between random pairs of points
does not collapse as the dimension grows.
"""

import math

import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.utils.validation import check_is_fitted, validate_data

from ._validation import check_input_magnitude, safe_mean_std
from .priors import HalfCauchyVariance, LogNormal, PriorSet

__all__ = [
    "BULK_MULTIPLE",
    "NOISE_VARIANCE_BOUNDS",
    "InputScaling",
    "default_kernel",
    "default_priors",
    "estimator_prior_set",
    "fit_input_scaling",
    "query_inputs",
    "in_natural_units",
]

# Noise variance as a fraction of Var(y): from nearly noiseless (1e-6, below
# which the jitter takes over) to pure noise a hundred times the data's spread.
NOISE_VARIANCE_BOUNDS = (1e-6, 1e2)

# An input column's scale is at most this multiple of its bulk's spread
# (the interquartile range over 1.349); why, in the module notes.
BULK_MULTIPLE = 2.0

_LENGTH_SCALE_BOUNDS = (1e-5, 1e5)
_CONSTANT_BOUNDS = (1e-5, 1e5)


class InputScaling:
    """Per-column centring and scaling of inputs, fitted on training data.

    A column's scale is its standard deviation, at most
    :data:`BULK_MULTIPLE` times the spread of its middle half (so that a
    few extreme rows do not set it). Columns whose spread is negligible
    against their magnitude get a scale of 1, and a scaling computed from
    magnitudes up to 1e300 stays finite (see
    :func:`skgp_bayes._validation.safe_mean_std`).

    Parameters
    ----------
    mean : ndarray of shape (n_features,)
    scale : ndarray of shape (n_features,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._defaults import InputScaling
    >>> scaling = InputScaling.fit(np.array([[1.0, 10.0], [3.0, 30.0]]))
    >>> scaling.transform(np.array([[2.0, 20.0]]))
    array([[0., 0.]])
    """

    def __init__(self, mean, scale):
        self.mean = np.asarray(mean, dtype=np.float64)
        self.scale = np.asarray(scale, dtype=np.float64)

    @classmethod
    def fit(cls, X):
        """The scaling that standardises the columns of ``X``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)

        Returns
        -------
        InputScaling

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes._defaults import InputScaling
        >>> InputScaling.fit(np.array([[0.0], [2.0]])).scale
        array([1.])
        """
        stats = [
            safe_mean_std(column, bulk_multiple=BULK_MULTIPLE)
            for column in np.asarray(X).T
        ]
        mean = np.array([m for m, _ in stats], dtype=np.float64)
        scale = np.array([s for _, s in stats], dtype=np.float64)
        return cls(mean, scale)

    @classmethod
    def identity(cls, n_features):
        """The scaling that changes nothing.

        Parameters
        ----------
        n_features : int

        Returns
        -------
        InputScaling

        Examples
        --------
        >>> from skgp_bayes._defaults import InputScaling
        >>> InputScaling.identity(2).scale
        array([1., 1.])
        """
        return cls(np.zeros(n_features), np.ones(n_features))

    def transform(self, X):
        """Inputs in standardised units.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes._defaults import InputScaling
        >>> InputScaling(np.array([1.0]), np.array([2.0])).transform(np.array([[5.0]]))
        array([[2.]])
        """
        if np.all(self.mean == 0.0) and np.all(self.scale == 1.0):
            return X
        # Dividing before subtracting keeps inputs near 1e308 finite.
        out = X / self.scale - self.mean / self.scale
        return np.ascontiguousarray(out)

    def inverse_transform(self, X):
        """Standardised inputs back in natural units.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes._defaults import InputScaling
        >>> InputScaling(np.array([1.0]), np.array([2.0])).inverse_transform(
        ...     np.array([[2.0]]))
        array([[5.]])
        """
        return np.asarray(X) * self.scale + self.mean


def fit_input_scaling(estimator, X, continuing=False):
    """The input scaling of a fit, and ``X`` in the units the model works in.

    The caller stores the scaling as ``input_scaling_`` together with the
    rest of its fitted state, so that an interrupted fit leaves the previous
    model whole. ``normalize_X=False`` gives the identity scaling.

    Parameters
    ----------
    estimator : estimator with a ``normalize_X`` parameter
    X : ndarray of shape (n_samples, n_features)
    continuing : bool
        A warm start or a later ``partial_fit`` call: the model's
        hyperparameters are in the units of the first fit, so its scaling is
        kept.

    Returns
    -------
    X_model : ndarray of shape (n_samples, n_features)
    scaling : InputScaling

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from skgp_bayes._defaults import fit_input_scaling
    >>> est = SimpleNamespace(normalize_X=True)
    >>> X_model, scaling = fit_input_scaling(est, np.array([[0.0], [4.0]]))
    >>> X_model.ravel(), scaling.scale
    (array([-1.,  1.]), array([2.]))
    """
    scaling = getattr(estimator, "input_scaling_", None) if continuing else None
    if scaling is None or scaling.mean.shape[0] != X.shape[1]:
        if getattr(estimator, "normalize_X", True):
            scaling = InputScaling.fit(X)
        else:
            scaling = InputScaling.identity(X.shape[1])
    return scaling.transform(X), scaling


def query_inputs(estimator, X):
    """Query inputs checked against the fitted estimator, in the model's units.

    Every estimator's predictions start here: the fit is checked, ``X`` is
    validated against the training features, scaled like the training
    inputs, and refused if its squared distances would overflow.

    Parameters
    ----------
    estimator : fitted estimator with ``input_scaling_``
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_samples, n_features)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.dummy import DummyRegressor
    >>> from skgp_bayes._defaults import InputScaling, query_inputs
    >>> X = np.array([[0.0], [4.0]])
    >>> est = DummyRegressor().fit(X, [0.0, 1.0])
    >>> est.input_scaling_ = InputScaling.fit(X)
    >>> query_inputs(est, [[2.0]])
    array([[0.]])
    """
    check_is_fitted(estimator)
    X = validate_data(estimator, X, dtype=np.float64, order="C", reset=False)
    scaling = getattr(estimator, "input_scaling_", None)
    if scaling is not None:
        X = scaling.transform(X)
    check_input_magnitude(X)
    return X


def default_kernel(n_features):
    """The kernel every estimator uses when none is given.

    ``ConstantKernel(1.0) * RBF(sqrt(d) * ones(d))`` on standardised inputs;
    see the module docstring for why.

    Parameters
    ----------
    n_features : int

    Returns
    -------
    sklearn.gaussian_process.kernels.Kernel

    Examples
    --------
    >>> from skgp_bayes._defaults import default_kernel
    >>> default_kernel(4)
    1**2 * RBF(length_scale=[2, 2, 2, 2])
    """
    d = max(int(n_features), 1)
    return ConstantKernel(1.0, _CONSTANT_BOUNDS) * RBF(
        np.full(d, math.sqrt(d)), _LENGTH_SCALE_BOUNDS
    )


def default_priors(param_names, n_features, regression=False):
    """Default priors, by hyperparameter name, for names the user left open.

    Length scales get ``LogNormal(log sqrt(d) + 1, 1)``; with
    ``regression``, signal variances (``constant_value``) get
    ``HalfCauchyVariance(1)``; everything else falls back to
    :data:`skgp_bayes.priors.DEFAULT_PRIOR`, ``Gamma(1, 2)``.

    Parameters
    ----------
    param_names : iterable of str
        The free hyperparameters' names (``kernel.hyperparameters`` names,
        plus ``"noise_variance"``).
    n_features : int
    regression : bool, default=False
        Whether the kernel models standardised targets with a Gaussian
        likelihood (a regressor's), whose signal variance is a fraction of
        ``Var(y)``.

    Returns
    -------
    dict of str to Prior

    Examples
    --------
    >>> from skgp_bayes._defaults import default_priors
    >>> default_priors(["k1__constant_value", "k2__length_scale"], 4)
    {'k2__length_scale': LogNormal(mu=1.6931471805599454, sigma=1.0)}
    >>> default_priors(["k1__constant_value"], 4, regression=True)
    {'k1__constant_value': HalfCauchyVariance(scale=1.0)}
    """
    centre = 0.5 * math.log(max(int(n_features), 1)) + 1.0
    by_kind = {"length_scale": LogNormal(mu=centre, sigma=1.0)}
    if regression:
        by_kind["constant_value"] = HalfCauchyVariance(1.0)
    return {
        name: by_kind[name.split("__")[-1]]
        for name in param_names
        if name.split("__")[-1] in by_kind
    }


def estimator_prior_set(
    adapter, user_priors, n_features, noise=False, regression=False
):
    """The prior set of an estimator's hyperparameters: the user's priors
    over the defaults, for the kernel's and (``noise``) a noise variance
    after them.

    Parameters
    ----------
    adapter : KernelAdapter
    user_priors : dict or None
    n_features : int
    noise : bool, default=False
        Whether a log noise variance follows the kernel's hyperparameters.
    regression : bool, default=False
        Whether the kernel models standardised targets with a Gaussian
        likelihood (see :func:`default_priors`).

    Returns
    -------
    PriorSet

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._defaults import estimator_prior_set
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> prior_set = estimator_prior_set(KernelAdapter(RBF(1.0)), None, 1, noise=True)
    >>> len(prior_set.entry_priors)  # the length scale, then the noise
    2
    """
    slices = dict(adapter.hyperparameter_slices)
    if noise:
        slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
    merged = merged_priors(user_priors, slices, n_features, regression)
    return PriorSet(slices, merged)


def merged_priors(user_priors, param_names, n_features, regression=False):
    """The user's priors over the defaults of :func:`default_priors`.

    A user prior for a whole hyperparameter or one of its entries
    (``"k2__length_scale[1]"``) takes precedence.

    Parameters
    ----------
    user_priors : dict or None
    param_names : iterable of str
    n_features : int
    regression : bool, default=False
        As in :func:`default_priors`.

    Returns
    -------
    dict of str to Prior

    Examples
    --------
    >>> from skgp_bayes._defaults import merged_priors
    >>> from skgp_bayes.priors import HalfNormal
    >>> sorted(merged_priors({"k1__constant_value": HalfNormal(1.0)},
    ...                      ["k1__constant_value", "k2__length_scale"], 1))
    ['k1__constant_value', 'k2__length_scale']
    """
    user = {} if user_priors is None else dict(user_priors)
    merged = {
        name: prior
        for name, prior in default_priors(param_names, n_features, regression).items()
        if name not in user
    }
    merged.update(user)
    return merged


def in_natural_units(functions, estimator):
    """Function samples that take inputs in the user's units.

    The samples were built in the model's (standardised) units; evaluation
    and input gradients then go through the estimator's input scaling.

    Parameters
    ----------
    functions : FunctionSamples or list of FunctionSamples
    estimator : fitted estimator with ``input_scaling_``

    Returns
    -------
    The same object(s).

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from skgp_bayes._defaults import InputScaling, in_natural_units
    >>> est = SimpleNamespace(input_scaling_=InputScaling.identity(1))
    >>> f = SimpleNamespace()
    >>> in_natural_units(f, est) is f
    True
    """
    scaling = getattr(estimator, "input_scaling_", None)
    for one in functions if isinstance(functions, list) else [functions]:
        one._input_scaling = scaling
    return functions
