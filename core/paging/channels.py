"""The channels ``[notify]`` configures, each built by the one function that knows it.

A new channel is a ``Notifier`` (``zombietop.paging.notify``) in a module of its own and one line in
``CHANNELS``: what the settings say it is on, and how to build it.
"""

from __future__ import annotations

from collections.abc import Callable

from zombietop.config import NotifySettings
from zombietop.paging.notify import AppriseNotifier, CommandNotifier, Notifier, WebhookNotifier
from zombietop.paging.pagerduty import PagerDutyNotifier


def _command(settings: NotifySettings) -> Notifier | None:
    return CommandNotifier(settings.command, settings.timeout) if settings.command else None


def _webhook(settings: NotifySettings) -> Notifier | None:
    return WebhookNotifier(settings.webhook, settings.timeout) if settings.webhook else None


def _apprise(settings: NotifySettings) -> Notifier | None:
    return AppriseNotifier(settings.apprise) if settings.apprise else None


def _pagerduty(settings: NotifySettings) -> Notifier | None:
    if settings.pagerduty is None:
        return None
    return PagerDutyNotifier(settings.pagerduty, settings.timeout)


CHANNELS: tuple[Callable[[NotifySettings], Notifier | None], ...] = (
    _command,
    _webhook,
    _apprise,
    _pagerduty,
)
"""Every channel, in the order pages go out: each gives its notifier, or None when unset."""


def build_notifiers(settings: NotifySettings) -> list[Notifier]:
    """A notifier for each channel configured; ``ZombietopError`` for one that cannot be (an
    unknown apprise scheme, a routing key others can read)."""
    return [notifier for build in CHANNELS if (notifier := build(settings)) is not None]
