"""Where a ledger's entries are stored: ``LedgerBackend`` (``protocol``) and its backends,
``MemoryBackend`` (``memory``), ``SQLiteBackend`` (``sqlite``) and ``PostgresBackend``
(``postgres``); the database backends commit appends in groups (``group_commit``)."""
