"""One interface over any scikit-learn kernel, with compiled fast paths.

:class:`KernelAdapter` evaluates a kernel and its hyperparameter gradients at
an arbitrary log-scale ``theta`` without mutating the template kernel. Kernels
that :func:`~skgp_bayes.kernels._lowering.lower_kernel` recognises run through
the Numba functions in ``_numba``; all others go through the kernel's own
``__call__`` and ``diag``.

Generic-path gradients
----------------------
scikit-learn only returns hyperparameter gradients for ``kernel(X,
eval_gradient=True)``, the Gram matrix of one input set. The generic path
gets every other gradient from that same analytic call:

* the cross gradient ``dK(X, Z)/dtheta`` is the off-diagonal block of the
  gradient of ``K([X; Z], [X; Z])``. The block never touches the diagonal of
  the stacked matrix, so a WhiteKernel contributes 0 there, exactly as in
  ``kernel(X, Z)``;
* the diagonal gradient is the diagonal of the Gram gradient of each row
  block;
* large problems are processed in blocks so that no gradient tensor exceeds
  ``_GENERIC_BLOCK_BYTES``.

Central finite differences in theta are used only for kernels whose
``__call__`` does not support ``eval_gradient`` (it raises
``NotImplementedError`` or ``TypeError``).
"""

import numpy as np
from sklearn.gaussian_process.kernels import Kernel

from .._numba_threads import serial_numba
from . import _numba
from ._array_forms import array_gram, array_kernel_columns
from ._generic import generic_diag_grad, generic_matvec
from ._lowering import lower_kernel

__all__ = ["KernelAdapter", "force_generic"]

# Upper bound on the bytes of one dense gradient tensor built by the generic
# path; beyond it the work is split into blocks.
_GENERIC_BLOCK_BYTES = 256 * 1024**2

# Step of the central finite differences in log-scale theta: about the cube
# root of machine epsilon, which balances truncation and rounding error.
_FD_STEP = 1e-5


def _serial(func):
    """Run a parallel Numba kernel on the calling thread only.

    These kernels sit between LAPACK calls. Numba's OpenMP workers keep
    spinning after a parallel region and then fight OpenBLAS's threads for
    the cores: measured at n=2000 on 2 cores, one exact-gradient step took
    222 ms with both parallel against 167 ms with the kernels serial, and at
    n=100 28x longer. ``matvec`` (used by CG, with no LAPACK in between)
    keeps every thread.
    """

    def call(*args):
        with serial_numba():
            return func(*args)

    return call


def _as_2d(X, name="X"):
    # Converting never writes to the caller's array: a read-only input
    # either passes through untouched (fast path reads it once to scale it)
    # or is copied.
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got an array of shape {X.shape}.")
    return X


def _as_compiled_arg(A, ndim, name):
    # Numba compiles a separate specialisation for read-only arrays; copying
    # the rare read-only weight matrix keeps one specialisation (and one
    # compilation) per function.
    A = np.ascontiguousarray(A, dtype=np.float64)
    if A.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got an array of shape {A.shape}.")
    if not A.flags.writeable:
        A = A.copy()
    return A


def force_generic(kernel):
    """Build a :class:`KernelAdapter` that ignores the compiled fast path.

    Useful to cross-check the fast path, or to time the generic one.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        The template kernel.

    Returns
    -------
    adapter : KernelAdapter
        An adapter with ``is_fast == False``.

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> force_generic(RBF()).is_fast
    False
    """
    return KernelAdapter(kernel, _force_generic=True)


class KernelAdapter:
    """Evaluate a scikit-learn kernel and its gradients at any log-scale theta.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        The template kernel. It is never mutated; every evaluation uses a
        copy with the requested ``theta`` (or, on the fast path, the
        equivalent flat parameters).

    Attributes
    ----------
    kernel : Kernel
        The template kernel as given.
    n_params : int
        Number of free hyperparameter entries, ``len(kernel.theta)``. Fixed
        hyperparameters are excluded, as in scikit-learn.
    bounds : ndarray of shape (n_params, 2)
        Log-scale bounds, ``kernel.bounds``.
    hyperparameter_names : list of str
        One name per free scikit-learn ``Hyperparameter``, in theta order.
    hyperparameter_slices : dict of str to slice
        Slice of theta held by each hyperparameter (an ARD length scale of
        ``d`` dimensions spans ``d`` entries).
    param_names : list of str
        One name per theta entry; entries of a vector hyperparameter get an
        index suffix, e.g. ``"k2__length_scale[0]"``.
    is_fast : bool
        True when the compiled fast path is used.
    supports_input_gradients : bool
        True when :meth:`grad_inputs_cross` and :meth:`grad_inputs_gram` are
        available (the fast path).
    spec : KernelSpec or None
        The lowered description used by the fast path; None on the generic
        path.

    Notes
    -----
    All ``theta`` arguments are log-scale in ``kernel.theta`` layout and are
    not clipped or validated beyond their length. Inputs are converted to
    C-contiguous float64; they are never written to.

    The fast path never builds the ``(n, n, n_params)`` gradient tensor: the
    gradient contractions run over pairs once, accumulating one row at a
    time, and the result is the same for any number of Numba threads.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
    >>> kernel = ConstantKernel(2.0) * RBF([1.0, 0.5]) + WhiteKernel(0.1)
    >>> adapter = KernelAdapter(kernel)
    >>> adapter.is_fast, adapter.n_params
    (True, 4)
    >>> for name in adapter.param_names:
    ...     print(name)
    k1__k1__constant_value
    k1__k2__length_scale[0]
    k1__k2__length_scale[1]
    k2__noise_level
    >>> X = np.random.default_rng(0).normal(size=(5, 2))
    >>> np.allclose(adapter.gram(kernel.theta, X), kernel(X))
    True
    """

    def __init__(self, kernel, *, _force_generic=False):
        if not isinstance(kernel, Kernel):
            raise TypeError(
                "kernel must be a sklearn.gaussian_process.kernels.Kernel, "
                f"got {type(kernel).__name__}."
            )
        self.kernel = kernel
        theta = kernel.theta
        self.n_params = int(theta.size)
        # scikit-learn takes the log of the bounds; a zero bound gives -inf
        # with a NumPy warning, before the clear error of our bound checks.
        with np.errstate(divide="ignore"):
            bounds = kernel.bounds
        self.bounds = np.asarray(bounds, dtype=np.float64).reshape(-1, 2)

        names, slices, param_names = [], {}, []
        start = 0
        for hp in kernel.hyperparameters:
            if hp.fixed:
                continue
            size = int(hp.n_elements)
            names.append(hp.name)
            slices[hp.name] = slice(start, start + size)
            if size == 1:
                param_names.append(hp.name)
            else:
                param_names.extend(f"{hp.name}[{i}]" for i in range(size))
            start += size
        self.hyperparameter_names = names
        self.hyperparameter_slices = slices
        self.param_names = param_names

        self.spec = None if _force_generic else lower_kernel(kernel)
        self.is_fast = self.spec is not None
        self.supports_input_gradients = self.is_fast
        # Whether kernel(X, eval_gradient=True) works; probed on first need.
        self._has_gradient = None

    def __repr__(self):
        path = "fast" if self.is_fast else "generic"
        return f"KernelAdapter({self.kernel!r}, path={path!r})"

    # ------------------------------------------------------------------
    # helpers

    def _theta(self, theta):
        theta = np.asarray(theta, dtype=np.float64).reshape(-1)
        if theta.size != self.n_params:
            raise ValueError(
                f"theta has {theta.size} entries, the kernel has {self.n_params}."
            )
        return theta

    def _fast_params(self, theta, d):
        """(variance, noise, inverse length scales of size d, ard flag)."""
        spec = self.spec
        phi = spec.defaults.copy()
        phi[spec.theta_index] = self._theta(theta)
        n_ls = spec.n_length_scales
        ard = n_ls > 1
        if ard and n_ls != d:
            raise ValueError(
                f"The kernel has {n_ls} length scales but X has {d} features."
            )
        inv_ell = np.exp(-phi[1 : n_ls + 1])
        if not ard:
            inv_ell = np.full(d, inv_ell[0])
        noise = float(np.exp(phi[-1])) if spec.has_noise else 0.0
        return float(np.exp(phi[0])), noise, inv_ell, ard

    def _scaled(self, X, inv_ell):
        # Always a fresh, writable C array: the compiled code sees one type.
        return np.ascontiguousarray(X * inv_ell)

    def _to_theta(self, g_phi):
        return np.ascontiguousarray(g_phi[self.spec.theta_index])

    def _check_same_width(self, X, Y):
        if X.shape[1] != Y.shape[1]:
            raise ValueError(
                f"Inputs have {X.shape[1]} and {Y.shape[1]} features; they must match."
            )

    def _gradient_available(self, X):
        if self._has_gradient is None:
            try:
                self.kernel(X[:1], eval_gradient=True)
            except (NotImplementedError, TypeError):
                self._has_gradient = False
            else:
                self._has_gradient = True
        return self._has_gradient

    def _finite_difference(self, theta, value):
        """Central differences of ``value(theta)`` (a scalar or array)."""
        columns = []
        for j in range(self.n_params):
            step = np.zeros(self.n_params)
            step[j] = _FD_STEP
            columns.append((value(theta + step) - value(theta - step)) / (2 * _FD_STEP))
        return columns

    def _block_side(self):
        """Side of the largest square gradient tensor under the memory bound."""
        entries = _GENERIC_BLOCK_BYTES // (8 * max(self.n_params, 1))
        return max(int(np.sqrt(entries)), 2)

    def _stacked_cross_gradient(self, kernel, X, Z):
        """dK(X, Z)/dtheta of shape (n, m, p) from the stacked Gram gradient."""
        n = X.shape[0]
        _, G = kernel(np.vstack([X, Z]), eval_gradient=True)
        return G[:n, n:, :]

    # ------------------------------------------------------------------
    # public interface

    def kernel_with_theta(self, theta):
        """Copy of the template kernel with the given theta.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
            Log-scale hyperparameters.

        Returns
        -------
        kernel : Kernel
            ``kernel.clone_with_theta(theta)``; the template is unchanged.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> KernelAdapter(RBF(1.0)).kernel_with_theta(np.log([2.0]))
        RBF(length_scale=2)
        """
        return self.kernel.clone_with_theta(self._theta(theta))

    def gram(self, theta, X):
        """Kernel matrix ``K(X, X)``, WhiteKernel noise on the diagonal.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
            Log-scale hyperparameters.
        X : array-like of shape (n, d)
            Inputs.

        Returns
        -------
        K : ndarray of shape (n, n)
            Equal to ``kernel_with_theta(theta)(X)``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, WhiteKernel
        >>> adapter = KernelAdapter(RBF(1.0) + WhiteKernel(0.5))
        >>> adapter.gram(adapter.kernel.theta, [[0.0], [1.0]]).round(4)
        array([[1.5   , 0.6065],
               [0.6065, 1.5   ]])
        """
        X = _as_2d(X)
        if not self.is_fast:
            return np.asarray(self.kernel_with_theta(theta)(X), dtype=np.float64)
        variance, noise, inv_ell, _ = self._fast_params(theta, X.shape[1])
        return _serial(_numba.gram)(
            self._scaled(X, inv_ell), variance, noise, self.spec.base
        )

    def gram_in(self, theta, X, xp):
        """:meth:`gram` as an array of module ``xp`` (NumPy or CuPy).

        Built in ``xp`` on the fast path (``_array_forms``), else copied.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
        X : array-like of shape (n, d)
        xp : module

        Returns
        -------
        K : array of shape (n, n), of module ``xp``

        Examples
        --------
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> adapter, X = KernelAdapter(RBF(1.0)), np.array([[0.0], [1.0]])
        >>> bool(np.allclose(adapter.gram_in([0.0], X, np), adapter.gram([0.0], X)))
        True
        """
        if xp is np:
            return self.gram(theta, X)
        if self.is_fast:
            return array_gram(self, theta, _as_2d(X), xp)
        return xp.asarray(self.gram(theta, X))

    def kernel_columns_in(self, theta, X, xp):
        """A source of columns ``i -> K(X, X[i])`` in array module ``xp``.

        The cross kernel (a WhiteKernel contributes 0), as a pivoted Cholesky
        asks for it. On the fast path with a device module each column is
        built there (``_array_forms``); else on the host, then copied.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
        X : array-like of shape (n, d)
        xp : module

        Returns
        -------
        column : callable
            ``column(i)``: array of shape (n,), of module ``xp``.

        Examples
        --------
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> adapter, X = KernelAdapter(RBF(1.0)), np.array([[0.0], [1.0]])
        >>> adapter.kernel_columns_in([0.0], X, np)(1).round(4)
        array([0.6065, 1.    ])
        """
        X = _as_2d(X)
        if xp is not np and self.is_fast:
            return array_kernel_columns(self, theta, X, xp)

        def column(i):
            return xp.asarray(self.cross(theta, X, X[i : i + 1])[:, 0])

        return column

    def cross(self, theta, X, Y):
        """Cross-kernel matrix ``K(X, Y)``; a WhiteKernel contributes 0.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
            Log-scale hyperparameters.
        X : array-like of shape (n, d)
        Y : array-like of shape (m, d)

        Returns
        -------
        K : ndarray of shape (n, m)
            Equal to ``kernel_with_theta(theta)(X, Y)``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, WhiteKernel
        >>> adapter = KernelAdapter(RBF(1.0) + WhiteKernel(0.5))
        >>> adapter.cross(adapter.kernel.theta, [[0.0]], [[0.0], [1.0]]).round(4)
        array([[1.    , 0.6065]])
        """
        X = _as_2d(X)
        Y = _as_2d(Y, "Y")
        self._check_same_width(X, Y)
        if not self.is_fast:
            return np.asarray(self.kernel_with_theta(theta)(X, Y), dtype=np.float64)
        variance, _, inv_ell, _ = self._fast_params(theta, X.shape[1])
        return _serial(_numba.cross)(
            self._scaled(X, inv_ell), self._scaled(Y, inv_ell), variance, self.spec.base
        )

    def diag(self, theta, X):
        """Diagonal of ``K(X, X)``, WhiteKernel noise included.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
            Log-scale hyperparameters.
        X : array-like of shape (n, d)

        Returns
        -------
        diag : ndarray of shape (n,)
            Equal to ``kernel_with_theta(theta).diag(X)``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
        >>> adapter = KernelAdapter(ConstantKernel(3.0) * RBF())
        >>> adapter.diag(adapter.kernel.theta, np.zeros((2, 1)))
        array([3., 3.])
        """
        X = _as_2d(X)
        if not self.is_fast:
            return np.asarray(self.kernel_with_theta(theta).diag(X), dtype=np.float64)
        variance, noise, _, _ = self._fast_params(theta, X.shape[1])
        return np.full(X.shape[0], variance + noise)

    def grad_contract(self, theta, X, W):
        """Contract the Gram gradient: ``g_j = sum_ab W_ab dK(X, X)_ab/dtheta_j``.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
            Log-scale hyperparameters.
        X : array-like of shape (n, d)
        W : array-like of shape (n, n)
            Symmetric weights. The fast path reads only the lower triangle.

        Returns
        -------
        g : ndarray of shape (n_params,)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> adapter = KernelAdapter(RBF(1.0))
        >>> X = np.array([[0.0], [1.0]])
        >>> W = np.ones((2, 2))
        >>> g = adapter.grad_contract(adapter.kernel.theta, X, W)
        >>> _, dK = adapter.kernel(X, eval_gradient=True)
        >>> np.allclose(g, np.einsum("ab,abj->j", W, dK))
        True
        """
        X = _as_2d(X)
        n = X.shape[0]
        W = _as_compiled_arg(W, 2, "W") if self.is_fast else _as_2d(W, "W")
        if W.shape != (n, n):
            raise ValueError(f"W must have shape {(n, n)}, got {W.shape}.")
        if not self.is_fast:
            return self._generic_grad_contract(theta, X, W)
        variance, noise, inv_ell, ard = self._fast_params(theta, X.shape[1])
        g = _serial(_numba.grad_contract)(
            self._scaled(X, inv_ell), W, variance, noise, self.spec.base, ard
        )
        return self._to_theta(g)

    def cross_grad_contract(self, theta, X, Z, W):
        """Contract the cross gradient: ``g_j = sum_ab W_ab dK(X, Z)_ab/dtheta_j``.

        A WhiteKernel contributes 0, as it does to ``K(X, Z)``.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
            Log-scale hyperparameters.
        X : array-like of shape (n, d)
        Z : array-like of shape (m, d)
        W : array-like of shape (n, m)

        Returns
        -------
        g : ndarray of shape (n_params,)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
        >>> adapter = KernelAdapter(ConstantKernel(2.0) * RBF(1.0))
        >>> g = adapter.cross_grad_contract(
        ...     adapter.kernel.theta, [[0.0]], [[1.0]], [[1.0]])
        >>> np.allclose(g, [2 * np.exp(-0.5), 2 * np.exp(-0.5)])
        True
        """
        X = _as_2d(X)
        Z = _as_2d(Z, "Z")
        self._check_same_width(X, Z)
        W = _as_compiled_arg(W, 2, "W") if self.is_fast else _as_2d(W, "W")
        if W.shape != (X.shape[0], Z.shape[0]):
            raise ValueError(
                f"W must have shape {(X.shape[0], Z.shape[0])}, got {W.shape}."
            )
        if not self.is_fast:
            return self._generic_cross_grad_contract(theta, X, Z, W)
        variance, _, inv_ell, ard = self._fast_params(theta, X.shape[1])
        g = _serial(_numba.cross_grad_contract)(
            self._scaled(X, inv_ell),
            self._scaled(Z, inv_ell),
            W,
            variance,
            self.spec.base,
            ard,
        )
        return self._to_theta(g)

    def diag_grad(self, theta, X):
        """Gradient of the diagonal of ``K(X, X)`` in theta.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
            Log-scale hyperparameters.
        X : array-like of shape (n, d)

        Returns
        -------
        G : ndarray of shape (n, n_params)
            ``G[i, j] = d K(X, X)_ii / dtheta_j``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
        >>> adapter = KernelAdapter(ConstantKernel(2.0) * RBF(1.0))
        >>> adapter.diag_grad(adapter.kernel.theta, np.zeros((2, 1)))
        array([[2., 0.],
               [2., 0.]])
        """
        X = _as_2d(X)
        if not self.is_fast:
            return generic_diag_grad(self, theta, X)
        variance, noise, _, _ = self._fast_params(theta, X.shape[1])
        row = np.zeros(self.spec.defaults.size)
        row[0] = variance
        row[-1] = noise
        return np.tile(self._to_theta(row), (X.shape[0], 1))

    def matvec(self, theta, X, V):
        """``K(X, X) @ V`` without storing ``K`` (WhiteKernel noise included).

        Rows of ``K`` are generated in blocks against cached tiles of ``V``,
        in parallel over row blocks; memory is ``O(n k)``.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
            Log-scale hyperparameters.
        X : array-like of shape (n, d)
        V : array-like of shape (n,) or (n, k)

        Returns
        -------
        KV : ndarray of the shape of ``V``

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, WhiteKernel
        >>> adapter = KernelAdapter(RBF(1.0) + WhiteKernel(0.1))
        >>> X = np.random.default_rng(0).normal(size=(6, 2))
        >>> V = np.arange(6.0)
        >>> theta = adapter.kernel.theta
        >>> np.allclose(adapter.matvec(theta, X, V), adapter.gram(theta, X) @ V)
        True
        """
        X = _as_2d(X)
        V = np.asarray(V)
        if V.ndim not in (1, 2) or V.shape[0] != X.shape[0]:
            raise ValueError(
                f"V must have shape ({X.shape[0]},) or ({X.shape[0]}, k), "
                f"got {V.shape}."
            )
        vector = V.ndim == 1
        V = _as_compiled_arg(V[:, None] if vector else V, 2, "V")
        if self.is_fast:
            variance, noise, inv_ell, _ = self._fast_params(theta, X.shape[1])
            out = _numba.matvec(
                self._scaled(X, inv_ell), V, variance, noise, self.spec.base
            )
        else:
            out = generic_matvec(self, theta, X, V)
        return out[:, 0] if vector else out

    def grad_inputs_cross(self, theta, X, Z, W):
        """Gradient in ``Z`` of ``sum_ab W_ab K(X, Z)_ab``.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
            Log-scale hyperparameters.
        X : array-like of shape (n, d)
        Z : array-like of shape (m, d)
        W : array-like of shape (n, m)

        Returns
        -------
        G : ndarray of shape (m, d)

        Raises
        ------
        NotImplementedError
            On the generic path (``supports_input_gradients`` is False).

        Notes
        -----
        For Matern 1/2 the kernel is not differentiable where ``Z`` meets
        ``X``; those pairs contribute 0.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> adapter = KernelAdapter(RBF(1.0))
        >>> adapter.grad_inputs_cross(
        ...     adapter.kernel.theta, [[0.0]], [[1.0]], [[1.0]]).round(4)
        array([[-0.6065]])
        """
        self._require_input_gradients()
        X = _as_2d(X)
        Z = _as_2d(Z, "Z")
        self._check_same_width(X, Z)
        W = _as_compiled_arg(W, 2, "W")
        if W.shape != (X.shape[0], Z.shape[0]):
            raise ValueError(
                f"W must have shape {(X.shape[0], Z.shape[0])}, got {W.shape}."
            )
        variance, _, inv_ell, _ = self._fast_params(theta, X.shape[1])
        G = _serial(_numba.grad_inputs_cross)(
            self._scaled(X, inv_ell),
            self._scaled(Z, inv_ell),
            np.ascontiguousarray(W.T),
            variance,
            self.spec.base,
        )
        G *= inv_ell
        return G

    def grad_inputs_gram(self, theta, Z, W):
        """Gradient in ``Z`` of ``sum_ab W_ab K(Z, Z)_ab`` for symmetric ``W``.

        A WhiteKernel adds a constant to the diagonal and contributes 0.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
            Log-scale hyperparameters.
        Z : array-like of shape (m, d)
        W : array-like of shape (m, m)
            Symmetric weights.

        Returns
        -------
        G : ndarray of shape (m, d)

        Raises
        ------
        NotImplementedError
            On the generic path (``supports_input_gradients`` is False).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> adapter = KernelAdapter(RBF(1.0))
        >>> W = np.ones((2, 2))
        >>> adapter.grad_inputs_gram(adapter.kernel.theta, [[0.0], [1.0]], W).round(4)
        array([[ 1.2131],
               [-1.2131]])
        """
        self._require_input_gradients()
        Z = _as_2d(Z, "Z")
        m = Z.shape[0]
        W = _as_compiled_arg(W, 2, "W")
        if W.shape != (m, m):
            raise ValueError(f"W must have shape {(m, m)}, got {W.shape}.")
        variance, _, inv_ell, _ = self._fast_params(theta, Z.shape[1])
        G = _serial(_numba.grad_inputs_gram)(
            self._scaled(Z, inv_ell), W, variance, self.spec.base
        )
        G *= inv_ell
        return G

    # ---------------------------- generic path ----------------------------

    def _require_input_gradients(self):
        if not self.supports_input_gradients:
            raise NotImplementedError(
                "Gradients in the inputs need the compiled fast path, which "
                f"does not handle {self.kernel!r}. Use an RBF or Matern "
                "(nu in 0.5, 1.5, 2.5) kernel, optionally times a ConstantKernel "
                "and plus a WhiteKernel."
            )

    def _generic_grad_contract(self, theta, X, W):
        kernel = self.kernel_with_theta(theta)
        n = X.shape[0]
        p = self.n_params
        if p == 0:
            return np.zeros(0)
        if not self._gradient_available(X):
            columns = self._finite_difference(
                self._theta(theta),
                lambda t: np.vdot(W, self.kernel.clone_with_theta(t)(X)),
            )
            return np.asarray(columns, dtype=np.float64)
        if 8 * n * n * p <= _GENERIC_BLOCK_BYTES:
            _, G = kernel(X, eval_gradient=True)
            return np.einsum("ab,abj->j", W, G)
        # Blocks (I, J) with I >= J; an off-diagonal block stands for itself
        # and its mirror, whose weights are W[J, I].
        # The stacked Gram of two blocks has side 2 * size.
        size = self._block_side() // 2
        g = np.zeros(p)
        starts = range(0, n, size)
        for i0 in starts:
            I = slice(i0, min(n, i0 + size))
            _, G = kernel(X[I], eval_gradient=True)
            g += np.einsum("ab,abj->j", W[I, I], G)
            for j0 in range(0, i0, size):
                J = slice(j0, min(n, j0 + size))
                G = self._stacked_cross_gradient(kernel, X[I], X[J])
                g += np.einsum("ab,abj->j", W[I, J] + W[J, I].T, G)
        return g

    def _generic_cross_grad_contract(self, theta, X, Z, W):
        kernel = self.kernel_with_theta(theta)
        p = self.n_params
        if p == 0:
            return np.zeros(0)
        if not self._gradient_available(X):
            columns = self._finite_difference(
                self._theta(theta),
                lambda t: np.vdot(W, self.kernel.clone_with_theta(t)(X, Z)),
            )
            return np.asarray(columns, dtype=np.float64)
        n, m = X.shape[0], Z.shape[0]
        size = max(min(n, self._block_side() - m), 1)
        g = np.zeros(p)
        for i0 in range(0, n, size):
            I = slice(i0, min(n, i0 + size))
            G = self._stacked_cross_gradient(kernel, X[I], Z)
            g += np.einsum("ab,abj->j", W[I], G)
        return g
