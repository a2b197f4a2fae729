"""Dynamic sampling (algorithm.dynamic_sampling) and overlong responses (reward.overlong): the group filter and the
length penalty against direct computations, the keys' validation and their verl mapping, the worker seam that lets
only a step's last generation round drop vLLM's weights, and short trainer runs with the tiny model (HF rollout) in
which a step fills its batch over several rounds and a resumed run continues at the same problems.
"""

import copy
import zlib

import numpy as np
import pytest
import torch

from codefu_helpers import estimators
from codefu_helpers.config import ConfigError, ExperimentConfig
from codefu_helpers.reward import overlong_penalty
from codefu_helpers.rollout import SamplingParams

from conftest import ROOT

# ------------------------------------------------------------------------------------------------------------
# the maths


def _direct_informative(group_ids, scores, keep):
    """verl's filter_groups rule on the samples that count: std over the group > 0, with two samples at least."""
    out = []
    for g in dict.fromkeys(group_ids):
        values = [s for gg, s, k in zip(group_ids, scores, keep) if gg == g and k]
        if len(values) >= 2 and float(np.std(values)) > 0:
            out.append(g)
    return out


def test_informative_groups_and_solved_counts_equal_a_direct_computation():
    rng = np.random.default_rng(0)
    for trial in range(200):
        n_groups, n = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        group_ids = [g for g in range(n_groups) for _ in range(n)]
        levels = rng.choice([[0.0, 1.0], [0.0, 0.5, 1.0], [-1.0, -0.5, 0.0, 0.3, 1.0]][trial % 3], size=len(group_ids))
        constant = rng.random(n_groups) < 0.4  # some groups all equal, as solved or unsolved problems give
        scores = [float(levels[i]) if not constant[g] else float(g % 2) for i, g in enumerate(group_ids)]
        keep = (rng.random(len(group_ids)) < 0.8).astype(float).tolist()
        passed = [s == 1.0 for s in scores]
        valid = (rng.random(len(group_ids)) < 0.9).tolist()
        assert estimators.informative_groups(group_ids, scores, keep) == _direct_informative(group_ids, scores, keep)
        outcomes = {g: [p for gg, p, v in zip(group_ids, passed, valid) if gg == g and v] for g in set(group_ids)}
        assert estimators.solved_groups(group_ids, passed, valid) == (
            sum(1 for o in outcomes.values() if o and all(o)), sum(1 for o in outcomes.values() if o and not any(o)))
    # the edge cases by hand: a lone sample that counts has no baseline; an excluded sample's reward does not count
    assert estimators.informative_groups([0, 0, 1, 1], [1.0, 0.0, 1.0, 0.0], [1, 0, 1, 1]) == [1]
    assert estimators.informative_groups(["a", "a", "a"], [0.5, 0.5, 0.2], [1, 1, 0]) == []


def test_the_overlong_penalty_is_dapos_linear_ramp_over_the_buffer():
    max_len, buffer, factor = 64, 16, 0.7
    for length in range(0, max_len + 1):
        direct = 0.0 if length <= max_len - buffer else (max_len - buffer - length) / buffer * factor
        assert overlong_penalty(length, max_len, buffer, factor) == pytest.approx(direct, abs=1e-12)
    assert overlong_penalty(48, 64, 16, 0.7) == 0.0
    assert overlong_penalty(56, 64, 16, 0.7) == pytest.approx(-0.35)
    assert overlong_penalty(64, 64, 16, 0.7) == pytest.approx(-0.7)  # -factor at the budget


def test_filtered_samples_do_not_move_their_groups_baseline():
    """keep=0 (a truncated response under reward.overlong=filter) is as if the sample had never been drawn."""
    scores = torch.tensor([1.0, 0.0, 0.5, -1.0, 0.25])
    keep = torch.tensor([1.0, 1.0, 0.0, 1.0, 1.0])
    with_filtered = estimators.sample_advantages("grpo", scores, [0, 0, 0, 0, 0], keep)
    without = estimators.sample_advantages("grpo", scores[keep > 0], [0, 0, 0, 0], torch.ones(4))
    assert with_filtered[2] == 0.0
    torch.testing.assert_close(with_filtered[keep > 0], without)


def test_the_curriculum_retires_a_problem_after_k_agreeing_visits_as_a_direct_computation_says():
    from codefu_helpers.curriculum import Curriculum

    rng = np.random.default_rng(1)
    for visits in (1, 2, 3):
        curriculum, seen = Curriculum(visits), {}
        for _ in range(300):
            name = f"p{int(rng.integers(0, 6))}"
            size = int(rng.integers(0, 5))  # 0: every sample's judging failed, no visit
            bias = rng.choice([0.0, 0.5, 1.0])
            passed = [bool(rng.random() < bias) for _ in range(size)]
            curriculum.record(name, passed)
            if passed:
                seen.setdefault(name, []).append("all" if all(passed) else "none" if not any(passed) else "mixed")
            for p in (f"p{i}" for i in range(6)):
                last = seen.get(p, [])[-visits:]
                direct = None if len(last) < visits or len(set(last)) > 1 or last[0] == "mixed" else \
                    {"all": "solved", "none": "unsolved"}[last[0]]
                assert curriculum.retired(p) == direct
        names = [f"p{i}" for i in range(6)]
        assert curriculum.counts(names + names) == {  # each problem counted once
            "solved": sum(curriculum.retired(p) == "solved" for p in names),
            "unsolved": sum(curriculum.retired(p) == "unsolved" for p in names)}
        restored = Curriculum(visits, curriculum.state())  # what a checkpoint holds is enough to go on
        assert all(restored.retired(p) == curriculum.retired(p) for p in names)


# ------------------------------------------------------------------------------------------------------------
# config and verl


@pytest.mark.parametrize("overrides, key", [
    ({"algorithm.dynamic_sampling": True, "algorithm.adv_estimator": "reinforce_plus_plus"},
     "algorithm.dynamic_sampling=true"),
    ({"algorithm.dynamic_sampling": True, "algorithm.dynamic_sampling_max_rounds": -1},
     "algorithm.dynamic_sampling_max_rounds=-1"),
    ({"algorithm.dynamic_sampling_max_rounds": 3}, "algorithm.dynamic_sampling_max_rounds=3 is read only"),
    ({"reward.overlong": "soft"}, "reward.overlong_buffer_len=0"),
    ({"reward.overlong": "soft", "reward.overlong_buffer_len": 300}, "reward.overlong_buffer_len=300"),
    ({"reward.overlong": "soft", "reward.overlong_buffer_len": 8, "reward.overlong_penalty_factor": 0},
     "reward.overlong_penalty_factor=0"),
    ({"reward.overlong": "filter", "reward.overlong_buffer_len": 8}, "reward.overlong_buffer_len=8 is read only"),
    ({"reward.overlong_penalty_factor": 2.0}, "reward.overlong_penalty_factor=2.0 is read only"),
    ({"data.curriculum": True, "data.curriculum_visits": 0}, "data.curriculum_visits=0 must be >= 1"),
    ({"data.curriculum_visits": 3}, "data.curriculum_visits=3 is read only"),
    ({"data.curriculum": True, "rollout.n": 1, "algorithm.adv_estimator": "reinforce_plus_plus"}, "rollout.n=1"),
])
def test_each_new_key_is_validated_before_anything_loads(overrides, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.").replace("(", r"\(")):
        ExperimentConfig().with_overrides(overrides).validate()


def test_valid_settings_pass_and_a_wrong_word_is_refused_at_load():
    ExperimentConfig().with_overrides({"algorithm.dynamic_sampling": True,
                                       "algorithm.dynamic_sampling_max_rounds": None}).validate()
    ExperimentConfig().with_overrides({"algorithm.dynamic_sampling": True, "algorithm.adv_estimator": "rloo"}).validate()
    ExperimentConfig().with_overrides({"reward.overlong": "soft", "reward.overlong_buffer_len": 64,
                                       "reward.overlong_penalty_factor": 0.5}).validate()
    with pytest.raises(ConfigError, match="reward.overlong='cut'"):
        ExperimentConfig().with_overrides({"reward.overlong": "cut"})


def _verl_cfg(**overrides):
    return ExperimentConfig.from_yaml(ROOT / "configs" / "codefu7b_stage2.yaml").with_overrides(
        {"trainer.engine": "verl", **overrides}).validate()


def test_verl_gets_filter_groups_and_the_dapo_overlong_buffer():
    from codefu_helpers.launch.verl_engine import verl_overrides

    cfg = _verl_cfg(**{"algorithm.dynamic_sampling": True, "algorithm.dynamic_sampling_max_rounds": None,
                       "reward.overlong": "soft", "reward.overlong_buffer_len": 512,
                       "reward.overlong_penalty_factor": 0.5})
    got = dict(line.split("=", 1) for line in verl_overrides(cfg))
    assert got["algorithm.filter_groups.enable"] == "true" and got["algorithm.filter_groups.metric"] == "reward"
    assert got["algorithm.filter_groups.max_num_gen_batches"] == "0"
    assert got["reward.reward_manager.name"] == "dapo"
    assert got["+reward.reward_kwargs.overlong_buffer_cfg.enable"] == "true"
    assert got["+reward.reward_kwargs.overlong_buffer_cfg.len"] == "512"
    assert got["+reward.reward_kwargs.overlong_buffer_cfg.penalty_factor"] == "0.5"
    assert got["+reward.reward_kwargs.max_resp_len"] == str(cfg.data.max_response_length)
    plain = dict(line.split("=", 1) for line in verl_overrides(_verl_cfg()))
    assert plain["algorithm.filter_groups.enable"] == "false"
    assert not any(k.startswith("+reward.reward_kwargs") or k == "reward.reward_manager.name" for k in plain)


@pytest.mark.parametrize("overrides, key", [
    ({"algorithm.dynamic_sampling": True}, "algorithm.dynamic_sampling_max_rounds=2"),
    ({"reward.overlong": "filter"}, "reward.overlong='filter'"),
    ({"data.curriculum": True}, "data.curriculum=true"),
])
def test_what_verl_091_cannot_honour_is_refused_naming_the_key(overrides, key):
    from codefu_helpers.launch.verl_engine import verl_overrides

    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        verl_overrides(_verl_cfg(**overrides))


# ------------------------------------------------------------------------------------------------------------
# the worker seam: only the last round of a step lets vLLM drop its weights


def test_only_the_last_generation_round_asks_vllm_to_discard_its_weights():
    """LocalWorkerGroup -> Worker -> engine: last_round=False reaches a vLLM engine as resync=False (it sleeps at
    level 1, weights kept for the next round), the default as resync=True (level 2); an HF engine is not asked."""
    from codefu_helpers.workers.group import LocalWorkerGroup, WorkerGroup
    from codefu_helpers.workers.worker import Worker

    cfg = ExperimentConfig()
    asked = []

    class Engine:
        def __init__(self, backend):
            self.backend = backend

        def generate(self, prompts, n, params, on_sample=None, **kwargs):
            asked.append((self.backend, kwargs))
            return []

    class Judge:
        def submit(self, text, row):
            return None

    group = LocalWorkerGroup.__new__(LocalWorkerGroup)
    WorkerGroup.__init__(group, cfg)
    group.worker = Worker(cfg)
    group.worker.judge = Judge()
    row = {"prompt": [{"role": "user", "content": "x"}]}
    for backend in ("vllm", "hf"):
        group.worker.engine = Engine(backend)
        group.generate([row], 2, SamplingParams(max_new_tokens=4, seed=0), last_round=False)
        group.generate([row], 2, SamplingParams(max_new_tokens=4, seed=0))
    assert asked == [("vllm", {"resync": False}), ("vllm", {"resync": True}), ("hf", {}), ("hf", {})]


# ------------------------------------------------------------------------------------------------------------
# the trainer: rounds, metrics, resume (tiny model, HF rollout)

# problems whose every sample gets the same reward (no gradient): 1.0 is solved by all, 0.0 by none
CONSTANT = {"p0": 0.0, "p2": 0.0, "p3": 0.0, "p6": 0.0, "p7": 1.0, "p8": 0.0, "p9": 0.0, "p10": 0.0, "p11": 0.0}
PROBLEMS = [f"p{i}" for i in range(12)]


def fake_score(data_source, solution_str, ground_truth, extra_info=None, reward_mode=None):
    """A reward by problem: constant for CONSTANT, else a spread drawn from the response text (no judge needed)."""
    name = ground_truth["name"]
    score = CONSTANT[name] if name in CONSTANT else zlib.crc32(solution_str.encode()) % 1000 / 1000
    return {"score": score, "status": "accepted" if score >= 0.5 else "failed"}


def _rows():
    return [{"prompt": [{"role": "user", "content": f"Problem {name}: print {i}."}], "data_source": "codecontests",
             "reward_model": {"ground_truth": {"name": name}}, "extra_info": {"name": name}}
            for i, name in enumerate(PROBLEMS)]


@pytest.fixture(scope="module")
def tiny():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from codefu_helpers.tiny_model import build_tiny_model

    path = build_tiny_model()
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def _cfg(tmp_path, **overrides):
    return ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides({
        "data.train_batch_size": 2, "algorithm.ppo_mini_batch_size": 1, "rollout.n": 4,
        "algorithm.ppo_micro_batch_size": 4, "algorithm.use_kl_loss": False, "data.max_response_length": 16,
        "data.shuffle": False, "trainer.test_freq": 0, "data.val_path": None, "tracking.backend": "none",
        "trainer.total_steps": 2, "checkpoint.save_every": 1, "trainer.output_dir": str(tmp_path), **overrides,
    }).validate()


def _trainer(cfg, tiny, tmp_path):
    from codefu_helpers.trainer import GRPOTrainer

    model, tokenizer = tiny
    return GRPOTrainer(cfg, _rows(), tmp_path, model=copy.deepcopy(model), tokenizer=tokenizer,
                       compute_score=fake_score)


def _names(rows, ids=None):
    picked = rows if ids is None else [rows[g] for g in dict.fromkeys(ids)]
    return [r["reward_model"]["ground_truth"]["name"] for r in picked]


def test_dynamic_sampling_fills_the_batch_over_rounds_and_a_resumed_run_sees_the_same_problems(tiny, tmp_path):
    cfg = _cfg(tmp_path, **{"algorithm.dynamic_sampling": True, "algorithm.dynamic_sampling_max_rounds": 2})
    trainer = _trainer(cfg, tiny, tmp_path)
    rounds = []
    generate = trainer.workers.generate

    def recording(rows, n, params, last_round=True):
        rounds.append((_names(rows), last_round, params.seed))
        return generate(rows, n, params, last_round=last_round)

    trainer.workers.generate = recording
    history = trainer.fit(stop_after_step=1)  # step 1, saved as step_000001
    first = trainer.last_step
    metrics = trainer.step(1)  # the uninterrupted run's step 2

    # step 1: p0 p1 -> one informative group (p1); then twice the one missing: p2 p3 (both constant); the last round
    # (the cap: 2 extra) p4 p5 -> two more: p1 and p4 train, p5 is surplus. Only the last round may let vLLM drop
    # its weights; each round has a seed of its own.
    assert [r[:2] for r in rounds[:3]] == [(["p0", "p1"], False), (["p2", "p3"], False), (["p4", "p5"], True)]
    assert len({r[2] for r in rounds}) == len(rounds)
    assert _names(first["rows"], first["group_ids"]) == ["p1", "p4"]
    assert history[0]["generation_rounds"] == 3 and history[0]["groups_trained"] == 2
    assert history[0]["groups_surplus"] == 1 and history[0]["dynamic_sampling_short"] == 0.0
    _check_group_metrics(history[0], first, groups=6)
    # step 2 starts where step 1's rounds stopped (p6) and wraps into the next epoch; the cap leaves it one group short
    assert [r[0] for r in rounds[3:]] == [["p6", "p7"], ["p8", "p9", "p10", "p11"], ["p0", "p1", "p2", "p3"]]
    last = trainer.last_step
    assert _names(last["rows"], last["group_ids"]) == ["p1"]
    assert metrics["generation_rounds"] == 3 and metrics["problems_drawn"] == 10
    assert metrics["groups_trained"] == 1 and metrics["dynamic_sampling_short"] == 1.0
    _check_group_metrics(metrics, last, groups=10)
    assert metrics["optimizer_steps"] == 1  # it trains on the one group it has (one mini-batch of one prompt)

    from codefu_helpers.checkpoint import latest_checkpoint, load_trainer_state
    from codefu_helpers.trainer import GRPOTrainer

    state = load_trainer_state(latest_checkpoint(trainer.checkpoint_root))
    assert (state.step, state.data_position) == (1, 6)  # 2 per step + the 4 problems step 1's extra rounds drew
    resumed = GRPOTrainer(cfg, _rows(), tmp_path, model=copy.deepcopy(tiny[0]), tokenizer=tiny[1],
                          compute_score=fake_score)
    assert resumed.resume() == 1 and resumed.extra_problems == 4
    assert _names(resumed.batch_rows(1)) == ["p6", "p7"]
    again = resumed.step(1)
    assert _names(resumed.last_step["rows"]) == _names(last["rows"])
    assert [s.response_ids for s in resumed.last_step["generated"]["samples"]] == \
        [s.response_ids for s in last["generated"]["samples"]]  # same weights, same seeds: the same samples
    assert again["problems_drawn"] == metrics["problems_drawn"] and resumed.extra_problems == trainer.extra_problems
    resumed.close()
    trainer.close()


def _check_group_metrics(metrics, last, groups):
    """The step's group metrics recomputed from everything it generated (all rounds)."""
    gen = last["generated"]
    by_group = {}
    for g, s, r, k in zip(gen["group_ids"], gen["samples"], gen["results"], gen["keep"]):
        by_group.setdefault(g, []).append((r, k))
    assert len(by_group) == groups
    valid = {g: [r.passed for r, _ in v if not r.judge_error] for g, v in by_group.items()}
    kept = {g: [r.score for r, k in v if k] for g, v in by_group.items()}
    informative = [g for g, v in kept.items() if len(v) >= 2 and np.std(v) > 0]
    assert metrics["groups_all_solved"] == sum(1 for v in valid.values() if v and all(v))
    assert metrics["groups_none_solved"] == sum(1 for v in valid.values() if v and not any(v))
    assert metrics["groups_dropped"] == groups - len(informative)
    assert metrics["groups_surplus"] == max(0, len(informative) - 2)
    assert metrics["samples"] == len(gen["samples"])
    scores = [r.score for r in gen["results"] if not r.judge_error]
    assert metrics["reward_mean"] == pytest.approx(np.mean(scores))


def test_a_step_that_fills_its_batch_in_the_first_round_draws_nothing_more(tiny, tmp_path):
    cfg = _cfg(tmp_path, **{"algorithm.dynamic_sampling": True, "algorithm.dynamic_sampling_max_rounds": 2})
    trainer = _trainer(cfg, tiny, tmp_path)
    trainer.extra_problems = 4  # as if earlier rounds had drawn 4 more problems: step 1 starts at p4 (2 * 0 + 4)
    metrics = trainer.step(0)
    trainer.close()
    assert _names(trainer.last_step["rows"]) == ["p4", "p5"]  # both informative: one round
    assert metrics["generation_rounds"] == 1 and metrics["problems_drawn"] == 2 and metrics["groups_dropped"] == 0
    assert metrics["dynamic_sampling_short"] == 0.0 and trainer.extra_problems == 4
    _check_group_metrics(metrics, trainer.last_step, groups=2)


@pytest.mark.parametrize("mode", ["filter", "soft"])
def test_overlong_responses_are_filtered_from_the_loss_or_penalised(tiny, tmp_path, mode):
    extra = {"reward.overlong": mode} | ({"reward.overlong_buffer_len": 8, "reward.overlong_penalty_factor": 0.5}
                                        if mode == "soft" else {})
    cfg = _cfg(tmp_path, **{"trainer.total_steps": 1, "data.train_batch_size": 1, **extra})
    trainer = _trainer(cfg, tiny, tmp_path)
    trainer.rows = [r for r in trainer.rows if r["reward_model"]["ground_truth"]["name"] == "p1"]
    metrics = trainer.step(0)
    trainer.close()
    last = trainer.last_step
    samples, results, keep = last["samples"], last["results"], last["keep"]
    truncated = [s.finish_reason == "length" for s in samples]
    assert any(truncated), "the tiny model must run into its 16-token budget, or this test proves nothing"
    raw = [fake_score("codecontests", s.text, {"name": "p1"})["score"] for s in samples]
    if mode == "filter":
        assert keep == [0.0 if t or not s.response_ids else 1.0 for s, t in zip(samples, truncated)]
        assert metrics["overlong_filtered"] == sum(1 for s, t in zip(samples, truncated) if t and s.response_ids)
        assert [r.score for r in results] == raw  # still scored, and counted in the reward metrics
        assert metrics["reward_mean"] == pytest.approx(np.mean(raw)) and metrics["truncated"] == sum(truncated)
        if sum(keep) < 2:  # nothing left to compare: no baseline, no update
            assert metrics.get("skipped_update") or metrics["groups_without_baseline"] == 1
    else:
        penalties = [overlong_penalty(len(s.response_ids), 16, 8, 0.5) for s in samples]
        assert [r.score for r in results] == pytest.approx([a + b for a, b in zip(raw, penalties)])
        assert min(penalties) == -0.5  # a truncated response used the whole budget
        assert metrics["overlong_penalty_mean"] == pytest.approx(np.mean(penalties))
        assert metrics["overlong_penalised"] == sum(1 for p in penalties if p < 0)
        assert metrics["reward_mean"] == pytest.approx(np.mean([a + b for a, b in zip(raw, penalties)]))


def test_the_curriculum_skips_settled_problems_records_them_in_checkpoints_and_ends_the_run_when_none_is_left(
        tiny, tmp_path):
    """data.curriculum with K=1, unshuffled p0..p11: p0 is never solved and p7 always (CONSTANT), the others' rewards
    spread. A settled group retires its problem; the data order passes over it from then on; a resumed run knows."""
    cfg = _cfg(tmp_path, **{"data.curriculum": True, "data.curriculum_visits": 1, "trainer.total_steps": 3})
    trainer = _trainer(cfg, tiny, tmp_path)
    history = trainer.fit(stop_after_step=1)  # step 1 (p0, p1), saved
    assert _names(trainer.last_step["rows"]) == ["p0", "p1"]
    assert trainer.curriculum.retired("p0") == "unsolved"
    passed = {}
    for g, r in zip(trainer.last_step["group_ids"], trainer.last_step["results"]):
        passed.setdefault(g, []).append(r.passed)
    p1 = passed[1]
    assert history[0]["curriculum_skipped"] == 0
    assert history[0]["curriculum_retired_unsolved"] == 1 + (not any(p1))
    assert history[0]["curriculum_retired_solved"] == int(all(p1))
    trainer.extra_problems = 0
    trainer.curriculum.history = {"p2": ["none"], "p3": ["all"], "p0": ["none"]}  # as if p2 and p3 had settled too
    metrics = trainer.step(1)
    assert _names(trainer.last_step["rows"]) == ["p4", "p5"]  # p2, p3 passed over: two positions consumed besides
    assert metrics["curriculum_skipped"] == 2 and trainer.extra_problems == 2
    settled = trainer.curriculum.counts(PROBLEMS)
    assert (metrics["curriculum_retired_solved"], metrics["curriculum_retired_unsolved"]) == \
        (settled["solved"], settled["unsolved"])

    from codefu_helpers.checkpoint import latest_checkpoint, load_trainer_state
    from codefu_helpers.trainer import GRPOTrainer

    trainer.save(2)
    state = load_trainer_state(latest_checkpoint(trainer.checkpoint_root))
    assert state.curriculum == trainer.curriculum.state() and state.data_position == 2 * 2 + 2
    resumed = GRPOTrainer(cfg, _rows(), tmp_path, model=copy.deepcopy(tiny[0]), tokenizer=tiny[1],
                          compute_score=fake_score)
    assert resumed.resume() == 2 and resumed.curriculum.state() == trainer.curriculum.state()
    assert _names(resumed.batch_rows(2)) == _names(trainer.batch_rows(2))
    # every problem settled: the next step has nothing to draw; the run ends there, saved and exported
    resumed.curriculum.history = {name: ["none"] for name in PROBLEMS}
    assert resumed.fit(start_step=2) == []
    assert load_trainer_state(latest_checkpoint(resumed.checkpoint_root)).step == 2
    assert (tmp_path / "model" / "codefu_training.json").exists()
    resumed.close()
    trainer.close()
