"""Notebook 06 in smoke mode with the local container emulation: the plan, the container translation, the
validation demo, one real vLLM endpoint (ping, invoke, stream, benchmark) and the cleanup cell."""

import pytest

NOTEBOOK = "06_deploy_to_sagemaker_ai.ipynb"
SMOKE_PARAMETERS = {"SMOKE": True, "MODE": "local", "PRESET": "tiny-peagle"}

pytestmark = [pytest.mark.notebook, pytest.mark.vllm, pytest.mark.slow]


def test_notebook_06_local_emulation(run_notebook):
    pytest.importorskip("vllm")
    pytest.importorskip("sagemaker.core")
    rec = run_notebook(NOTEBOOK, **SMOKE_PARAMETERS).records
    from peagle_nb.sagemaker.instances import hourly_cost

    # The plan: tiny P-EAGLE, the instance table's price; the big plan's image came from the SDK table.
    assert (rec["plan.method"], rec["plan.k"]) == ("peagle", 4)
    assert rec["plan.hourly_usd"] == hourly_cost(rec["plan.instance_type"])
    assert rec["plan.gpt_oss_20b.image_from_sdk"] is True and rec["plan.gpt_oss_20b.hourly_usd"] > 1
    assert rec["validation.problems_caught"] >= 5  # memory, K, role, region, image (see the cell)
    assert rec["dry_run.n_requests"] == 3
    # The endpoint: real vLLM behind /ping and /invocations.
    assert rec["local.ping_status"] == 200 and 1 < rec["local.startup_s"] < 600
    assert rec["invoke.completion_tokens"] == 16  # smoke max_tokens, greedy
    assert rec["invoke.stream_equals_plain"] is True
    for c in (1, 2):
        assert rec[f"bench.peagle.c{c}.tokens_per_s"] > 0.5
        assert rec[f"bench.peagle.c{c}.ttft_ms"] > 0
        # tau = 1 + accepted drafts per step (K=4): the trained head's drafts are accepted through the
        # SageMaker route (2.18 measured with greedy decoding on the shipped tiny models).
        assert 1.2 < rec[f"bench.peagle.c{c}.tau"] <= 5.0
    # Gated cells said why they skipped; the cleanup cell left nothing.
    skipped = {k[len("skipped."):]: v for k, v in rec.items() if k.startswith("skipped.")}
    assert "AWS credentials" in skipped["aws_deploy"] and "SMOKE=False" in skipped["eagle3_baseline"]
    assert "jumpstart_deploy" in skipped
    assert rec["cleanup.deleted_endpoints"] == 1 and rec["cleanup.live_after"] == 0


def test_notebook_06_aws_mode_without_credentials_skips_and_says_why(run_notebook, monkeypatch):
    """MODE='aws' on a machine without AWS access: the plan is still built and validated, every AWS cell
    is skipped with its reason, nothing is deployed, and the cleanup cell finds nothing to delete."""
    pytest.importorskip("sagemaker.core")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", "/nonexistent-home-for-aws-test")  # no ~/.aws/credentials
    rec = run_notebook(NOTEBOOK, SMOKE=True, MODE="aws").records
    assert rec["prereq.aws_ready"] is False
    assert "credentials absent" in rec["skipped.aws_deploy"]
    assert not any(k.startswith(("bench.", "invoke.", "local.")) for k in rec)
    assert rec["dry_run.n_requests"] == 3 and rec["cleanup.deleted_endpoints"] == 0
