"""The tiny model family: the target LM (``target``), its tokenizer (``tokenizer``) and the draft heads
(``heads``). Submodules are imported directly (``from peagle_nb.models.target import load_target``)."""
