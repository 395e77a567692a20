"""The AWS vLLM container's SM_VLLM_* -> `vllm serve` translation, for the three entrypoint generations.

BEHAVIOUR is written from what each entrypoint is documented (and coded) to do, not from our function:
the current one (``sagemaker_args.py``: sorted variables, true -> bare flag, false -> dropped, empty ->
bare flag, JSON array -> one argument per element, empty array -> dropped, a run of JSON objects -> one
argument each, the CORS/middleware flags kept whole, model from SM_VLLM_MODEL else /opt/ml/model else
HF_MODEL_ID), the bash loop before it (the same booleans and model ladder, variables in environment
order, every value one argument) and the first bash loop (environment order, every value one argument,
``true``/``false`` passed on as values, an empty value a bare flag, no model ladder).
"""

import json
import shutil
import subprocess

import pytest

from peagle_nb.sagemaker.container import (ENTRYPOINTS, MODEL_DIR, args_to_env, channel_path, container_args,
                                           env_to_flag, flag_to_env, portability_problems, remap_paths)

SPEC = ('{"method":"eagle3","model":"/opt/ml/additional-model-data-sources/draft","num_speculative_tokens":7,'
        '"parallel_drafting":true}')
LORA_A, LORA_B = '{"name":"a","path":"/p"}', '{"name":"b","path":"/q"}'


def same(args):
    return {e: args for e in ENTRYPOINTS}


# (case, env, model_dir_has_files, expected arguments after "--port 8080" per entrypoint)
BEHAVIOUR = [
    ("true", {"SM_VLLM_MODEL": "m", "SM_VLLM_ENFORCE_EAGER": "true"}, False,
     {"current": ["--enforce-eager", "--model", "m"], "shell": ["--model", "m", "--enforce-eager"],
      "legacy": ["--model", "m", "--enforce-eager", "true"]}),
    ("true in capitals with spaces", {"SM_VLLM_MODEL": "m", "SM_VLLM_ENFORCE_EAGER": " TRUE "}, False,
     {"current": ["--enforce-eager", "--model", "m"], "shell": ["--model", "m", "--enforce-eager", " TRUE "],
      "legacy": ["--model", "m", "--enforce-eager", " TRUE "]}),
    ("false", {"SM_VLLM_MODEL": "m", "SM_VLLM_TRUST_REMOTE_CODE": "false"}, False,
     {"current": ["--model", "m"], "shell": ["--model", "m"],
      "legacy": ["--model", "m", "--trust-remote-code", "false"]}),
    ("empty value: the portable boolean", {"SM_VLLM_MODEL": "m", "SM_VLLM_ASYNC_SCHEDULING": ""}, False,
     {"current": ["--async-scheduling", "--model", "m"], "shell": ["--model", "m", "--async-scheduling"],
      "legacy": ["--model", "m", "--async-scheduling"]}),
    ("JSON object", {"SM_VLLM_MODEL": "m", "SM_VLLM_SPECULATIVE_CONFIG": SPEC}, False,
     same(["--model", "m", "--speculative-config", SPEC])),
    ("JSON array", {"SM_VLLM_MODEL": "m", "SM_VLLM_SERVED_MODEL_NAME": '["a", "b"]'}, False,
     {"current": ["--model", "m", "--served-model-name", "a", "b"],
      "shell": ["--model", "m", "--served-model-name", '["a", "b"]'],
      "legacy": ["--model", "m", "--served-model-name", '["a", "b"]']}),
    ("empty JSON array", {"SM_VLLM_MODEL": "m", "SM_VLLM_SERVED_MODEL_NAME": "[]"}, False,
     {"current": ["--model", "m"], "shell": ["--model", "m", "--served-model-name", "[]"],
      "legacy": ["--model", "m", "--served-model-name", "[]"]}),
    ("JSON array of objects", {"SM_VLLM_MODEL": "m", "SM_VLLM_LORA_MODULES": f"[{LORA_A}, {LORA_B}]"}, False,
     {"current": ["--lora-modules", LORA_A, LORA_B, "--model", "m"],
      "shell": ["--model", "m", "--lora-modules", f"[{LORA_A}, {LORA_B}]"],
      "legacy": ["--model", "m", "--lora-modules", f"[{LORA_A}, {LORA_B}]"]}),
    ("run of JSON objects", {"SM_VLLM_MODEL": "m", "SM_VLLM_LORA_MODULES": f"{LORA_A} {LORA_B}"}, False,
     {"current": ["--lora-modules", LORA_A, LORA_B, "--model", "m"],
      "shell": ["--model", "m", "--lora-modules", f"{LORA_A} {LORA_B}"],
      "legacy": ["--model", "m", "--lora-modules", f"{LORA_A} {LORA_B}"]}),
    ("array for a one-value flag", {"SM_VLLM_MODEL": "m", "SM_VLLM_ALLOWED_ORIGINS": '["*"]'}, False,
     {"current": ["--allowed-origins", '["*"]', "--model", "m"],
      "shell": ["--model", "m", "--allowed-origins", '["*"]'],
      "legacy": ["--model", "m", "--allowed-origins", '["*"]']}),
    ("key order", {"SM_VLLM_MODEL": "m", "SM_VLLM_MAX_MODEL_LEN": "512", "SM_VLLM_DTYPE": "float32"}, False,
     {"current": ["--dtype", "float32", "--max-model-len", "512", "--model", "m"],
      "shell": ["--model", "m", "--max-model-len", "512", "--dtype", "float32"],
      "legacy": ["--model", "m", "--max-model-len", "512", "--dtype", "float32"]}),
    ("empty model variable", {"SM_VLLM_MODEL": "", "HF_MODEL_ID": "Qwen/Qwen3-8B"}, False,
     {"current": ["--model", "Qwen/Qwen3-8B", "--model"], "shell": ["--model", "Qwen/Qwen3-8B", "--model"],
      "legacy": ["--model"]}),
    ("model data mounted", {"HF_MODEL_ID": "Qwen/Qwen3-8B"}, True,
     {"current": ["--model", MODEL_DIR], "shell": ["--model", MODEL_DIR], "legacy": []}),
    ("HF_MODEL_ID only", {"HF_MODEL_ID": "Qwen/Qwen3-8B"}, False,
     {"current": ["--model", "Qwen/Qwen3-8B"], "shell": ["--model", "Qwen/Qwen3-8B"], "legacy": []}),
    ("no model anywhere", {"SM_VLLM_DTYPE": "bfloat16"}, False, same(["--dtype", "bfloat16"])),
    ("other variables", {"PATH": "/usr/bin", "HF_TOKEN": "x", "SM_VLLM_MODEL": "m"}, False, same(["--model", "m"])),
]


@pytest.mark.parametrize("case, env, mounted, expected", BEHAVIOUR, ids=[row[0] for row in BEHAVIOUR])
@pytest.mark.parametrize("entrypoint", ENTRYPOINTS)
def test_behaviour_table(case, env, mounted, expected, entrypoint):
    args = container_args(env, model_dir_has_files=mounted, entrypoint=entrypoint)
    assert args[:2] == ["--port", "8080"]
    assert args[2:] == expected[entrypoint]


def test_every_preset_plan_runs_the_same_command_under_all_three_entrypoints():
    from peagle_nb.sagemaker.plan import build_plan
    from peagle_nb.serving.presets import PRESETS

    for name in PRESETS:
        plan = build_plan(name, region="us-east-1", s3_bucket="b")
        assert portability_problems(plan.env) == [], name
        current = plan.container_args("current")
        assert plan.container_args("shell") == current and plan.container_args("legacy") == current, name


@pytest.mark.parametrize("env, words", [
    ({"SM_VLLM_DTYPE": "bfloat16"}, "SM_VLLM_MODEL is not set"),
    ({"SM_VLLM_MODEL": ""}, "SM_VLLM_MODEL is empty"),
    ({"SM_VLLM_MODEL": "m", "SM_VLLM_ENFORCE_EAGER": "True"}, "use '' for a bare flag"),
    ({"SM_VLLM_MODEL": "m", "SM_VLLM_TRUST_REMOTE_CODE": "false"}, "leave the variable out for false"),
    ({"SM_VLLM_MODEL": "m", "SM_VLLM_SERVED_MODEL_NAME": '["a"]'}, "JSON array"),
    ({"SM_VLLM_MODEL": "m", "SM_VLLM_CHAT_TEMPLATE": "a\nb"}, "several lines"),
])
def test_portability_problems_name_the_variable_and_the_fix(env, words):
    (problem,) = portability_problems(env)
    assert words in problem


def test_names_round_trip():
    assert env_to_flag("SM_VLLM_MAX_NUM_BATCHED_TOKENS") == "--max-num-batched-tokens"
    assert flag_to_env("--kv-cache-dtype") == "SM_VLLM_KV_CACHE_DTYPE"
    args = ["--model", "m", "--enforce-eager", "--speculative-config", SPEC]
    env = args_to_env(args)
    assert env["SM_VLLM_ENFORCE_EAGER"] == ""  # the portable spelling of a bare flag
    assert container_args(env, entrypoint="legacy") == ["--port", "8080", *args]
    assert sorted(_groups(container_args(env)[2:])) == sorted(_groups(args))  # the current one sorts
    with pytest.raises(ValueError):
        env_to_flag("VLLM_MODEL")
    with pytest.raises(ValueError, match="one of"):
        container_args(env, entrypoint="newest")


def test_remap_paths_rewrites_json_values_too():
    mounts = {MODEL_DIR: "/tmp/target", channel_path("draft"): "/tmp/head"}
    out = remap_paths(["--model", MODEL_DIR, "--speculative-config", SPEC], mounts)
    assert out[1] == "/tmp/target" and json.loads(out[3])["model"] == "/tmp/head"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_legacy_rule_matches_a_bash_loop_reading_the_real_environment():
    """The oldest rule run by bash itself over `env` (the process environment's own order and quoting)."""
    script = r'''
ARGS=(--port 8080)
while IFS='=' read -r key value; do
  arg_name=$(echo "${key#SM_VLLM_}" | tr '[:upper:]' '[:lower:]' | tr '_' '-')
  ARGS+=("--${arg_name}"); if [ -n "$value" ]; then ARGS+=("$value"); fi
done < <(env | grep "^SM_VLLM_")
printf '%s\n' "${ARGS[@]}"'''
    env = {"SM_VLLM_MODEL": "m", "SM_VLLM_SPECULATIVE_CONFIG": SPEC, "SM_VLLM_MAX_MODEL_LEN": "512",
           "SM_VLLM_ENFORCE_EAGER": ""}
    out = subprocess.run(["bash", "-c", script], env={"PATH": "/usr/bin:/bin", **env}, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    ours = container_args(env, entrypoint="legacy")
    assert sorted(_groups(out)) == sorted(_groups(ours))  # `env` order is the process's, not ours


def _groups(args):
    out, i = [], 0
    while i < len(args):
        n = 2 if i + 1 < len(args) and not args[i + 1].startswith("--") else 1
        out.append(tuple(args[i:i + n]))
        i += n
    return out
