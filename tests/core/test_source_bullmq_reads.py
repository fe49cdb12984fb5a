"""How the BullMQ source reads what it finds in Redis, without a Redis: the workers' connection
names in CLIENT LIST, client addresses, BullMQ's times, failed reasons and the stalled words."""

from __future__ import annotations

import base64
import sys

import pytest

from zombietop.errors import SourceError
from zombietop.sources import open_source
from zombietop.sources.bullmq import bull_task_id, stalled_words
from zombietop.sources.bullmq_reads import Client, failed_reason, millis, workers
from zombietop.sources.kernel_sockets import split_addr


def _name(queue: str) -> str:
    return base64.b64encode(queue.encode()).decode()


def test_the_workers_connections_are_found_by_their_names() -> None:
    clients = [
        {"name": f"bull:{_name('emails')}", "addr": "127.0.0.1:5000"},
        {"name": f"bull:{_name('emails')}:w:mailer", "addr": "10.0.0.2:5001"},
        {"name": f"bull:{_name('emails')}:qe", "addr": "127.0.0.1:5002"},  # QueueEvents
        {"name": f"other:{_name('emails')}", "addr": "127.0.0.1:5003"},  # another prefix
        {"name": "bull:not base64!", "addr": "127.0.0.1:5004"},
        {"name": "zombietop", "addr": "127.0.0.1:5005"},
        {"name": "", "addr": "127.0.0.1:5006"},
    ]
    assert workers(clients, "bull") == [
        Client(queue="emails", worker=None, addr="127.0.0.1:5000"),
        Client(queue="emails", worker="mailer", addr="10.0.0.2:5001"),
    ]


@pytest.mark.parametrize(
    ("addr", "found"),
    [
        ("127.0.0.1:5000", ("127.0.0.1", 5000)),
        ("[::1]:5000", ("::1", 5000)),
        ("::ffff:127.0.0.1:5000", ("127.0.0.1", 5000)),
        ("/tmp/redis.sock:0", None),
        ("127.0.0.1:port", None),
        ("", None),
    ],
)
def test_a_clients_address_as_the_kernel_writes_it(
    addr: str, found: tuple[str, int] | None
) -> None:
    assert split_addr(addr) == found


def test_bullmqs_times_are_milliseconds() -> None:
    assert millis("1796565475087") == 1796565475.087
    assert millis(None) is None and millis("") is None and millis("soon") is None
    assert millis("0") is None  # BullMQ writes 0 for a time not yet reached


def test_a_failed_reason_is_one_short_printable_line() -> None:
    assert failed_reason("boom in 7\n    at work (/srv/x.js:1:1)") == "boom in 7"
    said = failed_reason("\x1b[2J" + "x" * 500)
    assert said is not None and "\x1b" not in said and len(said) <= 200
    assert failed_reason("") is None and failed_reason(None) is None


def test_a_long_queue_name_is_bounded_in_ids_and_words() -> None:
    queue = "q" * 100_000
    assert len(bull_task_id(queue, "send", "1")) < 600
    assert "no worker on queue" in stalled_words(queue[:10], 0)
    assert stalled_words("emails", 2).startswith("stalled in BullMQ's words; 2 workers on queue")


async def test_without_the_redis_client_the_source_names_its_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    source = open_source("bullmq+redis://127.0.0.1:1/0")
    with pytest.raises(SourceError, match=r"a BullMQ source needs redis, which is not installed"):
        await source.open()
    with pytest.raises(SourceError, match=r"zombietop\[bullmq\]"):
        await source.open()
