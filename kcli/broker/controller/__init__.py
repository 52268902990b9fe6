"""The controller (Kafka's ``KafkaController``): see ``kafka_controller``."""
