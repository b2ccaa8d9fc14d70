"""The Sphinx site builds with warnings as errors.

The gallery examples are not executed here (``plot_gallery=0``): each one
runs for up to a minute, and they are run by hand before a release. Every
API page, docstring and cross-reference is still checked.
"""

import pathlib
import subprocess
import sys

import pytest

DOC = pathlib.Path(__file__).resolve().parents[1] / "doc"


@pytest.mark.slow
def test_sphinx_site_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("sphinx_gallery")
    if not DOC.is_dir():
        pytest.skip("no doc/ folder next to the tests (installed package)")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            "-D",
            "plot_gallery=0",
            "-d",
            str(tmp_path / "doctrees"),
            str(DOC),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert (tmp_path / "html" / "index.html").is_file()
