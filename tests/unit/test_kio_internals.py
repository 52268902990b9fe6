"""kio's private modules are read in one place (``kcli.protocol.kio_internals``), and what it
gives matches kio's schema entities."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from kcli.protocol import messages
from kcli.protocol.kio_internals import field_shape, field_tag, is_optional, kafka_type, tagged_field_default

ROOT = Path(__file__).resolve().parents[2]
_PRIVATE_KIO = re.compile(r"^\s*(from\s+kio(\.\w+)*\._\w*|import\s+kio(\.\w+)*\._\w*)", re.MULTILINE)


def test_only_kio_internals_imports_kio_private_modules():
    importers = sorted(
        str(path.relative_to(ROOT))
        for folder in ("kcli", "tests", "bench", "pyspark_kcli")
        for path in (ROOT / folder).rglob("*.py")
        if _PRIVATE_KIO.search(path.read_text(encoding="utf-8"))
    )
    assert importers == ["kcli/protocol/kio_internals.py"]


def _fields(entity_type):
    return {field.name: field for field in dataclasses.fields(entity_type)}


def test_field_shapes_of_a_produce_request():
    request = messages.request_type(0, 9)
    fields = _fields(request)
    assert field_shape(fields["acks"]) == (None, False)
    assert kafka_type(fields["acks"]) == "int16"
    assert is_optional(fields["transactional_id"]) and not is_optional(fields["acks"])
    topic_entity, is_array = field_shape(fields["topic_data"])
    assert is_array and topic_entity.__name__ == "TopicProduceData"
    partition_fields = _fields(field_shape(_fields(topic_entity)["partition_data"]).entity)
    assert kafka_type(partition_fields["records"]) == "records"
    assert is_optional(partition_fields["records"])


def test_tagged_fields_and_their_defaults():
    # ApiVersions v3's response tags SupportedFeatures 0, FinalizedFeaturesEpoch 1, FinalizedFeatures 2.
    fields = _fields(messages.response_type(18, 3))
    assert field_tag(fields["error_code"]) is None
    assert field_tag(fields["supported_features"]) == 0
    assert field_tag(fields["finalized_features_epoch"]) == 1
    assert tagged_field_default(fields["finalized_features_epoch"]) == -1
    assert tuple(tagged_field_default(fields["supported_features"])) == ()
    entity, is_array = field_shape(fields["supported_features"])
    assert is_array and entity is not None
