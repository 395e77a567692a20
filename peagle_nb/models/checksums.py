"""Checksums of the shipped model folders (``data/models/*/checksums.json``), verified when a folder is loaded.

A clone that lost part of a weight file (an interrupted download, a Git LFS pointer instead of the file, a
disk full during ``git checkout``) would otherwise fail deep inside safetensors or transformers, or worse,
load. The manifest lists every file a loader reads (all but the model card ``README.md`` and
``training_log.json``, which ``--eval-only`` rewrites) with its size and SHA-256; loading checks the files it is
about to read and names the first one that differs, and how to get it back. A folder without a manifest (a
user's own export) loads unchecked. After retraining, regenerate the manifests with::

    python -m peagle_nb.models.checksums data/models/tiny-target data/models/tiny-eagle3 data/models/tiny-peagle

Explained in notebook 05 (the head folder's layout).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

MANIFEST = "checksums.json"
NOT_LISTED = {MANIFEST, "README.md", "training_log.json"}  # documents, rewritten without touching the model
_CHUNK = 1 << 20


class ChecksumError(ValueError):
    """A file of a model folder does not match the folder's ``checksums.json``. The message names the file and
    the fix."""


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_sha256(folder: str | Path) -> dict[str, str]:
    """sha256 of each weights file of a model folder: what a results file measured with the model names."""
    return {p.name: file_sha256(p) for p in sorted(Path(folder).glob("*.safetensors"))}


def write_manifest(folder: str | Path) -> Path:
    """(Re)write ``folder/checksums.json`` over the model files in ``folder`` (not its subfolders)."""
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name not in NOT_LISTED)
    if not files:
        raise FileNotFoundError(f"{folder}: no files to list. Fix: point at a model folder.")
    manifest = {"algorithm": "sha256", "generator": "python -m peagle_nb.models.checksums",
                "files": {p.name: {"bytes": p.stat().st_size, "sha256": file_sha256(p)} for p in files}}
    path = folder / MANIFEST
    path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return path


def read_manifest(folder: str | Path) -> dict | None:
    """The folder's manifest, or None when it has none (a folder the user exported themselves)."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        files = manifest["files"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ChecksumError(f"{path} is not a checksum manifest ({type(exc).__name__}: {exc}). Fix: restore it "
                            f"(`git checkout -- {path}`), or regenerate it with `python -m peagle_nb.models.checksums "
                            f"{Path(folder)}` if the folder's files are the ones you want.") from None
    return {"files": files}


def verify_folder(folder: str | Path, names: list[str] | None = None) -> bool:
    """Check ``names`` (default: every listed file) against the folder's manifest; False when there is no
    manifest, True when every file matches; ``ChecksumError`` naming the first file that does not."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest is None:
        return False
    listed = manifest["files"]
    fix = (f"Fix: restore the shipped file (`git checkout -- {folder}`, or `git lfs pull` if the clone holds LFS "
           f"pointers), or retrain the model; if you changed the folder on purpose, regenerate its manifest with "
           f"`python -m peagle_nb.models.checksums {folder}`.")
    for name in names if names is not None else sorted(listed):
        path = folder / name
        want = listed.get(name)
        if want is None:
            raise ChecksumError(f"{path} is not listed in {folder / MANIFEST}, which lists {sorted(listed)}. {fix}")
        if not path.is_file():
            raise ChecksumError(f"{path} is missing ({folder / MANIFEST} lists it). {fix}")
        size = path.stat().st_size
        if size != want["bytes"]:
            raise ChecksumError(f"{path} has {size:,} bytes, the shipped file {want['bytes']:,} (truncated or "
                                f"replaced). {fix}")
        if file_sha256(path) != want["sha256"]:
            raise ChecksumError(f"{path} differs from the shipped file (SHA-256 mismatch, same size). {fix}")
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m peagle_nb.models.checksums",
                                description="regenerate (or, with --check, verify) model folders' checksums.json")
    p.add_argument("folders", nargs="+", type=Path)
    p.add_argument("--check", action="store_true", help="verify instead of writing")
    args = p.parse_args(argv)
    for folder in args.folders:
        if args.check:
            ok = verify_folder(folder)
            print(f"{folder}: {'every file matches' if ok else 'no manifest'}")
        else:
            print(f"wrote {write_manifest(folder)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
