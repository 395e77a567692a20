"""The SageMaker control plane against moto: create -> wait -> invoke -> delete, and the failure paths.

In every failure case (endpoint goes Failed, a create call raises midway, the API accepts a create but
the SDK fails afterwards, the user presses Ctrl-C while waiting) no model, endpoint config, endpoint or
uploaded object may be left behind. moto refuses to delete a busy endpoint as AWS does (conftest.py), and
the deletion decides from DescribeEndpoint's status, never from an error's text.
"""

from __future__ import annotations

import json

import pytest

from tests.sagemaker.conftest import BUCKET, NOTHING, REFUSAL_MESSAGE, REGION, ROLE, aws_instance_types, leftovers

pytest.importorskip("sagemaker.core.resources")

from peagle_nb.sagemaker.deploy import (Deployment, DeploymentFailed, runtime_client,
                                        cleanup_tagged, find_tagged)
from peagle_nb.sagemaker.plan import PlanError, build_plan


def _plan(**kw):
    return build_plan("gpt-oss-20b-peagle", region=REGION, role_arn=ROLE, **kw)


def _quiet(**kw):
    return dict(progress=lambda s: None, poll_s=0, **kw)


def test_create_wait_invoke_delete(aws, endpoint_script, refusals):
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
    assert env["SM_VLLM_ASYNC_SCHEDULING"] == "" and "true" not in env.values()  # the portable boolean
    assert model["PrimaryContainer"]["Image"] == plan.image_uri and "-cu130-" in plan.image_uri
    variant = sm.describe_endpoint_config(EndpointConfigName=name)["ProductionVariants"][0]
    assert variant["InstanceType"] == "ml.g6e.2xlarge"
    assert variant["InferenceAmiVersion"] == "al2023-ami-sagemaker-inference-gpu-4-1"
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == plan.startup_health_timeout_s
    arns = (model["ModelArn"], sm.describe_endpoint_config(EndpointConfigName=name)["EndpointConfigArn"],
            sm.describe_endpoint(EndpointName=name)["EndpointArn"])
    for arn in arns:
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
    assert leftovers(aws) == NOTHING and refusals == []
    assert dep.delete() == deleted  # idempotent


def test_deletion_goes_through_boto3_not_private_sdk_calls(aws, monkeypatch):
    """Older sagemaker-core releases lack the resources' private ``_set_client_context``: deletion must not
    need it (nor any other resource-object call)."""
    from sagemaker.core import resources

    dep = Deployment(_plan(), session=aws, **_quiet()).create()
    for cls in (resources.Endpoint, resources.EndpointConfig, resources.Model):
        for owner in cls.__mro__:  # the private helper lives on a shared base class
            if "_set_client_context" in vars(owner):
                monkeypatch.delattr(owner, "_set_client_context")
        monkeypatch.setattr(cls, "delete", lambda self, *a, **k: pytest.fail("deleted through the SDK object"))
    dep.delete()
    assert leftovers(aws) == NOTHING


def test_local_weights_are_uploaded_attached_and_removed(aws, tmp_path):
    target, head = tmp_path / "tiny-target", tmp_path / "tiny-peagle"
    for folder, cfg in ((target, {"model_type": "llama"}), (head, {"peagle_trained_k": 4})):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(cfg))
        (folder / "model.safetensors").write_bytes(b"\0" * 64)
    plan = build_plan("tiny-peagle", target=str(target), head=str(head), k=4, region=REGION, role_arn=ROLE,
                      s3_bucket=BUCKET)
    assert plan.trained_k == 4  # read from the head's config.json
    dep = Deployment(plan, session=aws, **_quiet()).create()
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


def test_timeout_while_creating_waits_for_the_endpoint_before_deleting(aws, endpoint_script, refusals):
    """Our wait gives up while the endpoint is still Creating; AWS would refuse its deletion then, so the
    cleanup waits (reading the status) until SageMaker fails it, and deletes it afterwards."""
    endpoint_script(["Creating", "Creating", "Creating", "Creating", "Failed"], reason="health check")
    log: list[str] = []
    with pytest.raises(DeploymentFailed, match="still Creating"):
        Deployment(_plan(), session=aws, progress=log.append, poll_s=0).create(timeout_s=0)
    assert leftovers(aws) == NOTHING
    assert refusals == []  # no DeleteEndpoint was sent while the status said Creating
    assert sum("AWS deletes it only after that" in line for line in log) == 2


def test_refused_deletion_is_retried_because_the_status_says_busy(aws, endpoint_script, refusals):
    """DescribeEndpoint said InService, an update started before our DeleteEndpoint, AWS refused: the
    status (Updating) says wait and retry, whatever the refusal's text."""
    endpoint_script(["Creating", "InService", "InService", "Updating", "InService"], flip_on_delete="Updating")
    dep = Deployment(_plan(), session=aws, **_quiet()).create()
    dep.delete()
    assert len(refusals) == 1 and leftovers(aws) == NOTHING


def test_same_refusal_on_an_idle_endpoint_is_reported_not_retried(aws, monkeypatch):
    """The same ValidationException text while the status says InService: nothing to wait for, so the
    deletion is reported as failed with the cleanup command, and the rest is still deleted."""
    from moto.sagemaker import models as sm_models
    from moto.sagemaker.exceptions import ValidationError

    log: list[str] = []
    dep = Deployment(_plan(), session=aws, progress=log.append, poll_s=0).create()
    calls = []

    def refuse(self, endpoint_name):
        calls.append(endpoint_name)
        raise ValidationError(message=REFUSAL_MESSAGE)

    monkeypatch.setattr(sm_models.SageMakerModelBackend, "delete_endpoint", refuse)
    dep.delete()
    assert len(calls) == 1
    assert any("COULD NOT DELETE: endpoint" in line and "sagemaker cleanup --tag peagle-nb:run=" in line
               for line in log)
    assert leftovers(aws)["endpoints"] == [dep.plan.resource_name]
    assert leftovers(aws)["models"] == []  # the model and config went regardless


def test_create_raising_midway_deletes_what_exists(aws, monkeypatch):
    from moto.sagemaker.exceptions import ValidationError
    from moto.sagemaker.models import SageMakerModelBackend

    def refuse(self, **kwargs):
        raise ValidationError(message="ResourceLimitExceeded: account-level service limit for ml.g6e.2xlarge")

    monkeypatch.setattr(SageMakerModelBackend, "create_endpoint", refuse)
    with pytest.raises(Exception, match="ResourceLimitExceeded"):
        Deployment(_plan(), session=aws, **_quiet()).create()
    assert leftovers(aws) == NOTHING  # the model and endpoint config created before were deleted


def test_accepted_create_that_fails_client_side_is_still_deleted(aws, monkeypatch):
    """AWS accepted CreateEndpoint but the SDK failed reading it back: the name was recorded first."""
    from sagemaker.core import resources

    def broken_get(*args, **kwargs):
        raise ConnectionError("connection reset while describing the new endpoint")

    monkeypatch.setattr(resources.Endpoint, "get", classmethod(lambda cls, *a, **k: broken_get()))
    with pytest.raises(ConnectionError):
        Deployment(_plan(), session=aws, **_quiet()).create()
    assert leftovers(aws) == NOTHING


def test_keyboard_interrupt_while_waiting_deletes_everything(aws, endpoint_script):
    endpoint_script(["Creating", "Creating", "InService"])

    def impatient(line: str):
        if line.endswith(": Creating"):
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


def test_an_sdk_outside_the_tested_range_is_refused_before_any_call(aws, monkeypatch):
    from importlib import metadata

    from peagle_nb.sagemaker._deps import MissingDependency

    real = metadata.version
    # sagemaker-core 2.23: one process-wide client, so a resource could talk to another region than its own
    monkeypatch.setattr(metadata, "version", lambda d: "2.23.0" if d == "sagemaker-core" else real(d))
    with pytest.raises(MissingDependency, match=r"sagemaker-core 2.23.0 is outside the tested range >=2.27,<3: pip "
                                                r"install 'sagemaker>=3.27,<4' 'sagemaker-core>=2.27,<3'"):
        Deployment(_plan(), session=aws)
    assert leftovers(aws) == NOTHING


def test_the_extra_in_pyproject_is_the_range_the_code_checks():
    """pyproject.toml's `sagemaker` extra (what pip installs, and what CI's floor job installs at its lower
    bounds) and _deps.PINS (what a deployment checks and tells the user to install) are one range."""
    try:
        import tomllib
    except ModuleNotFoundError:
        import tomli as tomllib
    from peagle_nb.files import paths
    from peagle_nb.sagemaker._deps import PINS
    from tests.sagemaker.sdk_floor import floor_pins

    pyproject = paths.repo_root() / "pyproject.toml"
    extra = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]["sagemaker"]
    assert tuple(extra) == PINS
    assert floor_pins(pyproject) == ["sagemaker==3.27", "sagemaker-core==2.27", "sagemaker-serve==1.27",
                                     "boto3==1.43.90"]


def test_moto_accepts_aws_instance_types_and_still_rejects_a_typo(aws):
    """The allow-list comes from botocore's model, not from this project's table: a typo in our table
    cannot make itself valid."""
    assert {"ml.g6e.2xlarge", "ml.g7e.2xlarge", "ml.g5.xlarge"} <= aws_instance_types()
    sm = aws.client("sagemaker")
    sm.create_model(ModelName="m", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "i"})
    with pytest.raises(Exception, match="ValidationException"):
        sm.create_endpoint_config(EndpointConfigName="typo", ProductionVariants=[
            {"VariantName": "v", "ModelName": "m", "InitialInstanceCount": 1, "InstanceType": "ml.g6e.2xlage"}])


def _plan_with_local_folders(tmp_path):
    """A tiny-peagle plan whose target and head are local folders (uploaded to S3 by the deployment)."""
    target, head = tmp_path / "t", tmp_path / "h"
    for folder in (target, head):
        folder.mkdir()
        (folder / "config.json").write_text("{}")
    return build_plan("tiny-peagle", target=str(target), head=str(head), region=REGION, role_arn=ROLE,
                      s3_bucket=BUCKET)


def test_cleanup_finds_only_tagged_leftovers_and_uploads(aws, tmp_path):
    plan = _plan_with_local_folders(tmp_path)
    dep = Deployment(plan, session=aws, **_quiet()).create()
    dep.created.clear()  # simulate a crashed kernel: the deployment object forgot its resources
    sm, s3 = aws.client("sagemaker"), aws.client("s3")
    sm.create_model(ModelName="peagle-someone-elses-model", ExecutionRoleArn=ROLE,
                    PrimaryContainer={"Image": "img"})  # untagged: must survive
    s3.put_object(Bucket=BUCKET, Key="peagle-nb/someone/else.bin", Body=b"x")  # untagged upload: must survive
    tag = ("peagle-nb:run", plan.run_id)
    found = find_tagged(aws, tag)
    uploads = sorted(f"s3://{BUCKET}/peagle-nb/{plan.run_id}/{d}/config.json" for d in ("draft", "model"))
    assert found == {"endpoint": [plan.resource_name], "endpoint_config": [plan.resource_name],
                     "model": [plan.resource_name], "s3_object": uploads}
    assert cleanup_tagged(aws, tag, dry_run=True, progress=lambda s: None)["endpoint"] == [plan.resource_name]
    assert leftovers(aws)["endpoints"] == [plan.resource_name]  # dry run deleted nothing
    cleanup_tagged(aws, tag, progress=lambda s: None, poll_s=0)
    assert leftovers(aws) == {"models": ["peagle-someone-elses-model"], "endpoint_configs": [], "endpoints": []}
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]] == ["peagle-nb/someone/else.bin"]


def test_cleanup_finds_uploads_of_a_run_that_died_before_create_model(aws, tmp_path):
    plan = _plan_with_local_folders(tmp_path)
    # The first step of create(); the kernel then dies: no model records where the uploads went.
    Deployment(plan, session=aws, **_quiet())._upload_local_artifacts()
    tag = ("peagle-nb:run", plan.run_id)
    assert find_tagged(aws, tag)["s3_object"] == []  # no model points at the uploads...
    assert len(find_tagged(aws, tag, s3_bucket=BUCKET)["s3_object"]) == 2  # ...the bucket scan finds them
    cleanup_tagged(aws, tag, s3_bucket=BUCKET, progress=lambda s: None)
    assert aws.client("s3").list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0


def test_the_runtime_client_never_resends_a_generation_and_outwaits_sagemaker(aws):
    client = runtime_client(aws, REGION, max_concurrency=64)
    config = client.meta.config
    assert config.max_pool_connections == 64
    assert config.retries == {"mode": "standard", "total_max_attempts": 1}  # no silent second generation
    assert config.read_timeout == 90 and config.connect_timeout == 10  # above SageMaker's own 60 s limit
    assert runtime_client(aws, REGION, 2).meta.config.max_pool_connections == 10  # botocore's default


def test_every_runtime_call_goes_through_the_one_configured_client(aws, monkeypatch):
    """invoke, stream and the benchmark backend of a deployment, and the CLI's invoke, all use
    deploy.runtime_client (so all of them have its timeouts and retry policy)."""
    from peagle_nb.cli import main
    from peagle_nb.sagemaker import deploy

    made = []

    def spy(session, region, max_concurrency=10):
        made.append(max_concurrency)
        return real(session, region, max_concurrency)

    real = deploy.runtime_client
    monkeypatch.setattr(deploy, "runtime_client", spy)
    dep = Deployment(_plan(), session=aws, **_quiet()).create()
    _queue_answer()
    assert dep.invoke({"prompt": "x", "max_tokens": 2})["choices"][0]["text"] == " ok"
    assert dep.backend(max_concurrency=32).runtime.meta.config.max_pool_connections == 32
    with pytest.raises(Exception, match="InvokeEndpointWithResponseStream|not yet implemented|NotImplemented"):
        list(dep.invoke_stream({"prompt": "x", "max_tokens": 2}))  # moto has no streaming; the client was made
    _queue_answer()
    assert main(["sagemaker", "invoke", "--endpoint", dep.plan.resource_name, "--prompt", "x", "--region",
                 REGION]) == 0
    assert made == [10, 32, 10, 10]
    dep.delete()


def _queue_answer(text=" ok"):
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sagemakerruntime.models import sagemakerruntime_backends

    body = {"choices": [{"text": text}], "usage": {"completion_tokens": 1}}
    sagemakerruntime_backends[DEFAULT_ACCOUNT_ID][REGION].results_queue.append(
        (json.dumps(body), "application/json", "AllTraffic", ""))


def test_the_wait_comes_from_the_models_own_timeouts_and_is_printed_first(aws, endpoint_script):
    said = []
    plan = _plan()
    plan.model_data_download_timeout_s, plan.startup_health_timeout_s = 1200, 2400
    endpoint_script(["Creating", "Creating", "Creating", "InService"])  # the first is read by Endpoint.create
    dep = Deployment(plan, session=aws, progress=said.append, poll_s=0).create()
    assert dep.wait_budget_s() == 1200 + 2400 + 900
    assert said[0].startswith("will wait up to 4500 s (~75 min) for InService: model download <= 1200 s + "
                              "container health check <= 2400 s + instance placement <= 900 s")
    waits = [line for line in said if "of up to 4500 s] endpoint" in line]
    assert [w.rsplit(": ", 1)[1] for w in waits] == ["Creating", "Creating", "InService"]
    assert said.index(waits[0]) > next(i for i, line in enumerate(said) if line.startswith("creating endpoint "))
    dep.delete()


def test_delete_all_empties_the_registry(aws):
    """What the notebook's last cell (and interpreter exit) does when earlier cells did not clean up."""
    from peagle_nb.sagemaker import deploy

    plans = [_plan(), _plan(k=5)]
    for plan in plans:
        Deployment(plan, session=aws, **_quiet()).create()
    assert len(deploy.live_deployments()) == 2 and len(leftovers(aws)["endpoints"]) == 2
    assert deploy.delete_all() == 2
    assert deploy.live_deployments() == [] and leftovers(aws) == NOTHING
