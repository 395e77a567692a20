"""`peagle-nb sagemaker ...`: bad input ends in one paragraph and exit code 2 before anything starts; plan
JSON output; tag-based cleanup against moto."""

import json

import pytest

from peagle_nb.cli import main
from tests.sagemaker.conftest import BUCKET, NOTHING, REGION, ROLE, leftovers

TINY = ["--preset", "tiny-peagle"]
GPT = ["--preset", "gpt-oss-20b-peagle"]
AWS = ["--region", REGION, "--role", ROLE]

# (argv after "sagemaker", words the error must contain)
BAD_INPUT = [
    (["local", *TINY, "--prompt", ""], ["--prompt is empty", "pass some text"]),
    (["local", *TINY, "--prompt", "   "], ["--prompt is empty"]),
    (["local", *TINY, "--max-tokens", "0"], ["--max-tokens 0", "at least one token"]),
    (["local", "--preset", "gpt-5"], ["unknown preset 'gpt-5'", "tiny-peagle"]),
    (["local", *TINY, "--k", "0"], ["--k 0", ">= 1"]),
    (["local", *TINY, "--k", "9"], ["K=9 is above the depth", "use K <= 8"]),
    (["local", *TINY, "--head", "/nonexistent/head"], ["/nonexistent/head", "does not exist"]),
    (["local", *TINY, "--region", "mars-north"], ["--region 'mars-north'", "us-west-2"]),
    (["plan", "--preset", "nope"], ["unknown preset 'nope'"]),
    (["plan", *GPT, "--region", "us-east", "--role", ROLE], ["--region 'us-east' does not look like an AWS region"]),
    (["plan", *GPT, "--region", REGION, "--role", "SageMakerRole"], ["--role 'SageMakerRole' is not an IAM role ARN"]),
    (["plan", *GPT, *AWS, "--k", "11"], ["K=11 is above the depth", "use K <= 10"]),
    (["deploy", *GPT, *AWS, "--prompt", ""], ["--prompt is empty"]),
    (["deploy", *GPT, "--region", REGION, "--role", "arn:aws:iam::12:role/x"], ["is not an IAM role ARN"]),
    (["deploy", *GPT, *AWS, "--instance-type", "ml.g6e.2xlage"], ["unknown instance type 'ml.g6e.2xlage'"]),
    (["deploy", *GPT, "--role", ROLE], ["no AWS region"]),
    (["deploy", *TINY, *AWS], ["local folder: pass s3_bucket"]),
    (["deploy", *TINY, *AWS, "--s3-bucket", "s3://my-bucket"], ["--s3-bucket 's3://my-bucket'", "bare name"]),
    (["invoke", "--endpoint", "bad_name!", "--prompt", "x", "--region", REGION], ["not a SageMaker endpoint name"]),
    (["invoke", "--endpoint", "peagle-x", "--prompt", "", "--region", REGION], ["--prompt is empty"]),
    (["invoke", "--endpoint", "peagle-x", "--prompt", "x", "--region", "useast1"], ["--region 'useast1'"]),
    (["cleanup", "--tag", "no-equals-sign"], ["--tag must be KEY=VALUE", "peagle-nb:run=<run id>"]),
    (["cleanup", "--region", "us-east-1x"], ["--region 'us-east-1x'"]),
]


@pytest.mark.parametrize("argv, words", BAD_INPUT, ids=[" ".join(a)[:60] for a, _ in BAD_INPUT])
def test_bad_input_is_one_paragraph_exit_2_and_nothing_starts(argv, words, aws, capsys, monkeypatch):
    import psutil

    monkeypatch.delenv("SAGEMAKER_ROLE_ARN", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert main(["sagemaker", *argv]) == 2
    err = capsys.readouterr().err.strip()
    flat = " ".join(err.split())  # the paragraph is wrapped for the terminal
    for word in words:
        assert word in flat, err
    assert err.startswith(f"peagle-nb sagemaker {argv[0]}: ") and "\n\n" not in err and "Traceback" not in err
    assert {p.pid for p in psutil.Process().children(recursive=True)} - before == set()  # no vLLM, no helper
    assert leftovers(aws) == NOTHING
    assert aws.client("s3").list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0


def test_plan_prints_json(capsys, monkeypatch):
    pytest.importorskip("sagemaker.core.image_uris")
    assert main(["sagemaker", "plan", *GPT, "--region", "us-west-2", "--role", ROLE, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["instance_type"] == "ml.g6e.2xlarge" and plan["k"] == 7
    assert plan["env"]["SM_VLLM_NO_ENABLE_PREFIX_CACHING"] == ""


def _queue_answer(text=" speculative"):
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sagemakerruntime.models import sagemakerruntime_backends

    body = {"choices": [{"text": text}], "usage": {"completion_tokens": 1}}
    sagemakerruntime_backends[DEFAULT_ACCOUNT_ID][REGION].results_queue.append(
        (json.dumps(body), "application/json", "AllTraffic", ""))


def test_deploy_fails_when_the_endpoint_log_shows_no_drafts(aws, capsys):
    """moto runs no container, so the endpoint's log group stays empty: exactly what an endpoint with
    speculation off shows. The command answers, then exits 1 naming the problem, and deletes everything."""
    pytest.importorskip("sagemaker.core.resources")
    _queue_answer()
    assert main(["sagemaker", "deploy", *GPT, *AWS, "--prompt", "def f(x):", "--speculation-wait", "0"]) == 1
    captured = capsys.readouterr()
    assert '" speculative"' in captured.out
    err = " ".join(captured.err.split())
    assert "no drafts in CloudWatch /aws/sagemaker/Endpoints/peagle-gpt-oss-20b-peagle-" in err
    assert leftovers(aws) == NOTHING


def test_deployment_reads_its_own_log_group(aws):
    pytest.importorskip("sagemaker.core.resources")
    from pathlib import Path

    from peagle_nb.sagemaker.deploy import Deployment
    from peagle_nb.sagemaker.observe import log_group
    from peagle_nb.sagemaker.plan import build_plan

    recorded = (Path(__file__).parent / "data" / "vllm_cpu_peagle.log").read_text().splitlines()
    dep = Deployment(build_plan("tiny-peagle", target="s3://b/model/", head="s3://b/head/", region=REGION,
                                role_arn=ROLE), session=aws, progress=lambda s: None, poll_s=0).create()
    group, logs = log_group(dep.plan.resource_name), aws.client("logs")
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="AllTraffic/i-0aaa")
    logs.put_log_events(logGroupName=group, logStreamName="AllTraffic/i-0aaa",
                        logEvents=[{"timestamp": 1_796_300_000_000 + i, "message": m} for i, m in enumerate(recorded)])
    stats = dep.speculation()
    assert stats["n_log_lines"] == 2 and stats["num_drafts"] == 192 and stats["num_accepted_tokens"] == 296
    dep.delete()


def test_cleanup_command_removes_a_forgotten_deployment(aws, capsys):
    pytest.importorskip("sagemaker.core.resources")
    from peagle_nb.sagemaker.deploy import Deployment
    from peagle_nb.sagemaker.plan import build_plan

    plan = build_plan("gpt-oss-20b-peagle", region=REGION, role_arn=ROLE)
    dep = Deployment(plan, session=aws, progress=lambda s: None, poll_s=0).create()
    dep.created.clear()  # the kernel died: only the tags remember
    assert main(["sagemaker", "cleanup", "--tag", f"peagle-nb:run={plan.run_id}", "--region", REGION,
                 "--dry-run"]) == 0
    assert leftovers(aws)["endpoints"] == [plan.resource_name]
    assert main(["sagemaker", "cleanup", "--region", REGION]) == 0  # default tag: everything of the suite
    assert leftovers(aws) == NOTHING
    assert f"deleting endpoint {plan.resource_name}" in capsys.readouterr().out
