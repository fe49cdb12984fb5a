"""The store's logic once, over SQL, composed from one part per concern.

Each part is a class of its own module, with its SQL in ``sql/common/<concern>.sql`` (the
blocks both backends share) and ``sql/<backend>/<concern>.sql`` (the ones each writes its own
way):

- ``tasks``: tasks, from creation to their end, and the operator's resume and discard;
- ``leases``: a task's lease, fenced by its token;
- ``beats``: heartbeats, their history and the process samples;
- ``events``: the event log;
- ``kills``: kills in flight and the actions asked of a host's agent;
- ``agents``: the agents of a fleet;
- ``oncall``: acks, silences and schedules;
- ``paging``: the watchdog's own lease and its undelivered pages;
- ``retention``: pruning finished tasks and reading them page by page;
- ``jobs``: each job's summary, kept as its runs end, and a job's runs.

Every part stands on ``sql_base.SQLBase``: the adapter each backend (``sqlite``, ``postgres``)
implements, and the plumbing the parts share (holding a task's row, fencing a lease, writing
an event).
"""

from __future__ import annotations

from zombietop.store.agents import Agents
from zombietop.store.beats import Beats
from zombietop.store.events import Events
from zombietop.store.interface import Store
from zombietop.store.jobs import Jobs
from zombietop.store.kills import Kills
from zombietop.store.leases import Leases
from zombietop.store.oncall import OnCall
from zombietop.store.paging import Paging
from zombietop.store.retention import Retention
from zombietop.store.sql_base import Conn
from zombietop.store.tasks import Tasks


class SQLStore(
    Tasks[Conn],
    Leases[Conn],
    Beats[Conn],
    Events[Conn],
    Kills[Conn],
    Agents[Conn],
    OnCall[Conn],
    Paging[Conn],
    Retention[Conn],
    Jobs[Conn],
    Store,
):
    """Every store method, written against the adapter methods each backend implements."""
