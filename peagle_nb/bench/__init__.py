"""Endpoint benchmark client (integration layer): async load at several concurrency levels against any
``Backend`` (OpenAI-compatible server here, SageMaker in ``peagle_nb.sagemaker``). Explained in notebook 05."""
