"""codefu_helpers.data: filters, tiers, dedupe, verl schema round trip, no leakage, bad rows, token budget."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from codefu_helpers import data
from codefu_helpers.data import FilterConfig, check_row, prepare_dataset

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
SOURCES = ROOT / "data" / "sources"


def authored_problem_count() -> int:
    return sum(1 for p in (SOURCES / "problems").iterdir() if (p / "meta.yaml").exists())


def make_row(**overrides) -> dict:
    row = {
        "name": "1_A. Test", "description": "Print the sum of two integers a and b.",
        "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
        "private_tests": {"input": ["2 2\n", "5 5\n"], "output": ["4\n", "10\n"]},
        "generated_tests": {"input": ["7 1\n"], "output": ["8\n"]},
        "source": 2, "difficulty": 7, "cf_rating": 800, "cf_tags": ["math"],
        "time_limit": {"seconds": 1, "nanos": 500_000_000}, "memory_limit_bytes": 256_000_000,
        "solutions": {"language": [3], "solution": ["print(sum(map(int, input().split())))"]},
        "incorrect_solutions": {"language": [], "solution": []},
    }
    row.update(overrides)
    return row


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    out = tmp_path_factory.mktemp("prepared")
    report = prepare_dataset(SAMPLE, out, FilterConfig(test_fraction=0.2))
    return out, report


# ---------------------------------------------------------------------------------------------- the sample


def test_sample_keeps_every_authored_problem_and_drops_every_derived_row(prepared):
    out, report = prepared
    derived = yaml.safe_load((SOURCES / "derived.yaml").read_text())
    assert report.rows_read == authored_problem_count() + len(derived)
    assert report.kept == authored_problem_count()
    dropped_by_name = {d.name: d.reason for d in report.dropped}
    assert dropped_by_name == {
        "CC-CANDY. Candy Split (CodeChef mirror)": data.WRONG_SOURCE,
        "9901_A. Candy Split Without Private Tests": data.TOO_FEW_TESTS,
        "9902_A. Unrated Candy Split": data.UNRATED,
        "9903_A. Candy Split (re-upload)": data.DUPLICATE,
        "9904_A. Guess the Candies": data.INTERACTIVE,
        "9905_A. Candy Picture": data.IMAGE,
    }
    # the dropped table on disk says the same, with positions in the input
    on_disk = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert {(d["name"], d["reason"]) for d in on_disk} == set(dropped_by_name.items())
    assert all(d["index"] >= 0 for d in on_disk)


def test_sample_covers_every_tier(prepared):
    _, report = prepared
    assert set(report.tiers) == {"easy", "hard", "expert"}, report.tiers


def test_verl_schema_round_trip_with_pyarrow_and_datasets(prepared):
    out, report = prepared
    table = pq.read_table(out / "train.parquet")
    assert table.schema.equals(data.VERL_SCHEMA)
    rows = table.to_pylist()
    assert len(rows) == report.splits["train"]
    for row in rows:
        assert row["data_source"] == "codecontests" and row["ability"] == "code"
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        gt = row["reward_model"]["ground_truth"]
        assert row["reward_model"]["style"] == "rule"
        assert set(gt) == {"name", "public_tests", "private_tests", "time_limit", "memory_limit_bytes", "cf_rating",
                           "float_tolerance"}
        assert gt["float_tolerance"] is None  # no statement of the sample allows an error
        assert isinstance(gt["time_limit"], float) and gt["time_limit"] > 0
        assert len(gt["private_tests"]["input"]) == len(gt["private_tests"]["output"]) >= 1
        assert "```cpp" in row["prompt"][1]["content"]
    from datasets import load_dataset

    ds = load_dataset("parquet", data_files=str(out / "train.parquet"), split="train")
    assert ds[0]["reward_model"]["ground_truth"] == rows[0]["reward_model"]["ground_truth"]
    assert ds[0]["prompt"] == rows[0]["prompt"]


def test_ground_truth_matches_the_raw_row(prepared):
    out, _ = prepared
    raw = {r["name"]: r for r in data.load_problems(SAMPLE)}
    for row in data.read_verl_parquet(out / "train.parquet"):
        gt = row["reward_model"]["ground_truth"]
        source = raw[gt["name"]]
        assert gt["private_tests"] == source["private_tests"]
        assert gt["public_tests"] == source["public_tests"]
        limit = source["time_limit"]
        assert gt["time_limit"] == pytest.approx(limit["seconds"] + limit["nanos"] / 1e9)
        assert source["description"].strip() in row["prompt"][1]["content"]


def test_no_problem_leaks_across_splits(prepared):
    out, report = prepared
    train = data.read_verl_parquet(out / "train.parquet")
    test = data.read_verl_parquet(out / "test.parquet")
    assert len(train) + len(test) == report.kept
    assert test, "the sample must give a non-empty test split"
    train_keys = {r["extra_info"]["statement_sha1"] for r in train}
    test_keys = {r["extra_info"]["statement_sha1"] for r in test}
    assert not train_keys & test_keys
    assert not {r["extra_info"]["name"] for r in train} & {r["extra_info"]["name"] for r in test}
    for split, rows in (("train", train), ("test", test)):
        assert [r["extra_info"]["index"] for r in rows] == list(range(len(rows)))
        assert {r["extra_info"]["split"] for r in rows} == {split}


def test_split_is_stratified_by_tier_and_seeded():
    tiers = ["easy"] * 10 + ["hard"] * 20 + ["expert"] * 3
    a = data.split_assignment(tiers, 0.2, seed=1)
    assert a == data.split_assignment(tiers, 0.2, seed=1)
    assert a != data.split_assignment(tiers, 0.2, seed=2)
    for tier, expected in (("easy", 2), ("hard", 4), ("expert", 1)):
        assert sum(1 for t, s in zip(tiers, a) if t == tier and s == "test") == expected
    assert data.split_assignment(tiers, 0.0, seed=1) == ["train"] * len(tiers)


# ---------------------------------------------------------------------------------------------- filters


@pytest.mark.parametrize("rating,tier", [(800, "easy"), (1000, "easy"), (1050, None), (1100, "hard"),
                                         (2200, "hard"), (2300, "expert"), (3500, "expert"), (3600, None)])
def test_tier_boundaries(rating, tier):
    kept, dropped = check_row(make_row(cf_rating=rating), FilterConfig(), set())
    if tier is None:
        assert kept is None and dropped.reason == data.OUTSIDE_TIERS and str(rating) in dropped.detail
    else:
        assert dropped is None and kept["extra_info"]["tier"] == tier


def test_keep_tiers_selects_one_tier():
    cfg = FilterConfig(keep_tiers=("hard",))
    assert check_row(make_row(cf_rating=1500), cfg, set())[0] is not None
    _, dropped = check_row(make_row(cf_rating=900), cfg, set())
    assert dropped.reason == data.OUTSIDE_TIERS


@pytest.mark.parametrize("override,reason", [
    ({"source": 1}, data.WRONG_SOURCE),
    ({"cf_rating": 0}, data.UNRATED),
    ({"cf_rating": None}, data.UNRATED),
    ({"private_tests": {"input": [], "output": []}}, data.TOO_FEW_TESTS),
    ({"cf_tags": ["interactive"]}, data.INTERACTIVE),
    ({"description": "Guess the number. This is an interactive problem."}, data.INTERACTIVE),
    ({"description": "Look at the figure: <image>"}, data.IMAGE),
])
def test_each_filter_drops_with_its_reason(override, reason):
    kept, dropped = check_row(make_row(**override), FilterConfig(), set())
    assert kept is None and dropped.reason == reason


def test_filters_can_be_turned_off():
    cfg = FilterConfig(sources=("CODEFORCES", "CODECHEF"), drop_interactive=False, drop_images=False, min_private_tests=0)
    for override in ({"source": 1}, {"cf_tags": ["interactive"]}, {"description": "See <image>"},
                     {"private_tests": {"input": [], "output": []}}):
        kept, dropped = check_row(make_row(**override), cfg, set())
        assert dropped is None, (override, dropped)


def test_dedupe_ignores_case_whitespace_and_punctuation():
    seen = set()
    first, _ = check_row(make_row(), FilterConfig(), seen)
    assert first is not None
    _, dropped = check_row(make_row(name="2_B. Copy", description="  PRINT the sum of\n two integers a and b!  "),
                           FilterConfig(), seen)
    assert dropped.reason == data.DUPLICATE
    other, _ = check_row(make_row(name="3_C. Other", description="Print the product of two integers."),
                         FilterConfig(), seen)
    assert other is not None
    assert check_row(make_row(name="4_D. Again"), FilterConfig(deduplicate=False), seen)[1] is None


def test_generated_tests_and_cap():
    kept, _ = check_row(make_row(), FilterConfig(include_generated_tests=True), set())
    assert kept["reward_model"]["ground_truth"]["private_tests"]["input"] == ["2 2\n", "5 5\n", "7 1\n"]
    kept, _ = check_row(make_row(), FilterConfig(max_private_tests=1), set())
    assert kept["reward_model"]["ground_truth"]["private_tests"] == {"input": ["2 2\n"], "output": ["4\n"]}


def test_missing_time_limit_gets_the_default_and_is_counted(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(make_row(time_limit=None)) + "\n")
    report = prepare_dataset(path, tmp_path / "out", FilterConfig(default_time_limit=3.0, test_fraction=0.0))
    assert report.defaulted_time_limits == 1
    row = data.read_verl_parquet(tmp_path / "out" / "train.parquet")[0]
    assert row["reward_model"]["ground_truth"]["time_limit"] == 3.0
    assert row["extra_info"]["time_limit_defaulted"] is True


def test_prompt_asks_for_reasoning_and_one_final_block_in_the_language():
    for language, fence in (("cpp", "```cpp"), ("python", "```python")):
        messages = data.build_prompt("Statement here.", 2.0, 256_000_000, language)
        user = messages[-1]["content"]
        assert "Statement here." in user and fence in user and "256 MB" in user and "2 seconds" in user


@pytest.mark.parametrize("kwargs,field", [
    ({"sources": ("CODEFORCE",)}, "sources"), ({"language": "java"}, "language"),
    ({"test_fraction": 1.0}, "test_fraction"), ({"max_prompt_tokens": 100}, "max_prompt_tokens"),
    ({"tiers": {"easy": (1000, 800)}}, "tiers"), ({"keep_tiers": ("medium",)}, "keep_tiers"),
])
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        FilterConfig(**kwargs).validate()


# ---------------------------------------------------------------------------------------------- bad input


def test_bad_rows_are_reported_with_index_and_reason_and_do_not_stop_the_run(tmp_path):
    good = json.dumps(make_row()).encode()
    lines = [
        good,                                                                   # 0 kept
        b'{"name": "broken", ',                                                 # 1 not JSON
        json.dumps(make_row(name="2_A. Latin1")).encode().replace(b"sum", b"s\xe9m"),  # 2 not UTF-8
        json.dumps({k: v for k, v in make_row(name="3_A. X").items() if k != "description"}).encode(),  # 3
        json.dumps(make_row(name="4_A. Y", cf_rating="hard")).encode(),         # 4 wrong type
        json.dumps(make_row(name="5_A. Z", private_tests={"input": ["1\n"], "output": []})).encode(),  # 5
        json.dumps(make_row(name="6_A. S", description="Other statement.",
                            private_tests={"input": ["\udcff\n"], "output": ["1\n"]})).encode(),  # 6 surrogate
        b"[1, 2, 3]",                                                           # 7 not an object
        json.dumps(make_row(name="8_A. Fine", description="A different statement entirely.")).encode(),  # 8
    ]
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    report = prepare_dataset(path, tmp_path / "out", FilterConfig(test_fraction=0.0))
    assert report.rows_read == 9 and report.kept == 2
    malformed = {d.index: d.detail for d in report.dropped if d.reason == data.MALFORMED}
    assert set(malformed) == {1, 2, 3, 4, 5, 6, 7}
    assert "JSON" in malformed[1]
    assert "UTF-8" in malformed[2]
    assert "description" in malformed[3]
    assert "cf_rating" in malformed[4] and "'hard'" in malformed[4]
    assert "1 inputs but 0 outputs" in malformed[5]
    assert "UTF-8" in malformed[6] and "private_tests[0]" in malformed[6]
    assert "object" in malformed[7]
    names = [r["extra_info"]["name"] for r in data.read_verl_parquet(tmp_path / "out" / "train.parquet")]
    assert names == ["1_A. Test", "8_A. Fine"]


def test_parquet_with_non_utf8_binary_tests_is_reported(tmp_path):
    rows = [make_row(), make_row(name="2_A. Bytes", description="Another statement.")]
    for row in rows:
        for key in ("public_tests", "private_tests", "generated_tests"):
            row[key] = {k: [s.encode() for s in v] for k, v in row[key].items()}
    rows[1]["private_tests"]["input"][1] = b"\xff\xfe\n"
    table = pa.Table.from_pylist(rows)
    assert pa.types.is_binary(table.schema.field("private_tests").type.field("input").type.value_type)
    pq.write_table(table, tmp_path / "train-00000-of-00001.parquet")
    report = prepare_dataset(tmp_path, tmp_path / "out", FilterConfig(test_fraction=0.0))
    assert report.kept == 1
    [bad] = report.dropped
    assert bad.index == 1 and bad.reason == data.MALFORMED and "private_tests[1]" in bad.detail


def test_missing_dataset_path_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="deepmind/code_contests"):
        list(data.iter_rows(tmp_path / "nope" / "deeper"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="parquet"):
        list(data.iter_rows(tmp_path / "empty"))


# ---------------------------------------------------------------------------------------------- streaming


def test_parquet_reading_is_columnar_and_split_aware(tmp_path):
    rows = [make_row(name=f"{i}_A. P", description=f"Statement number {i}.") for i in range(5)]
    pq.write_table(pa.Table.from_pylist(rows[:3]), tmp_path / "train-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist(rows[3:]), tmp_path / "test-00000-of-00001.parquet")
    train = list(data.iter_rows(tmp_path, split="train", columns=["name", "cf_rating"], batch_size=2))
    assert [i for i, _ in train] == [0, 1, 2]
    assert all(set(r) == {"name", "cf_rating"} for _, r in train)
    assert [r["name"] for _, r in data.iter_rows(tmp_path, split="test")] == ["3_A. P", "4_A. P"]


def test_token_budget_uses_a_real_tokenizer(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel()
    corpus = [r["description"] for r in data.load_problems(SAMPLE, with_solutions=False)]
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=500, special_tokens=["<unk>"]))
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>").save_pretrained(tmp_path / "tok")

    rows = [make_row(name="1_A. Short", description="Add two numbers."),
            make_row(name="2_A. Long", description="Add two numbers. " + "This sentence is padding. " * 200)]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    counted = prepare_dataset(path, tmp_path / "a", FilterConfig(tokenizer=str(tmp_path / "tok"), test_fraction=0))
    short, long = counted.prompt_tokens
    assert short < long
    budget = (short + long) // 2
    report = prepare_dataset(path, tmp_path / "b", FilterConfig(tokenizer=str(tmp_path / "tok"),
                                                              max_prompt_tokens=budget, test_fraction=0))
    assert report.kept == 1
    [dropped] = report.dropped
    assert dropped.name == "2_A. Long" and dropped.reason == data.PROMPT_TOO_LONG and str(long) in dropped.detail


# ---------------------------------------------------------------------------------------------- float answers

ALLOWS_1E6 = ("Print the probability that Alice wins.\n\nOutput\n\nPrint one real number. Your answer will be "
              "considered correct if its absolute or relative error does not exceed 10^{-6}.\n\nFormally, let your "
              "answer be a, and the jury's answer be b. Your answer is accepted if and only if "
              "\\frac{|a - b|}{\\max{(1, |b|)}} \\le 10^{-6}.")


@pytest.mark.parametrize("statement,tolerance", [
    (ALLOWS_1E6, 1e-6),
    ("Your answer is considered correct if its absolute or relative error does not exceed $10^{-9}$.", 1e-9),
    # CodeContests lost the superscript of older statements: 10^{-6} reads "10 - 6"
    ("The answer will be considered correct if the absolute or relative error does not exceed 10 - 6.", 1e-6),
    ("Print the answer with absolute or relative error at most 1e-6.", 1e-6),
    ("Your answer will be considered correct if its absolute error does not exceed 10^{-4}.", 1e-4),
    ("The relative or absolute error of your answer should not exceed 10^{\u22126}.", 1e-6),  # Unicode minus
    ("Answers within 10^{-6} absolute or relative error are accepted.", 1e-6),  # the bound before the phrase
    ("Output it with an error (absolute or relative) of at most 1.5 \\cdot 10^{-5}.", 1.5e-5),
    ("Your answer is correct if the absolute or relative error doesn't exceed 10\u207b\u2078.", 1e-8),  # 10⁻⁸
    ("The absolute or relative error must not be greater than 0.000001.", 1e-6),
    ("The absolute or relative error must not exceed 10<sup>-7</sup>.", 1e-7),
    ("absolute or relative error does not exceed 10^-6. Namely: let's assume that your answer is a.", 1e-6),
    # negatives: "error" in another sense, an error without a bound, bounds that are not tolerances
    ("If there is no solution, print an error message.", None),
    ("Vasya made an error in his notes. The absolute value of each number does not exceed 10^9.", None),
    ("Your answer will be considered correct if its absolute or relative error does not exceed <image>.", None),
    ("Print the answer modulo 10^9+7.", None),
    ("Print a real number with at least 6 digits after the decimal point.", None),
    ("It is guaranteed that the absolute difference of a_i and a_j does not exceed 10^{-6}.", None),
    ("Find the relative error of the scales. For example, they may show 0.5 for an empty pan.", None),
    ("Print the sum of two integers a and b.", None),
])
def test_float_tolerance_from_statement(statement, tolerance):
    assert data.float_tolerance_from_statement(statement) == tolerance


def test_data_step_writes_the_float_tolerance(tmp_path):
    exact, _ = check_row(make_row(), FilterConfig(), set())
    assert exact["reward_model"]["ground_truth"]["float_tolerance"] is None
    rows = [make_row(name="1_A. Exact"), make_row(name="2_A. Probability", description=ALLOWS_1E6)]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = prepare_dataset(path, tmp_path / "out", FilterConfig(test_fraction=0.0))
    assert report.kept == 2 and report.float_answers == 1
    assert "float answers (statement allows an absolute/relative error): 1" in report.summary()
    table = pq.read_table(tmp_path / "out" / "train.parquet")
    assert table.schema.equals(data.VERL_SCHEMA)
    tolerance = {r["extra_info"]["name"]: r["reward_model"]["ground_truth"]["float_tolerance"]
                 for r in table.to_pylist()}
    assert tolerance == {"1_A. Exact": None, "2_A. Probability": 1e-6}
