"""The parts of the local container emulation (the same plan served on this machine as the AWS vLLM container would
serve it) that need no server. The emulation end to end (real vLLM, /ping, /invocations plain and streaming through
SageMakerBackend, P-EAGLE drafting in /metrics and in the server's log lines, what an endpoint's CloudWatch log group
shows, and no process left afterwards) is notebook 06's smoke run: tests/notebooks/test_06_deploy_to_sagemaker_ai.py,
three endpoints where a test of its own here started one more."""

from __future__ import annotations

import json

import pytest

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


def test_local_endpoints_start_together_and_all_or_none(monkeypatch):
    import threading

    from peagle_nb.sagemaker import local

    together = threading.Barrier(2, timeout=60)  # each start waits for the other: one after the other never meets
    deleted = []

    def start(self):
        together.wait()
        if self.plan.method == "none":
            raise RuntimeError("the plain endpoint did not come up")
        self.server = object()
        return self

    monkeypatch.setattr(local.LocalEndpoint, "start", start)
    monkeypatch.setattr(local.LocalEndpoint, "delete", lambda self: deleted.append(self.plan.method))
    eps = local.start_local_endpoints([build_plan("tiny-eagle3"), build_plan("tiny-peagle")])
    assert [ep.plan.method for ep in eps] == ["eagle3", "peagle"] and all(ep.server for ep in eps) and not deleted
    together.reset()
    with pytest.raises(RuntimeError, match="plain endpoint did not come up"):
        local.start_local_endpoints([build_plan("tiny-eagle3"), build_plan("tiny-none")])
    assert sorted(deleted) == ["eagle3", "none"]  # the one that came up is deleted (delete() is idempotent)
