"""Incremental fetch sessions (KIP-227) as the broker keeps them."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from kcli.broker.replica.fetch_sessions import CachedPartition, FetchSessionCache
from kcli.errors import ErrorCode, KcliError


def _parts(*keys, offset=0):
    return OrderedDict((key, CachedPartition(None, offset, 1024)) for key in keys)


def test_epoch_zero_opens_a_session_and_later_requests_send_only_changes():
    cache = FetchSessionCache(10)
    full = cache.new_context(0, 0, _parts(("a", 0), ("a", 1)), [])
    assert full.session_id > 0 and not full.incremental
    incremental = cache.new_context(full.session_id, 1, _parts(("b", 0), offset=5), [("a", 1)])
    assert incremental.incremental
    assert list(incremental.partitions) == [("a", 0), ("b", 0)]
    assert incremental.partitions[("b", 0)].fetch_offset == 5
    # an update changes the position of a partition already in the session
    again = cache.new_context(full.session_id, 2, _parts(("a", 0), offset=9), [])
    assert again.partitions[("a", 0)].fetch_offset == 9


def test_unknown_session_and_wrong_epoch_are_errors():
    cache = FetchSessionCache(10)
    with pytest.raises(KcliError) as unknown:
        cache.new_context(12345, 1, _parts(), [])
    assert unknown.value.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    session = cache.new_context(0, 0, _parts(("a", 0)), []).session_id
    with pytest.raises(KcliError) as wrong:
        cache.new_context(session, 5, _parts(), [])
    assert wrong.value.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH


def test_final_epoch_closes_the_session_and_answers_without_one():
    cache = FetchSessionCache(10)
    session = cache.new_context(0, 0, _parts(("a", 0)), []).session_id
    sessionless = cache.new_context(session, -1, _parts(("a", 0)), [])
    assert sessionless.session_id == 0 and not sessionless.incremental
    assert len(cache) == 0


def test_a_full_cache_evicts_the_least_recently_used_session():
    cache = FetchSessionCache(2)
    first = cache.new_context(0, 0, _parts(("a", 0)), []).session_id
    second = cache.new_context(0, 0, _parts(("a", 0)), []).session_id
    cache.new_context(first, 1, _parts(), [])  # first is now the most recently used
    third = cache.new_context(0, 0, _parts(("a", 0)), []).session_id
    assert len(cache) == 2
    assert cache.new_context(first, 2, _parts(), []).session_id == first
    assert cache.new_context(third, 1, _parts(), []).session_id == third
    with pytest.raises(KcliError):
        cache.new_context(second, 1, _parts(), [])


def test_no_slots_means_no_sessions():
    assert FetchSessionCache(0).new_context(0, 0, _parts(("a", 0)), []).session_id == 0


def test_must_respond_only_when_something_changed():
    cached = CachedPartition(None, 0, 1024)
    assert cached.must_respond(10, 10, 0, False, 0)  # first answer
    assert not cached.must_respond(10, 10, 0, False, 0)
    assert cached.must_respond(11, 11, 0, False, 0)  # high watermark moved
    assert cached.must_respond(11, 11, 3, False, 0)  # log start moved
    assert cached.must_respond(11, 11, 3, True, 0)  # records
    assert cached.must_respond(11, 11, 3, False, 1)  # an error


def test_deleted_topic_leaves_every_session():
    cache = FetchSessionCache(10)
    session = cache.new_context(0, 0, _parts(("gone", 0), ("kept", 0)), []).session_id
    cache.remove_topic("gone")
    assert list(cache.new_context(session, 1, _parts(), []).partitions) == [("kept", 0)]
