"""Run the SageMaker tests against the oldest SDK the `sagemaker` extra admits (CI: `make test-sdk-floor`).

    python tests/sagemaker/sdk_floor.py [--venv build/sdk-floor-venv] [--stack .venv] [--prepare-only] [pytest args...]

The floor pins are read from pyproject.toml's `sagemaker` extra (each ``>=X`` becomes ``==X``) and installed
with moto and pytest in a venv of their own, so pip resolves every dependency of the SDK at the floor. The
project's numerical stack (torch, transformers, ...) is not installed again: it is appended to that venv's
path from ``--stack`` (the venv `make install` built), AFTER the venv's own packages, so the floor SDK and
its dependencies win wherever both hold a package. vLLM is blocked in that venv (``import vllm`` raises
ImportError), so the tests that need a real vLLM server skip and the rest run against the floor SDK.
The venv is kept and reused while the pins are unchanged (its marker file holds them).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import venv
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
TEST_DEPS = ("moto[sagemaker,s3]==5.2.5", "pytest>=8", "pytest-timeout>=2.3", "psutil>=5.9")
# The tests that need vLLM itself (they skip without it; left out to save the collection time). The local emulation's
# own tests start no server (notebook 06's test does) and run here.
NEEDS_VLLM = ("tests/sagemaker/test_presets_parse_in_vllm.py",)
BLOCK_VLLM = "import sys; sys.modules['vllm'] = None  # this venv tests the SDK floor without vLLM\n"


def floor_pins(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """``pkg==floor`` for every requirement of the `sagemaker` extra; an entry without a ``>=`` floor is an
    error (it could not be tested at its oldest version)."""
    extra = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["optional-dependencies"]["sagemaker"]
    pins = []
    for requirement in extra:
        name, sep, rest = requirement.partition(">=")
        if not sep:
            raise SystemExit(f"pyproject.toml: {requirement!r} in the sagemaker extra has no >= floor to test")
        pins.append(f"{name.strip()}=={rest.split(',')[0].strip()}")
    return pins


def site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


def prepare(venv_dir: Path, stack_python: Path, pins: list[str]) -> Path:
    python = venv_dir / "bin" / "python"
    marker = venv_dir / ".floor-pins"
    wanted = "\n".join([*pins, *TEST_DEPS]) + "\n"
    if not (python.exists() and marker.exists() and marker.read_text() == wanted):
        venv.EnvBuilder(clear=True, with_pip=True).create(venv_dir)
        installed = subprocess.run([str(python), "-m", "pip", "install", "-q", *pins, *TEST_DEPS],
                                   capture_output=True, text=True)
        if installed.returncode:
            sys.stderr.write(installed.stdout + installed.stderr)
            raise SystemExit(f"pip could not install the SDK floor ({' '.join(pins)})")
        marker.write_text(wanted)
    own = site_packages(python)
    (own / "zz_project_stack.pth").write_text(f"{site_packages(stack_python)}\n")
    (own / "zz_block_vllm.pth").write_text(BLOCK_VLLM)
    return python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=REPO / "build" / "sdk-floor-venv")
    parser.add_argument("--stack", type=Path, default=REPO / ".venv", help="the venv `make install` built")
    parser.add_argument("--prepare-only", action="store_true",
                        help="build the venv and stop (CI builds it in the background while the main tests run)")
    args, pytest_args = parser.parse_known_args(argv)
    stack_python = args.stack / "bin" / "python"
    if not stack_python.exists():
        raise SystemExit(f"{stack_python} does not exist: run `make install` first (or pass --stack)")
    pins = floor_pins()
    start = time.monotonic()
    python = prepare(args.venv, stack_python, pins)
    versions = subprocess.run([str(python), "-c", "from importlib import metadata as m; print(', '.join(f'{d} "
                               "{m.version(d)}' for d in ('sagemaker', 'sagemaker-core', 'sagemaker-serve', "
                               "'boto3', 'botocore', 'moto')))"], check=True, capture_output=True, text=True)
    print(f"== SDK floor venv ready in {time.monotonic() - start:.0f} s: {versions.stdout.strip()}", flush=True)
    if args.prepare_only:
        return 0
    ignore = [f"--ignore={path}" for path in NEEDS_VLLM]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [str(python), "-m", "pytest", "tests/sagemaker", "-p", "no:cacheprovider", *ignore, *(pytest_args or ["-q"])]
    return subprocess.run(cmd, cwd=REPO, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
