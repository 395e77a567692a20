"""Create, wait for, invoke and delete a SageMaker AI endpoint, leaving nothing behind.

Explained in notebook 06. :class:`Deployment` drives the SageMaker Python SDK v3 resource classes
(``sagemaker.core.resources.Model`` / ``EndpointConfig`` / ``Endpoint``); the requests come from
:meth:`DeploymentPlan.requests` (boto3 shape, converted with the SDK's own ``transform``), so the dry run
prints exactly what is sent. Requests to the endpoint (invoke, stream, the benchmark) go through the one
sagemaker-runtime client :func:`runtime_client` configures (explicit timeouts, no silent re-send), after
``request_checks`` has refused what the endpoint would refuse; a ``ModelError`` becomes
:class:`EndpointRefused` with the model server's message. The wait for InService is derived from the
model's own timeouts (:meth:`Deployment.wait_budget_s`) and printed before anything is created.

Safety rules, all tested against moto (tests/sagemaker/):
- every resource is tagged (``peagle-nb:suite``, ``peagle-nb:run``), uploaded S3 objects included, so
  ``peagle-nb sagemaker cleanup --tag peagle-nb:run=<id>`` can find leftovers from a crashed kernel;
- deletion goes through the boto3 client the deployment already holds (any SDK version), and whether an
  endpoint is busy is read from its status (DescribeEndpoint), never from the text of an error: AWS
  refuses to delete an endpoint that is still Creating/Updating, so deletion waits until it is not;
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

from peagle_nb.sagemaker._deps import MissingDependency, require, sdk_version_problems
from peagle_nb.sagemaker.plan import SUITE_TAG, DeploymentPlan, PlanError, resolve_local, validate_plan

Progress = Callable[[str], None]
_REGISTRY: dict[int, "Deployment"] = {}
# Endpoint statuses AWS will not delete from: wait until the endpoint leaves them.
TRANSITIONAL = ("Creating", "Updating", "SystemUpdating", "RollingBack")
# SageMaker AI real-time endpoints stop waiting for the container's answer after 60 s.
INVOCATION_LIMIT_S = 60
CONNECT_TIMEOUT_S = 10
# Creating an endpoint = placing the instance, downloading the model (bounded by the variant's
# ModelDataDownloadTimeoutInSeconds), starting the container until /ping answers (bounded by its
# ContainerStartupHealthCheckTimeoutInSeconds). The first step has no timeout of its own: this allowance.
PROVISIONING_ALLOWANCE_S = 900


class DeploymentFailed(RuntimeError):
    """The endpoint reached Failed (reason from DescribeEndpoint) or did not get InService in time."""


def _error_code(exc: BaseException) -> str:
    return ((getattr(exc, "response", None) or {}).get("Error") or {}).get("Code", "")


def _gone(exc: BaseException) -> bool:
    """SageMaker answers Describe* of a missing resource with ValidationException (its own
    ``endpoint_deleted`` waiter relies on exactly that), S3 with NoSuchKey/NoSuchBucket."""
    return _error_code(exc) in ("ValidationException", "ResourceNotFound", "NoSuchKey", "NoSuchBucket", "404")


def require_tested_sdk() -> None:
    """Refuse an SDK outside the tested range before creating anything (see ``_deps.SDK_RANGE``)."""
    problems = sdk_version_problems()
    if problems:
        raise MissingDependency("; ".join(problems))


def boto_session(region: str | None):
    boto3 = require("boto3")
    return boto3.Session(region_name=region)


def endpoint_status(sm, name: str) -> str | None:
    """DescribeEndpoint's status, or None when the endpoint does not exist."""
    try:
        return sm.describe_endpoint(EndpointName=name)["EndpointStatus"]
    except Exception as exc:
        if _gone(exc):
            return None
        raise


def delete_endpoint_when_idle(sm, name: str, *, timeout_s: float, poll_s: float, progress: Progress = print,
                              retry_hint: str = "") -> None:
    """Delete endpoint ``name`` once its status allows it; a refused call is retried only while the status
    says the endpoint is busy, so the decision never depends on an error message's wording."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = endpoint_status(sm, name)
        if status is None or status == "Deleting":
            return
        if status not in TRANSITIONAL:
            try:
                sm.delete_endpoint(EndpointName=name)
                return
            except Exception:
                status = endpoint_status(sm, name)
                if status is None or status == "Deleting":
                    return
                if status not in TRANSITIONAL:
                    raise
        if time.monotonic() >= deadline:
            raise DeploymentFailed(f"endpoint {name} is still {status} after {timeout_s:.0f} s; AWS deletes an "
                                   f"endpoint only once it leaves {status}. {retry_hint}".strip())
        progress(f"endpoint {name} is {status}: AWS deletes it only after that; waiting {poll_s:g} s")
        time.sleep(poll_s)


def _delete_if_present(describe, delete) -> None:
    """Delete a model or endpoint config; an error is ignored only if the resource is then gone."""
    try:
        delete()
    except Exception:
        try:
            describe()
        except Exception as exc:  # noqa: BLE001 -- SDK and boto3 errors differ; anything but "gone" re-raises below
            if _gone(exc):
                return
        raise


def runtime_client(session, region: str | None, max_concurrency: int = 10):
    """THE sagemaker-runtime client of this package (invoke, stream, benchmark, CLI), with an explicit config:

    - no automatic retry (``total_max_attempts=1``, standard mode): a generation that timed out or was
      throttled may already be running on the endpoint; sending it again silently would bill and time it
      twice and hide the failure, so the caller sees the error and decides;
    - a read timeout above SageMaker's own 60 s invocation limit, so the endpoint's timeout is the one
      reported (botocore's default, 60 s, would race it), and a 10 s connect timeout;
    - a connection per request in flight (``max_concurrency``; botocore's pool of 10 would queue requests
      on the client and count the wait as latency)."""
    config = require("botocore.config").Config(
        connect_timeout=CONNECT_TIMEOUT_S, read_timeout=INVOCATION_LIMIT_S + 30,
        retries={"mode": "standard", "total_max_attempts": 1}, max_pool_connections=max(10, int(max_concurrency)))
    return session.client("sagemaker-runtime", region_name=region, config=config)


class EndpointRefused(RuntimeError):
    """The endpoint answered a request with an error (SageMaker's ModelError: the container refused it)."""


def refusal_message(exc: BaseException, endpoint: str) -> str | None:
    """A readable account of a ModelError (the container's status and message), or None for other errors."""
    if _error_code(exc) != "ModelError":
        return None
    response = getattr(exc, "response", None) or {}
    status = response.get("OriginalStatusCode")
    detail = response.get("OriginalMessage") or (response.get("Error") or {}).get("Message") or str(exc)
    return (f"endpoint {endpoint} refused the request (the model server answered{f' {status}' if status else ''}): "
            f"{str(detail).strip()[:400]}. Its log: CloudWatch log group /aws/sagemaker/Endpoints/{endpoint}")


class Deployment:
    """One endpoint's life. ``with Deployment(plan).create() as dep: dep.invoke({...})`` deletes on exit."""

    def __init__(self, plan: DeploymentPlan, *, session=None, progress: Progress = print, poll_s: float = 15.0):
        self.plan = validate_plan(plan, for_aws=True)
        require_tested_sdk()
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
        timeout_s = self.announce_wait(timeout_s)
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

    def wait_budget_s(self) -> float:
        """How long creation may take by the deployed model's own timeouts (see PROVISIONING_ALLOWANCE_S)."""
        return (self.plan.model_data_download_timeout_s + self.plan.startup_health_timeout_s
                + PROVISIONING_ALLOWANCE_S)

    def announce_wait(self, timeout_s: float | None) -> float:
        """Print, before anything is created, how long the deployment will wait and why; return that."""
        budget = self.wait_budget_s() if timeout_s is None else float(timeout_s)
        why = (f"model download <= {self.plan.model_data_download_timeout_s} s + container health check <= "
               f"{self.plan.startup_health_timeout_s} s + instance placement <= {PROVISIONING_ALLOWANCE_S} s")
        self.progress(f"will wait up to {budget:.0f} s (~{budget / 60:.0f} min) for InService: "
                      + (why if timeout_s is None else f"as asked (the model's own timeouts allow {why})"))
        return budget

    def wait(self, timeout_s: float | None = None) -> str:
        """Poll until InService; DeploymentFailed on Failed (with SageMaker's reason) or after ``timeout_s``
        (default: :meth:`wait_budget_s`). A progress line per poll says how long it has waited of how long."""
        timeout_s = timeout_s if timeout_s is not None else self.wait_budget_s()
        t0 = time.monotonic()
        while True:
            self.endpoint.refresh()
            self.status = str(self.endpoint.endpoint_status)
            elapsed = time.monotonic() - t0
            self.progress(f"[{elapsed:6.0f} s of up to {timeout_s:.0f} s] endpoint {self.plan.resource_name}: "
                          f"{self.status}")
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
    def runtime_client(self, max_concurrency: int = 10):
        """:func:`runtime_client` for this endpoint's region."""
        return runtime_client(self.session, self.plan.region, max_concurrency)

    def _checked(self, body: dict) -> str:
        from peagle_nb.sagemaker.request_checks import body_problems

        problems = body_problems(body, self.plan)
        if problems:
            raise PlanError(problems)
        return json.dumps(body)

    def invoke(self, body: dict) -> dict:
        """POST ``body`` (an OpenAI completions/chat request) to the endpoint; the JSON response. A request the
        endpoint would refuse raises PlanError before it is sent; a refusal by the endpoint, EndpointRefused."""
        try:
            out = self.runtime_client().invoke_endpoint(EndpointName=self.plan.resource_name, Body=self._checked(body),
                                                        ContentType="application/json", Accept="application/json")
        except Exception as exc:
            message = refusal_message(exc, self.plan.resource_name)
            if message is None:
                raise
            raise EndpointRefused(message) from exc
        raw = out["Body"].read() if hasattr(out["Body"], "read") else out["Body"]
        return json.loads(raw)

    def invoke_stream(self, body: dict) -> Iterator[bytes]:
        """The raw payload parts of a streaming invocation (``"stream": true`` is added)."""
        from peagle_nb.sagemaker.backend import payload_parts

        try:
            resp = self.runtime_client().invoke_endpoint_with_response_stream(
                EndpointName=self.plan.resource_name, Body=self._checked({**body, "stream": True}),
                ContentType="application/json")
        except Exception as exc:
            message = refusal_message(exc, self.plan.resource_name)
            if message is None:
                raise
            raise EndpointRefused(message) from exc
        yield from payload_parts(resp["Body"])

    def backend(self, model: str | None = None, max_concurrency: int = 64):
        """The benchmark's ``Backend`` for this endpoint, on a client sized for ``max_concurrency``."""
        from peagle_nb.sagemaker.backend import SageMakerBackend

        return SageMakerBackend(self.plan.resource_name, self.runtime_client(max_concurrency), model=model)

    def speculation(self, since_s: float | None = None, wait_s: float = 0.0) -> dict:
        """Acceptance from the container log (vLLM's spec-decode lines in CloudWatch Logs) since
        ``since_s`` (epoch seconds), with a verdict (active / inactive / unreadable, see
        :mod:`peagle_nb.sagemaker.observe`); waits up to ``wait_s`` for the first line (vLLM logs every 10 s
        and CloudWatch takes a little longer). Never raises for a log it cannot read: that is the verdict."""
        from peagle_nb.sagemaker import observe

        deadline = time.monotonic() + wait_s
        while True:
            stats = observe.read_endpoint_speculation(self.session, self.plan.resource_name, k=self.plan.k,
                                                      since_s=since_s, region=self.plan.region)
            if stats["verdict"] == "active" or time.monotonic() >= deadline or (
                    stats["verdict"] == "unreadable" and "AccessDenied" in stats["verdict_reason"]):
                return stats
            time.sleep(min(self.poll_s, 15.0) or 1.0)

    # ---- delete -------------------------------------------------------------------------------------
    def delete(self, wait_timeout_s: float | None = None) -> list[tuple[str, str]]:
        """Delete endpoint, endpoint config, model and uploaded objects; idempotent; never stops halfway.

        An endpoint still Creating is waited for (AWS refuses to delete it before), up to
        ``wait_timeout_s`` (default: the plan's download + health-check limits, SageMaker's own bound).
        Returns what was deleted. A Ctrl-C during deletion is held until every deletion was tried.
        """
        if wait_timeout_s is None:
            wait_timeout_s = self.wait_budget_s()
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
            except Exception as exc:  # noqa: BLE001 -- every resource gets its try; failures are reported together
                failures.append((kind, name, f"{type(exc).__name__}: {exc}"))
        self.created = [kn for kn in self.created if kn not in self.deleted]
        if not self.created:
            _REGISTRY.pop(id(self), None)
        if failures:
            self.progress("COULD NOT DELETE: " + "; ".join(f"{k} {n} ({why})" for k, n, why in failures)
                          + f"\n  retry: {self._cleanup_command()}")
        if interrupted is not None:
            raise interrupted
        return list(self.deleted)

    def _cleanup_command(self) -> str:
        bucket = f" --s3-bucket {self.plan.s3_bucket}" if self.plan.s3_bucket else ""
        return (f"peagle-nb sagemaker cleanup --tag peagle-nb:run={self.plan.run_id} --region {self.plan.region}"
                + bucket)

    def _delete_one(self, kind: str, name: str, wait_timeout_s: float) -> None:
        if kind == "s3_object":
            bucket, _, key = name[len("s3://"):].partition("/")
            self.session.client("s3", region_name=self.plan.region).delete_object(Bucket=bucket, Key=key)
            return
        sm = self.session.client("sagemaker", region_name=self.plan.region)
        self.progress(f"deleting {kind.replace('_', ' ')} {name}")
        if kind == "endpoint":
            delete_endpoint_when_idle(sm, name, timeout_s=wait_timeout_s, poll_s=self.poll_s, progress=self.progress,
                                      retry_hint=f"Retry: {self._cleanup_command()}")
        elif kind == "endpoint_config":
            _delete_if_present(lambda: sm.describe_endpoint_config(EndpointConfigName=name),
                               lambda: sm.delete_endpoint_config(EndpointConfigName=name))
        else:
            _delete_if_present(lambda: sm.describe_model(ModelName=name), lambda: sm.delete_model(ModelName=name))

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
def find_tagged(session, tag: tuple[str, str] = SUITE_TAG, name_contains: str | None = "peagle",
                s3_bucket: str | None = None) -> dict[str, list[str]]:
    """Endpoints, endpoint configs, models and S3 objects carrying ``tag`` (key, value) in the session's
    region. S3 objects are looked for under the tagged models' data sources and, with ``s3_bucket``,
    under that bucket's ``peagle-nb/`` prefix (where uploads go); only objects with the tag count."""
    sm = session.client("sagemaker")
    found: dict[str, list[str]] = {"endpoint": [], "endpoint_config": [], "model": [], "s3_object": []}
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
    prefixes = {(s3_bucket, "peagle-nb/")} if s3_bucket else set()
    for name in found["model"]:
        prefixes |= _model_data_prefixes(sm.describe_model(ModelName=name))
    found["s3_object"] = _tagged_objects(session.client("s3"), sorted(prefixes), tag)
    return found


def _model_data_prefixes(model: dict) -> set[tuple[str, str]]:
    containers = [model.get("PrimaryContainer") or {}, *(model.get("Containers") or [])]
    uris = []
    for c in containers:
        uris.append(((c.get("ModelDataSource") or {}).get("S3DataSource") or {}).get("S3Uri"))
        uris += [(s.get("S3DataSource") or {}).get("S3Uri") for s in c.get("AdditionalModelDataSources") or []]
    out = set()
    for uri in uris:
        if uri and uri.startswith("s3://"):
            bucket, _, prefix = uri[len("s3://"):].partition("/")
            out.add((bucket, prefix))
    return out


def _tagged_objects(s3, prefixes: list[tuple[str, str]], tag: tuple[str, str]) -> list[str]:
    """s3:// URIs of objects under ``prefixes`` whose tag set holds ``tag``. A bucket we may not list or
    read tags in (JumpStart's, another account's) holds nothing of ours: skipped."""
    found = []
    for bucket, prefix in prefixes:
        try:
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
                for obj in page.get("Contents", []):
                    tags = s3.get_object_tagging(Bucket=bucket, Key=obj["Key"]).get("TagSet", [])
                    if any(t["Key"] == tag[0] and t["Value"] == tag[1] for t in tags):
                        found.append(f"s3://{bucket}/{obj['Key']}")
        except Exception as exc:
            if _error_code(exc) not in ("AccessDenied", "NoSuchBucket", "AllAccessDisabled"):
                raise
    return sorted(set(found))


def cleanup_tagged(session, tag: tuple[str, str] = SUITE_TAG, *, dry_run: bool = False,
                   name_contains: str | None = "peagle", s3_bucket: str | None = None, poll_s: float = 15.0,
                   wait_timeout_s: float = 4200, progress: Progress = print) -> dict[str, list[str]]:
    """Delete every endpoint, endpoint config, model and S3 object carrying ``tag`` (endpoints first)."""
    found = find_tagged(session, tag, name_contains, s3_bucket)
    sm = session.client("sagemaker")
    s3 = session.client("s3")
    for kind in ("endpoint", "endpoint_config", "model", "s3_object"):
        for name in found[kind]:
            progress(f"{'would delete' if dry_run else 'deleting'} {kind.replace('_', ' ')} {name}")
            if dry_run:
                continue
            if kind == "endpoint":
                delete_endpoint_when_idle(sm, name, timeout_s=wait_timeout_s, poll_s=poll_s, progress=progress)
            elif kind == "endpoint_config":
                _delete_if_present(lambda n=name: sm.describe_endpoint_config(EndpointConfigName=n),
                                   lambda n=name: sm.delete_endpoint_config(EndpointConfigName=n))
            elif kind == "model":
                _delete_if_present(lambda n=name: sm.describe_model(ModelName=n),
                                   lambda n=name: sm.delete_model(ModelName=n))
            else:
                bucket, _, key = name[len("s3://"):].partition("/")
                s3.delete_object(Bucket=bucket, Key=key)
    return found


def studio_role() -> str | None:
    """The execution role of this SageMaker Studio / notebook instance, or None elsewhere."""
    try:
        helper = require("sagemaker.core.helper.session_helper")
        return helper.get_execution_role()
    except Exception:  # noqa: BLE001 -- not in Studio, no credentials, or no SDK: the caller asks for ROLE_ARN
        return None
