"""`pip install .` installs every package of python/nsverify (pyproject.toml's list is written by
hand: a subpackage missing from it installs nothing of it, as nsverify.torch once did), and the
entry points name modules and functions that exist. The install itself (a full CMake build) is
checked by python/tests/pip_install.sh (`ctest -L install`)."""
import importlib
import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_folder_is_listed():
    source = ROOT / "python"
    folders = sorted(".".join(p.parent.relative_to(source).parts) for p in (source / "nsverify").rglob("__init__.py"))
    assert sorted(PYPROJECT["tool"]["setuptools"]["packages"]) == folders


def test_entry_points_exist():
    points = dict(PYPROJECT["project"]["scripts"])
    points.update(PYPROJECT["project"]["entry-points"]["pytest11"])
    for name, target in points.items():
        module, _, attribute = target.partition(":")
        loaded = importlib.import_module(module)
        assert not attribute or callable(getattr(loaded, attribute)), f"{name}: {target}"
