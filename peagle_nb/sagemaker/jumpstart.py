"""The JumpStart route: a catalogue model whose deployment configuration already enables P-EAGLE.

Explained in notebook 06, beside the explicit container route. SageMaker JumpStart's spec for GPT-OSS-20B
(``openai-reasoning-gpt-oss-20b``) lists two deployment configurations: ``lmi`` (no speculation) and
``lmi-optimized``, the P-EAGLE one (the default): AWS's vLLM 0.18 CUDA 12.9 image on ml.g7e, the P-EAGLE
head attached as the additional data source ``eagle``, ``SM_VLLM_SPECULATIVE_CONFIG`` with
``"method": "eagle3"``, K=3 and ``"parallel_drafting": true``, network isolation and 3600 s download and
health-check timeouts, default instance ml.g7e.2xlarge.

``ModelBuilder.from_jumpstart_config`` reads all of that from the catalogue. :class:`JumpStartDeployment`
lists the configurations (``list_deployment_configs()``), refuses a configuration name the spec does not
have or one without a speculative config, prints the speculative config it will deploy, and only then
builds and deploys, with the same tags, cleanup and live speculation check as the explicit route.
:func:`recorded_catalogue` serves a recorded spec instead of the catalogue (offline tests);
:func:`spec_configs` reads the same facts from a spec file without the SDK (the notebook's offline view).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Iterator

from peagle_nb.sagemaker import container
from peagle_nb.sagemaker._deps import require, sdk_region_env
from peagle_nb.sagemaker.deploy import _REGISTRY, Deployment, Progress, require_tested_sdk
from peagle_nb.sagemaker.plan import DeploymentPlan, PlanError, aws_location_problems, build_plan

MODEL_ID = "openai-reasoning-gpt-oss-20b"
PEAGLE_CONFIG = "lmi-optimized"
SPEC_ENV = container.PREFIX + "SPECULATIVE_CONFIG"


def jumpstart_plan(model_id: str = MODEL_ID, *, instance_type: str = "ml.g7e.2xlarge", region: str | None = None,
                   role_arn: str | None = None, config_name: str | None = PEAGLE_CONFIG) -> DeploymentPlan:
    """A plan record for naming, tagging, cost and cleanup; the container settings come from JumpStart."""
    plan = build_plan(target=model_id, head=None, method="none", k=1, instance_type=instance_type, region=region,
                      role_arn=role_arn, image_uri="(from the JumpStart catalogue)", name=f"js-{model_id}"[:40])
    plan.env = {}
    plan.inference_ami_version = None
    plan.image_source = f"JumpStart model {model_id!r}, deployment configuration {config_name or 'default'!r}"
    plan.notes = "P-EAGLE settings (head, K, engine flags) come from the JumpStart deployment configuration."
    return plan


def summarize_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The parts of one ``list_deployment_configs()`` entry that matter for P-EAGLE."""
    args = cfg.get("DeploymentArgs") or {}
    env = args.get("Environment") or {}
    accel = cfg.get("AccelerationConfigs") or []
    return {"name": cfg.get("DeploymentConfigName"),
            "speculative_decoding": any(a.get("type") == "Speculative-Decoding" and a.get("enabled") for a in accel),
            "speculative_config": json.loads(env[SPEC_ENV]) if env.get(SPEC_ENV) else None,
            "instance_type": args.get("InstanceType"),
            "additional_data_sources": sorted((args.get("AdditionalDataSources") or {}).keys()),
            "startup_health_check_timeout_s": args.get("ContainerStartupHealthCheckTimeout"),
            "model_data_download_timeout_s": args.get("ModelDataDownloadTimeout"),
            "vllm_env": {k: v for k, v in env.items() if k.startswith(container.PREFIX)}}


def choose_config(configs: list[dict[str, Any]], config_name: str | None) -> dict[str, Any]:
    """The summary of ``config_name`` among ``configs``; PlanError naming the real ones otherwise, or when
    the chosen configuration does not enable speculative decoding."""
    names = [c["name"] for c in configs]
    if config_name is None:
        config_name = names[0] if names else None
    chosen = next((c for c in configs if c["name"] == config_name), None)
    if chosen is None:
        raise PlanError([f"deployment configuration {config_name!r} is not in the JumpStart spec, which lists "
                         f"{names or 'none'}: pass config_name={PEAGLE_CONFIG!r} for P-EAGLE"])
    if not chosen["speculative_config"]:
        spec_ones = [c["name"] for c in configs if c["speculative_config"]]
        raise PlanError([f"deployment configuration {config_name!r} sets no {SPEC_ENV}: it deploys without "
                         f"speculative decoding; the ones with it: {spec_ones or 'none'}"])
    return chosen


class JumpStartDeployment(Deployment):
    """Same lifecycle and cleanup guarantees as :class:`Deployment`, built by ``ModelBuilder``."""

    def __init__(self, model_id: str = MODEL_ID, *, instance_type: str = "ml.g7e.2xlarge", region: str | None = None,
                 role_arn: str | None = None, config_name: str | None = PEAGLE_CONFIG,
                 model_version: str | None = None, accept_eula: bool = False, session=None,
                 progress: Progress = print, poll_s: float = 15.0):
        plan = jumpstart_plan(model_id, instance_type=instance_type, region=region, role_arn=role_arn,
                              config_name=config_name)
        problems = aws_location_problems(plan.region, plan.role_arn)
        if problems:
            raise PlanError(problems)
        require_tested_sdk()
        self.plan = plan
        self.model_id, self.config_name, self.model_version, self.accept_eula = (model_id, config_name,
                                                                                  model_version, accept_eula)
        from peagle_nb.sagemaker.deploy import boto_session

        self.session = session or boto_session(plan.region)
        self.progress, self.poll_s = progress, poll_s
        self.created, self.deleted = [], []
        self.endpoint, self.status = None, None
        self.chosen: dict[str, Any] | None = None

    def builder(self):
        """``ModelBuilder.from_jumpstart_config(...)`` for this model (reads the JumpStart catalogue)."""
        sdk_region_env(self.plan.region)
        serve = require("sagemaker.serve.model_builder")
        configs = require("sagemaker.core.jumpstart.configs")
        compute = require("sagemaker.core.training.configs").Compute
        session_mod = require("sagemaker.core.helper.session_helper")
        return serve.ModelBuilder.from_jumpstart_config(
            jumpstart_config=configs.JumpStartConfig(model_id=self.model_id, model_version=self.model_version,
                                                     inference_config_name=self.config_name,
                                                     accept_eula=self.accept_eula),
            role_arn=self.plan.role_arn, compute=compute(instance_type=self.plan.instance_type, instance_count=1),
            sagemaker_session=session_mod.Session(boto_session=self.session))

    def configs(self, builder=None) -> list[dict[str, Any]]:
        """``list_deployment_configs()`` of the model, summarised (:func:`summarize_config`)."""
        try:
            listed = (builder or self.builder()).list_deployment_configs()
        except ValueError as exc:  # the SDK took the id for a Hugging Face model: not in the catalogue
            raise PlanError([f"{self.model_id!r} is not a JumpStart model with deployment configurations in "
                             f"{self.plan.region} ({exc}): copy the id from the model's JumpStart card, e.g. "
                             f"{MODEL_ID!r}"]) from None
        return [summarize_config(c) for c in listed]

    def create(self, timeout_s: float | None = None) -> "JumpStartDeployment":
        _REGISTRY[id(self)] = self
        name = self.plan.resource_name
        try:
            mb = self.builder()
            configs = self.configs(mb)
            self.chosen = choose_config(configs, self.config_name)
            spec = self.chosen["speculative_config"]
            self.plan.k = int(spec["num_speculative_tokens"])
            # The configuration's own timeouts bound the start-up; the wait is derived from them.
            for key, field in (("startup_health_check_timeout_s", "startup_health_timeout_s"),
                               ("model_data_download_timeout_s", "model_data_download_timeout_s")):
                if self.chosen.get(key):
                    setattr(self.plan, field, int(self.chosen[key]))
            timeout_s = self.announce_wait(timeout_s)
            self.progress(f"JumpStart {self.model_id}: configurations {[c['name'] for c in configs]}; deploying "
                          f"{self.chosen['name']!r} with speculative config {json.dumps(spec)}")
            # Tags before build(): older sagemaker-serve releases have no build(tags=...).
            mb.add_tags(self.plan.aws_tags())
            self.created.append(("model", name))
            mb.build(model_name=name)
            self.created += [("endpoint_config", name), ("endpoint", name)]
            self.progress(f"deploying JumpStart {self.model_id} to {name} (~${self.plan.hourly_cost_usd()}/h)")
            mb.deploy(endpoint_name=name, initial_instance_count=1, instance_type=self.plan.instance_type, wait=False)
            resources = require("sagemaker.core.resources")
            self.endpoint = resources.Endpoint.get(endpoint_name=name, session=self.session, region=self.plan.region)
            config = str(self.endpoint.endpoint_config_name)
            if config != name:
                self.created.append(("endpoint_config", config))
            self.ensure_tags()
            self.wait(timeout_s)
        except BaseException as exc:
            self.progress(f"JumpStart deployment did not complete ({type(exc).__name__}: {exc}); deleting")
            self.delete()
            raise
        return self

    def ensure_tags(self) -> None:
        """Add the plan's tags to the model, endpoint config and endpoint where the SDK left any out, so
        tag-based cleanup finds all three whatever the SDK version did."""
        sm = self.session.client("sagemaker", region_name=self.plan.region)
        describe = {"model": lambda n: sm.describe_model(ModelName=n)["ModelArn"],
                    "endpoint_config": lambda n: sm.describe_endpoint_config(EndpointConfigName=n)["EndpointConfigArn"],
                    "endpoint": lambda n: sm.describe_endpoint(EndpointName=n)["EndpointArn"]}
        wanted = self.plan.aws_tags()
        for kind, name in self.created:
            if kind not in describe:
                continue
            arn = describe[kind](name)
            have = {(t["Key"], t["Value"]) for t in sm.list_tags(ResourceArn=arn).get("Tags", [])}
            missing = [t for t in wanted if (t["Key"], t["Value"]) not in have]
            if missing:
                sm.add_tags(ResourceArn=arn, Tags=missing)


@contextlib.contextmanager
def recorded_catalogue(spec_path: str | Path) -> Iterator[dict]:
    """Serve JumpStart lookups from a recorded model spec, through the SDK's own local-metadata mode (the
    ``AWS_JUMPSTART_MANIFEST_LOCAL_ROOT_DIR_OVERRIDE`` / ``AWS_JUMPSTART_SPECS_LOCAL_ROOT_DIR_OVERRIDE``
    folders): a one-model manifest and the spec are written to a temporary folder, the SDK's catalogue cache
    is emptied on entry and exit, and no request reaches the catalogue while the context is open."""
    import os
    import tempfile

    constants = require("sagemaker.core.jumpstart.constants")
    accessor = require("sagemaker.core.jumpstart.accessors").JumpStartModelsAccessor
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    spec_key = f"community_models/{spec['model_id']}/specs_v{spec['version']}.json"
    header = {"model_id": spec["model_id"], "version": spec["version"],
              "min_version": spec.get("min_sdk_version", "2.0.0"), "spec_key": spec_key}
    names = (constants.ENV_VARIABLE_JUMPSTART_MANIFEST_LOCAL_ROOT_DIR_OVERRIDE,
             constants.ENV_VARIABLE_JUMPSTART_SPECS_LOCAL_ROOT_DIR_OVERRIDE)
    saved = {name: os.environ.get(name) for name in names}
    with tempfile.TemporaryDirectory(prefix="jumpstart-") as root:
        (Path(root) / constants.JUMPSTART_DEFAULT_MANIFEST_FILE_S3_KEY).write_text(json.dumps([header]))
        (Path(root) / spec_key).parent.mkdir(parents=True)
        (Path(root) / spec_key).write_text(json.dumps(spec))
        os.environ.update({name: root for name in names})
        accessor.reset_cache()
        try:
            yield spec
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            accessor.reset_cache()


def spec_configs(spec: dict[str, Any], region: str, instance_type: str | None = None) -> list[dict[str, Any]]:
    """The deployment configurations of a JumpStart spec, read directly from its JSON (no SDK): name,
    speculative config, the container image for ``instance_type`` (default: the config's default), the
    extra data sources, timeouts and network isolation. Ranked as the spec ranks them."""
    components = spec.get("inference_config_components") or {}
    ranking = ((spec.get("inference_config_rankings") or {}).get("overall") or {}).get("rankings") or list(components)
    out = []
    for name in ranking:
        comp = {**spec, **components.get(name, {})}
        env = {e["name"]: str(e["default"]) for e in comp.get("inference_environment_variables", [])}
        itype = instance_type or comp.get("default_inference_instance_type")
        variants = (comp.get("hosting_instance_type_variants") or {})
        aliases = (variants.get("regional_aliases") or {}).get(region, {})
        family = itype.split(".")[1] if itype and itype.count(".") == 2 else None
        family_props = ((variants.get("variants") or {}).get(family) or {}).get("regional_properties") or {}
        image = family_props.get("image_uri", "")
        image = aliases.get(image[1:]) if image.startswith("$") else (image or None)
        accel = (spec.get("inference_configs") or {}).get(name, {}).get("acceleration_configs") or []
        deploy = comp.get("deploy_kwargs") or {}
        out.append({"name": name,
                    "speculative_decoding": any(a.get("type") == "Speculative-Decoding" and a.get("enabled")
                                                for a in accel),
                    "speculative_config": json.loads(env[SPEC_ENV]) if env.get(SPEC_ENV) else None,
                    "instance_type": itype, "image": image,
                    "additional_data_sources": sorted((comp.get("hosting_additional_data_sources") or {}).keys()),
                    "startup_health_check_timeout_s": deploy.get("container_startup_health_check_timeout"),
                    "model_data_download_timeout_s": deploy.get("model_data_download_timeout"),
                    "network_isolation": bool(comp.get("inference_enable_network_isolation")),
                    "vllm_env": {k: v for k, v in env.items() if k.startswith(container.PREFIX)}})
    return out
