"""The front door: who is calling (API keys, JWTs, client tokens), TLS, secret-free logs.

Every WebSocket handshake and HTTP request of the worker and the router passes
:class:`~wsserver.frontdoor.authenticator.Authenticator` before anything else
happens; what it decides is a :class:`~wsserver.frontdoor.principal.Principal`
(who) and an :class:`~wsserver.frontdoor.principal.Admission` (who, from where),
or a refusal (HTTP 401 or 403) sent before the upgrade.
"""
