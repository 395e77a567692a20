"""A drafter attention window (engine.drafting): a drafter row at position p attends to positions p-W+1..p and the
first ``sinks`` only. The reference head masks exactly those keys, the lean engine (its kernel under test in
tests/test_kernels_decode_layer.py) decodes the same tokens with the same accepted counts, decoding stays lossless,
and a window wider than the sequence changes nothing."""

import pytest
import torch

from peagle_nb.engine import DrafterWindow, SpecDecoder
from peagle_nb.engine.lean import LeanDecoder
from peagle_nb.models.heads import DraftHead, config_for_target
from tests.engine.helpers import tiny_target


@pytest.fixture(scope="module")
def target():
    return tiny_target(dtype=torch.float32, seed=3)


@pytest.fixture(scope="module")
def prompt():
    return torch.randint(0, 60, (10,), generator=torch.Generator().manual_seed(1)).tolist()


def _head(target, kind, layers=None):
    cfg = config_for_target(target.config, kind, num_layers=layers or (1 if kind == "eagle3" else 2),
                            draft_vocab_size=48, mask_token_id=63 if kind == "peagle" else None, trained_k=8)
    head = DraftHead(cfg).to(target.dtype).eval()
    head.reset_parameters(std=0.2, seed=2)
    with torch.no_grad():
        head.set_draft_vocab(torch.cat([torch.arange(0, 32, 2), torch.arange(32, 64)]))
    return head


@pytest.mark.parametrize("window, sinks, match", [(0, 0, "positive number of positions"),
                                                  (2.5, 0, "positive number of positions"), (8, -1, "must be >= 0")])
def test_bad_windows_are_named(target, window, sinks, match):
    with pytest.raises(ValueError, match=match):
        DrafterWindow(window, sinks)
    with pytest.raises(ValueError, match=match):
        LeanDecoder(target, None, _head(target, "peagle"), "peagle", 3,
                    drafter_window=window if not sinks else DrafterWindow(window, sinks))


@pytest.mark.parametrize("sinks", [0, 2])
def test_a_one_layer_rows_output_is_the_attention_over_its_window_only(target, sinks):
    """One layer: row p of a windowed pass equals an unwindowed pass over just the sinks and positions p-W+1..p (the
    keys keep their positions: RoPE sees the same distances)."""
    head = _head(target, "eagle3", layers=1)
    g = torch.Generator().manual_seed(0)
    n, w = 30, 6
    ids, hidden = torch.randint(0, 64, (1, n), generator=g), torch.randn(1, n, 32, generator=g)
    pos = torch.arange(n)[None]
    with torch.inference_mode():
        logits, _ = head(ids, hidden, pos, window=w, sinks=sinks)
        full, _ = head(ids, hidden, pos)
        for p in (3, 17, 29):
            keep = sorted(set(range(min(sinks, p + 1))) | set(range(max(0, p - w + 1), p + 1)))
            alone, _ = head(ids[:, keep], hidden[:, keep], pos[:, keep])
            assert torch.allclose(logits[0, p], alone[0, -1], atol=1e-5)
        assert not torch.allclose(logits[0, 29], full[0, 29], atol=1e-3)  # the window did change what row 29 saw


@pytest.mark.parametrize("kind,k", [("eagle3", 4), ("peagle", 5)])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("window,sinks", [(5, 0), (8, 2)])
def test_lean_and_reference_draft_the_same_with_a_window(target, kind, k, temperature, window, sinks):
    head = _head(target, kind)
    ref = SpecDecoder(target, None, head, kind, k, drafter_window=DrafterWindow(window, sinks))
    lean = LeanDecoder(target, None, head, kind, k, drafter_window=DrafterWindow(window, sinks))
    for seed, p in enumerate(([5, 6, 7, 8, 9], list(range(10, 40)))):
        a, b = ref.generate(p, 40, temperature, seed), lean.generate(p, 40, temperature, seed)
        assert a.tokens == b.tokens
        assert [s.accepted for s in a.steps] == [s.accepted for s in b.steps]


@pytest.mark.parametrize("kind", ["eagle3", "peagle"])
def test_a_window_wider_than_the_sequence_changes_nothing_and_a_narrow_one_stays_lossless(target, prompt, kind):
    head = _head(target, kind)
    plain = SpecDecoder(target, method="none").generate(prompt, 40).tokens
    full = SpecDecoder(target, None, head, kind, 5).generate(prompt, 40)
    wide = SpecDecoder(target, None, head, kind, 5, drafter_window=64).generate(prompt, 40)
    narrow = SpecDecoder(target, None, head, kind, 5, drafter_window=DrafterWindow(4, 1)).generate(prompt, 40)
    assert wide.tokens == full.tokens == narrow.tokens == plain
    assert [s.accepted for s in wide.steps] == [s.accepted for s in full.steps]
