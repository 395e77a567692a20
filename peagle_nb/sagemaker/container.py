"""What the AWS vLLM container for SageMaker AI does with its environment, as a pure function.

Explained in notebook 06. The container's entrypoint (aws/deep-learning-containers, vLLM image) builds the
``vllm serve`` command line from ``SM_VLLM_<NAME>=<value>`` variables: ``--port 8080`` first (SageMaker
sends ``/ping`` and ``/invocations`` there), then one ``--<name>`` per variable, ``<NAME>`` lower-cased and
``_`` turned into ``-``. Three generations of that entrypoint are in released images, and they differ:

- ``legacy`` (the first bash loop): every variable becomes ``--<name> <value>``, or a bare ``--<name>``
  when the value is empty; ``true`` is passed on as a value (``--enforce-eager true``, which vLLM reads as a
  stray positional argument); no model fallback; variables in environment order.
- ``shell`` (the bash loop with boolean and model handling): ``true`` gives a bare flag, ``false`` drops
  it, an empty value gives a bare flag; when ``SM_VLLM_MODEL`` is unset or empty the model comes from
  ``/opt/ml/model`` (when SageMaker put files there) or else ``HF_MODEL_ID``; environment order.
- ``current`` (``sagemaker_args.py``): as ``shell`` (``true``/``false`` compared after stripping spaces),
  but variables in sorted order, and a JSON array value becomes one argument per element (an empty
  array drops the flag); a JSON object stays one argument, a run of objects ``{..} {..}`` becomes one
  argument each.

The portable spelling, the one a plan writes, means the same on all three: an empty value for a boolean
flag, no JSON arrays, ``SM_VLLM_MODEL`` always set, a one-line JSON object for the speculative config.
:func:`portability_problems` says where an environment leaves that spelling. ``local.py`` runs exactly
these arguments on this machine to emulate the container.
"""

from __future__ import annotations

import json
from typing import Mapping

PREFIX = "SM_VLLM_"
PORT = 8080
MODEL_DIR = "/opt/ml/model"
ADDITIONAL_DATA_DIR = "/opt/ml/additional-model-data-sources"
ENTRYPOINTS = ("current", "shell", "legacy")
# Flags the current entrypoint keeps as one argument even when the value is a JSON array.
_SINGLE_TOKEN_FLAGS = frozenset({"--allowed-origins", "--allowed-methods", "--allowed-headers", "--middleware"})


def channel_path(channel: str) -> str:
    """Where SageMaker mounts an additional model data source named ``channel`` inside the container."""
    return f"{ADDITIONAL_DATA_DIR}/{channel}"


def env_to_flag(key: str) -> str:
    """``SM_VLLM_MAX_MODEL_LEN`` -> ``--max-model-len``."""
    if not key.startswith(PREFIX) or len(key) == len(PREFIX):
        raise ValueError(f"{key!r} is not an SM_VLLM_<NAME> variable")
    return "--" + key[len(PREFIX):].lower().replace("_", "-")


def flag_to_env(flag: str) -> str:
    """``--max-model-len`` -> ``SM_VLLM_MAX_MODEL_LEN`` (the inverse, used to write a plan's env)."""
    name = flag.lstrip("-")
    if not name:
        raise ValueError(f"{flag!r} is not a command-line flag")
    return PREFIX + name.upper().replace("-", "_")


def container_args(env: Mapping[str, str], *, model_dir_has_files: bool = False, entrypoint: str = "current",
                   port: int = PORT) -> list[str]:
    """The ``vllm serve`` arguments the AWS vLLM container derives from ``env`` (pure; no I/O).

    ``model_dir_has_files`` says whether SageMaker populated ``/opt/ml/model`` (a ``ModelDataSource`` on
    the model); ``entrypoint`` is one of :data:`ENTRYPOINTS`. No model is an error only for vLLM, which
    then starts its own default model: :func:`portability_problems` reports it before that.
    """
    if entrypoint not in ENTRYPOINTS:
        raise ValueError(f"entrypoint {entrypoint!r} is not one of {ENTRYPOINTS}")
    args = ["--port", str(port)]
    if entrypoint != "legacy" and not env.get(PREFIX + "MODEL"):
        if model_dir_has_files:
            args += ["--model", MODEL_DIR]
        elif env.get("HF_MODEL_ID"):
            args += ["--model", env["HF_MODEL_ID"]]
    keys = [k for k in env if k.startswith(PREFIX) and k != PREFIX]
    for key in sorted(keys) if entrypoint == "current" else keys:
        value = "" if env[key] is None else str(env[key])
        args += _flag_and_values(env_to_flag(key), value, entrypoint)
    return args


def _flag_and_values(flag: str, value: str, entrypoint: str) -> list[str]:
    if entrypoint == "legacy":
        return [flag, value] if value else [flag]
    lowered = (value.strip() if entrypoint == "current" else value).lower()
    if lowered == "true":
        return [flag]
    if lowered == "false":
        return []
    if not value:
        return [flag]
    if entrypoint == "shell" or flag in _SINGLE_TOKEN_FLAGS:
        return [flag, value]
    tokens = _current_tokens(value)
    return [] if tokens is None else [flag, *tokens]


def _current_tokens(value: str) -> list[str] | None:
    """The current entrypoint's split of one value: arrays per element, object runs per object."""
    stripped = value.strip()
    if stripped.startswith("[") and stripped.endswith("]"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return [value]
        if isinstance(parsed, list):
            return [_as_token(e) for e in parsed] if parsed else None
        return [value]
    if stripped.startswith("{") and stripped.endswith("}"):
        objects = _json_objects(stripped)
        if objects is not None and len(objects) > 1:
            return [json.dumps(o, separators=(",", ":")) for o in objects]
    return [value]


def _as_token(element) -> str:
    if isinstance(element, (dict, list)):
        return json.dumps(element, separators=(",", ":"))
    if isinstance(element, bool):
        return "true" if element else "false"
    return "" if element is None else str(element)


def _json_objects(text: str) -> list[dict] | None:
    decoder, objects, i = json.JSONDecoder(), [], 0
    while i < len(text):
        try:
            obj, i = decoder.raw_decode(text, i)
        except ValueError:
            return None
        if not isinstance(obj, dict):
            return None
        objects.append(obj)
        while i < len(text) and text[i].isspace():
            i += 1
    return objects or None


def portability_problems(env: Mapping[str, str]) -> list[str]:
    """Where ``env`` would run differently under the three entrypoints (see the module doc), with the fix."""
    problems = []
    model = env.get(PREFIX + "MODEL")
    if not model:
        problems.append(f"{PREFIX}MODEL is {'empty' if model == '' else 'not set'}: the oldest entrypoint has no "
                        f"model fallback (and an empty value adds a bare --model); set it to the model's hub id "
                        f"or to {MODEL_DIR}")
    for key, value in env.items():
        if not key.startswith(PREFIX):
            continue
        text = "" if value is None else str(value).strip()
        if text.lower() in ("true", "false"):
            problems.append(f"{key}={value!r}: the oldest entrypoint passes it on as a value; use '' for a bare "
                            "flag, or leave the variable out for false")
        elif text.startswith("["):
            problems.append(f"{key} holds a JSON array: the current entrypoint splits it into one argument per "
                            "element, the older ones pass it whole; give the flag a single value")
        elif "\n" in text:
            problems.append(f"{key} spans several lines: the shell entrypoints read the environment line by line")
    return problems


def args_to_env(args: list[str]) -> dict[str, str]:
    """Inverse of :func:`container_args` for ``--flag value`` / bare ``--flag`` lists (no ``--port``);
    a bare flag is written as the portable empty value."""
    env: dict[str, str] = {}
    i = 0
    while i < len(args):
        flag = args[i]
        if not flag.startswith("--"):
            raise ValueError(f"expected a --flag at position {i}, got {flag!r}")
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            env[flag_to_env(flag)] = args[i + 1]
            i += 2
        else:
            env[flag_to_env(flag)] = ""
            i += 1
    return env


def remap_paths(args: list[str], mounts: Mapping[str, str]) -> list[str]:
    """Replace container paths (``/opt/ml/model``...) by local folders in every argument, JSON included.

    This is the one thing the emulation adds: SageMaker's download of model data into the container's
    file system, done here by pointing at folders that already hold the files. Longest prefix first.
    """
    out = []
    for arg in args:
        for container_path in sorted(mounts, key=len, reverse=True):
            arg = arg.replace(container_path, str(mounts[container_path]))
        out.append(arg)
    return out
