"""Builds the wheel with the project's shipped inputs inside the package: pyproject.toml holds the metadata; this file
only adds a build step that copies codefu_helpers.resources.SHIPPED (configs/, data/sample/, data/sources/,
data/README.md) into the built package as codefu_helpers/_shipped/, where `resources.shipped_path` finds them
once the wheel is installed. The source tree is never written to. An editable install (`pip install -e .`) runs
from the clone and reads the clone's own folders, so it copies nothing.
"""

import importlib.util
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _resources():
    """codefu_helpers/resources.py loaded on its own (it imports nothing from the package): one list of what ships."""
    spec = importlib.util.spec_from_file_location("_codefu_resources", HERE / "codefu_helpers" / "resources.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildWithShipped(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        resources = _resources()
        target = Path(self.build_lib) / "codefu_helpers" / resources.BUNDLED_DIR
        shutil.rmtree(target, ignore_errors=True)  # a stale copy from an earlier build must not linger
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")
        for item in resources.SHIPPED:
            source = HERE / item
            if source.is_dir():
                shutil.copytree(source, target / item, ignore=ignore)
            elif source.is_file():
                (target / item).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / item)
            else:
                raise FileNotFoundError(f"{source} is listed in codefu_helpers/resources.py SHIPPED but is not in the "
                                        "source tree (an sdist needs it in MANIFEST.in)")


setup(cmdclass={"build_py": BuildWithShipped})
