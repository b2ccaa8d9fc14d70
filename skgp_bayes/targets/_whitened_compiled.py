"""Which whitened targets evaluate in one compiled call, and with what.

:func:`whitened_plan` reads a
:class:`~skgp_bayes.targets.whitened.WhitenedLatentTarget` once and
returns the arguments of
:func:`~skgp_bayes.targets._whitened_numba.whitened_value_and_grad` but
the parameters, or None where a part of it has no compiled form: a kernel
other than ``[c *] RBF [+ White]``, one hyperparameter block per class, a
likelihood other than the Bernoulli-logit or the softmax, a prior other
than the default policy's Gamma and log-normal ones.
"""

import threading

import numpy as np

from ..likelihoods import Bernoulli, Softmax
from ._sparse_compiled import SCRATCH_MAX_BYTES, compiled_prior, thread_buffer
from ._whitened_numba import LOGIT, SOFTMAX, WORK_MATRICES

__all__ = ["class_indices", "rbf_arguments", "whitened_plan", "whitened_workspace"]

_SCRATCH = threading.local()
# From this many rows a matrix of an evaluation is at least 128 KiB, the
# size from which glibc's allocator maps blocks afresh and returns them to
# the system when freed. Particles on two threads then spent most of their
# time in page faults: ten breast-cancer particles (398 rows) took 47 ms a
# round on two threads against 50 ms on one, and 27-32 ms with the
# matrices kept.
WORK_MIN_ROWS = 128
_NO_WORK = np.empty(0)

_FLAT_PRIOR = (
    np.zeros(0, dtype=np.int64),
    np.zeros(0),
    np.zeros(0),
    np.zeros(0),
)


def class_indices(labels, n_classes):
    """Whether every label is an integer in ``0..n_classes-1``.

    The compiled softmax calls index by label without a bounds check, so
    their plans require it.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._whitened_compiled import class_indices
    >>> class_indices(np.array([0, 2, 1]), 3), class_indices(np.array([0, 3]), 3)
    (True, False)
    """
    labels = np.asarray(labels, dtype=np.float64)
    whole = labels == np.floor(labels)
    return bool(np.all((labels >= 0) & (labels < n_classes) & whole))


def _likelihood_kind(likelihood):
    if type(likelihood) is Bernoulli and likelihood.link == "logit":
        return LOGIT
    if type(likelihood) is Softmax:
        return SOFTMAX
    return None


def rbf_arguments(target):
    """``(X, phi_defaults, theta_index, jitter)`` of ``target``'s Gram matrix.

    None where the kernel is not ``[c *] RBF [+ White]`` with one length
    scale or one per input column (the interpreted target names a
    mismatch), or where there are no rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, Matern
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
    >>> from skgp_bayes.targets._whitened_compiled import rbf_arguments
    >>> X, y = np.zeros((3, 1)), np.array([0.0, 1.0, 1.0])
    >>> def target(kernel):
    ...     return WhitenedLatentTarget(KernelAdapter(kernel), X, y, Bernoulli(), None)
    >>> rbf_arguments(target(RBF()))[2]
    array([1])
    >>> rbf_arguments(target(Matern())) is None
    True
    """
    if getattr(target, "_rbf", None) is None or target.n == 0:
        return None
    spec = target.adapter.spec
    if spec.n_length_scales not in (1, target.X.shape[1]):
        return None
    return (
        target.X,
        np.ascontiguousarray(spec.defaults, dtype=np.float64),
        np.ascontiguousarray(spec.theta_index, dtype=np.int64),
        float(target.jitter),
    )


def whitened_plan(target):
    """The compiled call's arguments for ``target`` but the parameters, or None.

    Parameters
    ----------
    target : WhitenedLatentTarget

    Returns
    -------
    tuple or None
        ``(X, phi_defaults, theta_index, jitter, labels, kind, n_latent,
        prior)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
    >>> from skgp_bayes.targets._whitened_compiled import whitened_plan
    >>> X = np.linspace(-2, 2, 6)[:, None]
    >>> y = (X[:, 0] > 0).astype(float)
    >>> adapter = KernelAdapter(ConstantKernel() * RBF())
    >>> whitened_plan(WhitenedLatentTarget(adapter, X, y, Bernoulli(), None))[5]
    0
    >>> probit = Bernoulli(link="probit")
    >>> whitened_plan(WhitenedLatentTarget(adapter, X, y, probit, None)) is None
    True
    """
    kernel = rbf_arguments(target)
    kind = _likelihood_kind(target.likelihood)
    if kernel is None or kind is None or target.n_blocks != 1:
        return None
    labels = np.ascontiguousarray(target.y, dtype=np.float64)
    if kind == SOFTMAX and not class_indices(labels, target.n_latent):
        return None  # the compiled call indexes by label, unchecked
    prior = _FLAT_PRIOR
    if target.prior_set is not None:
        prior = compiled_prior(target.prior_set)
        if prior is None:
            return None
    return (
        *kernel,
        labels,
        kind,
        int(target.n_latent),
        prior,
    )


def whitened_workspace(n):
    """Scratch memory for a compiled evaluation on ``n`` rows, or an empty array.

    A buffer kept for the calling thread
    (:func:`~skgp_bayes.targets._sparse_compiled.thread_buffer`) on threads
    other than the main one, from :data:`WORK_MIN_ROWS` rows up to
    ``SCRATCH_MAX_BYTES`` of matrices; elsewhere an empty array, and
    :func:`~skgp_bayes.targets._whitened_numba.whitened_value_and_grad`
    allocates. One thread's fresh matrices cost little (the main arena
    recycles them: 50 ms a round either way), and the main thread would
    keep its buffer for the life of the process; a particle evaluator's
    threads end with its pool, and their buffers with them.

    Parameters
    ----------
    n : int

    Returns
    -------
    ndarray of shape (WORK_MATRICES * n * n,) or (0,)

    Examples
    --------
    >>> from skgp_bayes.targets._whitened_compiled import whitened_workspace
    >>> whitened_workspace(400).size  # the main thread allocates
    0
    """
    size = WORK_MATRICES * n * n
    if n < WORK_MIN_ROWS or 8 * size > SCRATCH_MAX_BYTES:
        return _NO_WORK
    if threading.current_thread() is threading.main_thread():
        return _NO_WORK
    return thread_buffer(_SCRATCH, n, size)
