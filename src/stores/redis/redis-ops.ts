import { createHash } from 'node:crypto';
import { LIMITS } from '../../core/options.js';

/** A Lua script and its SHA1, run with EVALSHA (EVAL once on NOSCRIPT). */
export interface Script {
  readonly name: string;
  readonly lua: string;
  readonly sha: string;
}

function script(name: string, lua: string): Script {
  return Object.freeze({ name, lua, sha: createHash('sha1').update(lua).digest('hex') });
}

// ioredis decodes an integer reply as `n * 10 + byte - 48`, which rounds within 64 of 2^53: a
// token that large is answered as text (decoded exactly), every other one as an integer (cheaper).
const EXACT = 9007199254740928;

// Shared prologue: "now" is the server's clock (TIME inside a script that then writes is
// allowed since Redis 5, which replicates script effects rather than the script). Lua's
// arithmetic reads the two numeric strings itself (cheaper than `tonumber`).
// Numbers are Lua doubles: ms timestamps and tokens stay exact below 2^53, and are written
// with %d so that a stored token is always a plain integer string (Redis's own conversion of a
// number argument may write exponents on some versions, and release compares the token as text).
/** The server's time in ms, from the `t` that `redis.call('TIME')` answered. */
const MS_OF_TIME = 't[1] * 1000 + math.floor(t[2] / 1000)';
const NOW = `
local t = redis.call('TIME')
local now = ${MS_OF_TIME}
`;

/**
 * Lua: `invalid(key, r, now)`, where `r` is what `redis.pcall('HMGET', key, 'owner', 'token',
 * 'expiresAt', …)` answered: false for a missing key or a record leasehold writes (a token of
 * digits from 1 to 2^53 − 1, and below that when the record is free, so that one more is still a
 * safe integer; an expiresAt of digits; an owner within LIMITS.ownerMaxBytes), else what is wrong
 * with it, as the message of `RECORD_INVALID`. A key of another type (HMGET refused with WRONGTYPE) is named by its type. Every acquire path
 * calls it before anything is written, so such a record is never taken, never given token 1 and
 * never overwritten. A hash holding only fields leasehold does not write is not told apart from a
 * missing key (that would take one more command per new record).
 */
const CHECK = `
local function shown(v)
  if #v > 60 then return 'a string of ' .. #v .. ' bytes' end
  return cjson.encode(v)
end
local function invalid(key, r, now)
  if r.err then return 'the key holds a Redis ' .. redis.call('TYPE', key).ok .. ', not a hash' end
  local owner, token, expiresAt = r[1], r[2], r[3]
  if not token then
    if owner or expiresAt or r[4] then return 'token is missing' end
    return false
  end
  if not (#token <= 20 and string.find(token, '^%d+$')) then return 'token is ' .. shown(token) end
  if token + 0 < 1 or token + 0 > ${Number.MAX_SAFE_INTEGER} then
    return 'token is ' .. shown(token) .. ', not a positive safe integer'
  end
  if not expiresAt then return 'expiresAt is missing' end
  if not (#expiresAt <= 20 and string.find(expiresAt, '^%d+$'))
    or expiresAt + 0 > ${Number.MAX_SAFE_INTEGER} then
    return 'expiresAt is ' .. shown(expiresAt)
  end
  if not owner then return 'owner is missing' end
  if #owner > ${LIMITS.ownerMaxBytes} then
    return 'owner is ' .. #owner .. ' bytes, over ${LIMITS.ownerMaxBytes}'
  end
  if token + 0 == ${Number.MAX_SAFE_INTEGER} and expiresAt + 0 < now then
    return 'token is ' .. shown(token) .. ', the largest safe integer: no token can follow it'
  end
  return false
end
`;

/**
 * Lua: `problem` for the HMGET answer `r` (owner, token, expiresAt, data) of `key`: false at once
 * for a missing key or a well-formed record (a token of 1 … 2^53 − 1, below it unless live, an
 * expiresAt of whole non-negative ms, an owner within LIMITS.ownerMaxBytes), else CHECK's
 * `invalid` names what is wrong. Calling `invalid` on every grant, with no test before it, put the
 * cycle at 104–105k redis-server instructions; with this test first it is 102k (`npm run
 * bench:redis-work`, 1,000 cycles; 95k before records were checked). Numbers are read as Lua reads them, so a form no script writes (`0x10`,
 * `1e3`) passes as its value here, which `get` and `list` still refuse: a grant over it is above
 * that value, so no token goes back.
 */
function problemOf(key: string, r: string): string {
  const max = Number.MAX_SAFE_INTEGER;
  return `local problem = false
do
  local tk, ex = tonumber(${r}[2]), tonumber(${r}[3])
  if ${r}.err or (${r}[2] and not (tk and tk >= 1 and tk % 1 == 0 and ex and ex >= 0 and ex % 1 == 0
      and ex <= ${max} and tk <= ${max} and (tk < ${max} or ex >= now) and ${r}[1]
      and #${r}[1] <= ${LIMITS.ownerMaxBytes}))
    or (not ${r}[2] and (${r}[1] or ${r}[3] or ${r}[4])) then
    problem = invalid(${key}, ${r}, now)
  end
end`;
}

/**
 * KEYS: record, index. ARGV: owner, ttlMs, resource.
 * Takes a missing, released or expired record; the token only ever grows, and the record key
 * never expires, so neither release nor expiry can reset it. A record is never deleted, so its
 * name enters the index once, when the record is created (before it, so that a refused write
 * leaves nothing behind). The record's `data` is left as it is and handed to the new holder.
 * Returns "token expiresAt" as one string, followed by " " and the data when the record has
 * some, or 0 while a live lease stands in the way, or `{false, 1, problem}` (nothing written) when
 * the record is not one leasehold writes (see CHECK).
 *
 * Written for the server's work per call, which is most of what a transition costs at one in
 * flight (an acquire→release cycle went from 101k to 91k instructions of redis-server with this
 * form, `npm run bench:redis-work`): it reads only the fields it checks and decides on (a
 * record's `owner` is empty exactly when its `expiresAt` is 0, as every script writes them
 * together) and the data it hands over, lets Lua's arithmetic read the numbers instead of calling `tonumber`,
 * and answers with one string rather than a table. Reading `data` in the same HMGET added about
 * 3–7 % to that cycle on records without data (97–105k against 91–102k instructions in the same
 * runs on a busy machine): the price of handing the data over with no call of its own.
 */
export const ACQUIRE = script(
  'acquire',
  `${NOW}${CHECK}
local r = redis.pcall('HMGET', KEYS[1], 'owner', 'token', 'expiresAt', 'data')
${problemOf('KEYS[1]', 'r')}
if problem then return {false, 1, problem} end
if r[3] and r[3] + 0 >= now then return 0 end
local token = string.format('%d', (r[2] or 0) + 1)
local expiresAt = string.format('%d', now + ARGV[2])
if not r[2] then redis.call('ZADD', KEYS[2], 0, ARGV[3]) end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', token, 'expiresAt', expiresAt)
if r[4] then return token .. ' ' .. expiresAt .. ' ' .. r[4] end
return token .. ' ' .. expiresAt
`,
);

/**
 * KEYS: index, then one record per resource. ARGV: owner, ttlMs, byte length of the record key
 * prefix (what follows it in a record key is the resource name). ACQUIRE for each record, on one
 * clock reading; a name is cut from its key and indexed only when its record is created. Returns
 * four values per record: '', token, expiresAt, data when granted; the holder's owner, token,
 * expiresAt, data when a live lease stood in the way (data nil when the record has none). Every
 * record is read and checked before any is written: a record that is not one leasehold writes
 * fails the whole call with `{false, position, problem}` (position from 1), nothing written.
 */
export const ACQUIRE_MANY = script(
  'acquireMany',
  `${NOW}${CHECK}
local expiresAt = now + tonumber(ARGV[2])
local expires = string.format('%d', expiresAt)
local skip = tonumber(ARGV[3]) + 1
local records = {}
for i = 2, #KEYS do
  local r = redis.pcall('HMGET', KEYS[i], 'owner', 'token', 'expiresAt', 'data')
  ${problemOf('KEYS[i]', 'r')}
  if problem then return {false, i - 1, problem} end
  records[i] = r
end
local out = {}
for i = 2, #KEYS do
  local r = records[i]
  local owner = r[1] or ''
  local n = #out
  if r[3] and r[3] + 0 >= now then
    out[n + 1], out[n + 2], out[n + 3] = owner, r[2], r[3]
  else
    local token = (tonumber(r[2]) or 0) + 1
    local text = string.format('%d', token)
    if not r[2] then redis.call('ZADD', KEYS[1], 0, string.sub(KEYS[i], skip)) end
    redis.call('HSET', KEYS[i], 'owner', ARGV[1], 'token', text, 'expiresAt', expires)
    out[n + 1], out[n + 2], out[n + 3] = '', token < ${EXACT} and token or text, expiresAt
  end
  out[n + 4] = r[4]
end
return out
`,
);

/**
 * KEYS: one record per member, then the index of each member's group, in the same order. ARGV:
 * owner, ttlMs, then the members' resource names. ACQUIRE for every member on one clock reading,
 * or for none: every record is read and every new token worked out before anything is written, so
 * a group refused (a live lease on any member) or failed (a record that is not a lease) writes
 * nothing and burns no token. Returns 0 when refused, else expiresAt, then each member's token,
 * then each member's data (nil where a record has none); `{false, position, problem}` (nothing
 * written) when the first record in the way is not one leasehold writes (see CHECK).
 */
export const ACQUIRE_ALL = script(
  'acquireAll',
  `${NOW}${CHECK}
local n = #ARGV - 2
local tokens = {}
local data = {}
for i = 1, n do
  local r = redis.pcall('HMGET', KEYS[i], 'owner', 'token', 'expiresAt', 'data')
  ${problemOf('KEYS[i]', 'r')}
  if problem then return {false, i, problem} end
  if r[3] and r[3] + 0 >= now then return 0 end
  tokens[i] = r[2] and r[2] + 1 or false
  data[i] = r[4]
end
local expiresAt = now + ARGV[2]
local expires = string.format('%d', expiresAt)
local out = {expiresAt}
for i = 1, n do
  local token = tokens[i] or 1
  local text = string.format('%d', token)
  if not tokens[i] then redis.call('ZADD', KEYS[n + i], 0, ARGV[2 + i]) end
  redis.call('HSET', KEYS[i], 'owner', ARGV[1], 'token', text, 'expiresAt', expires)
  out[i + 1] = token < ${EXACT} and token or text
end
for i = 1, n do out[n + 1 + i] = data[i] end
return out
`,
);

/**
 * KEYS: one record per candidate, then the index of each candidate's group, in the same order.
 * ARGV: owner, ttlMs, then the candidates' resource names. ACQUIRE on the first candidate that is
 * missing, released or expired, in the order given, on one clock reading; the others are only
 * read. Returns 0 when every candidate is held, else "position token expiresAt" (position from 1),
 * followed by " " and the record's data when it has some; `{false, position, problem}` (nothing
 * written) when a candidate met before a free one is not a record leasehold writes (see CHECK).
 */
export const ACQUIRE_FIRST = script(
  'acquireFirst',
  `${NOW}${CHECK}
local n = #ARGV - 2
for i = 1, n do
  local r = redis.pcall('HMGET', KEYS[i], 'owner', 'token', 'expiresAt', 'data')
  ${problemOf('KEYS[i]', 'r')}
  if problem then return {false, i, problem} end
  if not (r[3] and r[3] + 0 >= now) then
    local token = string.format('%d', (r[2] or 0) + 1)
    local expiresAt = string.format('%d', now + ARGV[2])
    if not r[2] then redis.call('ZADD', KEYS[n + i], 0, ARGV[2 + i]) end
    redis.call('HSET', KEYS[i], 'owner', ARGV[1], 'token', token, 'expiresAt', expiresAt)
    if r[4] then return i .. ' ' .. token .. ' ' .. expiresAt .. ' ' .. r[4] end
    return i .. ' ' .. token .. ' ' .. expiresAt
  end
end
return 0
`,
);

/**
 * KEYS: index, then the records of each transition in turn (one for an acquisition or a release,
 * the candidates of a first-free acquisition). ARGV: channel, byte length of the record key
 * prefix, then for each transition its kind ('a' acquire, 'r' release, 'f' first free of its
 * candidates), owner, and ttlMs (acquisitions) or token (release); an 'f' adds its number of
 * candidates. Single-lease transitions of many callers at once, in one call: each is ACQUIRE,
 * ACQUIRE_FIRST or RELEASE exactly, applied in the order given, on one clock reading.
 * Returns, per transition: for an acquisition, token, expiresAt and the record's data (nil when
 * none), or 0, 0, nil when a live lease stood in the way; for a first-free acquisition the same
 * three after the position of the candidate granted (0 when none was); for a release 1 or 0, then
 * 0 and nil. An acquisition that meets a record leasehold does not write (see CHECK) answers -1,
 * the problem and nil (after the candidate's position for a first-free one), nothing written; the
 * other transitions of the call go on.
 */
export const TRANSITIONS = script(
  'transitions',
  `${CHECK}
local now
local skip = tonumber(ARGV[2]) + 1
local out = {}
local k, a = 2, 3
while a <= #ARGV do
  local kind, owner = ARGV[a], ARGV[a + 1]
  local n = #out
  if kind == 'r' then
    local r = redis.pcall('HMGET', KEYS[k], 'owner', 'token')
    if r[1] == owner and r[2] == ARGV[a + 2] then
      redis.call('PUBLISH', ARGV[1], string.sub(KEYS[k], skip))
      redis.call('HSET', KEYS[k], 'owner', '', 'expiresAt', '0')
      out[n + 1] = 1
    else
      out[n + 1] = 0
    end
    out[n + 2], out[n + 3] = 0, false
    k, a = k + 1, a + 3
  else
    if not now then
      local t = redis.call('TIME')
      now = ${MS_OF_TIME}
    end
    local count = 1
    if kind == 'f' then
      count = tonumber(ARGV[a + 3])
      out[n + 1] = 0
      n = n + 1
    end
    out[n + 1], out[n + 2], out[n + 3] = 0, 0, false
    for j = 0, count - 1 do
      local key = KEYS[k + j]
      local r = redis.pcall('HMGET', key, 'owner', 'token', 'expiresAt', 'data')
      ${problemOf('key', 'r')}
      if problem then
        out[n + 1], out[n + 2] = -1, problem
        if kind == 'f' then out[n] = j + 1 end
        break
      end
      if not (r[3] and r[3] + 0 >= now) then
        local token = (r[2] or 0) + 1
        local text = string.format('%d', token)
        local expiresAt = now + tonumber(ARGV[a + 2])
        if not r[2] then redis.call('ZADD', KEYS[1], 0, string.sub(key, skip)) end
        redis.call('HSET', key, 'owner', owner, 'token', text,
          'expiresAt', string.format('%d', expiresAt))
        out[n + 1], out[n + 2], out[n + 3] = token < ${EXACT} and token or text, expiresAt, r[4]
        if kind == 'f' then out[n] = j + 1 end
        break
      end
    end
    k = k + count
    a = a + (kind == 'f' and 4 or 3)
  end
end
return out
`,
);

/**
 * KEYS: record. ARGV: owner, token, ttlMs. Extends the record if that owner and token still hold
 * it (expired or not: nobody else took it). Returns the new expiresAt, or 0 when not ours.
 */
export const RENEW = script(
  'renew',
  `
local r = redis.pcall('HMGET', KEYS[1], 'owner', 'token')
if r[1] ~= ARGV[1] or r[2] ~= ARGV[2] then return 0 end
${NOW}
local expiresAt = now + ARGV[3]
redis.call('HSET', KEYS[1], 'expiresAt', string.format('%d', expiresAt))
return expiresAt
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
  local r = redis.pcall('HMGET', KEYS[i], 'owner', 'token')
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
 * KEYS: record. ARGV: owner, token, channel, resource. Releases the record if that owner and token
 * still hold it (owner '', expiresAt 0, token kept) and publishes the resource name on the
 * channel. Returns 1, or 0 when not ours. PUBLISH comes first: a user without permission for the
 * channel fails before anything is written.
 */
export const RELEASE = script(
  'release',
  `
local r = redis.pcall('HMGET', KEYS[1], 'owner', 'token')
if r[1] ~= ARGV[1] or r[2] ~= ARGV[2] then return 0 end
redis.call('PUBLISH', ARGV[3], ARGV[4])
redis.call('HSET', KEYS[1], 'owner', '', 'expiresAt', '0')
return 1
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
  local r = redis.pcall('HMGET', KEYS[i], 'owner', 'token')
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

// Lease data is the record's `data` field in the form of `encodeData`, which is never empty: an
// empty argument clears it, leaving the hash as records without data (and those written before
// lease data existed) have always been. The data scripts compare owner and token exactly as RENEW
// and RELEASE do; nothing else writes the field, so renewals and releases without data never
// send it nor rewrite it.
const SET_DATA = (arg: string, fields: string): string =>
  `if ${arg} == '' then
  redis.call('HDEL', KEYS[1], 'data')
  ${fields === '' ? '' : `redis.call('HSET', KEYS[1], ${fields})`}
else
  redis.call('HSET', KEYS[1], ${fields === '' ? '' : `${fields}, `}'data', ${arg})
end`;

/**
 * KEYS: record. ARGV: owner, token, data ('' clears it). Sets the record's data if that owner and
 * token still hold it (expired or not: nobody else took it), owner, token and expiresAt left as
 * they are. Returns 1, or 0 when not ours.
 */
export const WRITE_DATA = script(
  'writeData',
  `
local r = redis.pcall('HMGET', KEYS[1], 'owner', 'token')
if r[1] ~= ARGV[1] or r[2] ~= ARGV[2] then return 0 end
${SET_DATA('ARGV[3]', '')}
return 1
`,
);

/**
 * KEYS: record. ARGV: owner, token, ttlMs, data ('' clears it). RENEW that also sets the record's
 * data, in the same step. Returns the new expiresAt, or 0 when not ours.
 */
export const RENEW_DATA = script(
  'renewData',
  `
local r = redis.pcall('HMGET', KEYS[1], 'owner', 'token')
if r[1] ~= ARGV[1] or r[2] ~= ARGV[2] then return 0 end
${NOW}
local expiresAt = now + ARGV[3]
${SET_DATA('ARGV[4]', "'expiresAt', string.format('%d', expiresAt)")}
return expiresAt
`,
);

/**
 * KEYS: record. ARGV: owner, token, channel, resource, data ('' clears it). RELEASE that also sets
 * the record's data, for the next holder, in the same step. Returns 1, or 0 when not ours.
 */
export const RELEASE_DATA = script(
  'releaseData',
  `
local r = redis.pcall('HMGET', KEYS[1], 'owner', 'token')
if r[1] ~= ARGV[1] or r[2] ~= ARGV[2] then return 0 end
redis.call('PUBLISH', ARGV[3], ARGV[4])
${SET_DATA('ARGV[5]', "'owner', '', 'expiresAt', '0'")}
return 1
`,
);

/**
 * KEYS: index. ARGV: min, max (ZRANGEBYLEX bounds), limit, record key prefix of this shard.
 * Reads names in byte order with their records in one snapshot: a flat list of
 * resource, owner, token, expiresAt, data (each nil when the record has none; the caller checks
 * them), or `{false, resource, problem}` at the first key that is not a hash.
 */
export const LIST = script(
  'list',
  `
local names = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, name in ipairs(names) do
  local r = redis.pcall('HMGET', ARGV[4] .. name, 'owner', 'token', 'expiresAt', 'data')
  if r.err then return {false, name, 'the key holds a Redis ' .. redis.call('TYPE', ARGV[4] .. name).ok .. ', not a hash'} end
  if r[1] or r[2] or r[3] or r[4] then
    local n = #out
    out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5] = name, r[1], r[2], r[3], r[4]
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
