"""Bad input gets an error naming the problem and the fix."""

import pytest
import torch

from peagle_nb.engine import HeadMismatchError, SpecDecoder
from peagle_nb.models.heads import DraftHead, config_for_target
from tests.engine.helpers import tiny_target


@pytest.fixture(scope="module")
def target():
    return tiny_target(dtype=torch.float32)


def head_for(target, kind="peagle", **over):
    cfg = config_for_target(target.config, kind, num_layers=2 if kind == "peagle" else 1, draft_vocab_size=32,
                            mask_token_id=63 if kind == "peagle" else None, trained_k=4)
    return DraftHead(cfg.replace(**over) if over else cfg).eval()


def test_head_for_other_hidden_size(target):
    other = tiny_target(hidden=64, dtype=torch.float32)
    with pytest.raises(HeadMismatchError, match="hidden size 64.*this target has hidden size 32"):
        SpecDecoder(target, None, head_for(other), "peagle", 3)


def test_head_for_other_vocab(target):
    other = tiny_target(vocab=80, dtype=torch.float32)
    with pytest.raises(HeadMismatchError, match="80 tokens but the target's has 64"):
        SpecDecoder(target, None, head_for(other), "peagle", 3)


def test_head_for_other_layer_count(target):
    deeper = tiny_target(layers=7, dtype=torch.float32)  # feature layers (2, 3, 4)
    with pytest.raises(HeadMismatchError, match="different layer count"):
        SpecDecoder(target, None, head_for(deeper), "eagle3", 3)
    with pytest.raises(HeadMismatchError, match="only 6 layers"):
        SpecDecoder(target, None, head_for(target, aux_layer_ids=(2, 5, 7)), "eagle3", 3)


def test_k_above_trained_depth_warns_and_stays_lossless(target):
    ref = SpecDecoder(target).generate([5, 6, 7], 12).tokens
    with pytest.warns(UserWarning, match=r"K=6 is above the depth .* trained for \(K=4\).*lossless"):
        dec = SpecDecoder(target, None, head_for(target), "peagle", 6)
    assert dec.generate([5, 6, 7], 12).tokens == ref


def test_missing_mask_pieces(target):
    eagle = head_for(target, "eagle3")
    with pytest.raises(HeadMismatchError, match="mask token id"):
        SpecDecoder(target, None, eagle, "peagle", 3)
    head = head_for(target)
    head.mask_hidden = None
    with pytest.raises(HeadMismatchError, match="no 'mask_hidden'"):
        SpecDecoder(target, None, head, "peagle", 3)


def test_tokenizer_without_mask(target):
    class Tok:
        unk_token_id = 0

        def convert_tokens_to_ids(self, t):
            return 0

    with pytest.raises(HeadMismatchError, match="no <mask> token"):
        SpecDecoder(target, Tok(), head_for(target), "peagle", 3)


def test_empty_prompt_and_bad_arguments(target):
    dec = SpecDecoder(target, None, head_for(target), "peagle", 2)
    with pytest.raises(ValueError, match="empty prompt"):
        dec.generate([], 5)
    with pytest.raises(ValueError, match="outside the target vocabulary"):
        dec.generate([1, 999], 5)
    with pytest.raises(ValueError, match="K .* must be an integer >= 1"):
        SpecDecoder(target, None, head_for(target), "peagle", 0)
    with pytest.raises(ValueError, match="needs a draft head"):
        SpecDecoder(target, None, None, "eagle3", 2)
    with pytest.raises(ValueError, match="unknown method 'medusa'"):
        SpecDecoder(target, None, None, "medusa", 2)
