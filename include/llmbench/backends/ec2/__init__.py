"""EC2 instances launched with a serving container, and terminated after (backend), what they run
at first boot (userdata), their config section and target (models) and the registry entry (spec).
Importing the package registers the kind (llmbench.backends.registry)."""

from llmbench.backends.ec2 import spec  # noqa: F401 (registers the kind)

__all__ = ["backend", "models", "spec", "userdata"]
