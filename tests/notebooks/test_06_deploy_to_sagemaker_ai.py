"""Notebook 06 in smoke mode with the local container emulation: the plan, the image/AMI choice, the container
translation, the validation demo, three real vLLM endpoints (P-EAGLE, EAGLE-3, plain: ping, invoke, stream,
benchmark, speculation from the server log), the cost per million tokens, the JumpStart spec and cleanup, with no
vLLM process left (this is the suite's test of the local emulation end to end: tests/sagemaker/test_local_emulation.py
holds its parts)."""

import json

import pytest

from peagle_nb.files import paths

NOTEBOOK = "06_deploy_to_sagemaker_ai.ipynb"
SMOKE_PARAMETERS = {"SMOKE": True, "MODE": "local", "PRESET": "tiny-peagle"}
SMOKE_CONCURRENCY = (1, 2)
SMOKE_PROMPTS, SMOKE_MAX_TOKENS = 4, 16
# The table's price for the tiny presets' instance (peagle_nb/sagemaker/instances.py) and GPT-OSS-20B's.
G5_XLARGE_USD_PER_HOUR = 1.41
G6E_2XLARGE_USD_PER_HOUR = 2.81

pytestmark = [pytest.mark.notebook, pytest.mark.vllm, pytest.mark.slow]


def usd_per_million(usd_per_hour, tokens_per_s):
    return usd_per_hour / (tokens_per_s * 3600) * 1e6


def test_notebook_06_local_emulation(run_notebook):
    pytest.importorskip("vllm")
    pytest.importorskip("sagemaker.core")
    rec = run_notebook(NOTEBOOK, **SMOKE_PARAMETERS).records

    # The plan: tiny P-EAGLE on the cheapest listed NVIDIA instance; GPT-OSS-20B's image from the SDK table.
    assert (rec["plan.method"], rec["plan.k"], rec["plan.instance_type"]) == ("peagle", 4, "ml.g5.xlarge")
    assert rec["plan.hourly_usd"] == G5_XLARGE_USD_PER_HOUR
    assert rec["plan.gpt_oss_20b.image_from_sdk"] is True
    assert rec["plan.gpt_oss_20b.hourly_usd"] == G6E_2XLARGE_USD_PER_HOUR
    # Image and AMI: CUDA 13 + the CUDA 13 AMI on g6e; JumpStart's CUDA 12.9 image on g7e, default AMI.
    assert (rec["images.g6e.cuda"], rec["images.g6e.ami"]) == (13, "al2023-ami-sagemaker-inference-gpu-4-1")
    assert (rec["images.g7e.cuda"], rec["images.g7e.ami"]) == (12, "default")
    # The container: one command line for all entrypoint generations; "true" would break the oldest.
    assert rec["container.same_on_all_entrypoints"] is True and rec["container.portability_problems"] == 0
    assert rec["container.legacy_true_is_a_value"] is True and rec["container.n_args"] >= 12
    # Five planted mistakes, each caught before any AWS call (no role + no region + no image is 3 problems).
    assert rec["validation.cases_caught"] == 5 and rec["validation.problems_caught"] == 7
    assert rec["dry_run.n_requests"] == 3

    # The endpoint: real vLLM behind /ping and /invocations.
    assert rec["local.ping_status"] == 200 and rec["local.startup_s"] > 1
    assert rec["invoke.completion_tokens"] == SMOKE_MAX_TOKENS  # ignore_eos: exactly max_tokens
    assert rec["invoke.stream_equals_plain"] is True

    # Benchmarks: every request answered with exactly max_tokens tokens, for all three methods.
    for method in ("peagle", "eagle3", "none"):
        for c in SMOKE_CONCURRENCY:
            key = f"bench.{method}.c{c}"
            assert rec[f"{key}.n_failed"] == 0
            assert rec[f"{key}.output_tokens"] == SMOKE_PROMPTS * SMOKE_MAX_TOKENS
            assert rec[f"{key}.tokens_per_s"] == pytest.approx(rec[f"{key}.output_tokens"] / rec[f"{key}.wall_s"])
    for c in SMOKE_CONCURRENCY:
        # tau = 1 + accepted drafts per step (K=4) through the SageMaker route; 2.18-2.96 measured with
        # greedy decoding on the shipped tiny models.
        assert 1.5 < rec[f"bench.peagle.c{c}.tau"] <= 5.0
        assert 1.2 < rec[f"bench.eagle3.c{c}.tau"] <= 4.0
        assert f"bench.none.c{c}.tau" not in rec

    # Speculation from the server's log lines (what CloudWatch shows for an endpoint) equals /metrics.
    assert rec["live.peagle.n_log_lines"] >= 1
    assert rec["live.peagle.num_drafts"] == rec["live.peagle.metrics_num_drafts"] > 0
    assert rec["live.peagle.num_accepted_tokens"] == rec["live.peagle.metrics_num_accepted_tokens"]
    assert rec["live.peagle.tau"] == pytest.approx(1 + rec["live.peagle.num_accepted_tokens"]
                                                   / rec["live.peagle.num_drafts"])
    assert rec["live.eagle3.num_drafts"] > 0 and 1.0 < rec["live.eagle3.tau"] <= 4.0
    assert rec["live.none.num_drafts"] == 0 and rec["live.none.speculation_off_caught"] is True

    # Cost per million output tokens = price / (tokens/s x 3600) x 1e6, at the instance table's price.
    assert (rec["cost.instance_type"], rec["cost.usd_per_hour"]) == ("ml.g5.xlarge", G5_XLARGE_USD_PER_HOUR)
    for c in SMOKE_CONCURRENCY:
        tps = {m: rec[f"bench.{m}.c{c}.tokens_per_s"] for m in ("peagle", "eagle3", "none")}
        for method, value in tps.items():
            assert rec[f"cost.{method}.c{c}.usd_per_million"] == pytest.approx(
                usd_per_million(G5_XLARGE_USD_PER_HOUR, value))
        assert rec[f"cost.peagle.c{c}.vs_none"] == pytest.approx(tps["none"] / tps["peagle"])
        assert rec[f"cost.peagle.c{c}.vs_eagle3"] == pytest.approx(tps["eagle3"] / tps["peagle"])
        assert rec[f"cost.eagle3.c{c}.vs_none"] == pytest.approx(tps["none"] / tps["eagle3"])

    # Published GPT-OSS-20B ratios: P-EAGLE's cost relative to EAGLE-3 is 1 / the ratio, per workload.
    published = json.loads((paths.data_dir() / "results" / "published.json").read_text())
    ratios = [r for r in published["runs"]
              if r["kind"] == "speedup_over_eagle3" and r["target"] == "openai/gpt-oss-20b"]
    assert len(ratios) >= 6
    for r in ratios:
        slug = "".join(ch if ch.isalnum() else "_" for ch in r["prompt_set"].lower())
        slug = "_".join(part for part in slug.split("_") if part)
        assert rec[f"published_cost.{slug}.c{r['concurrency']}.peagle_vs_eagle3"] == pytest.approx(
            1 / r["speedup_over_eagle3"])
    assert rec["published_cost.instances"][0] == "ml.g6e.xlarge" and "ml.g7e.2xlarge" in rec["published_cost.instances"]

    # JumpStart: the recorded spec's P-EAGLE configuration, K=3, CUDA 12.9 image.
    assert rec["jumpstart.configs"] == ["lmi-optimized", "lmi"]
    assert (rec["jumpstart.k"], rec["jumpstart.parallel_drafting"], rec["jumpstart.image_cuda"]) == (3, True, 12)

    # Gated cells said why they skipped; the cleanup cell left nothing.
    skipped = {k[len("skipped."):]: v for k, v in rec.items() if k.startswith("skipped.")}
    assert "AWS credentials" in skipped["aws_deploy"] and "RUN_JUMPSTART" in skipped["jumpstart_deploy"]
    assert "baselines" not in skipped
    assert rec["cleanup.deleted_endpoints"] == 1 and rec["cleanup.live_after"] == 0
    # ...and no process of the three local endpoints is left (each had an API server and an engine core at least)
    assert rec["cleanup.local_processes_started"] >= 3 * 2 and rec["cleanup.local_processes_alive"] == 0


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
    assert "needs a deployed endpoint" in rec["skipped.baselines"]
    assert not any(k.startswith(("bench.", "invoke.", "local.", "live.", "cost.")) for k in rec)
    assert rec["dry_run.n_requests"] == 3 and rec["cleanup.deleted_endpoints"] == 0
    assert rec["jumpstart.k"] == 3  # the recorded spec is read without AWS
