"""kcli: a Kafka toolbox in one command."""

__version__ = "0.1.0"
# The Apache Kafka release whose tools kcli's Kafka tools follow: what each prints for --version,
# as Kafka's tools print the version they speak.
KAFKA_VERSION = "3.9.0"
