"""Per-session verdict of a reconnect storm: lost, doubled and reordered events.

Pure functions over the seqs a session received (in arrival order, across the
connection it lost and the one it resumed on), so the rules are testable
without sockets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SessionCheck:
    """What one session's event stream shows."""

    received: int
    """Events with a ``seq`` received, duplicates included."""
    lost: int
    """Seqs between 1 and the highest seen that never arrived (silent holes)."""
    lost_at_resume: int
    """Of those, the ones between the last seq before the drop and the first after."""
    doubled: int
    """Extra receipts of a seq already received."""
    conflicting: int
    """Receipts of a seq already received with different content (a reused number)."""
    out_of_order: int
    """New seqs that arrived after a higher one."""
    replayed: int
    """New events after the resume numbered at or below the server's ``last_seq`` then."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return asdict(self)


def check_session(
    seqs: Sequence[int], before: int, conflicts: int, server_last_seq: int
) -> SessionCheck:
    """Judge ``seqs`` (arrival order); the first ``before`` arrived before the drop."""
    counts = Counter(seqs)
    unique = sorted(counts)
    lost = unique[-1] - len(unique) if unique else 0
    first_seen: set[int] = set()
    highest = 0
    out_of_order = 0
    replayed = 0
    for index, seq in enumerate(seqs):
        if seq in first_seen:
            continue
        first_seen.add(seq)
        if seq < highest:
            out_of_order += 1
        highest = max(highest, seq)
        if index >= before and seq <= server_last_seq:
            replayed += 1
    return SessionCheck(
        received=len(seqs),
        lost=lost,
        lost_at_resume=_hole_between(seqs[:before], seqs[before:]),
        doubled=sum(count - 1 for count in counts.values()),
        conflicting=conflicts,
        out_of_order=out_of_order,
        replayed=replayed,
    )


def _hole_between(before: Sequence[int], after: Sequence[int]) -> int:
    """Seqs missing between the last one before the drop and the first new one after."""
    if not after:
        return 0
    last = max(before, default=0)
    fresh = [s for s in after if s > last]
    return min(fresh) - last - 1 if fresh else 0
