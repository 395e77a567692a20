import pytest

from peagle_nb.compare import published as pub


@pytest.fixture(scope="module")
def doc():
    return pub.load_published()


def test_anchors_parse(doc):
    a = pub.anchors_20b(doc)
    assert set(a) == {"MT-Bench", "HumanEval", "SPEED-Bench"}
    assert a["MT-Bench"]["tau"] == {"peagle": 3.70, "eagle3": 3.27}
    assert a["SPEED-Bench"]["ratio"] == {1: 1.69, 64: 1.25}
    assert a["HumanEval"]["best_k"] == {"peagle": 7, "eagle3": 3}


def test_depth_decay_from_the_qwen_card(doc):
    assert 0.95 < pub.depth_decay(doc) < 1.0


def test_calibration_reproduces_the_shipped_profile(doc):
    anchors = pub.anchors_20b(doc)
    profile, rms = pub.calibrate(anchors, pub.depth_decay(doc))
    for name in ("v0", "e0", "p0", "v1", "v_expert"):
        assert getattr(profile, name) == pytest.approx(getattr(pub.GPT_OSS_20B_B200, name)), name
    assert rms < 0.1  # the six published ratios within ~10 % (log RMS)


def test_published_pattern_holds(doc):
    anchors = pub.anchors_20b(doc)
    decay = pub.depth_decay(doc)
    rows = pub.check_pattern(pub.GPT_OSS_20B_B200, anchors, decay)
    assert pub.pattern_holds(rows) == {"peagle_best_near_7": True, "eagle3_best_near_3": True,
                                       "gain_shrinks_with_concurrency": True}
    # and the check can fail: a profile where EAGLE-3's passes are free prefers deep EAGLE-3 drafting
    cheap = pub.GPT_OSS_20B_B200.__class__(**{**pub.GPT_OSS_20B_B200.to_dict(), "e0": 0.0, "e1": 0.0})
    assert not pub.pattern_holds(pub.check_pattern(cheap, anchors, decay))["eagle3_best_near_3"]
