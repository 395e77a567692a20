"""The SageMaker control plane against moto: create -> wait -> invoke -> delete, and the failure paths.

In every failure case (endpoint goes Failed, a create call raises midway, the API accepts a create but
the SDK fails afterwards, the user presses Ctrl-C while waiting) no model, endpoint config or endpoint
may be left behind. See conftest.py for the two documented moto patches.
"""

from __future__ import annotations

import json

import pytest

from tests.sagemaker.conftest import BUCKET, NOTHING, REGION, ROLE, leftovers

pytest.importorskip("sagemaker.core.resources")

from peagle_nb.sagemaker.deploy import Deployment, DeploymentFailed, cleanup_tagged, find_tagged  # noqa: E402
from peagle_nb.sagemaker.plan import PlanError, build_plan  # noqa: E402


def _plan(**kw):
    return build_plan("gpt-oss-20b-peagle", region=REGION, role_arn=ROLE, **kw)


def test_create_wait_invoke_delete(aws, endpoint_script):
    endpoint_script(["Creating", "Creating", "Creating", "InService"])  # the first is read by Endpoint.create
    log: list[str] = []
    plan = _plan()
    dep = Deployment(plan, session=aws, progress=log.append, poll_s=0).create(timeout_s=60)
    name = plan.resource_name
    assert dep.status == "InService"
    assert sum(line.endswith(": Creating") for line in log) == 2 and "InService" in log[-1]  # progress per poll
    assert leftovers(aws) == {"models": [name], "endpoint_configs": [name], "endpoints": [name]}

    sm = aws.client("sagemaker")
    model = sm.describe_model(ModelName=name)
    env = model["PrimaryContainer"]["Environment"]
    spec = json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"])
    assert spec == {"method": "eagle3", "model": "amazon/GPT-OSS-20B-P-EAGLE", "num_speculative_tokens": 7,
                    "parallel_drafting": True}
    assert "\n" not in env["SM_VLLM_SPECULATIVE_CONFIG"]  # one line: the container passes it as one value
    assert model["PrimaryContainer"]["Image"] == plan.image_uri and plan.image_uri.startswith("763104351884.dkr.ecr")
    variant = sm.describe_endpoint_config(EndpointConfigName=name)["ProductionVariants"][0]
    assert variant["InstanceType"] == "ml.g6e.2xlarge"
    assert variant["InferenceAmiVersion"] == "al2023-ami-sagemaker-inference-gpu-4-1"
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == plan.startup_health_timeout_s
    for arn in (model["ModelArn"], sm.describe_endpoint(EndpointName=name)["EndpointArn"]):
        tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=arn)["Tags"]}
        assert tags["peagle-nb:run"] == plan.run_id and tags["peagle-nb:suite"] == "peagle-notebooks"

    # Plain invocation: moto returns a queued canned body (it runs no container).
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sagemakerruntime.models import sagemakerruntime_backends

    canned = {"choices": [{"text": " speculative"}], "usage": {"completion_tokens": 1}}
    sagemakerruntime_backends[DEFAULT_ACCOUNT_ID][REGION].results_queue.append(
        (json.dumps(canned), "application/json", "AllTraffic", ""))
    assert dep.invoke({"prompt": "P-EAGLE drafts", "max_tokens": 4}) == canned

    deleted = dep.delete()
    assert {k for k, _ in deleted} == {"model", "endpoint_config", "endpoint"}
    assert leftovers(aws) == NOTHING
    assert dep.delete() == deleted  # idempotent


def test_local_weights_are_uploaded_attached_and_removed(aws, tmp_path):
    target, head = tmp_path / "tiny-target", tmp_path / "tiny-peagle"
    for folder, cfg in ((target, {"model_type": "llama"}), (head, {"peagle_trained_k": 4})):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(cfg))
        (folder / "model.safetensors").write_bytes(b"\0" * 64)
    plan = build_plan("tiny-peagle", target=str(target), head=str(head), k=4, region=REGION, role_arn=ROLE,
                      s3_bucket=BUCKET)
    assert plan.trained_k == 4  # read from the head's config.json
    dep = Deployment(plan, session=aws, progress=lambda s: None, poll_s=0).create()
    s3 = aws.client("s3")
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"])
    assert keys == [f"peagle-nb/{plan.run_id}/{d}/{f}" for d in ("draft", "model")
                    for f in ("config.json", "model.safetensors")]
    assert {"Key": "peagle-nb:run", "Value": plan.run_id} in s3.get_object_tagging(Bucket=BUCKET, Key=keys[0])["TagSet"]
    container = aws.client("sagemaker").describe_model(ModelName=plan.resource_name)["PrimaryContainer"]
    assert container["AdditionalModelDataSources"][0]["ChannelName"] == "draft"
    assert container["AdditionalModelDataSources"][0]["S3DataSource"]["S3Uri"] == plan.head_s3_uri
    assert json.loads(container["Environment"]["SM_VLLM_SPECULATIVE_CONFIG"])["model"] == \
        "/opt/ml/additional-model-data-sources/draft"
    assert container["Environment"]["SM_VLLM_MODEL"] == "/opt/ml/model"
    dep.delete()
    assert leftovers(aws) == NOTHING
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0


def test_endpoint_failed_deletes_everything(aws, endpoint_script):
    endpoint_script(["Creating", "Failed"], reason="The primary container did not pass the ping health check.")
    log: list[str] = []
    with pytest.raises(DeploymentFailed, match="ping health check"):
        Deployment(_plan(), session=aws, progress=log.append, poll_s=0).create()
    assert leftovers(aws) == NOTHING
    assert any("deleting endpoint " in line for line in log)


def test_wait_timeout_deletes_everything(aws, endpoint_script):
    endpoint_script(["Creating"])
    with pytest.raises(DeploymentFailed, match="still Creating"):
        Deployment(_plan(), session=aws, progress=lambda s: None, poll_s=0).create(timeout_s=0)
    assert leftovers(aws) == NOTHING


def test_create_raising_midway_deletes_what_exists(aws, monkeypatch):
    from moto.sagemaker.exceptions import ValidationError
    from moto.sagemaker.models import SageMakerModelBackend

    def refuse(self, **kwargs):
        raise ValidationError(message="ResourceLimitExceeded: account-level service limit for ml.g6e.2xlarge")

    monkeypatch.setattr(SageMakerModelBackend, "create_endpoint", refuse)
    with pytest.raises(Exception, match="ResourceLimitExceeded"):
        Deployment(_plan(), session=aws, progress=lambda s: None, poll_s=0).create()
    assert leftovers(aws) == NOTHING  # the model and endpoint config created before were deleted


def test_accepted_create_that_fails_client_side_is_still_deleted(aws, monkeypatch):
    """AWS accepted CreateEndpoint but the SDK failed reading it back: the name was recorded first."""
    from sagemaker.core import resources

    def broken_get(*args, **kwargs):
        raise ConnectionError("connection reset while describing the new endpoint")

    monkeypatch.setattr(resources.Endpoint, "get", classmethod(lambda cls, *a, **k: broken_get()))
    with pytest.raises(ConnectionError):
        Deployment(_plan(), session=aws, progress=lambda s: None, poll_s=0).create()
    assert leftovers(aws) == NOTHING


def test_keyboard_interrupt_while_waiting_deletes_everything(aws, endpoint_script):
    endpoint_script(["Creating"])

    def impatient(line: str):
        if "Creating" in line:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Deployment(_plan(), session=aws, progress=impatient, poll_s=0).create()
    assert leftovers(aws) == NOTHING


def test_invalid_plan_makes_no_aws_call(aws):
    with pytest.raises(PlanError, match="no execution role"):
        Deployment(build_plan("gpt-oss-20b-peagle", region=REGION, role_arn=None), session=aws)
    with pytest.raises(PlanError, match="GiB of GPU memory"):
        Deployment(_plan(instance_type="ml.g5.2xlarge"), session=aws)
    assert leftovers(aws) == NOTHING


def test_cleanup_finds_only_tagged_leftovers(aws):
    plan = _plan()
    dep = Deployment(plan, session=aws, progress=lambda s: None, poll_s=0).create()
    dep.created.clear()  # simulate a crashed kernel: the deployment object forgot its resources
    sm = aws.client("sagemaker")
    sm.create_model(ModelName="peagle-someone-elses-model", ExecutionRoleArn=ROLE,
                    PrimaryContainer={"Image": plan.image_uri})  # untagged: must survive
    tag = ("peagle-nb:run", plan.run_id)
    assert find_tagged(aws, tag) == {"endpoint": [plan.resource_name], "endpoint_config": [plan.resource_name],
                                     "model": [plan.resource_name]}
    assert cleanup_tagged(aws, tag, dry_run=True, progress=lambda s: None)["endpoint"] == [plan.resource_name]
    assert leftovers(aws)["endpoints"] == [plan.resource_name]  # dry run deleted nothing
    cleanup_tagged(aws, tag, progress=lambda s: None)
    assert leftovers(aws) == {"models": ["peagle-someone-elses-model"], "endpoint_configs": [], "endpoints": []}


def test_jumpstart_route_builds_offline_and_needs_role(aws):
    from peagle_nb.sagemaker.jumpstart import JumpStartDeployment

    with pytest.raises(PlanError, match="no execution role"):
        JumpStartDeployment("openai-reasoning-gpt-oss-20b", region=REGION, role_arn=None, session=aws)
    dep = JumpStartDeployment("openai-reasoning-gpt-oss-20b", region=REGION, role_arn=ROLE, session=aws,
                              config_name="p-eagle")
    assert dep.plan.hourly_cost_usd() == 4.2 and "JumpStart" in dep.plan.describe()
    mb = dep.builder()  # ModelBuilder.from_jumpstart_config: constructing it makes no paid call
    assert type(mb).__name__ == "ModelBuilder" and mb.config_name == "p-eagle"
    assert leftovers(aws) == NOTHING


def test_endpoint_that_refuses_deletion_while_creating_is_retried(aws, endpoint_script, monkeypatch):
    from moto.sagemaker.exceptions import ValidationError
    from moto.sagemaker.models import SageMakerModelBackend

    endpoint_script(["Creating"])
    original, refusals = SageMakerModelBackend.delete_endpoint, []

    def busy_then_ok(self, endpoint_name):
        if len(refusals) < 2:
            refusals.append(endpoint_name)
            raise ValidationError(message="Cannot delete endpoint while it is Creating")
        return original(self, endpoint_name)

    monkeypatch.setattr(SageMakerModelBackend, "delete_endpoint", busy_then_ok)
    with pytest.raises(DeploymentFailed):
        Deployment(_plan(), session=aws, progress=lambda s: None, poll_s=0).create(timeout_s=0)
    assert len(refusals) == 2 and leftovers(aws) == NOTHING


def test_delete_all_empties_the_registry(aws):
    """What the notebook's last cell (and interpreter exit) does when earlier cells did not clean up."""
    from peagle_nb.sagemaker import deploy

    plans = [_plan(), _plan(k=5)]
    for plan in plans:
        Deployment(plan, session=aws, progress=lambda s: None, poll_s=0).create()
    assert len(deploy.live_deployments()) == 2 and len(leftovers(aws)["endpoints"]) == 2
    assert deploy.delete_all() == 2
    assert deploy.live_deployments() == [] and leftovers(aws) == NOTHING
