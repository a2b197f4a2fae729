"""The online curriculum (data.curriculum): skip problems the policy has settled, always or never solving them.

Under a group baseline (GRPO, RLOO) a group whose samples all pass, or all fail, gets advantage 0: its rollout costs
time and teaches nothing. Dynamic sampling drops such groups after generating them; the curriculum stops drawing
them. Each time a step samples a problem (a *visit*) the outcome over its valid samples is recorded: `all` (every
sample solved it), `none` (no sample did) or `mixed`; judge failures are not outcomes, and a visit without a valid
sample records nothing. A problem whose last K visits (data.curriculum_visits) were all `all` is *retired solved*,
all `none` *retired unsolved*; the trainer's data order passes over retired problems from then on (they have no new
visits, so retirement lasts for the rest of the run). The state is a dict of short lists, saved in every checkpoint.

    curriculum = Curriculum(visits=2)
    curriculum.record("p1", [False, False, False, False])
    curriculum.record("p1", [False, False])
    curriculum.retired("p1")        # "unsolved"
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

ALL, NONE, MIXED = "all", "none", "mixed"


class CurriculumExhausted(RuntimeError):
    """Every training problem is retired: nothing is left to draw."""


def outcome(passed: Sequence[bool]) -> str | None:
    """The visit's outcome over its valid samples' passed flags; None without a valid sample."""
    if not passed:
        return None
    return ALL if all(passed) else NONE if not any(passed) else MIXED


class Curriculum:
    def __init__(self, visits: int, history: dict[str, list[str]] | None = None):
        if visits < 1:
            raise ValueError(f"data.curriculum_visits={visits} must be >= 1")
        self.visits = visits
        self.history: dict[str, list[str]] = {k: list(v)[-visits:] for k, v in (history or {}).items()}

    def record(self, problem: str, passed: Sequence[bool]) -> None:
        """One visit of `problem`: the passed flags of its samples whose judging succeeded."""
        result = outcome(passed)
        if result is not None:
            self.history[problem] = (self.history.get(problem, []) + [result])[-self.visits:]

    def retired(self, problem: str) -> str | None:
        """"solved" or "unsolved" for a retired problem, else None."""
        last = self.history.get(problem, [])
        if len(last) < self.visits or len(set(last)) != 1 or last[0] == MIXED:
            return None
        return "solved" if last[0] == ALL else "unsolved"

    def counts(self, problems: Sequence[str]) -> dict[str, int]:
        """Retired problems among `problems` (each name once): {"solved": .., "unsolved": ..}."""
        found = Counter(self.retired(p) for p in dict.fromkeys(problems))
        return {"solved": found["solved"], "unsolved": found["unsolved"]}

    def state(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in sorted(self.history.items())}
