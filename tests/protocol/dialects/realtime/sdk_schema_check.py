"""Run with the openai SDK's Python: every event in the given JSON-lines files must
validate as the SDK's ``RealtimeServerEvent`` with every field of every typed object
present (the SDK does not validate what it receives: a field left out is an
``AttributeError`` in the application). Prints one problem a line; exits 1 if any.
"""

from __future__ import annotations

import json
import sys

from openai.types.realtime import RealtimeServerEvent
from pydantic import BaseModel, TypeAdapter

adapter: TypeAdapter[object] = TypeAdapter(RealtimeServerEvent)


def missing_fields(value: object, where: str) -> list[str]:
    """Paths of declared fields absent from ``value`` and the models inside it."""
    problems: list[str] = []
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            if name not in value.model_fields_set:
                problems.append(f"{where}.{name}")
            else:
                problems.extend(missing_fields(getattr(value, name), f"{where}.{name}"))
    elif isinstance(value, list):
        for index, member in enumerate(value):
            problems.extend(missing_fields(member, f"{where}[{index}]"))
    return problems


def main(paths: list[str]) -> int:
    problems: list[str] = []
    for path in paths:
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                raw = json.loads(line)
                where = f"{path}:{number}:{raw.get('type')}"
                try:
                    event = adapter.validate_python(raw)
                except Exception as exc:  # every failure is reported, not raised
                    problems.append(f"{where}: invalid: {str(exc)[:300]}")
                    continue
                problems.extend(missing_fields(event, where))
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
