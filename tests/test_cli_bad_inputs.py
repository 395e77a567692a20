"""Every ``peagle-nb`` verb (``sagemaker`` has its own table in tests/sagemaker/test_cli.py) walked through the
bad inputs a new user tries: missing and corrupt files, a head for another target, bad K, an empty prompt, a
port in use, an unknown preset or notebook. Each ends in one paragraph that names the problem, exit code 2,
no traceback, and nothing left running."""

from __future__ import annotations

import json
import shutil
import socket

import psutil
import pytest
import torch

from peagle_nb.models import checkpoint
from peagle_nb.files import paths
from peagle_nb.cli import main

MODELS = paths.models_dir()


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    """Files a user may hand the CLI by mistake, and a port something already listens on."""
    root = tmp_path_factory.mktemp("bad")
    truncated = root / "truncated-head"
    shutil.copytree(MODELS / "tiny-peagle", truncated)
    weights = truncated / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    target = root / "truncated-target"
    shutil.copytree(MODELS / "tiny-target", target, ignore=shutil.ignore_patterns("checksums.json"))
    shard = sorted(target.glob("model*.safetensors"))[0]  # the v2 target is sharded
    shard.write_bytes(shard.read_bytes()[:4096])
    # a complete, valid P-EAGLE head, but for a target with hidden size 128 (the shipped target has 256)
    other = json.loads((MODELS / "tiny-target" / "config.json").read_text()) | {"hidden_size": 128,
                                                                              "intermediate_size": 256}
    cfg = checkpoint.head_config_for_target(other, "peagle", num_layers=2, mask_token_id=2, trained_k=8)
    wrong = checkpoint.write_head(root / "head-for-another-target", cfg, checkpoint.random_head_tensors(cfg))
    empty = root / "empty.jsonl"
    empty.write_text('{"prompt": "def add(a, b):"}\n{"prompt": "   "}\n')
    corrupt = root / "corrupt.json"
    corrupt.write_text('{"schema": "peagle-nb/results/v1", "runs": [')
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()  # nothing listens here
    yield {"truncated": str(truncated), "truncated_target": str(target), "wrong_head": str(wrong),
           "empty": str(empty), "corrupt": str(corrupt), "missing": str(root / "missing.jsonl"),
           "busy_port": str(listener.getsockname()[1]), "dead_url": f"http://127.0.0.1:{closed_port}"}
    listener.close()


# (case, argv with {placeholders} from the `bad` fixture, what the error must say)
CASES = [
    ("env: unknown option", ["env", "--gpu"], "unrecognized arguments: --gpu"),
    ("run-notebooks: unknown notebook", ["run-notebooks", "--smoke", "--only", "99"], "unknown notebook(s): 99"),
    ("check-notebooks: missing file", ["check-notebooks", "{missing}"], "no notebook at"),
    ("eval: missing prompt file", ["eval", "--prompts", "{missing}"], "not found. Fix:"),
    ("eval: empty prompt", ["eval", "--prompts", "{empty}"], "empty prompt"),
    ("eval: truncated head", ["eval", "--prompts", "code", "--limit", "1", "--head", "{truncated}"],
     "bytes, the shipped file"),
    ("eval: truncated target", ["eval", "--prompts", "code", "--limit", "1", "--target", "{truncated_target}"],
     "not a readable safetensors file"),
    ("eval: head for another target", ["eval", "--prompts", "code", "--limit", "1", "--head", "{wrong_head}"],
     "head was trained for a target with hidden size 128"),
    ("eval: K of 0", ["eval", "--prompts", "code", "--k", "0"], "--k: 0 must be >= 1"),
    ("eval: no GPU", ["eval", "--prompts", "code", "--device", "cuda"], "no CUDA GPU"),
    ("serve: unknown preset", ["serve", "--preset", "tiny-medusa"], "invalid choice: 'tiny-medusa'"),
    ("serve: K of 0", ["serve", "--preset", "tiny-peagle", "--k", "0"], "--k: 0 must be >= 1"),
    ("serve: K past the trained depth", ["serve", "--preset", "tiny-peagle", "--k", "9"], "Fix: use K <= 8"),
    ("serve: port in use", ["serve", "--preset", "tiny-peagle", "--port", "{busy_port}"],
     "port {busy_port} on 127.0.0.1 is already in use"),
    ("bench: empty prompt", ["bench", "--base-url", "{dead_url}", "--prompts", "{empty}"], "empty prompt"),
    ("bench: bad concurrency", ["bench", "--base-url", "{dead_url}", "--prompts", "code", "--concurrency", "0,4"],
     "--concurrency levels must be integers >= 1"),
    ("bench: nothing listening", ["bench", "--base-url", "{dead_url}", "--prompts", "code"], "cannot reach"),
    ("kernels-bench: K of 0", ["kernels-bench", "--ks", "0"], "'0' is not an integer >= 1"),
    ("kernels-bench: missing repeat file", ["kernels-bench", "--repeat-into", "{missing}"], "no such file"),
    ("train: unknown model", ["train", "medusa"], "invalid choice: 'medusa'"),
    ("train: too many layers", ["train", "peagle", "--num-layers", "9"], "a P-EAGLE head here has 2-4 layers"),
    ("train: 0 steps", ["train", "peagle", "--steps", "0"], "--steps 0 must be >= 1"),
    ("train: missing --init-from", ["train", "peagle", "--init-from", "{missing}"], "is not a head folder"),
    ("train: --data-only without a cache", ["train", "eagle3", "--data-only"], "needs --data-cache"),
    ("advise: missing results file", ["advise", "--results", "{missing}"], "missing.jsonl"),
    ("advise: corrupt results file", ["advise", "--results", "{corrupt}"], "not valid JSON"),
]


def _run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own errors
        return exc.code


@pytest.mark.parametrize("case,argv,expect", CASES, ids=[c[0] for c in CASES])
def test_bad_input_ends_in_one_paragraph_exit_2_and_nothing_running(case, argv, expect, bad, capfd):
    if case == "eval: no GPU" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    children_before = {p.pid for p in psutil.Process().children(recursive=True)}
    code = _run([a.format(**bad) for a in argv])
    out, err = capfd.readouterr()
    text = (err + out).strip()
    assert code == 2, f"{case}: exit code {code}\n{text}"
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if "error:" in line]
    assert len(errors) == 1, text  # one paragraph (argparse adds its usage line before it)
    assert expect.format(**bad) in errors[0], errors[0]
    left = {p.pid for p in psutil.Process().children(recursive=True)} - children_before
    assert not left, f"{case}: processes left running: {left}"


def test_the_table_covers_every_verb_but_sagemaker():
    from peagle_nb.cli import COMMANDS

    assert {argv[0] for _, argv, _ in CASES} == {name for name, _, _ in COMMANDS} - {"sagemaker"}
