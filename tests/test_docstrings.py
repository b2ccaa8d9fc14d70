"""Every public class, function and method documents itself with an example.

The doctests themselves run through pytest's ``--doctest-modules`` (see
``pyproject.toml``); this module checks that there is one to run.
"""

import importlib
import inspect
import pkgutil

import pytest

import skgp_bayes


def _public_modules():
    names = ["skgp_bayes"]
    for info in pkgutil.walk_packages(skgp_bayes.__path__, "skgp_bayes."):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") for p in parts):
            continue
        names.append(info.name)
    return names


def _public_objects():
    seen = {}
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            # a Numba-compiled function is checked as its Python function
            obj = getattr(module, name, None)
            obj = getattr(obj, "py_func", obj)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if not getattr(obj, "__module__", "").startswith("skgp_bayes"):
                continue  # re-exports such as sklearn's ConvergenceWarning
            qualname = f"{obj.__module__}.{obj.__qualname__}"
            seen[qualname] = obj
            if inspect.isclass(obj):
                # methods from the library's own mixins count as the class's
                own = [k for k in obj.__mro__ if k.__module__.startswith("skgp_bayes")]
                for klass in own:
                    for attr, value in vars(klass).items():
                        if attr.startswith("_") or f"{qualname}.{attr}" in seen:
                            continue
                        if inspect.isfunction(value) or isinstance(value, property):
                            seen[f"{qualname}.{attr}"] = getattr(obj, attr)
    return sorted(seen.items())


PUBLIC = _public_objects()


def test_public_api_is_found():
    names = [name for name, _ in PUBLIC]
    assert "skgp_bayes.stein.SteinGPRegressor" in names
    assert "skgp_bayes.stein.SteinGPRegressor.predict" in names
    assert len(names) > 50


@pytest.mark.parametrize("name,obj", PUBLIC, ids=[name for name, _ in PUBLIC])
def test_docstring_has_examples(name, obj):
    doc = inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    head, _, examples = doc.partition("Examples\n--------\n")
    assert examples, f"{name} has no Examples section"
    assert ">>>" in examples, f"{name}'s Examples section has no example"
