"""A target's evaluation as the arguments of one compiled function.

A caller that runs many evaluations inside compiled code (a leapfrog
trajectory, say) needs a target as data, not as an object: the arguments
with which one of the targets' compiled functions gives its value and
gradient. :func:`compiled_form` returns them for the targets that have
such a function, by name:

* ``"logit"``: :func:`~skgp_bayes.targets._likelihood_numba.logit_joint`
  of a :class:`~skgp_bayes.targets.SparseWhitenedTarget` with a
  Bernoulli-logit likelihood, its arguments but ``theta`` and ``v``;
* ``"softmax"``: ``softmax_joint`` the same way, for a softmax likelihood;
* ``"collapsed"``: :func:`~skgp_bayes.targets._collapsed_numba.value_and_grad_params`
  of a :class:`~skgp_bayes.targets.collapsed.CollapsedSparseTarget`, its
  arguments but ``params``;
* ``"exact"``: :func:`~skgp_bayes.targets._exact_numba.rbf_value_and_grad`
  of an :class:`~skgp_bayes.targets.ExactMarginalTarget` with an RBF
  kernel, its arguments but ``params``.

with the prior as the arrays of
:func:`~skgp_bayes.targets._sparse_numba.log_prior_theta` (empty
arrays, :func:`no_prior`, when there is none). Every array is C-ordered
float64 or int64, every scalar a Python float or int: the same types from
one target to the next.
"""

import numpy as np

from ..kernels import KernelAdapter
from ..likelihoods._base import SMALL_VAR
from ._exact_numba import RBF_ROUTINES
from ._sparse_compiled import compiled_prior, has_workspace
from ._sparse_numba import LAPACK
from .collapsed import CollapsedSparseTarget
from .exact import ExactMarginalTarget
from .sparse import SparseWhitenedTarget

__all__ = ["FORMS", "compiled_form", "no_prior"]

FORMS = ("logit", "softmax", "collapsed", "exact")


def _floats(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def _indices(a):
    return np.ascontiguousarray(a, dtype=np.int64)


def _kernel(target):
    spec = target.adapter.spec
    return (
        _floats(target.X),
        _floats(target.Z),
        _floats(spec.defaults),
        _indices(spec.theta_index),
        int(spec.base),
        float(target.jitter),
    )


def _prior(prior_set):
    """``log_prior_theta``'s arrays, empty ones for no prior, or None."""
    if prior_set is None:
        return no_prior()
    arrays = compiled_prior(prior_set)
    if arrays is None:
        return None
    kind, a, b, const = arrays
    return _indices(kind), _floats(a), _floats(b), _floats(const)


def _sparse(target):
    if not target._one_call or target.offset is not None:
        return None
    if target.n_hyper != target.n_kernel_params:
        return None
    if has_workspace(target.n_inducing, target.n):
        # its scratch buffer is one per thread: a caller's threads would share it
        return None
    scale = 1.0 * (target.n_total / target.n)  # _data's, for the full data
    if target._logit:
        rules = target._logit_rules
        arguments = (
            *_kernel(target), _floats(target._logit_y), scale,
            _floats(rules[0]), _floats(rules[1]), _indices(rules[2]),
            _floats(rules[3]), SMALL_VAR, LAPACK, np.zeros(0),
        )  # fmt: skip
        return "logit", arguments
    eps, weights, on_simplex = target._softmax_nodes
    arguments = (
        *_kernel(target), _indices(target._softmax_labels), scale, _floats(eps),
        _floats(weights), on_simplex, LAPACK, np.zeros(0),
    )  # fmt: skip
    return "softmax", arguments


def _collapsed(target):
    if not target._compiled:
        return None
    X, Z, defaults, index, base, jitter = _kernel(target)
    return "collapsed", (X, Z, _floats(target.y), defaults, index, base, jitter, LAPACK)


def _exact(target):
    if not target._rbf or target.y.ndim != 1:
        return None
    arguments = (
        _floats(target._phi_defaults),
        _indices(target._param_index),
        _floats(target._X_centred),
        _floats(target.y),
        RBF_ROUTINES,
    )
    return "exact", arguments


def compiled_form(target):
    """``(name, arguments, prior)`` of ``target``'s compiled evaluation, or None.

    Parameters
    ----------
    target : object
        A target of one of the forms in the module notes (exactly that
        class), with the full data and, if any, a prior of the families
        :func:`~skgp_bayes.targets._sparse_compiled.compiled_prior` takes.

    Returns
    -------
    tuple or None
        The form's name (one of :data:`FORMS`), the arguments, and the
        prior's arrays; None where the target has no compiled evaluation.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> from skgp_bayes.targets.compiled_forms import compiled_form
    >>> X = np.linspace(0, 1, 8)[:, None]
    >>> name, arguments, prior = compiled_form(
    ...     ExactMarginalTarget(KernelAdapter(RBF()), X, np.sin(X[:, 0]), None))
    >>> name, arguments[2].shape, prior[0].size
    ('exact', (8, 1), 0)
    """
    kind = type(target)
    adapter = getattr(target, "adapter", None)
    if type(adapter) is not KernelAdapter or not adapter.is_fast:
        return None
    if kind is SparseWhitenedTarget:
        form = _sparse(target)
    elif kind is CollapsedSparseTarget:
        form = _collapsed(target)
    elif kind is ExactMarginalTarget:
        form = _exact(target)
    else:
        return None
    prior = None if form is None else _prior(target.prior_set)
    if prior is None:
        return None
    return (*form, prior)


def no_prior():
    """The prior's arrays of :func:`compiled_form` when there is no prior.

    Examples
    --------
    >>> from skgp_bayes.targets.compiled_forms import no_prior
    >>> [a.shape for a in no_prior()]
    [(0,), (0,), (0,), (0,)]
    """
    return np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
