"""Prompts drawn beforehand: a GPU machine without corpus v3 builds the heads' data from one small file, checked
against the run's options and tokenizer."""

from __future__ import annotations

import gzip

import pytest
import torch

from peagle_nb.models.target import default_path
from peagle_nb.text.corpus import DOMAINS
from peagle_nb.training.drafter_cache import draw_prompts
from peagle_nb.training.drafter_config import DrafterTrainConfig
from peagle_nb.training.prompt_file import load_prompts, prompts_key, save_prompts


def _smoke_cfg(tmp_path, **kw):
    return DrafterTrainConfig.smoke_config("peagle", tmp_path / "head", **kw)


def test_a_run_reads_the_prompts_it_would_have_drawn(tmp_path):
    cfg = _smoke_cfg(tmp_path)
    drawn, labels = draw_prompts(cfg)  # from the committed corpus
    key = prompts_key(cfg.n_sequences, cfg.prompt_lengths, cfg.seed, DOMAINS, cfg.corpus,
                      default_path() / "tokenizer.json")
    written = save_prompts(tmp_path / "p.pt.gz", key, drawn, labels)
    assert written["bytes"] > 0 and len(written["sha256"]) == 64
    read, labels2 = draw_prompts(_smoke_cfg(tmp_path, prompts_file=tmp_path / "p.pt.gz"))
    assert labels2 == labels and len(read) == len(drawn)
    assert all(torch.equal(a, b) for a, b in zip(read, drawn))


def test_a_smaller_run_reads_the_files_first_prompts_and_a_larger_one_is_refused(tmp_path):
    cfg = _smoke_cfg(tmp_path)
    drawn, labels = draw_prompts(cfg)
    tok = default_path() / "tokenizer.json"
    save_prompts(tmp_path / "p.pt.gz", prompts_key(cfg.n_sequences, cfg.prompt_lengths, cfg.seed, DOMAINS,
                                                   cfg.corpus, tok), drawn, labels)
    n = cfg.n_sequences // 2
    read, labels2 = load_prompts(tmp_path / "p.pt.gz", prompts_key(n, cfg.prompt_lengths, cfg.seed, DOMAINS,
                                                                   cfg.corpus, tok))
    assert len(read) == n and labels2 == labels[:n]
    assert all(torch.equal(a, b) for a, b in zip(read, drawn[:n]))
    with pytest.raises(ValueError, match=rf"n_sequences: file {cfg.n_sequences}, run {cfg.n_sequences + 1}"):
        load_prompts(tmp_path / "p.pt.gz", prompts_key(cfg.n_sequences + 1, cfg.prompt_lengths, cfg.seed, DOMAINS,
                                                       cfg.corpus, tok))


def test_a_file_drawn_for_another_run_names_the_difference(tmp_path):
    cfg = _smoke_cfg(tmp_path)
    key = prompts_key(cfg.n_sequences, cfg.prompt_lengths, cfg.seed + 1, DOMAINS, cfg.corpus,
                      default_path() / "tokenizer.json")
    save_prompts(tmp_path / "p.pt.gz", key, [torch.tensor([1, 2, 3])], [0])
    with pytest.raises(ValueError, match=r"drawn for another run \(seed: file 1, run 0\)"):
        draw_prompts(_smoke_cfg(tmp_path, prompts_file=tmp_path / "p.pt.gz"))
    (tmp_path / "junk.pt.gz").write_bytes(gzip.compress(b"not a torch file"))
    with pytest.raises(ValueError, match="is not a prompts file"):
        load_prompts(tmp_path / "junk.pt.gz", key)
    with pytest.raises(FileNotFoundError, match="family_v3 prompts --out"):
        load_prompts(tmp_path / "none.pt.gz", key)


def test_a_missing_prompts_file_is_refused_before_the_run_starts(tmp_path):
    with pytest.raises(ValueError, match="--prompts .* is not a file"):
        _smoke_cfg(tmp_path, prompts_file=tmp_path / "none.pt.gz").validate()


def test_the_prompts_command_without_corpus_v3_names_the_rebuild(tmp_path, monkeypatch):
    from peagle_nb.lab.training_runs import family_v3
    from peagle_nb.text import corpus_v3

    monkeypatch.setenv("PEAGLE_CORPUS_V3", str(tmp_path / "nowhere"))
    with pytest.raises(corpus_v3.CorpusV3Error, match="build_corpus_v3.py"):
        family_v3.main(["prompts", "--target", str(default_path()), "--out", str(tmp_path / "p.pt.gz"),
                        "--n-sequences", "6"])
    with pytest.raises(SystemExit, match="no tokenizer at"):
        family_v3.main(["prompts", "--target", str(tmp_path), "--out", str(tmp_path / "p.pt.gz")])


def test_family_v3_heads_hand_the_prompts_file_to_the_data_process(tmp_path, monkeypatch):
    from peagle_nb.lab.training_runs import family, family_v3

    spawned = []

    class Failed:
        pid, returncode = 0, 1
        log_file = open(tmp_path / "data.log", "w")  # noqa: SIM115 -- wait_all closes it

        def wait(self, timeout=None):
            return 1

    monkeypatch.setattr(family, "spawn", lambda args, log, env: spawned.append(args) or Failed())
    with pytest.raises(SystemExit, match="building the drafter data failed"):
        family_v3.main(["heads", "--target", str(default_path()), "--prompts", str(tmp_path / "p.pt.gz"), "--out",
                        str(tmp_path / "o"), "--work", str(tmp_path / "w"), "--rungs", "1", "--ablations"])
    data_args = spawned[0]
    assert data_args[data_args.index("--prompts") + 1] == str(tmp_path / "p.pt.gz") and "--data-only" in data_args


def test_the_data_records_its_prompts_file_even_if_the_file_is_gone_when_the_data_is_done(tmp_path, monkeypatch):
    # a GPU session's scratch can lose the file mid-run (it happened: the data was built, then its record failed)
    from peagle_nb.models.checksums import file_sha256
    from peagle_nb.models.target import load_target
    from peagle_nb.training import drafter_cache

    cfg = _smoke_cfg(tmp_path)
    drawn, labels = draw_prompts(cfg)
    path = tmp_path / "p.pt.gz"
    save_prompts(path, prompts_key(cfg.n_sequences, cfg.prompt_lengths, cfg.seed, DOMAINS, cfg.corpus,
                                   default_path() / "tokenizer.json"), drawn, labels)
    sha = file_sha256(path)
    real = drafter_cache.build_drafter_data

    def build_then_lose_the_file(*a, **kw):
        out = real(*a, **kw)
        path.unlink()
        return out

    monkeypatch.setattr(drafter_cache, "build_drafter_data", build_then_lose_the_file)
    target, tok = load_target(default_path())
    _, info = drafter_cache.get_data(_smoke_cfg(tmp_path, prompts_file=path), target, tok)
    assert info["prompts_file"] == {"name": "p.pt.gz", "sha256": sha} and not path.exists()
