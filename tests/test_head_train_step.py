"""The draft-head training-step benchmark (notebook 08, family v3): every phase of both heads timed at each length,
the teacher variants measured against fp32, and the summary's arithmetic."""

import json

import pytest

from peagle_nb.files.results import read_results
from peagle_nb.lab.benchmarks import head_train_step as hts


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    out = tmp_path_factory.mktemp("hts") / "steps.json"
    assert hts.main(["--device", "cpu", "--target-config", "data/models/tiny-target/config.json", "--seq-lens", "12,20",
                     "--batch-size", "2", "--draft-vocab-size", "64", "--steps", "3", "--warmup", "1",
                     "--pair-rounds", "2", "--out", str(out)]) == 0
    return read_results(out)


def test_every_phase_of_both_heads_is_timed_at_every_length(record):
    steps = [r for r in record["runs"] if r["measures"] == "training step"]
    assert sorted((r["seq_len"], r["method"]) for r in steps) == [(12, "eagle3"), (12, "peagle"), (20, "eagle3"),
                                                                   (20, "peagle")]
    for r in steps:
        assert set(r["ms"]) == set(hts.PHASES)
        assert all(len(v) == 3 and all(t > 0 for t in v) for v in r["ms"].values())
        assert r["k"] == hts.HEADS[r["method"]]["k"]
        assert r["profile"]["top_ops"] and r["profile"]["self_time_ms_total"] > 0


def test_teacher_variants_are_measured_against_fp32(record):
    var = [r for r in record["runs"] if r["measures"] == "teacher variants"]
    assert [v["variant"] for v in var[0]["variants"]] == ["fp32", "tf32", "bf16_autocast"]
    fp32 = var[0]["variants"][0]
    assert fp32["features_max_abs_diff"] == 0 and fp32["argmax_agreement"] == 1.0
    assert 0 < var[0]["variants"][2]["features_max_abs_diff"] < 1  # bf16 moves the features, a little


def test_summary_medians_and_shares(record):
    rows = hts.summarize(record)
    step = next(r for r in rows if r["method"] == "peagle" and r["seq_len"] == 20)
    run = next(r for r in record["runs"] if r.get("method") == "peagle" and r["seq_len"] == 20)
    assert step["teacher_ms"] == sorted(run["ms"]["teacher"])[1]
    assert sum(step[f"{p}_share"] for p in hts.PHASES) == pytest.approx(1.0)
    assert step["step_p10_ms"] <= step["step_ms"] <= step["step_p90_ms"]
    fp32 = next(r for r in rows if r["method"] == "teacher fp32" and r["seq_len"] == 12)
    assert fp32["over_fp32"] == 1.0
    json.dumps(rows)  # plain numbers, ready for a table


def test_the_pair_step_is_timed_with_separate_and_shared_teachers(record):
    pair = [r for r in record["runs"] if r["measures"] == "pair step"]
    assert [r["seq_len"] for r in pair] == [12, 20]
    # on a CPU TF32 does not exist: fp32 only, each variant in 2 interleaved rounds of 3 steps
    assert [(v["teacher"], v["tf32"]) for v in pair[0]["variants"]] == [("separate", False), ("shared", False)]
    assert hts.pair_variants(hts.torch.device("cuda")) == hts.PAIR_VARIANTS
    for v in pair[0]["variants"]:
        assert len(v["ms"]) == 6 and all(t > 0 for t in v["ms"]) and len(v["round_medians_ms"]) == 2
        assert v["round_medians_ms"][0] == sorted(v["ms"][:3])[1]
    rows = [r for r in hts.summarize(record) if r["method"].startswith("pair") and r["seq_len"] == 12]
    assert rows[0]["method"] == "pair, separate teacher, fp32" and rows[0]["speedup"] == 1.0
    assert all(r["step_p10_ms"] <= r["step_ms"] <= r["step_p90_ms"] for r in rows)
    assert rows[1]["speedup_min"] <= rows[1]["speedup"] <= rows[1]["speedup_max"] and rows[1]["rounds"] == 2
    assert rows[1]["pair_steps_per_s"] == pytest.approx(1000.0 / rows[1]["step_ms"])
    cost = hts.pair_costs(record, {})[0]
    v = pair[0]["variants"]
    paired = [b / s for b, s in zip(v[0]["round_medians_ms"], v[1]["round_medians_ms"])]
    assert cost["one teacher: speed-up (measured, min)"] == min(paired) and cost["rounds measured"] == 2
    assert cost["one TF32 teacher: speed-up (measured)"] is None  # not timed on a CPU


def test_a_shared_teacher_runs_the_target_once_per_pair_step(monkeypatch):
    import torch

    from peagle_nb.training.drafter_config import DrafterTrainConfig

    target = hts.random_target("data/models/tiny-target/config.json", torch.device("cpu"))
    calls = []
    real = hts.TargetTeacher.__call__
    monkeypatch.setattr(hts.TargetTeacher, "__call__", lambda self, x: calls.append(1) or real(self, x))
    cfgs = {k: DrafterTrainConfig(kind=k, out=None, k=s["k"], batch_size=2, draft_vocab_size=64, seq_len=12)
            for k, s in hts.HEADS.items()}
    tokens = torch.randint(2, target.config.vocab_size - 1, (4, 12))
    for shared, per_step in ((False, 2), (True, 1)):
        calls.clear()
        hts.time_pair_steps(target, tokens, cfgs, 2, 1, torch.device("cpu"), shared=shared, tf32=False)
        assert len(calls) == 3 * per_step
