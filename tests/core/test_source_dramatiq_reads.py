"""How the Dramatiq source reads the broker's keys and names: pure functions, no Redis."""

from __future__ import annotations

import json
import pickle

import pytest

from zombietop.sources.dramatiq_reads import DATA_SHOWN, decoded, names, script_worker

WHERE = {"queue": "q", "where": "queued", "redis_id": "r1", "key_queue": "q"}


def test_a_message_reads_its_names_times_and_retries_never_its_arguments() -> None:
    data = {
        "queue_name": "q",
        "actor_name": "send",
        "args": ["secret"],
        "kwargs": {"token": "secret"},
        "options": {"redis_message_id": "r1", "eta": 1_700_000_060_000, "retries": 2},
        "message_id": "m1",
        "message_timestamp": 1_700_000_000_000,
    }
    found = decoded(json.dumps(data).encode(), **WHERE)
    assert (found.actor, found.message_id, found.retries) == ("send", "m1", 2)
    assert (found.enqueued, found.eta) == (1_700_000_000.0, 1_700_000_060.0)
    assert "secret" not in repr(found)


@pytest.mark.parametrize(
    "data",
    [
        pickle.dumps({"actor_name": "send"}),  # another encoder: never unpickled
        b"not json",
        b"[1, 2]",
        json.dumps({"actor_name": "x" * DATA_SHOWN}).encode(),  # too long to decode
        json.dumps({"actor_name": 7, "message_id": None, "options": "x"}).encode(),
    ],
)
def test_data_that_does_not_read_leaves_a_message_without_names(data: bytes) -> None:
    found = decoded(data, **WHERE)
    assert found.actor is None and found.message_id == "r1" and found.retries == 0


def test_the_key_names_give_queues_and_acks_sets() -> None:
    keys = {
        "dramatiq:*.msgs": [
            b"dramatiq:default.msgs",
            b"dramatiq:default.DQ.msgs",
            b"dramatiq:.msgs",
        ],
        "dramatiq:__acks__.*": [b"dramatiq:__acks__.w-1.default.DQ", b"dramatiq:__acks__.bad"],
    }
    queues, acks = names(lambda match: keys[match], "dramatiq")
    assert queues == ["default", "default.DQ"]
    assert acks == ["w-1.default.DQ"]


@pytest.mark.parametrize(
    ("command", "worker"),
    [
        ("EVALSHA abc 1 dramatiq fetch 17 default w-1 60000 604800000 0 3996 4", "w-1"),
        ("evalsha abc 1 dramatiq ack 17 default w-2 60000", "w-2"),
        ("EVALSHA abc 1 other fetch 17 default w-1 60000", None),
        ("EVALSHA abc 2 dramatiq fetch 17 default w-1 60000", None),
        ("HSET dramatiq:default.msgs a b c d e f g", None),
        ("EVALSHA abc 1 dramatiq", None),
    ],
)
def test_the_worker_a_call_names(command: str, worker: str | None) -> None:
    assert script_worker(command, "dramatiq") == worker
