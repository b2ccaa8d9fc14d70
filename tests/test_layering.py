"""The layers import downwards only.

Engines know nothing about Gaussian processes; targets know kernels,
likelihoods and linear algebra but no engine or estimator; nothing below the
estimators imports the package itself. Read from the source (every
``import`` statement, including those inside functions), so a violation
fails here before it tangles the house.
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "skgp_bayes"

FOUNDATION = {"_config", "_warnings", "exceptions", "_threads", "_version"}
# Each lower unit (a subpackage or a foundation module) and what it may import
# from the package besides the foundation.
ALLOWED = {
    "_config": set(),
    "_version": set(),
    "exceptions": set(),
    "_warnings": set(),
    "_threads": set(),
    "diagnostics": set(),
    "priors": set(),
    "kernels": set(),
    "likelihoods": set(),
    "datasets": set(),
    "linalg": set(),
    "inference": set(),
    "sampling": {"kernels", "linalg"},
    "targets": {"kernels", "likelihoods", "linalg", "priors"},
}


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
