"""The models a Stein estimator fits, each a
:class:`~skgp_bayes._stein_base.SteinModel`.

``SteinGPRegressor`` picks one of :class:`ExactCholeskyModel`,
:class:`StochasticTraceModel` (``gradient="stochastic_trace"``),
:class:`ExactCGModel` (``solver="cg"``) and :class:`SparseRegressorModel`
(``inducing_points``); ``SteinGPClassifier`` one of :class:`LatentModel` and
:class:`SparseClassifierModel`. Each gives its target, starting particles,
particle evaluator, SVGD settings and fitted attributes; the fit itself is
:meth:`~skgp_bayes._stein_base.SteinModel.fit`, the same for all.
"""

from .exact import ExactCGModel, ExactCholeskyModel, StochasticTraceModel
from .latent import LatentModel
from .sparse import SparseClassifierModel, SparseModel, SparseRegressorModel

__all__ = [
    "ExactCGModel",
    "ExactCholeskyModel",
    "LatentModel",
    "SparseClassifierModel",
    "SparseModel",
    "SparseRegressorModel",
    "StochasticTraceModel",
]
