"""Training runs on a GPU machine: the model family trained, evaluated and packed in one job."""
