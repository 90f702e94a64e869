"""Where the suite's own files are: the pytest rootdir with the plugin (fixtures/), the checks (tests_*/)
and the simulated cluster (sim/).

From a clone (bin/setup installs it editable) they sit beside the package; from a wheel (`pip install .`,
`pipx install .`) they ship inside it, in gb10check/_suite/ (pyproject.toml maps them there).
"""

from __future__ import annotations

from pathlib import Path

from gb10check.errors import SuiteFilesError

__all__ = ["installed", "root"]


_PACKAGE = Path(__file__).resolve().parent
_INSIDE = _PACKAGE / "_suite"  # a wheel's
_BESIDE = _PACKAGE.parent  # a clone's


def _is_suite(path: Path) -> bool:
    return (path / "conftest.py").is_file() and (path / "pytest.ini").is_file() and (path / "fixtures").is_dir()


def root() -> Path:
    """The suite's rootdir, inside the package (a wheel) or beside it (a clone)."""
    for path in (_INSIDE, _BESIDE):
        if _is_suite(path):
            return path
    raise SuiteFilesError(
        f"gb10check: the suite's checks are neither inside the package ({_INSIDE}) nor beside it ({_BESIDE}): "
        "reinstall it (pip install . from a clone, or bin/setup in the clone)"
    )


def installed() -> bool:
    """From a wheel: the suite's files are the package's, not a clone's."""
    return _is_suite(_INSIDE)
