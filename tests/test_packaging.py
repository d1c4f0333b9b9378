"""pyproject.toml lists every package of decoder/: a package left out is missing from a wheel install."""
import os

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_package_is_listed_in_pyproject():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    found = {"decoder._ext"}
    for directory, subdirectories, files in os.walk(os.path.join(REPO, "decoder")):
        subdirectories[:] = [d for d in subdirectories if d not in ("__pycache__", "_ext")]
        if "__init__.py" in files:
            found.add(os.path.relpath(directory, REPO).replace(os.sep, "."))
    assert found == listed
