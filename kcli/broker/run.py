"""Running a broker process: configuration, logging to stderr, signals, and the event loop."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from kcli.errors import KcliError, UsageError
from kcli.storage.descriptors import raise_open_file_limit

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING, "WARNING": logging.WARNING, "ERROR": logging.ERROR}


def load_config(properties_path: str | None, overrides: list[str]):
    """The broker's configuration; refuses security kcli does not have rather than serve it as
    plaintext, and warns about each key no Kafka broker defines."""
    from kcli.broker.config.broker_config import BrokerConfig, inter_broker_listener_problem, unknown_keys, unsupported_security

    config = BrokerConfig.from_file(properties_path or None, overrides)
    problem = unsupported_security(config) or inter_broker_listener_problem(config) or _listener_problem(config)
    if problem is not None:
        raise KcliError(f"the broker cannot start: {problem}")
    for key in unknown_keys(config):
        logging.getLogger("kcli.broker").warning("The configuration '%s' was supplied but isn't a known config.", key)
    return config


def _listener_problem(config) -> str | None:
    """Why a listener's security does not load (a key store missing or unreadable), checked
    before anything is written."""
    from kcli.broker.network.listeners import ListenerConfigError, inter_broker_security, listener_security

    try:
        for endpoint in config.listeners:
            listener_security(config, endpoint.listener_name)
        inter_broker_security(config)
    except ListenerConfigError as e:
        return str(e)
    return None


def configure_logging(level_name: str) -> None:
    level = _LEVELS.get(level_name.upper())
    if level is None:
        raise UsageError(f"--log-level must be one of DEBUG, INFO, WARN, ERROR, not {level_name!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def run_broker(properties_path: str | None, overrides: list[str], log_level: str = "INFO") -> None:
    configure_logging(log_level)
    config = load_config(properties_path, overrides)
    before, limit = raise_open_file_limit()
    log = logging.getLogger("kcli.broker")
    if limit > before:
        log.info("Raised the open-file limit (RLIMIT_NOFILE) from %d to %d", before, limit)
    else:
        log.info("Open-file limit (RLIMIT_NOFILE): %d", limit)
    try:
        asyncio.run(_serve(config))
    except KcliError:
        raise
    except OSError as e:
        raise KcliError(f"the broker could not start: {e}") from None


async def _serve(config) -> None:
    from kcli.broker.broker import Broker

    broker = Broker(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, broker.request_stop)
    try:
        await broker.start()
    except BaseException:
        await broker.shutdown(grace=0)
        raise
    await broker.wait_stopped()
    try:
        await broker.shutdown()
    except OSError as e:
        raise KcliError(f"the broker did not shut down cleanly: {e}") from None
