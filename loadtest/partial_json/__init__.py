"""Our incremental partial-JSON parser against re-parsing with pydantic's jiter."""
