"""Tests of the kernel adapter: fast path against scikit-learn, hand-derived
gradients against finite differences, and the generic fallback against the
fast path."""

import itertools
import pickle

import numba
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    Exponentiation,
    ExpSineSquared,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)

from skgp_bayes.kernels import (
    KernelAdapter,
    _adapter,
    _generic,
    force_generic,
    lower_kernel,
)

BASES = ["rbf", 0.5, 1.5, 2.5]
D = 3


def make_kernel(base, ard, constant=None, white=None, fixed=None):
    """Build one recognised kernel form.

    ``constant`` and ``white`` are None, "left" or "right"; ``fixed`` names a
    hyperparameter ("length_scale", "constant", "noise") to fix.
    """
    ls = np.array([0.7, 1.3, 2.1]) if ard else 1.1
    ls_bounds = "fixed" if fixed == "length_scale" else (1e-5, 1e5)
    if base == "rbf":
        k = RBF(ls, length_scale_bounds=ls_bounds)
    else:
        k = Matern(ls, length_scale_bounds=ls_bounds, nu=base)
    if constant is not None:
        c = ConstantKernel(
            1.7, constant_value_bounds="fixed" if fixed == "constant" else (1e-5, 1e5)
        )
        k = c * k if constant == "left" else k * c
    if white is not None:
        w = WhiteKernel(
            0.3, noise_level_bounds="fixed" if fixed == "noise" else (1e-5, 1e5)
        )
        k = k + w if white == "right" else w + k
    return k


def _inputs(seed=0, n=9, m=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    X[5] = X[2]  # a repeated point: r = 0 off the diagonal
    Y = rng.normal(size=(m, D))
    Y[0] = X[0]  # a point shared by X and Y
    return X, Y


def _theta(kernel, seed=1):
    # Move away from the template so that a wrong theta mapping shows.
    rng = np.random.default_rng(seed)
    return kernel.theta + 0.3 * rng.normal(size=kernel.theta.size)


def _sym(n, seed=2):
    A = np.random.default_rng(seed).normal(size=(n, n))
    return A + A.T


def _assert_contraction(g, W, G):
    """g equals einsum(W, G) to 1e-10 relative to the contraction's size."""
    ref = np.einsum("ab,abj->j", W, G)
    scale = np.einsum("ab,abj->j", np.abs(W), np.abs(G))
    assert_allclose(g, ref, rtol=1e-10, atol=1e-12 + 1e-10 * scale.max(initial=0))


FORMS = list(
    itertools.product(BASES, [False, True], [None, "left", "right"], [None, "left"])
) + [(b, ard, "right", "right") for b in BASES for ard in (False, True)]


@pytest.mark.parametrize("base, ard, constant, white", FORMS)
def test_fast_path_matches_sklearn(base, ard, constant, white):
    kernel = make_kernel(base, ard, constant, white)
    adapter = KernelAdapter(kernel)
    assert adapter.is_fast
    theta = _theta(kernel)
    ref = kernel.clone_with_theta(theta)
    X, Y = _inputs()

    assert_allclose(adapter.gram(theta, X), ref(X), rtol=1e-10, atol=1e-14)
    assert_allclose(adapter.cross(theta, X, Y), ref(X, Y), rtol=1e-10, atol=1e-14)
    assert_allclose(adapter.diag(theta, X), ref.diag(X), rtol=1e-10, atol=1e-14)

    _, G = ref(X, eval_gradient=True)
    W = _sym(X.shape[0])
    _assert_contraction(adapter.grad_contract(theta, X, W), W, G)


@pytest.mark.parametrize("fixed", ["length_scale", "constant", "noise"])
@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("ard", [False, True])
def test_fixed_hyperparameters(base, ard, fixed):
    kernel = make_kernel(base, ard, "left", "right", fixed=fixed)
    adapter = KernelAdapter(kernel)
    assert adapter.is_fast
    n_ls = D if ard else 1
    assert adapter.n_params == {"length_scale": 2, "constant": 1 + n_ls}.get(
        fixed, 1 + n_ls
    )
    theta = _theta(kernel)
    ref = kernel.clone_with_theta(theta)
    X, Y = _inputs()
    assert_allclose(adapter.gram(theta, X), ref(X), rtol=1e-10, atol=1e-14)
    assert_allclose(adapter.cross(theta, X, Y), ref(X, Y), rtol=1e-10, atol=1e-14)
    assert_allclose(adapter.diag(theta, X), ref.diag(X), rtol=1e-10)
    _, G = ref(X, eval_gradient=True)
    W = _sym(X.shape[0])
    _assert_contraction(adapter.grad_contract(theta, X, W), W, G)


def test_all_fixed_has_no_parameters():
    kernel = RBF(1.0, length_scale_bounds="fixed")
    X, _ = _inputs()
    for adapter in (KernelAdapter(kernel), force_generic(kernel)):
        assert adapter.n_params == 0
        theta = np.zeros(0)
        assert adapter.grad_contract(theta, X, _sym(9)).shape == (0,)
        assert adapter.diag_grad(theta, X).shape == (9, 0)
        assert_allclose(adapter.gram(theta, X), kernel(X))


@pytest.mark.parametrize(
    "kernel",
    [
        DotProduct(),
        RationalQuadratic(),
        ExpSineSquared(),
        RBF() + RBF(),
        RBF() * RBF(),
        ConstantKernel() * ConstantKernel() * RBF(),
        ConstantKernel() * (RBF() + WhiteKernel()),
        RBF() + WhiteKernel() + WhiteKernel(),
        WhiteKernel(),
        WhiteKernel() + WhiteKernel(),
        RBF() + ConstantKernel(),
        Matern(nu=1.0),
        Matern(nu=np.inf),
        Exponentiation(RBF(), 2.0),
        type("MyRBF", (RBF,), {})(),
    ],
    ids=repr,
)
def test_lower_kernel_rejects(kernel):
    assert lower_kernel(kernel) is None
    adapter = KernelAdapter(kernel)
    assert not adapter.is_fast
    assert not adapter.supports_input_gradients


def test_names_slices_bounds():
    kernel = ConstantKernel(2.0) * RBF([1.0, 2.0, 3.0]) + WhiteKernel(
        0.1, noise_level_bounds="fixed"
    )
    adapter = KernelAdapter(kernel)
    assert adapter.n_params == 4 == kernel.theta.size
    assert adapter.hyperparameter_names == [
        "k1__k1__constant_value",
        "k1__k2__length_scale",
    ]
    assert adapter.hyperparameter_slices == {
        "k1__k1__constant_value": slice(0, 1),
        "k1__k2__length_scale": slice(1, 4),
    }
    assert adapter.param_names == [
        "k1__k1__constant_value",
        "k1__k2__length_scale[0]",
        "k1__k2__length_scale[1]",
        "k1__k2__length_scale[2]",
    ]
    assert_array_equal(adapter.bounds, kernel.bounds)
    assert adapter.bounds.shape == (4, 2)
    assert repr(adapter.kernel_with_theta(np.zeros(4))) == repr(
        kernel.clone_with_theta(np.zeros(4))
    )


def test_template_is_not_mutated_and_pickles():
    kernel = ConstantKernel(2.0) * Matern([1.0, 2.0, 3.0], nu=1.5) + WhiteKernel()
    before = kernel.theta.copy()
    adapter = KernelAdapter(kernel)
    X, Y = _inputs()
    theta = before + 1.0
    adapter.gram(theta, X)
    adapter.kernel_with_theta(theta)
    force_generic(kernel).gram(theta, X)
    assert_array_equal(kernel.theta, before)
    clone = pickle.loads(pickle.dumps(adapter))
    assert_array_equal(clone.gram(theta, X), adapter.gram(theta, X))


def test_ard_width_mismatch_raises():
    adapter = KernelAdapter(RBF([1.0, 2.0]))
    with pytest.raises(ValueError, match="length scales"):
        adapter.gram(adapter.kernel.theta, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="theta"):
        adapter.gram(np.zeros(3), np.zeros((3, 2)))


# ---------------------------------------------------------------------------
# hand-derived gradients against central finite differences

FD_STEP = 1e-6


def _fd_theta(fun, theta):
    cols = []
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = FD_STEP
        cols.append((fun(theta + e) - fun(theta - e)) / (2 * FD_STEP))
    return np.array(cols)


def _fd_inputs(fun, Z):
    G = np.zeros_like(Z)
    for idx in np.ndindex(*Z.shape):
        e = np.zeros_like(Z)
        e[idx] = FD_STEP
        G[idx] = (fun(Z + e) - fun(Z - e)) / (2 * FD_STEP)
    return G


GRAD_FORMS = [(b, ard) for b in BASES for ard in (False, True)]


@pytest.mark.parametrize("base, ard", GRAD_FORMS)
def test_cross_grad_contract_fd(base, ard):
    kernel = make_kernel(base, ard, "left", "right")
    adapter = KernelAdapter(kernel)
    theta = _theta(kernel)
    rng = np.random.default_rng(3)
    X, Z = rng.normal(size=(7, D)), rng.normal(size=(5, D))
    W = rng.normal(size=(7, 5))
    g = adapter.cross_grad_contract(theta, X, Z, W)
    ref = _fd_theta(lambda t: np.vdot(W, adapter.cross(t, X, Z)), theta)
    assert_allclose(g, ref, rtol=1e-6, atol=1e-8)
    assert g[-1] == 0.0  # WhiteKernel noise


@pytest.mark.parametrize("base, ard", GRAD_FORMS)
def test_diag_grad_fd(base, ard):
    kernel = make_kernel(base, ard, "right", "left")
    adapter = KernelAdapter(kernel)
    theta = _theta(kernel)
    X, _ = _inputs()
    G = adapter.diag_grad(theta, X)
    assert G.shape == (X.shape[0], adapter.n_params)
    ref = _fd_theta(lambda t: adapter.diag(t, X), theta).T
    assert_allclose(G, ref, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("base, ard", GRAD_FORMS)
def test_grad_inputs_cross_fd(base, ard):
    kernel = make_kernel(base, ard, "left", "right")
    adapter = KernelAdapter(kernel)
    theta = _theta(kernel)
    rng = np.random.default_rng(4)
    X, Z = rng.normal(size=(7, D)), rng.normal(size=(5, D))
    W = rng.normal(size=(7, 5))
    G = adapter.grad_inputs_cross(theta, X, Z, W)
    ref = _fd_inputs(lambda z: np.vdot(W, adapter.cross(theta, X, z)), Z)
    assert G.shape == Z.shape
    assert_allclose(G, ref, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("base, ard", GRAD_FORMS)
def test_grad_inputs_gram_fd(base, ard):
    kernel = make_kernel(base, ard, "right", "left")
    adapter = KernelAdapter(kernel)
    theta = _theta(kernel)
    Z = np.random.default_rng(5).normal(size=(6, D))
    W = _sym(6, seed=6)
    G = adapter.grad_inputs_gram(theta, Z, W)
    ref = _fd_inputs(lambda z: np.vdot(W, adapter.gram(theta, z)), Z)
    assert_allclose(G, ref, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("base, ard", GRAD_FORMS)
def test_grad_contract_fd(base, ard):
    # Independent of scikit-learn's own gradient.
    kernel = make_kernel(base, ard, "left", "left")
    adapter = KernelAdapter(kernel)
    theta = _theta(kernel)
    X, _ = _inputs()
    W = _sym(X.shape[0])
    g = adapter.grad_contract(theta, X, W)
    ref = _fd_theta(lambda t: np.vdot(W, adapter.gram(t, X)), theta)
    assert_allclose(g, ref, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------
# matvec, input handling, threads


@pytest.mark.parametrize("base", BASES)
def test_matvec_equals_gram(base):
    kernel = make_kernel(base, True, "left", "right")
    adapter = KernelAdapter(kernel)
    theta = _theta(kernel)
    rng = np.random.default_rng(7)
    # More rows than one column tile and not a multiple of the row block.
    X = rng.normal(size=(601, D))
    V = rng.normal(size=(601, 3))
    K = adapter.gram(theta, X)
    assert_allclose(adapter.matvec(theta, X, V), K @ V, rtol=1e-10, atol=1e-10)
    v = V[:, 0]
    out = adapter.matvec(theta, X, v)
    assert out.shape == (601,)
    assert_allclose(out, K @ v, rtol=1e-10, atol=1e-10)


def test_read_only_and_memmap_inputs(tmp_path):
    kernel = ConstantKernel(2.0) * RBF([1.0, 2.0, 3.0]) + WhiteKernel(0.1)
    theta = kernel.theta
    X, Z = _inputs()
    W = _sym(9)
    Wc = np.random.default_rng(8).normal(size=(9, 6))
    V = np.random.default_rng(9).normal(size=(9, 2))
    expected = {}
    for name, adapter in [
        ("fast", KernelAdapter(kernel)),
        ("gen", force_generic(kernel)),
    ]:
        expected[name] = (
            adapter.gram(theta, X),
            adapter.grad_contract(theta, X, W),
            adapter.matvec(theta, X, V),
            adapter.cross_grad_contract(theta, X, Z, Wc),
        )

    arrays = {"X": X, "Z": Z, "W": W, "Wc": Wc, "V": V}
    ro = {}
    for key, value in arrays.items():
        path = tmp_path / f"{key}.npy"
        np.save(path, value)
        ro[key] = np.load(path, mmap_mode="r")
        assert not ro[key].flags.writeable
    copies = {key: value.copy() for key, value in ro.items()}

    for name, adapter in [
        ("fast", KernelAdapter(kernel)),
        ("gen", force_generic(kernel)),
    ]:
        got = (
            adapter.gram(theta, ro["X"]),
            adapter.grad_contract(theta, ro["X"], ro["W"]),
            adapter.matvec(theta, ro["X"], ro["V"]),
            adapter.cross_grad_contract(theta, ro["X"], ro["Z"], ro["Wc"]),
        )
        for a, b in zip(got, expected[name], strict=True):
            assert_array_equal(a, b)
    fast = KernelAdapter(kernel)
    fast.grad_inputs_cross(theta, ro["X"], ro["Z"], ro["Wc"])
    fast.grad_inputs_gram(theta, ro["X"], ro["W"])
    for key, value in ro.items():
        assert not value.flags.writeable
        assert_array_equal(value, copies[key])


def test_float32_and_fortran_inputs_are_upcast():
    kernel = Matern([1.0, 2.0, 3.0], nu=2.5) + WhiteKernel(0.1)
    adapter = KernelAdapter(kernel)
    X, Y = _inputs()
    X32 = X.astype(np.float32)
    K = adapter.gram(kernel.theta, X32)
    assert K.dtype == np.float64
    assert_array_equal(K, adapter.gram(kernel.theta, X32.astype(np.float64)))
    C = adapter.cross(kernel.theta, np.asfortranarray(X), Y.tolist())
    assert_array_equal(C, adapter.cross(kernel.theta, X, Y))


def test_generic_matches_fast(monkeypatch):
    kernel = ConstantKernel(1.5) * Matern([0.8, 1.2, 2.0], nu=1.5) + WhiteKernel(0.2)
    fast = KernelAdapter(kernel)
    generic = force_generic(kernel)
    assert fast.is_fast and not generic.is_fast
    assert not generic.supports_input_gradients
    theta = _theta(kernel)
    rng = np.random.default_rng(10)
    X = rng.normal(size=(40, D))
    X[7] = X[3]
    Z = rng.normal(size=(11, D))
    W = _sym(40)
    Wc = rng.normal(size=(40, 11))
    V = rng.normal(size=(40, 2))

    def outputs(adapter):
        return [
            adapter.gram(theta, X),
            adapter.cross(theta, X, Z),
            adapter.diag(theta, X),
            adapter.grad_contract(theta, X, W),
            adapter.cross_grad_contract(theta, X, Z, Wc),
            adapter.diag_grad(theta, X),
            adapter.matvec(theta, X, V),
            adapter.matvec(theta, X, V[:, 0]),
        ]

    want = outputs(fast)
    for a, b in zip(outputs(generic), want, strict=True):
        assert_allclose(a, b, rtol=1e-10, atol=1e-12)

    # The blocked generic path (small memory bound, small row blocks).
    monkeypatch.setattr(_adapter, "_GENERIC_BLOCK_BYTES", 8 * 5 * 12**2)
    monkeypatch.setattr(_generic, "_GENERIC_ROWS", 7)
    for a, b in zip(outputs(force_generic(kernel)), want, strict=True):
        assert_allclose(a, b, rtol=1e-10, atol=1e-12)

    with pytest.raises(NotImplementedError):
        generic.grad_inputs_cross(theta, X, Z, Wc)
    with pytest.raises(NotImplementedError):
        generic.grad_inputs_gram(theta, Z, _sym(11))


class _NoGradientRBF(RBF):
    """An RBF whose __call__ offers no gradient (and so is not lowered)."""

    def __call__(self, X, Y=None, eval_gradient=False):
        if eval_gradient:
            raise NotImplementedError
        return super().__call__(X, Y)


def test_generic_finite_difference_fallback():
    kernel = _NoGradientRBF([1.0, 2.0, 0.5]) + WhiteKernel(0.3)
    same = RBF([1.0, 2.0, 0.5]) + WhiteKernel(0.3)
    generic, fast = KernelAdapter(kernel), KernelAdapter(same)
    assert not generic.is_fast and fast.is_fast
    theta = _theta(same)
    rng = np.random.default_rng(11)
    X, Z = rng.normal(size=(8, D)), rng.normal(size=(4, D))
    W, Wc = _sym(8), rng.normal(size=(8, 4))
    assert_allclose(
        generic.grad_contract(theta, X, W), fast.grad_contract(theta, X, W), rtol=1e-7
    )
    assert_allclose(
        generic.cross_grad_contract(theta, X, Z, Wc),
        fast.cross_grad_contract(theta, X, Z, Wc),
        rtol=1e-7,
        atol=1e-9,
    )
    assert_allclose(
        generic.diag_grad(theta, X), fast.diag_grad(theta, X), rtol=1e-7, atol=1e-9
    )


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 threads")
def test_results_do_not_depend_on_thread_count():
    kernel = ConstantKernel(1.5) * RBF([0.8, 1.2, 2.0]) + WhiteKernel(0.2)
    adapter = KernelAdapter(kernel)
    theta = _theta(kernel)
    rng = np.random.default_rng(12)
    X, Z = rng.normal(size=(301, D)), rng.normal(size=(17, D))
    W, Wc, V = _sym(301), rng.normal(size=(301, 17)), rng.normal(size=(301, 2))

    def run():
        return [
            adapter.grad_contract(theta, X, W),
            adapter.cross_grad_contract(theta, X, Z, Wc),
            adapter.gram(theta, X),
            adapter.matvec(theta, X, V),
        ]

    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = run()
        numba.set_num_threads(2)
        two = run()
    finally:
        numba.set_num_threads(previous)
    for a, b in zip(one, two, strict=True):
        assert_array_equal(a, b)
