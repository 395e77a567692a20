"""Training code for the tiny model family, one module per artifact (``target``, ``eagle3``, ``peagle``).
Each exposes ``add_arguments(p)`` and ``run(args) -> int`` for ``peagle-nb train <what>``."""
