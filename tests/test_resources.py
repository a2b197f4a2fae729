"""What ships with the package, and how path parameters resolve: relative to the working directory, inputs falling
back on the shipped configs and sample data, never anchored at the clone. Then a real wheel of this tree, installed
into a bare folder and run from an empty working directory: the configs and sample data come with it."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from codefu_helpers.resources import SHIPPED, resolve_input, resolve_output, shipped_path, shipped_root
from codefu_helpers.tutorial import dataset_ref, render_smoke, smoke_config

from conftest import ROOT


@pytest.fixture
def notebook_dir(tmp_path):
    """A notebooks/ folder in a project of the user's own: nothing of this clone's beside it."""
    folder = tmp_path / "project" / "notebooks"
    folder.mkdir(parents=True)
    return folder


def test_in_a_clone_the_shipped_inputs_are_the_clones_own_folders():
    assert shipped_root() == ROOT
    assert shipped_path("configs/cpu_learn.yaml") == ROOT / "configs" / "cpu_learn.yaml"
    assert shipped_path("./data/sample") == ROOT / "data" / "sample"
    assert all((ROOT / item).exists() for item in SHIPPED)
    assert not (ROOT / "codefu_helpers" / "_shipped").exists()  # the wheel's copy is made in the build folder only


def test_the_working_directorys_file_wins_over_the_shipped_one(notebook_dir):
    project = notebook_dir.parent
    (project / "configs").mkdir()
    own = project / "configs" / "cpu_learn.yaml"
    own.write_text("name: mine\n")
    assert resolve_input("configs/cpu_learn.yaml", cwd=project) == own
    assert resolve_input("../configs/cpu_learn.yaml", cwd=notebook_dir) == own
    # a file of any name counts when it is in the working directory, shipped or not
    (project / "notes.txt").write_text("x")
    assert resolve_input("notes.txt", cwd=project) == project / "notes.txt"


def test_a_missing_input_falls_back_on_the_shipped_one_with_leading_dots_dropped(notebook_dir, monkeypatch):
    assert resolve_input("../configs/cpu_learn.yaml", cwd=notebook_dir) == ROOT / "configs" / "cpu_learn.yaml"
    assert resolve_input("../data/sample", cwd=notebook_dir) == ROOT / "data" / "sample"
    assert resolve_input("./data/sources/problems", cwd=notebook_dir) == ROOT / "data" / "sources" / "problems"
    assert resolve_input("../../data/README.md", cwd=notebook_dir) == ROOT / "data" / "README.md"
    monkeypatch.chdir(notebook_dir)  # the default working directory is the current one
    assert resolve_input("../configs/ci_tiny.yaml") == ROOT / "configs" / "ci_tiny.yaml"


def test_a_relative_path_is_never_anchored_at_the_clone(notebook_dir):
    """The clone's other files (its README, the package's source) exist, but do not ship: not found from elsewhere."""
    for value in ("../README.md", "codefu_helpers/tutorial.py", "../data/processed"):
        with pytest.raises(FileNotFoundError, match="neither under the working directory"):
            resolve_input(value, cwd=notebook_dir)
    assert resolve_output("../runs/notebooks", cwd=notebook_dir) == notebook_dir.parent / "runs" / "notebooks"
    assert not (notebook_dir.parent / "runs").exists()  # resolving an output creates nothing


def test_absolute_paths_are_taken_as_given(tmp_path):
    missing = tmp_path / "elsewhere" / "x.yaml"
    assert resolve_input(missing, cwd=ROOT) == missing and resolve_output(missing, cwd=ROOT) == missing
    assert resolve_input(str(ROOT / "configs" / "ci_tiny.yaml"), cwd=tmp_path) == ROOT / "configs" / "ci_tiny.yaml"


def test_the_errors_name_the_value_the_working_directory_and_what_ships(notebook_dir):
    with pytest.raises(FileNotFoundError) as missing:
        resolve_input("../configs/cpu_lern.yaml", cwd=notebook_dir)
    message = str(missing.value)
    assert "'../configs/cpu_lern.yaml'" in message and str(notebook_dir) in message and str(ROOT) in message
    assert "cpu_learn.yaml" in message  # the shipped configs are listed beside the typo
    with pytest.raises(FileNotFoundError, match=r"'configs/nope\.yaml' does not ship.*ci_tiny\.yaml"):
        shipped_path("configs/nope.yaml")
    for outside in ("runs/notebooks", "configs/../../README.md", str(ROOT / "configs" / "ci_tiny.yaml"), "data"):
        with pytest.raises(ValueError, match="not among the inputs that ship") as error:
            shipped_path(outside)
        assert repr(outside) in str(error.value) and "data/sample" in str(error.value)


def test_a_dataset_is_a_local_folder_by_the_same_rules_or_a_hub_id_as_given(notebook_dir):
    assert dataset_ref("../data/sample", cwd=notebook_dir) == str(ROOT / "data" / "sample")
    assert dataset_ref("deepmind/code_contests", cwd=notebook_dir) == "deepmind/code_contests"
    own = notebook_dir / "deepmind" / "code_contests"
    own.mkdir(parents=True)
    assert dataset_ref("deepmind/code_contests", cwd=notebook_dir) == str(own)  # a local copy of that name wins


def test_notebook_03s_config_resolves_from_the_notebooks_working_directory(notebook_dir, tmp_path):
    path, _ = smoke_config("auto", "cpu", train_path=tmp_path / "t.parquet", dataset="data/sample",
                           output_dir=tmp_path)
    assert path == shipped_path("configs/cpu_learn.yaml")
    path, cfg = smoke_config("../configs/ci_tiny.yaml", "cpu", train_path=tmp_path / "t.parquet",
                             dataset="data/sample", output_dir=tmp_path, cwd=notebook_dir)
    assert path == ROOT / "configs" / "ci_tiny.yaml" and cfg.name == "ci_tiny"
    with pytest.raises(FileNotFoundError, match="'configs/mine.yaml'"):
        smoke_config("configs/mine.yaml", "cpu", train_path="t.parquet", dataset="d", output_dir=tmp_path,
                     cwd=notebook_dir)
    # render_smoke resolves the parameters cell's relative paths as the notebook would in `cwd`
    _, cfg, _ = render_smoke("cpu", {"RUN_DIR": "../runs/nb", "DATASET": "../data/sample"}, cwd=notebook_dir)
    run_dir = notebook_dir.parent / "runs" / "nb"
    assert cfg.trainer.output_dir == str(run_dir / "grpo")
    assert cfg.data.train_path == str(run_dir / "data" / "train.parquet")
    assert cfg.data.raw_path == str(ROOT / "data" / "sample")


def test_resources_imports_nothing_from_the_package():
    """setup.py loads resources.py on its own to learn what to copy into a wheel."""
    from test_layers import import_graph

    assert import_graph()["codefu_helpers.resources"] == {}


# Runs with PYTHONPATH=<the wheel installed with --target>, from an empty working directory.
INSTALLED = textwrap.dedent("""
    import json
    import codefu_helpers
    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.data import load_problems
    from codefu_helpers.resources import shipped_path, shipped_root
    from codefu_helpers.reward_validation import intended_verdicts
    from codefu_helpers.tiny_model import DEFAULT_CORPUS
    from codefu_helpers.tutorial import dataset_ref, input_path, smoke_config

    config = ExperimentConfig.from_yaml(shipped_path("configs/cpu_learn.yaml"))  # its base: ci_tiny.yaml
    auto, _ = smoke_config("auto", "cpu", train_path="t.parquet", dataset="data/sample", output_dir="out")
    sample = dataset_ref("../data/sample")
    print(json.dumps({
        "package": codefu_helpers.__file__, "root": str(shipped_root()), "config": config.to_dict(),
        "auto": str(auto), "typed": str(input_path("../configs/cpu_learn.yaml")), "sample": sample,
        "problems": [p["name"] for p in load_problems(sample)], "corpus": str(DEFAULT_CORPUS),
        "verdicts": intended_verdicts(shipped_path("data/sources/problems")),
    }))
""")


@pytest.mark.slow
def test_a_wheel_carries_the_configs_and_sample_data_and_finds_them_installed(tmp_path):
    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.data import load_problems
    from codefu_helpers.reward_validation import intended_verdicts

    # this working tree as git would commit it (runs/, .venv, build outputs left out), built offline
    tree = tmp_path / "tree"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    pip = [sys.executable, "-m", "pip"]
    built = subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", tmp_path / "dist",
                            tree], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("codefu_helpers-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n for n in names if n.startswith("codefu_helpers/_shipped/")}
    expected = {f"codefu_helpers/_shipped/{p.relative_to(ROOT)}" for item in SHIPPED
                for p in ([ROOT / item] if (ROOT / item).is_file() else (ROOT / item).rglob("*"))
                if p.is_file() and "__pycache__" not in p.parts}
    assert "codefu_helpers/_shipped/configs/cpu_learn.yaml" in shipped
    assert "codefu_helpers/_shipped/data/sample/code_contests_sample.jsonl" in shipped
    assert shipped == expected, sorted(shipped ^ expected)[:20]

    target, elsewhere = tmp_path / "installed", tmp_path / "elsewhere" / "notebooks"
    elsewhere.mkdir(parents=True)
    installed = subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", target, wheel],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    env = {**os.environ, "PYTHONPATH": str(target)}
    ran = subprocess.run([sys.executable, "-c", INSTALLED], cwd=elsewhere, env=env, capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    found = json.loads(ran.stdout.splitlines()[-1])

    bundled = target / "codefu_helpers" / "_shipped"
    assert found["package"] == str(target / "codefu_helpers" / "__init__.py")  # the wheel's copy, not the clone
    assert found["root"] == str(bundled)
    assert found["auto"] == found["typed"] == str(bundled / "configs" / "cpu_learn.yaml")
    assert found["sample"] == str(bundled / "data" / "sample")
    assert found["corpus"] == str(bundled / "data" / "sample" / "code_contests_sample.jsonl")
    # the same config (base: chain resolved inside the copy), the same rows and authored verdicts as the clone's
    assert found["config"] == ExperimentConfig.from_yaml(ROOT / "configs" / "cpu_learn.yaml").to_dict()
    assert found["config"]["model"]["path"] == "tiny://qwen2"
    assert found["problems"] == [p["name"] for p in load_problems(ROOT / "data" / "sample")]
    assert len(found["problems"]) > 10
    clone_verdicts = intended_verdicts(ROOT / "data" / "sources" / "problems")
    assert found["verdicts"] == json.loads(json.dumps(clone_verdicts)) and clone_verdicts
