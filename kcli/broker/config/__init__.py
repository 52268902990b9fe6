"""The broker's configs: every key with its default and scope (``broker_config``), what
DescribeConfigs answers and how changes are checked (``config_describer``), overrides read from
the metadata tree (``tree_configs``)."""
