"""The exact Langevin chains' transitions in compiled blocks.

An :class:`~skgp_bayes.SGLDGPRegressor` chain with exact gradients is
Metropolis-adjusted Langevin (MALA) over the log hyperparameters, on the
exact marginal likelihood. On small data most of an interpreted transition
is the interpreter's work: on cpunish (11 rows, 8 hyperparameters) 33 us a
transition, of which the compiled target took 4. Where the chain's density
has a compiled form (the exact RBF target with a compiled prior, under the
sinh maps or none), :func:`compiled_langevin` gives it a ``mala_block``
method, which :func:`~skgp_bayes.inference.run_sgld` uses for the
transitions after the adaptation (see its ``_compiled_stretch``): the
same transitions, in a loop in compiled code that releases the interpreter
lock (:mod:`skgp_bayes._mala_numba`).
"""

import numpy as np

from ._chain_density_numba import NO_LOG_DISTANCES
from ._mala_numba import (
    AT_TRANSITION,
    MALA_BLOCKS,
    ROOT_DENSE,
    ROOT_DIAGONAL,
    ROOT_IDENTITY,
)
from .targets.compiled_forms import FORMS, compiled_form

__all__ = ["CompiledLangevinDensity", "InterpretedLangevinDensity", "compiled_langevin"]

# The most transitions one compiled call takes at up to _ROWS rows, and the
# work of that many at more rows (at least one): a call holds off Ctrl-C
# and the progress bar for about a second at most.
_MOST_STEPS, _ROWS = 1024, 256


def _floats(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def compiled_langevin(density, target, maps=None):
    """``density`` with compiled MALA blocks where it has a compiled form.

    Parameters
    ----------
    density : callable
        ``x -> (log density, gradient)`` of the chain: ``target``'s, guarded,
        and through ``maps`` where given.
    target : object
        The target under ``density``.
    maps : MarginalMaps, optional
        The sinh maps the chain moves through.

    Returns
    -------
    CompiledLangevinDensity or InterpretedLangevinDensity
        The latter where ``target`` has no compiled form (a kernel other
        than the RBF, a prior of another family, a target on a GPU): its
        transitions are interpreted, on the same stream of random numbers,
        so a chain draws the same whether its density compiles or not.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._sgld_compiled import compiled_langevin
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> X = np.linspace(0, 1, 10)[:, None]
    >>> target = ExactMarginalTarget(KernelAdapter(RBF()), X, np.sin(X[:, 0]), None)
    >>> density = compiled_langevin(target.logp_and_grad, target)
    >>> type(density).__name__
    'CompiledLangevinDensity'

    """
    form = compiled_form(target)
    if form is None:
        return InterpretedLangevinDensity(density)
    return CompiledLangevinDensity(density, form, target.n_params, maps)


class CompiledLangevinDensity:
    """A chain's density with a ``mala_block`` method in compiled code.

    Parameters
    ----------
    density : callable
        ``x -> (log density, gradient)``: what a call gives.
    form : tuple
        :func:`~skgp_bayes.targets.compiled_forms.compiled_form` of the
        target under ``density``.
    n_hyper : int
        The target's hyperparameters (its first ``n_hyper`` parameters).
    maps : MarginalMaps, optional

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._sgld_compiled import compiled_langevin
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> X = np.linspace(0, 1, 10)[:, None]
    >>> target = ExactMarginalTarget(KernelAdapter(RBF()), X, np.sin(X[:, 0]), None)
    >>> density = compiled_langevin(target.logp_and_grad, target)
    >>> from skgp_bayes.inference.langevin import sgld_init
    >>> state = sgld_init(np.array([0.0, -2.0]), density)
    >>> stream = np.random.default_rng(0).standard_normal(5 * 3)
    >>> out = (np.empty((5, 2)), np.empty(5, dtype=bool), np.empty(5),
    ...        np.empty((5, 2)), np.empty((5, 2)))
    >>> status, n, used, counts, x, logp, grad = density.mala_block(
    ...     state, 0.1, np.zeros(0), None, None, stream, 0, None, out)
    >>> status, n, used
    (0, 5, 15)
    """

    def __init__(self, density, form, n_hyper, maps=None):
        self.density = density
        name, self.arguments, self.prior = form
        self.kind = FORMS.index(name)
        self.n_hyper = int(n_hyper)
        d = self.n_hyper
        if maps is None:
            mapping = (np.zeros(0),) * 4
        else:
            mapping = tuple(
                _floats(a) for a in (maps.mu, maps.sigma, maps.skew, maps.rate)
            )
        eye = np.eye(d)
        # no affine coordinates, no bounds inside (the chain checks its
        # own), no log distances from bounds
        self.chain = (
            np.zeros(d), eye, eye, *mapping, np.zeros(0), np.zeros(0),
            *NO_LOG_DISTANCES,
        )  # fmt: skip
        rows = self.arguments[2].shape[0] if name == "exact" else _ROWS
        self.mala_block_steps = max(1, int(_MOST_STEPS * min(1.0, _ROWS / rows) ** 3))

    def __call__(self, x):
        return self.density(x)

    def mala_block(
        self, state, step_size, dual, root, bounds, stream, t, jumps, out
    ):  # fmt: skip
        """MALA transitions from ``state`` at iterations ``t, t + 1, ...``.

        The contract of :func:`~skgp_bayes.inference.run_sgld`'s compiled
        stretches (see :mod:`skgp_bayes._mala_numba`): one transition per
        row of the outputs ``out = (positions, accepted, steps, moment_x,
        moment_grad)``, at ``step_size`` or, where ``dual`` (the fields of a
        :class:`~skgp_bayes.inference.adaptation.DualAveraging`, updated in
        place) is not empty, at the step it adapts; the mode jumps of
        ``jumps`` (a :class:`~skgp_bayes.inference.mode_jumps.ModeJumps` or
        None) after every ``jumps.every``-th iteration; the random numbers
        read from ``stream``.

        Returns
        -------
        status : int
            0 when all were done, else where the interpreter must go on
            (``_mala_numba.AT_TRANSITION`` or ``AT_JUMP``).
        n_done : int
            Rows of ``out`` written (with ``AT_JUMP`` also the next row's
            transition: all of that row but its position).
        used : int
            Normals of ``stream`` read by the rows done.
        counts : ndarray of shape (3,)
            Proposals whose density was not finite, jumps tried, accepted.
        x, logp, grad
            The chain's state where the block stopped.
        """
        x = np.array(state.x, dtype=np.float64)
        grad = np.array(state.grad, dtype=np.float64)
        d = x.size
        if root is None:
            root_kind, root = ROOT_IDENTITY, np.zeros((1, d))
        elif np.ndim(root) == 1:
            root_kind, root = ROOT_DIAGONAL, _floats(root).reshape(1, d)
        else:
            root_kind, root = ROOT_DENSE, _floats(root)
        if bounds is None:
            lower = upper = np.zeros(0)
        else:
            lower, upper = _floats(bounds[:, 0]), _floats(bounds[:, 1])
        if jumps is None:
            every, arrays = 0, _no_jumps(d)
        else:
            every, arrays = jumps.every, tuple(_floats(a) for a in jumps.as_arrays())
        counts = np.zeros(3, dtype=np.int64)
        status, n_done, used, logp = MALA_BLOCKS[self.kind](
            x, float(state.logp), grad, float(step_size), dual, root_kind, root,
            lower, upper, _floats(stream), int(t), int(every), arrays, self.chain,
            self.n_hyper, self.arguments, self.prior, out, counts,
        )  # fmt: skip
        return status, n_done, used, counts, x, logp, grad


class InterpretedLangevinDensity:
    """A chain's density whose ``mala_block`` takes no transition.

    :func:`~skgp_bayes.inference.run_sgld`'s stretches then take every
    transition and jump with the interpreted ``mala_step`` and
    ``mode_jump``, reading the stream of random numbers the compiled blocks
    read: the draws of a chain do not depend on whether its density has a
    compiled form, nor on the device it is evaluated on.

    Parameters
    ----------
    density : callable
        ``x -> (log density, gradient)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._sgld_compiled import InterpretedLangevinDensity
    >>> from skgp_bayes.inference.langevin import sgld_init
    >>> density = InterpretedLangevinDensity(lambda x: (-0.5 * x @ x, -x))
    >>> state = sgld_init(np.zeros(2), density)
    >>> density.mala_block(state, 0.1, np.zeros(0), None, None, np.zeros(6), 0,
    ...                    None, None)[:3]
    (1, 0, 0)
    """

    mala_block_steps = 256

    def __init__(self, density):
        self.density = density

    def __call__(self, x):
        return self.density(x)

    def mala_block(self, state, step_size, dual, root, bounds, stream, t, jumps, out):
        """Hand the first transition back to the interpreter (see the class)."""
        counts = np.zeros(3, dtype=np.int64)
        return AT_TRANSITION, 0, 0, counts, state.x, state.logp, state.grad


def _no_jumps(d):
    """The mixture's arrays where there are no jumps (of the same types)."""
    return (
        np.zeros((1, d)),
        np.zeros((1, d, d)),
        np.ones(1),
        np.zeros((d, d)),
        np.zeros(d),
        np.zeros(1),
    )
