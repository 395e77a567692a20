"""moto-backed SageMaker control plane for the deployment tests (no AWS, no credentials).

moto 5.2.5 needs two patches, applied only inside these fixtures:
1. Its instance-type allow-list for endpoint configs predates g5/g6/g6e/g7e/p5 (it rejects
   ``ml.g6e.2xlarge`` with a ValidationException). We accept the GPU types of
   ``peagle_nb.sagemaker.instances.INSTANCES`` in addition to moto's list, and still reject anything else.
2. Its Describe* responses carry empty ``VpcConfig: {}`` / ``DataCaptureConfig: {}`` / ``Containers: []``
   that the real service omits; the SDK's pydantic shapes (``sagemaker.core.resources``) then fail with
   "security_group_ids Field required". We drop empty values from those responses.
Also scripted: moto creates endpoints directly InService; ``endpoint_script`` lets a test play a status
sequence (Creating, Creating, InService | Failed) one DescribeEndpoint at a time.
Streaming invocation is not implemented by moto (tested with a fake runtime client and on real vLLM).
"""

from __future__ import annotations


import pytest

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/PeagleTestSageMakerRole"
BUCKET = "peagle-nb-test-bucket"


def _drop_empty(value):
    if isinstance(value, dict):
        return {k: _drop_empty(v) for k, v in value.items() if v not in ({}, [], None, "")}
    if isinstance(value, list):
        return [_drop_empty(v) for v in value]
    return value


@pytest.fixture
def aws(monkeypatch):
    """An isolated moto AWS with the two patches above; yields a boto3 Session for us-east-1."""
    pytest.importorskip("moto")
    boto3 = pytest.importorskip("boto3")
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_SECURITY_TOKEN": "testing", "AWS_SESSION_TOKEN": "testing",
                       "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    from moto import mock_aws
    from moto.sagemaker import models as sm_models

    from peagle_nb.sagemaker.instances import INSTANCES

    original_validate = sm_models.FakeEndpointConfig.validate_instance_type

    def validate_instance_type(self, instance_type):
        if instance_type in INSTANCES:
            return None
        return original_validate(self, instance_type)

    monkeypatch.setattr(sm_models.FakeEndpointConfig, "validate_instance_type", validate_instance_type)
    from moto.core.responses import ActionResult
    from moto.sagemaker.responses import SageMakerResponse

    for op in ("describe_model", "describe_endpoint_config", "describe_endpoint"):
        orig = getattr(SageMakerResponse, op)
        monkeypatch.setattr(SageMakerResponse, op,
                            lambda self, _o=orig: ActionResult(_drop_empty(dict(_o(self).result))))

    from peagle_nb.sagemaker import deploy

    with mock_aws():
        session = boto3.Session(region_name=REGION)
        session.client("s3").create_bucket(Bucket=BUCKET)
        yield session
        deploy.delete_all()  # a test that failed halfway must not leave deployments registered


@pytest.fixture
def endpoint_script(monkeypatch, aws):
    """``endpoint_script(["Creating", "InService"], reason=None)``: statuses returned by successive
    DescribeEndpoint calls (the last one repeats); ``reason`` is the FailureReason for a Failed status."""
    from moto.sagemaker import models as sm_models

    state = {"statuses": [], "reason": None}
    orig = sm_models.FakeEndpoint.response_object

    def response_object(self):
        if state["statuses"]:
            self.endpoint_status = state["statuses"].pop(0) if len(state["statuses"]) > 1 else state["statuses"][0]
            self.failure_reason = state["reason"] if self.endpoint_status == "Failed" else None
        return orig.fget(self)

    monkeypatch.setattr(sm_models.FakeEndpoint, "response_object", property(response_object))

    def play(statuses, reason=None):
        state["statuses"] = list(statuses)
        state["reason"] = reason

    return play


def leftovers(session) -> dict[str, list[str]]:
    sm = session.client("sagemaker")
    return {"models": [m["ModelName"] for m in sm.list_models()["Models"]],
            "endpoint_configs": [c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"]],
            "endpoints": [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]]}


NOTHING = {"models": [], "endpoint_configs": [], "endpoints": []}
