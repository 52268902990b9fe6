"""The wire: Kafka's message schemas, their binary codec and Kafka's JSON rendering of them."""

from kcli.protocol.kio_loading import load_kio_without_hypothesis

# Before any module of this package imports kio (kio_loading says why).
load_kio_without_hypothesis()
