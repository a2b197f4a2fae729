"""The inputs that ship with the project (configs, the sample data), and how a path parameter finds them.

`SHIPPED` names what ships: in a clone (or an editable install, which runs from the clone) it is the clone's own
folders next to the package; a wheel (`pip install .`, `pip install git+...`) carries a copy inside the package,
`codefu_helpers/_shipped/`, which setup.py's build step puts there. `shipped_path` finds either, so code and
notebook cells copied into another project still reach `configs/cpu_learn.yaml` and `data/sample`.

Path parameters follow two rules, both relative to the working directory (Jupyter's is the notebook's folder),
never to the clone the package came from:

    resolve_input("../configs/cpu_learn.yaml")   # the working directory's file if it is there, else the shipped one
    resolve_output("../runs/notebooks")          # the working directory's path, whether or not it exists yet

This module imports nothing from the package: setup.py loads it on its own to learn what to copy into a wheel.
"""

from __future__ import annotations

from pathlib import Path

# What ships with the package, relative to the clone's root (and to codefu_helpers/_shipped/ in a wheel).
SHIPPED = ("configs", "data/sample", "data/sources", "data/README.md")
BUNDLED_DIR = "_shipped"  # the copy's folder inside the installed package

PACKAGE_DIR = Path(__file__).resolve().parent
CHECKOUT_ROOT = PACKAGE_DIR.parent


def shipped_root() -> Path:
    """The folder that holds SHIPPED: the package's bundled copy when it has one (an installed wheel), else the clone
    the package runs from (its configs/ beside the package). The bundled copy goes first because a wheel's
    site-packages may hold some other distribution's top-level configs/ folder; a clone never has the copy. With
    neither (a package copied without them), the missing bundled folder: shipped_path's error then says so. Never
    raises, so that modules may name shipped files at import time (tiny_model's corpus)."""
    bundled = PACKAGE_DIR / BUNDLED_DIR
    if bundled.is_dir() or not (CHECKOUT_ROOT / "configs").is_dir():
        return bundled
    return CHECKOUT_ROOT


def _shipped_relative(value: str | Path) -> Path | None:
    """`value` as a path relative to the shipped root when it names something inside SHIPPED (leading ./ and ../
    dropped: "../configs/x.yaml" is configs/x.yaml), else None."""
    parts = list(Path(value).expanduser().parts)
    while parts and parts[0] in (".", ".."):
        parts.pop(0)
    if not parts or ".." in parts or Path(value).expanduser().is_absolute():
        return None
    relative = Path(*parts)
    if any(relative == Path(item) or Path(item) in relative.parents for item in SHIPPED):
        return relative
    return None


def _what_ships(root: Path, relative: Path | None = None) -> str:
    """The shipped items under `root`, and the neighbours of a missing `relative` (the configs, say)."""
    if not root.is_dir():
        return (f"this codefu_helpers ({PACKAGE_DIR}) carries none of {', '.join(SHIPPED)}: install it from the "
                "repository with `pip install .` (the wheel bundles them) or run it from a clone")
    listing = f"what ships (under {root}): {', '.join(SHIPPED)}"
    if relative is not None and (root / relative).parent.is_dir():
        folder = (root / relative).parent
        names = sorted(p.name for p in folder.iterdir())
        listing += f"; {folder.relative_to(root)}/ holds {', '.join(names) or 'nothing'}"
    return listing


def shipped_path(relative: str | Path) -> Path:
    """The shipped file or folder `relative` names, e.g. "configs/cpu_learn.yaml" or "data/sample" (leading ./ and
    ../ are dropped). ValueError for a path outside SHIPPED, FileNotFoundError for one that does not ship; both
    name the value and list what ships."""
    root = shipped_root()
    inside = _shipped_relative(relative)
    if inside is None:
        raise ValueError(f"{str(relative)!r} is not among the inputs that ship with codefu_helpers; "
                         f"name one under {', '.join(SHIPPED)}, e.g. 'configs/cpu_learn.yaml'")
    path = root / inside
    if not path.exists():
        raise FileNotFoundError(f"{str(relative)!r} does not ship with codefu_helpers ({path} is missing); "
                                f"{_what_ships(root, inside)}")
    return path


def resolve_input(value: str | Path, cwd: str | Path | None = None) -> Path:
    """An input's path parameter (a config, the sample data, the authored sources): absolute as given; relative:
    the file under the working directory `cwd` (default: the current one) if it exists there, else the shipped file
    of that name (leading ./ and ../ dropped, so "../configs/x.yaml" from notebooks/ or from your own project's
    subfolder finds configs/x.yaml). FileNotFoundError naming the value, the working directory and the shipped root
    when neither exists."""
    path = Path(value).expanduser()
    if path.is_absolute():
        return path
    here = Path(cwd if cwd is not None else Path.cwd()).expanduser().resolve()
    if (here / path).exists():
        return (here / path).resolve()
    root = shipped_root()
    inside = _shipped_relative(path)
    if inside is not None and (root / inside).exists():
        return root / inside
    raise FileNotFoundError(f"{str(value)!r} is neither under the working directory {here} nor among the inputs "
                            f"that ship with codefu_helpers ({_what_ships(root, inside)}): give an existing path, "
                            "absolute or relative to the working directory")


def resolve_output(value: str | Path, cwd: str | Path | None = None) -> Path:
    """An output's path parameter (RUN_DIR): absolute as given, else under the working directory `cwd` (default: the
    current one), whether or not it exists yet."""
    path = Path(value).expanduser()
    if path.is_absolute():
        return path
    return (Path(cwd if cwd is not None else Path.cwd()).expanduser().resolve() / path).resolve()
