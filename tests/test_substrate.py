"""The substrate: confidence and its three parts, sources, and the SubstrateState wire type."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from assay import Redaction
from assay.clock import VirtualClock
from assay.state.confidence import assess, coverage, freshness, health
from assay.state.probes import CallableProbe
from assay.state.store import StateStore
from assay.state.substrate import Substrate


def test_freshness_exact_points() -> None:
    assert freshness(None, 1.0) == 0.0
    assert freshness(1.0, 1.0) == 1.0
    assert freshness(2.0, 1.0) == 0.5
    assert freshness(3.0, 1.0) == 0.0


def test_coverage_is_the_share_of_declared_keys_present() -> None:
    objects = {"inbox": {"sent_count": 1}, "drone": {}}
    declared = [("inbox", "sent_count"), ("drone", "mode"), ("view", "domain"), ("inbox",)]
    assert coverage(objects, declared) == 0.5
    assert coverage(objects, []) == 1.0


def test_health_is_the_mean_probe_ratio() -> None:
    assert health([1.0, 0.5]) == 0.75
    assert health([]) == 1.0


def test_confidence_is_the_product_of_its_parts() -> None:
    confidence = assess(
        age=3.0, expected_interval=2.0, objects={"a": 1}, declared=[("a",), ("b",)],
        probe_ratios=[0.8],
    )  # fmt: skip
    assert (confidence.freshness, confidence.coverage, confidence.health) == (0.75, 0.5, 0.8)
    assert confidence.value == pytest.approx(0.3)


def test_substrate_state_reports_sources_confidence_and_redacts() -> None:
    async def main() -> Any:
        clock = VirtualClock()
        reads = iter([{"drone.mode": "GUIDED"}, RuntimeError("link down"), {"drone.mode": "RTL"}])

        def read_drone() -> dict[str, Any]:
            value = next(reads)
            if isinstance(value, Exception):
                raise value
            return value

        substrate = Substrate(
            StateStore(clock=clock),
            probes=[CallableProbe(read_drone, name="drone", interval=1.0)],
            declared_keys=["drone.mode", "inbox.sent_count", "user.token"],
            redaction=Redaction(["user.token"]),
            clock=clock,
        )
        substrate.store.report({"inbox.sent_count": 3, "user.token": "sk-secret"}, source="app")
        await substrate.start()
        await clock.advance(2.0)
        state = substrate.state()
        await substrate.stop()
        return state

    state = asyncio.run(main())
    assert state.objects == {
        "inbox": {"sent_count": 3},
        "user": {"token": "[redacted]"},
        "drone": {"mode": "RTL"},
    }
    assert state.version == 3
    assert state.confidence.coverage == 1.0
    assert state.confidence.health == pytest.approx(2 / 3)
    assert state.confidence.freshness == 1.0
    assert [(s.name, s.kind, s.messages) for s in state.sources] == [
        ("app", "report", 1),
        ("drone", "probe", 2),
    ]
    drone = state.sources[1]
    assert drone.last_error == "RuntimeError: link down"
    assert drone.last_seen_ms_ago == 0
    assert "sk-secret" not in state.model_dump_json()


def test_a_key_a_probe_no_longer_answers_is_removed_in_one_version() -> None:
    """It used to be stored as null: {"inbox": null, "token": null}, with inbox null→null
    listed as "added" and token "abc"→null as "changed", and {"inbox": {"eq": null}} held."""
    answers = iter(
        [
            {"inbox": {"unread": 3}, "token": "abc", "kept": None, '["a.b"]': 1},
            {"kept": None, '["a.b"]': 2},
        ]
    )

    async def main() -> tuple[Any, ...]:
        clock = VirtualClock()
        substrate = Substrate(
            probes=[CallableProbe(lambda: next(answers), name="app")], clock=clock
        )
        substrate.store.report({"other": 1}, source="reporter")
        assert substrate.poller is not None
        await substrate.poller.read_once()
        first = substrate.store.current
        await substrate.poller.read_once()
        second = substrate.store.current
        changes = substrate.store.changes_between(first, second)
        return second.objects, second.version - first.version, changes, substrate.sources()

    objects, versions, changes, sources = asyncio.run(main())
    assert objects == {"other": 1, "kept": None, "a.b": 2}
    assert versions == 1
    assert [(c.key, c.before, c.after, c.kind) for c in changes] == [
        ('["a.b"]', 1, 2, "changed"),
        ("inbox.unread", 3, None, "removed"),
        ("token", "abc", None, "removed"),
    ]
    assert [(s.name, s.messages) for s in sources] == [("reporter", 1), ("app", 2)]
