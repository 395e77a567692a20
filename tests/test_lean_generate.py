"""The lean generator of the heads' self-distillation data gives the transformers loop's tokens: greedy and seeded
sampling, mixed prompt lengths, chunks that leave a short last one (its padding rows read by nobody)."""

from __future__ import annotations

import pytest
import torch

from peagle_nb.models.target import load_target
from peagle_nb.training.drafter_data import build_drafter_data, generate
from peagle_nb.training.lean_generate import generate_lean


@pytest.fixture(scope="module")
def shipped():
    target, tok = load_target()
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(5, target.config.vocab_size, (n,), generator=g) for n in (6, 9, 6, 6, 9, 6, 6)]
    return target, prompts


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_lean_tokens_equal_the_transformers_loop(shipped, temperature):
    target, prompts = shipped
    ref = generate(target, prompts, 28, temperature, seed=3, batch_size=3)
    lines = []
    got = generate_lean(target, prompts, 28, temperature, seed=3, batch_size=3, log=lines.append)
    assert got.shape == (7, 28)
    assert torch.equal(got, ref)
    for p, row in zip(prompts, got):
        assert torch.equal(row[:len(p)], p)  # each row starts with its own prompt
    assert len(lines) == 3 and lines[-1].startswith("lean generation: 7/7 sequences")  # length 6: 3 + 2; 9: 2


def test_the_data_builder_records_which_generator_ran(shipped):
    target, prompts = shipped
    kw = dict(total_len=24, draft_vocab_size=64, temperature=1.0, seed=0, gen_batch=4, log=lambda _: None)
    a, info_a = build_drafter_data(target, prompts, generator="lean", **kw)
    b, info_b = build_drafter_data(target, prompts, generator="transformers", **kw)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.draft_ids, b.draft_ids)
    assert (info_a["generator"], info_b["generator"]) == ("lean", "transformers")
    assert info_a["generate_seconds"] >= 0
    with pytest.raises(ValueError, match="use 'lean' or 'transformers'"):
        build_drafter_data(target, prompts, generator="vllm", **kw)


def test_bad_input_is_named(shipped):
    target, prompts = shipped
    with pytest.raises(ValueError, match="prompt 0 has 6 tokens; need 1..5"):
        generate_lean(target, prompts, 6)
    with pytest.raises(ValueError, match="past the target's"):
        generate_lean(target, prompts, target.config.max_position_embeddings + 1)
    with pytest.raises(ValueError, match="needs the target on a CUDA device"):
        generate_lean(target, prompts, 20, use_graphs=True)


def test_the_benchmark_times_both_generators_in_one_run_and_compares_their_rows(tmp_path):
    import json

    from peagle_nb.lab.benchmarks import generate_bench

    out = tmp_path / "g.json"
    assert generate_bench.main(["--n", "3", "--gen-batch", "2", "--total-len", "52", "--repeats", "2",
                                "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert len(doc["repeats"]) == 2 and 3 * (52 - 48) <= doc["new_tokens"] <= 3 * (52 - 16)
    assert all(r["equal_rows"] == 3 and r["speedup"] > 0 for r in doc["repeats"])
    assert doc["speedup"]["p10"] <= doc["speedup"]["median"] <= doc["speedup"]["p90"]
    assert doc["weights_sha256"] and doc["machine"]["device"] == "cpu"
    with pytest.raises(SystemExit, match="--total-len above 48"):
        generate_bench.main(["--total-len", "40", "--out", str(out)])
