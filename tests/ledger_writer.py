"""A ledger writer for the crash test: several threads append until the process is killed.

    python ledger_writer.py URL THREADS

Prints ``ready SIZE`` once the ledger is open, then ``SEQ HASH`` for each entry, only after
``append`` returned it (the acknowledgment), each line in one write so a kill never leaves
half of one.
"""

from __future__ import annotations

import os
import sys
import threading

from assay.ledger import open_ledger


def _say(line: str) -> None:
    os.write(sys.stdout.fileno(), f"{line}\n".encode())


def main() -> None:
    url, threads = sys.argv[1], int(sys.argv[2])
    ledger = open_ledger(url)
    say = threading.Lock()
    _say(f"ready {ledger.size}")

    def append_forever(thread: int) -> None:
        for n in range(10**9):
            entry = ledger.append(
                "fire",
                {"writer": os.getpid(), "thread": thread, "n": n, "pad": "x" * (n % 50)},
                session=f"thread-{thread}",
                transition=f"crash.append#{n}",
            )
            with say:
                _say(f"{entry.seq} {entry.hash}")

    for thread in range(threads):
        threading.Thread(target=append_forever, args=(thread,), daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
