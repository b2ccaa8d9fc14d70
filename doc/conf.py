"""Sphinx configuration for the skgp_bayes documentation."""

import os
import shutil
import sys

sys.path.insert(0, os.path.abspath(".."))

# autosummary writes a stub per name of api.rst into generated/ (ignored by
# git) and never removes one: a stub left from a name since removed fails
# the -W build in a working tree that built the docs before, so every build
# starts from none.
shutil.rmtree(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "generated"),
    ignore_errors=True,
)

import skgp_bayes  # noqa: E402

project = "skgp_bayes"
author = "skgp_bayes developers"
copyright = "2026, skgp_bayes developers"
release = skgp_bayes.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

autosummary_generate = True
# Methods that scikit-learn's mixins add (metadata routing, parameter access,
# the default score) are documented there; their docstrings refer to
# scikit-learn's own glossary.
autodoc_default_options = {
    "members": True,
    "inherited-members": False,
    "exclude-members": ",".join(
        [
            "get_metadata_routing",
            "get_params",
            "set_params",
            "set_fit_request",
            "set_partial_fit_request",
            "set_predict_request",
            "set_predict_proba_request",
            "set_predict_log_proba_request",
            "set_decision_function_request",
            "set_score_request",
            "score",
        ]
    ),
}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
}

templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb"]
html_theme = "alabaster"
html_static_path = []
