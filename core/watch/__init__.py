"""The watchdog: ``zombietop watch``, which looks at the fleet again and again and pages once
per incident until someone acknowledges.

One look (see docs/glossary.md) polls through the judge, decides whether the poll can be
trusted, and hands each verdict to the part that knows what to do with it; every part acts
through the same hands, so a dry run does nothing.

- ``watchdog``: the loop, the transitions it detects, and the order of its parts;
- ``watchdog_hands``, ``watchdog_lease``: what the parts act with; one active watchdog a store;
- ``incident_book``: which incidents are open, what was said and done once;
- ``quarantines``, ``root_causes``: holds placed and let go; one page per root cause;
- ``poll_trust``, ``clock_watch``, ``withheld``: when a look's verdicts are withheld, and said so;
- ``spinning``, ``budget_watch``, ``schedule_watch``, ``failed_runs``: warning healths,
  overrun budgets, missed schedules, failed runs;
- ``metrics``, ``metrics_endpoint``, ``sd_notify``: what Prometheus and systemd are told.

Pages leave through ``zombietop.paging``; acks and silences come from ``zombietop.oncall``.
The words (look, book, hands, hold, incident, notice) are defined once in docs/glossary.md.
"""
