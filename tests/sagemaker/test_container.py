"""The AWS vLLM container's SM_VLLM_* -> `vllm serve` translation (pure function)."""

import json
import shutil
import subprocess

import pytest

from peagle_nb.sagemaker.container import (MODEL_DIR, args_to_env, channel_path, container_args, env_to_flag,
                                           flag_to_env, remap_paths)

SPEC = '{"method":"eagle3","model":"/opt/ml/additional-model-data-sources/draft","num_speculative_tokens":7,"parallel_drafting":true}'


def test_each_variable_becomes_one_flag_in_order():
    env = {"PATH": "/usr/bin", "SM_VLLM_MODEL": "openai/gpt-oss-20b", "SM_VLLM_SPECULATIVE_CONFIG": SPEC,
           "SM_VLLM_MAX_MODEL_LEN": "8192", "HF_TOKEN": "x", "SM_VLLM_TENSOR_PARALLEL_SIZE": "1"}
    assert container_args(env) == ["--port", "8080", "--model", "openai/gpt-oss-20b", "--speculative-config", SPEC,
                                   "--max-model-len", "8192", "--tensor-parallel-size", "1"]
    assert json.loads(container_args(env)[5])["parallel_drafting"] is True  # JSON survives as ONE argument


def test_booleans_follow_the_container_contract():
    env = {"SM_VLLM_MODEL": "m", "SM_VLLM_ENFORCE_EAGER": "true", "SM_VLLM_TRUST_REMOTE_CODE": "false",
           "SM_VLLM_ASYNC_SCHEDULING": "", "SM_VLLM_NO_ENABLE_PREFIX_CACHING": "TRUE"}
    assert container_args(env) == ["--port", "8080", "--model", "m", "--enforce-eager", "--async-scheduling",
                                   "--no-enable-prefix-caching"]


def test_model_fallbacks():
    assert container_args({}, model_dir_has_files=True)[-2:] == ["--model", MODEL_DIR]
    assert container_args({"HF_MODEL_ID": "Qwen/Qwen3-8B"})[-2:] == ["--model", "Qwen/Qwen3-8B"]
    # /opt/ml/model wins over HF_MODEL_ID; SM_VLLM_MODEL wins over both (no second --model).
    assert container_args({"HF_MODEL_ID": "a"}, model_dir_has_files=True)[-1] == MODEL_DIR
    assert container_args({"SM_VLLM_MODEL": "b", "HF_MODEL_ID": "a"}, model_dir_has_files=True).count("--model") == 1
    with pytest.raises(ValueError, match="no model"):
        container_args({"SM_VLLM_DTYPE": "bfloat16"})


def test_names_round_trip():
    assert env_to_flag("SM_VLLM_MAX_NUM_BATCHED_TOKENS") == "--max-num-batched-tokens"
    assert flag_to_env("--kv-cache-dtype") == "SM_VLLM_KV_CACHE_DTYPE"
    args = ["--model", "m", "--enforce-eager", "--speculative-config", SPEC]
    assert container_args(args_to_env(args)) == ["--port", "8080", *args]
    with pytest.raises(ValueError):
        env_to_flag("VLLM_MODEL")


def test_remap_paths_rewrites_json_values_too():
    mounts = {MODEL_DIR: "/tmp/target", channel_path("draft"): "/tmp/head"}
    out = remap_paths(["--model", MODEL_DIR, "--speculative-config", SPEC], mounts)
    assert out[1] == "/tmp/target" and json.loads(out[3])["model"] == "/tmp/head"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_matches_the_shell_entrypoint_loop():
    """The same env through the entrypoint's own bash loop (read from `env`, tr to lower/dashes)."""
    script = r'''
ARGS=(--port 8080)
while IFS='=' read -r key value; do
  arg_name=$(echo "${key#SM_VLLM_}" | tr '[:upper:]' '[:lower:]' | tr '_' '-')
  ARGS+=("--${arg_name}"); if [ -n "$value" ]; then ARGS+=("$value"); fi
done < <(env | grep "^SM_VLLM_")
printf '%s\n' "${ARGS[@]}"'''
    env = {"SM_VLLM_MODEL": "m", "SM_VLLM_SPECULATIVE_CONFIG": SPEC, "SM_VLLM_MAX_MODEL_LEN": "512"}
    out = subprocess.run(["bash", "-c", script], env={"PATH": "/usr/bin:/bin", **env}, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    ours = container_args(env)
    # `env` order is the process's, not ours: compare flag -> value pairs.
    pairs = lambda a: dict(zip(a[0::2], a[1::2]))  # noqa: E731
    assert pairs(out) == pairs(ours)
