"""The pidbox messages zombietop writes and reads, as kombu's Redis transport lays them out.

The real workers answer them in tests/core/test_source_celery*.py; these check the edges.
"""

from __future__ import annotations

import base64
import json

import pytest

from zombietop.sources.celery_pidbox import UnreadableReply, broadcast_message, reply_of


def _reply(body: bytes, content_type: str, ticket: str = "t1") -> bytes:
    return json.dumps(
        {
            "body": base64.b64encode(body).decode(),
            "content-type": content_type,
            "headers": {"ticket": ticket},
            "properties": {"body_encoding": "base64"},
        }
    ).encode()


def test_a_broadcast_carries_the_question_its_ticket_and_where_to_answer() -> None:
    envelope = json.loads(broadcast_message("active", "t1", "r1", 5.0))
    body = json.loads(base64.b64decode(envelope["body"]))
    assert body["method"] == "active" and body["ticket"] == "t1"
    assert body["reply_to"] == {"exchange": "reply.celery.pidbox", "routing_key": "r1"}
    assert envelope["headers"]["expires"] == 5.0


def test_a_json_reply_is_read_and_anything_else_is_skipped() -> None:
    answer = json.dumps({"w1@vm": []}).encode()
    assert reply_of(_reply(answer, "application/json")) == ("t1", {"w1@vm": []})
    assert reply_of(b"not json") is None
    assert reply_of(_reply(b"[1, 2]", "application/json")) is None


def test_a_pickled_reply_is_refused_with_what_to_set() -> None:
    """zombietop never unpickles what a broker hands it: it says which setting to change."""
    with pytest.raises(UnreadableReply, match='set task_serializer = "json"'):
        reply_of(_reply(b"\x80\x04K\x01.", "application/x-python-serialize"))
