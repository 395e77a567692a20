"""Model folders' checksums.json: shipped folders carry one and match it, loading names the file that differs
and the fix, a folder without a manifest (a user's own export) loads unchecked."""

from __future__ import annotations

import json
import shutil

import pytest

from peagle_nb.models import checkpoint, checksums
from peagle_nb.files import paths
from peagle_nb.models.checksums import ChecksumError

SHIPPED = ("tiny-target", "tiny-eagle3", "tiny-peagle")


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_model_folder_matches_its_manifest(name):
    folder = paths.models_dir() / name
    manifest = json.loads((folder / checksums.MANIFEST).read_text())
    model_files = {p.name for p in folder.iterdir() if p.is_file()} - checksums.NOT_LISTED
    assert set(manifest["files"]) == model_files  # every file a loader reads is listed
    assert checksums.verify_folder(folder) is True


@pytest.fixture
def head_copy(tmp_path):
    folder = tmp_path / "tiny-peagle"
    shutil.copytree(paths.models_dir() / "tiny-peagle", folder)
    return folder


def test_a_truncated_shipped_head_is_named_with_its_sizes(head_copy):
    from peagle_nb.models.heads import load_head

    weights = head_copy / "model.safetensors"
    size = weights.stat().st_size
    weights.write_bytes(weights.read_bytes()[: size - 1000])
    with pytest.raises(checkpoint.HeadCheckpointError) as err:
        load_head(head_copy)
    msg = str(err.value)
    assert f"{weights} has {size - 1000:,} bytes, the shipped file {size:,}" in msg
    assert "git checkout --" in msg and "python -m peagle_nb.models.checksums" in msg


def test_a_changed_file_of_the_same_size_fails_the_hash(head_copy):
    cfg = head_copy / "config.json"
    text = cfg.read_text()
    cfg.write_text(text.replace('"hidden_act": "silu"', '"hidden_act": "gelu"'))
    assert len(cfg.read_text()) == len(text)
    with pytest.raises(ChecksumError, match="config.json differs from the shipped file"):
        checksums.verify_folder(head_copy)


def test_a_folder_without_manifest_loads_and_a_regenerated_one_passes(head_copy):
    from peagle_nb.models.heads import load_head

    (head_copy / checksums.MANIFEST).unlink()
    assert checksums.verify_folder(head_copy) is False
    assert load_head(head_copy).kind == "peagle"  # a user's own export: no manifest, no check
    cfg = head_copy / "config.json"
    cfg.write_text(cfg.read_text().replace('"peagle_trained_k": 8', '"peagle_trained_k": 7'))
    assert checksums.main([str(head_copy)]) == 0  # changed on purpose: regenerate
    assert checksums.verify_folder(head_copy) is True and load_head(head_copy).trained_k == 7


def test_a_truncated_target_is_refused_before_transformers_reads_it(tmp_path):
    from peagle_nb.models.target import load_target

    folder = tmp_path / "tiny-target"
    shutil.copytree(paths.models_dir() / "tiny-target", folder, ignore=shutil.ignore_patterns(checksums.MANIFEST))
    weights = sorted(folder.glob("model*.safetensors"))[0]  # the v2 target is sharded
    weights.write_bytes(weights.read_bytes()[:4096])
    with pytest.raises(ValueError, match="not a readable safetensors file") as err:
        load_target(folder)
    assert str(weights) in str(err.value) and "Fix:" in str(err.value)


def test_a_corrupt_manifest_says_so(head_copy):
    (head_copy / checksums.MANIFEST).write_text("{not json")
    with pytest.raises(ChecksumError, match="is not a checksum manifest"):
        checksums.verify_folder(head_copy)
