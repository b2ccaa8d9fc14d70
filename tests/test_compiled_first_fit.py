"""What a user's first fit compiles: only the paths its data take, and no
array broadcasting where a loop copies (see doc/architecture.rst)."""

import ast
import os
import pathlib
import subprocess
import sys

import skgp_bayes

PACKAGE = pathlib.Path(skgp_bayes.__file__).parent


def _is_njit(decorator):
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name in ("njit", "jit")


def _slices(subscript):
    index = subscript.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(part, ast.Slice) for part in parts)


def _is_number(value):
    if isinstance(value, ast.UnaryOp):
        value = value.operand
    return isinstance(value, ast.Constant)


def test_compiled_code_copies_arrays_by_loops():
    # ``out[:] = K`` compiles Numba's broadcasting and shape-error messages
    # (2-3 s of a first fit for each dimension); copy_vector / copy_matrix
    # are the loops. Filling a slice with a number compiles none of it.
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            if not any(_is_njit(d) for d in function.decorator_list):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Assign):
                    targets = node.targets
                elif isinstance(node, ast.AugAssign):
                    targets = [node.target]
                else:
                    continue
                for target in targets:
                    if (
                        isinstance(target, ast.Subscript)
                        and _slices(target)
                        and not _is_number(node.value)
                    ):
                        where = path.relative_to(PACKAGE.parent)
                        found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "slice assignments in compiled code:\n" + "\n".join(found)


def test_the_exact_target_compiles_only_the_path_its_size_takes():
    # In a fresh process (the compiled code comes from the disk cache, which
    # registers a signature as compiling does): 40 rows take the LAPACK
    # path only, 10 rows the small path only.
    script = """
import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.targets import ExactMarginalTarget
from skgp_bayes.targets import _exact_numba as compiled
n = int({n})
X = np.linspace(0, 1, n)[:, None]
adapter = KernelAdapter(ConstantKernel() * RBF())
target = ExactMarginalTarget(adapter, X, np.sin(6 * X[:, 0]), None)
target.logp_and_grad(np.full(target.n_params, -0.5))
print(len(compiled.rbf_value_and_grad_small.signatures),
      len(compiled.rbf_value_and_grad_lapack.signatures))
"""
    counts = {}
    for n in (40, 10):
        done = subprocess.run(
            [sys.executable, "-c", script.format(n=n)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
            check=True,
        )
        counts[n] = done.stdout.split()
    assert counts[40] == ["0", "1"]
    assert counts[10] == ["1", "0"]
