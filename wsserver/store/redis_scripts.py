"""Lua scripts of the Redis store.

Every script touches the keys of one session only, and all of a session's keys
share the hash tag ``{session-id}``, so the scripts run unchanged on Redis
Cluster. The fencing epoch is checked inside each write script: a stale owner's
write is rejected atomically, never half-applied.
"""

from __future__ import annotations

# KEYS: meta, log, partial, lease, tools, usage, ended
# ARGV: epoch, owner, meta_ttl_ms, log_ttl_ms, lease_ttl_ms, max_events, max_bytes,
#       stream_json, conversation_json ('' = unchanged), partial_reset ('0'|'1'),
#       partial_append, partial_offset (-1 = unknown: append), n, then n pairs (seq, payload),
#       then usage_ttl_ms, m, then m usage entries (JSON), then acked_seq (0: none)
# Returns 1, or -1 for a stale epoch, -2 for a session that is gone.
# The usage goes to the ledger with the events, in the same step; a gone session's is
# kept (the ledger outlives the session). A stale owner's entry is kept only for a
# response its successor knows nothing of: the successor ends the response the store
# showed running at its claim and records it (in the same step as the stream snapshot
# that stops showing it), so an entry for that one, or for one already in the ledger,
# would count a response twice. One the successor never saw (ended on the old owner
# before any write of it landed) has no other record.
APPEND = """
local n = tonumber(ARGV[13])
local u = 14 + 2 * n
local m = tonumber(ARGV[u + 1])
local function record_usage()
  if m == 0 then return end
  for i = 1, m do redis.call('RPUSH', KEYS[6], ARGV[u + 1 + i]) end
  redis.call('PEXPIRE', KEYS[6], ARGV[u])
end
local function response_of(json)
  local ok, data = pcall(cjson.decode, json)
  if ok and type(data) == 'table' then return data end
  return nil
end
local function record_unknown_usage(running)
  if m == 0 then return end
  local counted = {}
  if running then counted[running] = true end
  for _, raw in ipairs(redis.call('LRANGE', KEYS[6], 0, -1)) do
    local entry = response_of(raw)
    if entry and type(entry['response_id']) == 'string' then
      counted[entry['response_id']] = true
    end
  end
  for i = 1, m do
    local entry = response_of(ARGV[u + 1 + i])
    if entry and type(entry['response_id']) == 'string' and not counted[entry['response_id']] then
      redis.call('RPUSH', KEYS[6], ARGV[u + 1 + i])
      redis.call('PEXPIRE', KEYS[6], ARGV[u])
    end
  end
end
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if not epoch then
  -- Removed by a later owner: this one was fenced off.
  local ended = redis.call('GET', KEYS[7])
  if ended and tonumber(ended) ~= tonumber(ARGV[1]) then
    record_unknown_usage(nil)
    return -1
  end
  record_usage()
  return -2
end
if tonumber(epoch) ~= tonumber(ARGV[1]) then
  local running = nil
  local stream = response_of(redis.call('HGET', KEYS[1], 'stream') or '')
  if stream and type(stream['active']) == 'table' then running = stream['active']['response_id'] end
  record_unknown_usage(running)
  return -1
end
record_usage()
local added = 0
for i = 0, n - 1 do
  local seq = ARGV[14 + 2 * i]
  local payload = ARGV[15 + 2 * i]
  -- A retried batch re-sends events already stored; their ids are not new.
  local ok = redis.pcall('XADD', KEYS[2], seq .. '-0', 'p', payload)
  if type(ok) ~= 'table' or not ok['err'] then
    added = added + #payload
  end
end
-- The bytes an entry counts in log_bytes: an entry of this script's shape, its payload;
-- any other (written by hand, another version) was never counted.
local function counted(fields)
  if #fields == 2 and fields[1] == 'p' then return #fields[2] end
  return 0
end
-- The client has the events up to acked_seq: they go, as from the replay buffer.
local acked = tonumber(ARGV[u + 2 + m]) or 0
if acked > 0 then
  local gone = redis.call('XRANGE', KEYS[2], '-', acked .. '-0')
  if #gone > 0 then
    local ids = {}
    for i, entry in ipairs(gone) do
      ids[i] = entry[1]
      added = added - counted(entry[2])
    end
    for first = 1, #ids, 1000 do
      redis.call('XDEL', KEYS[2], unpack(ids, first, math.min(first + 999, #ids)))
    end
  end
end
local function add_bytes(delta)
  local total = redis.call('HINCRBY', KEYS[1], 'log_bytes', delta)
  if total < 0 then
    -- Counted low before (a hand-written entry of this shape): never below nothing.
    redis.call('HSET', KEYS[1], 'log_bytes', 0)
    total = 0
  end
  return total
end
local bytes = add_bytes(added)
local max_events = tonumber(ARGV[6])
local max_bytes = tonumber(ARGV[7])
while true do
  local len = redis.call('XLEN', KEYS[2])
  if len == 0 or (len <= max_events and bytes <= max_bytes) then break end
  local oldest = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)[1]
  redis.call('XDEL', KEYS[2], oldest[1])
  bytes = add_bytes(-counted(oldest[2]))
end
redis.call('HSET', KEYS[1], 'stream', ARGV[8], 'owner', ARGV[2])
if ARGV[9] ~= '' then redis.call('HSET', KEYS[1], 'conversation', ARGV[9]) end
if ARGV[10] == '1' then redis.call('DEL', KEYS[3]) end
if ARGV[11] ~= '' then
  local offset = tonumber(ARGV[12])
  if offset < 0 then
    redis.call('APPEND', KEYS[3], ARGV[11])
  elseif redis.call('STRLEN', KEYS[3]) >= offset then
    -- At its place: a batch sent again (its first try's answer lost) overwrites itself.
    redis.call('SETRANGE', KEYS[3], offset, ARGV[11])
  end
  -- Shorter than the offset: text before it was lost (a failover); keep the prefix.
end
-- Every key gets its TTL here, so nothing outlives a worker that dies right after.
-- (PEXPIRE of a missing key is a no-op.) The lease is renewed by RENEW, not per write.
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
redis.call('PEXPIRE', KEYS[5], ARGV[3])
return 1
"""

# KEYS: meta, lease, tools, log, partial
# ARGV: owner, lease_ttl_ms, meta_ttl_ms, log_ttl_ms
# Returns {new_epoch, previous_owner_or_empty, previous_lease_live (0|1)} or nil.
# Every key's TTL starts again: the new owner's renewals refresh them only every quarter
# of the resume window (RENEW), and the old owner may have stopped long ago.
CLAIM = """
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
local previous = redis.call('GET', KEYS[2])
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
local recorded = redis.call('HGET', KEYS[1], 'owner') or ''
redis.call('HSET', KEYS[1], 'owner', ARGV[1])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
redis.call('PEXPIRE', KEYS[4], ARGV[4])
redis.call('PEXPIRE', KEYS[5], ARGV[4])
local live = 0
if previous then live = 1 end
return {epoch, previous or recorded, live}
"""

# KEYS: meta, log, partial, lease, tools, ended
# ARGV: epoch, owner, meta_ttl_ms, log_ttl_ms, lease_ttl_ms, refresh ('1': the other keys'
#       TTLs too; '0': the lease only, two commands instead of up to eight)
# Returns 1, -1 (stale) or -2 (gone).
RENEW = """
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if not epoch then
  local ended = redis.call('GET', KEYS[6])
  if ended and tonumber(ended) ~= tonumber(ARGV[1]) then return -1 end
  return -2
end
if tonumber(epoch) ~= tonumber(ARGV[1]) then return -1 end
if ARGV[6] ~= '1' then
  redis.call('SET', KEYS[4], ARGV[2], 'PX', ARGV[5])
  return 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[5], ARGV[3])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], ARGV[4]) end
redis.call('SET', KEYS[4], ARGV[2], 'PX', ARGV[5])
return 1
"""

# KEYS: meta, log, partial, lease, tools, ended
# ARGV: epoch, ended_ttl_ms
# The epoch stays behind (KEYS[6]) for a while, so an owner fenced off before the
# removal finds its late writes stale instead of writing the session back.
REMOVE = """
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if not epoch or tonumber(epoch) ~= tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
redis.call('SET', KEYS[6], epoch, 'PX', ARGV[2])
return 1
"""

# The tool-call ledger is one hash whose fields are each written once:
#   n          calls added so far (the creation order)
#   c:<id>     [order, record JSON as emitted (pending)]
#   r:<id>     outcome JSON: {"status", "output", "error"}, the result or the close
# A call is pending while it has no r: field; whoever writes r: first decides
# how the call ended. The scripts never re-encode JSON (cjson would round
# created_at to 14 digits), they only store what the worker sent.
# A ledger whose session record is gone counts as gone.

# KEYS: meta, tools
# ARGV: ttl_ms, then pairs (call_id, record_json)
# Returns the number of calls added, or -2 for a session that is gone.
ADD_TOOL_CALLS = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -2 end
local added = 0
for i = 2, #ARGV, 2 do
  local field = 'c:' .. ARGV[i]
  if redis.call('HEXISTS', KEYS[2], field) == 0 then
    local order = redis.call('HINCRBY', KEYS[2], 'n', 1)
    redis.call('HSET', KEYS[2], field, '[' .. order .. ',' .. ARGV[i + 1] .. ']')
    added = added + 1
  end
end
if added > 0 then redis.call('PEXPIRE', KEYS[2], ARGV[1]) end
return added
"""

# KEYS: meta, tools
# ARGV: ttl_ms, call_id, outcome_json
# Ends a pending call with outcome_json (a result, or a close). Returns nil for
# an unknown call, else {written (0|1), call value, outcome JSON as stored}.
SETTLE_TOOL_CALL = """
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
local call = redis.call('HGET', KEYS[2], 'c:' .. ARGV[2])
if not call then return nil end
local field = 'r:' .. ARGV[2]
local stored = redis.call('HGET', KEYS[2], field)
if stored then return {0, call, stored} end
redis.call('HSET', KEYS[2], field, ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return {1, call, ARGV[3]}
"""

# KEYS: the client token's session count
# ARGV: limit, ttl_ms
# Returns 1 when one more session may open (counted), 0 when the limit is reached.
USE_CLIENT_TOKEN = """
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[1])
if used == 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
"""
