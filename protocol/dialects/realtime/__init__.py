"""The OpenAI Realtime (GA) event schema as a dialect of the native protocol.

Pure translation, no I/O: :mod:`.client_events` turns a Realtime client event into
native client messages (:mod:`protocol.messages`) and raw input audio;
:mod:`.server_events` turns native session events (their wire form) into complete
Realtime server events. The state either direction needs lives in one
:class:`.state.DialectState` per connection. Event ids are derived from the native
``seq`` (:mod:`.event_ids`), so a reconnecting client can name the last one it saw.
"""
