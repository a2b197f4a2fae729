"""The package reads bottom-up: no module imports one that imports it back, and imports only point down the layers.

Every `import` and `from ... import` in `codefu_helpers` counts, at module level or inside a function (an import
moved into a function still ties the two modules together; it only hides the knot until run time). The layers are
those of the architecture page, bottom row first:

    leaves       rollout/, checkpoint, config, data, tiny_model, tracking, samples, memory_plan, step_time, device_check,
                 curriculum, resources (what ships with the package: setup.py loads it alone, so it imports nothing)
    judge        sandbox/
    rewards      reward, reward_validation
    maths        grpo, estimators
    model-side   policy_ops, sft, lora
    evaluation   eval_datasets, evaluate, pass_rate (difficulty from a model: it samples through evaluate)
    workers      workers/
    controller   trainer
    front ends   train, launch/, tutorial, notebook_results, data.__main__ (the data commands: one of them samples
                 a model)

A row may name a module inside a package of a lower row (data.__main__); the rest of that package keeps its row.
A module may import from its own row or the rows below (never above), and the import graph has no cycle at all.
A new module must be given a row here: the test names it until it has one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "codefu_helpers"

LAYERS = [
    ("leaves", ["rollout", "checkpoint", "config", "data", "tiny_model", "tracking", "samples", "memory_plan",
                "step_time", "device_check", "curriculum", "resources"]),
    ("judge", ["sandbox"]),
    ("rewards", ["reward", "reward_validation"]),
    ("maths", ["grpo", "estimators"]),
    ("model-side", ["policy_ops", "sft", "lora"]),
    ("evaluation", ["eval_datasets", "evaluate", "pass_rate"]),
    ("workers", ["workers"]),
    ("controller", ["trainer"]),
    ("front ends", ["train", "launch", "tutorial", "notebook_results", "data.__main__"]),
]


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package under `root` (packages by their __init__)."""
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """module -> {imported module of the package: line of the first such import}, imports inside functions included.

    `from X import name` counts as an import of X.name when that is a module of the package (`from . import grpo`),
    else of X. The package's own empty `__init__` is not a node."""
    found = modules(root)
    graph: dict[str, dict[str, int]] = {}
    for name, path in found.items():
        is_package = path.name == "__init__.py"
        edges: dict[str, int] = {}

        def add(target: str, line: int) -> None:
            if target != PACKAGE and target != name and target.startswith(PACKAGE + "."):
                edges.setdefault(target, line)

        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add(alias.name, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    add(sub if sub in found else source, node.lineno)
        unknown = sorted(t for t in edges if t not in found)
        assert not unknown, f"{name} imports {unknown}, which are not modules of {PACKAGE}"
        graph[name] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Each strongly connected component of more than one module, as one cycle through it (Tarjan, then a walk)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_through(graph, set(c), c[0]) for c in components]


def _cycle_through(graph: dict[str, dict[str, int]], component: set[str], start: str) -> list[str]:
    """A shortest path start -> ... -> start inside one strongly connected component (breadth first)."""
    parents = {start: None}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w not in component:
                    continue
                if w == start:
                    path = [v]
                    while parents[path[-1]] is not None:
                        path.append(parents[path[-1]])
                    return list(reversed(path)) + [start]
                if w not in parents:
                    parents[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{start} is in a cycle but no path leads back to it")


def describe(graph: dict[str, dict[str, int]], cycle: list[str], root: Path = ROOT) -> str:
    """The cycle, then each hop with the file and line of its import, then every module tied into the same knot."""
    knot = _component_of(graph, cycle[0])
    hops = []
    for a, b in zip(cycle, cycle[1:]):
        path = modules(root)[a].relative_to(root)
        hops.append(f"  {a} imports {b} ({path}:{graph[a][b]})")
    tied = f"\n  {len(knot)} modules import each other in this knot: {', '.join(knot)}" if len(knot) > len(cycle) - 1 \
        else ""
    return " -> ".join(cycle) + "\n" + "\n".join(hops) + tied


def _component_of(graph: dict[str, dict[str, int]], start: str) -> list[str]:
    """The modules reachable from `start` that also reach it back."""
    def reach(v: str, edges) -> set[str]:
        seen, todo = {v}, [v]
        while todo:
            for w in edges(todo.pop()):
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        return seen

    forward = reach(start, lambda v: graph.get(v, {}))
    backward = reach(start, lambda v: [u for u, e in graph.items() if v in e])
    return sorted(forward & backward)


def layer_of(module: str) -> int | None:
    inside = module.split(".", 1)[1] if module.count(".") else module
    for row, (_, members) in enumerate(LAYERS):  # a module named on its own row first (data.__main__)
        if inside in members:
            return row
    top = inside.split(".")[0]
    for row, (_, members) in enumerate(LAYERS):
        if top in members:
            return row
    return None


def upward_imports(graph: dict[str, dict[str, int]]) -> list[str]:
    out = []
    for module, edges in sorted(graph.items()):
        for target, line in sorted(edges.items()):
            here, there = layer_of(module), layer_of(target)
            if here is not None and there is not None and there > here:
                out.append(f"{module} ({LAYERS[here][0]}) imports {target} ({LAYERS[there][0]}) at line {line}")
    return out


def test_no_module_imports_one_that_imports_it_back():
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(describe(graph, c) for c in found)


def test_imports_only_point_down_the_layers():
    graph = import_graph()
    unplaced = sorted(m for m in graph if m != PACKAGE and layer_of(m) is None)
    assert not unplaced, f"modules without a layer: {unplaced}; give each a row in LAYERS (tests/test_layers.py)"
    upward = upward_imports(graph)
    assert not upward, "imports that point up:\n" + "\n".join(upward)


def test_the_checker_sees_a_cycle_through_an_import_inside_a_function(tmp_path):
    """The same checker on a package built to have a knot: a -> b at module level, b -> c, c -> a inside a function."""
    package = tmp_path / PACKAGE
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("from .. import c\n")
    (package / "c.py").write_text("def f():\n    from codefu_helpers.a import thing\n")
    graph = import_graph(tmp_path)
    assert graph[f"{PACKAGE}.a"] == {f"{PACKAGE}.sub.b": 1}
    found = cycles(graph)
    assert found == [[f"{PACKAGE}.a", f"{PACKAGE}.sub.b", f"{PACKAGE}.c", f"{PACKAGE}.a"]]
    message = describe(graph, found[0], tmp_path)
    assert "imports" in message and "c.py:2" in message, message


@pytest.mark.parametrize("module, target, expected", [
    ("codefu_helpers.workers.policy", "codefu_helpers.trainer", True),
    ("codefu_helpers.trainer", "codefu_helpers.workers", False),
    ("codefu_helpers.sandbox.judge", "codefu_helpers.reward", True),
])
def test_an_upward_import_is_named(module, target, expected):
    assert bool(upward_imports({module: {target: 7}})) is expected
