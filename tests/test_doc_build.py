"""The Sphinx site builds with warnings as errors, gallery included.

sphinx-gallery runs every ``examples/plot_*.py`` script (about a minute for
all of them on two cores), so a broken example fails the build.
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
