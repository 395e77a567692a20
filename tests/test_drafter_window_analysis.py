"""peagle_nb.analysis.drafter_window: steps split at an output token, on all text and on fresh text."""

import pytest

from peagle_nb.analysis import drafter_window as dw


def test_steps_split_at_the_edge_by_where_each_step_starts():
    # prompt 1: steps start at output tokens 1, 5, 9, 10 (accepted 3, 3, 0, 0); prompt 2: at 1, 3
    g = dw.split_steps([3, 3, 0, 0, 1, 1], [4, 2], [1, 0, 1, 1, 0, 1], edge=9)
    assert g["before"] == [3, 3, 1, 1] and g["after"] == [0, 0]
    assert g["before_fresh"] == [3, 1] and g["after_fresh"] == [0, 0]


def test_a_mismatched_run_is_named():
    with pytest.raises(ValueError, match="one fresh flag per step"):
        dw.split_steps([1, 2], [2], [1], edge=4)
    with pytest.raises(ValueError, match="steps_per_prompt summing"):
        dw.split_steps([1, 2], [3], None, edge=4)


def _run(window, accepted, sha="a", method="peagle", sinks=0):
    return {"family": "v3", "temperature": 0.0, "prompt_set": "code", "method": method, "k": 7, "window": window,
            "sinks": sinks, "accepted_per_step": accepted, "steps_per_prompt": [len(accepted)],
            "step_fresh": [1] * len(accepted), "outputs_sha256": [sha]}


def test_recovery_and_ladder_read_the_runs():
    doc = {"runs": [_run(None, [7, 7, 1, 1]), _run(4, [7, 7, 7]), _run(None, [7, 7, 7], method="eagle3")]}
    (row,) = dw.recovery(doc, "v3", 0.0, "peagle", 4, edge=10)
    assert (row["before_all"], row["after_all"], row["after_window"], row["eagle3_after_all"]) == (8, 2, 8, 8)
    assert row["same_text"] and row["eagle3_after_window"] is None
    assert row["repeated_share_after"] == 0.0  # every step flagged fresh
    assert dw.window_ladder(doc, edge=10) == [{"window": 4, "code": 8.0}, {"window": None, "code": 2.0}]


def test_the_readme_figures_of_the_window_test_are_the_records():
    from peagle_nb.compare.forecast import window_forecast
    from peagle_nb.files import paths
    from peagle_nb.files.results import read_results

    folder = paths.results_dir() / "family_v3"
    win = read_results(folder / "drafter_window_cpu.json.gz")
    lock = read_results(folder / "engine_h100_v3_lockstep.json.gz")
    rows = dw.recovery(win, "v3", 0.0, "peagle", 192)
    greedy = [r for r in window_forecast(lock, win, 192, prompts=4) if r["temperature"] == 0]

    def span(xs, fmt="{:.2f}"):
        return f"{fmt.format(min(xs))}-{fmt.format(max(xs))}"

    readme = " ".join((paths.repo_root() / "README.md").read_text(encoding="utf-8").split())
    assert (f"P-EAGLE's tau past token 256 from {span([r['after_all'] for r in rows])} to "
            f"{span([r['after_window'] for r in rows])}") in readme
    assert (f"forecast {span([r['forecast_window'] for r in greedy])}x EAGLE-3 over 512 greedy tokens (measured "
            f"without: {span([r['measured'] for r in greedy])}x)") in readme


def test_a_windowed_gpu_record_puts_its_measurement_beside_the_window_forecast():
    import copy

    import pytest

    from peagle_nb.compare.forecast import window_forecast
    from peagle_nb.files import paths
    from peagle_nb.files.results import read_results

    folder = paths.results_dir() / "family_v3"
    win = read_results(folder / "drafter_window_cpu.json.gz")
    lock = read_results(folder / "engine_h100_v3_lockstep.json.gz")
    plain = window_forecast(lock, win, 192, prompts=4)
    assert plain and not any("measured_window" in r for r in plain)  # no windowed record: no such column
    # the map's own record standing in for a windowed one: its points land in the new column, the forecast stays
    as_windowed = copy.deepcopy(lock)
    as_windowed["model"]["drafter_window"] = 192
    rows = window_forecast(lock, win, 192, prompts=4, windowed_gpu_doc=as_windowed)
    assert [r["forecast_window"] for r in rows] == [r["forecast_window"] for r in plain]
    assert all(r["measured_window"] == r["measured"] for r in rows)
    assert all(r["error_window"] == pytest.approx(r["forecast_window"] / r["measured"] - 1) for r in rows)
    with pytest.raises(ValueError, match="swept drafter window None, not 192"):
        window_forecast(lock, win, 192, windowed_gpu_doc=lock)  # an unwindowed record named as the windowed one


def test_the_readme_gives_the_gpu_measurements_of_both_remedies_as_the_records_say():
    from peagle_nb.compare import heads_v3
    from peagle_nb.compare.forecast import window_forecast
    from peagle_nb.files import paths
    from peagle_nb.files.results import read_results

    folder = paths.results_dir() / "family_v3"
    lock, s512, base, w192, win = (read_results(folder / f) for f in (
        "engine_h100_v3_lockstep.json.gz", "engine_h100_v3_s512.json.gz", "engine_h100_v3_s512_baseline.json.gz",
        "engine_h100_v3_w192.json.gz", "drafter_window_cpu.json.gz"))
    rows = heads_v3.training_length_rows({"256": base, "512": s512})
    new = [r for r in rows if r["trained_on"] == "512" and r["temperature"] == 0]
    old = [r for r in rows if r["trained_on"] == "256"]
    t1 = [r for r in window_forecast(lock, win, 192, prompts=4, windowed_gpu_doc=w192) if r["temperature"] == 1.0]

    def span(xs):
        return f"{min(xs):.2f}-{max(xs):.2f}"

    readme = " ".join((paths.repo_root() / "README.md").read_text(encoding="utf-8").split())
    assert all(r["peagle_tau_after"] > r["peagle_tau_before"] for r in new)  # "above its tau before it on every set"
    assert f"on every set ({span([r['peagle_tau_after'] for r in new])})" in readme
    assert (f"reaches {span([r['p_over_e_tpot'] for r in new])}x EAGLE-3 over 512 greedy tokens (the 256-position "
            f"pair on the same machine: {span([r['p_over_e_tpot'] for r in old])}x)") in readme
    assert (f"{span([r['measured_window'] for r in t1])}x, where the forecast said "
            f"{span([r['forecast_window'] for r in t1])}x") in readme


def test_the_readme_gives_the_equal_steps_forecast_as_the_records_say():
    from peagle_nb.compare.forecast import pair_forecast
    from peagle_nb.files import paths
    from peagle_nb.files.results import read_results

    folder = paths.results_dir() / "family_v3"
    lock, s512, win, acc = (read_results(folder / f) for f in (
        "engine_h100_v3_lockstep.json.gz", "engine_h100_v3_s512.json.gz", "drafter_window_cpu.json.gz",
        "drafter_window_cpu_s512.json.gz"))
    new = [r["forecast"] for r in pair_forecast(s512, acc, "v3-s512e", prompts=4) if r["temperature"] == 0]
    errors = [r["error"] for doc, fam, measured in ((win, "v3", lock), (acc, "v3-s512", s512))
              for r in pair_forecast(s512, doc, fam, prompts=4, measured_doc=measured) if r["temperature"] == 0]
    readme = " ".join((paths.repo_root() / "README.md").read_text(encoding="utf-8").split())
    assert len(errors) == 6 and min(errors) > 0 and max(new) < 1
    assert (f"forecast {min(new):.2f}-{max(new):.2f}x EAGLE-3 over 512 greedy tokens, a forecast that ran "
            f"{min(errors):.0%}-{max(errors):.0%} high".replace("%-", "-").replace("%", " %")) in readme


def test_a_pair_the_acceptance_record_lacks_is_named_with_the_command():
    import pytest

    from peagle_nb.compare.forecast import pair_forecast

    with pytest.raises(ValueError, match="no runs of family 'v3-x'.*drafter_window --family v3-x"):
        pair_forecast({"regimes": []}, {"runs": [{"family": "v3", "k": 7, "window": None}]}, "v3-x")


def test_the_readme_gives_the_served_equal_steps_recipe_as_the_records_say():
    from peagle_nb.compare import heads_v3
    from peagle_nb.compare.forecast import pair_forecast
    from peagle_nb.files import paths
    from peagle_nb.files.results import read_results

    folder = paths.results_dir() / "family_v3"
    s512, served, acc = (read_results(folder / f) for f in (
        "engine_h100_v3_s512.json.gz", "engine_h100_v3_s512e_rerun.json.gz", "drafter_window_cpu_s512e_rerun.json.gz"))
    ratio = {t: [r["p_over_e_tpot"] for r in heads_v3.regime_table(served) if r["temperature"] == t] for t in (0, 0.7)}
    greedy_err = [r["error"] for r in pair_forecast(s512, acc, "v3-s512e2", prompts=4, measured_doc=served)
                  if r["temperature"] == 0]
    spread = [r["tau_max"] - r["tau_min"] for r in heads_v3.tau_spread_rows(served) if r["temperature"] == 0.7]
    readme = " ".join((paths.repo_root() / "README.md").read_text(encoding="utf-8").split())
    assert (f"reaches {min(ratio[0]):.2f}-{max(ratio[0]):.2f}x EAGLE-3 over 512 greedy tokens (its own forecast "
            f"within 5 %) and {min(ratio[0.7]):.2f}-{max(ratio[0.7]):.2f}x at T=0.7") in readme
    assert max(abs(e) for e in greedy_err) < 0.05 and max(ratio[0]) < 1 < max(ratio[0.7]) < heads_v3.SPEED_RATIO_GOAL
    assert max(spread) > 1  # "by more than a token" (Japanese EAGLE-3)


def test_the_readme_gives_the_eight_prompt_sweep_as_its_record_says():
    from peagle_nb.compare import heads_v3
    from peagle_nb.files import paths
    from peagle_nb.files.results import read_results

    folder = paths.results_dir() / "family_v3"
    p8, p4 = (read_results(folder / f) for f in ("engine_h100_v3_s512e_p8.json.gz",
                                                  "engine_h100_v3_s512e_rerun.json.gz"))
    rows = heads_v3.regime_table(p8)
    ratio = [r["p_over_e_tpot"] for r in rows]
    t1 = [r["p_over_e_tpot"] for r in rows if r["temperature"] == 1.0]
    readme = " ".join((paths.repo_root() / "README.md").read_text(encoding="utf-8").split())
    assert (f"it reaches {min(ratio):.2f}-{max(ratio):.2f}x EAGLE-3 over greedy, T=0.7 and T=1 tokens, a tie only on "
            f"code at T=0.7, and at T=1 EAGLE-3 is faster on every set ({min(t1):.2f}-{max(t1):.2f}x)") in readme
    assert [(r["temperature"], r["prompt_set"]) for r in rows if r["tpot_verdict"] == "tie"] == [(0.7, "code")]
    assert {r["tpot_verdict"] for r in rows if r["temperature"] == 1.0} == {"eagle3 faster"}
    again = heads_v3.prefix_reproduced(p4, p8)  # "its first 4 prompts repeat the earlier lease step for step"
    assert again["same"] == again["compared"] > 0
