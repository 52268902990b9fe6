"""Registers kcli's data source in every PySpark session: Spark imports each installed top-level
``pyspark_*`` module and registers its ``DefaultSource``, so ``spark.read.format("kcli")`` works
once kcli is installed, with no ``spark.dataSource.register`` call."""

from kcli.spark.source import KcliSource as DefaultSource

__all__ = ["DefaultSource"]
