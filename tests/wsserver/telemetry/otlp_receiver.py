"""A loopback OTLP/HTTP trace receiver: what a collector would get, decoded.

It speaks the recorded wire format (``ExportTraceServiceRequest`` in protobuf,
POST /v1/traces) with the opentelemetry-proto classes; nothing of ours.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

MAX_BODY = 8 << 20


@dataclass
class ReceivedSpan:
    """One span as the collector saw it."""

    name: str
    attributes: dict[str, Any]
    events: list[str]
    resource: dict[str, Any]
    start_ns: int
    end_ns: int
    status_code: int


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs}


@dataclass
class OtlpReceiver:
    """An HTTP server on 127.0.0.1 that keeps every span posted to it."""

    spans: list[ReceivedSpan] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    def start(self) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(min(length, MAX_BODY))
                receiver.paths.append(self.path)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.keep(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def keep(self, request: ExportTraceServiceRequest) -> None:
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(
                        ReceivedSpan(
                            name=span.name,
                            attributes=_attributes(span.attributes),
                            events=[e.name for e in span.events],
                            resource=resource,
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                            status_code=span.status.code,
                        )
                    )

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
