"""Unbiased stochastic gradients of an exact GP's log posterior.

:class:`StochasticMarginalGradient` (seed 002): the log marginal
likelihood's gradient through early-stopped CG solves
(:func:`~skgp_bayes.linalg.ulisse_solve`), with no factorisation, for
samplers that tolerate gradient noise (SGLD) at sizes where a Cholesky per
step is out of reach. The unbiasedness argument, warm starts included, is in
:mod:`skgp_bayes.linalg.ulisse`.

:class:`StochasticTraceTarget`: one Cholesky per evaluation, the value and
the gradient's data term exact, only the trace term ``tr(K^-1 dK_j)``
estimated, by probes solved with the same factor. It drops the explicit
inverse (``dpotri``, twice the factorisation's flops) and the ``n x n``
contraction of an exact gradient for ``O(n^2)`` solves and a low-rank
contraction.
"""

import numpy as np

from ..kernels._array_forms import array_lowrank_grad_contract
from ..linalg import (
    batched_cg,
    cho_solve,
    kernel_operator,
    kernel_preconditioner,
    lowrank_grad_contract,
    rademacher_probes,
    ulisse_solve,
)
from ..linalg.cg import to_host
from ..linalg.ulisse import default_budget
from ._stochastic_numba import STOCHASTIC_ROUTINES, rbf_stochastic_trace
from .exact import ExactMarginalTarget

__all__ = ["StochasticMarginalGradient", "StochasticTraceTarget"]

_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


class StochasticMarginalGradient:
    """Unbiased stochastic gradient of an exact GP's log posterior (seed 002).

    With ``K = K_theta(X, X) + s2 I``,
    ``g~_j = 1/2 a1' dK_j a2 - 1/(2 N_r) sum_r (K^-1 r)' dK_j r``, where ``a1``
    and ``a2`` are two independent unbiased estimates of ``K^-1 y`` (two
    stopping draws of one ULISSE run) and ``r`` are Rademacher probes; every
    solve is one column of a single batched CG run, which starts from the
    previous call's solutions (for the probes only while they are kept). The
    prior's exact gradient is added.

    Parameters
    ----------
    adapter : KernelAdapter
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    prior_set : PriorSet or None
    log_noise_variance : float or None
        Fixed log noise variance; ``None`` makes it the last parameter, as in
        :class:`~skgp_bayes.targets.ExactMarginalTarget`.
    rng : numpy.random.Generator
        Probes and stopping draws.
    n_probes : int, default=4
    probe_refresh : int, default=1
        Calls between redraws of the probes. Values above 1 let the probe
        solves start from the previous call's solutions, but correlate the
        noise of successive gradients, which a sampler does not average out.
    q : float, default=1.0
        Early-stop threshold ``q * sqrt(n)`` (ULISSE); ignored for
        ``solver="cg"``.
    beta : float, default=1.0
    max_random_steps : int or None, default=None
        Cap on ULISSE's randomised continuation steps; see
        :func:`ulisse_solve`.
    solver : {"ulisse", "cg"}, default="ulisse"
        ``"cg"`` runs every solve to ``tol`` (the exact-solve reference).
    tol : float, default=1e-8
    max_iter : int, optional
        CG budget per call; ``max(2 n, 100)`` by default.
    storage : {"auto", "dense", "matrix_free"}, default="auto"
        See :func:`~skgp_bayes.linalg.kernel_operator`.
    xp : module, default=numpy
    preconditioner_rank : int, default=0
        Rank of a pivoted-Cholesky preconditioner ``P = L L' + s2 I``
        (:class:`~skgp_bayes.linalg.LowRankPreconditioner`), rebuilt at every
        call from ``preconditioner_rank`` kernel columns. CG then needs far
        fewer iterations, and ULISSE's randomised increments, being smaller,
        add far less variance. 0 runs plain CG.
    warm_start : bool, default=True
        Start every solve from the previous call's plain CG iterate: always
        the ``K^-1 y`` column, the probe columns while their probes are
        kept. Unbiased (module notes); ``False`` starts from zero, the
        reference for the iterations the warm starts save.

    Attributes
    ----------
    n_calls : int
    cg_iterations : list of int
        Block CG iterations of every call.
    max_residual : float
        Largest final relative residual of any solve.
    budget_exhausted : int
        Calls whose solves ran out of ``max_iter`` before they were done
        (their gradients are biased). Calls never warn: their caller knows
        which of its parameters sets the budget, and reports once.
    budget_residual : float
        Largest relative residual among those unfinished solves.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import StochasticMarginalGradient
    >>> X = np.linspace(0, 1, 20)[:, None]
    >>> grad = StochasticMarginalGradient(KernelAdapter(RBF()), X, np.sin(X[:, 0]),
    ...                                   None, rng=np.random.default_rng(0))
    >>> value, g = grad(np.array([0.0, np.log(0.1)]))
    >>> g.shape
    (2,)
    """

    def __init__(
        self,
        adapter,
        X,
        y,
        prior_set,
        log_noise_variance=None,
        *,
        rng,
        n_probes=4,
        probe_refresh=1,
        q=1.0,
        beta=1.0,
        max_random_steps=None,
        solver="ulisse",
        tol=1e-8,
        max_iter=None,
        storage="auto",
        xp=np,
        preconditioner_rank=0,
        warm_start=True,
    ):
        if solver not in ("ulisse", "cg"):
            raise ValueError(f"solver must be 'ulisse' or 'cg', got {solver!r}.")
        self.adapter = adapter
        self.X = X
        self.y = y
        self.prior_set = prior_set
        self.log_noise_variance = log_noise_variance
        self.rng = rng
        self.n_probes = int(n_probes)
        self.probe_refresh = int(probe_refresh)
        self.q = q
        self.beta = beta
        self.max_random_steps = max_random_steps
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.storage = storage
        self.xp = xp
        self.preconditioner_rank = int(preconditioner_rank)
        self.warm_start = bool(warm_start)
        self.n_kernel_params = adapter.n_params
        self.n_params = adapter.n_params + (log_noise_variance is None)
        self.n_calls = 0
        self.cg_iterations = []
        self.max_residual = 0.0
        self.budget_exhausted = 0
        self.budget_residual = 0.0
        self._probes = None
        self._x_prev = None

    def split(self, params):
        """Kernel theta and log noise variance from a parameter vector.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import StochasticMarginalGradient
        >>> X = np.zeros((3, 1))
        >>> grad = StochasticMarginalGradient(KernelAdapter(RBF()), X, np.ones(3),
        ...                                   None, rng=np.random.default_rng(0))
        >>> theta, log_noise = grad.split(np.array([0.5, -2.0]))
        >>> theta.tolist(), log_noise
        ([0.5], -2.0)
        """
        params = np.asarray(params, dtype=np.float64)
        theta = params[: self.n_kernel_params]
        if self.log_noise_variance is None:
            return theta, float(params[self.n_kernel_params])
        return theta, float(self.log_noise_variance)

    def get_state(self):
        """What a later call needs to continue this gradient's random stream.

        Returns
        -------
        dict
            The generator, the call counter (it decides when probes are
            redrawn), the current probes and the last solutions (warm starts),
            as host arrays.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import StochasticMarginalGradient
        >>> X = np.linspace(0, 1, 10)[:, None]
        >>> args = (KernelAdapter(RBF()), X, np.sin(X[:, 0]), None)
        >>> one = StochasticMarginalGradient(*args, rng=np.random.default_rng(0))
        >>> p = np.array([0.0, -2.0])
        >>> _ = one(p)
        >>> import copy
        >>> two = StochasticMarginalGradient(*args, rng=None)
        >>> two.set_state(copy.deepcopy(one.get_state()))
        >>> bool(np.array_equal(one(p)[1], two(p)[1]))
        True
        """

        def host(a):
            return None if a is None else np.array(to_host(a))

        return {
            "rng": self.rng,
            "n_calls": self.n_calls,
            "probes": host(self._probes),
            "x_prev": host(self._x_prev),
        }

    def set_state(self, state):
        """Continue from :meth:`get_state` of an earlier gradient.

        The generator is used as given (not copied).

        Parameters
        ----------
        state : dict

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import StochasticMarginalGradient
        >>> X = np.linspace(0, 1, 10)[:, None]
        >>> grad = StochasticMarginalGradient(KernelAdapter(RBF()), X, np.sin(X[:, 0]),
        ...                                   None, rng=np.random.default_rng(0))
        >>> grad.set_state(grad.get_state())
        >>> grad.n_calls
        0
        """
        xp = self.xp

        def device(a):
            return None if a is None else xp.asarray(a)

        self.rng = state["rng"]
        self.n_calls = int(state["n_calls"])
        self._probes = device(state["probes"])
        self._x_prev = device(state["x_prev"])

    def _right_hand_sides(self):
        xp = self.xp
        n = self.X.shape[0]
        fresh = self._probes is None or self.n_calls % self.probe_refresh == 0
        if fresh:
            self._probes = rademacher_probes(self.rng, n, self.n_probes, xp)
        B = xp.concatenate([xp.asarray(self.y)[:, None], self._probes], axis=1)
        x0 = None
        if self.warm_start and self._x_prev is not None:
            x0 = self._x_prev.copy()
            if fresh:
                # Solutions for old probes are no start for new ones.
                x0[:, 1:] = 0.0
        return B, x0

    def log_likelihood_gradient(self, params):
        """Stochastic gradient of the log marginal likelihood alone.

        Parameters
        ----------
        params : ndarray of shape (n_params,)

        Returns
        -------
        ndarray of shape (n_params,)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import StochasticMarginalGradient
        >>> X = np.linspace(0, 1, 10)[:, None]
        >>> grad = StochasticMarginalGradient(KernelAdapter(RBF()), X, np.sin(X[:, 0]),
        ...                                   None, rng=np.random.default_rng(0))
        >>> grad.log_likelihood_gradient(np.array([0.0, -2.0])).shape
        (2,)
        """
        xp = self.xp
        theta, log_noise = self.split(params)
        noise = float(np.exp(log_noise))
        matvec, _ = kernel_operator(
            self.adapter, theta, self.X, noise, storage=self.storage, xp=xp
        )
        B, x0 = self._right_hand_sides()
        precond = kernel_preconditioner(
            self.adapter, theta, self.X, noise, self.preconditioner_rank, xp=xp
        )
        solve = self._solve_ulisse if self.solver == "ulisse" else self._solve_cg
        a1, a2, S = solve(matvec, B, x0, precond)
        U = xp.concatenate([0.5 * a1[:, None], S / (-2.0 * self.n_probes)], axis=1)
        V = xp.concatenate([a2[:, None], self._probes], axis=1)
        trace_uv = float(xp.sum(U * V))
        grad = np.empty(self.n_params)
        if xp is not np and self.adapter.is_fast:
            # contracted where the solutions live (kernels/_array_forms)
            kernel_grad = array_lowrank_grad_contract(
                self.adapter, theta, self.X, U, V, xp
            )
        else:
            kernel_grad = lowrank_grad_contract(
                self.adapter, theta, self.X, to_host(U), to_host(V)
            )
        grad[: self.n_kernel_params] = kernel_grad
        if self.log_noise_variance is None:
            grad[-1] = noise * trace_uv
        return grad

    def _solve_ulisse(self, matvec, B, x0, precond):
        """Two stopping draws of ``K^-1 y`` and one of each probe solve."""
        copies = np.ones(B.shape[1], dtype=int)
        copies[0] = 2
        res = ulisse_solve(
            matvec,
            B,
            copies=copies,
            x0=x0,
            q=self.q,
            beta=self.beta,
            max_random_steps=self.max_random_steps,
            tol=self.tol,
            max_iter=self.max_iter,
            rng=self.rng,
            xp=self.xp,
            warn=False,
            precondition=precond,
        )
        self._record(res.x, res.n_iter, res.residual)
        self._record_unfinished(res.unfinished, res.unfinished_residual)
        sol = res.estimates
        return sol[:, 0], sol[:, 1], sol[:, 2:]

    def _solve_cg(self, matvec, B, x0, precond):
        """Solves run to ``tol``: the same ``K^-1 y`` serves as both draws."""
        budget = self.max_iter or default_budget(B.shape[0])
        res = batched_cg(
            matvec,
            B,
            x0,
            tol=self.tol,
            max_iter=budget,
            xp=self.xp,
            warn=False,
            precondition=precond,
        )
        self._record(res.x, res.n_iter, res.residual)
        unfinished = int(np.sum(~res.converged))
        worst = float(np.max(res.residual)) if unfinished else 0.0
        self._record_unfinished(unfinished, worst)
        return res.x[:, 0], res.x[:, 0], res.x[:, 1:]

    def _record(self, x, n_iter, residual):
        # the plain CG iterate is the next call's warm start
        self._x_prev = x
        self.n_calls += 1
        self.cg_iterations.append(int(n_iter))
        self.max_residual = max(self.max_residual, float(np.max(residual)))

    def _record_unfinished(self, unfinished, worst):
        if unfinished:
            self.budget_exhausted += 1
            self.budget_residual = max(self.budget_residual, worst)

    def __call__(self, params):
        """``(nan, gradient)`` of the log posterior; the value is not computed.

        Parameters
        ----------
        params : ndarray of shape (n_params,)

        Returns
        -------
        value : float
            Always NaN: the method never evaluates the marginal likelihood.
        grad : ndarray of shape (n_params,)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import StochasticMarginalGradient
        >>> X = np.linspace(0, 1, 20)[:, None]
        >>> rng = np.random.default_rng(0)
        >>> target = StochasticMarginalGradient(
        ...     KernelAdapter(RBF()), X, np.sin(X[:, 0]), None, rng=rng
        ... )
        >>> value, grad = target.logp_and_grad(np.array([0.0, np.log(0.1)]))
        >>> bool(np.isnan(value)), grad.shape
        (True, (2,))
        """
        grad = self.log_likelihood_gradient(params)
        if self.prior_set is not None:
            grad = grad + self.prior_set.log_prob(params)[1]
        return float("nan"), grad

    # The name every other target gives its value and gradient; the engines
    # that take this target (SGLD) read the gradient only.
    logp_and_grad = __call__


class StochasticTraceTarget:
    """Exact log posterior with a stochastic-trace gradient, from one Cholesky.

    The gradient of the log marginal likelihood is
    ``1/2 a' dK_j a - 1/2 tr(K^-1 dK_j)`` with ``a = K^-1 y``. One factor
    ``K = L L'`` gives the value and ``a`` exactly; the trace is estimated
    by Hutchinson's ``(1/S) sum_s (K^-1 r_s)' dK_j r_s`` with Rademacher
    probes ``r_s``, solved with the same factor. ``E[r r'] = I`` makes each
    term's expectation ``tr(K^-1 dK_j)``: the gradient is unbiased, the
    value exact, and the solves exact (no early stopping to randomise).
    Both terms are one contraction of the rank ``S + 1`` weight
    ``W = 1/2 a a' - 1/(2 S) sum_s (K^-1 r_s) r_s'`` against the kernel's
    derivatives, never formed as an ``n x n`` matrix. The prior's exact
    gradient is added. Probes are drawn afresh at every call, so the noise
    of successive gradients is independent.

    Parameters
    ----------
    adapter : KernelAdapter
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    prior_set : PriorSet or None
    log_noise_variance : float or None
        Fixed log noise variance; ``None`` makes it the last parameter, as in
        :class:`~skgp_bayes.targets.ExactMarginalTarget`.
    rng : numpy.random.Generator
        Source of the probes.
    n_probes : int, default=4
        ``S``; the trace term's variance falls as ``1 / S``.

    Attributes
    ----------
    n_params : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget, StochasticTraceTarget
    >>> X = np.linspace(0, 1, 20)[:, None]
    >>> args = (KernelAdapter(RBF()), X, np.sin(X[:, 0]), None)
    >>> noisy = StochasticTraceTarget(*args, rng=np.random.default_rng(0))
    >>> params = np.array([0.0, np.log(0.1)])
    >>> value, grad = noisy.logp_and_grad(params)
    >>> bool(np.isclose(value, ExactMarginalTarget(*args).logp_and_grad(params)[0]))
    True
    """

    def __init__(
        self, adapter, X, y, prior_set, log_noise_variance=None, *, rng, n_probes=4
    ):
        self._exact = ExactMarginalTarget(adapter, X, y, None, log_noise_variance)
        self.adapter = adapter
        self.X = X
        self.y = y
        self.prior_set = prior_set
        self.log_noise_variance = log_noise_variance
        self.rng = rng
        self.n_probes = int(n_probes)
        self.n_kernel_params = adapter.n_params
        self.n_params = self._exact.n_params

    @property
    def max_jitter(self):
        """Largest jitter the factorisations needed.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import StochasticTraceTarget
        >>> X = np.linspace(0, 1, 5)[:, None]
        >>> t = StochasticTraceTarget(KernelAdapter(RBF()), X, X[:, 0], None,
        ...                           rng=np.random.default_rng(0))
        >>> t.max_jitter
        0.0
        """
        return self._exact.max_jitter

    def split(self, params):
        """Kernel theta and log noise variance from a parameter vector.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import StochasticTraceTarget
        >>> X = np.zeros((3, 1))
        >>> t = StochasticTraceTarget(KernelAdapter(RBF()), X, np.ones(3), None,
        ...                           rng=np.random.default_rng(0))
        >>> theta, log_noise = t.split(np.array([0.5, -2.0]))
        >>> theta.tolist(), log_noise
        ([0.5], -2.0)
        """
        return self._exact.split(params)

    def logp_and_grad(self, params):
        """Exact log posterior (up to a constant) and an unbiased gradient.

        Parameters
        ----------
        params : ndarray of shape (n_params,)

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)

        Raises
        ------
        NotPSDError
            When the kernel matrix is not positive definite even with
            jitter.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import StochasticTraceTarget
        >>> X = np.linspace(0, 1, 5)[:, None]
        >>> t = StochasticTraceTarget(KernelAdapter(RBF()), X, np.sin(X[:, 0]),
        ...                           None, rng=np.random.default_rng(0))
        >>> value, grad = t.logp_and_grad(np.log([1.0, 0.1]))
        >>> grad.shape
        (2,)
        """
        n = self.y.shape[0]
        probes = rademacher_probes(self.rng, n, self.n_probes)
        if self._exact._rbf and self.y.ndim == 1:
            ok, value, grad = rbf_stochastic_trace(
                *self._exact._rbf_arguments(params)[:5], probes, STOCHASTIC_ROUTINES
            )
            if ok:  # else K needs jitter: the general path adds it
                return self._add_prior(params, value, grad)
        theta, log_noise = self.split(params)
        L, alpha = self._exact.factor(params)
        value = (
            -0.5 * float(self.y @ alpha)
            - float(np.sum(np.log(np.diag(L))))
            - n * _HALF_LOG_2PI
        )
        solved = cho_solve(L, probes)
        U = np.column_stack([0.5 * alpha, solved / (-2.0 * self.n_probes)])
        V = np.column_stack([alpha, probes])
        grad = np.empty(self.n_params)
        grad[: self.n_kernel_params] = lowrank_grad_contract(
            self.adapter, theta, self.X, U, V
        )
        if self.log_noise_variance is None:
            grad[-1] = np.exp(log_noise) * float(np.sum(U * V))
        return self._add_prior(params, value, grad)

    def _add_prior(self, params, value, grad):
        if self.prior_set is not None:
            prior_value, prior_grad = self.prior_set.log_prob(params)
            value += prior_value
            grad = grad + prior_grad
        return value, grad
