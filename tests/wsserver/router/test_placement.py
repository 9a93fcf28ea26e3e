"""Placement as a pure function: rendezvous hashing, owners first, draining and full last."""

from __future__ import annotations

from dataclasses import replace

from tests.wsserver.registry.worker_entries import info
from wsserver.router.placement import placement_order, rendezvous_order


def test_rendezvous_order_is_deterministic() -> None:
    workers = [info(f"w{i}") for i in range(5)]
    first = rendezvous_order("sess_abc", workers)
    assert rendezvous_order("sess_abc", list(reversed(workers))) == first
    assert sorted(w.worker_id for w in first) == [w.worker_id for w in workers]
    # Different keys rank differently (otherwise every session lands on one worker).
    assert len({rendezvous_order(f"k{i}", workers)[0].worker_id for i in range(100)}) == 5


def test_removing_a_worker_moves_only_its_keys() -> None:
    workers = [info(f"w{i}") for i in range(5)]
    keys = [f"sess_{i}" for i in range(2000)]
    before = {key: rendezvous_order(key, workers)[0].worker_id for key in keys}
    survivors = [w for w in workers if w.worker_id != "w2"]
    after = {key: rendezvous_order(key, survivors)[0].worker_id for key in keys}
    moved = {key for key in keys if before[key] != after[key]}
    assert moved == {key for key in keys if before[key] == "w2"}
    # ...and each moved key goes to its second choice, so they spread, not pile up.
    for key in moved:
        assert after[key] == rendezvous_order(key, workers)[1].worker_id
    assert len({after[key] for key in moved}) == 4


def test_placement_order() -> None:
    a, b, c = info("a"), info("b"), info("c")
    ranked = rendezvous_order("sess_k", [a, b, c])
    assert placement_order("sess_k", [a, b, c]) == ranked
    # The live owner goes first, whatever its rank.
    last = ranked[-1]
    assert placement_order("sess_k", [a, b, c], owner=last.worker_id)[0] == last
    # An owner that is not live (not in the list) changes nothing.
    assert placement_order("sess_k", [a, b, c], owner="gone") == ranked
    # Draining workers never take a connection, not even as the owner.
    draining = replace(ranked[0], draining=True)
    others = [w for w in ranked if w is not ranked[0]]
    assert placement_order("sess_k", [draining, *others], owner=draining.worker_id) == others
    # Full workers are tried after every worker with room.
    full = replace(ranked[0], capacity=2, sessions=2)
    assert placement_order("sess_k", [full, *others]) == [*others, full]
