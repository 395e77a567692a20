"""SageMakerBackend: SSE re-assembly across arbitrary PayloadPart boundaries, plain and async streaming."""

import asyncio
import io
import json

import pytest

from peagle_nb.sagemaker.backend import EndpointStreamError, SageMakerBackend, iter_sse_text, payload_parts

PIECES = ["Spec", "ulative", " décodage", " ✓"]


def sse(pieces, chat=False) -> bytes:
    out = b""
    for p in pieces:
        choice = {"index": 0, "delta": {"content": p}} if chat else {"index": 0, "text": p}
        out += b"data: " + json.dumps({"choices": [choice]}, ensure_ascii=False).encode() + b"\n\n"
    return out + b"data: [DONE]\n\n"


@pytest.mark.parametrize("size", [1, 3, 7, 64, 10_000])
@pytest.mark.parametrize("chat", [False, True])
def test_reassembles_events_split_anywhere(size, chat):
    raw = sse(PIECES, chat)  # multi-byte UTF-8 characters get split by small sizes too
    chunks = [raw[i:i + size] for i in range(0, len(raw), size)]
    assert list(iter_sse_text(chunks)) == PIECES


def test_usage_event_becomes_a_token_count():
    from peagle_nb.bench.client import UsageChunk

    raw = sse(PIECES)[: -len(b"data: [DONE]\n\n")]
    raw += b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}\n\ndata: [DONE]\n\n'
    out = list(iter_sse_text([raw[i:i + 9] for i in range(0, len(raw), 9)]))
    assert out[:-1] == PIECES and isinstance(out[-1], UsageChunk) and out[-1].completion_tokens == 4


def test_errors_are_raised():
    with pytest.raises(EndpointStreamError, match="context length"):
        list(iter_sse_text([b'data: {"error": {"message": "context length exceeded"}}\n\n']))
    with pytest.raises(EndpointStreamError, match="ModelStreamError"):
        list(payload_parts([{"PayloadPart": {"Bytes": b"x"}}, {"ModelStreamError": {"ErrorCode": "StreamBroken"}}]))


class FakeRuntime:
    """The two sagemaker-runtime calls, answering like the vLLM container (moto has no streaming)."""

    def __init__(self):
        self.requests = []

    def invoke_endpoint(self, **kw):
        self.requests.append(kw)
        return {"Body": io.BytesIO(json.dumps({"choices": [{"text": "".join(PIECES)}]}).encode())}

    def invoke_endpoint_with_response_stream(self, **kw):
        self.requests.append(kw)
        raw = sse(PIECES)
        return {"Body": iter([{"PayloadPart": {"Bytes": raw[i:i + 5]}} for i in range(0, len(raw), 5)])}


def test_backend_protocol_plain_and_async():
    rt = FakeRuntime()
    backend = SageMakerBackend("peagle-ep", rt, model="tiny-target")
    assert backend.invoke("hi", 8)["choices"][0]["text"] == "".join(PIECES)

    async def collect():
        return [piece async for piece in backend.stream("hi", 8, 0.0)]

    assert asyncio.run(collect()) == PIECES
    body = json.loads(rt.requests[-1]["Body"])
    assert body == {"prompt": "hi", "max_tokens": 8, "temperature": 0.0, "model": "tiny-target", "ignore_eos": True,
                    "stream": True, "stream_options": {"include_usage": True}}
    assert json.loads(rt.requests[0]["Body"])["ignore_eos"] is True  # plain invocations too: same output length
    assert rt.requests[-1]["EndpointName"] == "peagle-ep"
    assert backend.spec_metrics() is None  # a SageMaker endpoint exposes no /metrics
    quiet = SageMakerBackend("peagle-ep", rt, ignore_eos=False)
    quiet.invoke("hi", 8)
    assert "ignore_eos" not in json.loads(rt.requests[-1]["Body"])
