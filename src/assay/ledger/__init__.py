"""The Evidence Ledger (SPEC §7): append-only, hash-linked, Merkle-proved evidence.

``open_ledger(url)`` opens one; ``Ledger`` appends, proves and signs; the backends store
(``MemoryBackend``, ``SQLiteBackend``, ``PostgresBackend``, all behind ``LedgerBackend``);
``verify_ledger`` re-checks everything stored. Beside the entries they keep the hosts'
leases (``Lease``), by which a host tells the fires a stopped host left open (``Closing``).
"""

from assay.ledger.backends.group_commit import GroupCommitStatistics as GroupCommitStatistics
from assay.ledger.backends.memory import MemoryBackend as MemoryBackend
from assay.ledger.backends.protocol import LedgerBackend as LedgerBackend
from assay.ledger.backends.query import EntryFilter as EntryFilter
from assay.ledger.backends.sqlite import SQLiteBackend as SQLiteBackend
from assay.ledger.backends.stored import StoredCheckpoint as StoredCheckpoint
from assay.ledger.backends.stored import StoredRow as StoredRow
from assay.ledger.checkpoint import Checkpoint as Checkpoint
from assay.ledger.checkpoint import SigningKey as SigningKey
from assay.ledger.checkpoint import load_public_key as load_public_key
from assay.ledger.checkpoint import verify_checkpoint as verify_checkpoint
from assay.ledger.entry import GENESIS_HASH as GENESIS_HASH
from assay.ledger.entry import Entry as Entry
from assay.ledger.entry import EntryDraft as EntryDraft
from assay.ledger.entry import EntryKind as EntryKind
from assay.ledger.lease import Closing as Closing
from assay.ledger.lease import Lease as Lease
from assay.ledger.ledger import Ledger as Ledger
from assay.ledger.proof import ConsistencyProof as ConsistencyProof
from assay.ledger.proof import InclusionProof as InclusionProof
from assay.ledger.proof import TreeHead as TreeHead
from assay.ledger.url import open_backend as open_backend
from assay.ledger.url import open_ledger as open_ledger
from assay.ledger.verification import LedgerProblem as LedgerProblem
from assay.ledger.verification import LedgerReport as LedgerReport
from assay.ledger.verification import export_jsonl as export_jsonl
from assay.ledger.verification import verify_jsonl as verify_jsonl
from assay.ledger.verification import verify_ledger as verify_ledger
