"""log4j's level names as Python's logging levels: the names Kafka's broker loggers are set and
described with (DescribeConfigs / IncrementalAlterConfigs of BROKER_LOGGER), and TRACE, which
Python lacks, just below DEBUG."""

from __future__ import annotations

import logging

TRACE = 5
LOG4J_LEVELS = {"TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
