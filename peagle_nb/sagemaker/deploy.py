"""Create, wait for, invoke and delete a SageMaker AI endpoint, leaving nothing behind.

Explained in notebook 06. :class:`Deployment` drives the SageMaker Python SDK v3 resource classes
(``sagemaker.core.resources.Model`` / ``EndpointConfig`` / ``Endpoint``); the requests come from
:meth:`DeploymentPlan.requests` (boto3 shape, converted with the SDK's own ``transform``), so the dry run
prints exactly what is sent. Streaming uses boto3's sagemaker-runtime client directly (the SDK's
``invoke_with_response_stream`` wraps the same call but re-parses the event stream into pydantic shapes).

Safety rules, all tested against moto (tests/sagemaker/):
- every resource is tagged (``peagle-nb:suite``, ``peagle-nb:run``), so
  ``peagle-nb sagemaker cleanup --tag peagle-nb:run=<id>`` can find leftovers from a crashed kernel;
- a resource's name is recorded BEFORE its create call, so a call that fails after AWS accepted it
  (timeout, parse error, Ctrl-C) is still deleted;
- :meth:`Deployment.create` deletes everything it created when anything fails or the user interrupts
  (``KeyboardInterrupt``), then re-raises; :meth:`Deployment.delete` is idempotent and keeps going when
  one deletion fails; live deployments are in a registry that :func:`delete_all` (and ``atexit``) empties.
"""

from __future__ import annotations

import atexit
import json
import time
import urllib.parse
from typing import Any, Callable, Iterator

from peagle_nb.sagemaker._deps import require
from peagle_nb.sagemaker.plan import SUITE_TAG, DeploymentPlan, resolve_local, validate_plan

Progress = Callable[[str], None]
_REGISTRY: dict[int, "Deployment"] = {}
TRANSITIONAL = ("Creating", "Updating", "SystemUpdating", "RollingBack")


class DeploymentFailed(RuntimeError):
    """The endpoint reached Failed (reason from DescribeEndpoint) or did not get InService in time."""


def _not_found(exc: BaseException) -> bool:
    err = getattr(exc, "response", {}).get("Error", {}) if hasattr(exc, "response") else {}
    code, msg = err.get("Code", ""), err.get("Message", "")
    return "NotFound" in code or "Could not find" in msg or "does not exist" in msg


def _busy(exc: BaseException) -> bool:
    msg = (getattr(exc, "response", {}) or {}).get("Error", {}).get("Message", "") if hasattr(exc, "response") else ""
    return any(s in msg for s in ("Creating", "Updating", "in progress", "SystemUpdating"))


def boto_session(region: str | None):
    boto3 = require("boto3")
    return boto3.Session(region_name=region)


class Deployment:
    """One endpoint's life. ``with Deployment(plan).create() as dep: dep.invoke({...})`` deletes on exit."""

    def __init__(self, plan: DeploymentPlan, *, session=None, progress: Progress = print, poll_s: float = 15.0):
        self.plan = validate_plan(plan, for_aws=True)
        self.session = session or boto_session(plan.region)
        self.progress = progress
        self.poll_s = poll_s
        self.created: list[tuple[str, str]] = []  # (kind, name/uri), recorded before each create call
        self.deleted: list[tuple[str, str]] = []
        self.endpoint = None
        self.status: str | None = None

    # ---- the SDK ------------------------------------------------------------------------------------
    @staticmethod
    def _sdk():
        resources = require("sagemaker.core.resources")
        shapes = require("sagemaker.core.shapes")
        transform = require("sagemaker.core.utils.utils").transform
        return resources, shapes, transform

    def _ctx(self) -> dict[str, Any]:
        return {"session": self.session, "region": self.plan.region}

    def _tags(self, shapes) -> list:
        return [shapes.Tag(key=t["Key"], value=t["Value"]) for t in self.plan.aws_tags()]

    # ---- create -------------------------------------------------------------------------------------
    def create(self, timeout_s: float | None = None) -> "Deployment":
        """Upload local weights, create model -> endpoint config -> endpoint, wait for InService.

        On ANY failure or interrupt, deletes what it created and re-raises.
        """
        _REGISTRY[id(self)] = self
        try:
            self._upload_local_artifacts()
            resources, shapes, transform = self._sdk()
            req = self.plan.requests()
            name = self.plan.resource_name
            self.progress(f"creating model {name}")
            self.created.append(("model", name))
            resources.Model.create(
                model_name=name,
                primary_container=shapes.ContainerDefinition(**transform(req["create_model"]["PrimaryContainer"],
                                                                         "ContainerDefinition")),
                execution_role_arn=self.plan.role_arn, tags=self._tags(shapes), **self._ctx())
            self.progress(f"creating endpoint config {name} ({self.plan.instance_type})")
            self.created.append(("endpoint_config", name))
            variants = [shapes.ProductionVariant(**transform(v, "ProductionVariant"))
                        for v in req["create_endpoint_config"]["ProductionVariants"]]
            resources.EndpointConfig.create(endpoint_config_name=name, production_variants=variants,
                                            tags=self._tags(shapes), **self._ctx())
            self.progress(f"creating endpoint {name} (billing starts now: ~${self.plan.hourly_cost_usd()}/h)")
            self.created.append(("endpoint", name))
            self.endpoint = resources.Endpoint.create(endpoint_name=name, endpoint_config_name=name,
                                                      tags=self._tags(shapes), **self._ctx())
            self.wait(timeout_s)
        except BaseException as exc:
            self.progress(f"deployment did not complete ({type(exc).__name__}: {exc}); deleting what was created")
            self.delete()
            raise
        return self

    def _upload_local_artifacts(self) -> None:
        """Local target/head folders go to the plan's S3 prefixes (recorded for deletion)."""
        uploads = []
        if self.plan.target_is_local and self.plan.model_data_s3_uri:
            uploads.append((resolve_local(self.plan.target), self.plan.model_data_s3_uri))
        if self.plan.head_is_local and self.plan.head_s3_uri:
            uploads.append((resolve_local(self.plan.head), self.plan.head_s3_uri))
        if not uploads:
            return
        s3 = self.session.client("s3", region_name=self.plan.region)
        tagging = urllib.parse.urlencode(self.plan.tags)  # S3 wants the tag set as a URL query string
        for folder, uri in uploads:
            if not folder.is_dir():
                raise FileNotFoundError(f"{folder} does not exist: build or download the model first")
            bucket, _, prefix = uri[len("s3://"):].partition("/")
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                key = prefix.rstrip("/") + "/" + path.relative_to(folder).as_posix()
                self.created.append(("s3_object", f"s3://{bucket}/{key}"))
                s3.upload_file(str(path), bucket, key, ExtraArgs={"Tagging": tagging})
            self.progress(f"uploaded {folder} -> {uri}")

    def wait(self, timeout_s: float | None = None) -> str:
        """Poll until InService; DeploymentFailed on Failed (with SageMaker's reason) or on timeout."""
        timeout_s = timeout_s if timeout_s is not None else self.plan.startup_health_timeout_s + 900
        t0 = time.monotonic()
        while True:
            self.endpoint.refresh()
            self.status = str(self.endpoint.endpoint_status)
            elapsed = time.monotonic() - t0
            self.progress(f"[{elapsed:6.0f} s] endpoint {self.plan.resource_name}: {self.status}")
            if self.status == "InService":
                return self.status
            if self.status == "Failed" or self.status not in TRANSITIONAL:
                raise DeploymentFailed(f"endpoint {self.plan.resource_name} is {self.status}: "
                                       f"{self.endpoint.failure_reason}. CloudWatch log group "
                                       f"/aws/sagemaker/Endpoints/{self.plan.resource_name} has the container log")
            if elapsed >= timeout_s:
                raise DeploymentFailed(f"endpoint {self.plan.resource_name} still {self.status} after "
                                       f"{elapsed:.0f} s (timeout {timeout_s:.0f} s)")
            time.sleep(self.poll_s)

    # ---- invoke -------------------------------------------------------------------------------------
    def runtime_client(self):
        return self.session.client("sagemaker-runtime", region_name=self.plan.region)

    def invoke(self, body: dict) -> dict:
        """POST ``body`` (an OpenAI completions/chat request) to the endpoint; the JSON response."""
        out = self.endpoint.invoke(body=json.dumps(body), content_type="application/json", accept="application/json")
        raw = out.body.read() if hasattr(out.body, "read") else out.body
        return json.loads(raw)

    def invoke_stream(self, body: dict) -> Iterator[bytes]:
        """The raw payload parts of a streaming invocation (``"stream": true`` is added)."""
        from peagle_nb.sagemaker.backend import payload_parts

        resp = self.runtime_client().invoke_endpoint_with_response_stream(
            EndpointName=self.plan.resource_name, Body=json.dumps({**body, "stream": True}),
            ContentType="application/json")
        yield from payload_parts(resp["Body"])

    def backend(self, model: str | None = None):
        from peagle_nb.sagemaker.backend import SageMakerBackend

        return SageMakerBackend(self.plan.resource_name, self.runtime_client(), model=model)

    # ---- delete -------------------------------------------------------------------------------------
    def delete(self, wait_timeout_s: float = 1800) -> list[tuple[str, str]]:
        """Delete endpoint, endpoint config, model and uploaded objects; idempotent; never stops halfway.

        Returns what was deleted. A Ctrl-C during deletion is held until every deletion was tried.
        """
        interrupted = None
        failures = []
        order = {"endpoint": 0, "endpoint_config": 1, "model": 2, "s3_object": 3}
        for kind, name in sorted(self.created, key=lambda kn: order[kn[0]]):
            if (kind, name) in self.deleted:
                continue
            try:
                self._delete_one(kind, name, wait_timeout_s)
                self.deleted.append((kind, name))
            except KeyboardInterrupt as exc:  # finish the cleanup first
                interrupted = exc
                failures.append((kind, name, "interrupted"))
            except Exception as exc:
                if _not_found(exc):
                    self.deleted.append((kind, name))
                else:
                    failures.append((kind, name, f"{type(exc).__name__}: {exc}"))
        self.created = [kn for kn in self.created if kn not in self.deleted]
        if not self.created:
            _REGISTRY.pop(id(self), None)
        if failures:
            self.progress("COULD NOT DELETE: " + "; ".join(f"{k} {n} ({why})" for k, n, why in failures)
                          + f"\n  retry: peagle-nb sagemaker cleanup --tag peagle-nb:run={self.plan.run_id} "
                          f"--region {self.plan.region}")
        if interrupted is not None:
            raise interrupted
        return list(self.deleted)

    def _delete_one(self, kind: str, name: str, wait_timeout_s: float) -> None:
        if kind == "s3_object":
            bucket, _, key = name[len("s3://"):].partition("/")
            self.session.client("s3", region_name=self.plan.region).delete_object(Bucket=bucket, Key=key)
            return
        resources, _, _ = self._sdk()
        self.progress(f"deleting {kind.replace('_', ' ')} {name}")
        if kind == "endpoint":
            obj = resources.Endpoint(endpoint_name=name)
        elif kind == "endpoint_config":
            obj = resources.EndpointConfig(endpoint_config_name=name)
        else:
            obj = resources.Model(model_name=name)
        obj._set_client_context(**self._ctx())
        deadline = time.monotonic() + wait_timeout_s
        while True:
            try:
                obj.delete()
                return
            except Exception as exc:  # an endpoint still Creating may refuse deletion: wait and retry
                if kind != "endpoint" or not _busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(self.poll_s)

    def __enter__(self) -> "Deployment":
        return self

    def __exit__(self, *exc) -> None:
        self.delete()


def live_deployments() -> list[Deployment]:
    return list(_REGISTRY.values())


def delete_all() -> int:
    """Delete every deployment (AWS or local) this Python process still holds; the notebook's last cell."""
    n = 0
    for dep in list(_REGISTRY.values()):
        dep.delete()
        n += 1
    return n


def register(obj) -> None:
    """Put any object with ``delete()`` (e.g. a local endpoint) under :func:`delete_all`'s care."""
    _REGISTRY[id(obj)] = obj


def unregister(obj) -> None:
    _REGISTRY.pop(id(obj), None)


atexit.register(lambda: delete_all() if _REGISTRY else None)


# ---- leftovers ---------------------------------------------------------------------------------------
def find_tagged(session, tag: tuple[str, str] = SUITE_TAG, name_contains: str | None = "peagle") -> dict[str, list[str]]:
    """Endpoints, endpoint configs and models carrying ``tag`` (key, value) in the session's region."""
    sm = session.client("sagemaker")
    found: dict[str, list[str]] = {"endpoint": [], "endpoint_config": [], "model": []}
    listing = {"endpoint": ("list_endpoints", "Endpoints", "EndpointName", "EndpointArn"),
               "endpoint_config": ("list_endpoint_configs", "EndpointConfigs", "EndpointConfigName",
                                   "EndpointConfigArn"),
               "model": ("list_models", "Models", "ModelName", "ModelArn")}
    for kind, (op, key, name_key, arn_key) in listing.items():
        kwargs = {"NameContains": name_contains} if name_contains else {}
        token = None
        while True:
            page = getattr(sm, op)(**kwargs, **({"NextToken": token} if token else {}))
            for item in page.get(key, []):
                tags = sm.list_tags(ResourceArn=item[arn_key]).get("Tags", [])
                if any(t["Key"] == tag[0] and t["Value"] == tag[1] for t in tags):
                    found[kind].append(item[name_key])
            token = page.get("NextToken")
            if not token:
                break
    return found


def cleanup_tagged(session, tag: tuple[str, str] = SUITE_TAG, *, dry_run: bool = False,
                   name_contains: str | None = "peagle", progress: Progress = print) -> dict[str, list[str]]:
    """Delete every endpoint, endpoint config and model carrying ``tag`` (endpoints first)."""
    found = find_tagged(session, tag, name_contains)
    sm = session.client("sagemaker")
    ops = {"endpoint": ("delete_endpoint", "EndpointName"),
           "endpoint_config": ("delete_endpoint_config", "EndpointConfigName"),
           "model": ("delete_model", "ModelName")}
    for kind in ("endpoint", "endpoint_config", "model"):
        for name in found[kind]:
            progress(f"{'would delete' if dry_run else 'deleting'} {kind.replace('_', ' ')} {name}")
            if not dry_run:
                op, arg = ops[kind]
                try:
                    getattr(sm, op)(**{arg: name})
                except Exception as exc:
                    if not _not_found(exc):
                        raise
    return found


def studio_role() -> str | None:
    """The execution role of this SageMaker Studio / notebook instance, or None elsewhere."""
    try:
        helper = require("sagemaker.core.helper.session_helper")
        return helper.get_execution_role()
    except Exception:  # not in Studio, no credentials, or no SDK: the caller asks for ROLE_ARN
        return None
