"""The notebook series: one entry per ``notebooks/NN_slug.ipynb``.

The README's notebook table, the files in ``notebooks/`` and this list must agree (checked by
tests/test_notebook_hygiene.py). ``full_needs`` says what the full configuration needs beyond a CPU;
every notebook also runs in smoke mode on a 2-core CPU with no GPU and no internet.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NotebookSpec:
    number: str  # "00"
    slug: str  # "setup_and_environment_check"
    teaches: str
    full_needs: tuple[str, ...] = ()  # "gpu", "vllm", "vllm_gpu", "aws", "sagemaker_sdk"
    timeout_s: int = 900  # smoke-mode budget on a 2-core CPU, whole notebook

    @property
    def filename(self) -> str:
        return f"{self.number}_{self.slug}.ipynb"


SERIES: tuple[NotebookSpec, ...] = (
    NotebookSpec("00", "setup_and_environment_check",
                 "What this machine can run, the series and its smoke/full modes, record() and gates.",
                 (), 300),
)


def by_number(number: str) -> NotebookSpec:
    for spec in SERIES:
        if spec.number == number:
            return spec
    raise KeyError(f"no notebook numbered {number!r}; known: {', '.join(s.number for s in SERIES)}")
