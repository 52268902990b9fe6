"""The broker's security state: SCRAM credentials (``credential_cache``)."""
