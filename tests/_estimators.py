"""Every estimator of the package, and its cheapest fitting configuration.

Tests that run over all estimators take them from here, so that a new
estimator is covered by adding one line to ``CHEAP``.
"""

from skgp_bayes import (
    SelectiveSVGP,
    SelectiveSVGPClassifier,
    SGLDGPRegressor,
    SteinGPClassifier,
    SteinGPRegressor,
    VariationalMCMCClassifier,
    VariationalMCMCRegressor,
)

_VMCMC = dict(
    n_inducing=4,
    n_chains=1,
    n_warmup=10,
    n_samples=5,
    max_samples=5,
    max_leapfrog=3,
    random_state=0,
)
_SELECTIVE = dict(
    n_candidates=6, n_pre_iter=5, n_select_iter=5, n_post_iter=5, random_state=0
)

# One line per estimator: the cheapest settings that still fit.
CHEAP = {
    "SteinGPRegressor": lambda: SteinGPRegressor(
        n_particles=2, max_iter=5, n_restarts=0, random_state=0
    ),
    "SteinGPClassifier": lambda: SteinGPClassifier(
        n_particles=2, max_iter=5, random_state=0
    ),
    "SGLDGPRegressor": lambda: SGLDGPRegressor(
        n_iter=10, n_chains=1, n_predict_draws=2, random_state=0
    ),
    "VariationalMCMCRegressor": lambda: VariationalMCMCRegressor(
        svgp_max_iter=10, **_VMCMC
    ),
    "VariationalMCMCClassifier": lambda: VariationalMCMCClassifier(
        svgp_max_iter=10, **_VMCMC
    ),
    "SelectiveSVGP": lambda: SelectiveSVGP(**_SELECTIVE),
    "SelectiveSVGPClassifier": lambda: SelectiveSVGPClassifier(**_SELECTIVE),
}

ESTIMATOR_CLASSES = [type(make()) for make in CHEAP.values()]


def short_sgld(backend, X, y, solver, **params):
    """A short Langevin fit on ``backend`` with the given gradient solver."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    options = dict(n_iter=40, burn_in=20, n_chains=2, n_predict_draws=4)
    return SGLDGPRegressor(
        ConstantKernel() * RBF([1.0] * X.shape[1]),
        solver=solver,
        backend=backend,
        random_state=0,
        **{**options, **params},
    ).fit(X, y)


def cg_predicting_sgld(backend, X, y):
    """A short Langevin fit whose solves (fit and predict) all run by CG."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    return SGLDGPRegressor(
        ConstantKernel() * RBF([1.0] * X.shape[1]),
        n_iter=30,
        burn_in=10,
        thin=2,
        n_chains=2,
        n_predict_draws=3,
        solver="ulisse",
        predict_solver="cg",
        backend=backend,
        random_state=0,
    ).fit(X, y)
