"""The layers import downwards only, and each piece has one home.

Engines know nothing about Gaussian processes; targets know kernels,
likelihoods and linear algebra but no engine or estimator; nothing below the
estimators imports the package itself. Read from the source (every
``import`` statement, including those inside functions), so a violation
fails here before it tangles the house.
"""

import ast
import inspect
import pathlib
import textwrap

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "skgp_bayes"

# _vector_exp is a compiled arithmetic primitive (exp, log1p) that kernels,
# likelihoods and targets all inline; it imports nothing from the package.
# _backend picks the array module (NumPy or CuPy); it imports only exceptions.
# _ranks_numba is the compiled tie pass of the diagnostics' ranks; it imports
# nothing from the package. _subnormals sets the processor's flush-to-zero
# mode for the public methods; it imports nothing from the package.
FOUNDATION = {
    "_backend",
    "_config",
    "_warnings",
    "exceptions",
    "_threads",
    "_numba_threads",
    "_version",
    "_vector_exp",
    "_ranks_numba",
    "_subnormals",
    "_thread_pool",
}
# Each lower unit (a subpackage or a foundation module) and what it may import
# from the package besides the foundation.
ALLOWED = {
    "_backend": set(),
    "_config": set(),
    "_version": set(),
    "_vector_exp": set(),
    "_ranks_numba": set(),
    "_subnormals": set(),
    "_thread_pool": set(),
    "exceptions": set(),
    "_warnings": set(),
    "_threads": set(),
    "_numba_threads": set(),
    "diagnostics": set(),
    "priors": set(),
    "kernels": set(),
    "likelihoods": set(),
    "datasets": set(),
    "linalg": set(),
    "inference": set(),
    "sampling": {"kernels", "linalg"},
    "targets": {"kernels", "likelihoods", "linalg", "priors"},
    "predictive": {"kernels", "likelihoods", "linalg", "priors", "sampling", "targets"},
}
# The estimator modules: parameters, wiring, predict and sample methods; an
# estimator split into a package counts with every module in it, and the
# mixins that hold part of one estimator's methods count with it.
ESTIMATOR_UNITS = [
    "stein",
    "stein_classifier",
    "_stein_classifier_latent",
    "sgld",
    "_sgld_chains",
    "selective",
    "variational_mcmc",
]
ESTIMATORS = sorted(
    str(path.relative_to(PACKAGE).with_suffix(""))
    for unit in ESTIMATOR_UNITS
    for path in (
        sorted((PACKAGE / unit).glob("*.py"))
        if (PACKAGE / unit).is_dir()
        else [PACKAGE / f"{unit}.py"]
    )
)
# Numerical calls that belong in targets/, linalg/, predictive/ or inference/.
NUMERICS = {"minimize", "einsum", "solve_triangular", "cho_solve"}


# Upward imports allowed as a module-level ``__getattr__`` only, resolved on
# access: old import paths kept for pickles of objects that moved up a layer.
PICKLE_SHIMS = {
    "linalg/ulisse.py": {"skgp_bayes.targets.stochastic"},
}


def _getattr_lines(path):
    """Line numbers inside the module-level ``__getattr__``, if any."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            return set(range(node.lineno, node.end_lineno + 1))
    return set()


def _unit(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "skgp_bayes"


def _imports(path):
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
        package = parts
    else:
        package = parts[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "skgp_bayes":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "skgp_bayes":
                continue
            if node.module is None or target == "skgp_bayes":
                # ``from . import x`` names submodules (or the package).
                for alias in node.names:
                    yield node.lineno, f"{target}.{alias.name}"
            else:
                yield node.lineno, target


def _lower_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        unit = _unit(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        if unit.removesuffix(".py") in ALLOWED:
            yield path, unit


@pytest.mark.parametrize(
    "path,unit",
    list(_lower_modules()),
    ids=[str(p.relative_to(PACKAGE)) for p, _ in _lower_modules()],
)
def test_lower_layers_import_downwards_only(path, unit):
    allowed = ALLOWED[unit] | FOUNDATION | {unit}
    if unit in FOUNDATION:
        allowed = FOUNDATION | {unit}
    shims = PICKLE_SHIMS.get(str(path.relative_to(PACKAGE)), set())
    lazy = _getattr_lines(path)
    bad = [
        f"line {line}: {target}"
        for line, target in _imports(path)
        if _unit(target) not in allowed and not (target in shims and line in lazy)
    ]
    assert not bad, f"{path.name} ({unit}) imports from above its layer: {bad}"


def test_nothing_imports_the_package_from_below():
    """``__init__`` imports the estimators; a module importing the package
    back forces import-order workarounds (``noqa: E402``)."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "__init__.py" and path.parent == PACKAGE:
            continue
        for line, target in _imports(path):
            if target in ("skgp_bayes", "skgp_bayes.__version__"):
                offenders.append(f"{path.relative_to(PACKAGE)}:{line}")
    assert not offenders


def _parse(path):
    return ast.parse(path.read_text(encoding="utf-8"))


def _private_imports(path):
    """``from module import _name`` where ``_name`` is not a submodule."""
    package = path.parent
    for node in ast.walk(_parse(path)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package
            for _ in range(node.level - 1):
                base = base.parent
        elif (node.module or "").split(".")[0] == "skgp_bayes":
            base = PACKAGE.parent
        else:
            continue
        home = base.joinpath(*(node.module or "").split(".")) if node.module else base
        for alias in node.names:
            name = alias.name
            if not name.startswith("_") or name.startswith("__"):
                continue
            if (home / f"{name}.py").exists() or (home / name).is_dir():
                continue  # a private module, not a private name
            yield f"{path.relative_to(PACKAGE)}:{node.lineno}: {name}"


def test_no_private_names_imported_across_modules():
    """A helper used by another module is public in its home (issue #16,
    done-when 1); private names stay inside the module that defines them."""
    offenders = [
        hit for path in PACKAGE.rglob("*.py") for hit in _private_imports(path)
    ]
    assert not offenders, offenders


def _numeric_calls(path):
    for node in ast.walk(_parse(path)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in NUMERICS:
            yield f"line {node.lineno}: {name}("
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "linalg"
            and getattr(func.value.value, "id", "") == "np"
        ):
            yield f"line {node.lineno}: np.linalg.{func.attr}("


@pytest.mark.parametrize(
    "module",
    ESTIMATORS,
)
def test_estimator_modules_hold_no_numerics(module):
    """Optimisers, factorisations and tensor algebra live below the
    estimators (issue #16, done-when 2)."""
    calls = list(_numeric_calls(PACKAGE / f"{module}.py"))
    assert not calls, f"{module}.py: {calls}"


def test_lbfgs_is_named_once():
    """One optimiser loop: the method string appears in one place."""
    places = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(_parse(path))
        if isinstance(node, ast.Constant) and node.value == "L-BFGS-B"
    ]
    assert places == ["inference/optimize.py:" + places[0].split(":")[1]], places


def test_package_init_needs_no_noqa():
    """Imports point down, so ``__init__`` needs no import-order waiver
    (issue #16, done-when 4)."""
    assert "noqa" not in (PACKAGE / "__init__.py").read_text(encoding="utf-8")


def _definitions(name):
    return [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(_parse(path))
        if isinstance(node, ast.FunctionDef) and node.name == name
    ]


@pytest.mark.parametrize("name", ["_validate_query", "_log", "default_kernel"])
def test_shared_plumbing_is_defined_once(name):
    """The query check, the logger and the default kernel each have one
    definition (issue #16, done-when 5)."""
    assert len(_definitions(name)) == 1, _definitions(name)


def test_default_kernel_is_applied_in_one_place():
    """Estimators take the default kernel through ``_base``, not each by
    its own rule."""
    callers = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(_parse(path))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", "") == "default_kernel"
    )
    assert callers == ["_base.py"], callers


@pytest.mark.parametrize("module", ESTIMATORS)
def test_estimator_modules_print_through_the_logger(module):
    """Progress lines go through ``_log`` or ``Printer``, one format."""
    prints = [
        node.lineno
        for node in ast.walk(_parse(PACKAGE / f"{module}.py"))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print"
    ]
    assert not prints, f"{module}.py prints at lines {prints}"


def _classes(folder):
    for path in sorted((PACKAGE / folder).glob("*.py")):
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.ClassDef):
                yield path, node


def test_every_draws_class_lives_in_predictive():
    """The predictive is one axis of the design, with one home (issue #16,
    done-when 3)."""
    elsewhere = [
        f"{path.relative_to(PACKAGE)}: {node.name}"
        for path in PACKAGE.rglob("*.py")
        if path.parent.name != "predictive"
        for node in ast.walk(_parse(path))
        if isinstance(node, ast.ClassDef) and node.name.endswith("Draws")
    ]
    assert not elsewhere, elsewhere


# Classes in targets/ with a value-and-gradient method that engines do not
# climb: the selection prior's divergence (a term of the selective
# objective) and one Laplace problem inside LaplaceSurrogate.
NOT_TARGETS = {"BernoulliPointProcess", "BinaryLaplaceProblem"}


def test_every_target_names_value_and_gradient_logp_and_grad():
    """One method name for value and gradient (issue #16, done-when 3)."""
    offenders = []
    for path, node in _classes("targets"):
        methods = {
            item.name for item in node.body if isinstance(item, ast.FunctionDef)
        } | {
            target.id
            for item in node.body
            if isinstance(item, ast.Assign)
            for target in item.targets
            if isinstance(target, ast.Name)
        }
        grads = {name for name in methods if name.endswith("_and_grad")}
        if grads and node.name not in NOT_TARGETS and "logp_and_grad" not in grads:
            offenders.append(f"{path.name}: {node.name} has {sorted(grads)}")
    assert not offenders, offenders


# Modules allowed over MAX_MODULE_LINES, each with its reason beside it
# (none today).
LONG_MODULES = {}
MAX_MODULE_LINES = 800


def test_no_module_is_over_800_lines():
    """A module a reader can hold in mind (issue #16, done-when 7)."""
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in sorted(PACKAGE.rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert set(long) <= set(LONG_MODULES), long


MAX_FUNCTION_LINES = 80
LONG_REASON = "# Long because"


def _functions(node, prefix):
    """``(qualified name, node)`` of every function under ``node``, nested too."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}.{child.name}"
            if not isinstance(child, ast.ClassDef):
                yield name, child
            yield from _functions(child, name)
        else:
            yield from _functions(child, prefix)


def _long_functions():
    """Qualified names of the functions over the limit without a reason."""
    long = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        for name, node in _functions(_parse(path), module):
            n_lines = node.end_lineno - node.lineno + 1
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            above = lines[first - 2].lstrip() if first >= 2 else ""
            if n_lines > MAX_FUNCTION_LINES and not above.startswith(LONG_REASON):
                long[name] = n_lines
    return long


def test_no_function_is_over_80_lines_without_a_reason():
    """Functions a reader can hold in mind, or a ``# Long because`` line
    above the ``def`` saying why not (issue #16, done-when 7)."""
    unexplained = _long_functions()
    assert not unexplained, unexplained


MAX_ESTIMATOR_CODE_LINES = 500


def _code_lines(cls):
    """Non-blank lines of a class that are neither comments nor docstrings."""
    source = textwrap.dedent(inspect.getsource(cls))
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    return sum(
        1
        for number, line in enumerate(source.splitlines(), 1)
        if line.strip()
        and not line.strip().startswith("#")
        and number not in docstrings
    )


def test_estimator_classes_stay_small():
    """An estimator class with the mixins only it uses: at most 500 code lines.

    Shared plumbing (bases used by several estimators) is counted once, in
    its own right, by the module-size rule; a mixin that serves one
    estimator is part of that estimator.
    """
    import skgp_bayes

    estimators = [getattr(skgp_bayes, name) for name in skgp_bayes.__all__]
    estimators = [e for e in estimators if isinstance(e, type) and hasattr(e, "fit")]
    assert len(estimators) == 7
    users = {}
    for est in estimators:
        for cls in est.__mro__:
            if cls.__module__.startswith("skgp_bayes"):
                users[cls] = users.get(cls, 0) + 1
    sizes = {
        est.__name__: sum(
            _code_lines(cls) for cls in est.__mro__ if users.get(cls) == 1
        )
        for est in estimators
    }
    too_big = {name: n for name, n in sizes.items() if n > MAX_ESTIMATOR_CODE_LINES}
    assert not too_big, too_big
