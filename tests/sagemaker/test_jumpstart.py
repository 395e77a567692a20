"""The JumpStart route offline: the catalogue lookup served from JumpStart's recorded GPT-OSS-20B spec
(data/sagemaker/jumpstart/), the SDK's own ModelBuilder building and deploying it against moto."""

from __future__ import annotations

import json

import pytest

from peagle_nb.files import paths
from tests.sagemaker.conftest import NOTHING, ROLE, leftovers

pytest.importorskip("sagemaker.core.jumpstart.accessors")  # sagemaker.serve itself needs a region to import

from peagle_nb.sagemaker.jumpstart import (MODEL_ID, PEAGLE_CONFIG, JumpStartDeployment,
                                           recorded_catalogue, spec_configs)
from peagle_nb.sagemaker.plan import PlanError

SPEC_PATH = paths.data_dir() / "sagemaker" / "jumpstart" / f"{MODEL_ID}.json"
REGION = "us-east-1"
DLC = "763104351884"  # AWS's Deep Learning Containers registry in us-east-1 / us-west-2
CU129_TAG = "0.18.0-gpu-py312-cu129-ubuntu22.04-sagemaker"
PEAGLE_SPEC = {"model": "/opt/ml/additional-model-data-sources/eagle", "method": "eagle3",
               "num_speculative_tokens": 3, "parallel_drafting": True}


@pytest.fixture
def catalogue(aws, offline_role):
    with recorded_catalogue(SPEC_PATH) as spec:
        yield spec


@pytest.fixture
def requests_sent(aws):
    """The SageMaker API requests as AWS would receive them (moto does not echo every field back)."""
    sent = []
    aws.events.register("provide-client-params.sagemaker.*",
                        lambda params, model, **kw: sent.append((model.name, dict(params))))
    return sent


def _dep(aws, **kw):
    return JumpStartDeployment(region=REGION, role_arn=ROLE, session=aws, progress=kw.pop("progress", lambda s: None),
                               poll_s=0, **kw)


def test_the_spec_lists_the_p_eagle_configuration():
    configs = spec_configs(json.loads(SPEC_PATH.read_text()), REGION)
    assert [c["name"] for c in configs] == ["lmi-optimized", "lmi"]
    peagle, plain = configs
    assert peagle["speculative_config"] == PEAGLE_SPEC and peagle["speculative_decoding"] is True
    assert plain["speculative_config"] is None and plain["speculative_decoding"] is False
    assert peagle["instance_type"] == "ml.g7e.2xlarge" and peagle["network_isolation"] is True
    assert peagle["image"].endswith("/vllm:0.18.0-gpu-py312-cu129-ubuntu22.04-sagemaker")
    assert peagle["startup_health_check_timeout_s"] == peagle["model_data_download_timeout_s"] == 3600
    assert peagle["additional_data_sources"] == ["speculative_decoding"]


def test_sdk_reads_the_same_configurations_as_our_spec_reader(aws, catalogue):
    sdk = {c["name"]: c for c in _dep(aws).configs()}
    ours = {c["name"]: c for c in spec_configs(catalogue, REGION)}
    assert sorted(sdk) == sorted(ours)
    for name in ours:
        for key in ("speculative_config", "speculative_decoding", "instance_type", "additional_data_sources",
                    "vllm_env"):
            assert sdk[name][key] == ours[name][key], (name, key)
    # The SDK lists every configuration with the selected one's timeouts; compare them for that one.
    for key in ("startup_health_check_timeout_s", "model_data_download_timeout_s"):
        assert sdk[PEAGLE_CONFIG][key] == ours[PEAGLE_CONFIG][key] == 3600


def test_build_and_deploy_offline_with_tags_everywhere(aws, catalogue, requests_sent, endpoint_script):
    endpoint_script(["Creating", "Creating", "InService"])
    log: list[str] = []
    dep = _dep(aws, progress=log.append).create()
    name = dep.plan.resource_name
    assert leftovers(aws) == {"models": [name], "endpoint_configs": [name], "endpoints": [name]}
    # What was shown before deploying: the configurations and the resolved speculative config.
    announce = next(line for line in log if line.startswith("JumpStart"))
    assert "['lmi-optimized', 'lmi']" in announce and json.dumps(PEAGLE_SPEC) in announce
    assert dep.plan.k == 3  # from the configuration, for the live speculation check
    # The wait follows the configuration's own timeouts (3,600 s download + 3,600 s health check), said before
    # the model is built, and each poll says how long of it has passed.
    wait = next(i for i, line in enumerate(log) if line.startswith("will wait up to"))
    assert log[wait].startswith("will wait up to 8100 s (~135 min) for InService: model download <= 3600 s + "
                                "container health check <= 3600 s")
    assert wait < next(i for i, line in enumerate(log) if line.startswith("deploying JumpStart"))
    assert any("of up to 8100 s] endpoint" in line for line in log)
    sm = aws.client("sagemaker")
    model = sm.describe_model(ModelName=name)
    container = model["PrimaryContainer"]
    assert json.loads(container["Environment"]["SM_VLLM_SPECULATIVE_CONFIG"]) == PEAGLE_SPEC
    assert container["Image"] == f"{DLC}.dkr.ecr.{REGION}.amazonaws.com/vllm:{CU129_TAG}"
    (head,) = container["AdditionalModelDataSources"]  # the P-EAGLE head reaches the container
    assert head["ChannelName"] == "eagle" and head["S3DataSource"]["S3Uri"].endswith("gpt-oss-20b-p-eagle/")
    (create_model,) = [p for op, p in requests_sent if op == "CreateModel"]
    assert create_model["EnableNetworkIsolation"] is True
    variant = sm.describe_endpoint_config(EndpointConfigName=name)["ProductionVariants"][0]
    assert variant["InstanceType"] == "ml.g7e.2xlarge"
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 3600
    arns = {"model": model["ModelArn"],
            "endpoint_config": sm.describe_endpoint_config(EndpointConfigName=name)["EndpointConfigArn"],
            "endpoint": sm.describe_endpoint(EndpointName=name)["EndpointArn"]}
    for kind, arn in arns.items():
        tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=arn)["Tags"]}
        assert tags["peagle-nb:run"] == dep.plan.run_id and tags["peagle-nb:suite"] == "peagle-notebooks", kind
    # An SDK release that tags only the model: the missing tags are added afterwards.
    sm.delete_tags(ResourceArn=arns["endpoint"], TagKeys=["peagle-nb:run", "peagle-nb:suite"])
    dep.ensure_tags()
    tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=arns["endpoint"])["Tags"]}
    assert tags["peagle-nb:run"] == dep.plan.run_id and tags["peagle-nb:suite"] == "peagle-notebooks"
    dep.delete()
    assert leftovers(aws) == NOTHING


def test_a_configuration_the_spec_does_not_have_is_refused_before_anything_is_created(aws, catalogue):
    with pytest.raises(PlanError, match=r"'p-eagle' is not in the JumpStart spec, which lists \['lmi-optimized', "
                                        r"'lmi'\]"):
        _dep(aws, config_name="p-eagle").create()
    assert leftovers(aws) == NOTHING


def test_a_configuration_without_speculation_is_refused(aws, catalogue):
    with pytest.raises(PlanError, match="'lmi' sets no SM_VLLM_SPECULATIVE_CONFIG"):
        _dep(aws, config_name="lmi").create()
    assert leftovers(aws) == NOTHING


def test_a_wrong_model_id_fails_loudly(aws, catalogue):
    with pytest.raises(PlanError, match="'openai-reasoning-gpt-oss-2b' is not a JumpStart model"):
        _dep(aws, model_id="openai-reasoning-gpt-oss-2b").create()
    assert leftovers(aws) == NOTHING


def test_needs_role_and_region(aws):
    with pytest.raises(PlanError, match="no execution role"):
        JumpStartDeployment(region=REGION, role_arn=None, session=aws)
    with pytest.raises(PlanError, match="does not look like an AWS region"):
        JumpStartDeployment(region="useast1", role_arn=ROLE, session=aws)
