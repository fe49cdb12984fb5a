"""The PagerDuty channel: incidents that open, are acknowledged and resolve in PagerDuty too.

Other channels hear a line. PagerDuty keeps an incident of its own and escalates it until
someone acknowledges it there, so it must hear the rest of the story: that a human acked it in
zombietop, and that it ended. Each page becomes one event of the Events API v2, named by the
zombietop incident it belongs to (``dedup_key``, ``zombietop.page.incident_key``):

- an incident, or a later notice of it: ``trigger`` (a notice only adds to the same alert);
- an ack in zombietop: ``acknowledge``;
- the all-clear: ``resolve``.

The Outbox hands this channel every page as it is, never a digest, and each incident's pages
in order. Escalation, schedules and who is on call stay PagerDuty's: zombietop grows none.

The routing key is a secret: it is read from a file only its owner can read, or from the
environment, never from the config file, and never shows in a log, an event or an error.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from zombietop.config import PAGERDUTY_KEY_ENV, PagerDutySettings
from zombietop.errors import ZombietopError
from zombietop.health import Health
from zombietop.page import Page, PageKind, incident_key
from zombietop.paging.notify import ChannelThreads, DeliveryError
from zombietop.printable import ID_LIMIT, bounded, printable
from zombietop.private import read_secret
from zombietop.procs import this_host
from zombietop.redact import redact_url

SUMMARY_LIMIT = 1024
"""PagerDuty's longest summary."""
DEDUP_LIMIT = 255
"""PagerDuty's longest dedup_key."""
ROUTING_KEY = re.compile(r"[A-Za-z0-9]{32}")
"""An Events API v2 integration key: 32 letters and digits."""
KEY_FILE_LIMIT = 4096


def read_routing_key(settings: PagerDutySettings, environ: Mapping[str, str] = os.environ) -> str:
    """The routing key: the first line of ``routing_key_file`` that is not a comment, else
    ``$ZOMBIETOP_PAGERDUTY_KEY``."""
    what = "[notify.pagerduty] routing_key_file"
    if settings.routing_key_file is not None:
        text = read_secret(settings.routing_key_file, what=what, limit=KEY_FILE_LIMIT)
        lines = [line.strip() for line in text.splitlines()]
        key = next((line for line in lines if line and not line.startswith("#")), "")
        where = f"{what} {settings.routing_key_file}"
    else:
        key = environ.get(PAGERDUTY_KEY_ENV, "").strip()
        where = f"${PAGERDUTY_KEY_ENV}"
        if not key:
            raise ZombietopError(
                "[notify.pagerduty]: no routing key; name a file holding it (chmod 600) with "
                f"routing_key_file, or set ${PAGERDUTY_KEY_ENV}"
            )
    if not ROUTING_KEY.fullmatch(key):
        raise ZombietopError(
            f"{where}: not a routing key (an Events API v2 integration key is 32 letters and "
            "digits: the service's Integrations tab, Integration Key)"
        )
    return key


def dedup_key(page: Page) -> str:
    """The PagerDuty alert a page belongs to: its incident, else one of its own (an overrun)."""
    own = incident_key(f"{page.kind}:{page.task_id or 'watchdog'}", page.at)
    key = printable(page.incident if page.incident is not None else own)
    if len(key) <= DEDUP_LIMIT:
        return key
    # A long task id: its start stays readable, the digest keeps two long ids apart.
    digest = hashlib.sha256(key.encode("utf-8", errors="surrogateescape")).hexdigest()[:32]
    return f"{key[: DEDUP_LIMIT - len(digest) - 1]}~{digest}"


def severity(page: Page) -> str:
    """How loud PagerDuty should be: a lost task or a blind watchdog is critical."""
    if page.kind.budget:
        return "warning"
    if page.kind is PageKind.WATCHDOG or _critical(page.health):
        return "critical"
    return "error"


def _critical(health: object) -> bool:
    """True for a health whose page asks for a kill or a resume now: the work is lost
    (``retryable``) or a process runs loose (``asks_to_kill``)."""
    return isinstance(health, Health) and (health.retryable or health.asks_to_kill)


def event(page: Page, routing_key: str, *, source: str) -> dict[str, Any]:
    """The Events API v2 body of one page."""
    key = dedup_key(page)
    if page.kind is PageKind.ACKNOWLEDGED:
        return {"routing_key": routing_key, "event_action": "acknowledge", "dedup_key": key}
    if page.kind is PageKind.ALL_CLEAR:
        return {"routing_key": routing_key, "event_action": "resolve", "dedup_key": key}
    details = {"page": str(page.kind), "line": page.shown}
    if page.task_id is not None:
        details["task"] = bounded(page.task_id, limit=ID_LIMIT, word=ID_LIMIT)
    if page.health is not None:
        details["health"] = str(page.health)
    if page.trace_id is not None:
        details["trace_id"] = page.trace_id
    payload: dict[str, Any] = {
        "summary": bounded(page.line, limit=SUMMARY_LIMIT),
        "source": bounded(page.host or source, limit=DEDUP_LIMIT),
        "severity": severity(page),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(page.at)),
        "component": details.get("task", "watchdog"),
        "class": str(page.health or page.kind),
        "custom_details": details,
    }
    body: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": key,
        "client": "zombietop",
        "payload": payload,
    }
    links: list[dict[str, str]] = []
    if page.runbook is not None:
        runbook = printable(page.runbook)
        details["runbook"] = runbook
        if runbook.startswith(("https://", "http://")):
            links.append({"href": runbook, "text": "runbook"})
    if page.trace_url is not None:
        details["trace_url"] = page.trace_url
        links.append({"href": printable(page.trace_url), "text": "trace"})
    if links:
        body["links"] = links
    return body


class PagerDutyNotifier:
    """POST each page to the Events API v2; 429 and 5xx are tried again, 400 is final."""

    kind = "pagerduty"
    keeps_incidents = True

    def __init__(
        self,
        settings: PagerDutySettings,
        timeout: float,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self.url = settings.url
        self.timeout = timeout
        self.name = f"pagerduty {redact_url(settings.url)}"
        self._key = read_routing_key(settings, environ)
        self._source = this_host()
        self._threads = ChannelThreads("zombietop-pagerduty")

    async def send(self, page: Page) -> None:
        body = json.dumps(event(page, self._key, source=self._source)).encode()
        await self._threads.run(self._post, body)

    def _post(self, body: bytes) -> None:
        request = urllib.request.Request(
            self.url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                if not 200 <= response.status < 300:
                    raise DeliveryError(f"{self.name}: HTTP {response.status}")
        except urllib.error.HTTPError as exc:
            said = self._clean(exc.read(2048).decode("utf-8", errors="replace"))
            # PagerDuty: 400 is a body it will never take, 429 and 5xx pass. A 401, 403 or 404
            # is a wrong key or URL, which no retry mends either (a proxy's 408 may pass).
            retry = exc.code in (408, 429) or exc.code >= 500
            raise DeliveryError(
                f"{self.name}: HTTP {exc.code} {self._clean(str(exc.reason))} {said}".rstrip(),
                retry=retry,
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DeliveryError(f"{self.name}: {self._clean(str(reason))}") from None
        except (ValueError, http.client.HTTPException) as exc:
            raise DeliveryError(f"{self.name}: {self._clean(str(exc))}") from None

    def _clean(self, text: str) -> str:
        """What a server or the network said, without the routing key (a proxy may echo the
        body) and printable."""
        return bounded(text.replace(self._key, "***"), limit=300)
