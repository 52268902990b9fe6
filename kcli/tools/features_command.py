"""The work behind ``kcli features describe``: the feature flags of a broker's ApiVersions answer,
printed as Kafka 3.9's FeatureCommand prints them."""

from __future__ import annotations

import typer

from kcli.errors import KcliError
from kcli.output import Format, Output

METADATA_VERSION = "metadata.version"
# Kafka 3.9's MetadataVersion: the release each metadata.version feature level stands for
# (levels below 1 belong to ZooKeeper-era inter-broker protocol versions, none of them one level).
METADATA_VERSIONS = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3",
    8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2",
    15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0",
    22: "4.0-IV0", 23: "4.0-IV1",
}


def level_to_string(feature: str, level: int) -> str:
    """FeatureCommand.levelToString: metadata.version levels as releases, others as numbers."""
    if feature == METADATA_VERSION:
        if level == -1:
            return "0.8.0"  # fromFeatureLevel(-1) finds the first ZooKeeper-era version
        return METADATA_VERSIONS.get(level, f"UNKNOWN {level}")
    return str(level)


def describe(servers: str, command_config: str | None, fmt: Format) -> None:
    from kcli.tools._admin_common import AdminSession, client_settings, load_command_config

    out = Output(fmt)
    try:
        try:
            settings = client_settings(load_command_config(command_config), bootstrap=servers, warn=out.diag)
            with AdminSession(settings) as session:
                metadata = session.run(session.admin.describe_features())
        except KcliError as exc:
            out.diag(f"Error: {exc}")
            raise typer.Exit(exc.exit_code) from None
        epoch = metadata.finalized_epoch
        for feature in sorted(metadata.supported):
            low, high = metadata.supported[feature]
            finalized = metadata.finalized.get(feature, (0, 0))[1]
            if out.json:
                out.obj({"feature": feature, "supported_min_version": low, "supported_max_version": high, "finalized_version_level": finalized, "epoch": epoch})
            else:
                out.line(
                    f"Feature: {feature}\tSupportedMinVersion: {level_to_string(feature, low)}\t"
                    f"SupportedMaxVersion: {level_to_string(feature, high)}\t"
                    f"FinalizedVersionLevel: {level_to_string(feature, finalized)}\tEpoch: {'-' if epoch is None else epoch}"
                )
    finally:
        out.flush()
