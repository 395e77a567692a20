"""The real vLLM OpenAI-compatible server, started ONCE: OpenAI client (streaming), /metrics acceptance,
the benchmark client and CLI against it, and cleanup: no process of the server's tree survives a normal
exit, an exception inside the with-block, a failed startup (clear error quoting the log) or Ctrl-C
during startup."""

from __future__ import annotations

import json
import signal
import time

import pytest

from peagle_nb.serving import config, metrics
from peagle_nb.serving.server import ManagedVllmServer, ServerStartupError, alive_pids as alive

pytestmark = [pytest.mark.vllm, pytest.mark.slow]



def _server_args(tiny_models, k):
    spec = config.speculative_config(str(tiny_models.peagle), k, parallel_drafting=True)
    return ["--model", str(tiny_models.target), "--dtype", "float32", "--enforce-eager", "--max-model-len", "512",
            "--max-num-seqs", "4", "--speculative-config", json.dumps(spec)]


def test_real_server_openai_metrics_bench_and_cleanup_on_error(tiny_models, tmp_path):
    import openai

    from peagle_nb.files import results
    from peagle_nb.cli import main as cli_main

    k = tiny_models.peagle_k
    srv = ManagedVllmServer(_server_args(tiny_models, k), startup_timeout_s=400, log_path=tmp_path / "server.log")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in ["The cat", "def main():", "Once upon"]))
    out = tmp_path / "bench.json"
    with pytest.raises(RuntimeError, match="boom"):
        with srv:
            tree = srv.process_tree()
            assert len(tree) >= 2  # api server + engine core
            # vLLM's CPU build: the engine core runs the model, no worker process of its own (server_environment)
            assert "Worker pid=" not in srv.log_path.read_text(errors="replace")
            client = openai.OpenAI(base_url=srv.openai_base_url, api_key="none")
            before = metrics.read_spec_decode_metrics(srv.base_url)
            chunks = list(client.completions.create(model=srv.model, prompt="The cat", max_tokens=12, temperature=0,
                                                    stream=True, extra_body={"ignore_eos": True}))
            text = "".join(c.choices[0].text for c in chunks if c.choices)
            full = client.completions.create(model=srv.model, prompt="The cat", max_tokens=12, temperature=0,
                                             extra_body={"ignore_eos": True})
            assert text == full.choices[0].text and full.usage.completion_tokens == 12  # greedy: same text twice
            d = metrics.delta(before, metrics.read_spec_decode_metrics(srv.base_url))
            assert d["num_drafts"] > 0 and d["num_draft_tokens"] == k * d["num_drafts"]
            assert d["tau"] == pytest.approx(1 + d["num_accepted_tokens"] / d["num_drafts"])
            # the benchmark CLI against the live server
            rc = cli_main(["bench", "--base-url", srv.base_url, "--prompts", str(prompts), "--concurrency", "1,2",
                           "--max-tokens", "8", "--method", "peagle", "--k", str(k), "--source", "vllm",
                           "--out", str(out)])
            assert rc == 0
            raise RuntimeError("boom")
    assert srv.proc is None
    deadline = time.monotonic() + 10
    while alive(tree) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alive(tree) == []
    doc = results.read_results(out)
    assert [r["concurrency"] for r in doc["runs"]] == [1, 2]
    for r in doc["runs"]:
        assert r["n_failed"] == 0 and r["output_tokens"] == 8 * r["n_requests"]
        assert all(isinstance(r[key], float) for key in ("ttft_ms", "tpot_ms", "tokens_per_s"))  # all measured
        assert r["num_draft_tokens"] == k * r["num_drafts"] > 0 and 1.0 <= r["tau"] <= k + 1
    assert doc["model"]["server"]["model"] == str(tiny_models.target)


def test_startup_failure_raises_with_the_log_tail_and_leaves_nothing(tiny_models, tmp_path):
    srv = ManagedVllmServer(["--model", str(tiny_models.target), "--dtype", "not-a-dtype"], startup_timeout_s=120,
                            log_path=tmp_path / "bad.log")
    with pytest.raises(ServerStartupError, match="exited with code") as err:
        with srv:
            pass
    assert "not-a-dtype" in str(err.value)  # vLLM's own complaint, quoted from the log
    assert srv.proc is None


def test_ctrl_c_during_startup_stops_the_whole_tree(tiny_models, tmp_path):
    srv = ManagedVllmServer(_server_args(tiny_models, 2), startup_timeout_s=120, log_path=tmp_path / "int.log")
    seen: list[int] = []

    def interrupt(signum, frame):
        seen.extend(srv.process_tree())
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 4.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            srv.start()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert seen and srv.proc is None
    time.sleep(0.5)
    assert alive(seen) == []
