"""Requests an endpoint would refuse, found before anything is created or sent. Explained in notebook 06.

An endpoint bills from the moment it starts (10-30 minutes for a GPU instance), and vLLM only says "no" to a
bad request once it is up, as a ``ModelError``. So the CLI and :class:`~peagle_nb.sagemaker.deploy.Deployment`
check what they can beforehand, each problem with its fix:

- an empty prompt (vLLM refuses it);
- ``max_tokens`` below 1, or above what the deployed model can hold: vLLM refuses a request whose prompt plus
  ``max_tokens`` exceeds ``--max-model-len`` (the plan's ``SM_VLLM_MAX_MODEL_LEN``, else the local model's
  ``max_position_embeddings``), so ``max_tokens`` must leave at least one token for the prompt, and with a
  local tokenizer (the tiny presets) the prompt is counted exactly;
- a body larger than SageMaker AI accepts for one invocation (botocore's model of the runtime API: 6 MiB).

K against the head's trained depth and an unknown instance type are plan problems
(:func:`peagle_nb.sagemaker.plan.validate_plan`), also checked before anything is created.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from peagle_nb.sagemaker import container
from peagle_nb.sagemaker.plan import DeploymentPlan, resolve_local

# InvokeEndpoint's body limit in botocore's service model (used when botocore is not installed).
MAX_BODY_BYTES_FALLBACK = 6 * 1024 * 1024


def max_body_bytes() -> int:
    """The largest request body SageMaker AI's runtime API accepts, from botocore's service model."""
    try:
        import botocore.session
    except ImportError:
        return MAX_BODY_BYTES_FALLBACK
    model = botocore.session.get_session().get_service_model("sagemaker-runtime")
    return int(model.operation_model("InvokeEndpoint").input_shape.members["Body"].metadata["max"])


def max_model_len(plan: DeploymentPlan) -> int | None:
    """The longest sequence (prompt + output) the plan's vLLM accepts, or None when it cannot be known offline
    (a hub model without ``--max-model-len``)."""
    value = plan.env.get(container.PREFIX + "MAX_MODEL_LEN")
    if value:
        return int(value)
    if plan.target_is_local:
        config = resolve_local(plan.target) / "config.json"
        if config.is_file():
            found = json.loads(config.read_text(encoding="utf-8")).get("max_position_embeddings")
            return int(found) if found else None
    return None


@functools.lru_cache(maxsize=4)
def _local_tokenizer(folder: str):
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception:  # noqa: BLE001 -- no tokenizer files there: the prompt is then not counted
        return None


def prompt_tokens(plan: DeploymentPlan | None, prompt: str) -> int | None:
    """The prompt's length in the target's tokens, where its tokenizer is on this machine; else None."""
    if plan is None or not plan.target_is_local:
        return None
    folder = resolve_local(plan.target)
    tokenizer = _local_tokenizer(str(folder)) if Path(folder).is_dir() else None
    return None if tokenizer is None else len(tokenizer(prompt)["input_ids"])


def request_problems(prompt: str | None, max_tokens: int | None, plan: DeploymentPlan | None = None,
                     option: str = "") -> list[str]:
    """What the endpoint would refuse in a completion request, each with its fix. ``option`` prefixes the
    names (``--`` for the CLI's flags)."""
    problems = []
    name_prompt, name_max = f"{option}prompt", f"{option}max{'-' if option else '_'}tokens"
    if prompt is not None and not prompt.strip():
        problems.append(f"{name_prompt} is empty: the model server refuses an empty prompt, so nothing would be "
                        "generated; pass some text, e.g. 'def fibonacci(n):'")
    if max_tokens is not None and max_tokens < 1:
        problems.append(f"{name_max} {max_tokens}: ask for at least one token")
    if prompt is not None and len(prompt.encode("utf-8")) > max_body_bytes():
        problems.append(f"the prompt is {len(prompt.encode('utf-8')):,} bytes; SageMaker AI accepts at most "
                        f"{max_body_bytes():,} bytes per invocation: send a shorter prompt")
    limit = max_model_len(plan) if plan is not None else None
    if limit is not None and max_tokens is not None and max_tokens >= 1:
        where = (f"{plan.target} is served with a maximum model length of {limit} tokens (prompt + output, "
                 f"{container.PREFIX}MAX_MODEL_LEN / --max-model-len)")
        if max_tokens >= limit:
            problems.append(f"{name_max} {max_tokens} leaves no room for the prompt: {where}; ask for at most "
                            f"{limit - 1}")
        elif prompt and prompt.strip():
            counted = prompt_tokens(plan, prompt)
            if counted is not None and counted + max_tokens > limit:
                problems.append(f"the prompt is {counted} tokens and {name_max} {max_tokens} asks for more: "
                                f"{where}; ask for at most {limit - counted} tokens or shorten the prompt")
    return problems


def body_problems(body: dict, plan: DeploymentPlan | None) -> list[str]:
    """:func:`request_problems` for an OpenAI completions or chat body about to be sent to the endpoint."""
    prompt = body.get("prompt")
    if prompt is None and body.get("messages") is not None:
        prompt = "\n".join(str(m.get("content") or "") for m in body["messages"])
    problems = request_problems(prompt if isinstance(prompt, str) else None, body.get("max_tokens"), plan)
    size = len(json.dumps(body).encode("utf-8"))
    if size > max_body_bytes() and not any("bytes per invocation" in p for p in problems):
        problems.append(f"the request body is {size:,} bytes; SageMaker AI accepts at most {max_body_bytes():,}")
    return problems
