"""Paging: how a page reaches a human, retried, and never blocking the watchdog.

- ``notify``: the outbox and its delivery: a command, a webhook, any apprise service;
- ``channels``: each channel ``[notify]`` configures, built by the one function that knows it;
- ``pagerduty``: incidents that open, are acknowledged and resolve in PagerDuty too;
- ``digest``: many task pages of one look, sent as one page per group;
- ``runbooks``: a step type's runbook link, filled with the task's fields.

What a page says and of which kind it is lives in ``zombietop.page``. The words (page, notice,
all-clear, digest, incident) are defined once in docs/glossary.md.
"""
