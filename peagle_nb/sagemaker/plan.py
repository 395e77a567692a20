"""The deployment plan: everything a SageMaker AI endpoint for P-EAGLE needs, checked before any AWS call.

Explained in notebook 06. A plan is a plain dataclass (printable with :meth:`DeploymentPlan.describe`,
JSON round-trip with :meth:`to_json` / :meth:`from_json`) built by :func:`build_plan` from a preset of the
one preset table (``peagle_nb.serving.presets``, shared with ``peagle-nb serve``) and/or explicit
arguments. It holds the container image and inference AMI (``images.choose_image``: a combination AWS
ships for the instance), the container environment (``SM_VLLM_MODEL``, the one-line JSON
``SM_VLLM_SPECULATIVE_CONFIG`` written by ``peagle_nb.serving.config`` with ``"method":"eagle3"`` and, for
P-EAGLE, ``"parallel_drafting":true``, the preset's engine flags in the portable spelling of
``container.py``), the instance type, the startup health-check timeout, and where the target and head live
in S3 (the head is attached as an additional model data source; the speculative config points at its
container path ``/opt/ml/additional-model-data-sources/<channel>``).

:func:`validate_plan` raises :class:`PlanError` listing every problem (GPU memory too small for the
model, K above the head's trained depth, missing role or region, an image/AMI pair AWS does not list,
an environment the container generations read differently...) with the fix for each.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peagle_nb.sagemaker import container, images, instances
from peagle_nb.serving import config as serving_config
from peagle_nb.serving.presets import PRESETS, UnknownPreset, get_preset

SUITE_TAG = ("peagle-nb:suite", "peagle-notebooks")
RUN_TAG_KEY = "peagle-nb:run"
DEFAULT_VLLM_VERSION = images.DEFAULT_VLLM_VERSION
CUDA13_AMI = images.CUDA13_AMI
HEAD_CHANNEL = "draft"
MIN_PARALLEL_DRAFTING_VLLM = (0, 16)
ROLE_RE = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
METHODS = ("peagle", "eagle3", "none")
__all__ = ["PRESETS", "DeploymentPlan", "PlanError", "PlanRequest", "build_plan", "validate_plan"]


class PlanError(ValueError):
    """A plan that must not be deployed; ``problems`` lists each reason with its fix."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("the deployment plan is not valid:\n" + "\n".join(f"  - {p}" for p in self.problems))


@dataclass
class DeploymentPlan:
    """One endpoint: a target model, its draft head, the vLLM container, the instance. See module doc."""

    name: str
    method: str
    target: str
    head: str | None
    k: int
    trained_k: int | None
    instance_type: str
    image_uri: str | None
    image_source: str
    env: dict[str, str]
    region: str | None = None
    role_arn: str | None = None
    instance_count: int = 1
    vllm_version: str = DEFAULT_VLLM_VERSION
    inference_ami_version: str | None = CUDA13_AMI  # None: SageMaker's default AMI
    startup_health_timeout_s: int = 1800
    model_data_download_timeout_s: int = 1800
    model_data_s3_uri: str | None = None
    head_s3_uri: str | None = None
    head_channel: str = HEAD_CHANNEL
    s3_bucket: str | None = None
    min_gpu_memory_gib: float = 0.0
    run_id: str = ""
    tags: dict[str, str] = field(default_factory=dict)
    notes: str = ""

    # ---- derived -------------------------------------------------------------------------------------
    @property
    def target_is_local(self) -> bool:
        return _is_local(self.target)

    @property
    def head_is_local(self) -> bool:
        return self.head is not None and _is_local(self.head)

    @property
    def resource_name(self) -> str:
        """Model, endpoint config and endpoint share this name (<= 63 chars, SageMaker's rule)."""
        stem = re.sub(r"[^a-zA-Z0-9-]+", "-", f"peagle-{self.name}")[: 63 - len(self.run_id) - 1].strip("-")
        return f"{stem}-{self.run_id}" if self.run_id else stem

    @property
    def speculative_config(self) -> dict | None:
        raw = self.env.get(container.PREFIX + "SPECULATIVE_CONFIG")
        return json.loads(raw) if raw else None

    def hourly_cost_usd(self) -> float | None:
        try:
            return instances.hourly_cost(self.instance_type, self.instance_count, self.region)
        except KeyError:
            return None

    def price_note(self) -> str:
        """Where the hourly price comes from, or why there is none."""
        found = instances.price(self.instance_type, self.region)
        if found is None:
            return (f"no price for {self.region or instances.REFERENCE_REGION} in the table: see "
                    "aws.amazon.com/sagemaker/ai/pricing")
        return found.describe() + ("" if self.region else "; no region set, priced as the reference region")

    def container_args(self, entrypoint: str = "current") -> list[str]:
        """The ``vllm serve`` arguments the AWS container will run for this plan."""
        return container.container_args(self.env, model_dir_has_files=self.model_data_s3_uri is not None
                                         or self.target_is_local, entrypoint=entrypoint)

    # ---- the API requests ----------------------------------------------------------------------------
    def aws_tags(self) -> list[dict[str, str]]:
        return [{"Key": k, "Value": v} for k, v in self.tags.items()]

    def requests(self) -> dict[str, dict]:
        """The CreateModel / CreateEndpointConfig / CreateEndpoint requests (boto3 shape) of this plan.

        The single source of truth: the dry run prints these, ``deploy`` turns them into
        ``sagemaker.core`` shapes, and the tests compare them.
        """
        name = self.resource_name
        primary: dict[str, Any] = {"Image": self.image_uri or "<image uri>", "Environment": dict(self.env)}
        if self.model_data_s3_uri:
            primary["ModelDataSource"] = {"S3DataSource": {"S3Uri": _prefix(self.model_data_s3_uri),
                                                           "S3DataType": "S3Prefix", "CompressionType": "None"}}
        if self.head_s3_uri:
            primary["AdditionalModelDataSources"] = [{
                "ChannelName": self.head_channel,
                "S3DataSource": {"S3Uri": _prefix(self.head_s3_uri), "S3DataType": "S3Prefix",
                                 "CompressionType": "None"}}]
        variant = {
            "VariantName": "AllTraffic", "ModelName": name, "InitialInstanceCount": self.instance_count,
            "InstanceType": self.instance_type,
            "ContainerStartupHealthCheckTimeoutInSeconds": self.startup_health_timeout_s,
            "ModelDataDownloadTimeoutInSeconds": self.model_data_download_timeout_s,
        }
        if self.inference_ami_version:
            variant["InferenceAmiVersion"] = self.inference_ami_version
        return {
            "create_model": {"ModelName": name, "PrimaryContainer": primary,
                             "ExecutionRoleArn": self.role_arn or "<execution role arn>", "Tags": self.aws_tags()},
            "create_endpoint_config": {"EndpointConfigName": name, "ProductionVariants": [variant],
                                       "Tags": self.aws_tags()},
            "create_endpoint": {"EndpointName": name, "EndpointConfigName": name, "Tags": self.aws_tags()},
        }

    # ---- presentation / serialisation ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_json(cls, text: str | dict) -> "DeploymentPlan":
        data = json.loads(text) if isinstance(text, str) else dict(text)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise PlanError([f"unknown plan fields {sorted(unknown)} (known: {sorted(names)})"])
        return cls(**data)

    def describe(self) -> str:
        cost = self.hourly_cost_usd()
        if self.method == "none":
            what = "no draft head in this plan" if self.env else "speculative settings from the catalogue"
        else:
            what = f"{self.method}, K={self.k}" + (f", head trained to K={self.trained_k}" if self.trained_k else "")
        lines = [
            f"plan {self.name!r} ({what})",
            f"  target        {self.target}" + ("  -> S3 model data -> /opt/ml/model" if self.target_is_local
                                                 or self.model_data_s3_uri else "  (hub id)"),
            f"  head          {self.head}" + (f"  -> S3 -> {container.channel_path(self.head_channel)}"
                                              if self.head_s3_uri or self.head_is_local else ""),
            f"  image         {self.image_uri}  [{self.image_source}]",
            f"  instance      {self.instance_count} x {self.instance_type}"
            + (f"  (~${cost:.2f}/h, ${cost * 24:.0f}/day; {self.price_note()})" if cost is not None
               else f"  ({self.price_note()})"),
            f"  AMI           {self.inference_ami_version or 'SageMaker default (no InferenceAmiVersion)'}",
            f"  health check  container must answer /ping within {self.startup_health_timeout_s} s",
            f"  region / role {self.region or '<none>'} / {self.role_arn or '<none>'}",
            f"  resources     model, endpoint config, endpoint named {self.resource_name!r}",
            f"  tags          {self.tags}",
            "  environment:",
        ]
        lines += [f"    {k}={v}" for k, v in self.env.items()]
        if not self.env:
            lines.append(f"    (none here: {self.image_source} sets it)")
            return "\n".join(lines)
        lines.append("  container runs: vllm serve " + " ".join(_shell_quote(a) for a in self.container_args()))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()


# ---------------------------------------------------------------------------------------------------
def _is_local(ref: str) -> bool:
    """A path on this machine (absolute, ./relative or an existing folder), not a hub id or s3:// URI."""
    if ref.startswith("s3://"):
        return False
    return ref.startswith(("/", "./", "../", "data/")) or Path(ref).exists()


def _prefix(uri: str) -> str:
    return uri if uri.endswith("/") else uri + "/"


def _shell_quote(arg: str) -> str:
    return f"'{arg}'" if any(c in arg for c in " {}\"'") else arg


def new_run_id() -> str:
    """Short, sortable, unique enough: month-day-hour-minute + 4 hex."""
    return time.strftime("%m%d%H%M") + secrets.token_hex(2)


def resolve_local(ref: str) -> Path:
    """A local model folder as an absolute path; relative ones are read from the repository checkout
    (``data/models/...``, so a notebook's working directory does not matter), else from the cwd."""
    p = Path(ref)
    if not p.is_absolute():
        from peagle_nb.files import paths

        in_repo = paths.repo_root() / ref
        p = in_repo if in_repo.exists() or not p.exists() else p
    return p.resolve()


def head_trained_k(head_dir: str | Path) -> int | None:
    """The depth a local P-EAGLE head was trained for (``peagle_trained_k`` in its config.json)."""
    cfg = Path(head_dir) / "config.json"
    if not cfg.is_file():
        return None
    value = json.loads(cfg.read_text(encoding="utf-8")).get("peagle_trained_k")
    return int(value) if value is not None else None


def _engine_env(flags: tuple[str, ...], overrides: dict[str, Any] | None) -> dict[str, str]:
    """``SM_VLLM_*`` variables for the preset's engine flags, then explicit overrides (True: bare flag,
    False/None: removed). Bare flags get the portable empty value (see ``container.py``)."""
    env = container.args_to_env(list(flags))
    for flag, value in (overrides or {}).items():
        key = container.flag_to_env(flag)
        if value is False or value is None:
            env.pop(key, None)
        else:
            env[key] = "" if value is True else str(value)
    return env


@dataclass(frozen=True)
class PlanRequest:
    """What :func:`build_plan` may be told besides a preset; a field left at None takes the preset's value (or the
    default named here)."""

    target: str | None = None  # hub id, local folder or s3:// uri (default: the preset's)
    head: str | None = None  # the draft head, the same kinds of location (default: the preset's)
    method: str | None = None  # one of METHODS (default: the preset's, else "peagle")
    k: int | None = None  # drafts per step (default: the preset's, else 3)
    trained_k: int | None = None  # the head's trained depth (default: the preset's, or read from a local head)
    instance_type: str | None = None  # default: the preset's, else ml.g6e.2xlarge
    instance_count: int = 1
    region: str | None = None  # default: AWS_REGION / AWS_DEFAULT_REGION
    role_arn: str | None = None  # default: SAGEMAKER_ROLE_ARN
    image_uri: str | None = None  # default: AWS's vLLM image for the region and instance (images.choose_image)
    vllm_version: str = DEFAULT_VLLM_VERSION
    inference_ami_version: str | None = None  # default: the one the image suits
    startup_health_timeout_s: int = 1800  # the container must answer /ping within this
    engine_args: dict[str, Any] | None = None  # vLLM flags over the preset's ({flag: value}; False/None: removed)
    extra_env: dict[str, str] | None = None  # container variables added last
    s3_bucket: str | None = None  # where local weights are uploaded (peagle-nb/<run id>/...)
    model_data_s3_uri: str | None = None  # the target's weights already in S3
    head_s3_uri: str | None = None  # the head's weights already in S3
    min_gpu_memory_gib: float | None = None  # default: the preset's requirement
    run_id: str | None = None  # default: a new one (tags every resource)
    name: str | None = None  # default: the preset's name, else "custom"


def build_plan(preset: str | None = None, **overrides) -> DeploymentPlan:
    """Build a plan from ``preset`` (a ``peagle_nb.serving.presets`` name) and/or explicit settings, any field of
    :class:`PlanRequest` by name (explicit wins).

    Region and role default to ``AWS_REGION``/``AWS_DEFAULT_REGION`` and ``SAGEMAKER_ROLE_ARN``. Does not
    validate (call :func:`validate_plan`) and makes no AWS call (the image lookup reads the SDK's table).
    """
    names = [f.name for f in dataclasses.fields(PlanRequest)]
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise PlanError([f"unknown plan setting(s) {unknown}: build_plan takes a preset and {', '.join(names)}"])
    return _plan_from(preset, PlanRequest(**overrides))


def _plan_from(preset: str | None, req: PlanRequest) -> DeploymentPlan:
    """:func:`build_plan` once its settings are read."""
    target, head, method, k, trained_k = req.target, req.head, req.method, req.k, req.trained_k
    instance_type, region, role_arn, run_id = req.instance_type, req.region, req.role_arn, req.run_id
    model_data_s3_uri, head_s3_uri, s3_bucket = req.model_data_s3_uri, req.head_s3_uri, req.s3_bucket
    base = None
    if preset is not None:
        try:
            base = get_preset(preset)
        except UnknownPreset as exc:
            raise PlanError([str(exc)]) from None
    target = target or (base.target_path() if base else None)
    if not target:
        raise PlanError(["no target model: pass a preset or target=<hub id | local folder | s3:// uri>"])
    method = method or (base.method if base else "peagle")
    head = head if head is not None else (base.head_path() if base else None)
    k = int(k if k is not None else (base.k if base and base.k else 3))
    instance_type = instance_type or (base.instance_type if base else "ml.g6e.2xlarge")
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    role_arn = role_arn or os.environ.get("SAGEMAKER_ROLE_ARN")
    run_id = run_id or new_run_id()
    if trained_k is None:
        trained_k = base.trained_k if base else None
        if trained_k is None and head and _is_local(head):
            trained_k = head_trained_k(resolve_local(head))

    # Where the weights come from inside the container.
    if model_data_s3_uri is None and _is_local(target) and s3_bucket:
        model_data_s3_uri = f"s3://{s3_bucket}/peagle-nb/{run_id}/model/"
    if target.startswith("s3://"):
        model_data_s3_uri = target
    if head and head_s3_uri is None and _is_local(head) and s3_bucket:
        head_s3_uri = f"s3://{s3_bucket}/peagle-nb/{run_id}/{HEAD_CHANNEL}/"
    if head and head.startswith("s3://"):
        head_s3_uri = head

    env: dict[str, str] = {}
    # Always SM_VLLM_MODEL: the oldest entrypoint has no /opt/ml/model or HF_MODEL_ID fallback.
    env[container.PREFIX + "MODEL"] = container.MODEL_DIR if (model_data_s3_uri or _is_local(target)) else target
    served = Path(target.rstrip("/")).name if (_is_local(target) or target.startswith("s3://")) else target
    env[container.PREFIX + "SERVED_MODEL_NAME"] = served
    if head and method != "none":
        if method not in METHODS:
            raise PlanError([f"method {method!r} is not one of {METHODS}"])
        head_ref = container.channel_path(HEAD_CHANNEL) if (head_s3_uri or _is_local(head)) else head
        spec = serving_config.speculative_config(head_ref, k, parallel_drafting=(method == "peagle")) \
            if k >= 1 else {"method": "eagle3", "model": head_ref, "num_speculative_tokens": k}
        env[container.PREFIX + "SPECULATIVE_CONFIG"] = serving_config.speculative_config_json(spec)
    info = None
    try:
        info = instances.instance_info(instance_type, region)
    except KeyError:
        pass
    if info is not None and info.gpus > 1:
        env[container.PREFIX + "TENSOR_PARALLEL_SIZE"] = str(info.gpus)
    env.update(_engine_env(base.engine_flags if base else (), req.engine_args))
    env.update(req.extra_env or {})
    env = dict(sorted(env.items()))  # the current entrypoint sorts; the older ones keep this order

    choice = images.choose_image(region, instance_type, vllm_version=req.vllm_version, image_uri=req.image_uri,
                                 inference_ami_version=req.inference_ami_version)
    name = req.name or preset or "custom"
    tags = {SUITE_TAG[0]: SUITE_TAG[1], RUN_TAG_KEY: run_id, "peagle-nb:plan": name}
    min_gib = (req.min_gpu_memory_gib if req.min_gpu_memory_gib is not None
               else ((base.gpu_memory_gib or 1) if base else 0.0))
    return DeploymentPlan(
        name=name, method=method, target=target, head=head if method != "none" else None,
        k=k, trained_k=trained_k, instance_type=instance_type, image_uri=choice.uri, image_source=choice.source,
        env=env, region=region, role_arn=role_arn, instance_count=req.instance_count, vllm_version=choice.vllm_version,
        inference_ami_version=choice.inference_ami_version, startup_health_timeout_s=int(req.startup_health_timeout_s),
        model_data_s3_uri=model_data_s3_uri, head_s3_uri=head_s3_uri, s3_bucket=s3_bucket,
        min_gpu_memory_gib=float(min_gib), run_id=run_id, tags=tags, notes=base.notes if base else "")


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def aws_location_problems(region: str | None, role_arn: str | None) -> list[str]:
    """Region and execution-role problems with their fix (shared with the CLI's argument checks)."""
    problems = []
    if not role_arn:
        problems.append("no execution role: pass role_arn='arn:aws:iam::<account>:role/<SageMaker role>' or set "
                        "SAGEMAKER_ROLE_ARN (in SageMaker Studio: sagemaker.core.helper.session_helper."
                        "get_execution_role())")
    elif not ROLE_RE.match(role_arn):
        problems.append(f"role_arn {role_arn!r} is not an IAM role ARN (arn:aws:iam::<12 digits>:role/<name>)")
    if not region:
        problems.append("no AWS region: pass region='us-east-1' (or your region) or set AWS_REGION")
    elif not REGION_RE.match(region):
        problems.append(f"region {region!r} does not look like an AWS region (e.g. us-west-2)")
    return problems


def validate_plan(plan: DeploymentPlan, *, for_aws: bool = True) -> DeploymentPlan:
    """Raise :class:`PlanError` listing every problem; return the plan when it may be deployed.

    ``for_aws=False`` (local emulation) skips what only AWS needs: role, region, image, S3 locations.
    """
    problems: list[str] = []
    if plan.method not in METHODS:
        problems.append(f"method {plan.method!r} is not one of {METHODS}")
    if plan.method != "none" and not plan.head:
        problems.append(f"method {plan.method!r} needs a draft head (hub id, local folder or s3:// uri)")
    if plan.k < 1:
        problems.append(f"K={plan.k}: the number of speculative tokens must be >= 1 (or method='none')")
    if plan.method == "peagle" and plan.trained_k is not None and plan.k > plan.trained_k:
        problems.append(f"K={plan.k} is above the depth the P-EAGLE head was trained for ({plan.trained_k}): "
                        f"positions past {plan.trained_k} were never trained and are mostly rejected; "
                        f"use K <= {plan.trained_k}")
    if plan.method == "peagle" and _version_tuple(plan.vllm_version) < MIN_PARALLEL_DRAFTING_VLLM:
        problems.append(f"vLLM {plan.vllm_version} has no parallel drafting (needs >= 0.16): pick a newer "
                        "vllm_version")
    if plan.instance_count < 1:
        problems.append("instance_count must be >= 1")
    if not NAME_RE.match(plan.resource_name):
        problems.append(f"resource name {plan.resource_name!r} is not a valid SageMaker name "
                        "(letters, digits, hyphens, <= 63 chars)")
    if not 60 <= plan.startup_health_timeout_s <= 3600:
        problems.append(f"startup_health_timeout_s={plan.startup_health_timeout_s}: SageMaker accepts 60..3600 s")
    try:
        info = instances.instance_info(plan.instance_type, plan.region)
    except KeyError as exc:
        problems.append(str(exc.args[0]))
        info = None
    if info is not None:
        if not plan.instance_type.startswith(("ml.g", "ml.p")):
            problems.append(f"{plan.instance_type} has no NVIDIA GPU; the vLLM container needs ml.g*/ml.p*")
        if plan.min_gpu_memory_gib > info.gpu_memory_gib:
            fit = instances.smallest_fitting(plan.min_gpu_memory_gib, plan.region)
            hint = (f"; the cheapest listed instance that fits is {fit.instance_type} ({fit.gpus} x {fit.gpu}, "
                    f"{fit.gpu_memory_gib:g} GiB, ~${fit.usd_per_hour}/h)" if fit else "")
            problems.append(f"{plan.instance_type} has {info.gpu_memory_gib:g} GiB of GPU memory "
                            f"({info.gpus} x {info.gpu}) but {plan.target} with its head needs about "
                            f"{plan.min_gpu_memory_gib:g} GiB (weights + drafter + KV cache){hint}")
        tp = int(plan.env.get(container.PREFIX + "TENSOR_PARALLEL_SIZE") or "1")
        if tp > info.gpus:
            problems.append(f"SM_VLLM_TENSOR_PARALLEL_SIZE={tp} but {plan.instance_type} has {info.gpus} GPU(s)")
    problems += container.portability_problems(plan.env)
    spec = plan.speculative_config
    if spec is not None and spec.get("method") != "eagle3":
        problems.append('SM_VLLM_SPECULATIVE_CONFIG must say "method":"eagle3" (P-EAGLE is EAGLE-3 + '
                        '"parallel_drafting": true in vLLM)')
    if for_aws:
        problems += aws_location_problems(plan.region, plan.role_arn)
        if not plan.image_uri:
            problems.append(f"no container image: {plan.image_source}")
        problems += images.image_problems(plan.image_uri, plan.instance_type, plan.inference_ami_version)
        if plan.target_is_local and not plan.model_data_s3_uri:
            problems.append(f"target {plan.target!r} is a local folder: pass s3_bucket=... so it is uploaded "
                            "and attached as model data")
        if plan.head_is_local and not plan.head_s3_uri:
            problems.append(f"head {plan.head!r} is a local folder: pass s3_bucket=... so it is uploaded and "
                            "attached as an additional model data source")
    if problems:
        raise PlanError(problems)
    return plan
