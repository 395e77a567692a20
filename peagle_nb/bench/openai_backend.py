"""``OpenAIBackend``: the benchmark ``Backend`` for any OpenAI-compatible server (vLLM here or on a GPU),
using the standard ``openai`` client with streaming. Explained in notebook 05."""

from __future__ import annotations

from typing import Any, AsyncIterator

from peagle_nb.bench.client import UsageChunk


class OpenAIBackend:
    def __init__(self, base_url: str, model: str | None = None, api_key: str = "none", ignore_eos: bool = True,
                 server_config: dict | None = None, timeout_s: float = 600):
        """``base_url`` with or without ``/v1``. ``ignore_eos`` (a vLLM extension, sent in ``extra_body``)
        makes every request produce exactly ``max_tokens``, so runs are comparable across methods."""
        try:
            import openai
        except ImportError as exc:
            raise ImportError("OpenAIBackend needs the `openai` package: install the `cpu` or `gpu` extra") from exc
        root = base_url.rstrip("/")
        self.root = root[: -len("/v1")] if root.endswith("/v1") else root
        self.name = "openai"
        self.ignore_eos = ignore_eos
        self.server_config = server_config or {}
        self._openai = openai
        self._api_key = api_key
        self._timeout = timeout_s
        self._client = None
        self.model = model or self._first_model()

    def _first_model(self) -> str:
        client = self._openai.OpenAI(base_url=self.root + "/v1", api_key=self._api_key, timeout=30)
        models = client.models.list().data
        if not models:
            raise RuntimeError(f"{self.root}/v1/models lists no model: pass model=...")
        return models[0].id

    def _async_client(self):
        # One client per event loop: run_benchmark may run each call in a fresh loop.
        import asyncio

        loop = asyncio.get_running_loop()
        if self._client is None or self._client[0] is not loop:
            self._client = (loop, self._openai.AsyncOpenAI(base_url=self.root + "/v1", api_key=self._api_key,
                                                           timeout=self._timeout, max_retries=0))
        return self._client[1]

    async def stream(self, prompt: str, max_tokens: int, temperature: float) -> AsyncIterator[str]:
        client = self._async_client()
        extra = {"ignore_eos": True} if self.ignore_eos else None
        resp = await client.completions.create(model=self.model, prompt=prompt, max_tokens=max_tokens,
                                               temperature=temperature, stream=True,
                                               stream_options={"include_usage": True}, extra_body=extra)
        async for chunk in resp:
            if chunk.choices:
                text = chunk.choices[0].text
                if text:
                    yield text
            if getattr(chunk, "usage", None) is not None and chunk.usage.completion_tokens is not None:
                yield UsageChunk(chunk.usage.completion_tokens)

    def spec_metrics(self) -> dict | None:
        from peagle_nb.serving.metrics import read_spec_decode_metrics

        try:
            return read_spec_decode_metrics(self.root)
        except Exception:  # noqa: BLE001 - endpoints without /metrics: acceptance unknown
            return None

    def describe(self) -> dict[str, Any]:
        """The server's configuration for the results file: what we were told plus what it reports
        (``/v1/models`` entry, ``/version`` on vLLM)."""
        import json
        import urllib.request

        info: dict[str, Any] = {"base_url": self.root, "model": self.model}
        for key, path in (("models", "/v1/models"), ("version", "/version")):
            try:
                with urllib.request.urlopen(self.root + path, timeout=5) as resp:  # noqa: S310
                    data = json.loads(resp.read())
                info[key] = data.get("data", data) if key == "models" else data.get("version", data)
            except Exception:  # noqa: BLE001 - optional endpoints
                continue
        return {**info, **self.server_config}
