"""Servers for tests and benchmarks (never backends): a calibration server with an exact token
schedule (calibration), a SageMaker runtime wire-format server (sagemaker_runtime: SigV4-checked,
event-stream frames, eventstream), a Bedrock runtime one (bedrock_runtime), a plain streaming server on a fixed schedule
(paced), a hostile one whose stream never ends (flood), and a vLLM stand-in with speculative
decoding's counters (specdecode)."""

__all__ = ["bedrock_runtime", "calibration", "eventstream", "flood", "paced", "sagemaker_runtime", "specdecode"]
