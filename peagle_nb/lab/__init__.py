"""The lab behind the notebooks: sweeps, benchmark harnesses, training runs on a GPU, results tables, transcribed
published numbers and the notebook runner. It imports the front (the rest of ``peagle_nb``); the front never
imports it (``tests/test_layers.py``). Notebooks and the ``peagle-nb`` CLI use both."""
