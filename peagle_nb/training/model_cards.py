"""Model cards (``README.md`` beside the weights) of the trained draft heads, written from their
``training_log.json``: every number in a card is a field of the log it renders. Explained in notebooks 02, 03."""

from __future__ import annotations

from pathlib import Path


def _acceptance_tables(acc: dict) -> str:
    parts = []
    for name, res in acc.items():
        kmax = max(int(k) for k in res)
        head = "| K | steps | tau | " + " | ".join(f"a{j}" for j in range(1, kmax + 1)) + " |"
        sep = "|---" * (kmax + 3) + "|"
        rows = []
        for k, r in res.items():
            cells = [k, str(r["steps"]), f"{r['tau']:.2f}"] + [f"{a:.2f}" for a in r["accept_rate_per_position"]]
            cells += [""] * (kmax - int(k))
            rows.append("| " + " | ".join(cells) + " |")
        parts.append(f"**{name}** ({len(res)} values of K)\n\n{head}\n{sep}\n" + "\n".join(rows))
    return "\n\n".join(parts)


def _n_prompts(s: dict) -> str:
    n = {name: res[next(iter(res))].get("prompts") for name, res in s["acceptance"].items()}
    vals = sorted({v for v in n.values() if v is not None})
    return "/".join(map(str, vals)) if vals else "the"


def _comparison(s: dict, compare: dict | None) -> str:
    if not compare:
        return ""
    rows = []
    for name, res in s["acceptance"].items():
        if name not in compare:
            continue
        ks = [k for k in res if k in compare[name]]
        rows.append(f"| {name} | P-EAGLE (this head) | " + " | ".join(f"{res[k]['tau']:.2f}" for k in ks) + " |")
        rows.append(f"| {name} | EAGLE-3 (`tiny-eagle3`) | " + " | ".join(f"{compare[name][k]['tau']:.2f}" for k in ks)
                    + " |")
    if not rows:
        return ""
    n = len(next(iter(s["acceptance"].values())))
    k = "7" if "7" in next(iter(s["acceptance"].values())) else str(n)
    wins = [name for name, res in s["acceptance"].items()
            if name in compare and res[k]["tau"] >= compare[name][k]["tau"]]
    lead = (f"At K={k} P-EAGLE's acceptance length is at least EAGLE-3's only on {', '.join(wins)}." if wins else
            f"At K={k} EAGLE-3's acceptance length is higher than P-EAGLE's on every set.")
    verdict = (f"{lead} With a target this small and this predictable, "
               f"EAGLE-3's chain (each draft sees the previous ones) keeps a high conditional acceptance at depth, "
               f"while P-EAGLE's later slots must guess without them; P-EAGLE's gain is its drafting cost, one pass "
               f"for any K (measured by the engine, notebook 03).\n")
    if len(wins) == len(rows) // 2:
        verdict = f"At K={k} P-EAGLE's acceptance length is at least EAGLE-3's on every set.\n"
    return ("\n## Versus the EAGLE-3 head trained on the same data\n\nGreedy tau, same prompts and measurement:\n\n"
            "| set | head | " + " | ".join(f"K={k}" for k in range(1, n + 1)) + " |\n"
            + "|---" * (n + 2) + "|\n" + "\n".join(rows) + "\n\n" + verdict)


def _continuations(d: dict) -> str:
    if "decoding" in d:  # written by drafter_data since sampling became the default
        rep = d.get("repetition_fraction")
        reps = ("; generated tokens inside a repeated 8-gram: " + ", ".join(
            f"{k} {100 * v:.1f}%" for k, v in rep["by_domain"].items() if v is not None)) if rep else ""
        return d["decoding"] + reps
    if d["n_greedy"] == d["n_sequences"]:
        return "all greedy, the way the heads are evaluated"
    return f"{d['n_greedy']:,} greedy, the rest sampled at T={d['sample_temperature']}"


def _prompt_domains(d: dict) -> str:
    per = d.get("sequences_per_domain")
    if not per:
        return "prose + code, half each"
    out = ", ".join(f"{k} {v:,}" for k, v in per.items())
    return out + (f"; trained without {', '.join(d['excluded_domains'])}" if d.get("excluded_domains") else "")


def _teacher(d: dict) -> str:
    if d.get("labels") == "teacher":
        return "the target computes each batch's features (3 aux layers) and soft labels on the fly"
    return "cached target features (3 aux layers) and logits"  # runs before the teacher existed


def _continued(s: dict) -> str:
    e = s.get("init_from")
    if not e:
        return ""
    return (f", continuing `{Path(e['path']).name}` ({e['steps_run']} steps, {e['train_seconds']:.0f} s before): "
            f"{s['steps_run'] + e['steps_run']} steps, {s['train_seconds'] + e['train_seconds']:.0f} s in all")


def _validation(s: dict) -> str:
    val = s.get("validation")
    if not val:
        return ""
    rows = "\n".join(f"| {name} | {res[next(iter(res))]['prompts']} | "
                     + " | ".join(f"{r['tau']:.2f}" for r in res.values()) + " |" for name, res in val.items())
    ks = next(iter(val.values())).keys()
    header = "| set | prompts | " + " | ".join(f"K={k}" for k in ks) + " |\n" + "|---" * (len(ks) + 2) + "|\n"
    return ("\n## Validation (for choosing between training runs)\n\nGreedy tau on new prompts cut from corpus-train "
            "documents (never the held-out sets above), measured right after training on the training device:\n\n"
            + header + rows + "\n")


def drafter_card(s: dict, compare: dict | None = None) -> str:
    """The head's ``README.md``, written from the training summary (all numbers measured by this run)."""
    c, h, d = s["config"], s["head_config"], s["data"]
    kind = s["kind"]
    name = "tiny-eagle3" if kind == "eagle3" else "tiny-peagle"
    smoke = "\n> SMOKE RUN: a tiny configuration for tests, not the shipped head.\n" if c["smoke"] else ""
    if kind == "eagle3":
        arch = (f"EAGLE-3 draft head: `fc` (3 x {h['target_hidden_size']} -> {h['hidden_size']}) over the target's "
                f"layers {tuple(h['eagle_config']['eagle_aux_hidden_state_layer_ids'])}, ONE fused decoder layer "
                f"(attention over `cat(norm(embed), norm(hidden))`, 2 x {h['hidden_size']} wide), final norm, "
                f"`lm_head` over a {h['draft_vocab_size']}-token draft vocabulary (`d2t`/`t2d`). Embedding copied "
                f"from the target and frozen.")
        method = (f"training-time test: {c['k']} chained steps (k = 0..{c['k'] - 1}), step k feeding the head's own "
                  f"pre-norm hidden output of step k-1; loss = sum_k {c['ttt_decay']}^k x soft cross-entropy "
                  f"against the target's distribution (over the draft vocabulary)")
        serve = '{"method": "eagle3", "model": "data/models/tiny-eagle3", "num_speculative_tokens": 3}'
    else:
        mask_hidden = "learned" if c.get("mask_hidden", "learned") == "learned" else "zero (held at zero: the ablation)"
        arch = (f"P-EAGLE draft head: `fc` (3 x {h['target_hidden_size']} -> {h['hidden_size']}) over the target's "
                f"layers {tuple(h['eagle_config']['eagle_aux_hidden_state_layer_ids'])}, {h['num_hidden_layers']} "
                f"decoder layers (layer 0 fused 2 x {h['hidden_size']}, the rest plain Llama layers), final norm, "
                f"`lm_head` over a {h['draft_vocab_size']}-token draft vocabulary; its own embedding with a learned "
                f"`<mask>` row (id {h['mask_token_id']}) and a {mask_hidden} `mask_hidden` [1, "
                f"{3 * h['target_hidden_size']}]. All K drafts come from ONE forward pass.")
        method = (f"conditional drop-token depth sampling (COD) for K = {c['k']} (depth d keeps max({c['cod_r']}^d, "
                  f"{c['cod_r_min']}) of the anchors, only chains whose parent was kept), the matching attention mask "
                  f"(real context up to the anchor + earlier depths of the own chain), soft cross-entropy against "
                  f"the target's distribution, uniform over depths")
        serve = ('{"method": "eagle3", "model": "data/models/tiny-peagle", "num_speculative_tokens": 7, '
                 '"parallel_drafting": true}')
    smoke_flag = " --smoke" if c["smoke"] else ""
    # A time-budgeted run is reproduced by its step count (the schedule follows the same progress).
    steps = s["steps_run"] if c["time_budget_s"] else c["steps"]
    options = [f"--intermediate-size {c['intermediate_size']}" if c.get("intermediate_size") else "",
               f"--greedy-fraction {c['greedy_fraction']:g}" if c.get("greedy_fraction", 1.0) != 0.0 else "",
               f"--sample-temperature {c['sample_temperature']:g}" if c.get("sample_temperature", 1.0) != 1.0 else "",
               "".join(f"--exclude-domain {d} " for d in c.get("exclude_domains", ())).strip(),
               f"--cod-r {c['cod_r']:g} --cod-r-min {c['cod_r_min']:g}"
               if kind == "peagle" and (c["cod_r"], c["cod_r_min"]) != (0.7, 0.2) else "",
               f"--corpus {c['corpus']}" if c.get("corpus", "v1") != "v1" else "",
               f"--mask-hidden {c['mask_hidden']}" if c.get("mask_hidden", "learned") != "learned" else "",
               f"--init-from {s['init_from']['path']}" if s.get("init_from") else ""]
    cmd = (f"peagle-nb train {kind}{smoke_flag} --steps {steps} --batch-size {c['batch_size']} --lr {c['lr']:g} "
           f"--k {c['k']} --n-sequences {c['n_sequences']} --seq-len {c['seq_len']} "
           + "".join(o + " " for o in options if o) + "--device cuda")
    budget = (f"\nThe run itself stopped at a {c['time_budget_s']:g} s time budget on {s['device']}, where "
              f"{s['steps_run']} steps fit." if c["time_budget_s"] else "")
    notes = "".join(f"\n\n{n}" for n in s.get("notes", []))
    reeval = ""
    if s.get("earlier_evaluations"):
        eval_device = "cuda" if "CPU" not in s["eval"]["device"] else "cpu"
        reeval = (f"\nThe acceptance tables were then re-measured on {s['eval']['device']} with\n"
                  f"`peagle-nb train {kind} --eval-only --device {eval_device} --out data/models/{name}` "
                  f"(the training run's own measurement on {s['earlier_evaluations'][0]['eval']['device']} is kept in "
                  f"`training_log.json`).")
    hist = "\n".join(f"| {r['step']} | {r['seconds']} | {r['loss']:.3f} | {r.get('acc0', float('nan')):.3f} |"
                     for r in s["history"][:: max(1, len(s["history"]) // 12)])
    prompt_lengths = "/".join(map(str, c["prompt_lengths"]))
    facts = [
        ("target", "`data/models/tiny-target` (this head's `fc`, vocabulary and mask id only fit that model)"),
        ("parameters", f"{s['params'] / 1e6:.2f}M, stored in bf16"),
        ("training data", f"{d['n_sequences']:,} sequences of {d['seq_len']} tokens: prompts ({prompt_lengths} tokens) "
                          f"cut from the corpus **train** split ({_prompt_domains(d)}), continued BY THE TARGET "
                          f"ITSELF ({_continuations(d)}); {d['generated_tokens']:,} generated tokens; {_teacher(d)}"),
        ("draft vocabulary", f"the {d['draft_vocab_size']} most frequent tokens of the target's generations (covers "
                             f"{100 * d['draft_vocab_coverage']:.1f}% of them)"),
        ("objective", method),
        ("optimisation", f"{s['steps_run']} steps x batch {c['batch_size']}, AdamW lr {c['lr']:g} (warmup "
                         f"{c['warmup_steps']}, cosine to {c['min_lr_frac']:g}x), grad clip {c['grad_clip']:g}, bf16 "
                         f"autocast on GPU; {s['train_seconds']:.0f} s of training{_continued(s)}"),
        ("device", s["device"]),
        ("versions", f"torch {s['versions']['torch']}, transformers {s['versions']['transformers']}"),
    ]
    table = "| | |\n|---|---|\n" + "\n".join(f"| {key} | {value} |" for key, value in facts)
    ev = s["eval"]
    measured = (f"Measured by `peagle_nb.training.drafter_eval` ({ev['device']}, fp32, torch "
                f"{ev['versions']['torch']}) on\nthe {ev['max_new_tokens']}-token greedy continuation of each of "
                f"{_n_prompts(s)} held-out prompts per set (`data/prompts/*.jsonl`, never in training). tau = mean "
                f"tokens per draft-verify\nstep "
                f"(accepted drafts + the bonus token); a_j = fraction of steps whose j-th draft was accepted.")
    return f"""# {name}
{smoke}
{arch}

{table}

## Greedy acceptance on the held-out prompt sets

{measured}

{_acceptance_tables(s['acceptance'])}
{_comparison(s, compare)}{_validation(s)}
## Training curve

| step | seconds | loss | depth-0 accuracy |
|---|---|---|---|
{hist}

## Use

vLLM: `--speculative-config '{serve}'`; this suite: `peagle_nb.models.heads.load_head("data/models/{name}")`.

## Reproduce

```bash
{cmd} --data-cache build/drafter_data.pt --out data/models/{name}
```
(`--data-cache` lets `train eagle3` and `train peagle` share the same self-distillation data.){budget}{reeval}{notes}
"""
