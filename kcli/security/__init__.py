"""Who a peer is, without I/O: principals, TLS contexts from Kafka's ssl.* keys, SASL and SCRAM."""
