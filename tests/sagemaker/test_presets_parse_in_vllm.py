"""Every preset's command line, as `peagle-nb serve` runs it and as the SageMaker container runs it, parsed
by vLLM's own OpenAI-server argument parser and turned into engine arguments, offline (no model is loaded,
nothing is downloaded). The CPU build ships the same parser as the GPU build, so a flag that vLLM renamed or
removed fails here instead of on a GPU instance."""

from __future__ import annotations

import json

import pytest

from peagle_nb.sagemaker.container import ENTRYPOINTS, container_args
from peagle_nb.sagemaker.plan import build_plan
from peagle_nb.serving import config as serving_config
from peagle_nb.serving.presets import PRESETS

pytest.importorskip("vllm")


@pytest.fixture(scope="module")
def vllm_cli():
    """(parser, validate, engine args class) of the installed vLLM; the modules moved between releases."""
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # older releases
        from vllm.utils import FlexibleArgumentParser
    try:
        from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
    except ImportError:
        from vllm.entrypoints.openai.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.engine.arg_utils import AsyncEngineArgs

    return make_arg_parser(FlexibleArgumentParser(prog="vllm serve")), validate_parsed_serve_args, AsyncEngineArgs


@pytest.fixture
def hub_ids_stay_ids(monkeypatch):
    """With the hub offline (this suite's default) EngineArgs resolves a hub id to a local snapshot and fails
    for the public models; with it "online" it only records the id. Nothing is fetched either way here."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


def engine_args(vllm_cli, argv: list[str]):
    parser, validate, engine_cls = vllm_cli
    ns = parser.parse_args(argv)
    validate(ns)
    return ns, engine_cls.from_cli_args(ns)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_serve_command_line_parses_and_builds_engine_args(name, vllm_cli, hub_ids_stay_ids):
    preset = PRESETS[name]
    argv = serving_config.server_args(preset, check=False)
    ns, engine = engine_args(vllm_cli, argv)
    assert getattr(ns, "model_tag", None) is None  # no stray positional argument
    assert engine.model == preset.target_path()
    assert engine.speculative_config == serving_config.preset_speculative_config(preset)
    flags = dict(zip(preset.engine_flags, preset.engine_flags[1:]))
    if "--max-model-len" in flags:
        assert engine.max_model_len == int(flags["--max-model-len"])
    if "--kv-cache-dtype" in flags:
        assert engine.kv_cache_dtype == flags["--kv-cache-dtype"]
    if "--no-enable-prefix-caching" in preset.engine_flags:
        assert engine.enable_prefix_caching is False
    if "--async-scheduling" in preset.engine_flags:
        assert engine.async_scheduling is True


@pytest.mark.parametrize("name", sorted(n for n, p in PRESETS.items() if not p.local))
@pytest.mark.parametrize("entrypoint", ENTRYPOINTS)
def test_container_command_line_parses_to_the_same_engine(name, entrypoint, vllm_cli, hub_ids_stay_ids):
    plan = build_plan(name, region="us-east-1")
    _, served = engine_args(vllm_cli, serving_config.server_args(PRESETS[name], check=False))
    ns, deployed = engine_args(vllm_cli, plan.container_args(entrypoint))
    assert ns.port == 8080 and getattr(ns, "model_tag", None) is None
    for field in ("model", "speculative_config", "max_model_len", "kv_cache_dtype", "enable_prefix_caching",
                  "async_scheduling", "max_cudagraph_capture_size", "dtype", "enforce_eager"):
        assert getattr(deployed, field) == getattr(served, field), (name, entrypoint, field)


def test_a_true_value_under_the_oldest_entrypoint_becomes_a_stray_argument(vllm_cli, hub_ids_stay_ids):
    """Why the plan writes '' for a boolean: the first entrypoint passes "true" on, and vLLM's parser takes
    it as the positional model tag instead of failing."""
    env = {"SM_VLLM_MODEL": "openai/gpt-oss-20b", "SM_VLLM_ASYNC_SCHEDULING": "true"}
    ns, _ = engine_args(vllm_cli, container_args(env, entrypoint="legacy"))
    assert ns.model_tag == "true"
    ns, _ = engine_args(vllm_cli, container_args({**env, "SM_VLLM_ASYNC_SCHEDULING": ""}, entrypoint="legacy"))
    assert getattr(ns, "model_tag", None) is None and ns.async_scheduling is True


def test_a_renamed_flag_is_caught(vllm_cli):
    parser = vllm_cli[0]
    with pytest.raises(SystemExit):
        parser.parse_args(["--model", "m", "--max-cudagraph-capture-sizes-typo", "4096"])
    with pytest.raises(SystemExit):
        parser.parse_args(["--model", "m", "--speculative-config", json.dumps({"method": "eagle3"})[:-1]])
