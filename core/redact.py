"""Channel URLs, named without their secrets: what logs, events and errors may say of them.

A webhook URL carries its secret in the path (``/services/T/B/SECRET``), the query or the
userinfo; an apprise URL carries it in the userinfo and often in the host part itself
(``tgram://BOTTOKEN/CHAT``). Only the scheme, a host that is a real host name, and the port
name a channel anywhere a person or a store can read it.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

_HOST_NAME = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+$|^localhost$", re.IGNORECASE)


def _is_host(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return bool(_HOST_NAME.match(name))
    return True


def redact_url(url: str) -> str:
    """Return ``scheme://host:port`` of ``url``; a host part that is no host name is hidden."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:  # an unparsable port or bracket: say nothing of what follows the scheme
        scheme = url.split("://", 1)[0] if "://" in url else ""
        return f"{scheme}://***" if scheme.isalnum() else "***"
    shown = host if host and _is_host(host) else "***"
    if ":" in shown:
        shown = f"[{shown}]"
    return f"{parts.scheme}://{shown}" + ("" if port is None else f":{port}")


def scrub(text: str, url: str) -> str:
    """Replace every secret part of ``url`` that ``text`` quotes with the redacted form."""
    redacted = redact_url(url)
    text = text.replace(url, redacted)
    try:
        parts = urlsplit(url)
        secrets = [parts.password, parts.username, parts.path, parts.query, parts.hostname]
    except ValueError:
        return text
    shown = redacted.split("://", 1)[-1]
    for secret in secrets:
        # A short piece ("/" or "a") would eat ordinary words; a host shown anyway is no secret.
        if secret and len(secret) >= 4 and secret not in shown:
            text = text.replace(secret, "***")
    return text
