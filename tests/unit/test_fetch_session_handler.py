"""The fetching side of KIP-227 sessions, checked against Kafka's FetchSessionHandler rules: the
first request is full, later ones name only changed partitions and the forgotten ones, and an
error or a failed request makes the next one full."""

from __future__ import annotations

from collections import OrderedDict

from kcli.client.fetch_request import FetchPosition
from kcli.client.fetch_session_handler import FetchSessionHandler
from kcli.errors import ErrorCode

A, B, C = ("t", 0), ("t", 1), ("u", 0)


def positions(**offsets: int) -> OrderedDict:
    keys = {"a": A, "b": B, "c": C}
    return OrderedDict((keys[name], FetchPosition(offset, 0, 1024)) for name, offset in offsets.items())


def opened(handler: FetchSessionHandler, wanted: OrderedDict, session_id: int = 77):
    request = handler.build(wanted)
    assert handler.handle_response(request, ErrorCode.NONE, session_id, list(wanted))
    return request


def test_first_request_is_full_and_opens_a_session():
    handler = FetchSessionHandler()
    request = handler.build(positions(a=0, b=5))
    assert (request.session_id, request.epoch, request.is_full) == (0, 0, True)
    assert list(request.to_send) == [A, B] and request.to_forget == []
    assert handler.handle_response(request, ErrorCode.NONE, 77, [A, B])
    assert (handler.session_id, handler.epoch) == (77, 1)


def test_incremental_request_names_only_changes_and_forgotten_partitions():
    handler = FetchSessionHandler()
    opened(handler, positions(a=0, b=5))
    request = handler.build(positions(a=10, c=3))  # a moved, b dropped, c added
    assert (request.session_id, request.epoch, request.is_full) == (77, 1, False)
    assert list(request.to_send) == [A, C]
    assert request.to_forget == [B]
    assert set(request.session_partitions) == {A, C}
    # An answer holding only what changed at the leader is accepted; the epoch moves on.
    assert handler.handle_response(request, ErrorCode.NONE, 77, [C])
    assert handler.epoch == 2
    unchanged = handler.build(positions(a=10, c=3))
    assert unchanged.to_send == {} and unchanged.to_forget == [] and not unchanged.is_empty


def test_a_session_error_makes_the_next_request_full():
    handler = FetchSessionHandler()
    opened(handler, positions(a=0))
    request = handler.build(positions(a=1))
    assert not handler.handle_response(request, ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
    again = handler.build(positions(a=1))
    # Kafka's nextCloseExisting: the old id with epoch 0 closes it and opens another.
    assert (again.session_id, again.epoch, list(again.to_send)) == (77, 0, [A])
    assert not handler.handle_response(again, ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [])
    fresh = handler.build(positions(a=1))
    assert (fresh.session_id, fresh.epoch) == (0, 0)


def test_a_failed_request_makes_the_next_request_full():
    handler = FetchSessionHandler()
    opened(handler, positions(a=0, b=0))
    handler.build(positions(a=4, b=0))
    handler.handle_error()
    request = handler.build(positions(a=4, b=0))
    assert request.is_full and list(request.to_send) == [A, B]


def test_an_answer_outside_the_session_is_ignored():
    handler = FetchSessionHandler()
    opened(handler, positions(a=0))
    request = handler.build(positions(a=0))
    assert not handler.handle_response(request, ErrorCode.NONE, 77, [C])
    assert handler.build(positions(a=0)).is_full


def test_a_broker_without_a_session_keeps_requests_full():
    handler = FetchSessionHandler()
    opened(handler, positions(a=0), session_id=0)
    request = handler.build(positions(a=2))
    assert request.is_full and request.session_id == 0


def test_nothing_wanted_and_nothing_to_forget_sends_nothing():
    handler = FetchSessionHandler()
    assert handler.build(OrderedDict()).is_empty
    opened(handler, positions(a=0))
    request = handler.build(OrderedDict())
    assert not request.is_empty and request.to_forget == [A]
