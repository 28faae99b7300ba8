import { createHash } from 'node:crypto';

/** A Lua script and its SHA1, run with EVALSHA (EVAL once on NOSCRIPT). */
export interface Script {
  readonly name: string;
  readonly lua: string;
  readonly sha: string;
}

function script(name: string, lua: string): Script {
  return Object.freeze({ name, lua, sha: createHash('sha1').update(lua).digest('hex') });
}

// Shared prologue: "now" is the server's clock (TIME inside the script, allowed since
// Redis 5 replicates script effects; the call below makes Redis 3.2-4 do the same).
// Numbers are Lua doubles: ms timestamps and tokens stay exact below 2^53, and are written
// with %d so that a stored token is always a plain integer string.
const NOW = `
redis.replicate_commands()
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * KEYS: record, index. ARGV: owner, ttlMs, resource.
 * Takes a missing, released or expired record; the token only ever grows, and the record key
 * never expires, so neither release nor expiry can reset it. Returns {token, expiresAt}, or {0}.
 */
export const ACQUIRE = script(
  'acquire',
  `${NOW}
local r = redis.call('HMGET', KEYS[1], 'owner', 'token', 'expiresAt')
local owner = r[1] or ''
if owner ~= '' and (tonumber(r[3]) or 0) >= now then return {0} end
local token = (tonumber(r[2]) or 0) + 1
local expiresAt = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', string.format('%d', token),
  'expiresAt', string.format('%d', expiresAt))
redis.call('ZADD', KEYS[2], 0, ARGV[3])
return {token, expiresAt}
`,
);

/**
 * KEYS: index, then one record per resource. ARGV: owner, ttlMs, byte length of the record key
 * prefix (what follows it in a record key is the resource name). ACQUIRE for each record, on one
 * clock reading. Returns three values per record: '', token, expiresAt when granted; the holder's
 * owner, token, expiresAt when a live lease stood in the way.
 */
export const ACQUIRE_MANY = script(
  'acquireMany',
  `${NOW}
local expiresAt = now + tonumber(ARGV[2])
local expires = string.format('%d', expiresAt)
local skip = tonumber(ARGV[3]) + 1
local out = {}
for i = 2, #KEYS do
  local r = redis.call('HMGET', KEYS[i], 'owner', 'token', 'expiresAt')
  local owner = r[1] or ''
  local n = #out
  if owner ~= '' and (tonumber(r[3]) or 0) >= now then
    out[n + 1], out[n + 2], out[n + 3] = owner, r[2] or '0', r[3]
  else
    local token = (tonumber(r[2]) or 0) + 1
    redis.call('HSET', KEYS[i], 'owner', ARGV[1], 'token', string.format('%d', token),
      'expiresAt', expires)
    redis.call('ZADD', KEYS[1], 0, string.sub(KEYS[i], skip))
    out[n + 1], out[n + 2], out[n + 3] = '', token, expiresAt
  end
end
return out
`,
);

/**
 * KEYS: one record per lease. ARGV: owner, token, ttlMs for each lease, in KEYS order.
 * Extends each record still held by that owner and token. Returns the new expiresAt per lease, 0 when not ours.
 */
export const RENEW_MANY = script(
  'renewMany',
  `${NOW}
local out = {}
for i = 1, #KEYS do
  local a = (i - 1) * 3
  local r = redis.call('HMGET', KEYS[i], 'owner', 'token')
  if r[1] == ARGV[a + 1] and r[2] == ARGV[a + 2] then
    local expiresAt = now + tonumber(ARGV[a + 3])
    redis.call('HSET', KEYS[i], 'expiresAt', string.format('%d', expiresAt))
    out[i] = expiresAt
  else
    out[i] = 0
  end
end
return out
`,
);

/**
 * KEYS: one record per lease. ARGV: channel, then owner, token, resource for each lease.
 * Releases each record still held by that owner and token (owner '', expiresAt 0, token kept)
 * and publishes its resource name on the channel. Returns 1 or 0 per lease. PUBLISH comes first:
 * a user without permission for the channel fails before anything is written, not half-way.
 */
export const RELEASE_MANY = script(
  'releaseMany',
  `
local out = {}
for i = 1, #KEYS do
  local a = 1 + (i - 1) * 3
  local r = redis.call('HMGET', KEYS[i], 'owner', 'token')
  if r[1] == ARGV[a + 1] and r[2] == ARGV[a + 2] then
    redis.call('PUBLISH', ARGV[1], ARGV[a + 3])
    redis.call('HSET', KEYS[i], 'owner', '', 'expiresAt', '0')
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
`,
);

/**
 * KEYS: index. ARGV: min, max (ZRANGEBYLEX bounds), limit, record key prefix of this shard.
 * Reads names in byte order with their records in one snapshot: a flat list of
 * resource, owner, token, expiresAt.
 */
export const LIST = script(
  'list',
  `
local names = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, name in ipairs(names) do
  local r = redis.call('HMGET', ARGV[4] .. name, 'owner', 'token', 'expiresAt')
  if r[2] then
    out[#out + 1] = name
    out[#out + 1] = r[1] or ''
    out[#out + 1] = r[2]
    out[#out + 1] = r[3] or '0'
  end
end
return out
`,
);

/**
 * KEYS: meta. ARGV: the layout this store uses. Writes it when the namespace is new and
 * returns what is stored, so stores that would lay out keys differently refuse to share it.
 */
export const LAYOUT = script(
  'layout',
  `
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
`,
);
