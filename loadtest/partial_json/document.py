"""The streamed document: deterministic JSON of a given size, cut into small deltas."""

from __future__ import annotations

import json
import random
from typing import Any

# Words as a model writes them into structured output: plain ASCII, quotes and
# backslashes (escapes), a tab (a control character, escaped), accents, CJK and an emoji
# (a character outside the BMP), so every string path of both parsers is taken.
_WORDS = (
    "the quick brown fox jumps over a lazy dog and then",
    'says "hello" back\\slash tab\there',
    "caf\u00e9 na\u00efve \u4e2d\u6587 \U0001f600 done",
)


def build_document(size_bytes: int, seed: int) -> str:
    """A JSON object of at least ``size_bytes`` characters (a record more at most):
    records of ids, names, free text, floats, tags, booleans, nulls and a nested
    container each."""
    rng = random.Random(seed)
    words = " ".join(_WORDS).split(" ")
    items: list[dict[str, Any]] = []
    length = 2
    while length < size_bytes:
        index = len(items)
        item = {
            "id": index,
            "name": f"item {index}",
            "text": " ".join(rng.choice(words) for _ in range(rng.randint(5, 30))),
            "score": round(rng.uniform(-1e4, 1e4), 3),
            "tags": [rng.choice(words) for _ in range(3)],
            "ok": rng.random() < 0.5,
            "missing": None,
            "nested": {"a": [1, 2, {"b": 1.5e-3, "c": -7}]},
        }
        items.append(item)
        length += len(json.dumps(item, ensure_ascii=False, indent=1)) + 4
    # The estimate above leaves out the records' indentation inside the array: drop the
    # records it overcounted, as long as the document stays at least that long.
    text = json.dumps({"items": items}, ensure_ascii=False, indent=1)
    while len(items) > 1:
        shorter = json.dumps({"items": items[:-1]}, ensure_ascii=False, indent=1)
        if len(shorter) < size_bytes:
            break
        items.pop()
        text = shorter
    return text


def cut_into_deltas(text: str, shortest: int, longest: int, seed: int) -> list[str]:
    """``text`` in consecutive pieces of ``shortest``..``longest`` characters."""
    rng = random.Random(seed)
    deltas, at = [], 0
    while at < len(text):
        step = rng.randint(shortest, longest)
        deltas.append(text[at : at + step])
        at += step
    return deltas
