"""The public P-EAGLE heads' serve K and trained K live in one table that the presets and the published numbers
read."""

import pytest

from peagle_nb.lab.records import published_sources
from peagle_nb.models.public_heads import PUBLIC_PEAGLE_HEADS, public_head
from peagle_nb.serving.presets import PRESETS


def test_presets_of_the_public_heads_serve_the_cards_k():
    served = {p.head: p for p in PRESETS.values()}
    for head in PUBLIC_PEAGLE_HEADS.values():
        preset = served[head.repo]
        assert (preset.target, preset.k, preset.trained_k) == (head.target, head.serve_k, head.trained_k)
        assert preset.k <= preset.trained_k


def test_published_serving_defaults_come_from_the_table():
    records = [r for r in published_sources.other_runs() if r["kind"] == "serving_default"]
    assert {(r["head"], r["k"], r["trained_k"]) for r in records} == {
        (h.repo, h.serve_k, h.trained_k) for h in PUBLIC_PEAGLE_HEADS.values()}


def test_unknown_head_names_the_known_ones():
    with pytest.raises(KeyError, match="amazon/GPT-OSS-20B-P-EAGLE"):
        public_head("someone/else")
