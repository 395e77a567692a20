"""``SageMakerBackend``: the benchmark client's ``Backend`` protocol over a SageMaker AI endpoint.

Explained in notebook 06. The benchmark client (``peagle_nb.bench``) only needs
``async stream(prompt, max_tokens, temperature) -> AsyncIterator[str]`` and ``spec_metrics()``.
Here a request is an OpenAI completions body sent with ``invoke_endpoint_with_response_stream``;
SageMaker passes the container's server-sent events through in ``PayloadPart`` chunks that may split an
event (or a UTF-8 character) anywhere, so :func:`iter_sse_text` re-assembles lines before parsing.

``runtime`` is anything with the sagemaker-runtime client's ``invoke_endpoint_with_response_stream``:
boto3's client for a real endpoint (``deploy.runtime_client``: explicit timeouts, no silent retry, a
connection per request in flight), or :class:`peagle_nb.sagemaker.local.LocalRuntimeClient`
for the local container emulation, so the same code path is exercised for real on this machine.
Requests carry ``ignore_eos`` (a vLLM extension) as the OpenAI backend's do: every request produces
exactly ``max_tokens``, so methods are compared on the same amount of output.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import AsyncIterator, Iterable, Iterator


class EndpointStreamError(RuntimeError):
    pass


def payload_parts(events: Iterable[dict]) -> Iterator[bytes]:
    """Bytes of each ``PayloadPart`` event; raise on ``ModelStreamError`` / ``InternalStreamFailure``."""
    for event in events:
        if "PayloadPart" in event:
            yield event["PayloadPart"]["Bytes"]
        elif event:
            raise EndpointStreamError(f"the endpoint's stream failed: {event}")


def iter_sse_text(chunks: Iterable[bytes]) -> Iterator[str]:
    """Text pieces of an OpenAI-style SSE stream (completions ``text`` or chat ``delta.content``).

    Chunks may end mid-line or mid-character; stops at ``data: [DONE]``; an ``error`` object raises.
    """
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            piece = _parse_line(line)
            if piece is _DONE:
                return
            if piece or _is_usage(piece):
                yield piece
    piece = _parse_line(buffer)  # a stream that ended without a trailing newline
    if piece is not _DONE and (piece or _is_usage(piece)):
        yield piece


def _is_usage(piece) -> bool:
    return hasattr(piece, "completion_tokens")


_DONE = object()


def _parse_line(line: bytes):
    line = line.strip()
    if not line.startswith(b"data:"):
        return None
    payload = line[len(b"data:"):].strip()
    if payload == b"[DONE]":
        return _DONE
    obj = json.loads(payload)
    if "error" in obj:
        raise EndpointStreamError(f"the model server returned an error: {obj['error']}")
    usage = obj.get("usage") or {}
    if not obj.get("choices") and usage.get("completion_tokens") is not None:
        # The last event with stream_options.include_usage: lets the benchmark count tokens exactly.
        from peagle_nb.bench.client import UsageChunk

        return UsageChunk(usage["completion_tokens"])
    out = []
    for choice in obj.get("choices", []):
        piece = choice.get("text")
        if piece is None:
            piece = (choice.get("delta") or {}).get("content")
        if piece:
            out.append(piece)
    return "".join(out)


def completion_body(prompt: str, max_tokens: int, temperature: float, model: str | None = None,
                    stream: bool = False, ignore_eos: bool = False) -> dict:
    body = {"prompt": prompt, "max_tokens": int(max_tokens), "temperature": float(temperature)}
    if model:
        body["model"] = model
    if ignore_eos:
        body["ignore_eos"] = True
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


class SageMakerBackend:
    """Benchmark ``Backend`` for a SageMaker endpoint (real, or the local emulation)."""

    def __init__(self, endpoint_name: str, runtime, *, model: str | None = None, metrics_url: str | None = None,
                 ignore_eos: bool = True):
        self.endpoint_name = endpoint_name
        self.runtime = runtime
        self.model = model
        self.metrics_url = metrics_url  # only the local emulation exposes vLLM's /metrics
        self.ignore_eos = ignore_eos

    @property
    def name(self) -> str:
        return f"sagemaker:{self.endpoint_name}"

    def describe(self) -> dict:
        """Written into benchmark results (``model.server``)."""
        return {"endpoint": self.endpoint_name, "transport": type(self.runtime).__name__, "model": self.model,
                "ignore_eos": self.ignore_eos}

    def invoke(self, prompt: str, max_tokens: int = 32, temperature: float = 0.0) -> dict:
        """One plain (non-streaming) completion; the parsed JSON response."""
        resp = self.runtime.invoke_endpoint(
            EndpointName=self.endpoint_name, ContentType="application/json", Accept="application/json",
            Body=json.dumps(completion_body(prompt, max_tokens, temperature, self.model, ignore_eos=self.ignore_eos)))
        body = resp["Body"]
        return json.loads(body.read() if hasattr(body, "read") else body)

    def stream_sync(self, prompt: str, max_tokens: int, temperature: float) -> Iterator[str]:
        resp = self.runtime.invoke_endpoint_with_response_stream(
            EndpointName=self.endpoint_name, ContentType="application/json", Accept="text/event-stream",
            Body=json.dumps(completion_body(prompt, max_tokens, temperature, self.model, stream=True,
                                            ignore_eos=self.ignore_eos)))
        yield from iter_sse_text(payload_parts(resp["Body"]))

    async def stream(self, prompt: str, max_tokens: int, temperature: float) -> AsyncIterator[str]:
        """Async face of :meth:`stream_sync`: the blocking boto3 stream runs in a thread."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        done = object()

        def produce():
            try:
                for piece in self.stream_sync(prompt, max_tokens, temperature):
                    loop.call_soon_threadsafe(queue.put_nowait, piece)
            except BaseException as exc:  # noqa: BLE001 -- handed to the consumer, which re-raises it
                loop.call_soon_threadsafe(queue.put_nowait, exc)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, done)

        thread = threading.Thread(target=produce, name="sagemaker-stream", daemon=True)
        thread.start()
        while True:
            item = await queue.get()
            if item is done:
                break
            if isinstance(item, BaseException):
                raise item
            yield item

    def spec_metrics(self) -> dict | None:
        """vLLM's spec-decode counters where reachable (local emulation); None for a SageMaker endpoint,
        whose container port is not exposed (acceptance then comes from CloudWatch/container logs)."""
        if not self.metrics_url:
            return None
        from peagle_nb.serving.metrics import read_spec_decode_metrics

        return read_spec_decode_metrics(self.metrics_url)
