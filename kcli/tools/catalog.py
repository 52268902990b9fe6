"""Every ``kcli`` command: its name, the module that defines it, and the summary ``kcli --help``
lists it with.

The root command reads this table instead of importing the tools, so ``kcli --help`` and a tool's
own start-up load one tool module, not all of them. A command's summary is the first paragraph of
its own help; ``tests/unit/test_cli.py`` holds the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tool:
    name: str
    module: str  # under kcli.tools; its ``register(app)`` adds the command
    summary: str
    hidden: bool = False
    # Kafka's tool (its --version prints the Kafka version kcli's tools speak), or kcli's own
    # command (its --version prints kcli's).
    kafka: bool = True


# In the order ``kcli --help`` lists them.
TOOLS = (
    Tool(
        "zookeeper-shell",
        "zookeeper_shell",
        "Run ZooKeeper's command-line client (zkCli) against HOST:PORT[/chroot]: one command (ls, get, stat, "
        "create, set, delete, deleteall, getAcl, sync, ...) and exit, or an interactive shell reading commands from stdin.",
    ),
    Tool("topics", "topics", "Create, delete, describe, or change a topic."),
    Tool("console-producer", "console_producer", "This tool helps to read data from standard input and publish it to Kafka."),
    Tool("console-consumer", "console_consumer", "This tool helps to read data from Kafka topics and outputs it to standard output."),
    Tool(
        "consumer-groups",
        "consumer_groups",
        "This tool helps to list all consumer groups, describe a consumer group, delete consumer group info, or reset consumer group offsets.",
    ),
    Tool("consumer-offset-checker", "consumer_offset_checker", "Check the offset of your consumers (old, ZooKeeper-based consumer groups)."),
    Tool("get-offsets", "get_offsets", "An interactive shell for getting topic-partition offsets."),
    Tool("acls", "acls", "This tool helps to manage acls on kafka."),
    Tool("delete-records", "delete_records", "This tool helps to delete records of the given partitions down to the specified offset."),
    Tool("log-dirs", "log_dirs", "This tool helps to query log directory usage on the specified brokers."),
    Tool("features", "features", "This tool manages feature flags in Kafka."),
    Tool("configs", "configs", "Describe or change the configs of a topic, broker or broker logger."),
    Tool("broker-api-versions", "broker_api_versions", "This tool helps to retrieve broker version information."),
    Tool("producer-perf-test", "producer_perf_test", "This tool is used to verify the producer performance."),
    Tool("consumer-perf-test", "consumer_perf_test", "This tool is used to verify the consumer performance."),
    Tool("e2e-latency", "e2e_latency", "This tool records the average end to end latency for a single message to travel through Kafka."),
    Tool("replica-verification", "replica_verification", "Validate that all replicas for a set of topics have the same data."),
    Tool(
        "verifiable-producer",
        "verifiable_producer",
        'This tool produces increasing integers to the specified topic and prints JSON metadata to stdout on each "send" request, '
        "making externally visible which messages have been acked and which have not.",
    ),
    Tool(
        "verifiable-consumer",
        "verifiable_consumer",
        "This tool consumes messages from a specific topic and emits consumer events (e.g. group rebalances, received messages, "
        "and offsets committed) as JSON objects to STDOUT.",
    ),
    # kafka-dump-log.sh's name since Kafka 2.0, and the one kcli first gave it: one command, two names.
    *(
        Tool(
            name,
            "dump_log_segments",
            "This tool helps to parse a log file and dump its contents to the console, useful for debugging a seemingly corrupt log segment.",
        )
        for name in ("dump-log", "dump-log-segments")
    ),
    Tool("export", "export", "Export a topic (or a Kafka log dir) to Parquet, JSON lines or CSV files with Spark.", kafka=False),
    Tool("import", "import_", "Import files written by kcli export (Parquet, JSON lines, CSV) into a topic with Spark.", kafka=False),
    Tool("mirror", "mirror", "Copy topics from one cluster to another as a Spark stream, with a checkpoint.", kafka=False),
    Tool("stats", "stats", "Record counts, bytes, key cardinality, time range and batch/codec histogram of topics, with Spark.", kafka=False),
    Tool("complete-names", "complete_names", "", hidden=True),
    Tool("broker", "broker", "Run a Kafka-compatible broker."),
    Tool("zookeeper", "zookeeper", "Run a ZooKeeper server (Debian's zookeeper package) for a multi-broker cluster."),
    Tool("cluster", "cluster", "Run a ZooKeeper and several brokers on this machine, and show a ZooKeeper-mode cluster's state.", kafka=False),
    Tool(
        "consumer-offsets",
        "consumer_offsets",
        "Export, import and migrate consumer offsets between ZooKeeper storage (/consumers) and Kafka storage.",
        kafka=False,
    ),
    Tool(
        "transactions",
        "transactions",
        "This tool is used to analyze the transactional state of producers in the cluster. It can be used to detect and recover from hanging transactions.",
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


def names_of(module: str) -> list[str]:
    """The command names a tool module (``kcli.tools.X`` or ``X``) registers, in the catalog's order."""
    short = module.removeprefix("kcli.tools.")
    return [tool.name for tool in TOOLS if tool.module == short]
