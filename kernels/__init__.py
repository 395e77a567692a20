"""Triton kernels for P-EAGLE parallel drafting, imported as ``peagle_kernels``.

Each module is self-contained (Triton's tutorial style): the kernel, a plain PyTorch reference, a
launcher that validates inputs, and a benchmark. Imports torch and triton only, never ``peagle_nb``.
On a CPU they run under the Triton interpreter (``TRITON_INTERPRET=1``). Explained in notebook 04.
"""
