"""The broker's model of the cluster, built on the tree of ``kcli.metadata``."""
