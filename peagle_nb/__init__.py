"""peagle_nb: the helper package behind the P-EAGLE notebook series.

Layers (each imports only the ones above it; tests/test_layers.py enforces this):

1. ``peagle_kernels`` (the ``kernels/`` folder): Triton kernels with PyTorch references.
2. core: tiny models, checkpoints, the speculative decoding engine, training, metrics.
3. integrations: vLLM serving, benchmark client, SageMaker deployment (optional extras, lazy imports).
4. presentation: ``peagle_nb.notebook`` (record, gates, runner, hygiene), plots and widgets.
5. ``peagle_nb.cli`` and ``notebooks/``: two faces of the same functions.
"""

__version__ = "0.1.0"
