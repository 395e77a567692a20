"""Deployment plans: presets, env, requests, JSON round-trip, and validation before any AWS call."""

import json

import pytest

from peagle_nb.sagemaker import instances
from peagle_nb.sagemaker.plan import PRESETS, DeploymentPlan, PlanError, build_plan, validate_plan

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"


def test_preset_plan_is_valid_printable_and_round_trips(monkeypatch):
    monkeypatch.delenv("AWS_REGION", raising=False)
    plan = validate_plan(build_plan("gpt-oss-20b-peagle", region="us-west-2", role_arn=ROLE))
    spec = plan.speculative_config
    assert spec["method"] == "eagle3" and spec["parallel_drafting"] is True and spec["num_speculative_tokens"] == 7
    assert plan.env["SM_VLLM_MODEL"] == "openai/gpt-oss-20b"
    assert plan.image_uri.startswith("763104351884.dkr.ecr.us-west-2.amazonaws.com/vllm:0.30")
    assert "image_uris.retrieve" in plan.image_source
    text = plan.describe()
    assert "vllm serve --port 8080 --model openai/gpt-oss-20b" in text and "$2.81/h" in text
    assert DeploymentPlan.from_json(plan.to_json()) == plan
    assert json.loads(plan.to_json())["env"]["SM_VLLM_ASYNC_SCHEDULING"] == "true"
    assert len(plan.resource_name) <= 63


def test_eagle3_plan_has_no_parallel_drafting():
    plan = build_plan("gpt-oss-20b-eagle3", region="us-east-1", role_arn=ROLE)
    assert plan.speculative_config["parallel_drafting"] is False and plan.speculative_config["method"] == "eagle3"


def test_hf_model_id_and_explicit_image():
    plan = build_plan(target="Qwen/Qwen3-8B", head="someone/qwen3-8b-p-eagle", k=4, instance_type="ml.g6e.xlarge",
                      model_env="HF_MODEL_ID", image_uri="123456789012.dkr.ecr.eu-west-1.amazonaws.com/my-vllm:1",
                      region="eu-west-1", role_arn=ROLE, min_gpu_memory_gib=20)
    validate_plan(plan)
    assert plan.env["HF_MODEL_ID"] == "Qwen/Qwen3-8B" and "SM_VLLM_MODEL" not in plan.env
    assert plan.image_source == "explicit image_uri"
    assert plan.container_args()[-2:] == ["--model", "Qwen/Qwen3-8B"]


def test_multi_gpu_instance_sets_tensor_parallel():
    plan = build_plan("qwen3-coder-30b-peagle", instance_type="ml.g6e.12xlarge", region="us-east-1", role_arn=ROLE)
    assert plan.env["SM_VLLM_TENSOR_PARALLEL_SIZE"] == "4"
    validate_plan(plan)


@pytest.mark.parametrize("overrides, message", [
    (dict(instance_type="ml.g5.2xlarge"), "24 GiB of GPU memory"),
    (dict(k=12), "above the depth the P-EAGLE head was trained for (10)"),
    (dict(role_arn=None), "no execution role"),
    (dict(role_arn="SageMakerRole"), "is not an IAM role ARN"),
    (dict(region=None), "no AWS region"),
    (dict(instance_type="ml.m5.xlarge"), "unknown instance type"),
    (dict(startup_health_timeout_s=10), "60..3600"),
    (dict(inference_ami_version="al2-ami-sagemaker-inference-gpu-3-1"), "CUDA 13"),
    (dict(k=0), "must be >= 1"),
])
def test_validation_errors_name_the_problem_and_the_fix(overrides, message, monkeypatch):
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("SAGEMAKER_ROLE_ARN", raising=False)
    kwargs = dict(region="us-east-1", role_arn=ROLE)
    kwargs.update(overrides)
    with pytest.raises(PlanError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        validate_plan(build_plan("gpt-oss-20b-peagle", **kwargs))
    assert len(info.value.problems) >= 1


def test_memory_error_suggests_an_instance_that_fits():
    with pytest.raises(PlanError) as info:
        validate_plan(build_plan("gpt-oss-120b-peagle", instance_type="ml.g6e.2xlarge", region="us-east-1",
                                 role_arn=ROLE))
    (problem,) = info.value.problems
    assert "48 GiB" in problem and "needs about 80 GiB" in problem and "ml.g7e.2xlarge" in problem


def test_local_plan_needs_no_role_but_aws_needs_a_bucket(monkeypatch):
    monkeypatch.delenv("SAGEMAKER_ROLE_ARN", raising=False)
    plan = build_plan("tiny-peagle", region="us-east-1", role_arn=ROLE)
    validate_plan(plan, for_aws=False)
    with pytest.raises(PlanError, match="pass s3_bucket"):
        validate_plan(plan)
    plan = build_plan("tiny-peagle", region="us-east-1", role_arn=ROLE, s3_bucket="b")
    assert plan.model_data_s3_uri == f"s3://b/peagle-nb/{plan.run_id}/model/"
    req = validate_plan(plan).requests()["create_model"]["PrimaryContainer"]
    assert req["ModelDataSource"]["S3DataSource"]["S3Uri"] == plan.model_data_s3_uri
    assert req["AdditionalModelDataSources"][0]["ChannelName"] == "draft"


def test_unknown_preset_and_fields():
    with pytest.raises(PlanError, match="unknown preset"):
        build_plan("gpt-5")
    with pytest.raises(PlanError, match="unknown plan fields"):
        DeploymentPlan.from_json({"name": "x", "colour": "red"})


def test_instance_table_agrees_with_the_sdk():
    sdk = instances.sdk_gpu_info("us-east-1")
    if not sdk:
        pytest.skip("SageMaker SDK not installed")
    checked = 0
    for name, (gpus, _, mem_gib, _) in instances.INSTANCES.items():
        if name in sdk:
            assert sdk[name]["Count"] == gpus, name
            assert abs(sdk[name]["TotalGpuMemoryInMiB"] / 1024 - mem_gib) / mem_gib < 0.05, name
            checked += 1
    assert checked >= 4
    for preset in PRESETS.values():
        assert preset["instance_type"] in instances.INSTANCES


def test_presets_agree_with_the_serving_presets():
    serving = pytest.importorskip("peagle_nb.serving.presets")
    from peagle_nb.sagemaker.container import flag_to_env

    checked = 0
    for name, ours in PRESETS.items():
        theirs = serving.PRESETS.get(name)
        if theirs is None:
            continue
        checked += 1
        assert (ours["method"], ours["k"], ours["trained_k"]) == (theirs.method, theirs.k, theirs.trained_k), name
        assert ours["target"].endswith(theirs.target) and (ours["head"] or "").endswith(theirs.head or ""), name
        if theirs.gpu_memory_gib:
            assert ours["min_gpu_memory_gib"] == theirs.gpu_memory_gib, name
        plan = build_plan(name)
        flags = [f for f in theirs.engine_flags if f.startswith("--")]
        assert all(flag_to_env(f) in plan.env for f in flags), name
    assert checked >= 3


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
