"""The load generator: when requests are due (schedules), the driver of one level (driver) and a
closed-loop level split over client processes (processes), the HTTP client with kernel
receive stamps (httpstream), wire decoding (wire), the record-builder process (recordworker),
seeded prompts (prompts) and their token counts (tokenizer), the sweep over levels (sweep) and who
owns its folder (owner), and the capacity search, open-loop probes for the highest rate that meets an SLO (capacity)."""

__all__ = [
    "capacity",
    "driver",
    "httpstream",
    "owner",
    "processes",
    "prompts",
    "recordworker",
    "schedules",
    "sweep",
    "tokenizer",
    "wire",
]
