"""The samples themselves in a run's record: a few of each step's responses with their verdicts, rewards and
advantages, one JSON object per sample in `<output_dir>/samples.jsonl` (and, through `tracking.RunLogger`, an MLflow
artifact per step: `samples/step_000012.jsonl`).

Metrics say *that* the reward moved; the samples say *why*: what the model wrote, which tests it failed, and
which way the update pushed each response. `tracking.samples_logged` picks how many per step (0: none, -1: all).

    records = step_records(step=3, last_step=trainer.last_step, limit=8)   # what RunLogger.log_samples appends
    read_samples("runs/grpo", step=3)        # -> list of dicts
    samples_table("runs/grpo")               # the last step's records as a short pandas table

Which samples: round-robin over the step's groups, so that as many problems as possible are seen: the first sample
of every group (in batch order), then the second of every group, and so on, until `limit`; the chosen ones are
listed in the step's own sample order. No randomness, so a resumed run writes the same records for a redone step.
The samples are those the step trains on (`last_step`): with algorithm.dynamic_sampling, the groups it kept.

A record (`step_records`):
    step, index          the step (1-based, as in metrics.jsonl) and the sample's position among the step's samples
    problem, group       the problem's name (reward_model.ground_truth.name) and its position in the step's batch
    sample               the sample's position within its group
    response             the decoded response; response_length its tokens; truncated: cut at the length budget
                         (finish_reason "length")
    reward, passed       the judged reward and whether every test passed
    status, verdict      the reward's status (accepted, failed, time_limit, compile_error, no_code, judge_error) and
                         the judge's verdict of the first failing test
    test_verdicts        per-test verdicts (["OK", "OK", "WA"]) when the judge ran tests, else []
    passed_tests, total_tests, judge_error, judge_message
    kept                 whether the update trained on it (judge failures and empty responses are excluded)
    advantage            its advantage in the update (grpo, rloo); for per-token estimators (gae,
                         reinforce_plus_plus) the mean over its response tokens; null when the step took no update
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

SAMPLES_FILE = "samples.jsonl"
DEFAULT_LIMIT = 8  # tracking.samples_logged's default
TABLE_COLUMNS = ("step", "problem", "group", "sample", "reward", "advantage", "response_length", "truncated",
                 "status", "kept", "response")


def choose_samples(group_ids: Sequence, limit: int) -> list[int]:
    """Indices of the samples to record (see the module docstring): round-robin over the groups in the order they
    first appear, `limit` of them (-1: all; 0: none), returned in ascending order."""
    if limit == 0 or not group_ids:
        return []
    members: dict[Any, list[int]] = {}
    for i, g in enumerate(group_ids):
        members.setdefault(g, []).append(i)
    if limit < 0 or limit >= len(group_ids):
        return list(range(len(group_ids)))
    chosen: list[int] = []
    for depth in range(max(len(m) for m in members.values())):
        for indices in members.values():
            if depth < len(indices) and len(chosen) < limit:
                chosen.append(indices[depth])
    return sorted(chosen)


def step_records(step: int, last_step: dict[str, Any], limit: int = DEFAULT_LIMIT) -> list[dict[str, Any]]:
    """The records of one step from the trainer's `last_step` (rows, samples, group_ids, results, keep and, after an
    update, advantages: (B,) or per token (B, T))."""
    samples, group_ids = last_step.get("samples") or [], last_step.get("group_ids") or []
    rows, results, keep = last_step.get("rows") or [], last_step.get("results") or [], last_step.get("keep") or []
    advantages = last_step.get("advantages")
    seen: dict[Any, int] = {}  # samples of each group so far
    within = []  # each sample's position within its group
    for g in group_ids:
        within.append(seen.get(g, 0))
        seen[g] = within[-1] + 1
    records = []
    for i in choose_samples(group_ids, limit):
        sample, result, group = samples[i], results[i], _plain(group_ids[i])
        row = rows[group] if isinstance(group, int) and 0 <= group < len(rows) else None  # group ids index the rows
        details = result.details or {}
        verdicts = details.get("verdicts")
        records.append({
            "step": int(step), "index": i, "problem": problem_name(row) if row is not None else None,
            "group": group, "sample": within[i], "response": sample.text,
            "response_length": len(sample.response_ids), "truncated": sample.finish_reason == "length",
            "finish_reason": sample.finish_reason, "reward": float(result.score), "passed": bool(result.passed),
            "status": result.status, "verdict": details.get("verdict") or None,
            "test_verdicts": verdicts.split(",") if isinstance(verdicts, str) and verdicts else [],
            "passed_tests": _int_or_none(details.get("passed")), "total_tests": _int_or_none(details.get("total")),
            "judge_error": bool(result.judge_error),
            "judge_message": details.get("judge_error_message") or details.get("error") or "",
            "kept": bool(keep[i]) if i < len(keep) else None,
            "advantage": _advantage(advantages, i, len(sample.response_ids)),
        })
    return records


def problem_name(row: dict) -> str | None:
    """The name that identifies a problem in a verl row (reward_model.ground_truth.name, else extra_info.name)."""
    truth = (row.get("reward_model") or {}).get("ground_truth")
    if isinstance(truth, str):  # a ground truth kept as JSON text
        try:
            truth = json.loads(truth)
        except ValueError:
            truth = None
    name = (truth or {}).get("name") if isinstance(truth, dict) else None
    return name if name is not None else (row.get("extra_info") or {}).get("name")


def _advantage(advantages, i: int, length: int) -> float | None:
    if advantages is None:
        return None
    if advantages.dim() == 1:  # (B,)
        return float(advantages[i])
    if length == 0:  # (B, T) with no response token to average
        return 0.0
    return float(advantages[i, :length].double().mean())


def _plain(value):
    return value.item() if hasattr(value, "item") else value  # numpy / torch scalars


def _int_or_none(value) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# ------------------------------------------------------------------------------------------------ the file


def append_samples(output_dir: str | Path, records: list[dict]) -> Path:
    """Appends `records` to <output_dir>/samples.jsonl, one JSON object per line."""
    path = Path(output_dir) / SAMPLES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(to_jsonl(records))
    return path


def to_jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def keep_steps_up_to(output_dir: str | Path, step: int) -> None:
    """Drops the records of steps after `step` (a resumed run redoes them; 0: drops the file)."""
    path = Path(output_dir) / SAMPLES_FILE
    if not path.exists():
        return
    if step <= 0:
        path.unlink()
        return
    kept = [line for line in path.read_text().splitlines() if line.strip() and json.loads(line)["step"] <= step]
    path.write_text("".join(line + "\n" for line in kept))


def read_samples(output_dir: str | Path, step: int | None = None) -> list[dict]:
    """The records of <output_dir>/samples.jsonl (all steps, or only `step`); [] when there is no such file."""
    path = Path(output_dir) / SAMPLES_FILE
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in records if step is None or r["step"] == step]


def samples_table(output_dir: str | Path, step: int | None = None, width: int = 120):
    """One step's records (`step`, or the last one logged) as a pandas DataFrame of TABLE_COLUMNS, each response cut
    to its first `width` characters."""
    import pandas as pd

    records = read_samples(output_dir)
    if step is None and records:
        step = max(r["step"] for r in records)
    chosen = [{**r, "response": _shorten(r["response"], width)} for r in records if r["step"] == step]
    return pd.DataFrame(chosen, columns=list(TABLE_COLUMNS))


def _shorten(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[:width - 1] + "…"
