"""Byte-rate quotas: the windowed rate Kafka's quota sensors measure, and its users."""
