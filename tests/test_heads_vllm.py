"""The committed tiny heads load and run in REAL vLLM (CPU, in-process): EAGLE-3 chain drafting and P-EAGLE
parallel drafting give exactly the target's greedy output, and vLLM accepts exactly as many drafts as
this suite's own head implementation predicts (same semantics as vLLM's llama_eagle3.py)."""

from __future__ import annotations

import os

import pytest
import torch

from peagle_nb import paths

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


def test_committed_heads_run_in_vllm_lossless_and_as_predicted():
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    from vllm import LLM, SamplingParams

    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target
    from peagle_nb.training.drafter_eval import read_prompt_ids

    models = paths.models_dir()
    target, tok = load_target()
    prompts = [p.tolist() for p in read_prompt_ids(tok, paths.prompts_dir() / "code.jsonl", 1)]
    prompts += [p.tolist() for p in read_prompt_ids(tok, paths.prompts_dir() / "prose.jsonl", 1)]
    sp = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS, ignore_eos=True)
    for name, k, parallel in (("tiny-eagle3", 3, False), ("tiny-peagle", 7, True)):
        spec = {"method": "eagle3", "model": str(models / name), "num_speculative_tokens": k}
        if parallel:
            spec["parallel_drafting"] = True
        llm = LLM(model=str(models / "tiny-target"), speculative_config=spec, distributed_executor_backend="uni",
                  enforce_eager=True, dtype="float32", max_model_len=512, seed=0, disable_log_stats=False)
        try:
            outs = llm.generate([{"prompt_token_ids": p} for p in prompts], sp, use_tqdm=False)
            got = [list(o.outputs[0].token_ids) for o in outs]
            metrics = {m.name: getattr(m, "value", None) for m in llm.get_metrics()}
        finally:
            llm.llm_engine.engine_core.shutdown()
            del llm
        ref, steps, accepted = predicted_acceptance(target, load_head(models / name), prompts, k, MAX_TOKENS)
        assert got == ref, f"{name}: vLLM speculative output differs from greedy"
        drafts, acc = metrics["vllm:spec_decode_num_drafts"], metrics["vllm:spec_decode_num_accepted_tokens"]
        assert accepted > 0, f"{name}: a trained head should get drafts accepted"
        # vLLM and this suite run the same head: the same drafts get accepted (allow one near-tie flip)
        print(f"{name}: vLLM drafts {drafts} accepted {acc}; suite predicts {steps} / {accepted}")
        assert abs(acc - accepted) <= max(2, 0.05 * accepted), (name, acc, accepted, drafts, steps)
        assert abs(drafts - steps) <= max(1, 0.05 * steps), (name, drafts, steps)
