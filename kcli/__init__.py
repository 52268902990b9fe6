"""kcli: a Kafka toolbox in one command."""

__version__ = "0.1.0"
