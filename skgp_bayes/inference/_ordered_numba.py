"""Dot products and matrix-vector products summed in one fixed order.

A chain's compiled transitions and its interpreted ones must give the same
draws to the bit (``skgp_bayes._mala_numba``, ``run_sgld``'s stretches).
BLAS does not promise that: the sum of a dot product depends on its
kernel, and under some kernels on the operands' addresses. Measured with
OpenBLAS's Prescott kernels (``OPENBLAS_CORETYPE=Prescott``), the dot
product of six normals read from an array at an odd 8-byte offset differed
in its last bit from that of the same six normals aligned in 615 cases of
2,000; under the Haswell and SkylakeX kernels in none. The compiled block
reads its normals from slices of one stream, the interpreter from fresh
arrays, so the chains parted after some tens of iterations on such CPUs.

These loops add the products in index order, without fast-math, whatever
the CPU, the BLAS or the alignment: the compiled transitions call them
inline, the interpreted ones through their dispatchers. The vectors are a
chain's position, ``d`` hyperparameters, so a loop costs no more than the
BLAS call it replaces.
"""

import math

import numba as nb
import numpy as np

__all__ = ["mixture_log_density", "ordered_dot", "ordered_matvec"]


@nb.njit(cache=True, nogil=True)
def ordered_dot(a, b):
    """``sum_i a_i b_i``, added in index order.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference._ordered_numba import ordered_dot
    >>> ordered_dot(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
    32.0
    """
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total


@nb.njit(cache=True, nogil=True)
def ordered_matvec(A, v):
    """``A v``, each entry's products added in index order.

    ``A' v`` is ``ordered_matvec(A.T, v)``: the same loops over the
    transposed view, in the same order in compiled and interpreted code.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference._ordered_numba import ordered_matvec
    >>> ordered_matvec(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, -1.0]))
    array([-1., -1.])
    """
    out = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        total = 0.0
        for j in range(A.shape[1]):
            total += A[i, j] * v[j]
        out[i] = total
    return out


@nb.njit(cache=True, nogil=True)
def mixture_log_density(x, stacked_inverse, stacked_shift, log_const):
    """Log density at ``x`` of a Gaussian mixture, summed in index order.

    The mixture of :class:`~skgp_bayes.inference.mode_jumps.ModeJumps`:
    component ``c`` whitens ``x`` by rows ``c d`` to ``(c + 1) d`` of
    ``stacked_inverse`` less the same entries of ``stacked_shift``, and adds
    its ``log_const[c]`` to minus half the squared norm; the log of the sum
    of the components' densities, from the largest.

    Examples
    --------
    >>> import math
    >>> import numpy as np
    >>> from skgp_bayes.inference._ordered_numba import mixture_log_density
    >>> one = mixture_log_density(np.zeros(1), np.eye(1), np.zeros(1),
    ...                           np.array([-0.5 * math.log(2 * math.pi)]))
    >>> bool(np.isclose(one, -0.5 * math.log(2 * math.pi)))
    True
    """
    k, d = log_const.shape[0], x.shape[0]
    z = ordered_matvec(stacked_inverse, x)
    terms = np.empty(k)
    for c in range(k):
        total = 0.0
        for j in range(d):
            w = z[c * d + j] - stacked_shift[c * d + j]
            total += w * w
        terms[c] = log_const[c] - 0.5 * total
    top = terms[0]
    for c in range(1, k):
        top = max(top, terms[c])
    mass = 0.0
    for c in range(k):
        mass += math.exp(terms[c] - top)
    return top + math.log(mass)
