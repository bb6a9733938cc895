"""The collector settings of a serving process (``prepare_to_serve``)."""

from __future__ import annotations

import json
import subprocess
import sys

from assay.host.collector import YOUNG_THRESHOLD

SCRIPT = """
import gc
import json
from assay.host.collector import prepare_to_serve

kept = [[] for _ in range(1000)]
before = gc.get_threshold()
frozen_before = gc.get_freeze_count()
prepare_to_serve()
print(json.dumps({
    "before": before,
    "after": gc.get_threshold(),
    "frozen_before": frozen_before,
    "frozen_after": gc.get_freeze_count(),
    "tracked_in_generations": sum(len(gc.get_objects(n)) for n in range(3)),
}))
"""


def test_prepare_to_serve_freezes_the_heap_and_raises_only_the_young_threshold() -> None:
    # In a process of its own: freezing pytest's heap would change every later test's GC.
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    figures = json.loads(done.stdout)
    assert figures["frozen_before"] == 0
    assert figures["frozen_after"] >= 1000  # the lists alive at the call, at least
    # Nothing made before the call is left for a later collection to walk.
    assert figures["tracked_in_generations"] < 100
    assert figures["after"] == [YOUNG_THRESHOLD, *figures["before"][1:]]
