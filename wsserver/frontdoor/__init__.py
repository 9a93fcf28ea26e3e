"""The front door: what a connection must get past before it reaches a session.

Every WebSocket handshake and HTTP request of the worker and the router passes
:class:`~wsserver.frontdoor.authenticator.Authenticator` (who is calling: API keys,
JWTs, client tokens) and the quota gate (:mod:`wsserver.frontdoor.gate`: Origin,
rates and limits per principal and per address) before anything else happens; what
they decide is a :class:`~wsserver.frontdoor.principal.Principal` (who) and an
:class:`~wsserver.frontdoor.principal.Admission` (who, from where), or a refusal
(HTTP 401, 403 or 429) sent before the upgrade. TLS and secret-free logs live here too.
"""
