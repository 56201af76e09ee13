"""Servers for tests and benchmarks (never backends): a calibration server with an exact token
schedule, and a SageMaker runtime wire-format server (SigV4-checked, event-stream frames)."""
