"""The same plan served on this machine as the AWS vLLM container would serve it: real vLLM, /ping,
/invocations (plain and streaming through SageMakerBackend), P-EAGLE drafting visible in /metrics and in
the server's log lines (what an endpoint's CloudWatch log group shows), and no process left afterwards.
One server start (~45-70 s on 2 cores)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from peagle_nb.files import paths
from peagle_nb.sagemaker.local import LocalEndpoint, LocalRuntimeClient, ModelError, local_server_args
from peagle_nb.sagemaker.plan import build_plan


def test_local_args_are_the_container_args_with_local_folders(tmp_path):
    target, head = tmp_path / "t", tmp_path / "h"
    target.mkdir(), head.mkdir()
    plan = build_plan("tiny-peagle", target=str(target), head=str(head))
    args = local_server_args(plan)
    assert args[args.index("--model") + 1] == str(target) and "--port" not in args
    spec = json.loads(args[args.index("--speculative-config") + 1])
    assert spec == {"method": "eagle3", "model": str(head), "num_speculative_tokens": 4, "parallel_drafting": True}
    aws = plan.container_args()  # what AWS would run: the same arguments with the container's paths
    assert aws[:2] == ["--port", "8080"] and aws[aws.index("--model") + 1] == "/opt/ml/model"
    assert [a for a in aws[2:] if a.startswith("--")] == [a for a in args if a.startswith("--")]
    with pytest.raises(FileNotFoundError, match="does not exist"):
        local_server_args(build_plan("tiny-peagle", target=str(tmp_path / "missing"), head=str(head)))


def test_runtime_client_checks_the_endpoint_name():
    client = LocalRuntimeClient("http://127.0.0.1:9", "peagle-tiny-1")
    with pytest.raises(ModelError, match="Could not find endpoint"):
        client.invoke_endpoint(EndpointName="other", Body="{}")


@pytest.mark.vllm
@pytest.mark.slow
def test_local_container_emulation_end_to_end():
    pytest.importorskip("vllm")
    models = paths.models_dir()
    for name in ("tiny-target", "tiny-peagle"):
        assert (models / name / "config.json").is_file(), f"{models / name} missing: run `peagle-nb train`"
    plan = build_plan("tiny-peagle")
    k = plan.k
    prompt = "def fibonacci(n):"
    with LocalEndpoint(plan, startup_timeout_s=400) as ep:
        server = ep.server
        assert ep.ping() == 200
        out = ep.invoke({"prompt": prompt, "max_tokens": 12, "temperature": 0.0})
        text = out["choices"][0]["text"]
        assert out["usage"]["completion_tokens"] == 12 and out["model"] == "tiny-target" and text

        backend = ep.backend()

        async def collect():
            return [p async for p in backend.stream(prompt, 12, 0.0)]

        pieces = asyncio.run(collect())
        assert "".join(pieces) == text and len(pieces) >= 2  # same greedy text, streamed in pieces
        metrics = backend.spec_metrics()
        assert metrics["num_drafts"] > 0 and metrics["num_draft_tokens"] == k * metrics["num_drafts"]
        assert len(metrics["accepted_per_position"]) == k
        assert metrics["num_accepted_tokens"] > 0  # the trained P-EAGLE head's drafts are accepted
        pids = server.process_tree()
        assert pids
        # The log lines a SageMaker endpoint sends to CloudWatch tell the same story as /metrics.
        deadline = time.monotonic() + 30  # vLLM logs its statistics every 10 s
        while time.monotonic() < deadline:
            from_log = ep.speculation()
            if from_log["num_drafts"] == metrics["num_drafts"]:
                break
            time.sleep(2)
        assert from_log["num_drafts"] == metrics["num_drafts"] > 0
        assert from_log["num_accepted_tokens"] == metrics["num_accepted_tokens"]
    assert ep.server is None and not server.is_running()
    import psutil

    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def test_a_head_for_another_target_is_refused_before_vllm_starts(tmp_path):
    from peagle_nb.models import checkpoint

    small, big = ({"model_type": "llama", "vocab_size": 512, "hidden_size": h, "intermediate_size": 2 * h,
                   "num_hidden_layers": 8, "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 32,
                   "rms_norm_eps": 1e-5, "max_position_embeddings": 1024, "tie_word_embeddings": True}
                  for h in (64, 128))
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "config.json").write_text(json.dumps(big))
    cfg = checkpoint.head_config_for_target(small, "peagle", num_layers=1, mask_token_id=2, trained_k=6)
    checkpoint.write_head(tmp_path / "head", cfg, checkpoint.random_head_tensors(cfg))
    plan = build_plan("tiny-peagle", target=str(tmp_path / "target"), head=str(tmp_path / "head"))
    with pytest.raises(checkpoint.HeadCheckpointError, match="hidden_size is 128"):
        LocalEndpoint(plan)


def test_a_local_endpoint_logs_vllms_stats_every_second_unless_told_otherwise():
    # the log a benchmark's speculation is read from: the same lines as the container's 10-s ones, sooner
    assert LocalEndpoint(build_plan("tiny-peagle")).env["VLLM_LOG_STATS_INTERVAL"] == "1"
    ep = LocalEndpoint(build_plan("tiny-peagle"), env={"VLLM_LOG_STATS_INTERVAL": "10"})
    assert ep.env["VLLM_LOG_STATS_INTERVAL"] == "10" and ep.env["SM_VLLM_MODEL"] == ep.plan.env["SM_VLLM_MODEL"]
