"""Deploy a target model with a P-EAGLE head to an Amazon SageMaker AI real-time endpoint, safely.

Explained in notebook 06 (``06_deploy_to_sagemaker_ai.ipynb``). One module per job:

- :mod:`~peagle_nb.sagemaker.plan`: the deployment plan (image, ``SM_VLLM_*`` environment, instance,
  AMI, head attached from S3), built from a preset, validated before any AWS call, JSON round-trip.
- :mod:`~peagle_nb.sagemaker.instances`: GPU memory and hourly price per instance type (cost estimate).
- :mod:`~peagle_nb.sagemaker.container`: the AWS vLLM container's ``SM_VLLM_*`` -> ``vllm serve``
  argument translation, as a pure function.
- :mod:`~peagle_nb.sagemaker.deploy`: create / wait / invoke / delete with ``sagemaker.core.resources``,
  deleting everything it created on failure or Ctrl-C; tag-based cleanup of leftovers.
- :mod:`~peagle_nb.sagemaker.local`: the same plan served on this machine by real vLLM (``/ping``,
  ``/invocations``), through a client with the sagemaker-runtime API.
- :mod:`~peagle_nb.sagemaker.backend`: ``SageMakerBackend`` for the benchmark client.
- :mod:`~peagle_nb.sagemaker.jumpstart`: the JumpStart route (``ModelBuilder.from_jumpstart_config``).

boto3 and the SageMaker SDK are imported lazily (extra ``sagemaker``); planning works without them.
"""

from peagle_nb.sagemaker.plan import DeploymentPlan, PlanError, build_plan, validate_plan

__all__ = ["DeploymentPlan", "PlanError", "build_plan", "validate_plan"]
