"""`peagle-nb sagemaker ...`: bad input ends in one paragraph and exit code 2 before anything starts; plan
JSON output; tag-based cleanup against moto."""

import json
import time
from pathlib import Path

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
    (["deploy", *GPT, *AWS, "--max-tokens", "8192"], ["--max-tokens 8192 leaves no room for the prompt",
                                                      "maximum model length of 8192 tokens", "at most 8191"]),
    (["local", *TINY, "--max-tokens", "1024"], ["maximum model length of 1024 tokens", "at most 1023"]),
    (["local", *TINY, "--prompt", "def fibonacci(n): " * 40, "--max-tokens", "1000"],
     ["the prompt is", "tokens and --max-tokens 1000 asks for more", "shorten the prompt"]),
    (["deploy", *GPT, *AWS, "--k", "11"], ["K=11 is above the depth", "use K <= 10"]),
    (["deploy", *GPT, *AWS, "--prompt", "x" * (6 * 1024 * 1024 + 1)], ["6,291,457 bytes",
                                                                        "at most 6,291,456 bytes per invocation"]),
    (["invoke", "--endpoint", "peagle-x", "--prompt", "x" * (6 * 1024 * 1024 + 1), "--region", REGION],
     ["at most 6,291,456 bytes"]),
    (["cleanup", "--tag", "no-equals-sign"], ["--tag must be KEY=VALUE", "peagle-nb:run=<run id>"]),
    (["cleanup", "--region", "us-east-1x"], ["--region 'us-east-1x'"]),
]


@pytest.mark.parametrize("argv, words", BAD_INPUT, ids=[" ".join(a)[:60] for a, _ in BAD_INPUT])
@pytest.mark.timeout(120)
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


RUN_ID = "12040300abcd"
NAME = f"peagle-gpt-oss-20b-peagle-{RUN_ID}"


def _container_log(aws, name, lines):
    from peagle_nb.sagemaker.observe import log_group

    logs = aws.client("logs")
    logs.create_log_group(logGroupName=log_group(name))
    logs.create_log_stream(logGroupName=log_group(name), logStreamName="AllTraffic/i-0aaa")
    logs.put_log_events(logGroupName=log_group(name), logStreamName="AllTraffic/i-0aaa",
                        logEvents=[{"timestamp": int(time.time() * 1000) + i, "message": m}
                                   for i, m in enumerate(lines)])


@pytest.mark.parametrize("log, code, words", [
    ("vllm_cpu_none.log", 1, ["no drafts in CloudWatch /aws/sagemaker/Endpoints/" + NAME]),
    (None, 3, ["cannot read the logs: log group /aws/sagemaker/Endpoints/" + NAME + " does not exist"]),
    ("vllm_cpu_peagle.log", 0, []),
])
def test_deploy_gives_the_speculation_verdict(log, code, words, aws, capsys, monkeypatch):
    """moto runs no container: the container log is put where SageMaker puts it, read after the request.
    Plain decoding's log (no drafts) exits 1, no log at all 3, P-EAGLE's log 0; everything is deleted."""
    pytest.importorskip("sagemaker.core.resources")
    from peagle_nb.sagemaker import plan as plan_module

    monkeypatch.setattr(plan_module, "new_run_id", lambda: RUN_ID)
    if log:
        _container_log(aws, NAME, (Path(__file__).parent / "data" / log).read_text().splitlines())
    _queue_answer()
    assert main(["sagemaker", "deploy", *GPT, *AWS, "--prompt", "def f(x):", "--speculation-wait", "0"]) == code
    captured = capsys.readouterr()
    assert '" speculative"' in captured.out
    err = " ".join(captured.err.split())
    for word in words:
        assert word in err, err
    if code == 0:
        assert "speculation active: 192 drafts" in captured.out and not err
    assert "Traceback" not in err and leftovers(aws) == NOTHING


class _RefusingRuntime:
    """A sagemaker-runtime client (the package's own configuration) whose endpoint answers ModelError as
    SageMaker does when vLLM refuses a request (HTTP 424, the container's status and message in the body)."""

    def __init__(self, real, operation="invoke_endpoint"):
        self.real, self.operation = real, operation

    def __call__(self, session, region, max_concurrency=10):
        from botocore.stub import Stubber

        client = self.real(session, region, max_concurrency)
        stub = Stubber(client)
        stub.add_client_error(self.operation, service_error_code="ModelError", http_status_code=424,
                              service_message="Received client error (400) from primary with message ...",
                              modeled_fields={"OriginalStatusCode": 400, "OriginalMessage": (
                                  '{"error":{"message":"This model\'s maximum context length is 8192 tokens. '
                                  'However, you requested 9000 tokens","type":"BadRequestError"}}')})
        stub.activate()
        return client


@pytest.mark.parametrize("stream", [False, True])
def test_a_refused_request_on_a_live_endpoint_is_one_paragraph(stream, aws, capsys, monkeypatch):
    from peagle_nb.sagemaker import deploy

    operation = "invoke_endpoint_with_response_stream" if stream else "invoke_endpoint"
    monkeypatch.setattr(deploy, "runtime_client", _RefusingRuntime(deploy.runtime_client, operation))
    argv = ["sagemaker", "invoke", "--endpoint", "peagle-x", "--prompt", "x", "--region", REGION]
    assert main(argv + (["--stream"] if stream else [])) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("peagle-nb sagemaker invoke: endpoint peagle-x refused the request (the model server "
                          "answered 400): {\"error\":{\"message\":\"This model's maximum context length is 8192")
    assert "CloudWatch log group /aws/sagemaker/Endpoints/peagle-x" in err and "Traceback" not in err


def test_deploy_reports_a_refusal_and_deletes_everything(aws, capsys, monkeypatch):
    pytest.importorskip("sagemaker.core.resources")
    from peagle_nb.sagemaker import deploy

    monkeypatch.setattr(deploy, "runtime_client", _RefusingRuntime(deploy.runtime_client))
    assert main(["sagemaker", "deploy", *GPT, *AWS, "--prompt", "def f(x):"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "peagle-nb sagemaker deploy: endpoint peagle-gpt-oss-20b-peagle-" in err
    assert "refused the request (the model server answered 400)" in err and "Traceback" not in err
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
