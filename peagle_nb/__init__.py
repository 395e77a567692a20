"""peagle_nb: the helper package behind the P-EAGLE notebook series.

Layers (each imports only the ones above it; tests/test_layers.py enforces this):

1. ``peagle_kernels`` (the ``kernels/`` folder): Triton kernels with PyTorch references.
2. core: tiny models and their files, the speculative decoding engine, training, analysis of runs, text.
3. integrations: vLLM serving, benchmark client, SageMaker deployment (optional extras, lazy imports).
4. presentation: ``peagle_nb.notebook`` (record, gates, modes), plots and widgets.
5. ``peagle_nb.cli`` and ``notebooks/``: two faces of the same functions.

Front and lab: everything above is the front, what the notebooks teach. ``peagle_nb.lab`` is the tooling behind
it (sweeps, benchmark harnesses, training runs on a GPU, results tables, the notebook runner and report): it
imports the front and the front never imports it (tests/test_layers.py); the two faces use both.
"""

__version__ = "0.1.0"
