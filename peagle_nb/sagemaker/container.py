"""What the AWS vLLM container for SageMaker AI does with its environment, as a pure function.

Explained in notebook 06. The container's entrypoint (aws/deep-learning-containers, vLLM
``sagemaker_entrypoint.sh``; the ``server-sagemaker-cuda`` image documents the same contract) builds the
``vllm serve`` command line from the environment:

- start with ``--port 8080`` (SageMaker sends ``/ping`` and ``/invocations`` to port 8080);
- every variable ``SM_VLLM_<NAME>=<value>`` becomes ``--<name>`` with ``<NAME>`` lower-cased and ``_``
  turned into ``-`` (``SM_VLLM_MAX_MODEL_LEN=4096`` -> ``--max-model-len 4096``), in environment order;
  the value is ONE argument, so JSON such as ``SM_VLLM_SPECULATIVE_CONFIG='{"method":"eagle3",...}'``
  reaches vLLM intact;
- ``true`` gives a bare flag (``SM_VLLM_ENFORCE_EAGER=true`` -> ``--enforce-eager``), ``false`` omits
  the flag, an empty value gives a bare flag (the older entrypoint's ``[ -n "$value" ]`` rule);
- the model: ``SM_VLLM_MODEL`` when set, else ``/opt/ml/model`` when SageMaker put model data there,
  else ``HF_MODEL_ID``.

``local.py`` runs exactly these arguments on this machine to emulate the container.
"""

from __future__ import annotations

from typing import Mapping

PREFIX = "SM_VLLM_"
PORT = 8080
MODEL_DIR = "/opt/ml/model"
ADDITIONAL_DATA_DIR = "/opt/ml/additional-model-data-sources"


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


def container_args(env: Mapping[str, str], *, model_dir_has_files: bool = False, port: int = PORT) -> list[str]:
    """The ``vllm serve`` arguments the AWS vLLM container derives from ``env`` (pure; no I/O).

    ``model_dir_has_files`` says whether SageMaker populated ``/opt/ml/model`` (a ``ModelDataSource`` /
    ``ModelDataUrl`` on the model); it matters only when ``SM_VLLM_MODEL`` is unset.
    Raises ValueError when no model can be found, as the container would fail to start.
    """
    args = ["--port", str(port)]
    for key, value in env.items():
        if not key.startswith(PREFIX) or key == PREFIX:
            continue
        value = "" if value is None else str(value)
        if value.lower() == "false":
            continue
        args.append(env_to_flag(key))
        if value and value.lower() != "true":
            args.append(value)
    if PREFIX + "MODEL" not in env:
        if model_dir_has_files:
            args += ["--model", MODEL_DIR]
        elif env.get("HF_MODEL_ID"):
            args += ["--model", env["HF_MODEL_ID"]]
        else:
            raise ValueError("no model for the vLLM container: set SM_VLLM_MODEL (a hub id or a path), attach "
                             f"model data (mounted at {MODEL_DIR}), or set HF_MODEL_ID")
    return args


def args_to_env(args: list[str]) -> dict[str, str]:
    """Inverse of :func:`container_args` for ``--flag value`` / bare ``--flag`` lists (no ``--port``)."""
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
            env[flag_to_env(flag)] = "true"
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
