"""The load generator: arrival schedules and the driver (driver), the HTTP client with kernel
receive stamps (httpstream), wire decoding (wire), the record-builder process (recordworker),
seeded prompts (prompts), and the sweep over levels (sweep)."""

__all__ = ["driver", "httpstream", "prompts", "recordworker", "sweep", "wire"]
