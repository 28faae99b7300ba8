/*
 * leasehold's lease protocol on one resource, for the SPIN model checker (model/README.md).
 *
 * Clients acquire, renew and release one lease through a store that applies each transition as
 * one compare-and-set (design.md, "Every transition is one compare-and-set"). Requests and
 * replies cross an unreliable network (any delay up to MAXDELAY, any order, any loss); a client
 * can be frozen for any time (true time advances while it takes no step); every wall clock may
 * be off true time by up to SKEW; a fenced downstream accepts a write only with a token at least
 * the highest it has accepted.
 *
 * Time is discrete and kept relative to the present instant: a deadline is stored as the ticks
 * left until it, a message as the ticks since its tSent, the record's expiresAt as its distance
 * from now. So the state space is finite without a horizon: the check covers runs of any length
 * (with at most MAXTOK grants).
 *
 * Every step names the code it models; read it beside:
 *   src/core/lease.ts           isLive, liveUntil
 *   src/core/time.ts            validUntil, driftMs
 *   src/stores/memory/          MemoryStore.doTryAcquire / doRenewMany / doReleaseMany (the CAS)
 *   src/client/lease-client.ts  LeaseClient.tryAcquire, grant, releaseLease
 *   src/client/heartbeat.ts     Heartbeat.renewBatch, apply, expireDue
 *   src/client/held-lease.ts    HeldLease.isValid, markRenewed, markLost, markReleased
 *   src/fence/fence-guard.ts    FenceGuard.check
 *
 * Variants (spin -DNAME ...):
 *   CLOCK_STORE          the store's own clock decides expiry (PostgreSQL, Redis, etcd): maxClockSkewMs 0
 *   NOW_AT_SEND          a 'local' store whose adapter reads clock.now() before the request leaves
 *                        (DynamoDB), not inside the CAS (MemoryStore, SQLite)
 *   DEADLINE_FROM_REPLY  broken: the holder's deadline counts from the reply's arrival, not tSent
 *   SKEW_BEYOND_BOUND    broken: clocks disagree by more than maxClockSkewMs allows for
 *   REACH_TAKEOVER       sanity: fails once a second client holds after a first (the check is not vacuous)
 *   REACH_FENCE_REJECT   sanity: fails once the fence refuses a stale write
 *   RENEW_FORWARD_ONLY   a renewal never moves expiresAt back (closes NOW_AT_SEND's reordering gap)
 *   FOCUS_REORDER        fewer behaviours, so that NSLOT=2 can be searched (see below)
 *   NPERM=n              a counting lease of n permits (1..3), each its own record: an acquire is
 *                        store.acquireFirst over them (NCLIENTS=3 NPERM=2 in the test)
 *   PICK_AT_CLIENT       with NPERM: the caller names the permit it tries (acquireFirstByList: a
 *                        look, then the store's CAS on one candidate), not the store (one-call pick)
 *   BLIND_PICK           broken, with NPERM: the permit picked from a look is written without the
 *                        CAS checking it is still free
 *   REACH_ALL_PERMITS    sanity, with NPERM: fails once NPERM clients believe at once
 *   DATA                 lease data: a holder writes it (store.writeData) while it believes; the
 *                        store's CAS compares owner and token; a grant reads what is there
 *   WRITE_UNCHECKED      broken, with DATA: the store writes the data without comparing owner and
 *                        token (a plain write), so a paused ex-holder's late write lands
 *   REACH_DATA_WRITE     sanity, with DATA: fails once a data write lands
 *   SKIP_TOKENS          tokens that skip (design.md): a grant takes the counter + 1 or + 2, a
 *                        refusal may burn a number (up to MAXBURN a run); the counter is kept apart
 *                        from the hold, so a burn leaves the holder's token as it was
 *   REACH_SKIP           sanity, with SKIP_TOKENS: fails once a believed grant skipped a value
 *   NCLIENTS=3, NSLOT=1, MAXTOK=n, MAXDELAY=n, SKEW=n   other bounds
 */

#ifndef NCLIENTS
#define NCLIENTS 2
#endif
#ifndef NSLOT
#define NSLOT 2 /* requests (or replies) one client can have in the network at once: 1 or 2 */
#endif
#ifndef MAXTOK
#define MAXTOK 3 /* at most this many grants in a run (a further acquire waits, or is lost) */
#endif

#ifndef NPERM
#define NPERM 1 /* permits of the name: 1 is the exclusive lease */
#endif

#define TTL 5 /* ttlMs */
/* driftMs(ttlMs), src/core/time.ts: the holder's allowance for its clock running slow. The
 * model's clocks all run at the rate of true time, so none is needed; 0 is the strictest case (a
 * larger drift only ends beliefs earlier), and it keeps the check sharp: with maxClockSkewMs 2
 * and drift 0, dropping either side's skew allowance is caught (model/README.md). */
#define DRIFT 0
#ifdef CLOCK_STORE
#define MAX_SKEW 0 /* maxClockSkewMs: the store's own clock decides, so no allowance */
#else
#define MAX_SKEW 2 /* maxClockSkewMs: every wall clock within this of true time */
#endif
#define VALID (TTL - DRIFT - MAX_SKEW) /* validUntil(tSent, ttl, skew) - tSent */

#ifndef MAXDELAY
#define MAXDELAY (VALID + 1) /* a message older than this (since its tSent) is lost */
#endif

/* SKEW: how far each client's wall clock (clock.now(), Date.now()) really is off true time. */
#ifndef SKEW
#ifdef SKEW_BEYOND_BOUND
#define SKEW (MAX_SKEW + 1)
#else
#define SKEW MAX_SKEW
#endif
#endif

/* expiresAt - now below this is as expired as it gets: no request can read a time that early */
#define E_MIN (-(MAXDELAY + MAX_SKEW + 1))

#define NMSG (NCLIENTS * NSLOT)

/* FOCUS_REORDER: fewer behaviours, so that two requests in flight per client (NSLOT=2) can be
 * searched exhaustively: client 0 acquires once, then renews; client 1 only acquires; nothing is
 * lost, released or written. What it finds is a real run of the full model. */
#ifdef FOCUS_REORDER
#define mayAcquire(i) (i == 1 || token[0] == 0)
#define mayRenew(i) (i == 0)
#define mayRelease(i) false
#define mayWrite(i) false
#define mayLose false
#else
#define mayAcquire(i) true
#define mayRenew(i) true
#define mayRelease(i) true
#if NPERM > 1
#define mayWrite(i) false /* the fence is checked per permit by the one-permit model */
#else
#define mayWrite(i) true
#endif
#define mayLose true
#endif

/* message slot stages and kinds */
#define FREE 0
#define REQ 1 /* request on its way to the store */
#define REP 2 /* reply on its way back */
#define ACQ 1 /* store.tryAcquire */
#define REN 2 /* store.renewMany */
#define REL 3 /* store.release */
#define WRT 4 /* store.writeData */

/* ---- the store's records, one per permit: LeaseRecord, src/core/lease.ts; permit p > 0 is the
 * record name + U+0001 'permit=' + p (src/core/permits.ts) ---- */
byte owner[NPERM]; /* 0 = '' (released or never held); client i is i + 1 */
byte token[NPERM]; /* the fencing token: strictly increasing per record, never reset */
short exp[NPERM]; /* expiresAt - now, on the clock that wrote it (see casNow) */
byte grants; /* grants so far, all permits together (bounded by MAXTOK) */
#ifdef SKIP_TOKENS
#ifndef MAXBURN
#define MAXBURN 1 /* numbers burnt by refusals in a run (each refusal may burn one) */
#endif
byte ctr[NPERM]; /* the token counter, apart from the hold: never reset, never expires */
byte burns; /* numbers burnt so far */
#endif
#ifdef DATA
byte dtok; /* the token the record's lease data was written under (0 = none written) */
#endif

/* ---- the network: one slot per message, delivered in any order, or lost ---- */
byte stage[NMSG];
byte kind[NMSG];
byte age[NMSG]; /* now - tSent, where tSent = clock.monotonic() taken just before it left */
byte stok[NMSG]; /* the token the request is about; the granted token in an acquire reply */
byte sperm[NMSG]; /* the permit the request is about; the granted permit in an acquire reply */
bit ok[NMSG]; /* a renewal's answer: renewed (the lease) or null */

/* ---- each client: a LeaseClient with its Heartbeat and HeldLease ---- */
byte off[NCLIENTS]; /* its wall clock: clock.now() = true time + off[i] (+ a constant) */
bit held[NCLIENTS]; /* HeldLease.state is 'held' or 'at-risk' (not lost, not released) */
byte mytok[NCLIENTS]; /* HeldLease.token */
byte myperm[NCLIENTS]; /* HeldLease.permit */
byte dl[NCLIENTS]; /* HeldLease.validUntil - clock.monotonic(), 0 once passed */
byte acqSlot[NCLIENTS]; /* 1 + the slot of the tryAcquire it awaits, 0 when none */


/* ---- the fenced downstream: FenceGuard, src/fence/fence-guard.ts ---- */
byte highest[NPERM]; /* the highest token accepted per permit (0 = none yet) */
byte late; /* the token of a write on its way, checked later (0 = none) */
byte latePerm; /* its permit */

/* ---- the monitor's memory ---- */
byte lastGrant[NPERM]; /* per permit, the token of the last grant a client started to believe in */
#ifdef REACH_TAKEOVER
byte firstHolder; /* 1 + the first client to hold */
#endif

/* HeldLease.isValid(): not terminal and clock.monotonic() < validUntil. It reads the clock itself,
 * so it is right for a frozen client too: belief ends at the deadline whether the client runs or not. */
#define believes(i) (held[i] && dl[i] > 0)

/* isLive(record, now, allowanceMs), src/core/lease.ts: owned and now <= expiresAt + allowance,
 * the allowance being the store's maxClockSkewMs (liveUntil) */
#define isLive(p, at) (owner[p] != 0 && (at) <= exp[p] + MAX_SKEW)

/* The `now` the CAS for slot s reads, relative to true time: the store's clock (CLOCK_STORE; a
 * constant offset of the store's clock cancels out, since every expiry is written and read on
 * it), or the requesting client's clock.now(), read inside the CAS (MemoryStore, SQLite: the
 * default) or before the request left (NOW_AT_SEND: DynamoDB acquireOne / renew). */
#ifdef CLOCK_STORE
#define casNow(s) 0
#else
#ifdef NOW_AT_SEND
#define casNow(s) (off[(s) / NSLOT] - age[s])
#else
#define casNow(s) off[(s) / NSLOT]
#endif
#endif

/* A slot freed and its fields cleared (states differing only in stale fields are one state). */
#define drop(s) stage[s] = FREE; kind[s] = 0; age[s] = 0; stok[s] = 0; sperm[s] = 0; ok[s] = 0

/* A message lost (or a refusal): if it is the acquire its client awaits, that call fails or
 * answers null (the store's own timeout, or the answer), so the client's wait ends. */
#define lose(s) \
  if \
  :: kind[s] == ACQ && acqSlot[(s) / NSLOT] == (s) % NSLOT + 1 -> acqSlot[(s) / NSLOT] = 0 \
  :: else -> skip \
  fi; \
  drop(s)

/* The record an acquire in slot s takes, into p (NPERM when none is free). One permit: the
 * record itself, if free. With PICK_AT_CLIENT the caller named one candidate (sperm[s], from a
 * look taken when it sent) and the store's CAS checks that one; by default the store picks any
 * free one in the same step (a one-call acquireFirst); BLIND_PICK (broken) takes the caller's
 * candidate without checking it is still free. */
#if NPERM == 1
#define pick(s) if :: isLive(0, at) -> p = NPERM :: else -> p = 0 fi
#elif defined(BLIND_PICK)
#define pick(s) p = sperm[s]
#elif defined(PICK_AT_CLIENT)
#define pick(s) if :: isLive(sperm[s], at) -> p = NPERM :: else -> p = sperm[s] fi
#elif NPERM == 2
#define pick(s) \
  if \
  :: !isLive(0, at) -> p = 0 \
  :: !isLive(1, at) -> p = 1 \
  :: isLive(0, at) && isLive(1, at) -> p = NPERM \
  fi
#else
#define pick(s) \
  if \
  :: !isLive(0, at) -> p = 0 \
  :: !isLive(1, at) -> p = 1 \
  :: !isLive(2, at) -> p = 2 \
  :: isLive(0, at) && isLive(1, at) && isLive(2, at) -> p = NPERM \
  fi
#endif

/* The store's compare-and-set: one transition, atomically (MemoryStore, src/stores/memory/). */
inline cas(s) {
  c = (s) / NSLOT;
  at = casNow(s);
  if
  :: kind[s] == ACQ ->
    /* MemoryStore.doTryAcquire (one record) / doAcquireFirst (permits: the first candidate that
     * is free, in the caller's random rotation, so any free one): refused (null) while
     * isLive(current, now, maxClockSkewMs) */
    pick(s);
    if
    :: p == NPERM ->
#ifdef SKIP_TOKENS
      /* a refusal may burn a number of the never-reset counter (an INCR before the SET NX of a
       * hold key; a revision another write took): the holder's token stays as it was */
      if
      :: burns < MAXBURN -> ctr[0]++; burns++
      :: true -> skip
      fi;
#endif
      lose(s) /* null: tryAcquire returns null */
    :: else ->
#ifdef SKIP_TOKENS
      /* token := the counter's next number, above every one it gave, skipping any it burnt (a
       * store revision that other writes advanced is the same skip); the counter survives
       * release and expiry */
      ctr[p]++;
      token[p] = ctr[p];
#else
      token[p]++; /* token := token + 1, never reset */
#endif
      grants++;
#ifdef DATA
      /* the grant reads the data there: written under an earlier token, never this one or later */
      assert(dtok < token[p]);
#endif
      owner[p] = c + 1;
      exp[p] = at + TTL; /* expiresAt := now + ttl */
      stok[s] = token[p];
      sperm[s] = p;
      stage[s] = REP
    fi;
    p = 0
  :: kind[s] == REN ->
    /* MemoryStore.doRenewMany: owner = me and token = mine; expiresAt := now + ttl, token kept */
    if
#ifdef RENEW_FORWARD_ONLY
    /* the fix for NOW_AT_SEND: a renewal never moves expiresAt back (a stale one changes nothing) */
    :: owner[sperm[s]] == c + 1 && token[sperm[s]] == stok[s] ->
      if
      :: at + TTL > exp[sperm[s]] -> exp[sperm[s]] = at + TTL
      :: else -> skip
      fi;
      ok[s] = 1
#else
    :: owner[sperm[s]] == c + 1 && token[sperm[s]] == stok[s] -> exp[sperm[s]] = at + TTL; ok[s] = 1
#endif
    :: else -> ok[s] = 0 /* null */
    fi;
    stage[s] = REP
#ifdef DATA
  :: kind[s] == WRT ->
    /* MemoryStore.doWriteData: owner = me and token = mine; data := the value. Nothing at the
     * client waits on the answer here: a refusal would only end its belief earlier. */
    if
#ifdef WRITE_UNCHECKED
    :: true ->
#else
    :: owner[0] == c + 1 && token[0] == stok[s] ->
#endif
      /* a value lands only under the record's current grant: never after a later grant */
      assert(stok[s] == token[0]);
#ifdef REACH_DATA_WRITE
      assert(false);
#endif
      dtok = stok[s]
    :: else -> skip
    fi;
    drop(s)
#endif
  :: kind[s] == REL ->
    /* MemoryStore.doReleaseMany: owner = me and token = mine; owner := '', expiresAt := 0.
     * Nothing at the client waits on the answer: it travels as a lost one. */
    if
    :: owner[sperm[s]] == c + 1 && token[sperm[s]] == stok[s] -> owner[sperm[s]] = 0; exp[sperm[s]] = 0
    :: else -> skip
    fi;
    drop(s)
  fi;
  c = 0;
  at = 0
}

/* The network and the store: a request is delivered (the CAS runs) or lost; a reply is lost
 * (delivery is the client's step). A message can also wait: delay is time passing meanwhile. */
#define NET(s) \
  :: atomic { stage[s] == REQ && (kind[s] != ACQ || grants < MAXTOK) -> cas(s) } \
  :: atomic { mayLose && stage[s] == REQ -> lose(s) /* request lost */ } \
  :: atomic { mayLose && stage[s] == REP -> lose(s) /* reply lost */ }

active proctype Network() {
  short at;
  byte c, p;
  end:
  do
  NET(0)
  NET(1)
#if NMSG > 2
  NET(2)
#endif
#if NMSG > 3
  NET(3)
#endif
#if NMSG > 4
  NET(4)
#endif
#if NMSG > 5
  NET(5)
#endif
  od
}

#if NSLOT > 1
#define hasFree(i) (stage[(i) * NSLOT] == FREE || stage[(i) * NSLOT + 1] == FREE)
#else
#define hasFree(i) (stage[i] == FREE)
#endif

/* Sends a request from client i's first free slot (the guard checked that one is free). */
inline send(i, k, tok) {
  s = i * NSLOT;
  if
  :: stage[s] != FREE -> s++
  :: else -> skip
  fi;
  stage[s] = REQ;
  kind[s] = k;
  age[s] = 0; /* tSent = clock.monotonic(), just before the request leaves */
  stok[s] = tok;
  sperm[s] = myperm[i]
}

/* The candidate an acquire in slot s names when the caller picks (PICK_AT_CLIENT, BLIND_PICK):
 * any permit, as a look may show any of them free. */
#if NPERM > 1 && (defined(PICK_AT_CLIENT) || defined(BLIND_PICK))
#define candidate(s) select(d : 0 .. NPERM - 1); sperm[s] = d; d = 0
#else
#define candidate(s) skip
#endif

/* The lease is over for client i (lost or released); its fields are cleared. */
#define unhold(i) held[i] = 0; mytok[i] = 0; myperm[i] = 0; dl[i] = 0

/* validUntil(tSent, ttlMs, maxClockSkewMs) - now, src/core/time.ts, for the reply in slot s,
 * 0 if it has passed */
#ifdef DEADLINE_FROM_REPLY
#define replyDeadline(s) VALID /* broken: measured from the reply's arrival, as if tSent = now */
#else
#define replyDeadline(s) (VALID > age[s] -> VALID - age[s] : 0) /* from tSent, when it left */
#endif

/* Client i handles the reply in slot s. */
inline onReply(i, s) {
  if
  :: kind[s] == ACQ && acqSlot[i] == s - i * NSLOT + 1 ->
    acqSlot[i] = 0;
    /* LeaseClient.grant: validUntil(tSent, lease.ttlMs, maxClockSkewMs) */
    d = replyDeadline(s);
    if
    :: d > 0 ->
      /* LeaseClient.tryAcquire: held.isValid(), so the lease is handed out */
      held[i] = 1;
      mytok[i] = stok[s];
      myperm[i] = sperm[s];
      dl[i] = d;
      assert(stok[s] > lastGrant[sperm[s]]); /* fencing tokens strictly increase across grants */
#ifdef REACH_SKIP
      assert(stok[s] <= lastGrant[sperm[s]] + 1); /* fails once a grant believed skipped a value */
#endif
      lastGrant[sperm[s]] = stok[s];
#ifdef REACH_TAKEOVER
      assert(firstHolder == 0 || firstHolder == i + 1);
      if
      :: firstHolder == 0 -> firstHolder = i + 1
      :: else -> skip
      fi;
#endif
      drop(s)
    :: else ->
      /* LeaseClient.tryAcquire: answered after its deadline, never handed out: releaseQuietly */
      kind[s] = REL;
      age[s] = 0;
      stage[s] = REQ
    fi
  :: kind[s] == ACQ && acqSlot[i] != s - i * NSLOT + 1 ->
    drop(s) /* the answer to an attempt that already failed (timed out): dropped */
  :: kind[s] == REN && held[i] && stok[s] == mytok[i] && sperm[s] == myperm[i] ->
    if
    :: ok[s] ->
      /* Heartbeat.apply -> HeldLease.markRenewed: validUntil = max(validUntil, validUntil(tSent)) */
      d = replyDeadline(s);
      if
      :: d > dl[i] -> dl[i] = d
      :: else -> skip
      fi
    :: else -> unhold(i) /* Heartbeat.apply: null (no longer ours) -> HeldLease.markLost */
    fi;
    drop(s)
  :: kind[s] == REN && !(held[i] && stok[s] == mytok[i] && sperm[s] == myperm[i]) ->
    /* a renewal of a lease already lost or released: markRenewed returns false, and
     * onLateRenewal releases a lost one (either may happen here) */
    if
    :: ok[s] -> kind[s] = REL; age[s] = 0; ok[s] = 0; stage[s] = REQ
    :: drop(s)
    fi
  fi
}

/* The fenced downstream: FenceGuard.check(resource, token) accepts a token at least the highest
 * accepted, and remembers it. */
#define fenceCheck(q, t) \
  if \
  :: (t) >= highest[q] -> \
    assert((t) >= highest[q]); /* never accepts a token lower than one it accepted */ \
    highest[q] = t \
  :: else -> REJECTED \
  fi

#ifdef REACH_FENCE_REJECT
#define REJECTED assert(false) /* a stale write refused: reachable */
#else
#define REJECTED skip /* refused: its token is lower than one already accepted */
#endif

proctype Client(byte i) {
  byte s, d;
  end:
  do
  :: atomic {
      /* LeaseClient.tryAcquire: tSent = clock.monotonic(); store.tryAcquire(resource, owner, ttl) */
      mayAcquire(i) && !held[i] && acqSlot[i] == 0 && hasFree(i) ->
      send(i, ACQ, 0);
      candidate(s);
      acqSlot[i] = s - i * NSLOT + 1;
      s = 0
    }
#if NSLOT > 1
  :: atomic {
      /* tryAcquire gave up waiting (a timeout): a late answer is dropped, a new attempt may go */
      mayLose && acqSlot[i] != 0 -> acqSlot[i] = 0
    }
#endif
  :: atomic {
      /* Heartbeat.renewBatch (after expireDue): a renewal of a still-valid lease, at any moment,
       * earlier ones possibly still in flight (the beat's patience is two heartbeats) */
      mayRenew(i) && believes(i) && hasFree(i) -> send(i, REN, mytok[i]); s = 0
    }
  :: atomic {
      /* HeldLease.release -> LeaseClient.releaseLease: markReleased (belief ends now), then one
       * store.release; if it is lost, the lease lapses at its TTL */
      mayRelease(i) && held[i] ->
      if
      :: hasFree(i) -> send(i, REL, mytok[i]); s = 0
      :: else -> skip
      fi;
      unhold(i)
    }
  :: atomic {
      /* Heartbeat.expireDue, the watchdog: the deadline passed -> HeldLease.markLost. It may run
       * late (a frozen event loop); believes() does not wait for it. */
      held[i] && dl[i] == 0 -> unhold(i)
    }
#ifdef DATA
  :: atomic {
      /* HeldLease.writeData: sent only if isValid() (checked before sending); it may land late */
      believes(i) && hasFree(i) -> send(i, WRT, mytok[i]); s = 0
    }
#endif
  :: atomic {
      /* work under the lease: if (lease.isValid()) write(..., lease.token). The write reaches
       * the downstream now, or later (the client froze between the check and the write). */
      mayWrite(i) && believes(i) ->
      if
      :: fenceCheck(myperm[i], mytok[i])
      :: late == 0 -> late = mytok[i]; latePerm = myperm[i]
      fi
    }
  :: atomic { stage[i * NSLOT] == REP -> s = i * NSLOT; onReply(i, s); s = 0; d = 0 }
#if NSLOT > 1
  :: atomic { stage[i * NSLOT + 1] == REP -> s = i * NSLOT + 1; onReply(i, s); s = 0; d = 0 }
#endif
  od
}

active proctype Fence() {
  end:
  do
  :: atomic { late != 0 -> fenceCheck(latePerm, late); late = 0; latePerm = 0 }
  od
}

/* One tick of true time: deadlines come closer, messages age (one older than MAXDELAY is lost),
 * the record's expiresAt comes closer. Any process may be frozen across any number of ticks. */
#define TICK_CLIENT(i) \
  if \
  :: dl[i] > 0 -> dl[i]-- \
  :: else -> skip \
  fi
#define TICK_SLOT(s) \
  if \
  :: stage[s] != FREE && age[s] < MAXDELAY -> age[s]++ \
  :: stage[s] != FREE && age[s] >= MAXDELAY -> lose(s) \
  :: else -> skip \
  fi

#define TICK_RECORD(p) \
  if \
  :: owner[p] != 0 && exp[p] > E_MIN -> exp[p]-- \
  :: else -> skip \
  fi

active proctype Tick() {
  end:
  do
  :: atomic {
      TICK_CLIENT(0);
      TICK_CLIENT(1);
#if NCLIENTS > 2
      TICK_CLIENT(2);
#endif
      TICK_SLOT(0);
      TICK_SLOT(1);
#if NMSG > 2
      TICK_SLOT(2);
#endif
#if NMSG > 3
      TICK_SLOT(3);
#endif
#if NMSG > 4
      TICK_SLOT(4);
#endif
#if NMSG > 5
      TICK_SLOT(5);
#endif
      TICK_RECORD(0);
#if NPERM > 1
      TICK_RECORD(1);
#endif
#if NPERM > 2
      TICK_RECORD(2);
#endif
    }
  od
}

/* Two clients believing the same permit at once (with one permit: the same lease). */
#define shared(a, b) (believes(a) && believes(b) && myperm[a] == myperm[b])
#if NCLIENTS > 2
#define overlap (shared(0, 1) || shared(0, 2) || shared(1, 2))
#define believers (believes(0) + believes(1) + believes(2))
#else
#define overlap shared(0, 1)
#define believers (believes(0) + believes(1))
#endif

/* At most one client believes it holds each permit (with one permit: the lease) at any instant of
 * true time, so at most NPERM believe they hold a permit of the name. */
active proctype Monitor() {
  atomic {
    (overlap || believers > NPERM) ->
#if NCLIENTS > 2
    printf("TWO BELIEVERS: client 0 token %d permit %d (%d ticks left), client 1 token %d permit %d (%d left), client 2 token %d permit %d (%d left)\n",
      mytok[0] * held[0], myperm[0], dl[0], mytok[1] * held[1], myperm[1], dl[1], mytok[2] * held[2], myperm[2], dl[2]);
#else
    printf("TWO BELIEVERS: client 0 token %d (%d ticks left), client 1 token %d (%d ticks left)\n",
      mytok[0], dl[0], mytok[1], dl[1]);
#endif
    assert(!overlap && believers <= NPERM)
  }
}

#ifdef REACH_ALL_PERMITS
/* Sanity: NPERM clients believing at once is reachable (the permits are really used together). */
active proctype AllPermits() {
  atomic { believers == NPERM -> assert(false) }
}
#endif

init {
  byte i, v;
  atomic {
    /* Every wall clock within SKEW of true time, so two disagree by up to 2 * SKEW. Only the
     * differences matter (every comparison is between two clock readings) and the clients are
     * interchangeable, so client 0 is taken to be the slowest, without loss of generality. */
    off[0] = 0;
    i = 1;
    do
#ifdef SKEW_BEYOND_BOUND
    :: i < NCLIENTS -> off[i] = 2 * SKEW; i++ /* the search for the overlap goes straight to the worst */
#else
    :: i < NCLIENTS -> select(v : 0 .. 2 * SKEW); off[i] = v; i++
#endif
    :: else -> break
    od;
    i = 0;
    v = 0;
    run Client(0);
    run Client(1);
#if NCLIENTS > 2
    run Client(2);
#endif
  }
}
