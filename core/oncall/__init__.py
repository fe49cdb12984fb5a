"""On call: the people side of an incident, read and written in the store.

- ``acks``: acks ("I'm on it"), silences (expiring rules: shown, never paged), notes, and when
  an open incident is paged again;
- ``handover``: what a person taking over the pager needs: incidents open and ended, silences
  ending soon, schedules missed;
- ``incident_story``: an incident's whole story, read back from the event log.

The words (ack, silence, notice, incident) are defined once in docs/glossary.md.
"""
