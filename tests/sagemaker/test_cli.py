"""`peagle-nb sagemaker plan | cleanup`: exit codes, JSON output, and tag-based cleanup against moto."""

import json

import pytest

from peagle_nb.cli import main
from tests.sagemaker.conftest import NOTHING, REGION, ROLE, leftovers


def test_plan_prints_json_and_fails_on_problems(capsys):
    assert main(["sagemaker", "plan", "--preset", "gpt-oss-20b-peagle", "--region", "us-west-2",
                 "--role", ROLE, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["instance_type"] == "ml.g6e.2xlarge" and plan["k"] == 7
    assert main(["sagemaker", "plan", "--preset", "gpt-oss-20b-peagle", "--k", "11", "--region", "us-west-2",
                 "--role", ROLE]) == 2
    assert "above the depth" in capsys.readouterr().err
    assert main(["sagemaker", "cleanup", "--tag", "no-equals-sign"]) == 2


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
