"""What a wheel install gets: every package of decoder/ listed in pyproject.toml, one version, matplotlib
only as the `plot` extra, no import of the repository's bench/ or models/, and the `cky --version` and
`cky demo --help` commands working outside the repository."""
import ast
import os

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

from installed_fixtures import installed_layout, run_installed

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pyproject() -> dict:
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def decoder_modules():
    """(path, parsed module) of every .py file of decoder/ (not the compiled _ext)."""
    for directory, subdirectories, files in os.walk(os.path.join(REPO, "decoder")):
        subdirectories[:] = [d for d in subdirectories if d not in ("__pycache__", "_ext")]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as f:
                    yield path, ast.parse(f.read(), path)


def imported_modules(tree) -> list[tuple[str, ast.AST]]:
    """Absolute module names of every import statement (module and function level)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [(alias.name, node) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append((node.module, node))
    return names


def test_every_package_is_listed_in_pyproject():
    listed = set(pyproject()["tool"]["setuptools"]["packages"])
    found = {"decoder._ext"}
    for directory, subdirectories, files in os.walk(os.path.join(REPO, "decoder")):
        subdirectories[:] = [d for d in subdirectories if d not in ("__pycache__", "_ext")]
        if "__init__.py" in files:
            found.add(os.path.relpath(directory, REPO).replace(os.sep, "."))
    assert found == listed


def test_the_version_has_one_home():
    project = pyproject()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "decoder.__version__"}


def test_matplotlib_is_the_plot_extra_and_only_plotting_imports_it():
    project = pyproject()["project"]
    assert not any(d.lower().startswith("matplotlib") for d in project["dependencies"])
    assert any(d.startswith("matplotlib") for d in project["optional-dependencies"]["plot"])
    importers = {os.path.relpath(path, REPO) for path, tree in decoder_modules()
                 for name, _ in imported_modules(tree) if name.split(".")[0] == "matplotlib"}
    assert importers == {os.path.join("decoder", "benchmark", "plots.py")}


def test_the_package_does_not_import_the_repository():
    for path, tree in decoder_modules():
        for name, node in imported_modules(tree):
            assert name.split(".")[0] not in ("bench", "models", "tests"), f"{path}:{node.lineno} imports {name}"


def test_version_and_demo_help_outside_the_repository(tmp_path):
    import decoder

    env = installed_layout(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    completed = run_installed(["-m", "decoder.cli", "--version"], work, env, timeout=120)
    assert completed.returncode == 0, completed.stderr
    with open(os.path.join(REPO, "decoder", "__init__.py"), encoding="utf-8") as f:
        version = next(node.value.value for node in ast.parse(f.read()).body if isinstance(node, ast.Assign)
                       and node.targets[0].id == "__version__")
    assert completed.stdout == f"cky-decoder {version}\n" == f"cky-decoder {decoder.__version__}\n"
    completed = run_installed(["-m", "decoder.cli", "demo", "--help"], work, env, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("usage: cky demo") and "--workers" in completed.stdout
    listing = run_installed(["-m", "decoder.cli", "--help"], work, env, timeout=120).stdout
    assert "demo" in listing and "bench" in listing and "--version" in listing
