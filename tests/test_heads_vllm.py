"""The committed tiny heads load and run in REAL vLLM (CPU, in-process): EAGLE-3 chain drafting and P-EAGLE
parallel drafting give exactly the target's greedy output, and vLLM accepts exactly as many drafts as
this suite's own head implementation predicts (same semantics as vLLM's llama_eagle3.py)."""

from __future__ import annotations

import os

import pytest
import torch

from peagle_nb.files import paths

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
pytest.importorskip("vllm", reason="needs the `cpu` or `gpu` extra (vLLM)")

MAX_TOKENS = 32


def predicted_acceptance(target, head, prompts, k, max_tokens):
    """(steps, accepted drafts) of a greedy run under vLLM's stopping rule, from the suite's head."""
    from peagle_nb.models.target import target_features
    from peagle_nb.training.drafter_data import generate
    from peagle_nb.training.drafter_eval import accepted_lengths
    from peagle_nb.training.drafter_forward import all_anchor_drafts

    steps = accepted = 0
    outputs = []
    for p in prompts:
        p = torch.tensor(p)
        ref = generate(target, [p], len(p) + max_tokens + k + 1)[0]
        outputs.append(ref[len(p): len(p) + max_tokens].tolist())
        with torch.no_grad():
            res = target(input_ids=ref[None], output_hidden_states=True)
            acc = accepted_lengths(all_anchor_drafts(head, ref[None], target_features(res.hidden_states,
                                                                                      head.aux_layer_ids), k),
                                   res.logits[0].argmax(-1)).tolist()
        gen, pos = 1, len(p) - 1  # prefill produced the first token; drafting starts at its anchor
        while gen < max_tokens:
            a = min(acc[pos], k)
            steps, accepted, gen, pos = steps + 1, accepted + a, gen + a + 1, pos + a + 1
    return outputs, steps, accepted


def run_in_vllm(head_dir, k: int, parallel: bool, prompts: list[list[int]]):
    """(greedy outputs, {metric name: value}) of the tiny target with ``head_dir`` in vLLM's in-process engine."""
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    from vllm import LLM, SamplingParams

    spec = {"method": "eagle3", "model": str(head_dir), "num_speculative_tokens": k}
    if parallel:
        spec["parallel_drafting"] = True
    llm = LLM(model=str(paths.models_dir() / "tiny-target"), speculative_config=spec,
              distributed_executor_backend="uni", enforce_eager=True, dtype="float32", max_model_len=512, seed=0,
              disable_log_stats=False)
    sp = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS, ignore_eos=True)
    try:
        outs = llm.generate([{"prompt_token_ids": p} for p in prompts], sp, use_tqdm=False)
        got = [list(o.outputs[0].token_ids) for o in outs]
        metrics = {m.name: getattr(m, "value", None) for m in llm.get_metrics()}
    finally:
        llm.llm_engine.engine_core.shutdown()
        del llm
    return got, metrics


@pytest.fixture(scope="module")
def target_and_prompts():
    from peagle_nb.models.target import load_target
    from peagle_nb.training.drafter_eval import read_prompt_ids

    target, tok = load_target()
    prompts = [p.tolist() for p in read_prompt_ids(tok, paths.prompts_dir() / "code.jsonl", 1)]
    prompts += [p.tolist() for p in read_prompt_ids(tok, paths.prompts_dir() / "prose.jsonl", 1)]
    return target, prompts


def assert_runs_as_predicted(name: str, head_dir, k: int, parallel: bool, target, prompts):
    from peagle_nb.models.heads import load_head

    got, metrics = run_in_vllm(head_dir, k, parallel, prompts)
    ref, steps, accepted = predicted_acceptance(target, load_head(head_dir), prompts, k, MAX_TOKENS)
    assert got == ref, f"{name}: vLLM speculative output differs from greedy"
    drafts, acc = metrics["vllm:spec_decode_num_drafts"], metrics["vllm:spec_decode_num_accepted_tokens"]
    assert accepted > 0, f"{name}: a trained head should get drafts accepted"
    # vLLM and this suite run the same head: the same drafts get accepted (allow one near-tie flip)
    print(f"{name}: vLLM drafts {drafts} accepted {acc}; suite predicts {steps} / {accepted}")
    assert abs(acc - accepted) <= max(2, 0.05 * accepted), (name, acc, accepted, drafts, steps)
    assert abs(drafts - steps) <= max(1, 0.05 * steps), (name, drafts, steps)


def test_committed_heads_run_in_vllm_lossless_and_as_predicted(target_and_prompts):
    target, prompts = target_and_prompts
    for name, k, parallel in (("tiny-eagle3", 3, False), ("tiny-peagle", 7, True)):
        assert_runs_as_predicted(name, paths.models_dir() / name, k, parallel, target, prompts)


@pytest.mark.parametrize("kept", ["pard_token", "ptd_token_id"])
def test_peagle_head_runs_when_vllm_reads_only_an_older_mask_id_name(target_and_prompts, tmp_path, kept):
    """Some vLLM releases of the supported range look the mask id up only as ``pard_token`` / ``ptd_token_id``.
    The suite writes all three names; a copy of the shipped head that keeps only ``kept`` (what such a release
    finds) loads and drafts in parallel exactly as the full head does."""
    import json
    import shutil

    from peagle_nb.models import checkpoint

    shipped = paths.models_dir() / "tiny-peagle"
    cfg = checkpoint.read_config(shipped)
    assert {key: cfg[key] for key in checkpoint.MASK_ID_KEYS} == dict.fromkeys(checkpoint.MASK_ID_KEYS, 2)
    head = tmp_path / "tiny-peagle"
    shutil.copytree(shipped, head, ignore=shutil.ignore_patterns("checksums.json"))  # an edited folder
    for key in checkpoint.MASK_ID_KEYS:
        if key != kept:
            del cfg[key]
    (head / "config.json").write_text(json.dumps(cfg, indent=2))
    target, prompts = target_and_prompts
    assert_runs_as_predicted(f"tiny-peagle ({kept} only)", head, 7, True, target, prompts)
