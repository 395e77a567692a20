"""Deployment plans: presets, env, image/AMI choice, requests, JSON round-trip, and validation before any
AWS call."""

import json
import re

import pytest

from peagle_nb.sagemaker import images, instances
from peagle_nb.sagemaker.plan import DeploymentPlan, PlanError, build_plan, validate_plan
from peagle_nb.serving import config as serving_config
from peagle_nb.serving.presets import PRESETS

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
EXPLICIT_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/my-vllm:1"
DLC_US_WEST_2 = "763104351884.dkr.ecr.us-west-2.amazonaws.com"  # AWS's Deep Learning Containers registry


@pytest.fixture(autouse=True)
def _no_ambient_aws(monkeypatch):
    for key in ("AWS_REGION", "AWS_DEFAULT_REGION", "SAGEMAKER_ROLE_ARN"):
        monkeypatch.delenv(key, raising=False)


def test_preset_plan_is_valid_printable_and_round_trips():
    pytest.importorskip("sagemaker.core.image_uris")
    plan = validate_plan(build_plan("gpt-oss-20b-peagle", region="us-west-2", role_arn=ROLE))
    spec = plan.speculative_config
    assert spec == {"method": "eagle3", "model": "amazon/GPT-OSS-20B-P-EAGLE", "num_speculative_tokens": 7,
                    "parallel_drafting": True}
    assert plan.env["SM_VLLM_MODEL"] == "openai/gpt-oss-20b"
    assert plan.image_uri == f"{DLC_US_WEST_2}/vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker"
    assert "image_uris.retrieve" in plan.image_source and plan.inference_ami_version == images.CUDA13_AMI
    text = plan.describe()
    assert "vllm serve --port 8080 --async-scheduling --kv-cache-dtype fp8" in text
    assert "no price for us-west-2 in the table" in text
    assert DeploymentPlan.from_json(plan.to_json()) == plan
    assert json.loads(plan.to_json())["env"]["SM_VLLM_ASYNC_SCHEDULING"] == ""  # portable bare flag
    assert list(plan.env) == sorted(plan.env)  # the order the current entrypoint uses, written for the older ones
    assert len(plan.resource_name) <= 63


def test_plan_and_serve_write_the_same_speculative_config_and_flags():
    """One preset table, one config writer: the container runs what `peagle-nb serve` runs."""
    from peagle_nb.sagemaker.container import container_args

    for name, preset in PRESETS.items():
        if preset.local:
            continue
        serve = serving_config.server_args(preset, check=False)
        plan = build_plan(name, region="us-east-1", role_arn=ROLE)
        aws = container_args(plan.env)
        pairs = lambda args: sorted(_groups(args))  # noqa: E731
        ours = [g for g in pairs(aws) if g[0] not in ("--port", "--served-model-name")]
        assert ours == pairs(serve), name


def _groups(args):
    out, i = [], 0
    while i < len(args):
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            out.append((args[i], args[i + 1]))
            i += 2
        else:
            out.append((args[i],))
            i += 1
    return out


def test_eagle3_plan_has_no_parallel_drafting():
    plan = build_plan("gpt-oss-20b-eagle3", region="us-east-1", role_arn=ROLE)
    assert plan.speculative_config == {"method": "eagle3", "model": "RedHatAI/gpt-oss-20b-speculator.eagle3",
                                       "num_speculative_tokens": 3}


def test_plain_preset_has_no_speculative_config():
    plan = build_plan("tiny-none", region="us-east-1", role_arn=ROLE)
    assert plan.speculative_config is None and plan.method == "none" and plan.head is None
    validate_plan(plan, for_aws=False)


def test_explicit_image_and_model():
    plan = build_plan(target="Qwen/Qwen3-8B", head="someone/qwen3-8b-p-eagle", k=4, instance_type="ml.g6e.xlarge",
                      image_uri="123456789012.dkr.ecr.eu-west-1.amazonaws.com/my-vllm:1", region="eu-west-1",
                      role_arn=ROLE, min_gpu_memory_gib=20)
    validate_plan(plan)
    assert plan.env["SM_VLLM_MODEL"] == "Qwen/Qwen3-8B" and plan.image_source == "explicit image_uri"
    assert plan.inference_ami_version is None  # no CUDA version in the tag: SageMaker's default AMI
    assert plan.container_args()[2:] == ["--model", "Qwen/Qwen3-8B", "--served-model-name", "Qwen/Qwen3-8B",
                                         "--speculative-config", plan.env["SM_VLLM_SPECULATIVE_CONFIG"]]


def test_g7e_gets_the_cuda12_image_jumpstart_runs_there():
    """The SDK lists ml.g7e for no CUDA 13 AMI; JumpStart serves GPT-OSS on it with a cu129 image on the
    default AMI, so the plan does the same (and says why)."""
    pytest.importorskip("sagemaker.core.image_uris")
    plan = validate_plan(build_plan("gpt-oss-120b-peagle", region="us-west-2", role_arn=ROLE))
    assert plan.instance_type == "ml.g7e.2xlarge"
    assert plan.image_uri == f"{DLC_US_WEST_2}/vllm:0.18.0-gpu-py312-cu129-ubuntu22.04-sagemaker"
    assert plan.inference_ami_version is None and "InferenceAmiVersion" not in \
        plan.requests()["create_endpoint_config"]["ProductionVariants"][0]
    assert plan.vllm_version == "0.18.0" and "does not list ml.g7e" in plan.image_source
    # A CUDA 13 image forced onto g7e is refused before any AWS call.
    cu13 = "763104351884.dkr.ecr.us-west-2.amazonaws.com/vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker"
    with pytest.raises(PlanError, match="CUDA 13 image, and the SDK lists ml.g7e"):
        validate_plan(build_plan("gpt-oss-120b-peagle", region="us-west-2", role_arn=ROLE, image_uri=cu13))


def test_the_g7e_image_is_the_one_in_jumpstarts_recorded_spec():
    """Two independent sources agree: our choice for ml.g7e and JumpStart's P-EAGLE configuration."""
    pytest.importorskip("sagemaker.core.image_uris")
    from peagle_nb.files import paths
    from peagle_nb.sagemaker.jumpstart import PEAGLE_CONFIG, spec_configs

    spec = json.loads((paths.data_dir() / "sagemaker/jumpstart/openai-reasoning-gpt-oss-20b.json").read_text())
    for region in ("us-east-1", "us-west-2"):
        (peagle,) = [c for c in spec_configs(spec, region) if c["name"] == PEAGLE_CONFIG]
        assert images.choose_image(region, "ml.g7e.2xlarge").uri == peagle["image"]


def test_our_cuda13_family_list_is_the_sdks(monkeypatch):
    """The SDK keeps the instance families it pairs with the CUDA 13 AMI under a private name, with no public
    accessor; the package keeps its own copy (images.CUDA13_AMI_FAMILIES) and this test reads the private
    name only to catch the SDK changing its list. Its own resolver, run on a cu130 image, must agree too."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # importing sagemaker.serve builds clients
    servers = pytest.importorskip("sagemaker.serve.model_builder_servers")
    sdk = getattr(servers, "_CUDA_13_INFERENCE_AMI_COMPATIBLE_FAMILIES", None)
    if sdk is None:
        pytest.fail("sagemaker-serve no longer has its CUDA 13 AMI list: check images.CUDA13_AMI_FAMILIES by hand")
    assert images.CUDA13_AMI_FAMILIES == frozenset(sdk)


def test_multi_gpu_instance_sets_tensor_parallel():
    plan = build_plan("qwen3-coder-30b-peagle", instance_type="ml.g6e.12xlarge", region="us-east-1", role_arn=ROLE)
    assert plan.env["SM_VLLM_TENSOR_PARALLEL_SIZE"] == "4"
    validate_plan(plan)


@pytest.mark.parametrize("overrides, message", [
    (dict(instance_type="ml.g5.2xlarge"), "24 GiB of GPU memory"),
    (dict(k=12), "above the depth the P-EAGLE head was trained for (10)"),
    (dict(role_arn=None), "no execution role"),
    (dict(role_arn="SageMakerRole"), "is not an IAM role ARN"),
    (dict(region=None, image_uri=EXPLICIT_IMAGE), "no AWS region"),
    (dict(region="us-east", image_uri=EXPLICIT_IMAGE), "does not look like an AWS region"),
    (dict(instance_type="ml.m5.xlarge"), "unknown instance type"),
    (dict(startup_health_timeout_s=10), "60..3600"),
    (dict(inference_ami_version="al2-ami-sagemaker-inference-gpu-3-1"), "CUDA 13"),
    (dict(k=0), "must be >= 1"),
    (dict(engine_args={"enforce-eager": "true"}), "the oldest entrypoint passes it on as a value"),
    (dict(extra_env={"SM_VLLM_SERVED_MODEL_NAME": '["a", "b"]'}), "JSON array"),
])
def test_validation_errors_name_the_problem_and_the_fix(overrides, message):
    pytest.importorskip("sagemaker.core.image_uris")
    kwargs = dict(region="us-east-1", role_arn=ROLE)
    kwargs.update(overrides)
    with pytest.raises(PlanError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        validate_plan(build_plan("gpt-oss-20b-peagle", **kwargs))
    assert len(info.value.problems) == 1, info.value.problems  # exactly the problem planted


def test_memory_error_suggests_an_instance_that_fits():
    with pytest.raises(PlanError) as info:
        validate_plan(build_plan("gpt-oss-120b-peagle", instance_type="ml.g6e.2xlarge", region="us-east-1",
                                 role_arn=ROLE, image_uri="123456789012.dkr.ecr.us-east-1.amazonaws.com/v:1"))
    (problem,) = info.value.problems
    assert "48 GiB" in problem and "needs about 80 GiB" in problem and "ml.g7e.2xlarge" in problem


def test_local_plan_needs_no_role_but_aws_needs_a_bucket():
    plan = build_plan("tiny-peagle", region="us-east-1", role_arn=ROLE,
                      image_uri="123456789012.dkr.ecr.us-east-1.amazonaws.com/v:1")
    validate_plan(plan, for_aws=False)
    with pytest.raises(PlanError, match="pass s3_bucket"):
        validate_plan(plan)
    plan = build_plan("tiny-peagle", region="us-east-1", role_arn=ROLE, s3_bucket="b",
                      image_uri="123456789012.dkr.ecr.us-east-1.amazonaws.com/v:1")
    assert plan.model_data_s3_uri == f"s3://b/peagle-nb/{plan.run_id}/model/"
    req = validate_plan(plan).requests()["create_model"]["PrimaryContainer"]
    assert req["ModelDataSource"]["S3DataSource"]["S3Uri"] == plan.model_data_s3_uri
    assert req["AdditionalModelDataSources"][0]["ChannelName"] == "draft"


def test_unknown_preset_and_fields():
    with pytest.raises(PlanError, match="unknown preset 'gpt-5'; choose one of: tiny-none"):
        build_plan("gpt-5")
    with pytest.raises(PlanError, match="unknown plan fields"):
        DeploymentPlan.from_json({"name": "x", "colour": "red"})


def test_instance_table_agrees_with_the_sdk_and_with_aws():
    """GPU counts/memory against the SDK's table; every name against botocore's list of the instance types
    SageMaker accepts for endpoints (so a typo in the table fails here)."""
    botocore_session = pytest.importorskip("botocore.session")
    listed = set(botocore_session.get_session().get_service_model("sagemaker")
                 .shape_for("ProductionVariantInstanceType").enum)
    assert set(instances.INSTANCES) <= listed, sorted(set(instances.INSTANCES) - listed)
    assert {p.instance_type for p in PRESETS.values()} <= set(instances.INSTANCES)
    sdk = instances.sdk_gpu_info("us-east-1")
    if not sdk:
        pytest.skip("SageMaker SDK not installed")
    checked = 0
    for name, (gpus, _, mem_gib) in instances.INSTANCES.items():
        if name in sdk:
            assert sdk[name]["Count"] == gpus, name
            assert abs(sdk[name]["TotalGpuMemoryInMiB"] / 1024 - mem_gib) / mem_gib < 0.05, name
            checked += 1
    assert checked >= 4


def test_every_gpu_preset_fits_its_instance():
    for preset in PRESETS.values():
        info = instances.instance_info(preset.instance_type)
        assert info.gpu_memory_gib >= (preset.gpu_memory_gib or 1), preset.name


def test_missing_aws_libraries_name_the_extra(monkeypatch):
    import importlib

    from peagle_nb.sagemaker import _deps

    real = importlib.import_module

    def no_boto(name, *a, **k):
        if name.startswith("boto3"):
            raise ImportError("No module named 'boto3'")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", no_boto)
    with pytest.raises(_deps.MissingDependency, match=r"\.\[sagemaker\]"):
        _deps.require("boto3")
    # Planning itself needs neither boto3 nor AWS.
    assert build_plan("tiny-peagle").k == 4


def test_every_price_names_its_region_date_and_source():
    assert instances.PRICES
    for (region, itype), price in instances.PRICES.items():
        assert price.region == region and itype in instances.INSTANCES
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", price.as_of) and price.source and price.usd_per_hour > 0
        assert f"in {region}, as of {price.as_of}" in price.describe()


def test_a_region_without_prices_has_no_price_not_another_regions():
    assert instances.hourly_cost("ml.g6e.2xlarge", 2, "us-east-1") == 5.62
    assert instances.hourly_cost("ml.g6e.2xlarge", 1, "ap-southeast-3") is None
    assert instances.instance_info("ml.g6e.2xlarge", "ap-southeast-3").price is None
    plan = build_plan("gpt-oss-20b-peagle", region="ap-southeast-3", role_arn=ROLE)
    assert plan.hourly_cost_usd() is None and "no price for ap-southeast-3 in the table" in plan.describe()
    assert "as of 2026-12-02" in build_plan("gpt-oss-20b-peagle", region="us-east-1", role_arn=ROLE).describe()


def test_an_unknown_setting_is_refused_with_the_settings_there_are():
    with pytest.raises(PlanError, match=r"unknown plan setting\(s\) \['instance'\].*instance_type"):
        build_plan("tiny-peagle", instance="ml.g6e.xlarge", region="us-east-1", role_arn=ROLE)
    explicit = build_plan("tiny-peagle", instance_type="ml.g6e.xlarge", region="us-east-1", role_arn=ROLE, k=2)
    assert (explicit.instance_type, explicit.k) == ("ml.g6e.xlarge", 2)  # an explicit setting wins over the preset
