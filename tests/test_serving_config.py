"""Serving presets, speculative configs and the /metrics parser (no vLLM engine started here)."""

from __future__ import annotations

import json

import pytest

from peagle_nb.cli import main as cli_main
from peagle_nb.serving import config, metrics
from peagle_nb.serving.presets import PRESETS, get_preset


def test_every_speculative_preset_is_eagle3_method():
    for p in PRESETS.values():
        spec = config.preset_speculative_config(p)
        if p.method == "none":
            assert spec is None
            continue
        assert spec["method"] == "eagle3" and spec["num_speculative_tokens"] == p.k
        assert spec.get("parallel_drafting", False) is (p.method == "peagle")
        if p.trained_k:
            assert p.k <= p.trained_k


def test_public_presets_match_model_cards():
    assert config.preset_speculative_config("gpt-oss-20b-peagle") == {
        "method": "eagle3", "model": "amazon/GPT-OSS-20B-P-EAGLE", "num_speculative_tokens": 7,
        "parallel_drafting": True}
    assert get_preset("gpt-oss-120b-peagle").k == 5 and get_preset("qwen3-coder-30b-peagle").k == 10
    args = config.server_args("gpt-oss-20b-peagle", k=5)
    assert args[:2] == ["--model", "openai/gpt-oss-20b"] and "--no-enable-prefix-caching" in args
    assert json.loads(args[args.index("--speculative-config") + 1])["num_speculative_tokens"] == 5
    kw = config.llm_kwargs("gpt-oss-20b-peagle")
    assert kw["kv_cache_dtype"] == "fp8" and kw["enable_prefix_caching"] is False and kw["async_scheduling"] is True
    with pytest.raises(KeyError, match="choose one of"):
        get_preset("gpt-5")
    with pytest.raises(ValueError, match="positive integer"):
        config.speculative_config("h", 0, True)


def test_serve_cli_dry_run(capsys):
    assert cli_main(["serve", "--preset", "qwen3-coder-30b-peagle", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "vllm.entrypoints.openai.api_server" in out and '"parallel_drafting":true' in out and "80 GiB" in out


EXPOSITION = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 10.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e9
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 40.0
vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="m"} 40.0
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 25.0
vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="m"} 5.0
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 9.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 16.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="0"} 5.0
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 77.0
"""


def test_metrics_parser_sums_engines_and_orders_positions():
    m = metrics.parse_spec_decode_metrics(EXPOSITION)
    assert (m["num_drafts"], m["num_draft_tokens"], m["num_accepted_tokens"]) == (20, 80, 30)
    assert m["accepted_per_position"] == [21, 9]  # position 0 summed over engines, then position 1
    assert m["tau"] == pytest.approx(1 + 30 / 20) and m["generation_tokens"] == 77
    d = metrics.delta(m, metrics.parse_spec_decode_metrics(EXPOSITION.replace(" 10.0", " 12.0")))
    assert d["num_drafts"] == 4 and d["num_accepted_tokens"] == 0 and d["tau"] == 1.0
    empty = metrics.parse_spec_decode_metrics("# nothing\n")
    assert empty["tau"] is None and empty["num_drafts"] == 0
