"""Servers for tests and benchmarks (never backends): a calibration server with an exact token
schedule, and a SageMaker runtime wire-format server (SigV4-checked, event-stream frames)."""

__all__ = ["bedrock_runtime", "calibration", "eventstream", "flood", "paced", "sagemaker_runtime", "specdecode"]
