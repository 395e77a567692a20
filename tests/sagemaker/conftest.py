"""moto-backed SageMaker control plane for the deployment tests (no AWS, no credentials).

moto 5.2 needs three patches, applied only inside these fixtures:
1. Its instance-type allow-list for endpoint configs predates g5/g6/g6e/g7e/p5 (it rejects ``ml.g6e.2xlarge``
   with a ValidationException). We also accept the instance types botocore's own SageMaker model lists
   for production variants (``ProductionVariantInstanceType``: AWS's list, independent of this project's
   instance table), so a typo in either still fails.
2. Its Describe* responses carry empty ``VpcConfig: {}`` / ``DataCaptureConfig: {}`` / ``Containers: []``
   that the real service omits; the SDK's pydantic shapes (``sagemaker.core.resources``) then fail with
   "security_group_ids Field required". We drop empty values from those responses.
3. It deletes an endpoint in any state; AWS refuses while the endpoint is Creating, Updating,
   SystemUpdating or RollingBack. We refuse the same way (ValidationException, a message that names no
   status, so nothing can depend on its wording).
Also scripted: moto creates endpoints directly InService; ``endpoint_script`` lets a test play a status
sequence (Creating, Creating, InService | Failed) one DescribeEndpoint at a time.
Streaming invocation is not implemented by moto (tested with a fake runtime client and on real vLLM).
"""

from __future__ import annotations

import pytest

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/PeagleTestSageMakerRole"
BUCKET = "peagle-nb-test-bucket"
BUSY = ("Creating", "Updating", "SystemUpdating", "RollingBack")
REFUSAL_MESSAGE = "The request was rejected."


def _drop_empty(value):
    if isinstance(value, dict):
        return {k: _drop_empty(v) for k, v in value.items() if v not in ({}, [], None)}
    if isinstance(value, list):
        return [_drop_empty(v) for v in value]
    return value


def aws_instance_types() -> set[str]:
    """The production-variant instance types of botocore's SageMaker service model."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return set(model.shape_for("ProductionVariantInstanceType").enum)


@pytest.fixture
def refusals():
    """Endpoint names moto refused to delete because they were busy (filled by the ``aws`` fixture)."""
    return []


@pytest.fixture
def aws(monkeypatch, refusals):
    """An isolated moto AWS with the three patches above; yields a boto3 Session for us-east-1."""
    pytest.importorskip("moto")
    boto3 = pytest.importorskip("boto3")
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_SECURITY_TOKEN": "testing", "AWS_SESSION_TOKEN": "testing",
                       "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    from moto import mock_aws
    from moto.sagemaker import models as sm_models
    from moto.sagemaker.exceptions import ValidationError

    listed = aws_instance_types()
    original_validate = sm_models.FakeEndpointConfig.validate_instance_type

    def validate_instance_type(self, instance_type):
        if instance_type in listed:
            return None
        return original_validate(self, instance_type)

    monkeypatch.setattr(sm_models.FakeEndpointConfig, "validate_instance_type", validate_instance_type)
    original_delete = sm_models.SageMakerModelBackend.delete_endpoint

    def delete_endpoint(self, endpoint_name):
        endpoint = self.endpoints.get(endpoint_name)
        if endpoint is not None and endpoint.endpoint_status in BUSY:
            refusals.append(endpoint_name)
            raise ValidationError(message=REFUSAL_MESSAGE)
        return original_delete(self, endpoint_name)

    monkeypatch.setattr(sm_models.SageMakerModelBackend, "delete_endpoint", delete_endpoint)
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
    """``endpoint_script(["Creating", "InService"], reason=None, flip_on_delete=None)``: statuses returned by
    successive DescribeEndpoint calls (the last one repeats); ``reason`` is the FailureReason for a Failed
    status; ``flip_on_delete`` puts the endpoint in that status at the first DeleteEndpoint (an update that
    started between our DescribeEndpoint and our DeleteEndpoint)."""
    from moto.sagemaker import models as sm_models

    state = {"statuses": [], "reason": None, "flip": None}
    orig = sm_models.FakeEndpoint.response_object

    def response_object(self):
        if state["statuses"]:
            self.endpoint_status = state["statuses"].pop(0) if len(state["statuses"]) > 1 else state["statuses"][0]
            self.failure_reason = state["reason"] if self.endpoint_status == "Failed" else None
        return orig.fget(self)

    monkeypatch.setattr(sm_models.FakeEndpoint, "response_object", property(response_object))
    patched_delete = sm_models.SageMakerModelBackend.delete_endpoint

    def delete_endpoint(self, endpoint_name):
        if state["flip"] and endpoint_name in self.endpoints:
            self.endpoints[endpoint_name].endpoint_status, state["flip"] = state["flip"], None
        return patched_delete(self, endpoint_name)

    monkeypatch.setattr(sm_models.SageMakerModelBackend, "delete_endpoint", delete_endpoint)

    def play(statuses, reason=None, flip_on_delete=None):
        state["statuses"] = list(statuses)
        state["reason"] = reason
        state["flip"] = flip_on_delete

    return play


@pytest.fixture
def offline_role(monkeypatch):
    """The SDK validates a role with iam:SimulatePrincipalPolicy, which moto lacks: skip that check
    (``SAGEMAKER_VALIDATE_ROLE=false`` where the SDK honours it, the resolver itself otherwise)."""
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    model_builder = pytest.importorskip("sagemaker.serve.model_builder")
    if hasattr(model_builder, "resolve_and_validate_role"):
        monkeypatch.setattr(model_builder, "resolve_and_validate_role", lambda *a, **k: ROLE)


def leftovers(session) -> dict[str, list[str]]:
    sm = session.client("sagemaker")
    return {"models": [m["ModelName"] for m in sm.list_models()["Models"]],
            "endpoint_configs": [c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"]],
            "endpoints": [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]]}


NOTHING = {"models": [], "endpoint_configs": [], "endpoints": []}
