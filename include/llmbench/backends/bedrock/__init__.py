"""Per-token API models on Amazon Bedrock, streamed with ConverseStream (backend)."""

__all__ = ["backend"]
