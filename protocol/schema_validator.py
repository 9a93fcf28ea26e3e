"""The validator behind client schemas: no retrieval, a step budget, linear-time patterns.

:data:`BudgetedValidator` is Draft 2020-12 with every keyword and every descent into
a subschema counted against the budget that :func:`step_budget` sets, so no schema
and value make validation run away (:class:`StepsExhausted` ends it). Its registry
(:func:`crawled_registry`) holds only the schema's own resources and refuses every
retrieval: nothing is fetched or read, whatever a reference says. Patterns run on
RE2 while a budget is set: time linear in the text, never exponential backtracking.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NoReturn

import jsonschema._keywords
import jsonschema._utils
import re2  # type: ignore[import-untyped]
from jsonschema import Draft202012Validator, validators
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from protocol.meta_schema import META_VALIDATOR

__all__ = [
    "BudgetedValidator",
    "StepsExhausted",
    "crawled_registry",
    "meta_problem",
    "pattern_supported",
    "step_budget",
]


class StepsExhausted(Exception):
    """Validation used up its step budget."""


_steps_left: ContextVar[list[int] | None] = ContextVar("schema_steps_left", default=None)


@contextmanager
def step_budget(steps: int) -> Iterator[None]:
    """Let the validations inside the block take ``steps`` steps in all."""
    token = _steps_left.set([steps])
    try:
        yield
    finally:
        _steps_left.reset(token)


def _spend(steps: int) -> None:
    left = _steps_left.get()
    if left is None:
        return
    left[0] -= steps
    if left[0] < 0:
        raise StepsExhausted


_Keyword = Callable[[Validator, Any, Any, Any], Iterator[Any] | None]


def _counted(keyword: _Keyword) -> _Keyword:
    def count(validator: Validator, value: Any, instance: Any, schema: Any) -> Any:
        _spend(1)
        return keyword(validator, value, instance, schema)

    return count


def _counted_unique(keyword: _Keyword) -> _Keyword:
    # Unique objects or arrays are compared pairwise: quadratic in the array.
    def count(validator: Validator, value: Any, instance: Any, schema: Any) -> Any:
        if isinstance(instance, list):
            nested = any(isinstance(item, dict | list) for item in instance)
            _spend(len(instance) ** 2 // 2 if nested else len(instance))
        return keyword(validator, value, instance, schema)

    return count


def _counted_evolve(evolve: Callable[..., Any]) -> Callable[..., Any]:
    # Every descent into a subschema evolves a validator, also inside jsonschema's own
    # helpers for unevaluatedProperties/Items, which call no keyword function.
    def count(self: Any, **changes: Any) -> Any:
        _spend(1)
        return evolve(self, **changes)

    return count


BudgetedValidator: Any = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    {
        name: (_counted_unique if name == "uniqueItems" else _counted)(keyword)
        for name, keyword in Draft202012Validator.VALIDATORS.items()
    },
)
"""Draft 2020-12, every step counted (see :func:`step_budget`)."""
BudgetedValidator.evolve = _counted_evolve(BudgetedValidator.evolve)


# -- patterns ------------------------------------------------------------------------------

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is an answer to the client, not a log line


@functools.lru_cache(maxsize=1024)
def _linear(pattern: str) -> Any:
    """``pattern`` compiled for RE2; raises ``re2.error`` for what RE2 cannot run."""
    return re2.compile(pattern, _RE2_OPTIONS)


def pattern_supported(pattern: str) -> bool:
    """Whether RE2 runs ``pattern`` (no lookarounds, backreferences, counts over 1000)."""
    try:
        _linear(pattern)
    except re2.error:
        return False
    return True


class _LinearSearch:
    """Stands in for ``re`` in jsonschema's keyword modules.

    jsonschema calls ``re.search`` for ``pattern``, ``patternProperties`` and, through
    them, ``additionalProperties`` and ``unevaluatedProperties``. While one of our
    validations runs (a step budget is set), those searches go to RE2; any other
    caller in the process keeps Python's ``re``.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)

    def search(self, pattern: Any, string: Any, flags: int = 0) -> Any:
        if _steps_left.get() is None or flags or not isinstance(pattern, str):
            return re.search(pattern, string, flags)
        return _linear(pattern).search(string)


for _module in (jsonschema._keywords, jsonschema._utils):
    if getattr(_module, "re", None) is re:
        setattr(_module, "re", _LinearSearch())  # noqa: B010 (a private module's attribute)


# -- references and the meta-schema --------------------------------------------------------


def _refuse(uri: str) -> NoReturn:
    # Never a network or file system access: only the schema's own resources resolve.
    raise LookupError(f"{uri} is not part of the schema")


_NOTHING_TO_RETRIEVE: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]


def crawled_registry(schema: Any) -> Registry[Any]:
    """A registry of the schema's own resources (its ``$id`` values and anchors), crawled once.

    Uncrawled, every lookup of an ``$id`` other than the root's crawls the whole
    document again: 2,000 such references took 7 s to validate 200 items.
    """
    root = DRAFT202012.create_resource(schema)
    crawled: Registry[Any] = _NOTHING_TO_RETRIEVE.with_resource(root.id() or "", root).crawl()
    return crawled


def meta_problem(schema: Any) -> str | None:
    """Why ``schema`` is not a Draft 2020-12 schema (by its meta-schema), or ``None``."""
    try:
        error = next(META_VALIDATOR.iter_errors(schema), None)
    except RecursionError:  # the size checks keep this out of reach; belt and braces
        return "nests too deeply"
    return None if error is None else f"is not a valid json schema: {error.message}"
