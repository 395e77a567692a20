"""The JumpStart route: a catalogue model whose deployment configuration already enables P-EAGLE.

Explained in notebook 06, beside the explicit container route. SageMaker JumpStart lists models with
pretrained P-EAGLE heads (AWS blog, 2026: GPT-OSS-120B/20B, Qwen3-Coder-30B-A3B-Instruct, Gemma-4-31B-IT;
``ml.g7e.2xlarge`` or larger). ``ModelBuilder.from_jumpstart_config`` fetches the model's image, weights
location, environment (speculative config included) and default instance settings from the catalogue,
so this route needs AWS even to build; the explicit route (``plan.py``) shows every one of those values.

The catalogue ids and the name of the P-EAGLE deployment configuration are on the model's JumpStart
card in Studio; pass them as ``model_id`` / ``config_name`` (None = the model's default configuration).
"""

from __future__ import annotations

from peagle_nb.sagemaker._deps import require, sdk_region_env
from peagle_nb.sagemaker.deploy import Deployment, Progress, _REGISTRY
from peagle_nb.sagemaker.plan import DeploymentPlan, PlanError, build_plan


def jumpstart_plan(model_id: str, *, instance_type: str = "ml.g7e.2xlarge", region: str | None = None,
                   role_arn: str | None = None, config_name: str | None = None) -> DeploymentPlan:
    """A plan record for naming, tagging, cost and cleanup; the container settings come from JumpStart."""
    plan = build_plan(target=model_id, head=None, method="none", k=1, instance_type=instance_type, region=region,
                      role_arn=role_arn, image_uri="(from the JumpStart catalogue)", name=f"js-{model_id}"[:40])
    plan.env = {}
    plan.image_source = f"JumpStart model {model_id!r}, deployment configuration {config_name or 'default'!r}"
    plan.notes = "P-EAGLE settings (head, K, engine flags) come from the JumpStart deployment configuration."
    return plan


class JumpStartDeployment(Deployment):
    """Same lifecycle and cleanup guarantees as :class:`Deployment`, built by ``ModelBuilder``."""

    def __init__(self, model_id: str, *, instance_type: str = "ml.g7e.2xlarge", region: str | None = None,
                 role_arn: str | None = None, config_name: str | None = None, model_version: str | None = None,
                 accept_eula: bool = False, session=None, progress: Progress = print, poll_s: float = 15.0):
        plan = jumpstart_plan(model_id, instance_type=instance_type, region=region, role_arn=role_arn,
                              config_name=config_name)
        problems = [p for p in (None if plan.role_arn else "no execution role (role_arn= or SAGEMAKER_ROLE_ARN)",
                                None if plan.region else "no AWS region (region= or AWS_REGION)") if p]
        if problems:
            raise PlanError(problems)
        self.plan = plan
        self.model_id, self.config_name, self.model_version, self.accept_eula = (model_id, config_name,
                                                                                  model_version, accept_eula)
        from peagle_nb.sagemaker.deploy import boto_session

        self.session = session or boto_session(plan.region)
        self.progress, self.poll_s = progress, poll_s
        self.created, self.deleted = [], []
        self.endpoint, self.status = None, None

    def builder(self):
        """``ModelBuilder.from_jumpstart_config(...)`` for this model (contacts the JumpStart catalogue)."""
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

    def create(self, timeout_s: float | None = None) -> "JumpStartDeployment":
        _REGISTRY[id(self)] = self
        name = self.plan.resource_name
        try:
            mb = self.builder()
            self.created.append(("model", name))
            mb.build(model_name=name, tags=self.plan.aws_tags())
            self.created += [("endpoint_config", name), ("endpoint", name)]
            self.progress(f"deploying JumpStart {self.model_id} to {name} (~${self.plan.hourly_cost_usd()}/h)")
            mb.deploy(endpoint_name=name, initial_instance_count=1, instance_type=self.plan.instance_type, wait=False)
            resources = require("sagemaker.core.resources")
            self.endpoint = resources.Endpoint.get(endpoint_name=name, session=self.session, region=self.plan.region)
            config = str(self.endpoint.endpoint_config_name)
            if config != name:
                self.created.append(("endpoint_config", config))
            self.wait(timeout_s)
        except BaseException as exc:
            self.progress(f"JumpStart deployment did not complete ({type(exc).__name__}: {exc}); deleting")
            self.delete()
            raise
        return self
