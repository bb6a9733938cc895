"""The substrate: versioned snapshots of one JSON object, merge patches, diffs, subscriptions."""

from assay.state.canonical import MAX_DEPTH as MAX_DEPTH
from assay.state.index import Subscription as Subscription
from assay.state.patch import merge_patch as merge_patch
from assay.state.snapshot import FieldChange as FieldChange
from assay.state.snapshot import Snapshot as Snapshot
from assay.state.snapshot import changed_fields as changed_fields
from assay.state.store import SourceSeen as SourceSeen
from assay.state.store import StateStore as StateStore
from assay.state.store import StoreStatistics as StoreStatistics
