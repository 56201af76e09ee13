"""The load generator: arrival schedules and the driver (driver), the HTTP client with kernel
receive stamps (httpstream), wire decoding (wire), the record-builder process (recordworker),
seeded prompts (prompts) and their token counts (tokenizer), the sweep over levels (sweep), and
the capacity search, open-loop probes for the highest rate that meets an SLO (capacity)."""

__all__ = ["capacity", "driver", "httpstream", "prompts", "recordworker", "sweep", "tokenizer", "wire"]
