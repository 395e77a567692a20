"""Drafter training (peagle_nb.training): COD / TTT masks, teacher-forced layouts == inference, the
acceptance measurement == a literal draft-verify loop, and smoke training through `peagle-nb train`."""

from __future__ import annotations

import argparse
import json

import pytest
import torch

from peagle_nb.models.heads import DraftHead, DraftHeadConfig, load_head
from peagle_nb.training.cod import (cod_attention_mask, cod_keep_fractions, cod_sample,
                                    ttt_attention_mask)
from peagle_nb.training.drafter_eval import accepted_lengths, summarize, walk_steps
from peagle_nb.training.drafter_forward import all_anchor_drafts, eagle3_unroll, peagle_layout_forward


# ------------------------------------------------------------------------------------------- masks
def test_cod_sample_fractions_and_parents():
    g = torch.Generator().manual_seed(0)
    n, k = 400, 8
    anchors, depths = cod_sample(n, k, 0.7, 0.2, g)
    kept = {d: set(anchors[depths == d].tolist()) for d in range(k)}
    for d, frac in enumerate(cod_keep_fractions(k, 0.7, 0.2)):
        assert abs(len(kept[d]) / n - frac) <= 1.0 / n + 1e-9, (d, len(kept[d]))
        if d:
            assert kept[d] <= kept[d - 1]  # only chains whose parent was kept
    assert kept[0] == set(range(n))
    assert cod_keep_fractions(8, 0.7, 0.2)[-3:] == [0.2, 0.2, 0.2]
    assert cod_keep_fractions(4, 0.5, 0.3) == [1.0, 0.5, 0.3, 0.3]  # max(r^d, r_min)
    # labels run out near the end: anchor i may only reach depth valid[i] - 1
    valid = 10 - torch.arange(10)
    a, d = cod_sample(10, 8, 1.0, 1.0, g, valid)
    assert bool((d < valid[a]).all()) and len(a) == sum(min(8, v) for v in valid.tolist())


def test_cod_attention_mask_properties():
    g = torch.Generator().manual_seed(1)
    anchors, depths = cod_sample(30, 6, 0.7, 0.2, g)
    m = cod_attention_mask(anchors, depths)
    n = len(anchors)
    assert m.shape == (n, n) and bool(m.diagonal().all())
    real = depths == 0
    # depth 0 is plain causal attention over the real context
    sub = m[real][:, real]
    assert torch.equal(sub, torch.ones_like(sub).tril())
    for e in range(n):
        seen = m[e].nonzero().flatten()
        i, d = anchors[e], depths[e]
        for s in seen:
            if depths[s] == 0:
                assert anchors[s] <= i  # real context up to the anchor, never the future
            else:
                assert anchors[s] == i and depths[s] <= d  # only earlier depths of its own chain
        # and it sees all of those
        assert int(m[e].sum()) == int(i) + 1 + int(d)
    # causal in "inference position" order: nobody sees a later position
    pos = anchors + depths
    assert not bool((m & (pos[None, :] > pos[:, None])).any())


def test_ttt_attention_mask():
    m = ttt_attention_mask(5, 2)
    assert m.shape == (5, 15)
    assert torch.equal(m[:, :5], torch.ones(5, 5, dtype=torch.bool).tril())
    eye = torch.eye(5, dtype=torch.bool)
    assert torch.equal(m[:, 5:10], eye) and torch.equal(m[:, 10:], eye)
    assert ttt_attention_mask(4, 0).shape == (4, 4)


# ------------------------------------------------------------------------------ layouts == inference
def _head(kind, layers=2, seed=0):
    cfg = DraftHeadConfig(kind=kind, hidden_size=32, intermediate_size=48, num_hidden_layers=layers,
                          num_attention_heads=2, num_key_value_heads=1, vocab_size=50, draft_vocab_size=40,
                          target_hidden_size=16, aux_layer_ids=(1, 2, 3), mask_token_id=3 if kind == "peagle" else None)
    head = DraftHead(cfg).double().eval()
    head.reset_parameters(std=0.3, seed=seed)
    return head


def test_peagle_layout_equals_per_anchor_inference():
    head = _head("peagle", 3)
    g = torch.Generator().manual_seed(2)
    t, k = 12, 4
    tokens = torch.randint(0, 50, (1, t), generator=g)
    feats = torch.randn(1, t, 48, generator=g, dtype=torch.double)
    anchors, depths = cod_sample(t - 1, k, 0.7, 0.2, g, t - 1 - torch.arange(t - 1))
    logits, rows = peagle_layout_forward(head, tokens, feats, anchors, depths)
    assert torch.equal(rows, anchors + depths + 1)
    for e in range(len(anchors)):
        p, d = int(anchors[e]), int(depths[e])
        # inference at anchor p: real slots 0..p, then d mask slots; plain causal attention
        ids = torch.cat([tokens[:, 1:p + 2], torch.full((1, d), 3)], 1)
        hid = torch.cat([head.project(feats[:, :p + 1]), head.mask_hidden_projected().expand(1, d, -1)], 1)
        out, _ = head(ids, hid, torch.arange(p + 1 + d)[None])
        torch.testing.assert_close(logits[0, e], out[0, -1], rtol=0, atol=1e-9)


def test_eagle3_unroll_equals_chain_inference():
    head = _head("eagle3", 1)
    g = torch.Generator().manual_seed(3)
    t, steps = 10, 3
    tokens = torch.randint(0, 50, (1, t), generator=g)
    feats = torch.randn(1, t, 48, generator=g, dtype=torch.double)
    outs = eagle3_unroll(head, tokens, feats, steps)
    for p in range(t - steps):
        cache = head.new_cache()
        logits, pre = head(tokens[:, 1:p + 2], head.project(feats[:, :p + 1]), torch.arange(p + 1)[None], cache=cache)
        torch.testing.assert_close(outs[0][0, p], logits[0, -1], rtol=0, atol=1e-9)
        for s in range(1, steps):  # teacher-forced chain: token x[p+1+s], own previous hidden
            logits, pre = head(tokens[:, p + 1 + s].view(1, 1), pre[:, -1:], torch.tensor([[p + s]]), cache=cache)
            torch.testing.assert_close(outs[s][0, p], logits[0, -1], rtol=0, atol=1e-9)


def test_accepted_lengths_and_walk():
    target_next = torch.tensor([5, 6, 7, 8, 9, 1, 2, 3, 4, 0])
    drafts = torch.full((9, 3), -1)
    drafts[0] = torch.tensor([6, 7, 0])  # anchor 0: drafts checked vs target_next[1:4] = 6, 7, 8
    drafts[3] = torch.tensor([9, 1, 2])
    drafts[4] = torch.tensor([1, 9, 9])
    acc = accepted_lengths(drafts, target_next)
    assert acc.tolist()[:5] == [2, 0, 0, 3, 1]
    steps = walk_steps(acc, prompt_len=1, total_len=10, k=3)  # anchors 0 -> 3 -> 7 (stop: 7+5 > 10)
    assert steps == [2, 3]
    s = summarize(steps, 3)
    assert s["tau"] == pytest.approx(3.5) and s["accept_rate_per_position"] == [1.0, 1.0, 0.5]


# ------------------------------------------------------------------------------- smoke training
@pytest.fixture(scope="module")
def smoke_target(tmp_path_factory):
    """A random 6-layer target with a real (small) BPE tokenizer that has <mask>."""
    from transformers import LlamaForCausalLM

    from peagle_nb.text.corpus import load_documents
    from peagle_nb.models.target import make_config, save_target
    from peagle_nb.models.tokenizer import train_tokenizer

    texts = [d[:20000] for d in load_documents("prose", "train")[:3] + load_documents("code", "train")[:6]]
    tok = train_tokenizer(texts, vocab_size=400)
    torch.manual_seed(0)
    cfg = make_config(len(tok), tok.eos_token_id, tok.pad_token_id, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=6, num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256)
    path = tmp_path_factory.mktemp("target")
    save_target(LlamaForCausalLM(cfg), tok, path, dtype=torch.float32)
    return path


@pytest.mark.slow
def test_smoke_training_cli(smoke_target, tmp_path):
    from peagle_nb.cli import train_cmd

    out, cache = tmp_path / "pe", tmp_path / "data.pt"
    common = ["--smoke", "--target", str(smoke_target), "--device", "cpu", "--data-cache", str(cache)]
    args = argparse.Namespace(what="peagle", options=common + ["--out", str(out), "--steps", "12"])
    assert train_cmd.run(args) == 0
    log = json.loads((out / "training_log.json").read_text())
    hist = log["history"]
    assert log["steps_run"] == 12 and hist[-1]["loss"] < hist[0]["loss"]
    head = load_head(out)
    assert head.kind == "peagle" and head.trained_k == 4 and len(head.layers) == 4
    assert head.config.aux_layer_ids == (1, 3, 4)  # 6 layers: the distinct fallback ids
    assert set(log["acceptance"]) and all(len(r) == 8 for r in log["acceptance"].values())
    assert "SMOKE RUN" in (out / "README.md").read_text()
    # EAGLE-3 through the same CLI, on the same (cached) self-distillation data
    args = argparse.Namespace(what="eagle3", options=common + ["--out", str(tmp_path / "e3"), "--steps", "3"])
    assert train_cmd.run(args) == 0
    e3 = load_head(tmp_path / "e3")
    assert e3.kind == "eagle3" and len(e3.layers) == 1 and e3.trained_k == 3
    assert torch.equal(e3.target_to_draft_ids(), head.target_to_draft_ids())  # same data -> same draft vocab


@pytest.mark.slow
def test_smoke_training_options(smoke_target, tmp_path):
    """--data-only shares one data set, --intermediate-size widens the MLP, --val-prompts measures new
    corpus-train prompts, --init-from continues a run (and refuses a head of another shape)."""
    from peagle_nb.cli import train_cmd

    cache = tmp_path / "data.pt"
    common = ["--smoke", "--target", str(smoke_target), "--device", "cpu", "--data-cache", str(cache)]

    def run(*opts: str) -> int:
        return train_cmd.run(argparse.Namespace(what="peagle", options=common + list(opts)))

    assert run("--data-only") == 0 and cache.is_file()
    blob = torch.load(cache)
    # token ids (and each sequence's corpus domain) only: the target is the teacher
    assert set(blob["data"]) == {"tokens", "prompt_len", "draft_ids", "domain", "domains"}
    assert blob["info"]["n_greedy"] == 0 and blob["info"]["sample_temperature"] == 1.0  # sampled at T=1 by default
    first, second = tmp_path / "pe", tmp_path / "pe2"
    assert run("--out", str(first), "--intermediate-size", "96", "--val-prompts", "2", "--steps", "6",
               "--cod-r", "0.8", "--cod-r-min", "0.3") == 0
    log = json.loads((first / "training_log.json").read_text())
    assert load_head(first).config.intermediate_size == 96
    assert (log["config"]["cod_r"], log["config"]["cod_r_min"]) == (0.8, 0.3)
    assert "--intermediate-size 96 --cod-r 0.8 --cod-r-min 0.3" in (first / "README.md").read_text()  # reproducible
    assert set(log["validation"]) == {"prose-val", "code-val", "ja-val"}
    assert all(r["prompts"] == 2 for res in log["validation"].values() for r in res.values())
    assert "## Validation" in (first / "README.md").read_text()
    assert run("--out", str(second), "--intermediate-size", "96", "--init-from", str(first), "--steps", "4",
               "--cod-r", "0.8", "--cod-r-min", "0.3") == 0
    log2 = json.loads((second / "training_log.json").read_text())
    assert log2["init_from"]["steps_run"] == 6 and "10 steps" in (second / "README.md").read_text()
    third = tmp_path / "pe3"  # continuing on new data (another seed) keeps the head's own draft vocabulary
    assert run("--out", str(third), "--intermediate-size", "96", "--init-from", str(first), "--steps", "2",
               "--seed", "1", "--cod-r", "0.8", "--cod-r-min", "0.3") == 0
    assert torch.load(cache)["key"]["seed"] == 1
    assert torch.equal(load_head(third).d2t, load_head(first).d2t)
    with pytest.raises(SystemExit, match=r"intermediate_size 96 \(this run: 128\)"):
        run("--out", str(tmp_path / "bad"), "--init-from", str(first))  # default width != 96


@pytest.mark.slow
def test_the_pair_trains_both_heads_on_one_teacher_pass_per_step(smoke_target, tmp_path, monkeypatch):
    """`peagle-nb train pair`: both heads in one process, equal steps, the target run once per step for both;
    a pair that would not share its schedule or would overwrite one head with the other is refused first."""
    from peagle_nb.cli import train_cmd
    from peagle_nb.training import drafter_data

    common = f"--smoke --target {smoke_target} --device cpu --data-cache {tmp_path / 'data.pt'} --steps 5"

    def pair(e3: str, pe: str) -> int:
        return train_cmd.run(argparse.Namespace(what="pair", options=["--eagle3", e3, "--peagle", pe]))

    with pytest.raises(SystemExit, match=r"steps: 5 \(eagle3\) vs 6 \(peagle\)"):
        pair(f"{common} --out {tmp_path / 'a'}", f"{common} --steps 6 --out {tmp_path / 'b'}")
    with pytest.raises(SystemExit, match="both heads would be written to"):
        pair(f"{common} --out {tmp_path / 'a'}", f"{common} --out {tmp_path / 'a'}")
    with pytest.raises(SystemExit, match="the pair only trains"):
        pair(f"{common} --data-only", f"{common} --out {tmp_path / 'b'}")
    with pytest.raises(SystemExit, match="already run equal steps"):
        pair(f"{common} --lockstep {tmp_path / 'l'} --out {tmp_path / 'a'}",
             f"{common} --lockstep {tmp_path / 'l'} --out {tmp_path / 'b'}")
    assert not (tmp_path / "data.pt").exists()  # refused before any data was built
    common += " --teacher-tf32"  # recorded; on a CPU it changes nothing
    passes = []
    real = drafter_data.TargetTeacher.__call__
    monkeypatch.setattr(drafter_data.TargetTeacher, "__call__", lambda self, x: passes.append(1) or real(self, x))
    assert pair(f"{common} --out {tmp_path / 'e3'}", f"{common} --out {tmp_path / 'pe'}") == 0
    assert len(passes) == 5  # one teacher pass per step, for both heads
    e3, pe = (json.loads((tmp_path / n / "training_log.json").read_text()) for n in ("e3", "pe"))
    assert e3["steps_run"] == pe["steps_run"] == 5 and e3["train_seconds"] == pe["train_seconds"]
    assert e3["trained_with"] == [str(tmp_path / "pe")] and pe["trained_with"] == [str(tmp_path / "e3")]
    assert e3["config"]["teacher_tf32"] is pe["config"]["teacher_tf32"] is True
    assert len(e3["history"]) == len(pe["history"]) == 1 and pe["history"][0]["step"] == 5
    he3, hpe = load_head(tmp_path / "e3"), load_head(tmp_path / "pe")
    assert (he3.kind, hpe.kind) == ("eagle3", "peagle")
    assert torch.equal(he3.target_to_draft_ids(), hpe.target_to_draft_ids())


def test_target_teacher_matches_a_plain_forward(smoke_target):
    from peagle_nb.models.target import load_target, target_features
    from peagle_nb.training.drafter_data import TargetTeacher

    target, _ = load_target(smoke_target)
    draft_ids = torch.tensor([0, 5, 7, 100])
    tokens = torch.randint(0, 400, (2, 9), generator=torch.Generator().manual_seed(0))
    batch = TargetTeacher(target, (1, 3, 4), draft_ids)(tokens)
    with torch.no_grad():
        res = target(input_ids=tokens, output_hidden_states=True)
    assert batch["features"].shape == (2, 9, 3 * 64) and batch["logits"].shape == (2, 9, 4)
    torch.testing.assert_close(batch["features"], target_features(res.hidden_states, (1, 3, 4)))
    torch.testing.assert_close(batch["logits"], res.logits[..., draft_ids])
    assert torch.equal(batch["argmax"], res.logits.argmax(-1))


def test_eagle3_ttt_loss_decreases():
    """A few optimiser steps on one fixed batch: the TTT loss must drop (the gradient reaches the head)."""
    from peagle_nb.training.drafter_config import DrafterTrainConfig
    from peagle_nb.training.eagle3 import ttt_loss

    head = _head("eagle3", 1).float().train()
    g = torch.Generator().manual_seed(4)
    tokens = torch.randint(0, 50, (4, 16), generator=g)
    batch = {"tokens": tokens, "features": torch.randn(4, 16, 48, generator=g),
             "logits": 3 * torch.randn(4, 16, 40, generator=g), "argmax": tokens}
    cfg = DrafterTrainConfig(kind="eagle3", out=None, k=3)
    opt = torch.optim.AdamW(head.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        loss, metrics = ttt_loss(head, batch, cfg)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0] and set(metrics) == {"acc0", "acc2"}


def test_peagle_cod_loss_trains_mask_parameters():
    from peagle_nb.training.drafter_config import DrafterTrainConfig
    from peagle_nb.training.peagle import cod_loss

    head = _head("peagle", 2).float().train()
    g = torch.Generator().manual_seed(5)
    batch = {"tokens": torch.randint(0, 50, (2, 12), generator=g), "features": torch.randn(2, 12, 48, generator=g),
             "logits": torch.randn(2, 12, 40, generator=g), "argmax": torch.randint(0, 50, (2, 12), generator=g)}
    loss, _ = cod_loss(head, batch, DrafterTrainConfig(kind="peagle", out=None, k=4), g)
    loss.backward()
    assert head.mask_hidden.grad.abs().sum() > 0
    assert head.embed_tokens.weight.grad[3].abs().sum() > 0  # the <mask> row learns


# ----------------------------------------------------- measured acceptance == a literal greedy loop
@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiny-eagle3", "tiny-peagle"])
def test_committed_head_acceptance_matches_naive_loop(name):
    """On the real target and committed heads: the all-anchor acceptance measurement reproduces, step by
    step, a literal greedy draft-verify loop, whose output is the target's plain greedy output."""
    from peagle_nb.files import paths
    from peagle_nb.models.target import load_target, target_features
    from peagle_nb.training.drafter_data import generate
    from peagle_nb.training.drafter_eval import read_prompt_ids
    from tests.naive_decoding import naive_greedy_decode

    target, tok = load_target()
    head = load_head(paths.models_dir() / name)
    prompt = read_prompt_ids(tok, paths.prompts_dir() / "code.jsonl", 1)[0]
    k, new = 5, 40
    ref = generate(target, [prompt], len(prompt) + new)[0]
    out, steps = naive_greedy_decode(target, head, prompt, k, new)
    assert torch.equal(out, ref)  # lossless
    with torch.no_grad():
        res = target(input_ids=ref[None], output_hidden_states=True)
        feats = target_features(res.hidden_states, head.aux_layer_ids)
        acc = accepted_lengths(all_anchor_drafts(head, ref[None], feats, k), res.logits[0].argmax(-1))
    assert walk_steps(acc, len(prompt), len(ref), k) == steps
    assert sum(steps) > 0  # a trained head accepts something on code


@pytest.mark.slow
def test_mask_hidden_ablation_and_corpus_v3_prompts(smoke_target, tmp_path, monkeypatch):
    """--mask-hidden zeros holds P-EAGLE's shared hidden at zero through training (learned moves it);
    --corpus v3 draws the prompts from corpus v3's train split (a miniature one here) and keys the data cache."""
    from peagle_nb.cli import train_cmd
    from tests.test_family import _mini_corpus_v3

    corpus = tmp_path / "v3"
    _mini_corpus_v3(corpus, chars=20_000)
    monkeypatch.setenv("PEAGLE_CORPUS_V3", str(corpus))
    monkeypatch.setenv("PEAGLE_CORPUS_V3_MANIFEST", str(corpus / "manifest_v3.json"))
    cache = tmp_path / "data.pt"
    common = ["--smoke", "--target", str(smoke_target), "--device", "cpu", "--data-cache", str(cache), "--steps", "4"]

    def run(*opts: str) -> int:
        return train_cmd.run(argparse.Namespace(what="peagle", options=common + list(opts)))

    assert run("--out", str(tmp_path / "zeros"), "--mask-hidden", "zeros", "--corpus", "v3") == 0
    assert torch.load(cache)["key"]["corpus"] == "v3"
    assert run("--out", str(tmp_path / "learned"), "--corpus", "v3") == 0
    zeros, learned = load_head(tmp_path / "zeros"), load_head(tmp_path / "learned")
    assert torch.count_nonzero(zeros.mask_hidden) == 0 and torch.count_nonzero(learned.mask_hidden) > 0
    log = json.loads((tmp_path / "zeros" / "training_log.json").read_text())
    assert log["config"]["mask_hidden"] == "zeros" and log["config"]["corpus"] == "v3"
    assert "--corpus v3 --mask-hidden zeros" in (tmp_path / "zeros" / "README.md").read_text()  # reproducible
    from peagle_nb.training.drafter_config import DrafterTrainConfig

    with pytest.raises(ValueError, match="zeros only for a P-EAGLE head"):
        DrafterTrainConfig(kind="eagle3", out=tmp_path, mask_hidden="zeros").validate()
