"""Label bounding, and the session meter's figures, on a real registry (no server)."""

from __future__ import annotations

import time

import pytest

from tests.wsserver.metrics.scrape import parse, value
from wsserver.metrics import labels, render, worker_metrics
from wsserver.metrics.meter import NO_METER


def test_values_outside_each_set_become_other() -> None:
    assert labels.close_code(4000) == "4000"
    assert labels.close_code(1006) == "1006"
    assert labels.close_code(4999) == labels.close_code(3001) == labels.close_code(None) == "other"
    assert labels.reason("speech") == "speech" and labels.reason(None) == "none"
    assert labels.reason("sess_abc123") == labels.reason("/x/../y") == "other"
    assert labels.status("completed") == "completed" and labels.status("bogus") == "other"
    assert labels.auth_reason(401, "no credentials: send a key") == "no_credentials"
    assert labels.auth_reason(401, "unknown api key") == "invalid"
    assert labels.auth_reason(403) == "forbidden" and labels.auth_reason(429) == "rate_limited"


def test_the_meter_times_a_barge_in_and_a_stop_once_each() -> None:
    metrics = worker_metrics()
    meter = metrics.session_meter()
    meter.generation_started()
    start = time.monotonic()
    for step in range(5):
        meter.chunk(start + step * 0.25)  # the runtime's clock read, shared
    meter.speech_started()
    meter.speech_started()  # the first onset counts
    meter.stop_requested("response.cancel")
    meter.done_sent()
    meter.done_sent()  # a later response's done: nothing pending, nothing observed
    assert metrics.registry is not None
    samples = parse(render(metrics.registry).decode())
    assert value(samples, "wsserver_ttft_seconds_count") == 1
    assert value(samples, "wsserver_inter_token_seconds_count") == 4
    # The gaps are measured between the times the runtime passed in.
    assert value(samples, "wsserver_inter_token_seconds_sum") == pytest.approx(1.0)
    assert value(samples, "wsserver_barge_in_seconds_count") == 1
    stops = value(samples, "wsserver_stop_latency_seconds_count", kind="response.cancel")
    assert stops == 1


def test_metrics_off_has_no_registry_and_a_shared_no_op_meter() -> None:
    off = worker_metrics(enabled=False)
    assert off.registry is None and not off.enabled
    assert off.session_meter() is NO_METER
    off.closed(4000)  # does nothing, raises nothing
