--[[
lib.lua: definitions the scripts share. A script names the ones it uses in lines
"--- @include <name>", one name per line, right after its header comment; a
definition here names the ones it uses the same way, in the comment block above it.
At load time scripts.go puts in front of each script exactly the definitions its
includes reach, directly or through other definitions, in this file's order: the script
still runs as one atomic EVAL (or Redis Function, functions.go), and each call pays only
for what the script uses.

Every top-level name is includable: rcall, each reply code (OK, E_NOT_FOUND, ...), each
key builder K.<name> (which brings the table K along), each helper and constant. An
include of a name this file does not define, or a definition no script reaches, fails
at load; TestLuaIncludesMatchUses fails when a script or definition uses a name of this
file that it does not include, or includes one it does not use. A definition starts in
column 0 with "local" or "function"; the comment lines right above it belong to it.

Every key here is derived from the namespace prefix P = KEYS[1] ("hg:{<ns>}:") and
mirrors one function of keys.go; TestLuaKeysMatchGo holds the two in step. Names that
reach a key (queue, worker, partition, id, fingerprint, class, duty) were validated by
Go: no '{', '}' or control characters, and queue and worker names have no ':', so the
segment that may contain ':' always comes last and no two keys can collide.
]]
local rcall = redis.call

-- The table t[k], made empty where t has none: for the nested groupings of a call
-- (queue -> kind -> partition -> ids).
local function subtable(t, k)
  local s = t[k]
  if not s then
    s = {}
    t[k] = s
  end
  return s
end

-- Calls cmd on key with args, at most step of them a call: unpack puts its values on
-- Lua's C stack, which holds about 8,000. An even step keeps score-member pairs together.
-- call is rcall, or redis.pcall for an advisory write.
local function call_chunked(call, cmd, key, args, step)
  for first = 1, #args, step do call(cmd, key, unpack(args, first, math.min(first + step - 1, #args))) end
end

-- Sorted sets a job enters and soon leaves (K.leases, and the running jobs' index of its
-- kind) are kept in Redis's skiplist encoding. Up to
-- zset-max-listpack-entries members (128 by default) Redis keeps a sorted set as a
-- listpack, where each ZADD walks from the head to the member's place, parsing every score
-- on the way, and each ZREM walks to its member: a worker's running jobs cost a job tens of
-- thousands of instructions more in a listpack than in a skiplist (cd bench && go run
-- ./callgrind -e2e -keep: zzlInsert and zzlFind). A member longer than
-- zset-max-listpack-value (64 by default) converts a set, and Redis keeps it a skiplist as
-- long as it has members: zadd_skiplist adds skiplist_pad with the call's members when the
-- set is missing or a listpack, and removes it again, so no reader sees it. A restart
-- loads small sets as listpacks, and the next call converts them again. OBJECT ENCODING
-- fails on miniredis, which has no encodings, and for an ACL user without it: then no set
-- is converted.
--
-- skiplist_pad is 4,096 bytes, which no job id is. A value made by a call is made again
-- on every call (functions.go), so it is made only when a set is converted, from a
-- 64-byte run: string.rep appends its string once per repetition.
local skiplist_pad = false
-- A ZADD that creates a set with more members than this makes a skiplist of its own.
local SKIPLIST_MIN = 128

-- ZADD key score member ... (args, in pairs) through call (redis.call or redis.pcall),
-- keeping the set a skiplist (skiplist_pad).
--- @include call_chunked
--- @include skiplist_pad
--- @include SKIPLIST_MIN
local function zadd_skiplist(call, key, args)
  local n = #args
  if n == 0 then return end
  if n <= 2 * SKIPLIST_MIN then
    local enc = redis.pcall('OBJECT', 'ENCODING', key)
    if enc == false or enc == 'listpack' or enc == 'ziplist' then
      if not skiplist_pad then skiplist_pad = string.rep(string.rep('\31', 64), 64) end
      call('ZADD', key, 0, skiplist_pad, unpack(args))
      call('ZREM', key, skiplist_pad)
      return
    end
  end
  call_chunked(call, 'ZADD', key, args, 1000)
end

local K = {}
function K.job(P, id) return P .. 'job:' .. id end
function K.errors(P, id) return P .. 'errors:' .. id end
function K.result(P, id) return P .. 'result:' .. id end
function K.output(P, id) return P .. 'output:' .. id end
function K.progress(P, id) return P .. 'progress:' .. id end
function K.queues(P) return P .. 'queues' end
function K.counts(P, q) return P .. 'q:' .. q .. ':counts' end
function K.ring(P, q) return P .. 'q:' .. q .. ':ring' end
function K.ring_state(P, q) return P .. 'q:' .. q .. ':drr' end
function K.partition(P, q, part) return P .. 'q:' .. q .. ':p:' .. part end
function K.pinned_ring(P, q, w) return P .. 'q:' .. q .. ':w:' .. w .. ':ring' end
function K.pinned_ring_state(P, q, w) return P .. 'q:' .. q .. ':w:' .. w .. ':drr' end
function K.pinned_partition(P, q, w, part) return P .. 'q:' .. q .. ':w:' .. w .. ':p:' .. part end
function K.wake(P, q) return P .. 'q:' .. q .. ':wake' end
function K.scheduled(P) return P .. 'scheduled' end
function K.leases(P) return P .. 'leases' end
function K.retained(P) return P .. 'retained' end
function K.unique(P) return P .. 'unique' end
function K.throttle(P) return P .. 'throttle' end
function K.throttle_expiry(P) return P .. 'throttle:expiry' end
function K.quarantine(P) return P .. 'quarantine' end
function K.held(P, fp) return P .. 'held:' .. fp end
function K.paused(P) return P .. 'paused' end
function K.limits(P) return P .. 'limits' end
function K.rate(P, class) return P .. 'rate:' .. class end
function K.duty(P, name) return P .. 'duty:' .. name end
function K.clock(P) return P .. 'clock' end
function K.policy(P) return P .. 'policy' end
function K.corrupt(P) return P .. 'corrupt' end
function K.cancelled(P) return P .. 'cancelled' end -- a pub/sub channel, not a key
function K.parked(P, class) return P .. 'parked:' .. class end
function K.starved(P) return P .. 'starved' end
function K.fp_running(P) return P .. 'fprunning' end
function K.admission(P, lease) return P .. 'admission:' .. lease end

-- Reply codes: scripts.go has a reply* constant for each and translates it in one place
-- (replyError); TestLuaReplyCodesMatchGo holds the two in step.
local OK = 0
local E_ID_CONFLICT = -1
local E_DUPLICATE = -2
local E_QUARANTINED = -3
local E_BACKPRESSURE = -4
local E_LEASE_REJECTED = -5
local E_NOT_FOUND = -7
local E_NOT_CANCELLABLE = -8
local E_CORRUPT = -9 -- {E_CORRUPT, key, why}: a namespace structure is corrupt; nothing was written
local E_NOT_RETRYABLE = -10 -- {E_NOT_RETRYABLE, state}: only a finished job can be retried
local E_JOB_RUNNING = -11 -- the job is leased to a worker: cancel it first
local E_NOT_EDITABLE = -12 -- {E_NOT_EDITABLE, state}: a finished job is edited only with a retry

-- The store clock: a frozen value in K.clock when a test set one, else Redis TIME.
-- Scripts read it before their first write, so a frozen value that is not a number
-- fails the call while nothing is written yet.
--- @include rcall
--- @include K.clock
local function now_ms(P)
  local frozen = rcall('GET', K.clock(P))
  if frozen then
    local n = tonumber(frozen)
    if not n or n ~= math.floor(n) or n < 0 then error('headgate: the frozen store clock is not a time in ms: ' .. string.sub(frozen, 1, 64)) end
    return n
  end
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A store time (ms) as the text Redis keeps of it, formatted once per call and value: a
-- number given to redis.call costs Redis a float format every time, and the jobs of a
-- call mostly share a few times.
local ms_texts = {}
--- @include ms_texts
local function ms_text(ms)
  local t = ms_texts[ms]
  if not t then
    t = string.format('%d', ms)
    ms_texts[ms] = t
  end
  return t
end

local UNFINISHED = { pending = true, scheduled = true, available = true, running = true, retryable = true }

-- The namespace policy (K.policy), read once per call and before the call's first write,
-- cached by nobody. A field that is absent (or not a whole number of at most 100 years
-- of ms) takes the caller's default
-- when the caller passes one (retry and crash backoff, crash limit: StoreConfig), else
-- the built-in default below; policy.go mirrors both. Retention in ms, 0 = never evicted.
local POLICY_FIELDS = { 'retry_base', 'retry_cap', 'crash_limit', 'crash_base', 'ret_archived',
  'ret_undecodable', 'ret_cancelled', 'snooze_limit' }
local POLICY_DEFAULTS = { ret_archived = 604800000, ret_undecodable = 604800000,
  ret_cancelled = 604800000, snooze_limit = 100 }
local policy = nil
--- @include K.policy
--- @include POLICY_FIELDS
--- @include POLICY_DEFAULTS
--- @include policy
local function load_policy(P, defaults)
  if policy then return policy end
  -- Through pcall: a script that reaches this lazily, after a write (finalize), must not
  -- raise on an unusable policy key; it then applies the defaults. Scripts that read the
  -- policy first refuse an unusable key instead (load_policy_checked): the second value
  -- tells them the read failed.
  local v = redis.pcall('HMGET', K.policy(P), unpack(POLICY_FIELDS))
  local failed = type(v) ~= 'table' or v.err
  if failed then v = {} end
  policy = {}
  for i, f in ipairs(POLICY_FIELDS) do
    local n = tonumber(v[i])
    -- Beyond 100 years of ms (policy.go maxPolicyDuration) a value is unusable.
    if n == nil or n < 0 or n > 3153600000000 or n ~= math.floor(n) then
      n = (defaults and defaults[f]) or POLICY_DEFAULTS[f] or 0
    end
    policy[f] = n
  end
  return policy, failed
end

-- A job's error history (K.errors) is a LIST of cjson entries, newest last, capped at
-- ERROR_HISTORY_ENTRIES entries and ERROR_HISTORY_BYTES bytes (oldest dropped first; the
-- newest entry is always kept). The job hash's 'errb' holds the list's byte total.
-- Messages, stacks and logs arrive capped by Go (AttemptError in get_job.go).
local ERROR_HISTORY_ENTRIES = 32
local ERROR_HISTORY_BYTES = 65536

-- Whether a fingerprint is quarantined, asked of Redis at most once per call, and not at
-- all while nothing is quarantined.
local quarantine_known = nil
--- @include rcall
--- @include K.quarantine
--- @include quarantine_known
local function is_quarantined(P, fp)
  if fp == '' then return false end
  if quarantine_known == nil then
    quarantine_known = {}
    if rcall('HLEN', K.quarantine(P)) == 0 then quarantine_known.none = true end
  end
  if quarantine_known.none then return false end
  local q = quarantine_known[fp]
  if q == nil then
    q = rcall('HEXISTS', K.quarantine(P), fp) == 1
    quarantine_known[fp] = q
  end
  return q
end

-- Quarantines a fingerprint: new enqueues with it are refused and its siblings are held.
--- @include rcall
--- @include K.quarantine
--- @include quarantine_known
local function quarantine(P, fp, id)
  rcall('HSET', K.quarantine(P), fp, id)
  if quarantine_known then
    quarantine_known.none = nil
    quarantine_known[fp] = true
  end
end

-- Rank of an available job inside its partition: members of a partition ZSET all score 0,
-- so ZRANGE order is this string's order: priority DESC, scheduled_at ASC, id ASC. The
-- rank is RANK_WIDTH bytes before the id, big-endian binary: 4 of inverted priority
-- (2^31 - 1 - prio) and 7 of scheduled_at (ms, below 2^53 by JOB_RANGES), so its 5th
-- byte is below 32. A member is Redis memory per available job: 11 bytes and a short id
-- fit a 32-byte allocation where the 25 digits of legacy_rank took 48 or 64.
local RANK_WIDTH = 11
-- The head of the last rank formatted and its priority and time: the jobs of a call
-- mostly share both.
local rank_prio, rank_sched, rank_head = nil, nil, nil
--- @include rank_prio
--- @include rank_sched
--- @include rank_head
local function rank(prio, sched, id)
  if prio ~= rank_prio or sched ~= rank_sched then
    local u, floor = 2147483647 - prio, math.floor
    rank_prio, rank_sched = prio, sched
    rank_head = string.char(floor(u / 16777216), floor(u / 65536) % 256, floor(u / 256) % 256, u % 256,
      floor(sched / 281474976710656), floor(sched / 1099511627776) % 256, floor(sched / 4294967296) % 256,
      floor(sched / 16777216) % 256, floor(sched / 65536) % 256, floor(sched / 256) % 256, sched % 256)
  end
  return rank_head .. id
end

-- The rank of partition members written before ranks were binary: 25 digits (10 of
-- inverted priority, 15 of scheduled_at), so its 5th byte is a digit. Such members sort
-- before the binary ranks of every priority up to 1,291,845,631 (whose first byte is past
-- '2'); they are read (rank_id) and removed (unindex_available) as before.
local LEGACY_RANK_WIDTH = 25
local function legacy_rank(prio, sched, id)
  return string.format('%010d%015d', 2147483647 - prio, sched) .. id
end

-- The legacy rank of the job of binary rank m (rank).
--- @include RANK_WIDTH
local function legacy_of_rank(m)
  local b1, b2, b3, b4, s1, s2, s3, s4, s5, s6, s7 = string.byte(m, 1, RANK_WIDTH)
  local u = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
  local sched = (((((s1 * 256 + s2) * 256 + s3) * 256 + s4) * 256 + s5) * 256 + s6) * 256 + s7
  return string.format('%010d%015d', u, sched) .. string.sub(m, RANK_WIDTH + 1)
end

-- The job id of partition member m, of either rank.
--- @include RANK_WIDTH
--- @include LEGACY_RANK_WIDTH
local function rank_id(m)
  if (string.byte(m, 5) or 0) < 48 then return string.sub(m, RANK_WIDTH + 1) end
  return string.sub(m, LEGACY_RANK_WIDTH + 1)
end

local function num(v) return tonumber(v) or 0 end
-- An integer argument as Go formats it: "0", its most common value, costs no tonumber
-- (which parses every other text as a float).
local function arg_int(v)
  if v == '0' then return 0 end
  return tonumber(v)
end
local function str(v) if v then return v end return '' end

-- Job indexes (keys.go, "Job indexes"). Every job is filed in the index of its queue,
-- state and kind: a ZSET of ids scored by the store time (ms) at which the job entered
-- the state, so equal times sort by id and (time, id) orders the index totally. A job
-- with a partition, tags or a fingerprint is also filed under each of them, in a ZSET of
-- the same shape that extends the index key (K.job_filter_index). Available jobs held
-- back by a quarantined fingerprint are filed under "held", as they are counted. The
-- jobs of a partition are counted per state (K.partition_counts). Kinds are few, so a
-- listing of all kinds merges the indexes of the queue's kinds (K.kinds, grown by
-- enqueue) and a queued job pays for one index entry, plus one per partition, tag and
-- fingerprint it has.
--
-- index_move records a job's move and flush_index (reached from flush_counts) writes the
-- moves of the call at its end, one ZADD and one ZREM per touched index. An index key
-- of another type is skipped (the writes go through pcall: callers have written
-- already); the listing reports it as corrupt.
function K.job_index(P, q, state, kind) return P .. 'q:' .. q .. ':ix:' .. state .. ':' .. kind end
function K.job_filter_index(P, q, state, kind, dim, value)
  return P .. 'q:' .. q .. ':ix:' .. state .. ':' .. kind .. '\31' .. dim .. '\31' .. value
end
function K.kinds(P, q) return P .. 'q:' .. q .. ':kinds' end
function K.partition_counts(P, q, part) return P .. 'q:' .. q .. ':pc:' .. part end
-- The sums of every named partition's counts: a job of no partition is counted by what
-- K.counts holds beyond them, so it pays no count write of its own.
function K.partition_counts_named(P, q) return P .. 'q:' .. q .. ':pcnamed' end
-- A queue's admissions in one minute of store time (keys.go AdmittedIn): partition ->
-- jobs admitted, and ADMITTED_ALL -> all of them, kept ADMITTED_KEEP_MS.
function K.admitted_in(P, q, minute) return P .. 'q:' .. q .. ':adm:' .. string.format('%d', minute) end
local ADMITTED_ALL = '\31' -- no partition name holds a control character
local ADMITTED_KEEP_MS = 3660000 -- an hour and a minute: the tenants page reads the last hour

-- The filter dimensions of K.job_filter_index: partition, tag, fingerprint.
local DIM_PARTITION, DIM_TAG, DIM_FINGERPRINT = 'p', 't', 'f'

-- What index_move files a job under: its queue, kind, partition, tags ("\n"-joined) and
-- fingerprint. Fields the caller's job table lacks are read from the job hash.
local INDEX_FIELDS = { 'queue', 'kind', 'part', 'tags', 'fp' }
-- A job hash of the default queue leaves out 'queue' (JOB_DEFAULTS, QueueDefault in Go).
local QUEUE_DEFAULT = 'default'
-- Per call: id -> where the job is filed {state, at, queue, kind, part, tags, fp} once
-- this call noted it (index_note); the moves of each touched index, {key, adds = {score,
-- id, ...}, na = #adds, rems = nil or {id, ...}, late = nil or id -> na when the id was
-- removed after adds}, in index_order and found by key in index_slots (a filter index's
-- under its kind index's, by dimension -> value), the last one found also by its queue,
-- state and kind in slot_q, slot_state, slot_kind and slot_o, so that a call's run of
-- jobs of one kind builds no key name twice, and adds and removes are the ZADD and ZREM
-- arguments as they come (a map of every id moved cost admission more than the ZSETs'
-- own work); the partition counts' deltas, {key, n = state -> delta}, in pcount_order
-- and by queue -> partition in pcount_delta ('' for the named sums); queue -> kind ->
-- true for the kinds in K.kinds, known_q and known_kind for the one index_kind_known
-- found there. Each table is made when the call first needs it (false until then): a
-- call that moves one job, as most enqueues do, makes four.
local index_filed = false
local index_slots, index_order = false, false
local slot_q, slot_state, slot_kind, slot_o = nil, nil, nil, nil
local pcount_delta, pcount_order = false, false
local kinds_added = false
local known_q, known_kind = nil, nil

--- @include K.job
--- @include INDEX_FIELDS
--- @include QUEUE_DEFAULT
local function index_fill(P, id, j)
  if j.queue and j.kind and j.part and j.tags and j.fp then return end
  local v = redis.pcall('HMGET', K.job(P, id), unpack(INDEX_FIELDS))
  if type(v) ~= 'table' or v.err then v = {} end
  for i, f in ipairs(INDEX_FIELDS) do
    if j[f] == nil then j[f] = v[i] or (f == 'queue' and QUEUE_DEFAULT) or '' end
  end
end

-- The moves of the kind index of (q, state, kind), created empty when the call has none.
-- Tables made and collected are a large part of what the indexes cost an enqueue in
-- Redis instructions (bench/callgrind, with and without -tags headgate_noindex): the
-- slots are found by key, with no table per queue and state, the last one without a
-- lookup.
--- @include K.job_index
--- @include index_slots
--- @include index_order
--- @include slot_q
--- @include slot_state
--- @include slot_kind
--- @include slot_o
local function index_slot(P, q, state, kind)
  if kind == slot_kind and state == slot_state and q == slot_q then return slot_o end
  local key = K.job_index(P, q, state, kind)
  if not index_slots then index_slots, index_order = {}, {} end
  local o = index_slots[key]
  if not o then
    -- The running jobs' index is kept a skiplist (zadd_skiplist): a worker's jobs are
    -- about as many as a listpack holds. The available jobs' is not: a backlog of more
    -- than 128 jobs makes a skiplist of its own, and a smaller one is walked less than
    -- the check would cost every enqueue.
    o = { key = key, adds = {}, na = 0, skiplist = state == 'running' }
    index_slots[key] = o
    index_order[#index_order + 1] = o
  end
  slot_q, slot_state, slot_kind, slot_o = q, state, kind, o
  return o
end

-- The moves of the filter index under kind index o (index_slot of q, state, kind) for
-- dimension dim and value.
--- @include K.job_filter_index
--- @include index_order
local function index_filter_slot(P, o, q, state, kind, dim, value)
  local by_value = o[dim]
  if not by_value then
    by_value = {}
    o[dim] = by_value
  end
  local f = by_value[value]
  if not f then
    f = { key = K.job_filter_index(P, q, state, kind, dim, value), adds = {}, na = 0 }
    by_value[value] = f
    index_order[#index_order + 1] = f
  end
  return f
end

-- Files (score: text) or unfiles (score false) id in the index of moves o. A removal
-- after adds to the same index is noted in o.late, so that flush_index drops the adds it
-- undid: the ZREM goes first.
local function index_put(o, id, score)
  local n = o.na
  if score then
    local a = o.adds
    a[n + 1] = score
    a[n + 2] = id
    o.na = n + 2
  else
    local r = o.rems
    if not r then
      r = {}
      o.rems = r
    end
    r[#r + 1] = id
    if n > 0 then
      local late = o.late
      if not late then
        late = {}
        o.late = late
      end
      late[id] = n
    end
  end
end

-- The score this call last gave id in the index of moves o (text), or nil when it gave
-- none or removed id after.
local function index_put_score(o, id)
  local a = o.adds
  for i = o.na, 2, -2 do
    if a[i] == id then
      if o.late and (o.late[id] or 0) >= i then return nil end
      return a[i - 1]
    end
  end
  return nil
end

-- Adds n to the count of state of named partition part and to the queue's named sums.
--- @include K.partition_counts
--- @include K.partition_counts_named
--- @include pcount_delta
--- @include pcount_order
local function pcount_add(P, q, part, state, n)
  if not pcount_delta then pcount_delta, pcount_order = {}, {} end
  local by_part = pcount_delta[q]
  if not by_part then
    by_part = { [''] = { key = K.partition_counts_named(P, q), n = {} } }
    pcount_delta[q] = by_part
    pcount_order[#pcount_order + 1] = by_part['']
  end
  local d = by_part[part]
  if not d then
    d = { key = K.partition_counts(P, q, part), n = {} }
    by_part[part] = d
    pcount_order[#pcount_order + 1] = d
  end
  d.n[state] = (d.n[state] or 0) + n
  local all = by_part[''].n
  all[state] = (all[state] or 0) + n
end

-- Whether tags (not '') file a job under no tag index: a single meta tag, such as the
-- trace context contrib/otel writes (MetaTagPrefix '_'), told by its first byte. Such a
-- job moves through the indexes as one without tags does (index_move's common move,
-- admission's index_move_all): a traced job's tag had sent every one of them down the
-- general move, a quarter more of admission's Redis instructions (bench/callgrind -traced).
local function tags_unindexed(tags)
  return string.byte(tags) == 95 and not string.find(tags, '\n', 1, true)
end

-- Files (score = the entry time, ms) or unfiles (score = false) job id as f describes it
-- in state: its kind index, its filter indexes, its partition's count.
--- @include index_slot
--- @include index_filter_slot
--- @include DIM_PARTITION
--- @include DIM_TAG
--- @include DIM_FINGERPRINT
--- @include index_put
--- @include pcount_add
--- @include ms_text
--- @include ms_texts
--- @include tags_unindexed
local function index_file(P, id, f, state, score)
  if score then score = ms_texts[score] or ms_text(score) end
  local q, kind = f.queue, f.kind
  local o = index_slot(P, q, state, kind)
  index_put(o, id, score)
  local tags = f.tags
  if f.part == '' and f.fp == '' and tags == '' then return end
  if f.part ~= '' then
    index_put(index_filter_slot(P, o, q, state, kind, DIM_PARTITION, f.part), id, score)
    pcount_add(P, q, f.part, state, score and 1 or -1)
  end
  if f.fp ~= '' then index_put(index_filter_slot(P, o, q, state, kind, DIM_FINGERPRINT, f.fp), id, score) end
  -- A single meta tag is skipped whole: the pattern match and its substrings were half of
  -- what the tag cost admission in Redis instructions (bench/callgrind -traced).
  if tags ~= '' and not tags_unindexed(tags) then
    for tag in string.gmatch(tags, '[^\n]+') do
      -- A tag that starts with '_' (MetaTagPrefix) is metadata, not filed.
      if string.byte(tag) ~= 95 then
        index_put(index_filter_slot(P, o, q, state, kind, DIM_TAG, tag), id, score)
      end
    end
  end
end

-- The store time of the call, for index_move callers that are given none; read once.
local index_clock_ms = nil
--- @include now_ms
--- @include index_clock_ms
local function index_clock(P)
  if not index_clock_ms then index_clock_ms = now_ms(P) end
  return index_clock_ms
end

-- Notes where job j is filed before a caller changes its partition, tags or fingerprint
-- in place (apply_edit, a duplicate's replace), so the next index_move unfiles those.
--- @include index_filed
--- @include index_fill
local function index_note(P, id, j)
  if index_filed and index_filed[id] then return end
  index_fill(P, id, j)
  if not index_filed then index_filed = {} end
  index_filed[id] = { queue = j.queue, kind = j.kind, part = j.part, tags = j.tags, fp = j.fp }
  j.tags = nil -- read again by index_move, after the caller's change
end

-- A new job's kind joins its queue's kinds (K.kinds), once per call.
--- @include K.kinds
--- @include kinds_added
--- @include known_q
--- @include known_kind
local function index_kind_added(P, q, kind)
  if kind == known_kind and q == known_q then return end
  if not kinds_added then kinds_added = {} end
  local added = kinds_added[q]
  if not added then
    added = {}
    kinds_added[q] = added
  end
  if not added[kind] then
    added[kind] = true
    redis.pcall('SADD', K.kinds(P, q), kind)
  end
end

-- Whether kind is one of queue q's kinds (K.kinds), read before a call's writes; when it
-- is, no move of the call adds it (index_kind_added). Every script that files a new job
-- lists its queue (K.queues) in the same call, so a queue with a kind is listed: enqueue
-- reads this before the queue's listing, which it then need not read, so that the kinds
-- cost a job no command of their own.
--- @include K.kinds
--- @include known_q
--- @include known_kind
local function index_kind_known(P, q, kind)
  if redis.pcall('SISMEMBER', K.kinds(P, q), kind) ~= 1 then return false end
  if not known_q then known_q, known_kind = q, kind end
  return true
end

-- Moves job j (a table with its queue, and its kind, part, tags and fp when the caller
-- has them) from state `from` to state `to` in the indexes, as move_count moves its
-- count ("held" for a held job; nil = not filed: a new job, a deleted one). The job
-- enters `to` at store time `at` (ms), or keeps the time it entered `from` when `at` is
-- nil. A move within one state files the job again under a changed partition, tags or
-- fingerprint, keeping its entry time. Enqueue adds a new job's kind to K.kinds.
--- @include index_filed
--- @include index_slot
--- @include index_fill
--- @include index_file
--- @include index_put_score
--- @include index_put
--- @include ms_text
--- @include ms_texts
--- @include index_kind_added
--- @include kinds_added
--- @include known_q
--- @include known_kind
--- @include tags_unindexed
local function index_move(P, id, j, from, to, at)
  if not (j.queue and j.kind and j.part and j.tags and j.fp) then index_fill(P, id, j) end
  local f = index_filed and index_filed[id]
  if not f and from ~= to and j.part == '' and j.fp == '' and (j.tags == '' or tags_unindexed(j.tags))
    and (at or not (from and to)) then
    -- The common move, inline: a job in its kind indexes alone, not noted, entering `to`
    -- at a given time. Calls and table lookups are most of what the indexes cost a job
    -- in Redis instructions (bench/callgrind with and without -tags headgate_noindex).
    if from then
      index_put(index_slot(P, j.queue, from, j.kind), id, false)
    elseif not (j.kind == known_kind and j.queue == known_q) then
      local added = kinds_added and kinds_added[j.queue]
      if not (added and added[j.kind]) then index_kind_added(P, j.queue, j.kind) end
    end
    if to then
      local o = index_slot(P, j.queue, to, j.kind)
      local n, a = o.na, o.adds
      a[n + 1] = ms_texts[at] or ms_text(at)
      a[n + 2] = id
      o.na = n + 2
    end
    return
  end
  if from == to then
    if not f or (f.part == j.part and f.tags == j.tags and f.fp == j.fp) then return end
  end
  f = f or j -- not noted: filed as it is now
  if from then
    -- The entry time to keep, when the job is filed again (not for a job leaving the indexes).
    if to and (at == nil or from == to) then
      at = nil
      if f ~= j then at = f.at end
      if at == nil then
        local o = index_slot(P, f.queue, from, f.kind)
        at = tonumber(index_put_score(o, id)) or tonumber(redis.pcall('ZSCORE', o.key, id)) or 0
      end
    end
    index_file(P, id, f, from, false)
  else
    index_kind_added(P, j.queue, j.kind)
  end
  -- Only a job noted (index_note) needs its filing remembered: a later move of any other
  -- finds its entry time in its index slot.
  if f ~= j then
    if to then
      index_filed[id] = { state = to, at = at, queue = j.queue, kind = j.kind, part = j.part, tags = j.tags, fp = j.fp }
    else
      index_filed[id] = nil
    end
  end
  if to then index_file(P, id, j, to, at) end
end

-- index_put of each of ids with one score (text) or false.
--- @include index_put
local function index_put_all(o, ids, score)
  local n = o.na
  if score then
    local a = o.adds
    for i = 1, #ids do
      a[n + 1] = score
      a[n + 2] = ids[i]
      n = n + 2
    end
    o.na = n
  elseif n > 0 then
    for i = 1, #ids do index_put(o, ids[i], false) end
  else
    local r = o.rems
    if not r then
      r = {}
      o.rems = r
    end
    local m = #r
    for i = 1, #ids do r[m + i] = ids[i] end
  end
end

-- index_move of jobs ids of queue q, kind and partition part ('' = none), none with a
-- fingerprint or tags but unindexed ones (tags_unindexed) and none noted (index_note),
-- from state `from` to state `to` at store time `at` (ms): index_move's move in one loop
-- per index, without a call per job.
-- The caller moves no job of ids otherwise in the call. Admission and bulk retry move
-- their jobs this way.
--- @include index_slot
--- @include index_filter_slot
--- @include index_put_all
--- @include pcount_add
--- @include DIM_PARTITION
--- @include ms_text
--- @include ms_texts
local function index_move_all(P, q, kind, part, ids, from, to, at)
  local t = ms_texts[at] or ms_text(at)
  local o, d = index_slot(P, q, from, kind), index_slot(P, q, to, kind)
  index_put_all(o, ids, false)
  index_put_all(d, ids, t)
  if part ~= '' then
    index_put_all(index_filter_slot(P, o, q, from, kind, DIM_PARTITION, part), ids, false)
    index_put_all(index_filter_slot(P, d, q, to, kind, DIM_PARTITION, part), ids, t)
    pcount_add(P, q, part, from, -#ids)
    pcount_add(P, q, part, to, #ids)
  end
end

-- Writes the index moves of the call (flush_counts calls it). Batches are chunked to
-- stay within what unpack takes.
--- @include index_filed
--- @include index_slots
--- @include index_order
--- @include pcount_delta
--- @include pcount_order
--- @include call_chunked
--- @include zadd_skiplist
--- @include slot_q
--- @include slot_state
--- @include slot_kind
--- @include slot_o
local function flush_index()
  for i = 1, index_order and #index_order or 0 do
    local o = index_order[i]
    local adds, late = o.adds, o.late
    if late then
      -- Removes go first: an add a later removal undid is left out.
      local kept = {}
      for i = 2, o.na, 2 do
        local id = adds[i]
        if (late[id] or 0) < i then
          kept[#kept + 1] = adds[i - 1]
          kept[#kept + 1] = id
        end
      end
      adds = kept
    end
    if o.rems then call_chunked(redis.pcall, 'ZREM', o.key, o.rems, 1000) end
    if o.skiplist then
      zadd_skiplist(redis.pcall, o.key, adds)
    else
      call_chunked(redis.pcall, 'ZADD', o.key, adds, 1000)
    end
  end
  if pcount_order then
    for _, d in ipairs(pcount_order) do
      for state, n in pairs(d.n) do
        if n ~= 0 then redis.pcall('HINCRBY', d.key, state, n) end
      end
    end
  end
  index_filed, index_slots, index_order, pcount_delta, pcount_order = false, false, false, false, false
  slot_q, slot_state, slot_kind, slot_o = nil, nil, nil, nil
end

-- State counts per queue move in memory during a call and are written once, by
-- flush_counts, which every script that changes a state calls before it returns.
local count_delta = {}
--- @include count_delta
local function move_count(P, q, from, to)
  local d = count_delta[q]
  if not d then
    d = {}
    count_delta[q] = d
  end
  if from then d[from] = (d[from] or 0) - 1 end
  if to then d[to] = (d[to] or 0) + 1 end
end

-- move_count of n jobs at once: admission moves a partition turn's jobs together.
--- @include count_delta
local function move_counts(P, q, from, to, n)
  local d = count_delta[q]
  if not d then
    d = {}
    count_delta[q] = d
  end
  d[from] = (d[from] or 0) - n
  d[to] = (d[to] or 0) + n
end

--- @include rcall
--- @include K.counts
--- @include count_delta
--- @include flush_index
local function flush_counts(P)
  -- Emptied as it is written (Lua allows clearing a field during its traversal): a
  -- new table would be one more to make and collect on every call.
  for q, d in pairs(count_delta) do
    for state, n in pairs(d) do
      if n ~= 0 then rcall('HINCRBY', K.counts(P, q), state, n) end
    end
    count_delta[q] = nil
  end
  flush_index()
end

-- Held jobs are available jobs counted apart ("held", not "available"); "unrunnable" is a
-- part of "available" and not added again.
--- @include rcall
--- @include K.counts
--- @include num
local function unfinished(P, q)
  local c = rcall('HMGET', K.counts(P, q), 'pending', 'scheduled', 'available', 'running', 'retryable', 'held')
  return num(c[1]) + num(c[2]) + num(c[3]) + num(c[4]) + num(c[5]) + num(c[6])
end

-- Marks a job as having keys besides its hash (errors, result, output, progress), so
-- that deleting the common job, which has none, costs one key.
--- @include rcall
--- @include K.job
local function mark_aux(P, id)
  rcall('HSET', K.job(P, id), 'aux', '1')
end

-- Appends an entry to a job's error history: e holds what the caller knows (outcome,
-- state, msg, stack, logs); the attempt, crash attempt, fence and holder come from j, the
-- job as it is after the transition, and the time from now. Empty fields are left out.
--- @include rcall
--- @include K.job
--- @include K.errors
--- @include ERROR_HISTORY_ENTRIES
--- @include ERROR_HISTORY_BYTES
local function push_error(P, id, j, e, now)
  e.at = now
  e.attempt = j.attempt
  e.crash = j.crash
  e.fence = j.fence
  if j.lease ~= '' then e.worker = j.lease end
  for f, v in pairs(e) do
    if v == '' then e[f] = nil end
  end
  local line = cjson.encode(e)
  local jk, k = K.job(P, id), K.errors(P, id)
  rcall('HSET', jk, 'aux', '1')
  local len = rcall('RPUSH', k, line)
  local bytes = rcall('HINCRBY', jk, 'errb', #line)
  while len > 1 and (len > ERROR_HISTORY_ENTRIES or bytes > ERROR_HISTORY_BYTES) do
    local old = rcall('LPOP', k)
    bytes = rcall('HINCRBY', jk, 'errb', -#old)
    len = len - 1
  end
end

-- Partition ZSET and ring of an available job: pinned jobs live apart, per worker, so
-- work pinned to one worker never sits in front of another worker's candidates.
--- @include K.ring
--- @include K.ring_state
--- @include K.partition
--- @include K.pinned_ring
--- @include K.pinned_ring_state
--- @include K.pinned_partition
local function partition_of(P, q, sticky, part)
  if sticky ~= '' then
    return K.pinned_partition(P, q, sticky, part), K.pinned_ring(P, q, sticky), K.pinned_ring_state(P, q, sticky)
  end
  return K.partition(P, q, part), K.ring(P, q), K.ring_state(P, q)
end

-- Rings are ZSETs of partitions scored by turn order. Within one call, the highest
-- score and ring membership are read once and then tracked here.
local ring_last = {}
local ring_has = {}
--- @include rcall
--- @include ring_has
local function ring_contains(ring, part)
  local k = ring .. '\n' .. part
  local v = ring_has[k]
  if v == nil then
    v = rcall('ZSCORE', ring, part) ~= false
    ring_has[k] = v
  end
  return v
end

-- Puts a partition at the back of its ring (adding it when absent).
--- @include rcall
--- @include ring_last
--- @include ring_has
local function ring_push_back(ring, part)
  local last = ring_last[ring]
  if last == nil then
    local r = rcall('ZRANGE', ring, -1, -1, 'WITHSCORES')
    last = tonumber(r[2]) or -1
  end
  last = last + 1
  ring_last[ring] = last
  rcall('ZADD', ring, last, part)
  ring_has[ring .. '\n' .. part] = true
end

--- @include rcall
--- @include ring_has
local function ring_remove(ring, part)
  rcall('ZREM', ring, part)
  ring_has[ring .. '\n' .. part] = false
end

--- @include rcall
--- @include K.wake
local function wake(P, q)
  local k = K.wake(P, q)
  -- Idle workers pop the tokens, so the list is mostly short: trimmed only when long,
  -- and then to half, so that a queue no worker waits on trims once in 16 wake-ups.
  if rcall('RPUSH', k, '1') > 32 then rcall('LTRIM', k, -16, -1) end
end

-- Adds a job to its partition's available set; a partition that was empty joins the back
-- of its ring. A change of the ring's members restarts admission's count of turns that
-- could spend nothing ("cr", see admit.lua). The caller sets the state and wakes the queue.
--- @include rcall
--- @include rank
--- @include partition_of
--- @include ring_contains
--- @include ring_push_back
local function index_available(P, id, q, part, sticky, prio, sched)
  local pz, ring, rs = partition_of(P, q, sticky, part)
  rcall('ZADD', pz, '0', rank(prio, sched, id))
  if not ring_contains(ring, part) then
    ring_push_back(ring, part)
    rcall('HDEL', rs, 'cr')
  end
end

-- A partition whose available set is empty leaves its ring and forgets its round-robin
-- credit.
--- @include rcall
--- @include ring_remove
local function partition_emptied(ring, rs, part)
  ring_remove(ring, part)
  rcall('HDEL', rs, 'd:' .. part, 'cr')
  if rcall('HGET', rs, 'turn') == part then rcall('HDEL', rs, 'turn') end
end

-- A call that takes many jobs out of partition sets and puts none in (bulk_cancel,
-- bulk_delete) collects the members here, partition key -> {ring, rs, part, members}
-- (the keys in order at 1..n), and removes them with one ZREM per partition
-- (flush_unavailable) instead of a ZREM and a ZCARD per job. nil: unindex_available
-- writes at once.
local available_rems = nil

--- @include rcall
--- @include call_chunked
--- @include available_rems
--- @include partition_emptied
--- @include legacy_of_rank
local function flush_unavailable()
  if not available_rems then return end
  for _, pz in ipairs(available_rems) do
    local r = available_rems[pz]
    local before = rcall('ZCARD', pz)
    call_chunked(rcall, 'ZREM', pz, r.members, 1000)
    local left = rcall('ZCARD', pz)
    -- Fewer removed than asked: some were filed under their legacy rank.
    if left > 0 and before - left < #r.members then
      local legacy = {}
      for i, m in ipairs(r.members) do legacy[i] = legacy_of_rank(m) end
      call_chunked(rcall, 'ZREM', pz, legacy, 1000)
      left = rcall('ZCARD', pz)
    end
    if left == 0 then partition_emptied(r.ring, r.rs, r.part) end
  end
  available_rems = {}
end

-- Removes a job from its partition's available set; an emptied partition leaves its ring.
--- @include rcall
--- @include rank
--- @include legacy_rank
--- @include partition_of
--- @include partition_emptied
--- @include available_rems
local function unindex_available(P, id, q, part, sticky, prio, sched)
  local pz, ring, rs = partition_of(P, q, sticky, part)
  if available_rems then
    local r = available_rems[pz]
    if not r then
      r = { ring = ring, rs = rs, part = part, members = {} }
      available_rems[pz] = r
      available_rems[#available_rems + 1] = pz
    end
    r.members[#r.members + 1] = rank(prio, sched, id)
    return
  end
  if rcall('ZREM', pz, rank(prio, sched, id)) == 0 then rcall('ZREM', pz, legacy_rank(prio, sched, id)) end
  if rcall('ZCARD', pz) == 0 then partition_emptied(ring, rs, part) end
end

-- Removes an available job from wherever admission would look for it: its partition,
-- the set of siblings held back by a quarantined fingerprint (counted "held"), or the
-- jobs parked by its rate class (j.parked: "s" short of tokens, "u" heavier than the
-- burst, counted "unrunnable" too). The caller moves the "available" count.
--- @include rcall
--- @include K.job
--- @include K.held
--- @include unindex_available
--- @include K.parked
--- @include move_count
--- @include index_move
local function unindex_available_job(P, id, j)
  if j.held == '1' then
    rcall('SREM', K.held(P, j.fp), id)
    rcall('HDEL', K.job(P, id), 'held')
    move_count(P, j.queue, 'held', 'available')
    index_move(P, id, j, 'held', 'available')
  elseif j.parked ~= nil and j.parked ~= '' then
    rcall('ZREM', K.parked(P, j.rc), id)
    rcall('HDEL', K.job(P, id), 'parked')
    if j.parked == 'u' then move_count(P, j.queue, 'unrunnable', nil) end
  else
    unindex_available(P, id, j.queue, j.part, j.sticky, j.prio, j.sched)
  end
end

-- The fields of a job hash that transitions read, in the order load_job reads them.
local JOB_FIELDS = { 'state', 'queue', 'part', 'sticky', 'prio', 'sched', 'fp', 'ret', 'ukey', 'uwin',
  'held', 'attempt', 'maxa', 'crash', 'rc', 'charge', 'step', 'lease', 'fence', 'aux', 'parked', 'snz' }
local JOB_NUMBERS = { prio = true, sched = true, ret = true, uwin = true, attempt = true, maxa = true,
  crash = true, charge = true, fence = true, weight = true, snz = true, errb = true }
-- Enqueue leaves out fields at their default; absent fields read as these, else '' or 0.
-- jobFromHash in envelope.go reads the same fields with the same defaults
-- (TestLuaJobFieldsMatchGo). 'created' is left out when it equals 'sched' (keep_created).
--- @include QUEUE_DEFAULT
local JOB_DEFAULTS = { maxa = 25, weight = 1, schema = 1, queue = QUEUE_DEFAULT }

-- Reads the named fields of a job into j (a new table when j is nil); nil when the job
-- does not exist. Absent fields read as '' or 0.
--- @include rcall
--- @include K.job
--- @include JOB_NUMBERS
--- @include JOB_DEFAULTS
local function load_fields(P, id, fields, j)
  local v = rcall('HMGET', K.job(P, id), unpack(fields))
  j = j or {}
  for i, f in ipairs(fields) do
    if JOB_NUMBERS[f] then j[f] = tonumber(v[i]) or JOB_DEFAULTS[f] or 0 else j[f] = v[i] or JOB_DEFAULTS[f] or '' end
  end
  if j.state == '' then return nil end
  return j
end

--- @include JOB_FIELDS
--- @include load_fields
local function load_job(P, id)
  return load_fields(P, id, JOB_FIELDS)
end

-- Releases a strict unique key held by this job (throttle windows run out on their own).
--- @include rcall
--- @include K.unique
local function release_unique(P, id, j)
  if j.ukey ~= '' and j.uwin == 0 and rcall('HGET', K.unique(P), j.ukey) == id then
    rcall('HDEL', K.unique(P), j.ukey)
  end
end

-- Backoff after the n-th failure: base * 2^(n-1), at most cap.
local function backoff(n, base, cap)
  local shift = n - 1
  if shift < 0 then shift = 0 end
  if shift > 20 then shift = 20 end
  return math.min(base * (2 ^ shift), cap)
end

-- A running job admitted under the per-fingerprint in-flight cap carries "fpi"; when it
-- leaves running, its fingerprint's count goes down. One HDEL when it has none.
--- @include rcall
--- @include K.fp_running
-- Callers have written already, so an unusable count is left alone rather than raising.
local function release_fingerprint(P, jk)
  if rcall('HDEL', jk, 'fpi') == 1 then
    local fp = rcall('HGET', jk, 'fp')
    local k = K.fp_running(P)
    local n = fp and tonumber(redis.pcall('HGET', k, fp))
    if n and n > 1 then
      redis.pcall('HSET', k, fp, string.format('%d', n - 1))
    elseif n then
      redis.pcall('HDEL', k, fp)
    end
  end
end

-- A number in [0, 1) drawn from a string (djb2, then mixed): the same for the same string, spread
-- apart for different ones, so jobs that failed together come back apart. Deterministic,
-- so a replica or an AOF replay of the script computes the same.
local function spread(s)
  local h = 5381
  for i = 1, #s do h = (h * 33 + string.byte(s, i)) % 2147483647 end
  -- Park-Miller steps, so strings that differ in their last byte land far apart (every
  -- product stays below 2^53, exact in a Lua number).
  for _ = 1, 3 do h = (h * 48271) % 2147483647 end
  return h / 2147483647
end

-- Backoff after a job's n-th crash: backoff(n, base, cap) scaled by a factor in
-- [0.5, 1.5) drawn from the job's id and n, at most cap. Jobs that crashed together
-- (most often innocent neighbours of the job that killed their worker) are not all due
-- at the same instant, so they are not all admitted together again.
--- @include backoff
--- @include spread
local function crash_backoff(id, n, base, cap)
  local d = backoff(n, base, cap)
  return math.min(math.floor(d * (0.5 + spread(id .. ':' .. n))), cap)
end

-- Moves a job out of running: the lease (with its admission time and worker), its
-- expiry entry, the admission's rate charge and its fingerprint's in-flight count go.
-- fp is the job's fingerprint when the caller read it ('' = none), else nil: admission
-- marks "fpi" only on a job with a fingerprint, and a running job's fingerprint does not
-- change, so a job without one has no count to release and the mark goes in the one HDEL.
--- @include rcall
--- @include K.job
--- @include K.leases
--- @include release_fingerprint
local function drop_lease(P, id, fp)
  rcall('ZREM', K.leases(P), id)
  local jk = K.job(P, id)
  if fp == '' then
    rcall('HDEL', jk, 'lease', 'charge', 'by', 'fpi')
    return
  end
  rcall('HDEL', jk, 'lease', 'charge', 'by')
  release_fingerprint(P, jk)
end

-- How long a job that ends in a terminal state is kept (ms; 0 = never evicted):
-- completed as the job says (its retention; 0 never gets here, a success at 0 deletes),
-- archived, undecodable and cancelled by the namespace policy, quarantined never (it
-- waits for an operator).
--- @include load_policy
local function retention_of(P, j, state)
  if state == 'completed' then return j.ret end
  if state == 'quarantined' then return 0 end
  return load_policy(P)['ret_' .. state] or 0
end

-- Ends a job in a terminal state, scheduling its eviction after its retention. A script
-- that finalizes calls load_policy before its first write, so that the policy read here
-- cannot fail after a write.
--- @include rcall
--- @include K.job
--- @include K.retained
--- @include move_count
--- @include release_unique
--- @include retention_of
--- @include index_move
--- @include ms_text
local function finalize(P, id, j, state, now)
  local ret = retention_of(P, j, state)
  index_move(P, id, j, j.state, state, now)
  rcall('HSET', K.job(P, id), 'state', state, 'fin', ms_text(now))
  move_count(P, j.queue, j.state, state)
  release_unique(P, id, j)
  if ret > 0 then
    rcall('ZADD', K.retained(P), ms_text(now + ret), id)
  end
end

-- A call that deletes many jobs (ack) collects their keys here, and deletes them with one
-- DEL at its end (flush_deleted) instead of one per job; nil: delete_job deletes at once.
-- The caller writes nothing more to a job it deleted.
local deleted_keys = nil

-- Deletes a job and everything stored under its id. A running job's fingerprint count
-- goes (drop_lease: only a job with a fingerprint has one; j.fp nil = not read).
--- @include rcall
--- @include K.job
--- @include K.errors
--- @include K.result
--- @include K.output
--- @include K.progress
--- @include K.retained
--- @include UNFINISHED
--- @include move_count
--- @include release_fingerprint
--- @include index_move
--- @include deleted_keys
local function delete_job(P, id, j)
  index_move(P, id, j, j.state, nil)
  local jk = K.job(P, id)
  if j.state == 'running' and j.fp ~= '' then release_fingerprint(P, jk) end
  local d = deleted_keys
  if d then
    local n = #d
    d[n + 1] = jk
    if j.aux == '1' then
      d[n + 2], d[n + 3], d[n + 4], d[n + 5] = K.errors(P, id), K.result(P, id), K.output(P, id), K.progress(P, id)
    end
  elseif j.aux == '1' then
    rcall('DEL', jk, K.errors(P, id), K.result(P, id), K.output(P, id), K.progress(P, id))
  else
    rcall('DEL', jk)
  end
  if not UNFINISHED[j.state] then rcall('ZREM', K.retained(P), id) end
  move_count(P, j.queue, j.state, nil)
end

-- Deletes the keys delete_job collected (deleted_keys), 1,000 a call: unpack's stack.
--- @include rcall
--- @include deleted_keys
local function flush_deleted()
  local d = deleted_keys
  if not d then return end
  for first = 1, #d, 1000 do rcall('DEL', unpack(d, first, math.min(first + 999, #d))) end
  deleted_keys = nil
end

-- A new job's hash leaves out 'created' when it equals 'sched' (new_job_fields), so
-- whatever writes 'sched' first stores 'created' from it when it is absent. Cost: one
-- HEXISTS per rescheduling, two more commands the first time.
--- @include rcall
local function keep_created(k)
  if rcall('HEXISTS', k, 'created') == 0 then
    local sched = rcall('HGET', k, 'sched')
    if sched then rcall('HSET', k, 'created', sched) end
  end
end

-- Reschedules a job (scheduled or retryable) to run at `at`.
--- @include rcall
--- @include K.job
--- @include K.scheduled
--- @include move_count
--- @include index_move
--- @include index_clock
--- @include keep_created
local function schedule(P, id, j, state, at)
  index_move(P, id, j, j.state, state, index_clock(P))
  keep_created(K.job(P, id))
  rcall('HSET', K.job(P, id), 'state', state, 'sched', at)
  rcall('ZADD', K.scheduled(P), at, id)
  move_count(P, j.queue, j.state, state)
end

-- Makes a job available now, keeping its route (queue, partition, sticky worker).
--- @include rcall
--- @include K.job
--- @include K.held
--- @include is_quarantined
--- @include move_count
--- @include index_available
--- @include index_move
--- @include ms_text
--- @include keep_created
local function make_available(P, id, j, now)
  local sched = j.sched
  if sched > now then sched = now end
  -- A new job (no state yet: a workflow's task or step) has the 'sched' it was written with.
  if j.state then keep_created(K.job(P, id)) end
  rcall('HSET', K.job(P, id), 'state', 'available', 'sched', ms_text(sched))
  if is_quarantined(P, j.fp) then
    -- Held: available, but counted "held" until the fingerprint is released.
    move_count(P, j.queue, j.state, 'held')
    index_move(P, id, j, j.state, 'held', now)
    rcall('SADD', K.held(P, j.fp), id)
    rcall('HSET', K.job(P, id), 'held', '1')
  else
    move_count(P, j.queue, j.state, 'available')
    index_move(P, id, j, j.state, 'available', now)
    index_available(P, id, j.queue, j.part, j.sticky, j.prio, sched)
  end
end

-- Token bucket of a rate class, refilled lazily on the store clock. nil when the class is
-- not configured (unlimited). Refill keeps the remainder of a partial token so the bucket
-- never admits more than burst + limit * elapsed / window.
--- @include rcall
--- @include K.rate
--- @include num
local function load_bucket(P, class, now)
  local k = K.rate(P, class)
  local v = rcall('HMGET', k, 'tokens', 'burst', 'limit', 'window', 'refilled')
  if not v[2] then return nil end
  local b = { key = k, tokens = num(v[1]), burst = num(v[2]), limit = num(v[3]), window = num(v[4]), refilled = num(v[5]) }
  if b.tokens >= b.burst then
    b.refilled = now
  elseif b.limit > 0 and b.window > 0 and now > b.refilled then
    local gained = math.floor((now - b.refilled) * b.limit / b.window)
    if b.tokens + gained >= b.burst then
      b.tokens = b.burst
      b.refilled = now
    elseif gained > 0 then
      b.tokens = b.tokens + gained
      b.refilled = b.refilled + math.ceil(gained * b.window / b.limit)
    end
  end
  return b
end

--- @include rcall
local function save_bucket(b)
  rcall('HSET', b.key, 'tokens', b.tokens, 'refilled', b.refilled)
end

-- A rate class's limit changed: jobs it parked are due for another look at once. Only
-- classes with parked jobs are in K.starved (XX adds none). The callers have written
-- already, so a corrupt K.starved must not raise here: admission refuses it instead.
--- @include K.starved
local function rate_changed(P, class)
  redis.pcall('ZADD', K.starved(P), 'XX', 0, class)
end

-- Trues up a rate class after the job reported its actual weight: the bucket b (its
-- class's, loaded by the caller before its first write; nil when unconfigured) gets back
-- what was charged and pays what was used. Tokens given back may pay for parked jobs.
--- @include rcall
--- @include K.job
--- @include save_bucket
--- @include rate_changed
local function true_up(P, id, j, actual, b)
  if actual < 0 then return end
  if b and j.charge > 0 then
    b.tokens = math.min(b.burst, b.tokens + j.charge - actual)
    save_bucket(b)
    if actual < j.charge then rate_changed(P, j.rc) end
  end
  rcall('HDEL', K.job(P, id), 'charge')
end

-- The fields of the fence check every write from a worker passes (holder_checked).
local HOLDER_FIELDS = { 'state', 'lease', 'fence' }

-- Corrupt data. Redis does not roll back a script that raises, so a script reaches its
-- first write only after every read that can fail, and no write of it can fail:
--  - a job whose data is unusable (its key is not a hash, a numeric field does not parse or
--    is impossible) is parked: the script removes its id from the index it found it in and
--    records it with park_corrupt; the call goes on with the other jobs;
--  - a namespace structure that is unusable (the scheduled ZSET is a string, a counts field
--    is not a number) makes the call fail before its first write: key_ok / counts_ok /
--    route_bad_key in the read phase, then corrupt_reply.
-- Read with safe_hmget / load_job_checked / holder_checked, which never raise on corrupt
-- data.

-- Records a parked job in K.corrupt with why its data could not be used. The caller has
-- checked key_ok(K.corrupt(P), 'hash') before its first write, and removes the id from
-- the index it found it in.
--- @include rcall
--- @include K.corrupt
local function park_corrupt(P, id, reason)
  rcall('HSET', K.corrupt(P), id, reason)
end

-- HMGET that never raises: the values, or nil and a reason when the key is not a hash.
local function safe_hmget(key, ...)
  local v = redis.pcall('HMGET', key, ...)
  if type(v) == 'table' and v.err then return nil, key .. ': ' .. tostring(v.err) end
  return v
end

-- Whether key is absent or of the given TYPE ('hash', 'zset', 'set', 'list', 'string'), so
-- a write to it cannot fail on the key's type; also the type it has. Asked of Redis once
-- per key and call.
local key_type_known = {}
--- @include rcall
--- @include key_type_known
local function key_ok(key, want)
  local t = key_type_known[key]
  if t == nil then
    t = rcall('TYPE', key)
    if type(t) == 'table' then t = t.ok end
    key_type_known[key] = t
  end
  return t == 'none' or t == want, t
end

-- The range each numeric field of a job hash can hold; anything else is corrupt. Bounds
-- keep arithmetic exact (below 2^53) and the rank's fixed-width format valid.
local MAX_SAFE = 9007199254740991
--- @include MAX_SAFE
local JOB_RANGES = {
  prio = { -2147483648, 2147483647 }, sched = { 0, MAX_SAFE }, ret = { 0, MAX_SAFE },
  uwin = { 0, MAX_SAFE }, attempt = { 0, MAX_SAFE }, maxa = { 0, MAX_SAFE },
  crash = { 0, MAX_SAFE }, charge = { 0, MAX_SAFE }, fence = { 0, MAX_SAFE },
  weight = { 1, 1048576 }, schema = { 0, 2147483647 }, snz = { 0, MAX_SAFE }, errb = { 0, MAX_SAFE },
}

-- Why the raw value v (false when absent) of job field f is unusable, or nil when it is
-- fine: an absent field takes its default; a present numeric field must be an integer
-- within JOB_RANGES.
--- @include JOB_RANGES
local function bad_job_field(f, v)
  local r = JOB_RANGES[f]
  if not r or not v then return nil end
  local n = tonumber(v)
  if not n or n ~= n or n ~= math.floor(n) then return f .. ' is not an integer: ' .. string.sub(v, 1, 64) end
  if n < r[1] or n > r[2] then return f .. ' is ' .. string.sub(v, 1, 64) .. ', outside ' .. r[1] .. '..' .. r[2] end
  return nil
end

-- The number a present job field f (of JOB_RANGES) holds, its raw value x, or nil and
-- why it is unusable (bad_job_field): one tonumber for the check and the value.
--- @include JOB_RANGES
--- @include bad_job_field
local function job_int(f, x)
  local r = JOB_RANGES[f]
  local n = tonumber(x)
  if not n or n ~= math.floor(n) or n < r[1] or n > r[2] then return nil, bad_job_field(f, x) end
  return n
end

-- load_fields that never raises: the job, or nil, nil when it does not exist, or nil and
-- a reason when its data is corrupt (not a hash, a numeric field bad_job_field refuses,
-- a state that is not one of the known states).
local JOB_STATES = { pending = true, scheduled = true, available = true, running = true, retryable = true,
  completed = true, archived = true, cancelled = true, undecodable = true, quarantined = true }
--- @include safe_hmget
--- @include K.job
--- @include job_int
--- @include JOB_RANGES
--- @include JOB_NUMBERS
--- @include JOB_DEFAULTS
--- @include JOB_STATES
local function load_job_checked(P, id, fields)
  local v, why = safe_hmget(K.job(P, id), unpack(fields))
  if not v then return nil, why end
  local j = {}
  -- A numeric loop (ipairs calls its iterator per step) and bad_job_field only for a
  -- numeric field that is there: most fields a transition reads are absent.
  for i = 1, #fields do
    local f, x = fields[i], v[i]
    if not x then
      j[f] = JOB_DEFAULTS[f] or (JOB_NUMBERS[f] and 0) or ''
    else
      if JOB_RANGES[f] then
        local n, bad = job_int(f, x)
        if not n then return nil, bad end
        if JOB_NUMBERS[f] then x = n end
      elseif JOB_NUMBERS[f] then
        x = tonumber(x) or JOB_DEFAULTS[f] or 0
      end
      j[f] = x
    end
  end
  if j.state == '' then return nil, nil end
  if j.state and not JOB_STATES[j.state] then return nil, 'state is ' .. string.sub(j.state, 1, 64) end
  return j
end

-- The fields of a queue's counts (K.counts): its states, and held and unrunnable.
local COUNT_FIELDS = { pending = true, scheduled = true, available = true, running = true, retryable = true,
  completed = true, archived = true, cancelled = true, undecodable = true, quarantined = true, held = true,
  unrunnable = true }

-- Whether the counts of queue q can take HINCRBY: a hash (or absent) whose count fields
-- are integers. HGETALL, not an HMGET of the fields: a queue's counts hash holds a few of
-- them, so the reply is short, and the call carries no field list.
--- @include K.counts
--- @include MAX_SAFE
--- @include COUNT_FIELDS
local function counts_ok(P, q)
  local c = redis.pcall('HGETALL', K.counts(P, q))
  if type(c) == 'table' and c.err then return false end
  for i = 2, #c, 2 do
    if COUNT_FIELDS[c[i - 1]] then
      local n = string.match(c[i], '^-?%d+$') and tonumber(c[i])
      if not n or n > MAX_SAFE or n < -MAX_SAFE then return false end
    end
  end
  return true
end

-- The error reply of a call refused, before any write, because data it needs is corrupt
-- (a namespace structure, or the one job a single-job call is about). scripts.go reports
-- it as a *CorruptError.
--- @include E_CORRUPT
local function corrupt_reply(key, why)
  return { E_CORRUPT, key, why }
end

-- The first of keys (a list of {key, type}) that a write could fail on, and why; nil
-- when each is absent or of its type.
--- @include key_ok
local function first_bad_key(keys)
  for _, kt in ipairs(keys) do
    local ok, t = key_ok(kt[1], kt[2])
    if not ok then return kt[1], 'is a ' .. t .. ', want a ' .. kt[2] end
  end
  return nil
end

-- The reply of a per-job operator call (cancel, retry, edit, delete) whose job's own data
-- is unusable: the job is parked and taken out of the leases and scheduled ZSETs, where
-- a transition would find it again; when one of those keys is unusable itself, a
-- corrupt_reply and nothing written.
--- @include rcall
--- @include K.corrupt
--- @include K.leases
--- @include K.scheduled
--- @include OK
--- @include park_corrupt
--- @include corrupt_reply
--- @include first_bad_key
local function park_unreadable_job(P, id, why)
  local bad, bad_why = first_bad_key({ { K.corrupt(P), 'hash' }, { K.leases(P), 'zset' }, { K.scheduled(P), 'zset' } })
  if bad then return corrupt_reply(bad, bad_why) end
  park_corrupt(P, id, why)
  rcall('ZREM', K.leases(P), id)
  rcall('ZREM', K.scheduled(P), id)
  return { OK, 'parked', why }
end

-- The first key that indexing job j as available (index_available, wake) could fail on,
-- and why; nil when none.
--- @include partition_of
--- @include first_bad_key
--- @include K.wake
local function index_bad_key(P, j)
  local pz, ring = partition_of(P, j.queue, j.sticky, j.part)
  return first_bad_key({ { pz, 'zset' }, { ring, 'zset' }, { K.wake(P, j.queue), 'list' } })
end

-- The first key that moving job j to available (make_available, wake, flush_counts) could
-- fail on, and why; nil when none. Reads K.quarantine, which must be checked first.
--- @include counts_ok
--- @include K.counts
--- @include K.held
--- @include first_bad_key
--- @include index_bad_key
local function route_bad_key(P, j)
  if not counts_ok(P, j.queue) then return K.counts(P, j.queue), 'is not a hash of integer counts' end
  if j.fp ~= '' then
    local bad, why = first_bad_key({ { K.held(P, j.fp), 'set' } })
    if bad then return bad, why end
  end
  return index_bad_key(P, j)
end

-- holder that never raises: the job when id is running under this lease and fence; nil
-- when it is not; nil and a reason when its data is corrupt.
--- @include load_job_checked
--- @include HOLDER_FIELDS
local function holder_checked(P, id, lease, fence, fields)
  local j, why = load_job_checked(P, id, fields or HOLDER_FIELDS)
  if why then return nil, why end
  if not j or j.state ~= 'running' or j.lease ~= lease or j.fence ~= tonumber(fence) then
    return nil
  end
  return j
end

-- The structures a call will write, checked in its read phase, each key once: need(key,
-- type) is false when the key is unusable, and the first unusable key is kept for the
-- reply (structure_error). A script calls structure_error after its reads and, when it
-- returns a reply, returns that reply before its first write. need asks key_ok, which
-- asks Redis once per key and call; the checks that are not of a type (need_counts,
-- need_set_member, need_ring_member) keep their answers in needed.
local needed = {}
local structure_bad = nil
--- @include key_ok
--- @include structure_bad
local function need(key, want)
  local ok = key_ok(key, want)
  if not ok and not structure_bad then structure_bad = { key, 'is not a ' .. want } end
  return ok
end

-- need(key, 'set') and whether the set holds member, with one SISMEMBER instead of a
-- TYPE: true or false, or nil when the key is not a set (structure_error says so).
--- @include needed
--- @include structure_bad
local function need_set_member(key, member)
  if needed[key] == false then return nil end
  local v = redis.pcall('SISMEMBER', key, member)
  if type(v) == 'table' and v.err then
    needed[key] = false
    if not structure_bad then structure_bad = { key, 'is not a set' } end
    return nil
  end
  needed[key] = true
  return v == 1
end

-- need(ring, 'zset') and ring_contains(ring, part) with one ZSCORE, in a call's read
-- phase: a ring of another type fails the ZSCORE as it would the later write.
--- @include ring_has
--- @include needed
--- @include structure_bad
local function need_ring_member(ring, part)
  if needed[ring] == false then return end
  local k = ring .. '\n' .. part
  if ring_has[k] == nil then
    local v = redis.pcall('ZSCORE', ring, part)
    if type(v) == 'table' and v.err then
      needed[ring] = false
      if not structure_bad then structure_bad = { ring, 'is not a zset' } end
      return
    end
    ring_has[k] = v ~= false
  end
  -- Known membership means a ZSCORE or a write of this call found a ZSET.
  needed[ring] = true
end

--- @include K.counts
--- @include counts_ok
--- @include needed
--- @include structure_bad
local function need_counts(P, q)
  local key = K.counts(P, q)
  if needed[key] == nil then
    needed[key] = counts_ok(P, q)
    if not needed[key] and not structure_bad then structure_bad = { key, 'holds a count that is not an integer' } end
  end
  return needed[key]
end

--- @include corrupt_reply
--- @include structure_bad
local function structure_error()
  if structure_bad then return corrupt_reply(structure_bad[1], structure_bad[2]) end
  return nil
end

-- The namespace policy, read without raising: nil and a reply when the policy key is not
-- a hash. Read in every script's read phase (load_policy then serves the cached copy).
--- @include K.policy
--- @include key_ok
--- @include policy
--- @include load_policy
--- @include corrupt_reply
local function load_policy_checked(P, defaults)
  if not policy then
    -- The read checks the key's type: HMGET fails on a key that is not a hash.
    local pol, failed = load_policy(P, defaults)
    if not failed then return pol end
    policy = nil
  end
  if not key_ok(K.policy(P), 'hash') then return nil, corrupt_reply(K.policy(P), 'is not a hash') end
  return (load_policy(P, defaults))
end

-- Whether a job's own history list can take an entry: a list, or absent. A history that
-- is not is skipped (the transition goes on; an unusable history is no reason to hold
-- the job back).
--- @include K.errors
--- @include key_ok
local function history_ok(P, id)
  return key_ok(K.errors(P, id), 'list')
end

-- The structures make_available writes for job j: its partition and ring (ZSETs), the
-- ring's state HASH, its queue's wake LIST, the quarantine HASH and its fingerprint's
-- held SET.
--- @include K.wake
--- @include K.quarantine
--- @include K.held
--- @include partition_of
--- @include need
local function need_available(P, j)
  local pz, ring, rs = partition_of(P, j.queue, j.sticky, j.part)
  need(pz, 'zset')
  need(ring, 'zset')
  need(rs, 'hash')
  need(K.wake(P, j.queue), 'list')
  need(K.quarantine(P), 'hash')
  if j.fp ~= '' then need(K.held(P, j.fp), 'set') end
end


-- Workflow store keys (keys.go, "Workflow store keys"). Two-part members and fields are
-- joined by SEP (0x1f), which no validated name contains.
local SEP = '\31'
function K.wf(P, id) return P .. 'wf:' .. id end
function K.wf_history(P, id) return P .. 'wfh:' .. id end
function K.wf_runs(P, id) return P .. 'wfruns:' .. id end
function K.wf_timers(P, id) return P .. 'wftimers:' .. id end
function K.wf_ids(P) return P .. 'wfids' end
function K.wf_status(P, status) return P .. 'wfstatus:' .. status end
function K.wf_query(P, sel) return P .. 'wfq:' .. sel end
function K.timers(P) return P .. 'timers' end
function K.timers_armed(P) return P .. 'timers:armed' end -- a pub/sub channel, not a key
function K.vis(P, id) return P .. 'vis:' .. id end
function K.vis_index(P, sel) return P .. 'visq:' .. sel end
function K.packages(P) return P .. 'pkgs' end
function K.package_index(P) return P .. 'pkgidx' end
function K.package_routes(P) return P .. 'routes' end
function K.package_route_index(P) return P .. 'routeidx' end
function K.deployments(P) return P .. 'deploys' end
function K.deployment_index(P) return P .. 'deployidx' end
function K.version_deployments(P) return P .. 'verdeploys' end
function K.version_runs(P) return P .. 'verruns' end
function K.workloops(P) return P .. 'loops' end
function K.workloop_index(P) return P .. 'loopidx' end
function K.workloops_due(P) return P .. 'loopdue' end
--- @include SEP
function K.invariant_records(P, loop, inv) return P .. 'inv:' .. inv .. SEP .. loop end
-- Under the registry's prefix (registryKeys in keys.go).
function K.ns_record(P, name) return P .. 'nsrec:' .. name end
function K.ns_index(P) return P .. 'nsidx' end

-- Workflow store reply codes (-20 and below).
local E_SEQUENCE_CONFLICT = -20
local E_UNDECODABLE = -21

-- Sort keys of lex-ordered indexes: a time in ms, fixed width, so text order is time order.
local function pad_ms(ms) return string.format('%015d', ms) end

-- The selections of a listing index a row belongs to (WorkflowQuery / VisibilityIndex in
-- keys.go): r = {started = ms, type, status, parent}.
local function listing_selections(r)
  local sel = { 'all' }
  if r.type ~= '' then sel[#sel + 1] = 'type:' .. r.type end
  if r.status ~= '' then
    sel[#sel + 1] = 'status:' .. r.status
    if r.type ~= '' then sel[#sel + 1] = 'ts:' .. r.status .. ':' .. r.type end
  end
  if r.parent ~= '' then sel[#sel + 1] = 'parent:' .. r.parent end
  return sel
end

-- Moves a row's entries in a listing index from old to new (either may be nil: not
-- listed). key_of builds the index key of a selection. At most 5 ZREM and 5 ZADD.
--- @include rcall
--- @include SEP
--- @include pad_ms
--- @include listing_selections
local function listing_move(P, key_of, id, old, new)
  if old and new and old.started == new.started and old.type == new.type and
      old.status == new.status and old.parent == new.parent then
    return
  end
  if old then
    local m = pad_ms(old.started) .. SEP .. id
    for _, s in ipairs(listing_selections(old)) do rcall('ZREM', key_of(P, s), m) end
  end
  if new then
    local m = pad_ms(new.started) .. SEP .. id
    for _, s in ipairs(listing_selections(new)) do rcall('ZADD', key_of(P, s), '0', m) end
  end
end

-- Workflow status an event kind leads to; kinds not listed leave the status as it is.
local WF_STATUS_OF = {
  workflow_started = 'running', workflow_resumed = 'running', workflow_paused = 'paused',
  workflow_completed = 'completed', workflow_failed = 'failed', workflow_cancelled = 'cancelled',
  workflow_terminated = 'terminated', workflow_continued_as_new = 'continued_as_new',
}
local WF_CLOSED = { completed = true, failed = true, cancelled = true, terminated = true, continued_as_new = true }

-- A workflow's row (keys.go Workflow), as wf_append_events reads and moves it. A script
-- that appends loads the row, checks w.head against its expected sequence before any
-- write, then calls wf_append_events.
--- @include rcall
--- @include str
--- @include K.wf
local function wf_load(P, id)
  local row = rcall('HMGET', K.wf(P, id), 'head', 'status', 'type', 'run', 'parent', 'prun', 'pkg', 'started', 'closed',
    'vopen', 'steps')
  return { head = tonumber(row[1]) or 0, status = str(row[2]), type = str(row[3]), run = str(row[4]),
    parent = str(row[5]), prun = str(row[6]), pkg = str(row[7]), started = tonumber(row[8]), closed = str(row[9]),
    vopen = str(row[10]), steps = tonumber(row[11]) or 0 }
end

-- Keeps K.version_runs, the count of open runs per package version, true for workflow
-- id's row w after its status or version moved: the row's 'vopen' names the version its
-- open run is counted under ('' none), so the count moves exactly once per run opened
-- and once per run closed (or moved to another version), and a run opened before the
-- counts were kept is counted from its next event on, never taken off before. The caller
-- writes w.vopen to the row with the status; it checked that K.version_runs is a hash
-- (wf_need_row).
--- @include rcall
--- @include K.version_runs
--- @include WF_CLOSED
local function wf_count_open(P, w)
  local want = ''
  if w.pkg ~= '' and w.status ~= '' and not WF_CLOSED[w.status] then want = w.pkg end
  if want == w.vopen then return end
  local key = K.version_runs(P)
  if w.vopen ~= '' and rcall('HINCRBY', key, w.vopen, -1) <= 0 then rcall('HDEL', key, w.vopen) end
  if want ~= '' then rcall('HINCRBY', key, want, 1) end
  w.vopen = want
end

-- Appends events to the workflow w (loaded by wf_load, its head checked): each event is
-- {seq, kind, at (recorded ms, 0 = now), body, and for workflow_started: type, run,
-- parent, prun, pkg}. Stores them, and moves the row (head, derived status, run, ...),
-- the run chain and the id, status and query indexes with them. Returns the new head.
-- Cost O(#events + log N).
--- @include rcall
--- @include SEP
--- @include K.wf
--- @include K.wf_history
--- @include K.wf_runs
--- @include K.wf_ids
--- @include K.wf_status
--- @include K.wf_query
--- @include listing_move
--- @include WF_STATUS_OF
--- @include WF_CLOSED
--- @include wf_count_open
local function wf_append_events(P, id, w, events, now)
  local old = nil
  if w.started then old = { started = w.started, type = w.type, status = w.status, parent = w.parent } end
  local old_status, old_head = w.status, w.head
  local runs = K.wf_runs(P, id)
  local hist = {}
  for _, e in ipairs(events) do
    local kind = e.kind
    local at = e.at
    if at == 0 then at = now end
    hist[#hist + 1] = e.seq
    hist[#hist + 1] = at .. '\n' .. e.body
    local status = WF_STATUS_OF[kind]
    if kind == 'workflow_started' then
      w.type, w.run, w.parent, w.prun, w.pkg = e.type, e.run, e.parent, e.prun, e.pkg
      if not w.started then w.started = at end
      w.closed = ''
      rcall('RPUSH', runs, w.run .. SEP .. status .. SEP .. at .. SEP)
    elseif status and w.run ~= '' then
      -- The open run (the chain's last) takes the new status; a closing event stamps it.
      local closed = ''
      if WF_CLOSED[status] then
        closed = at
        w.closed = tostring(at)
      end
      local last = rcall('LINDEX', runs, -1)
      if last then
        local run_id, _, started = string.match(last, '^(.-)\31(.-)\31(.-)\31')
        rcall('LSET', runs, -1, run_id .. SEP .. status .. SEP .. started .. SEP .. closed)
      end
    elseif status and WF_CLOSED[status] then
      w.closed = tostring(at)
    end
    if status then w.status = status end
  end
  rcall('HSET', K.wf_history(P, id), unpack(hist))
  w.head = old_head + #events
  wf_count_open(P, w)
  rcall('HSET', K.wf(P, id), 'head', w.head, 'status', w.status, 'type', w.type, 'run', w.run, 'parent', w.parent,
    'prun', w.prun, 'pkg', w.pkg, 'started', w.started or '', 'closed', w.closed, 'vopen', w.vopen, 'updated', now)
  if old_head == 0 then rcall('ZADD', K.wf_ids(P), '0', id) end
  if w.status ~= old_status then
    if old_status ~= '' then rcall('ZREM', K.wf_status(P, old_status), id) end
    if w.status ~= '' then rcall('ZADD', K.wf_status(P, w.status), '0', id) end
  end
  if w.started then
    listing_move(P, K.wf_query, id, old, { started = w.started, type = w.type, status = w.status, parent = w.parent })
  end
  return w.head
end

-- Arms a workflow's timer (keys.go Timers, WorkflowTimers), replacing a prior arming.
-- A timer that fires before every other armed one is announced on K.timers_armed (its
-- fire ms): the timers duty sleeps until the earliest fire time it last saw, so a timer
-- any process arms sooner wakes it to look again.
--- @include rcall
--- @include SEP
--- @include K.wf_timers
--- @include K.timers
--- @include K.timers_armed
local function wf_arm_timer(P, wf, timer, fire_at, armed)
  local first = rcall('ZRANGE', K.timers(P), 0, 0, 'WITHSCORES')
  rcall('ZADD', K.timers(P), fire_at, wf .. SEP .. timer)
  rcall('HSET', K.wf_timers(P, wf), timer, fire_at .. ' ' .. armed)
  if not first[2] or tonumber(fire_at) < tonumber(first[2]) then rcall('PUBLISH', K.timers_armed(P), fire_at) end
end

-- Retires the arming (fire_at, armed) of a workflow's timer: 'retired' when it was that
-- arming or none, 'superseded' (nothing removed) when the timer was re-armed since.
--- @include rcall
--- @include SEP
--- @include K.wf_timers
--- @include K.timers
local function wf_retire_timer(P, wf, timer, fire_at, armed)
  local tk = K.wf_timers(P, wf)
  local cur = rcall('HGET', tk, timer)
  if not cur then return 'retired' end
  if cur ~= fire_at .. ' ' .. armed then return 'superseded' end
  rcall('HDEL', tk, timer)
  rcall('ZREM', K.timers(P), wf .. SEP .. timer)
  return 'retired'
end

-- Upserts a workflow's visibility row (keys.go Visibility) and moves it in the listing
-- indexes: v = {run, type, status, started (ms), closed, parent, pkg, memo}.
--- @include rcall
--- @include K.vis
--- @include K.vis_index
--- @include listing_move
local function wf_record_visibility(P, id, v, now)
  local vk = K.vis(P, id)
  local cur = rcall('HMGET', vk, 'started', 'type', 'status', 'parent')
  local old = nil
  if cur[1] then old = { started = tonumber(cur[1]), type = cur[2], status = cur[3], parent = cur[4] } end
  rcall('HSET', vk, 'run', v.run, 'type', v.type, 'status', v.status, 'started', v.started, 'closed', v.closed,
    'parent', v.parent, 'pkg', v.pkg, 'memo', v.memo, 'updated', now)
  listing_move(P, K.vis_index, id, old, { started = v.started, type = v.type, status = v.status, parent = v.parent })
end

-- Worker deployment rows: "<meta JSON>\n<spec JSON>". The meta is written here, the
-- spec by Go, kept byte for byte.
local DEPLOYMENT_DESIRED = { active = true, draining = true, drained = true }

-- The meta of a stored deployment row {created, desired, desired_at} and its spec, or
-- nil when the row is not one this store wrote (undecodable).
--- @include DEPLOYMENT_DESIRED
local function deployment_parse(row)
  local nl = string.find(row, '\n', 1, true)
  if not nl then return nil end
  local ok, m = pcall(cjson.decode, string.sub(row, 1, nl - 1))
  if not ok or type(m) ~= 'table' or type(m.created) ~= 'number' or type(m.desired_at) ~= 'number' or
      not DEPLOYMENT_DESIRED[m.desired] then
    return nil
  end
  return m, string.sub(row, nl + 1)
end

local function deployment_row(created, updated, desired, desired_at, spec)
  return string.format('{"created":%d,"updated":%d,"desired":"%s","desired_at":%d}', created, updated, desired,
    desired_at) .. '\n' .. spec
end

-- Moves K.version_deployments by sign (1 as a stored deployment row arrives, -1 as it
-- goes) for each version the row lists: its 'n:' count and, for an active deployment,
-- its 'a:' count. An undecodable row (row may be nil) counts for nothing. The caller
-- checked that K.version_deployments is a hash. Cost O(versions listed).
--- @include rcall
--- @include K.version_deployments
--- @include deployment_parse
local function deployment_count(P, row, sign)
  local m, spec = nil, nil
  if row then m, spec = deployment_parse(row) end
  if not m then return end
  local ok, d = pcall(cjson.decode, spec)
  if not ok or type(d) ~= 'table' or type(d.versions) ~= 'table' then return end
  local key = K.version_deployments(P)
  for _, v in ipairs(d.versions) do
    if type(v) == 'string' then
      local fields = { 'n:' .. v }
      if m.desired == 'active' then fields[2] = 'a:' .. v end
      for _, f in ipairs(fields) do
        if rcall('HINCRBY', key, f, sign) <= 0 then rcall('HDEL', key, f) end
      end
    end
  end
end

-- Whether version v is draining: worker deployments list it and none of them is active,
-- so no new run starts on it. A version no deployment lists is not draining.
--- @include rcall
--- @include K.version_deployments
local function version_draining(P, v)
  local c = rcall('HMGET', K.version_deployments(P), 'n:' .. v, 'a:' .. v)
  return (tonumber(c[1]) or 0) > 0 and (tonumber(c[2]) or 0) == 0
end

-- What an operator's edit may change, as bits of its mask (edit.go and retry.go pass the
-- same values).
local EDIT_PAYLOAD, EDIT_PRIORITY, EDIT_MAX_ATTEMPTS, EDIT_SCHEDULED_AT, EDIT_PARTITION, EDIT_TAGS = 1, 2, 4, 8, 16, 32
-- The replace mask of a duplicate (envelope.go ReplaceMask).
local REPLACE_PAYLOAD, REPLACE_SCHEDULED_AT, REPLACE_PRIORITY, REPLACE_MAX_ATTEMPTS = 1, 2, 4, 8

-- A job's payload is stored in pieces of at most PAYLOAD_PIECE bytes, 'payload' and then
-- PAYLOAD_PIECE_FIELDS in order, when it fits in them: a hash keeps Redis's compact
-- listpack encoding only while every value is at most hash-max-listpack-value bytes (64
-- by default), and a small job's hash as a hashtable takes twice the memory. A larger
-- payload is one field (its hash is a hashtable either way). jobFromHash joins them.
local PAYLOAD_PIECE = 64
local PAYLOAD_PIECE_FIELDS = { 'pl1', 'pl2', 'pl3', 'pl4', 'pl5', 'pl6', 'pl7', 'pl8', 'pl9', 'pl10',
  'pl11', 'pl12', 'pl13', 'pl14', 'pl15' }

-- Appends the field/value pairs of a non-empty payload to the HSET list fields.
--- @include PAYLOAD_PIECE
--- @include PAYLOAD_PIECE_FIELDS
local function payload_fields(payload, fields)
  local n = #fields
  fields[n + 1] = 'payload'
  if #payload <= PAYLOAD_PIECE or #payload > PAYLOAD_PIECE * (#PAYLOAD_PIECE_FIELDS + 1) then
    fields[n + 2] = payload
    return fields
  end
  fields[n + 2] = string.sub(payload, 1, PAYLOAD_PIECE)
  n = n + 2
  local i = 1
  for at = PAYLOAD_PIECE + 1, #payload, PAYLOAD_PIECE do
    fields[n + 1], fields[n + 2], n = PAYLOAD_PIECE_FIELDS[i], string.sub(payload, at, at + PAYLOAD_PIECE - 1), n + 2
    i = i + 1
  end
  return fields
end

-- Replaces the payload of job hash k ('' = none): its pieces go with the old one.
--- @include rcall
--- @include PAYLOAD_PIECE_FIELDS
--- @include payload_fields
local function write_payload(k, payload)
  rcall('HDEL', k, unpack(PAYLOAD_PIECE_FIELDS))
  if payload == '' then
    rcall('HDEL', k, 'payload')
  else
    rcall('HSET', k, unpack(payload_fields(payload, {})))
  end
end

-- Whether bit b is set in a mask: an edit's, a duplicate's replace mask.
local function edit_has(mask, b) return math.floor(mask / b) % 2 == 1 end

-- Writes an edit's fields to the job hash and to j, except the scheduled time, which
-- the caller files. A field set to its default is removed (JOB_DEFAULTS), as enqueue
-- leaves it out. The caller has taken an available job out of its partition first, since
-- priority and partition decide where it is filed.
--- @include rcall
--- @include K.job
--- @include edit_has
--- @include EDIT_PAYLOAD
--- @include EDIT_PRIORITY
--- @include EDIT_MAX_ATTEMPTS
--- @include EDIT_PARTITION
--- @include EDIT_TAGS
--- @include JOB_DEFAULTS
--- @include index_note
--- @include write_payload
local function apply_edit(P, id, j, e)
  index_note(P, id, j)
  local k = K.job(P, id)
  local function put(f, v, default)
    if v == default then rcall('HDEL', k, f) else rcall('HSET', k, f, v) end
  end
  if edit_has(e.mask, EDIT_PAYLOAD) then write_payload(k, e.payload) end
  if edit_has(e.mask, EDIT_PRIORITY) then
    j.prio = tonumber(e.prio)
    put('prio', e.prio, '0')
  end
  if edit_has(e.mask, EDIT_MAX_ATTEMPTS) then
    j.maxa = tonumber(e.maxa)
    put('maxa', e.maxa, tostring(JOB_DEFAULTS.maxa))
  end
  if edit_has(e.mask, EDIT_PARTITION) then
    j.part = e.part
    put('part', e.part, '')
  end
  if edit_has(e.mask, EDIT_TAGS) then put('tags', e.tags, '') end
end

-- Event counters (keys.go "Event counters"): totals a metrics scrape reads with one
-- HGETALL, of events that leave no other trace to count: lease rejections, reclaims,
-- jobs parked by their rate class, enqueues refused by backpressure. A refusal counts
-- itself here and changes nothing else.
function K.counters(P) return P .. 'counters' end

-- Adds n to counter field of K.counters. redis.pcall, so that a counters key that is not
-- a hash of integers loses the count and never fails the transition that counts.
--- @include K.counters
local function count_event(P, field, n)
  if n > 0 then redis.pcall('HINCRBY', K.counters(P), field, n) end
end

-- Shared script bodies: the steps two or more scripts take alike, written once.

-- The job id is running under this lease and fence, for a holder's write; else nil and
-- the reply that refuses the write (LeaseRejected, counted, or Corrupt when the job's
-- data is).
--- @include K.job
--- @include E_LEASE_REJECTED
--- @include holder_checked
--- @include corrupt_reply
--- @include count_event
local function held_job(P, id, lease, fence)
  local j, why = holder_checked(P, id, lease, fence)
  if why then return nil, corrupt_reply(K.job(P, id), why) end
  if not j then
    count_event(P, 'lease_rejected', 1)
    return nil, { E_LEASE_REJECTED }
  end
  return j
end

-- A holder's write of one of its job's side hashes (output, progress): the hash at key
-- becomes fields (a flat list of names and values) stamped with the fence and the store
-- time. The reply: {OK, store time}, or the refusal of held_job or of a key of another
-- type, with nothing written.
--- @include rcall
--- @include OK
--- @include now_ms
--- @include mark_aux
--- @include first_bad_key
--- @include corrupt_reply
--- @include held_job
local function write_held_hash(P, id, lease, fence, key, fields)
  local j, refused = held_job(P, id, lease, fence)
  if refused then return refused end
  local bad, why = first_bad_key({ { key, 'hash' } })
  if bad then return corrupt_reply(bad, why) end
  local now = now_ms(P)
  mark_aux(P, id)
  local args = { key }
  for _, v in ipairs(fields) do args[#args + 1] = v end
  args[#args + 1] = 'fence'
  args[#args + 1] = j.fence
  args[#args + 1] = 'at'
  args[#args + 1] = now
  rcall('HSET', unpack(args))
  return { OK, now }
end

-- For a script that parks the corrupt jobs it meets among those it moves (parked: a
-- list of {id, why}): the corrupt_reply when there are some and K.corrupt, where they are
-- recorded, is unusable; nil when parking them cannot fail. Called in the read phase.
--- @include K.corrupt
--- @include first_bad_key
--- @include corrupt_reply
local function parking_refused(P, parked)
  if #parked == 0 then return nil end
  local bad, why = first_bad_key({ { K.corrupt(P), 'hash' } })
  if bad then return corrupt_reply(bad, why) end
  return nil
end

-- Writes a namespace record when the name is absent (rec: origin, state, placement,
-- config, created and seen in ms, -1 meaning the store clock now and created); on a name
-- already registered only its last-seen time is bumped. The reply: {OK, 'created' or
-- 'already_existed'}.
--- @include rcall
--- @include OK
--- @include now_ms
--- @include SEP
--- @include K.ns_record
--- @include K.ns_index
--- @include pad_ms
local function put_namespace_record(P, name, rec)
  local rk = K.ns_record(P, name)
  local now = now_ms(P)
  if rcall('EXISTS', rk) == 1 then
    rcall('HSET', rk, 'seen', now)
    return { OK, 'already_existed' }
  end
  local created = rec.created
  if created < 0 then created = now end
  local seen = rec.seen
  if seen < 0 then seen = created end
  rcall('HSET', rk, 'name', name, 'origin', rec.origin, 'state', rec.state, 'placement', rec.placement,
    'config', rec.config, 'created', created, 'seen', seen)
  rcall('ZADD', K.ns_index(P), '0', pad_ms(created) .. SEP .. name)
  return { OK, 'created' }
end

-- Appends to keys (a list of {key, type}, for first_bad_key) what unindex_job writes for
-- job j, and K.unique when j holds a strict unique key. Returns keys.
--- @include K.held
--- @include K.parked
--- @include K.scheduled
--- @include K.unique
--- @include partition_of
local function unindex_job_keys(P, j, keys)
  if j.state == 'available' then
    if j.held == '1' then
      keys[#keys + 1] = { K.held(P, j.fp), 'set' }
    elseif j.parked ~= '' then
      keys[#keys + 1] = { K.parked(P, j.rc), 'zset' }
    else
      local pz, ring, rs = partition_of(P, j.queue, j.sticky, j.part)
      keys[#keys + 1] = { pz, 'zset' }
      keys[#keys + 1] = { ring, 'zset' }
      keys[#keys + 1] = { rs, 'hash' }
    end
  elseif j.state == 'scheduled' or j.state == 'retryable' then
    keys[#keys + 1] = { K.scheduled(P), 'zset' }
  end
  if j.ukey ~= '' and j.uwin == 0 then keys[#keys + 1] = { K.unique(P), 'hash' } end
  return keys
end

-- Takes an available, scheduled or retryable job out of the index its state keeps it
-- in (another state is in none of them). The caller moves the counts.
--- @include rcall
--- @include K.scheduled
--- @include unindex_available_job
local function unindex_job(P, id, j)
  if j.state == 'available' then
    unindex_available_job(P, id, j)
  elseif j.state == 'scheduled' or j.state == 'retryable' then
    rcall('ZREM', K.scheduled(P), id)
  end
end


-- Workflow runtime (keys.go, "Workflow runtime keys"). A workflow's row also holds its
-- route and task: 'queue', 'part' (where its tasks run: a run on a package version 'pkg'
-- runs them on wf_task_queue(queue, pkg)), 'task' (the id of its
-- outstanding task job, '' when none), 'tasks' (task ids minted), 'runseq' (seq of the
-- current run's workflow_started), 'cancelreq' (the runseq of the run a cancel request
-- is pending for: set by wf_signal, cleared by wf_retry), 'pausereq' ('paused' or
-- 'resumed': the last pause or resume request waiting in the inbox; see wf_pausing). While the task runs, the
-- history is written only by its commit (fenced); events from outside (signals, timers,
-- children, operators) wait in the inbox and the commit appends them after its own,
-- then enqueues the next task.
function K.wf_inbox(P, id) return P .. 'wfinbox:' .. id end
function K.wf_closed(P, id) return P .. 'wfclosed:' .. id end -- a pub/sub channel, not a key
function K.wf_steps(P, id) return P .. 'wfsteps:' .. id end

-- Workflow runtime reply codes.
local E_WORKFLOW_NOT_FOUND = -22 -- the workflow id has no history
local E_WORKFLOW_CLOSED = -23 -- {E_WORKFLOW_CLOSED, status}: the run is over
local E_STEP_NOT_PENDING = -24 -- {E_STEP_NOT_PENDING, why}: the step waits for no such step job
local E_VERSION_DRAINING = -25 -- {E_VERSION_DRAINING, version}: no new run starts on it
local E_VERSION_QUEUE = -26 -- {E_VERSION_QUEUE, version, queue}: the version's queue is too long a name

-- The queue a workflow's tasks go on: its own queue (base) while the run is on no
-- package version, else "<base>@<version>" with the version's '%' and ':' percent-encoded,
-- as a queue name takes no colon. Only the workers that serve the version admit from
-- that queue (VersionedQueue in wf_version.go does the same).
local function wf_task_queue(base, pkg)
  if pkg == '' then return base end
  local enc = string.gsub(pkg, '[%%:]', function(c) return string.format('%%%02X', string.byte(c)) end)
  return base .. '@' .. enc
end

-- The longest queue name (MaxNameBytes in envelope.go).
local MAX_QUEUE_BYTES = 256

-- wf_task_queue(base, pkg), or nil and the reply that refuses it when it would be longer
-- than a queue name may be: for a version Go could not check against the queue (a
-- package route's, read in the script; a run's, which a step job's queue takes).
--- @include wf_task_queue
--- @include MAX_QUEUE_BYTES
--- @include E_VERSION_QUEUE
local function wf_task_queue_checked(base, pkg)
  local q = wf_task_queue(base, pkg)
  if #q > MAX_QUEUE_BYTES then return nil, { E_VERSION_QUEUE, pkg, q } end
  return q
end

-- The runtime fields of a workflow's row (r.base its own queue, r.queue its task queue)
-- and the state of its outstanding task ('' when it has none, or when the task job is
-- gone or finished).
--- @include rcall
--- @include str
--- @include K.wf
--- @include K.job
--- @include UNFINISHED
--- @include wf_task_queue
local function wf_route(P, id)
  local v = rcall('HMGET', K.wf(P, id), 'queue', 'part', 'task', 'runseq', 'pkg')
  local r = { base = str(v[1]), queue = wf_task_queue(str(v[1]), str(v[5])), pkg = str(v[5]), part = str(v[2]),
    task = str(v[3]), runseq = tonumber(v[4]) or 0, task_state = '' }
  if r.task ~= '' then
    local st = rcall('HGET', K.job(P, r.task), 'state')
    if st and UNFINISHED[st] then r.task_state = st end
  end
  return r
end

-- A workflow task's attempts: as good as unlimited (a million, over a century at the
-- default retry cap of an hour), so a task that fails on the code it runs (a
-- non-determinism, a panic) is retried with backoff until a deploy fixes the code, and
-- the run never waits on an archived task.
local WF_TASK_ATTEMPTS = '1000000'

-- Enqueues the next task of workflow id (row w, route r): a job of kind
-- "workflow:<type>" on the workflow's queue and partition, fingerprinted by the workflow
-- (so a task that keeps killing its worker quarantines this workflow only), with
-- WF_TASK_ATTEMPTS, staged (pending) while the run is paused. The caller checked the
-- structures (wf_need_task).
--- @include rcall
--- @include K.wf
--- @include K.job
--- @include K.queues
--- @include move_count
--- @include make_available
--- @include index_move
--- @include wake
--- @include WF_TASK_ATTEMPTS
local function wf_enqueue_task(P, id, w, r, now)
  local n = rcall('HINCRBY', K.wf(P, id), 'tasks', 1)
  local tid = 'wft:' .. id .. ':' .. n
  local fp = 'wf:' .. id
  local fields = { 'kind', 'workflow:' .. w.type, 'queue', r.queue, 'sched', now, 'created', now, 'payload', id, 'fp', fp,
    'maxa', WF_TASK_ATTEMPTS }
  if r.part ~= '' then
    fields[#fields + 1] = 'part'
    fields[#fields + 1] = r.part
  end
  rcall('HSET', K.job(P, tid), unpack(fields))
  rcall('SADD', K.queues(P), r.queue)
  if w.status == 'paused' then
    rcall('HSET', K.job(P, tid), 'state', 'pending')
    move_count(P, r.queue, nil, 'pending')
    index_move(P, tid, { queue = r.queue, kind = 'workflow:' .. w.type, part = r.part, fp = fp, tags = '' }, nil, 'pending', now)
  else
    make_available(P, tid, { queue = r.queue, part = r.part, sticky = '', prio = 0, sched = now, fp = fp }, now)
    wake(P, r.queue)
  end
  rcall('HSET', K.wf(P, id), 'task', tid)
  r.task, r.task_state = tid, 'available'
  return tid
end

-- The structures wf_enqueue_task writes for route r, checked before any write.
--- @include need
--- @include need_counts
--- @include need_available
--- @include K.queues
local function wf_need_task(P, r)
  need(K.queues(P), 'set')
  need_counts(P, r.queue)
  need_available(P, { queue = r.queue, part = r.part, sticky = '', fp = '' })
end

-- The structures of workflow id that an append or a delivery writes.
--- @include need
--- @include K.wf
--- @include K.wf_history
--- @include K.wf_runs
--- @include K.wf_inbox
--- @include K.wf_timers
--- @include K.version_runs
local function wf_need_row(P, id)
  need(K.version_runs(P), 'hash')
  need(K.wf(P, id), 'hash')
  need(K.wf_history(P, id), 'hash')
  need(K.wf_runs(P, id), 'list')
  need(K.wf_inbox(P, id), 'list')
  need(K.wf_timers(P, id), 'hash')
end

-- The next event of workflow w from outside its code: kind, JSON body, recorded now.
local function wf_event(w, kind, body, now)
  return { seq = w.head + 1, kind = kind, at = now, body = body, type = '', run = '', parent = '', prun = '', pkg = '' }
end

-- The row of workflow id for a call that needs its run open: w, or nil and the reply
-- that refuses the call (an unusable structure, no history, a closed run). Reads only.
--- @include wf_need_row
--- @include structure_error
--- @include wf_load
--- @include E_WORKFLOW_NOT_FOUND
--- @include E_WORKFLOW_CLOSED
--- @include WF_CLOSED
local function wf_load_open(P, id)
  wf_need_row(P, id)
  local bad = structure_error()
  if bad then return nil, bad end
  local w = wf_load(P, id)
  if w.head == 0 then return nil, { E_WORKFLOW_NOT_FOUND } end
  if WF_CLOSED[w.status] then return nil, { E_WORKFLOW_CLOSED, w.status } end
  return w
end

-- Whether workflow w (row id) is paused or on its way: the last pause or resume waiting
-- in its inbox ('pausereq' on its row, set by wf_pause and wf_resume while a task runs,
-- cleared when a commit empties the inbox) decides, else the run's status.
--- @include rcall
--- @include K.wf
local function wf_pausing(P, id, w)
  local req = rcall('HGET', K.wf(P, id), 'pausereq')
  if req then return req == 'paused' end
  return w.status == 'paused'
end

-- Delivers an event from outside the workflow's code (kind, JSON body) to workflow id:
-- into the inbox while its task runs (the task's commit appends it), else appended to
-- the history at once, with a task enqueued when none is outstanding. Returns 'inbox' or
-- 'appended'. The caller checked wf_need_row and wf_need_task.
--- @include rcall
--- @include K.wf_inbox
--- @include wf_load
--- @include wf_route
--- @include wf_append_events
--- @include wf_enqueue_task
--- @include wf_event
--- @include WF_CLOSED
local function wf_deliver(P, id, kind, body, now)
  local r = wf_route(P, id)
  if r.task_state == 'running' then
    rcall('RPUSH', K.wf_inbox(P, id), kind .. '\n' .. now .. '\n' .. body)
    return 'inbox'
  end
  local w = wf_load(P, id)
  wf_append_events(P, id, w, { wf_event(w, kind, body, now) }, now)
  if r.task_state == '' and not WF_CLOSED[w.status] then wf_enqueue_task(P, id, w, r, now) end
  return 'appended'
end

-- Opens a workflow: the history's first workflow_started event (started = {body, type,
-- run, parent, prun, pkg}), its route (route.queue is the workflow's own queue; its
-- tasks go on wf_task_queue of it), visibility row and first task. The caller checked
-- that the id has no history, and wf_need_row and wf_need_task of the task queue.
--- @include rcall
--- @include K.wf
--- @include wf_load
--- @include wf_append_events
--- @include wf_enqueue_task
--- @include wf_record_visibility
--- @include wf_task_queue
local function wf_open(P, id, started, route, now)
  local w = wf_load(P, id)
  wf_append_events(P, id, w, { { seq = 1, kind = 'workflow_started', at = now, body = started.body, type = started.type,
    run = started.run, parent = started.parent, prun = started.prun, pkg = started.pkg } }, now)
  rcall('HSET', K.wf(P, id), 'queue', route.queue, 'part', route.part, 'runseq', 1)
  local r = { base = route.queue, queue = wf_task_queue(route.queue, started.pkg), part = route.part, task = '',
    task_state = '', runseq = 1 }
  wf_record_visibility(P, id, { run = started.run, type = started.type, status = 'running', started = now, closed = '',
    parent = started.parent, pkg = started.pkg, memo = '' }, now)
  return wf_enqueue_task(P, id, w, r, now)
end

-- Stages a workflow's task job that waits for admission (available, scheduled or
-- retryable) as pending, so that admission passes it by until a resume releases it.
-- The caller checked wf_need_task and K.scheduled.
--- @include rcall
--- @include K.job
--- @include load_job
--- @include unindex_job
--- @include move_count
--- @include index_move
--- @include index_clock
local function wf_stage_task(P, tid)
  local j = load_job(P, tid)
  if not j or not (j.state == 'available' or j.state == 'scheduled' or j.state == 'retryable') then return end
  unindex_job(P, tid, j)
  rcall('HSET', K.job(P, tid), 'state', 'pending')
  move_count(P, j.queue, j.state, 'pending')
  index_move(P, tid, j, j.state, 'pending', index_clock(P))
end

-- Removes a workflow's task job whatever its state, as a terminated run needs no more
-- tasks (or a step job, as a step given up needs no more attempts): a running one's
-- holder is told on the cancel channel, and its commit is refused since the job is gone. The caller checked wf_need_task, K.scheduled and K.leases.
--- @include rcall
--- @include K.cancelled
--- @include load_job
--- @include drop_lease
--- @include unindex_job
--- @include delete_job
local function wf_drop_task(P, tid)
  local j = load_job(P, tid)
  if not j then return end
  if j.state == 'running' then
    drop_lease(P, tid)
    rcall('PUBLISH', K.cancelled(P), string.format('%d', j.fence) .. ' ' .. tid .. '\n' .. j.lease)
  else
    unindex_job(P, tid, j)
  end
  delete_job(P, tid, j)
end

-- Periodic jobs. A schedule is a HASH K.schedule {def, rev, mark, paused, created,
-- updated, fired, skipped, refused, runs, last_tick, last_job, last_skipped,
-- last_refused, last_refusal}, listed in K.schedules (all scored 0, name order) and,
-- unless paused, in K.schedules_due scored by when a worker looks at it next (ms). The
-- definition ("def") is JSON only Go reads: Go computes the ticks and passes them in.
function K.schedule(P, name) return P .. 'cron:' .. name end
function K.schedules(P) return P .. 'cronnames' end
function K.schedules_due(P) return P .. 'crondue' end

local E_SCHEDULE_NOT_FOUND = -30
local E_SCHEDULE_EXISTS = -31
local E_SCHEDULE_MOVED = -32 -- {E_SCHEDULE_MOVED, rev, mark, paused}: recompute from a fresh read
local E_DUTY_LOST = -33 -- {E_DUTY_LOST}: the caller's fenced duty lease is not the current one

-- The fields of a new job's hash. Fields at their default are left out (see
-- JOB_DEFAULTS), and 'created' when it equals 'sched' (keep_created): every field costs
-- in each script that writes or reads the hash, and a job hash of a few fields fewer
-- takes a smaller allocation.
--- @include payload_fields
--- @include QUEUE_DEFAULT
local function new_job_fields(e, sched_text, now_text)
  local fields = { 'kind', e.kind, 'state', e.state, 'sched', sched_text }
  local n = #fields
  if e.queue ~= QUEUE_DEFAULT then fields[n + 1], fields[n + 2], n = 'queue', e.queue, n + 2 end
  if sched_text ~= now_text then fields[n + 1], fields[n + 2], n = 'created', now_text, n + 2 end
  if e.payload ~= '' then
    payload_fields(e.payload, fields)
    n = #fields
  end
  if e.prio ~= 0 then fields[n + 1], fields[n + 2], n = 'prio', e.prio, n + 2 end
  if e.ret ~= '0' then fields[n + 1], fields[n + 2], n = 'ret', e.ret, n + 2 end
  if e.maxa ~= '25' then fields[n + 1], fields[n + 2], n = 'maxa', e.maxa, n + 2 end
  if e.schema ~= '1' then fields[n + 1], fields[n + 2], n = 'schema', e.schema, n + 2 end
  if e.weight ~= '1' then fields[n + 1], fields[n + 2], n = 'weight', e.weight, n + 2 end
  if e.part ~= '' then fields[n + 1], fields[n + 2], n = 'part', e.part, n + 2 end
  if e.fp ~= '' then fields[n + 1], fields[n + 2], n = 'fp', e.fp, n + 2 end
  if e.sticky ~= '' then fields[n + 1], fields[n + 2], n = 'sticky', e.sticky, n + 2 end
  if e.rc ~= '' then fields[n + 1], fields[n + 2], n = 'rc', e.rc, n + 2 end
  if e.tags ~= '' then fields[n + 1], fields[n + 2], n = 'tags', e.tags, n + 2 end
  if e.ukey ~= '' then fields[n + 1], fields[n + 2], fields[n + 3], fields[n + 4] = 'ukey', e.ukey, 'uwin', e.uwin end
  return fields
end

-- A new job takes its unique key: strict until it is terminal, or a throttle window.
--- @include rcall
--- @include K.unique
--- @include K.throttle
--- @include K.throttle_expiry
local function take_unique(P, e, now)
  if e.ukey == '' then return end
  if e.uwin > 0 then
    rcall('HSET', K.throttle(P), e.ukey, e.id)
    rcall('ZADD', K.throttle_expiry(P), now + e.uwin, e.ukey)
  else
    rcall('HSET', K.unique(P), e.ukey, e.id)
  end
end

-- The job that holds a unique key: strict (window 0) until it is terminal, a throttle
-- window until it ends; nil when the key is free.
--- @include rcall
--- @include K.unique
--- @include K.throttle
--- @include K.throttle_expiry
local function unique_holder(P, ukey, uwin, now)
  if uwin > 0 then
    local until_ms = rcall('ZSCORE', K.throttle_expiry(P), ukey)
    if until_ms and tonumber(until_ms) > now then return rcall('HGET', K.throttle(P), ukey) end
    return nil
  end
  return rcall('HGET', K.unique(P), ukey)
end

-- A schedule's job from its template, as fire_schedule.lua and run_schedule.lua take it
-- in ARGV[1..15].
local function schedule_template(kind, queue, part, fp, prio, sticky, ret, maxa, schema, weight, rc, ukey, uwin, tags, payload)
  return { kind = kind, queue = queue, part = part, fp = fp, prio = tonumber(prio), sticky = sticky,
    ret = ret, maxa = maxa, schema = schema, weight = weight, rc = rc, ukey = ukey,
    uwin = tonumber(uwin), tags = tags, payload = payload, state = 'available' }
end

-- What enqueuing a schedule's job e would do, decided before any write, with the
-- enqueue path's checks in its order: 'new'; 'replayed' (its id is the same job
-- already); or 'refused' and the reply enqueue would have given (IdConflict,
-- Quarantined, Duplicate, Backpressure). call carries the unique keys and queue slots
-- the call's earlier jobs take; the structures the write touches are needed here.
--- @include rcall
--- @include K.job
--- @include K.queues
--- @include K.wake
--- @include K.unique
--- @include K.throttle
--- @include K.throttle_expiry
--- @include K.limits
--- @include E_ID_CONFLICT
--- @include E_DUPLICATE
--- @include E_QUARANTINED
--- @include E_BACKPRESSURE
--- @include str
--- @include safe_hmget
--- @include corrupt_reply
--- @include is_quarantined
--- @include unfinished
--- @include partition_of
--- @include need
--- @include need_counts
--- @include structure_error
--- @include unique_holder
--- @include JOB_DEFAULTS
local function schedule_job_verdict(P, e, now, call)
  local have, why = safe_hmget(K.job(P, e.id), 'kind', 'fp', 'queue')
  if not have then return 'corrupt', corrupt_reply(K.job(P, e.id), why) end
  if have[1] then
    if have[1] ~= e.kind or str(have[2]) ~= e.fp or (have[3] or JOB_DEFAULTS.queue) ~= e.queue then
      return 'refused', { E_ID_CONFLICT, e.id }
    end
    return 'replayed'
  end
  if is_quarantined(P, e.fp) then return 'refused', { E_QUARANTINED, e.fp } end
  if e.ukey ~= '' then
    local hid = call.unique[e.ukey] or unique_holder(P, e.ukey, e.uwin, now)
    if hid then
      local hs = rcall('HMGET', K.job(P, hid), 'state', 'sched')
      return 'refused', { E_DUPLICATE, hid, 0, hs[1] or 'deleted', hs[2] or 0 }
    end
    need(K.unique(P), 'hash')
    need(K.throttle(P), 'hash')
    need(K.throttle_expiry(P), 'zset')
  end
  -- The counts are read for the limit: an unusable counts key refuses the call first.
  if not need_counts(P, e.queue) then return 'corrupt', structure_error() end
  local incoming = (call.incoming[e.queue] or 0) + 1
  local limit = tonumber(rcall('HGET', K.limits(P), e.queue))
  if limit then
    local current = unfinished(P, e.queue) + incoming - 1
    if current + 1 > limit then return 'refused', { E_BACKPRESSURE, e.queue, limit, current, 1 } end
  end
  call.incoming[e.queue] = incoming
  if e.ukey ~= '' then call.unique[e.ukey] = e.id end
  need(K.queues(P), 'set')
  local pz, ring = partition_of(P, e.queue, e.sticky, e.part)
  need(pz, 'zset')
  need(ring, 'zset')
  need(K.wake(P, e.queue), 'list')
  return 'new'
end

-- Writes a schedule's job that schedule_job_verdict found new: available, ranked by
-- its tick (e.sched).
--- @include rcall
--- @include K.job
--- @include K.queues
--- @include new_job_fields
--- @include take_unique
--- @include move_count
--- @include index_available
--- @include index_move
--- @include wake
local function write_schedule_job(P, e, now)
  take_unique(P, e, now)
  rcall('HSET', K.job(P, e.id), unpack(new_job_fields(e, string.format('%d', e.sched), string.format('%d', now))))
  rcall('SADD', K.queues(P), e.queue)
  move_count(P, e.queue, nil, 'available')
  index_move(P, e.id, e, nil, 'available', now)
  index_available(P, e.id, e.queue, e.part, e.sticky, e.prio, e.sched)
  wake(P, e.queue)
end

-- Workflow step jobs (here, below new_job_fields, which they use). A step job runs a
-- workflow step as a job of its own: s = {step (its key, "charge#1"), queue, part, rc,
-- weight (text), payload, at (ms it is due)}. wf_enqueue_step enqueues it as a job of
-- kind "workflow-step:<type>", fingerprinted by the step (so a step that keeps killing
-- its worker quarantines that step's jobs only, and the run's tasks still run: it can
-- be cancelled), scheduled when it is due later than now, staged (pending) while the run
-- is paused, as its tasks are (wf_release_steps makes it due at resume), and records
-- that the step waits for it (K.wf_steps). Returns the job id. The caller checked
-- wf_need_step.
--- @include rcall
--- @include K.wf
--- @include K.job
--- @include K.queues
--- @include K.scheduled
--- @include K.wf_steps
--- @include new_job_fields
--- @include move_count
--- @include index_move
--- @include make_available
--- @include wake
local function wf_enqueue_step(P, id, w, s, now)
  local n = rcall('HINCRBY', K.wf(P, id), 'steps', 1)
  local sid = 'wfs:' .. id .. ':' .. n
  local j = { kind = 'workflow-step:' .. w.type, queue = s.queue, part = s.part, rc = s.rc, weight = s.weight,
    payload = s.payload, fp = 'wfstep:' .. id .. '/' .. s.step, prio = 0, ret = '0', maxa = '25', schema = '1',
    sticky = '', tags = '', ukey = '', state = 'available', sched = now }
  if s.at > now then j.state, j.sched = 'scheduled', s.at end
  if w.status == 'paused' then j.state = 'pending' end
  local now_text = string.format('%d', now)
  rcall('HSET', K.job(P, sid), unpack(new_job_fields(j, string.format('%d', j.sched), now_text)))
  rcall('SADD', K.queues(P), s.queue)
  if j.state == 'pending' then
    move_count(P, s.queue, nil, 'pending')
    index_move(P, sid, j, nil, 'pending', now)
  elseif j.state == 'scheduled' then
    move_count(P, s.queue, nil, 'scheduled')
    index_move(P, sid, j, nil, 'scheduled', now)
    rcall('ZADD', K.scheduled(P), j.sched, sid)
  else
    j.state = nil
    make_available(P, sid, j, now)
    wake(P, s.queue)
  end
  rcall('HSET', K.wf_steps(P, id), s.step, sid)
  return sid
end

-- The structures wf_enqueue_step writes for step job s of workflow id, checked before
-- any write.
--- @include need
--- @include need_counts
--- @include need_available
--- @include K.queues
--- @include K.scheduled
--- @include K.wf_steps
local function wf_need_step(P, id, s)
  need(K.queues(P), 'set')
  need(K.scheduled(P), 'zset')
  need(K.wf_steps(P, id), 'hash')
  need_counts(P, s.queue)
  need_available(P, { queue = s.queue, part = s.part, sticky = '', fp = 'wfstep:' .. id .. '/' .. s.step })
end

-- The step jobs that workflow id's steps wait for (K.wf_steps): a list of {step, job (its
-- id), j (its fields, nil when the job is gone)}, with the structures that
-- wf_drop_steps, wf_hold_steps and wf_release_steps write for them checked (the caller
-- checks structure_error before any write). None without a look when the workflow's row
-- w never had a step job ('steps', the ids minted). Cost O(steps waiting * log N): one
-- entry per step the run's own commits sent to a step job and no commit ended yet.
--- @include rcall
--- @include need
--- @include need_counts
--- @include need_available
--- @include K.wf_steps
--- @include K.scheduled
--- @include load_job
local function wf_waiting_steps(P, id, w)
  local out = {}
  if w.steps == 0 or not need(K.wf_steps(P, id), 'hash') then return out end
  need(K.scheduled(P), 'zset')
  local flat = rcall('HGETALL', K.wf_steps(P, id))
  for i = 1, #flat, 2 do
    local j = load_job(P, flat[i + 1])
    if j then
      need_counts(P, j.queue)
      need_available(P, j)
    end
    out[#out + 1] = { step = flat[i], job = flat[i + 1], j = j }
  end
  return out
end

-- Ends the waits of a run that closed or moved on (steps from wf_waiting_steps, read
-- before any write): every step job that has not started (available, scheduled,
-- retryable, staged or quarantined) is deleted, as a given-up step's is, so nothing runs
-- it later; a running one is left to its holder, whose commit is refused
-- (StepNotPending: the run is closed, or the workflow is on another run) and ends the
-- job without effect. K.wf_steps is emptied: the next run's steps start afresh.
--- @include rcall
--- @include K.wf_steps
--- @include UNFINISHED
--- @include unindex_job
--- @include delete_job
local function wf_drop_steps(P, id, steps)
  for _, s in ipairs(steps) do
    local j = s.j
    if j and j.state ~= 'running' and (UNFINISHED[j.state] or j.state == 'quarantined') then
      unindex_job(P, s.job, j)
      delete_job(P, s.job, j)
    end
  end
  rcall('DEL', K.wf_steps(P, id))
end

-- Holds a paused run's step jobs (steps from wf_waiting_steps): each one waiting for
-- admission is staged (pending), as the run's task is, so no worker starts it until
-- wf_release_steps. A running one finishes; its commit is accepted as while the run
-- runs (a retry it asks for is staged too, by wf_enqueue_step).
--- @include wf_stage_task
local function wf_hold_steps(P, steps)
  for _, s in ipairs(steps) do
    if s.j then wf_stage_task(P, s.job) end
  end
end

-- Releases a resumed run's staged step jobs (steps from wf_waiting_steps): each is
-- available now, or scheduled when it is due later (a retry's backoff still running).
--- @include schedule
--- @include make_available
--- @include wake
local function wf_release_steps(P, steps, now)
  for _, s in ipairs(steps) do
    local j = s.j
    if j and j.state == 'pending' then
      if j.sched > now then
        schedule(P, s.job, j, 'scheduled', j.sched)
      else
        make_available(P, s.job, j, now)
        wake(P, j.queue)
      end
    end
  end
end

-- Worker heartbeats (keys.go, "Worker heartbeats").
function K.workers(P) return P .. 'workers' end
function K.workers_seen(P) return P .. 'workers:seen' end
function K.queue_workers(P, q) return P .. 'q:' .. q .. ':workers' end

-- A worker's heartbeat record (K.workers), decoded; nil when it is absent or not a JSON
-- object (heartbeatJSON in heartbeat.go writes it).
--- @include rcall
--- @include K.workers
local function worker_record(P, w)
  local raw = rcall('HGET', K.workers(P), w)
  if not raw then return nil end
  local ok, r = pcall(cjson.decode, raw)
  if not ok or type(r) ~= 'table' then return nil end
  return r
end

-- Job index selection: the listing (list_jobs.lua) and the bulk verbs walk the job
-- indexes (index_move above) through index_select, from an exclusive cursor (entry time,
-- id). A cursor is a position, not a member, so it stays valid while jobs move: an entry
-- that left does not move it, a job that enters the state later files after it.

-- Whether a < b byte by byte, as Redis orders the members of equal score (Lua's own <
-- follows the server's collation locale).
local function bytes_less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- The rank in index key of the first entry after (at, id) (after = true), or at or after
-- it: two ZCOUNTs and a binary search over the entries of equal time. O(log N).
--- @include rcall
--- @include bytes_less
local function index_rank(key, at, id, after)
  local lo = rcall('ZCOUNT', key, '-inf', '(' .. at)
  local hi = rcall('ZCOUNT', key, '-inf', at)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = rcall('ZRANGE', key, mid, mid)[1]
    local past
    if after then past = bytes_less(id, m) else past = not bytes_less(m, id) end
    if past then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- A listing of every kind merges the kinds' indexes, at most this many; a queue with more
-- is listed one kind at a time.
local MAX_MERGED_KINDS = 256
local E_TOO_MANY_KINDS = -13 -- {E_TOO_MANY_KINDS, kinds, most}: name a kind

-- Selects the next entries of a listing. s = {queue, state, kind ('' = every kind of
-- K.kinds), dim and value (the filter index walked; '' = the kind index), desc (newest
-- first), limit (the page), budget (the most entries looked at), at and id (the cursor;
-- at nil = from the start), cutoff (only entries at or before this time, ms; nil = any),
-- part, tag, fp (filters checked on each job, '' = any)}. Returns the ids that match, in
-- order, the cursor after the last entry looked at, and whether the listing is done; or
-- nil and a corrupt_reply when an index key is not a ZSET. Cost O(kinds * (log N +
-- budget)), plus one HMGET per entry looked at when a checked filter is set.
--- @include rcall
--- @include K.job
--- @include K.kinds
--- @include K.job_index
--- @include K.job_filter_index
--- @include key_ok
--- @include corrupt_reply
--- @include bytes_less
--- @include index_rank
--- @include MAX_MERGED_KINDS
--- @include E_TOO_MANY_KINDS
local function index_select(P, s)
  local kinds = { s.kind }
  if s.kind == '' then
    local kk = K.kinds(P, s.queue)
    if not key_ok(kk, 'set') then return nil, corrupt_reply(kk, 'is not a set') end
    local n = rcall('SCARD', kk)
    if n > MAX_MERGED_KINDS then return nil, { E_TOO_MANY_KINDS, n, MAX_MERGED_KINDS } end
    kinds = rcall('SRANDMEMBER', kk, MAX_MERGED_KINDS)
    table.sort(kinds)
  end
  local checked = s.part ~= '' or s.tag ~= '' or s.fp ~= ''
  local want = s.limit
  if checked then want = s.budget end
  local lists = {}
  -- The one index walked oldest first: its ids alone (single).
  local single, cid = nil, nil
  for _, kind in ipairs(kinds) do
    local key
    if s.dim == '' then key = K.job_index(P, s.queue, s.state, kind)
    else key = K.job_filter_index(P, s.queue, s.state, kind, s.dim, s.value) end
    if not key_ok(key, 'zset') then return nil, corrupt_reply(key, 'is not a zset') end
    local r
    if not s.desc and #kinds == 1 then
      -- One index is the order itself: its ids without their scores (each a double that
      -- Redis formats and Lua parses, a tenth of what a bulk retry cost Redis per job
      -- outside its commands), the entries past the cutoff left out by their rank, and
      -- the time of the last entry looked at read once (ZSCORE, below).
      local first = 0
      if s.at then first = index_rank(key, s.at, s.id, true) end
      local stop = first + want
      if s.cutoff then stop = math.min(stop, rcall('ZCOUNT', key, '-inf', s.cutoff) - 1) end
      single, cid = key, {}
      if stop >= first then cid = rcall('ZRANGE', key, first, stop) end
      break
    elseif not s.desc then
      local first = 0
      if s.at then first = index_rank(key, s.at, s.id, true) end
      r = rcall('ZRANGE', key, first, first + want, 'WITHSCORES')
    else
      local stop = nil
      if s.at then stop = index_rank(key, s.at, s.id, false) end
      if s.cutoff then
        local c = rcall('ZCOUNT', key, '-inf', s.cutoff)
        if not stop or c < stop then stop = c end
      end
      stop = stop or rcall('ZCARD', key)
      r = {}
      if stop > 0 then
        local got = rcall('ZRANGE', key, math.max(0, stop - want - 1), stop - 1, 'WITHSCORES')
        for i = #got - 1, 1, -2 do
          r[#r + 1] = got[i]
          r[#r + 1] = got[i + 1]
        end
      end
    end
    -- Entry times and ids in two lists, not a table per entry: a batch looks at a thousand.
    local ats, mids, n = {}, {}, 0
    for i = 1, #r, 2 do
      local at = tonumber(r[i + 1])
      if not s.cutoff or at <= s.cutoff then
        n = n + 1
        ats[n], mids[n] = at, r[i]
      end
    end
    lists[#lists + 1] = { ats, mids }
  end
  -- Each index's entries are in order: one index is the order, several are merged.
  local cat = {}
  if not single then cid = {} end
  if #lists == 1 then cat, cid = lists[1][1], lists[1][2] end
  if #lists > 1 then
    local function before(a_at, a_id, b_at, b_id)
      if a_at ~= b_at then
        if s.desc then return a_at > b_at end
        return a_at < b_at
      end
      if s.desc then return bytes_less(b_id, a_id) end
      return bytes_less(a_id, b_id)
    end
    local heads, n = {}, 0
    for i = 1, #lists do heads[i] = 1 end
    while n < want + 1 do
      local best, best_at, best_id = nil, nil, nil
      for i, list in ipairs(lists) do
        local at = list[1][heads[i]]
        if at then
          local id = list[2][heads[i]]
          if not best or before(at, id, best_at, best_id) then best, best_at, best_id = i, at, id end
        end
      end
      if not best then break end
      n = n + 1
      cat[n], cid[n] = best_at, best_id
      heads[best] = heads[best] + 1
    end
  end
  local ids, nids, last, seen = {}, 0, nil, 0
  for i = 1, #cid do
    if nids >= s.limit or seen >= want then break end
    seen = seen + 1
    last = i
    local mid = cid[i]
    local ok = true
    if checked then
      local v = rcall('HMGET', K.job(P, mid), 'part', 'tags', 'fp')
      if s.part ~= '' and v[1] ~= s.part then ok = false end
      if s.fp ~= '' and v[3] ~= s.fp then ok = false end
      if ok and s.tag ~= '' and not string.find('\n' .. (v[2] or '') .. '\n', '\n' .. s.tag .. '\n', 1, true) then
        ok = false
      end
    end
    if ok then
      nids = nids + 1
      ids[nids] = mid
    end
  end
  -- Each index gave one entry more than can be looked at, so when every entry was looked
  -- at, every index is done.
  local done = seen == #cid
  if last and single then return ids, tonumber(rcall('ZSCORE', single, cid[last])), cid[last], done end
  if last then return ids, cat[last], cid[last], done end
  return ids, s.at, s.id, done
end

-- The selection an index-walking script gets in ARGV (list_jobs.lua's header): queue,
-- state, kind, dim, value, order ('desc' = newest first), limit, budget, cursor time
-- ('' = from the start), cursor id, older than (ms, '' = any age), and the partition,
-- tag and fingerprint checked on each job.
local function index_selection(queue, state, kind, dim, value, order, limit, budget, at, id, older, part, tag, fp)
  return { queue = queue, state = state, kind = kind, dim = dim, value = value, desc = order == 'desc',
    limit = tonumber(limit), budget = tonumber(budget), at = tonumber(at), id = id, cutoff = tonumber(older),
    part = part, tag = tag, fp = fp }
end

-- Bulk verbs (bulk_cancel.lua, bulk_retry.lua, bulk_delete.lua): each call takes a batch
-- of jobs selected through the job indexes (index_select), checks every structure its
-- writes touch for the whole batch (need, need_counts, structure_error), then moves them.

-- The state a job is filed under in the job indexes: "held" for a held available job.
local function index_state(j)
  if j.held == '1' then return 'held' end
  return j.state
end

-- Needs (lib need) the structures that taking job j out of its state writes: its lease,
-- its partition and ring or its held or parked set, the scheduled index, the strict
-- unique key it holds, the retained index, its queue's counts.
--- @include K.leases
--- @include K.held
--- @include K.parked
--- @include K.scheduled
--- @include K.unique
--- @include K.retained
--- @include partition_of
--- @include need
--- @include need_counts
local function need_leave_state(P, j)
  if j.state == 'running' then
    need(K.leases(P), 'zset')
  elseif j.state == 'available' then
    if j.held == '1' then
      need(K.held(P, j.fp), 'set')
    elseif j.parked ~= '' then
      need(K.parked(P, j.rc), 'zset')
    else
      local pz, ring, rs = partition_of(P, j.queue, j.sticky, j.part)
      need(pz, 'zset')
      need(ring, 'zset')
      need(rs, 'hash')
    end
  elseif j.state == 'scheduled' or j.state == 'retryable' then
    need(K.scheduled(P), 'zset')
  end
  if j.ukey ~= '' and j.uwin == 0 then need(K.unique(P), 'hash') end
  need(K.retained(P), 'zset')
  need_counts(P, j.queue)
end

-- Takes job j out of the structures of its state (need_leave_state checked them): a
-- running job's lease, an available job's partition or held or parked set, a scheduled
-- or retryable job's due time. Its count and index entries move with the state the
-- caller gives it next (finalize, delete_job, make_available).
--- @include drop_lease
--- @include unindex_job
local function leave_state(P, id, j)
  if j.state == 'running' then drop_lease(P, id) else unindex_job(P, id, j) end
end

-- The fields bulk_cancel and bulk_delete read of each job: the transitions' and what
-- index_move files a job under, so that it reads no more.
--- @include JOB_FIELDS
local BULK_JOB_FIELDS = { 'kind', 'tags', unpack(JOB_FIELDS) }

-- Loads the jobs of a bulk batch that are still filed in the selected state, with the
-- named fields (which must hold state, held, and what index_move files a job under)
-- checked as load_job_checked checks them, and the job's id and its hash's key as
-- fields "id" and "key" (no job field has either name), so that a batch makes one table
-- per job; a job gone, moved or unreadable since it was filed is skipped (the count).
-- The checks of each field are looked up once per call, not once per job.
--- @include K.job
--- @include JOB_NUMBERS
--- @include JOB_DEFAULTS
--- @include JOB_RANGES
--- @include JOB_STATES
--- @include index_state
local function bulk_load(P, ids, state, fields)
  local n, numeric, absent, lo, hi = #fields, {}, {}, {}, {}
  for i, f in ipairs(fields) do
    numeric[i] = JOB_NUMBERS[f]
    absent[i] = JOB_DEFAULTS[f] or ''
    if numeric[i] then absent[i] = JOB_DEFAULTS[f] or 0 end
    local r = JOB_RANGES[f]
    if r then lo[i], hi[i] = r[1], r[2] end
  end
  local floor = math.floor
  local jobs, skipped = {}, 0
  for _, id in ipairs(ids) do
    local k = K.job(P, id)
    local v = redis.pcall('HMGET', k, unpack(fields))
    local j = nil
    if not v.err then
      -- Made with room for the fields every caller reads: a table grown a field at a
      -- time is rehashed four times, which cost a bulk retry more Redis instructions than
      -- any command of its own but the HMGET and the ZADDs (bench/callgrind -bulk).
      j = { id = id, key = k, state = false, held = false, queue = false, kind = false, part = false, tags = false,
        fp = false, sticky = false, prio = false, ukey = false, uwin = false, sched = false }
      for i = 1, n do
        local x = v[i]
        if x then
          local l = lo[i]
          if l then
            local value = tonumber(x)
            if not value or value ~= floor(value) or value < l or value > hi[i] then
              j = nil
              break
            end
            if numeric[i] then x = value end
          end
        else
          x = absent[i]
        end
        j[fields[i]] = x
      end
    end
    if j and JOB_STATES[j.state] and index_state(j) == state then
      jobs[#jobs + 1] = j
    else
      skipped = skipped + 1
    end
  end
  return jobs, skipped
end

-- The reply of a bulk call: the cursor after the batch, whether the selection is done,
-- the jobs moved (or, in a dry run, that would be) and those skipped.
--- @include OK
local function bulk_reply(at, id, done, acted, skipped)
  return { OK, at and string.format('%d', at) or '', id or '', done and 1 or 0, acted, skipped }
end

-- What one admission leased, in its order: { {id, fence}, ... }, read from its record
-- (admit.lua writes it: "<id>\31<fence>\31<id>\31<fence>...", and no validated id holds
-- \31). nil when there is no record or it is not a string: then no repeat is recognized,
-- and nothing raises.
--- @include K.admission
local function admission_record(P, lease)
  local v = redis.pcall('GET', K.admission(P, lease))
  if type(v) ~= 'string' then return nil end
  local jobs, id = {}, nil
  for part in string.gmatch(v, '[^\31]+') do
    if id then
      jobs[#jobs + 1] = { id, tonumber(part) }
      id = nil
    else
      id = part
    end
  end
  return jobs
end
-- Outcome counters (keys.go Counters): by queue, the jobs that completed
-- ("completed:<queue>") and the attempts that failed ("failed:<queue>": a retry, a snooze
-- past its limit, an undecodable payload, a lease lost to a crash (reclaim.lua); a skip
-- is no failure). An ack tallies them in
-- memory, queue -> {completed, failed}, and flush_outcomes writes one HINCRBY per queue
-- and outcome, whatever the batch's size. record_series.lua snapshots them into each
-- queue's throughput series.
local outcome_delta = {}

-- Tallies one ack of a job of queue q with outcome, which left the job in state.
--- @include outcome_delta
local function count_outcome(q, outcome, state)
  local d = outcome_delta[q]
  if not d then
    d = { 0, 0 }
    outcome_delta[q] = d
  end
  if outcome == 'success' then
    d[1] = d[1] + 1
  elseif outcome ~= 'skip' and (state == 'retryable' or state == 'archived' or state == 'undecodable'
      or state == 'quarantined') then
    d[2] = d[2] + 1
  end
end

--- @include outcome_delta
--- @include count_event
local function flush_outcomes(P)
  for q, d in pairs(outcome_delta) do
    count_event(P, 'completed:' .. q, d[1])
    count_event(P, 'failed:' .. q, d[2])
  end
  outcome_delta = {}
end

-- A queue's throughput series (keys.go Series): a ZSET of snapshots of its outcome
-- counters, scored by the store time (ms) of each, members "<ms>:<completed>:<failed>".
function K.series(P, q) return P .. 'q:' .. q .. ':series' end
