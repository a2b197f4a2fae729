"""CodeContests rows -> filtered, tiered, deduplicated training data in verl's parquet schema.

The input is the DeepMind CodeContests schema: the HF dataset `deepmind/code_contests`, a local snapshot of it
(parquet files), or the bundled `data/sample` (JSON lines). The output is what verl's `RLHFDataset` and this
project's trainer read:

    data_source   "codecontests"
    prompt        chat messages [{"role": "system", ...}, {"role": "user", ...}]
    ability       "code"
    reward_model  {"style": "rule", "ground_truth": {name, public_tests, private_tests, time_limit (float s),
                                                      memory_limit_bytes, cf_rating, float_tolerance}}
    extra_info    {index, split, tier, name, cf_rating, language, source_index, prompt_tokens}

Key idea: the full dataset is ~13k rows and several GB, almost all of it test data, so `prepare_dataset` streams.
It reads only the columns it needs, in record batches; it decides keep/drop row by row, keeping only a small
fingerprint per row (rating, statement hash) in memory; kept rows go to a spool parquet file; the train/test
split is then decided on the small metadata (stratified by tier, seeded) and the spool is streamed once more into
`train.parquet` / `test.parquet`. Every dropped row is reported with its position, its name and the reason.

    from codefu_helpers.data import FilterConfig, prepare_dataset
    report = prepare_dataset("data/sample", "runs/data", FilterConfig(language="cpp"))
    print(report.summary())

`float_tolerance` is the absolute-or-relative error the statement allows for a real-valued answer ("absolute or
relative error does not exceed 10^{-6}" -> 1e-06), read by `float_tolerance_from_statement`; null when the
statement allows none, and then the judge compares tokens exactly.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
import tempfile
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

# CodeContests ClassLabel ids.
SOURCES = {0: "UNKNOWN_SOURCE", 1: "CODECHEF", 2: "CODEFORCES", 3: "HACKEREARTH", 4: "CODEJAM", 5: "ATCODER", 6: "AIZU"}
LANGUAGES = {0: "UNKNOWN_LANGUAGE", 1: "PYTHON", 2: "CPP", 3: "PYTHON3", 4: "JAVA"}
LANGUAGE_IDS = {"python": 3, "cpp": 2}  # the languages our judge runs

DATA_SOURCE = "codecontests"
DEFAULT_TIERS = {"easy": (800, 1000), "hard": (1100, 2200), "expert": (2300, 3500)}
# The columns the filter reads; generated_tests and the solutions are only read when asked for.
BASE_COLUMNS = ["name", "description", "public_tests", "private_tests", "source", "cf_rating", "cf_tags",
                "time_limit", "memory_limit_bytes"]

# Drop reasons, in the order the checks run. Each dropped row gets exactly one.
MALFORMED = "malformed"
WRONG_SOURCE = "source"
UNRATED = "unrated"
OUTSIDE_TIERS = "rating outside tiers"
TOO_FEW_TESTS = "too few private tests"
INTERACTIVE = "interactive"
IMAGE = "needs an image"
DUPLICATE = "duplicate statement"
PROMPT_TOO_LONG = "prompt too long"

_IMAGE_MARK = re.compile(r"<image>|!\[[^\]]*\]\(|<img\b", re.IGNORECASE)
_INTERACTIVE_MARK = re.compile(r"this is an interactive problem|interactive problem|\bflush the output\b",
                               re.IGNORECASE)

SYSTEM_PROMPT = (
    "You are an expert competitive programmer. You reason carefully about the problem, the constraints and the "
    "complexity of your algorithm before you write code."
)
_LANGUAGE_NAMES = {"cpp": ("C++17", "cpp"), "python": ("Python 3", "python")}
USER_TEMPLATE = (
    "Solve the following competitive programming problem.\n\n"
    "{description}\n\n"
    "Time limit: {time_limit:g} seconds per test. Memory limit: {memory_mb} MB.\n\n"
    "Write your solution in {language_name}. The program reads from standard input and writes to standard "
    "output. First explain your reasoning step by step, then end your answer with exactly one fenced code block "
    "(```{fence}) that contains the complete program."
)


@dataclass
class FilterConfig:
    """What to keep and how to write it. Every field has a default that matches CodeFu's recipe."""

    sources: tuple[str, ...] = ("CODEFORCES",)           # CodeContests source labels to keep
    tiers: dict[str, tuple[int, int]] = field(default_factory=lambda: dict(DEFAULT_TIERS))  # inclusive ranges
    keep_tiers: tuple[str, ...] | None = None            # None keeps all tiers; ("hard",) keeps one
    min_private_tests: int = 1                           # rows with fewer private tests are dropped
    include_generated_tests: bool = False                # append generated_tests to the private tests
    max_private_tests: int | None = None                 # cap per problem (keeps the parquet small); None = all
    drop_interactive: bool = True
    drop_images: bool = True
    deduplicate: bool = True                             # by normalised statement
    language: str = "cpp"                                # "cpp" or "python": the language the prompt asks for
    max_prompt_tokens: int | None = None                 # needs `tokenizer`; None = no budget
    tokenizer: str | None = None                         # HF id or local path of a real tokenizer
    test_fraction: float = 0.1                           # share of each tier that goes to test.parquet
    seed: int = 0
    default_time_limit: float = 2.0                      # used (and counted) when a row has no time limit
    split: str = "train"                                 # split of the *input* dataset to read

    def validate(self) -> None:
        unknown = [s for s in self.sources if s not in SOURCES.values()]
        if unknown:
            raise ValueError(f"FilterConfig.sources has unknown labels {unknown}; use some of "
                             f"{sorted(SOURCES.values())}")
        for name, bounds in self.tiers.items():
            if len(bounds) != 2 or bounds[0] > bounds[1]:
                raise ValueError(f"FilterConfig.tiers[{name!r}]={bounds!r} must be (low, high) with low <= high")
        if self.keep_tiers is not None:
            missing = [t for t in self.keep_tiers if t not in self.tiers]
            if missing:
                raise ValueError(f"FilterConfig.keep_tiers names tiers {missing} that are not in "
                                 f"tiers={list(self.tiers)}")
        if self.language not in _LANGUAGE_NAMES:
            raise ValueError(f"FilterConfig.language={self.language!r}: use 'cpp' or 'python'")
        if not 0.0 <= self.test_fraction < 1.0:
            raise ValueError(f"FilterConfig.test_fraction={self.test_fraction} must be in [0, 1)")
        if self.max_prompt_tokens is not None and not self.tokenizer:
            raise ValueError(f"FilterConfig.max_prompt_tokens={self.max_prompt_tokens} needs a tokenizer: set "
                             "FilterConfig.tokenizer to the model id or path whose tokenizer counts the tokens")
        if self.min_private_tests < 0:
            raise ValueError(f"FilterConfig.min_private_tests={self.min_private_tests} must be >= 0")


@dataclass
class Dropped:
    index: int          # position of the row in the input stream (0-based, across files)
    name: str
    reason: str         # one of the drop-reason constants above
    detail: str


@dataclass
class PrepareReport:
    """What `prepare_dataset` did: enough to draw the notebook's plots and tables."""

    rows_read: int = 0
    kept: int = 0
    dropped: list[Dropped] = field(default_factory=list)
    ratings_before: list[int] = field(default_factory=list)       # cf_rating of every well-formed row
    ratings_after: list[int] = field(default_factory=list)
    private_tests_after: list[int] = field(default_factory=list)  # per kept problem, after the cap
    prompt_chars: list[int] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)        # empty without a tokenizer
    tiers: dict[str, int] = field(default_factory=dict)           # kept problems per tier
    splits: dict[str, int] = field(default_factory=dict)          # rows per output split
    defaulted_time_limits: int = 0
    float_answers: int = 0                                        # kept problems with a float_tolerance
    files: dict[str, str] = field(default_factory=dict)           # split -> parquet path

    def drop_counts(self) -> dict[str, int]:
        return dict(Counter(d.reason for d in self.dropped))

    def summary(self) -> str:
        lines = [f"read {self.rows_read} rows, kept {self.kept}, dropped {len(self.dropped)}"]
        lines += [f"  dropped ({reason}): {n}" for reason, n in sorted(self.drop_counts().items())]
        lines.append("  tiers: " + ", ".join(f"{t}={n}" for t, n in self.tiers.items()))
        lines.append("  splits: " + ", ".join(f"{s}={n}" for s, n in self.splits.items()))
        if self.defaulted_time_limits:
            lines.append(f"  rows without a time limit (given the default): {self.defaulted_time_limits}")
        lines.append(f"  float answers (statement allows an absolute/relative error): {self.float_answers}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# ----------------------------------------------------------------------------------------------------------
# Reading


class MalformedRow(Exception):
    """A row that cannot be read or does not follow the CodeContests schema."""


def _data_files(path: Path, split: str) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and _file_kind(p))
    if not files:
        raise FileNotFoundError(f"no .parquet, .jsonl or .jsonl.gz files under {path}: point DATASET at a folder "
                                "of CodeContests rows or at an HF dataset id such as 'deepmind/code_contests'")
    # An HF snapshot keeps its splits side by side (train-00000-of-00039.parquet, valid-..., test-...).
    in_split = [p for p in files if p.name.startswith(f"{split}-") or p.parent.name == split]
    return in_split or files


def _file_kind(path: Path) -> str | None:
    name = path.name
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(".jsonl") or name.endswith(".jsonl.gz"):
        return "jsonl"
    return None


def iter_rows(dataset: str | Path, split: str = "train", columns: list[str] | None = None,
              batch_size: int = 32) -> Iterator[tuple[int, dict | MalformedRow]]:
    """Yields (index, row) for every row of a local file/folder or an HF dataset id, streaming.

    A row that cannot be decoded is yielded as a `MalformedRow` (with the reason) instead of raising, so one
    bad row never stops a run. Only `columns` are read from parquet files (all when None).
    """
    path = Path(dataset)
    if not path.exists():
        if str(dataset).startswith((".", "/")) or str(dataset).count("/") != 1:
            raise FileNotFoundError(f"dataset {str(dataset)!r} is neither a local path nor an HF dataset id "
                                    "like 'deepmind/code_contests'")
        yield from _iter_hub(str(dataset), split, columns)
        return
    index = 0
    for file in _data_files(path, split):
        if _file_kind(file) == "parquet":
            pf = pq.ParquetFile(file)
            present = [c for c in (columns or pf.schema_arrow.names) if c in pf.schema_arrow.names]
            for batch in pf.iter_batches(batch_size=batch_size, columns=present):
                for row in batch.to_pylist():
                    yield index, row
                    index += 1
        else:
            opener = gzip.open if file.name.endswith(".gz") else open
            with opener(file, "rb") as fh:
                for raw in fh:
                    if not raw.strip():
                        continue
                    yield index, _decode_json_line(raw, columns)
                    index += 1


def _decode_json_line(raw: bytes, columns: list[str] | None) -> dict | MalformedRow:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return MalformedRow(f"not valid UTF-8 at byte {exc.start}")
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        return MalformedRow(f"not valid JSON ({exc.msg} at char {exc.pos})")
    if not isinstance(row, dict):
        return MalformedRow(f"a row must be a JSON object, got {type(row).__name__}")
    return {k: row[k] for k in columns if k in row} if columns else row


def _iter_hub(dataset_id: str, split: str, columns: list[str] | None) -> Iterator[tuple[int, dict]]:
    import datasets  # heavy import, only for hub datasets

    stream = datasets.load_dataset(dataset_id, split=split, streaming=True)
    if columns:
        stream = stream.select_columns([c for c in columns if c in (stream.column_names or columns)])
    for index, row in enumerate(stream):
        yield index, row


# ----------------------------------------------------------------------------------------------------------
# Checking one row


def _tests(row: dict, key: str) -> dict[str, list[str]]:
    value = row.get(key)
    if value is None:
        return {"input": [], "output": []}
    if not isinstance(value, dict) or not isinstance(value.get("input"), list) \
            or not isinstance(value.get("output"), list):
        raise MalformedRow(f"{key} must be {{'input': [...], 'output': [...]}}, got {type(value).__name__}")
    inputs, outputs = value["input"], value["output"]
    if len(inputs) != len(outputs):
        raise MalformedRow(f"{key} has {len(inputs)} inputs but {len(outputs)} outputs")
    return {"input": [_text(x, key, i) for i, x in enumerate(inputs)],
            "output": [_text(x, key, i) for i, x in enumerate(outputs)]}


def _text(value: Any, key: str, i: int) -> str:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedRow(f"{key}[{i}] is not valid UTF-8 (byte {exc.start})") from None
    if not isinstance(value, str):
        raise MalformedRow(f"{key}[{i}] must be a string, got {type(value).__name__}")
    if value.isascii():  # almost all test data: skip the encode below, which costs a copy of the string
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates smuggled in through JSON escapes
        raise MalformedRow(f"{key}[{i}] is not valid UTF-8 (character {exc.start})") from None
    return value


def _check_schema(row: dict) -> None:
    for key, kinds in (("name", str), ("description", str), ("source", int), ("memory_limit_bytes", int)):
        if key not in row or row[key] is None:
            raise MalformedRow(f"missing field {key!r}")
        if not isinstance(row[key], kinds) or isinstance(row[key], bool):
            raise MalformedRow(f"field {key!r} must be {kinds.__name__}, got {type(row[key]).__name__} "
                               f"{str(row[key])[:40]!r}")
    _text(row["description"], "description", 0)
    rating = row.get("cf_rating", 0)
    if rating is not None and (not isinstance(rating, int) or isinstance(rating, bool)):
        raise MalformedRow(f"field 'cf_rating' must be int, got {type(rating).__name__} {rating!r}")
    tags = row.get("cf_tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise MalformedRow(f"field 'cf_tags' must be a list of strings, got {tags!r:.60}")
    limit = row.get("time_limit")
    if limit is not None and (not isinstance(limit, dict) or not {"seconds", "nanos"} <= set(limit)):
        raise MalformedRow(f"field 'time_limit' must be {{'seconds', 'nanos'}} or null, got {limit!r:.60}")


def normalise_statement(text: str) -> str:
    """Case-, whitespace- and punctuation-insensitive form of a statement (for deduplication)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.sub(r"[^\w]+", " ", text).split())


def statement_hash(text: str) -> str:
    return hashlib.sha1(normalise_statement(text).encode()).hexdigest()


def tier_of(rating: int, tiers: dict[str, tuple[int, int]]) -> str | None:
    for name, (low, high) in tiers.items():
        if low <= rating <= high:
            return name
    return None


def time_limit_seconds(row: dict) -> float | None:
    limit = row.get("time_limit")
    if not limit:
        return None
    seconds = limit["seconds"] + limit["nanos"] / 1e9
    return seconds if seconds > 0 else None


# Float answers. Codeforces statements whose answer is a real number say how far off it may be: "Your answer will
# be considered correct if its absolute or relative error does not exceed 10^{-6}." The phrase must qualify the
# error as absolute or relative: a bare "error" (an error message, an error in Vasya's notes) never counts.
_QUALIFIER = r"(?:absolute|relative)"
_ERROR_PHRASE = re.compile(
    rf"\b{_QUALIFIER}(?:(?:\s*/\s*|\s*,\s*|\s+(?:or|and|and/or)\s+)(?:the\s+)?{_QUALIFIER})?"
    r"\s+(?:errors?|precision|accuracy|inaccuracy|tolerance)\b"
    rf"|\berrors?\s*\(\s*{_QUALIFIER}")
# The tolerance itself, in the forms the statements use once lower-cased and with LaTeX's $ removed.
_TOLERANCE = re.compile(
    # 10^{-6}, 10^-6, 10^(-6), 10**-6, 2 \cdot 10^{-6}, 1.5 × 10^{-9}
    r"(?<![\d.])(?:(?P<mantissa>\d+(?:\.\d+)?)\s*(?:\\cdot|\\times|·|×|\*)\s*)?"
    r"10\s*(?:\^|\*\*)\s*\{?\s*\(?\s*-\s*(?P<power>\d{1,2})(?!\d)"
    # 1e-6, 1e-06, 1e - 6
    r"|(?<![\d.])(?P<e_mantissa>\d+(?:\.\d+)?)\s*e\s*-\s*(?P<e_power>\d{1,2})(?!\.?\d)"
    # "10 - 6": what 10^{-6} became when CodeContests stripped the superscript (and what NFKC makes of 10⁻⁶)
    r"|(?<![\d.^])10\s*-\s*(?P<flat_power>\d{1,2})(?!\.?\d)"
    # 0.000001; only with a zero after the point, so that a stray 0.5 in the next sentence is not taken
    r"|(?<![\d.])(?P<decimal>0\.0+[1-9]\d*)(?!\.?\d)")
_FORWARD_CHARS = 160   # how far after the phrase the number may be ("... does not exceed 10^{-6}")
_BACKWARD_CHARS = 80   # and before it, in the same sentence ("answers within 10^{-6} absolute error are accepted")
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2212\ufe63\uff0d]")


def _normalise_math(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)  # 10⁻⁶ -> 10-6, full-width digits -> ASCII
    text = _DASHES.sub("-", text).replace("$", "").replace("\\,", "").replace("\\!", "")
    text = re.sub(r"<sup>\s*", "^{", text, flags=re.IGNORECASE)
    text = re.sub(r"\s*</sup>", "}", text, flags=re.IGNORECASE)
    return re.sub(r"[ \t]+", " ", text).lower()


def _tolerance_value(match: re.Match) -> float | None:
    # through a decimal string, so that 1.5 \cdot 10^{-5} is the float 1.5e-05 and not 1.5000000000000002e-05
    if match.group("power") is not None:
        value = float(f"{match.group('mantissa') or 1}e-{match.group('power')}")
    elif match.group("e_power") is not None:
        value = float(f"{match.group('e_mantissa')}e-{match.group('e_power')}")
    elif match.group("flat_power") is not None:
        value = float(f"1e-{match.group('flat_power')}")
    else:
        value = float(match.group("decimal"))
    return value if 0.0 < value < 1.0 else None


def float_tolerance_from_statement(description: str) -> float | None:
    """The absolute-or-relative error a statement allows for a real-valued answer, or None when it allows none.

    Conservative: it needs an error qualified as absolute or relative ("absolute or relative error", "relative
    error", "absolute error", "error (absolute or relative)") and a tolerance written as 10^{-k}, c·10^{-k}, 1e-k,
    "10 - k" (LaTeX stripped) or 0.0...1 within the next 160 characters of the same paragraph, or failing that
    earlier in the same sentence. Anything else, an image in place of the number included, gives None: the answer
    is then checked token by token, exactly.

    >>> float_tolerance_from_statement("Correct if its absolute or relative error does not exceed 10^{-6}.")
    1e-06
    >>> float_tolerance_from_statement("If there is no answer, print an error message.") is None
    True
    """
    text = _normalise_math(description)
    for phrase in _ERROR_PHRASE.finditer(text):
        after = text[phrase.end():phrase.end() + _FORWARD_CHARS]
        after = re.split(r"\n\s*\n", after, maxsplit=1)[0]
        for match in _TOLERANCE.finditer(after):
            value = _tolerance_value(match)
            if value is not None:
                return value
        before = text[max(0, phrase.start() - _BACKWARD_CHARS):phrase.start()]
        before = re.split(r"\n|\.\s", before)[-1]
        for match in reversed(list(_TOLERANCE.finditer(before))):
            value = _tolerance_value(match)
            if value is not None:
                return value
    return None


def build_prompt(description: str, time_limit: float, memory_limit_bytes: int, language: str) -> list[dict]:
    """Chat messages asking for reasoning followed by one final fenced code block."""
    language_name, fence = _LANGUAGE_NAMES[language]
    user = USER_TEMPLATE.format(description=description.strip(), time_limit=time_limit,
                                memory_mb=max(1, memory_limit_bytes // 1_000_000),
                                language_name=language_name, fence=fence)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


class _TokenCounter:
    def __init__(self, tokenizer: str):
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer)

    def __call__(self, messages: list[dict]) -> int:
        if getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):  # BatchEncoding in newer transformers
                ids = ids["input_ids"]
            return len(ids)
        return len(self.tokenizer("\n\n".join(m["content"] for m in messages))["input_ids"])


def check_row(row: dict, cfg: FilterConfig, seen: set[str], count_tokens=None) -> tuple[dict | None, Dropped | None]:
    """Decides one row. Returns (verl row without split, None) to keep it, or (None, Dropped).

    `seen` holds statement hashes of the rows kept so far (updated here) for deduplication.
    """
    name = str(row.get("name", ""))[:200]
    try:
        _check_schema(row)
        public = _tests(row, "public_tests")
        private = _tests(row, "private_tests")
        generated = _tests(row, "generated_tests") if cfg.include_generated_tests else None
    except MalformedRow as exc:
        return None, Dropped(-1, name, MALFORMED, str(exc))

    def drop(reason: str, detail: str):
        return None, Dropped(-1, name, reason, detail)

    source = SOURCES.get(row["source"], f"unknown id {row['source']}")
    if source not in cfg.sources:
        return drop(WRONG_SOURCE, f"source {source} is not in {list(cfg.sources)}")
    rating = row.get("cf_rating") or 0
    if rating <= 0:
        return drop(UNRATED, f"cf_rating={rating}")
    tier = tier_of(rating, cfg.tiers)
    if tier is None or (cfg.keep_tiers is not None and tier not in cfg.keep_tiers):
        wanted = {t: cfg.tiers[t] for t in (cfg.keep_tiers or cfg.tiers)}
        return drop(OUTSIDE_TIERS, f"cf_rating={rating} is in no kept tier {wanted}")
    if generated:
        private = {k: private[k] + generated[k] for k in ("input", "output")}
    if len(private["input"]) < cfg.min_private_tests:
        return drop(TOO_FEW_TESTS, f"{len(private['input'])} private tests < {cfg.min_private_tests}")
    description = row["description"]
    if cfg.drop_interactive and ("interactive" in (row.get("cf_tags") or []) or _INTERACTIVE_MARK.search(description)):
        return drop(INTERACTIVE, "tagged or described as interactive")
    if cfg.drop_images and _IMAGE_MARK.search(description):
        return drop(IMAGE, "the statement refers to an image that is not in the text")
    digest = statement_hash(description)
    if cfg.deduplicate and digest in seen:
        return drop(DUPLICATE, f"same normalised statement as an earlier kept row (sha1 {digest[:12]})")

    time_limit = time_limit_seconds(row)
    prompt = build_prompt(description, time_limit or cfg.default_time_limit, row["memory_limit_bytes"], cfg.language)
    n_tokens = count_tokens(prompt) if count_tokens else None
    if cfg.max_prompt_tokens is not None and n_tokens > cfg.max_prompt_tokens:
        return drop(PROMPT_TOO_LONG, f"{n_tokens} prompt tokens > max_prompt_tokens={cfg.max_prompt_tokens}")
    seen.add(digest)
    if cfg.max_private_tests is not None:
        private = {k: v[:cfg.max_private_tests] for k, v in private.items()}
    verl_row = {
        "data_source": DATA_SOURCE,
        "prompt": prompt,
        "ability": "code",
        "reward_model": {
            "style": "rule",
            "ground_truth": {
                "name": row["name"],
                "public_tests": public,
                "private_tests": private,
                "time_limit": float(time_limit or cfg.default_time_limit),
                "memory_limit_bytes": int(row["memory_limit_bytes"]),
                "cf_rating": int(rating),
                "float_tolerance": float_tolerance_from_statement(description),
            },
        },
        "extra_info": {
            "index": -1, "split": "", "tier": tier, "name": row["name"], "cf_rating": int(rating),
            "language": cfg.language, "source_index": -1, "prompt_tokens": n_tokens,
            "statement_sha1": digest, "time_limit_defaulted": time_limit is None,
        },
    }
    return verl_row, None


# ----------------------------------------------------------------------------------------------------------
# Writing

_TESTS = pa.struct([("input", pa.list_(pa.string())), ("output", pa.list_(pa.string()))])
VERL_SCHEMA = pa.schema([
    ("data_source", pa.string()),
    ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
    ("ability", pa.string()),
    ("reward_model", pa.struct([
        ("style", pa.string()),
        ("ground_truth", pa.struct([
            ("name", pa.string()), ("public_tests", _TESTS), ("private_tests", _TESTS),
            ("time_limit", pa.float64()), ("memory_limit_bytes", pa.int64()), ("cf_rating", pa.int64()),
            ("float_tolerance", pa.float64()),  # null: exact tokens; see float_tolerance_from_statement
        ])),
    ])),
    ("extra_info", pa.struct([
        ("index", pa.int64()), ("split", pa.string()), ("tier", pa.string()), ("name", pa.string()),
        ("cf_rating", pa.int64()), ("language", pa.string()), ("source_index", pa.int64()),
        ("prompt_tokens", pa.int64()), ("statement_sha1", pa.string()), ("time_limit_defaulted", pa.bool_()),
    ])),
])


class _BatchedWriter:
    """Parquet writer that buffers a few rows at a time (large test strings make rows big)."""

    def __init__(self, path: Path, rows_per_group: int = 32):
        self.writer = pq.ParquetWriter(path, VERL_SCHEMA, compression="zstd")
        self.rows: list[dict] = []
        self.rows_per_group = rows_per_group
        self.count = 0

    def write(self, row: dict) -> None:
        self.rows.append(row)
        self.count += 1
        if len(self.rows) >= self.rows_per_group:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.writer.write_table(pa.Table.from_pylist(self.rows, schema=VERL_SCHEMA))
            self.rows = []

    def close(self) -> None:
        self.flush()
        self.writer.close()


def split_assignment(tiers: list[str], test_fraction: float, seed: int) -> list[str]:
    """'train'/'test' per kept problem, stratified by tier, seeded. Each problem lands in exactly one split."""
    rng = random.Random(seed)
    splits = ["train"] * len(tiers)
    for tier in sorted(set(tiers)):
        members = [i for i, t in enumerate(tiers) if t == tier]
        rng.shuffle(members)
        n_test = round(len(members) * test_fraction)
        if test_fraction > 0 and n_test == 0 and len(members) >= 2:
            n_test = 1  # every tier is represented in the test split when it can spare a problem
        for i in members[:n_test]:
            splits[i] = "test"
    return splits


def prepare_dataset(dataset: str | Path, output_dir: str | Path, cfg: FilterConfig | None = None,
                    progress: bool = False) -> PrepareReport:
    """Filters `dataset` and writes `train.parquet`, `test.parquet`, `dropped.jsonl` and `report.json`.

    Memory stays bounded by one record batch plus a fingerprint per row, whatever the dataset size.
    """
    cfg = cfg or FilterConfig()
    cfg.validate()
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = PrepareReport()
    count_tokens = _TokenCounter(cfg.tokenizer) if cfg.tokenizer else None
    columns = BASE_COLUMNS + (["generated_tests"] if cfg.include_generated_tests else [])
    seen: set[str] = set()
    kept_tiers: list[str] = []
    rows = iter_rows(dataset, split=cfg.split, columns=columns)
    if progress:
        from tqdm import tqdm  # a text bar: no widgets needed in notebooks

        rows = tqdm(rows, desc="filtering", unit="row")
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        spool_path = Path(tmp) / "kept.parquet"
        spool = _BatchedWriter(spool_path)
        for index, row in rows:
            report.rows_read += 1
            if isinstance(row, MalformedRow):
                report.dropped.append(Dropped(index, "", MALFORMED, str(row)))
                continue
            if isinstance(row.get("cf_rating"), int):
                report.ratings_before.append(row["cf_rating"])
            verl_row, dropped = check_row(row, cfg, seen, count_tokens)
            if dropped is not None:
                dropped.index = index
                report.dropped.append(dropped)
                continue
            verl_row["extra_info"]["source_index"] = index
            spool.write(verl_row)
            info = verl_row["extra_info"]
            kept_tiers.append(info["tier"])
            report.ratings_after.append(info["cf_rating"])
            report.private_tests_after.append(len(verl_row["reward_model"]["ground_truth"]["private_tests"]["input"]))
            report.prompt_chars.append(sum(len(m["content"]) for m in verl_row["prompt"]))
            if info["prompt_tokens"] is not None:
                report.prompt_tokens.append(info["prompt_tokens"])
            report.defaulted_time_limits += int(info["time_limit_defaulted"])
            report.float_answers += int(verl_row["reward_model"]["ground_truth"]["float_tolerance"] is not None)
        spool.close()
        report.kept = spool.count
        report.tiers = dict(sorted(Counter(kept_tiers).items()))
        splits = split_assignment(kept_tiers, cfg.test_fraction, cfg.seed)
        writers = {name: _BatchedWriter(out / f"{name}.parquet") for name in ("train", "test")}
        position = 0
        for batch in pq.ParquetFile(spool_path).iter_batches(batch_size=32):
            for verl_row in batch.to_pylist():
                name = splits[position]
                verl_row["extra_info"]["split"] = name
                verl_row["extra_info"]["index"] = writers[name].count
                writers[name].write(verl_row)
                position += 1
        for name, writer in writers.items():
            writer.close()
            report.splits[name] = writer.count
            report.files[name] = str(out / f"{name}.parquet")
    with (out / "dropped.jsonl").open("w") as fh:
        for d in report.dropped:
            fh.write(json.dumps(asdict(d)) + "\n")
    (out / "report.json").write_text(json.dumps(report.to_json(), indent=1))
    return report


def read_verl_parquet(path: str | Path) -> list[dict]:
    """Rows of a train/test parquet written by `prepare_dataset` (fine for the sample; stream big files)."""
    return pq.read_table(path).to_pylist()


def reference_solutions(row: dict, language: str | None = None) -> list[tuple[str, str]]:
    """(language, source) of a CodeContests row's correct solutions that our judge can run."""
    return _solutions(row.get("solutions"), language)


def incorrect_solutions(row: dict, language: str | None = None) -> list[tuple[str, str]]:
    return _solutions(row.get("incorrect_solutions"), language)


def _solutions(block: dict | None, language: str | None) -> list[tuple[str, str]]:
    if not block:
        return []
    names = {v: k for k, v in LANGUAGE_IDS.items()}
    out = []
    for lang_id, source in zip(block.get("language", []), block.get("solution", [])):
        lang = names.get(lang_id)
        if lang and (language is None or lang == language):
            out.append((lang, source))
    return out


def load_problems(dataset: str | Path, split: str = "train", with_solutions: bool = True) -> list[dict]:
    """Well-formed raw CodeContests rows as dicts (for small datasets: notebooks 02 and 05, tests)."""
    rows = []
    for index, row in iter_rows(dataset, split=split):
        if isinstance(row, MalformedRow):
            raise ValueError(f"row {index} of {dataset} is malformed: {row}")
        if not with_solutions:
            row = {k: v for k, v in row.items() if k not in ("solutions", "incorrect_solutions")}
        rows.append(row)
    return rows


__all__ = [
    "FilterConfig", "Dropped", "PrepareReport", "prepare_dataset", "iter_rows", "check_row", "build_prompt",
    "normalise_statement", "statement_hash", "tier_of", "split_assignment", "read_verl_parquet",
    "reference_solutions", "incorrect_solutions", "load_problems", "VERL_SCHEMA", "DEFAULT_TIERS", "SOURCES",
    "LANGUAGES", "MalformedRow", "float_tolerance_from_statement",
]


def main(argv=None) -> None:
    """`python -m codefu_helpers.data --dataset data/sample --output-dir data/processed [--language python]`"""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m codefu_helpers.data", description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="data/sample", help="local folder/file or HF id (deepmind/code_contests)")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--language", default="cpp", choices=sorted(_LANGUAGE_NAMES),
                        help="language the prompts ask for: cpp (CodeFu-7B) or python (the CPU tutorial)")
    parser.add_argument("--keep-tiers", nargs="*", default=None, help="e.g. easy (default: all tiers)")
    parser.add_argument("--test-fraction", type=float, default=0.2, help="held-out share of each tier (notebook 01: 0.2)")
    parser.add_argument("--tokenizer", default=None)
    parser.add_argument("--max-prompt-tokens", type=int, default=None)
    parser.add_argument("--include-generated-tests", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    cfg = FilterConfig(language=args.language, keep_tiers=tuple(args.keep_tiers) if args.keep_tiers else None,
                     test_fraction=args.test_fraction, tokenizer=args.tokenizer, max_prompt_tokens=args.max_prompt_tokens,
                     include_generated_tests=args.include_generated_tests, seed=args.seed)
    report = prepare_dataset(args.dataset, args.output_dir, cfg, progress=True)
    print(report.summary())
    print(f"wrote {report.files} and {Path(args.output_dir) / 'dropped.jsonl'}")


if __name__ == "__main__":
    main()
