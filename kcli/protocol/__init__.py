"""The wire: Kafka's message schemas, their binary codec and Kafka's JSON rendering of them."""
