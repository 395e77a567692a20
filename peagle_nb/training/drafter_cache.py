"""The self-distillation data of a drafter run, built once and reused: within one process (``train eagle3``
then ``train peagle``) and across runs through ``--data-cache`` (a ``torch.save`` file keyed by every option
the data depends on). Explained in notebook 02."""

from __future__ import annotations

import time
from pathlib import Path

import torch

from peagle_nb.models.target import default_path as default_target_path
from peagle_nb.text.corpus import DOMAINS
from peagle_nb.training.drafter_config import DrafterTrainConfig
from peagle_nb.training.drafter_data import DrafterData, build_drafter_data, corpus_prompts
from peagle_nb.training.runtime import log_line

_MEMO: dict = {}  # the last data built in this process (train eagle3 then peagle in one process: built once)


def data_key(cfg: DrafterTrainConfig, target) -> dict:
    """Everything the data depends on: a cache built with another key is rebuilt."""
    return {"format": "tokens-v3", "n_sequences": cfg.n_sequences, "seq_len": cfg.seq_len,
            "draft_vocab_size": cfg.draft_vocab_size, "prompt_lengths": list(cfg.prompt_lengths),
            "greedy_fraction": cfg.greedy_fraction, "sample_temperature": cfg.sample_temperature,
            "domains": list(DOMAINS), "seed": cfg.seed, "vocab_size": target.config.vocab_size,
            "hidden_size": target.config.hidden_size, "layers": target.config.num_hidden_layers,
            "target": str(cfg.target), **({"corpus": cfg.corpus} if cfg.corpus != "v1" else {})}


def draw_prompts(cfg: DrafterTrainConfig, tokenizer=None) -> tuple[list[torch.Tensor], list[int]]:
    """The run's prompts and their domain labels: from ``cfg.prompts_file`` (checked against this run's options and
    tokenizer), else cut from the corpus's train split."""
    from peagle_nb.training.prompt_file import load_prompts, prompts_key

    folder = Path(cfg.target) if cfg.target else default_target_path()
    if cfg.prompts_file:
        return load_prompts(cfg.prompts_file, prompts_key(cfg.n_sequences, cfg.prompt_lengths, cfg.seed, DOMAINS,
                                                          cfg.corpus, folder / "tokenizer.json"))
    if tokenizer is None:
        from transformers import PreTrainedTokenizerFast

        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(folder))
    return corpus_prompts(tokenizer, cfg.n_sequences, cfg.prompt_lengths, cfg.seed, DOMAINS, cfg.corpus)


def get_data(cfg: DrafterTrainConfig, target, tokenizer) -> tuple[DrafterData, dict]:
    """Self-distillation data: reuse this process's last build or read ``cfg.data_cache`` if either matches
    this configuration, else build (and save to ``cfg.data_cache``)."""
    key = data_key(cfg, target)
    if _MEMO.get("key") == key:
        log_line("drafter data: reusing this process's data")
        if cfg.data_cache and not Path(cfg.data_cache).is_file():
            _save_data(cfg.data_cache, key, _MEMO["data"], _MEMO["info"])
        return _MEMO["data"], _MEMO["info"]
    if cfg.data_cache and Path(cfg.data_cache).is_file():
        blob = torch.load(cfg.data_cache, map_location="cpu")
        if blob.get("key") == key:
            log_line(f"drafter data: reusing {cfg.data_cache}")
            return DrafterData(**blob["data"]), blob["info"]
        log_line(f"drafter data: {cfg.data_cache} was built for another configuration; rebuilding")
    t0 = time.time()
    prompts, labels = draw_prompts(cfg, tokenizer)
    source = None
    if cfg.prompts_file:  # the data is reproducible from that file (itself from the corpus, by `family_v3 prompts`);
        from peagle_nb.models.checksums import file_sha256  # hashed now: the file may be gone when the data is done

        source = {"name": Path(cfg.prompts_file).name, "sha256": file_sha256(Path(cfg.prompts_file))}
    log_line(f"drafter data: {len(prompts):,} prompts in {time.time() - t0:.1f} s"
             + (f" (read from {cfg.prompts_file})" if cfg.prompts_file else ""))
    gen_batch = cfg.gen_batch or (4096 if target.device.type == "cuda" else 64)
    generator = cfg.generator or ("lean" if target.device.type == "cuda" else "transformers")
    data, info = build_drafter_data(target, prompts, cfg.seq_len, cfg.draft_vocab_size,
                                    greedy_fraction=cfg.greedy_fraction, temperature=cfg.sample_temperature,
                                    seed=cfg.seed, domain=labels, domains=DOMAINS, gen_batch=gen_batch, log=log_line,
                                    generator=generator)
    info["build_seconds"] = round(time.time() - t0, 1)
    if source:
        info["prompts_file"] = source
    info["labels"] = "teacher"  # features and soft labels come from the target per batch (TargetTeacher)
    _MEMO.clear()
    _MEMO.update(key=key, data=data, info=info)
    if cfg.data_cache:
        _save_data(cfg.data_cache, key, data, info)
    return data, info


def _save_data(path: Path, key: dict, data: DrafterData, info: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    torch.save({"key": key, "info": info, "data": data.state()}, path)
