"""The broker's network layer: listeners and connections (``server``), connection limits
(``connection_quotas``) and the connections it opens to other brokers (``broker_connections``)."""
