"""Probes: assay pulls the application's state where the application does not push it.

``HttpProbe`` reads a JSON endpoint, ``SqlProbe`` runs SQL queries against SQLite or
PostgreSQL, ``PageProbe`` reads a page in headless Chromium, ``CallableProbe`` calls a Python
function; a ``Poller`` reads each at its interval on an injected clock and hands every
successful read to a sink.
"""

from assay.errors import ProbeConfigError as ProbeConfigError
from assay.errors import ProbeError as ProbeError
from assay.state.probes.function import CallableProbe as CallableProbe
from assay.state.probes.function import ProbeFunction as ProbeFunction
from assay.state.probes.http import HttpProbe as HttpProbe
from assay.state.probes.page import PageProbe as PageProbe
from assay.state.probes.pointer import JsonPointer as JsonPointer
from assay.state.probes.poller import Poller as Poller
from assay.state.probes.poller import Sink as Sink
from assay.state.probes.probe import DEFAULT_INTERVAL as DEFAULT_INTERVAL
from assay.state.probes.probe import ClosableProbe as ClosableProbe
from assay.state.probes.probe import Probe as Probe
from assay.state.probes.sql import Query as Query
from assay.state.probes.sql import QuerySpec as QuerySpec
from assay.state.probes.sql import SqlProbe as SqlProbe
from assay.state.probes.sqlbackends import ConnectionFactory as ConnectionFactory
