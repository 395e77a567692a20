import pytest

from peagle_nb.compare.kernel_cost import prep_overhead


def _runs():
    rows = []
    for kernel, t, e in (("draft_inputs", 2.0, 120.0), ("hidden_expand", 1.5, 7.5)):
        for b in (1, 64):
            for k in (3, 7):
                rows.append({"kernel": kernel, "variant": "triton", "batch_size": b, "k": k, "device_us": t * b})
                rows.append({"kernel": kernel, "variant": "eager", "batch_size": b, "k": k, "device_us": e * b})
    return rows + [{"kernel": "draft_inputs", "variant": "correctness", "max_abs_diff": 0}]


def test_prep_overhead_picks_the_nearest_configuration():
    out = prep_overhead(_runs(), batch=1, k=7)
    assert out["kernels"]["draft_inputs"]["saved_ms"] == pytest.approx(0.118)
    assert out["saved_ms"] == pytest.approx(0.118 + 0.006)
    measured_at = prep_overhead(_runs(), batch=50, k=8)["kernels"]["hidden_expand"]["measured_at"]
    assert measured_at == {"batch_size": 64, "k": 7}


def test_prep_overhead_names_missing_data():
    with pytest.raises(ValueError, match="hidden_expand"):
        prep_overhead([r for r in _runs() if r["kernel"] != "hidden_expand"])
