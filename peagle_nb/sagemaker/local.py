"""Local container emulation: run a deployment plan on this machine exactly as the AWS vLLM container would.

Explained in notebook 06. No Docker and no AWS: the plan's ``SM_VLLM_*`` environment goes through the
container's own translation (:func:`peagle_nb.sagemaker.container.container_args`), the container paths
SageMaker would populate from S3 (``/opt/ml/model``, ``/opt/ml/additional-model-data-sources/<channel>``)
are replaced by the local folders that hold those files, and the result is started as a real vLLM
OpenAI server (``peagle_nb.serving.server.ManagedVllmServer``). vLLM's server has SageMaker's routes,
``GET /ping`` and ``POST /invocations`` (``vllm/entrypoints/serve/sagemaker/api_router.py``), so
:class:`LocalRuntimeClient` (same methods as boto3's sagemaker-runtime client) sends the same requests
an endpoint receives. The only differences: a free local port instead of 8080, and this machine's CPU.
"""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator, Mapping

from peagle_nb.sagemaker import container
from peagle_nb.sagemaker.plan import DeploymentPlan, resolve_local, validate_plan


def default_mounts(plan: DeploymentPlan) -> dict[str, str]:
    """Container path -> local folder for each local model folder of the plan."""
    mounts = {}
    if plan.target_is_local:
        mounts[container.MODEL_DIR] = str(resolve_local(plan.target))
    if plan.head_is_local:
        mounts[container.channel_path(plan.head_channel)] = str(resolve_local(plan.head))
    return mounts


def local_server_args(plan: DeploymentPlan, mounts: Mapping[str, str] | None = None,
                      entrypoint: str = "current") -> list[str]:
    """The container's ``vllm serve`` arguments for ``plan``, with container paths mapped to local folders
    and ``--port 8080`` removed (the managed server chooses a free port and adds ``--host/--port``)."""
    mounts = default_mounts(plan) if mounts is None else dict(mounts)
    for path, local in mounts.items():
        if not Path(local).is_dir():
            raise FileNotFoundError(f"{local} (mounted at {path}) does not exist: build the tiny models first "
                                    "(see data/models/README) or point the plan at an existing folder")
    args = container.container_args(plan.env, model_dir_has_files=container.MODEL_DIR in mounts,
                                    entrypoint=entrypoint)
    assert args[:2] == ["--port", str(container.PORT)]
    return container.remap_paths(args[2:], mounts)


class ModelError(RuntimeError):
    """The container answered /invocations with an error status (SageMaker's ModelError)."""


class LocalRuntimeClient:
    """The two sagemaker-runtime calls the suite uses, served by a local /invocations route."""

    def __init__(self, base_url: str, endpoint_name: str, timeout_s: float = 300):
        self.base_url = base_url.rstrip("/")
        self.endpoint_name = endpoint_name
        self.timeout_s = timeout_s

    def _request(self, EndpointName: str, Body, ContentType: str = "application/json", Accept: str | None = None):
        if EndpointName != self.endpoint_name:
            raise ModelError(f"Could not find endpoint {EndpointName!r} (this local endpoint is "
                             f"{self.endpoint_name!r})")
        data = Body.encode() if isinstance(Body, str) else bytes(Body)
        headers = {"Content-Type": ContentType, **({"Accept": Accept} if Accept else {})}
        # base_url is the local server this module started (http://127.0.0.1:PORT), never a user's URL
        req = urllib.request.Request(f"{self.base_url}/invocations", data=data, headers=headers,  # noqa: S310
                                     method="POST")
        try:
            return urllib.request.urlopen(req, timeout=self.timeout_s)  # noqa: S310 -- the local server, see above
        except urllib.error.HTTPError as exc:
            raise ModelError(f"Received client error ({exc.code}) from primary: {exc.read()[:500]!r}") from None

    def invoke_endpoint(self, *, EndpointName: str, Body, ContentType: str = "application/json",
                        Accept: str | None = None, **_) -> dict:
        with self._request(EndpointName, Body, ContentType, Accept) as resp:
            return {"Body": io.BytesIO(resp.read()), "ContentType": resp.headers.get("Content-Type"),
                    "InvokedProductionVariant": "AllTraffic"}

    def invoke_endpoint_with_response_stream(self, *, EndpointName: str, Body, ContentType: str = "application/json",
                                             Accept: str | None = None, **_) -> dict:
        resp = self._request(EndpointName, Body, ContentType, Accept)

        def events() -> Iterator[dict]:
            with resp:
                while True:
                    chunk = resp.read1(4096)  # whatever arrived: chunks split events anywhere, as on AWS
                    if not chunk:
                        return
                    yield {"PayloadPart": {"Bytes": chunk}}

        return {"Body": events(), "ContentType": resp.headers.get("Content-Type"),
                "InvokedProductionVariant": "AllTraffic"}


LOCAL_LOG_STATS_INTERVAL_S = "1"  # VLLM_LOG_STATS_INTERVAL of a local endpoint (a plan's env may set its own)


class LocalEndpoint:
    """A plan served on this machine: ``with LocalEndpoint(plan).start() as ep: ep.ping(); ep.invoke({...})``.

    Stopping (``delete()``, the ``with`` exit, :func:`peagle_nb.sagemaker.deploy.delete_all`, or an error
    or Ctrl-C during start-up) stops vLLM and its children (``ManagedVllmServer`` guarantees that).
    """

    def __init__(self, plan: DeploymentPlan, *, mounts: Mapping[str, str] | None = None,
                 startup_timeout_s: float = 300, log_path: str | Path | None = None,
                 env: Mapping[str, str] | None = None):
        self.plan = validate_plan(plan, for_aws=False)
        self.args = local_server_args(plan, mounts)
        if plan.target_is_local and plan.head_is_local:  # a mismatched head crashes vLLM's worker mid-request
            from peagle_nb.serving.config import check_local_head

            check_local_head(resolve_local(plan.head), resolve_local(plan.target), plan.k, plan.method)
        self.startup_timeout_s = startup_timeout_s
        self.log_path = log_path
        # the container's process sees the whole model environment; vLLM's stats line comes every second here
        # (10 s in the container), so reading the log after a request waits a second, not ten: same lines, sooner
        self.env = {"VLLM_LOG_STATS_INTERVAL": LOCAL_LOG_STATS_INTERVAL_S, **plan.env, **(env or {})}
        self.server = None
        self.log_file: Path | None = None  # the server's log (the container's CloudWatch stream on AWS)
        self.pids: list[int] = []  # vLLM's processes once started (API server, engine core, theirs)

    @property
    def name(self) -> str:
        return self.plan.resource_name

    @property
    def base_url(self) -> str:
        if self.server is None:
            raise RuntimeError("the local endpoint is not running: call start()")
        return self.server.base_url

    def start(self) -> "LocalEndpoint":
        from peagle_nb.sagemaker.deploy import register
        from peagle_nb.serving.server import ManagedVllmServer

        server = ManagedVllmServer(self.args, env=self.env, startup_timeout_s=self.startup_timeout_s,
                                   log_path=self.log_path)
        self.log_file = server.log_path
        server.start()  # raises (and stops vLLM again) if it does not come up, Ctrl-C included
        self.server, self.pids = server, server.process_tree()
        register(self)
        return self

    def ping(self) -> int:
        """HTTP status of ``GET /ping`` (200 when the engine is healthy), as SageMaker's health check sees it."""
        try:
            with urllib.request.urlopen(f"{self.base_url}/ping", timeout=10) as resp:  # noqa: S310 -- local server
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code

    def runtime_client(self) -> LocalRuntimeClient:
        return LocalRuntimeClient(self.base_url, self.name)

    def invoke(self, body: dict) -> dict:
        resp = self.runtime_client().invoke_endpoint(EndpointName=self.name, Body=json.dumps(body),
                                                     ContentType="application/json")
        return json.loads(resp["Body"].read())

    def invoke_stream(self, body: dict) -> Iterator[bytes]:
        resp = self.runtime_client().invoke_endpoint_with_response_stream(
            EndpointName=self.name, Body=json.dumps({**body, "stream": True}), ContentType="application/json")
        from peagle_nb.sagemaker.backend import payload_parts

        yield from payload_parts(resp["Body"])

    def backend(self, model: str | None = None, max_concurrency: int | None = None):
        """The benchmark's ``Backend`` (``max_concurrency`` matters only for an AWS client's pool)."""
        from peagle_nb.sagemaker.backend import SageMakerBackend

        return SageMakerBackend(self.name, self.runtime_client(), model=model, metrics_url=self.base_url)

    def log_lines(self) -> list[str]:
        """The server's log so far (kept after :meth:`delete`)."""
        if self.log_file is None or not self.log_file.is_file():
            return []
        return self.log_file.read_text(encoding="utf-8", errors="replace").splitlines()

    def speculation(self, settle_s: float = 0.0) -> dict:
        """Acceptance from vLLM's spec-decode log lines, as a SageMaker endpoint's log group shows it.

        vLLM writes a line per stats interval (10 s on AWS, 1 s here), so the newest requests show up late:
        ``settle_s`` waits up to that long for the log to account for every draft ``/metrics`` has counted (the
        emulation can read both; an endpoint only has the log)."""
        import time

        from peagle_nb.sagemaker import observe
        from peagle_nb.serving.metrics import read_spec_decode_metrics

        deadline = time.monotonic() + settle_s
        while True:
            stats = observe.spec_decode_from_log(self.log_lines(), self.plan.k)
            if time.monotonic() >= deadline or self.server is None:
                return stats
            if stats["num_drafts"] == read_spec_decode_metrics(self.base_url)["num_drafts"]:
                return stats
            time.sleep(1.0)

    def processes_alive(self) -> list[int]:
        """Those of :attr:`pids` still running (zombies aside): none once :meth:`delete` has returned."""
        from peagle_nb.serving.server import alive_pids

        return alive_pids(self.pids)

    def delete(self) -> None:
        from peagle_nb.sagemaker.deploy import unregister

        server, self.server = self.server, None
        if server is not None:
            server.stop()
        unregister(self)

    def __enter__(self) -> "LocalEndpoint":
        return self if self.server is not None else self.start()

    def __exit__(self, *exc) -> None:
        self.delete()


def start_local_endpoints(plans: list[DeploymentPlan], **kwargs) -> list[LocalEndpoint]:
    """One started :class:`LocalEndpoint` per plan (``kwargs`` go to each), all started at the same time: a start is
    mostly waiting on vLLM's processes, so on 2 cores two take about as long as one
    (data/results/server_start_cpu.json). All or none: if one fails, those that came up are deleted and the first
    error is raised. Notebook 06 starts its two baselines so."""
    from concurrent.futures import ThreadPoolExecutor

    endpoints = [LocalEndpoint(plan, **kwargs) for plan in plans]  # a bad plan or head fails here, before any start
    with ThreadPoolExecutor(max_workers=max(len(endpoints), 1)) as pool:
        errors = [f.exception() for f in [pool.submit(ep.start) for ep in endpoints]]
    if any(errors):
        for ep in endpoints:
            ep.delete()
        raise next(e for e in errors if e is not None)
    return endpoints
