"""The lean decoding path: own forwards over static KV caches, fixed step shapes, CUDA graphs on a GPU.

Same interface and same tokens as the readable reference (``peagle_nb.engine.decoder.SpecDecoder``); what it
removes is framework overhead, so its timings measure the model's work. Explained in notebooks 01, 03 and 04.

- ``forward``: the target's and the heads' forwards over a static cache (``peagle_kernels.decode_layer``);
- ``graphs``: a step shape captured once and replayed; per-phase timing;
- ``decoder``: ``LeanDecoder``, the decoding loop over preallocated state;
- ``batch``: ``BatchLeanDecoder``, the same loop for B requests at once (each request as if alone).
"""

from peagle_nb.engine.lean.batch import BatchLeanDecoder
from peagle_nb.engine.lean.decoder import LeanDecoder

__all__ = ["BatchLeanDecoder", "LeanDecoder"]
