package consul

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/shard"
)

// minGCWait keeps a watch waiting for a member's grace to end from turning
// into a busy loop of tiny blocking queries.
const minGCWait = 100 * time.Millisecond

// Watch is one blocking query on the fleet's prefix (the names one level
// below "P/", with WaitIndex after) and, once it moves, a read of the
// fleet's keys in two parts (listFleet: the locks of P/shards only when
// they changed), decoded into a snapshot. Index is Consul's
// X-Consul-Index for the prefix.
//
// Blocking-query rules: after 0 returns at once; a query that times out
// with the index unchanged is asked again, so Watch never returns an
// unchanged index; an index lower than after (Consul state reset, or a
// tombstone reap) is returned as is, and shard.NextIndex turns it into a
// restart from 0. Unlike the embedded coordinator, an after ahead of
// Consul's index blocks until something changes or WatchWait passes.
//
// Keys under the prefix that are not the fleet's (foreign keys, malformed
// values, shards outside the config) are listed in Snapshot.Problems and
// never become members, owners or assignments (a foreign tree beside the
// fleet's, P/x/…, is named once as "P/x/", its keys unread); a shard key or P/assignor
// with a malformed value is still shown with its lock holder and token
// (epoch), because the lock is real.
// Snapshot.Config is the config Configure settled, once it has; a P/config
// that differs from it, cannot be read or is missing is a problem naming
// both, never adopted. Before Configure (an operator's view) it is the
// stored config (see fleetconfig.go).
// P/offsets/ belongs to the offsets store and P/history to History: Watch
// reads neither.
//
// Dead member keys (no session) are shown with an empty Session, and
// deleted by Watch itself once it has seen them dead for the member grace,
// with a check-and-set on their ModifyIndex so that a worker that joined
// again in between is never deleted. While such a deletion is pending, the
// blocking query waits no longer than until it is due.
//
// A failure wraps shard.ErrUnavailable (or ErrPermissionDenied); the caller
// backs off and retries.
func (f fleet) Watch(ctx context.Context, after uint64) (shard.Snapshot, error) {
	c := f.c
	for {
		if err := ctxErr(ctx); err != nil {
			return shard.Snapshot{}, err
		}
		wait := c.cfg.WatchWait
		if due, ok := c.nextCollection(); ok {
			wait = min(wait, max(time.Until(due), minGCWait))
		}
		l, err := c.listFleet(ctx, after, wait)
		if err != nil {
			return shard.Snapshot{}, err
		}
		if after != 0 && l.index == after {
			// The blocking query timed out: nothing changed, but a dead
			// member's grace may have ended (the wait was bounded by it).
			if due, ok := c.nextCollection(); ok && !now().Before(due) {
				rest, err := c.readControl(ctx)
				if err != nil {
					return shard.Snapshot{}, err
				}
				c.collectDead(ctx, rest)
			}
			continue
		}
		pairs := l.pairs
		snap := c.decode(pairs, l.index)
		for _, name := range l.foreign {
			snap.Problems = append(snap.Problems, fmt.Sprintf("%s: foreign key under the fleet prefix; ignored", name))
		}
		if l.filtered {
			// Consul hides keys the token may not read instead of refusing
			// the list.
			snap.Problems = append(snap.Problems, fmt.Sprintf("%s: some keys were hidden by ACLs: the token needs key_prefix %q read (and write to take part)",
				c.prefix, c.prefix))
		}
		if c.configPair(pairs) == nil {
			// A list hiding everything looks like an empty fleet (1.14 sets
			// no filtered header on its 404). A fleet is configured before
			// anything else, so a missing config is rare and worth one read
			// of the key, which Consul does refuse with 403.
			if err := c.probeConfig(ctx); err != nil {
				return shard.Snapshot{}, err
			}
		}
		c.collectDead(ctx, pairs)
		return snap, nil
	}
}

// blockingQuery runs query once as a blocking query (WaitIndex after,
// WaitTime wait) and turns its error into one of the package's. Consul
// answers a blocking query within wait plus up to wait/16 of jitter; past
// that (and RequestTimeout for the round trip) the agent or the path to it
// is stuck, which TCP alone may take many minutes to notice, so the query
// is bounded there.
func (c *Coordinator) blockingQuery(ctx context.Context, op string, after uint64, wait time.Duration, query func(context.Context, consulkv.Query) error) error {
	bound := wait + wait/16 + c.cfg.RequestTimeout
	qctx, cancel := consulkv.WithRequestTimeout(ctx, bound)
	defer cancel()
	err := query(qctx, consulkv.Query{WaitIndex: after, WaitTime: wait})
	if _, ok := consulkv.TimedOut(qctx); err != nil && ok {
		return fmt.Errorf("%w: consul %s at %s: no answer within %v (a blocking query of %v, its jitter, and the request timeout): %w",
			shard.ErrUnavailable, op, c.cfg.Address, bound, wait, err)
	}
	return c.fail(qctx, op, err)
}

// watchKey is one blocking get of key (WaitIndex after, WaitTime
// WatchWait), bounded as blockingQuery bounds it: the key (nil when it is
// missing) and Consul's X-Consul-Index for it.
func (c *Coordinator) watchKey(ctx context.Context, op, key string, after uint64) (*api.KVPair, uint64, error) {
	var (
		kv   *api.KVPair
		meta consulkv.Meta
	)
	err := c.blockingQuery(ctx, op, after, c.cfg.WatchWait, func(ctx context.Context, q consulkv.Query) (err error) {
		kv, meta, err = c.kv.Get(ctx, key, q)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return kv, meta.LastIndex, nil
}

// decode turns the prefix's keys into a snapshot. It never fails: what it
// cannot read becomes a problem.
func (c *Coordinator) decode(pairs api.KVPairs, index uint64) shard.Snapshot {
	snap := shard.Snapshot{Index: index, Members: []shard.MemberState{}, Shards: []shard.ShardState{}, Assignments: map[string]shard.Assignment{}}
	problem := func(key, format string, args ...any) {
		snap.Problems = append(snap.Problems, fmt.Sprintf("%s: %s", key, fmt.Sprintf(format, args...)))
	}

	// The config first: it says which shard keys are the fleet's.
	fleet := c.fleetShards()
	stored := c.configPair(pairs)
	set, bad := c.listingShards(fleet, stored)
	if bad != "" {
		problem(c.configKey(), "%s", bad)
	}
	if set != nil {
		cfg := set.cfg
		if bad == "" { // the stored config is the one the fleet runs: its generation is the fleet's
			cfg.Generation = generationOf(stored).gen
			if cfg.Generation <= shard.MaxGeneration {
				c.noteGeneration(cfg.Generation)
			}
		}
		snap.Config = &cfg
	}
	var outside []shard.ID                         // held shard keys outside the stored config
	reports := map[string]map[string]*api.KVPair{} // report keys, by kind and worker
	// assignment keys and the assignor's memories, by worker: read as pairs
	// once every key is seen
	assigned, memories := map[string]*api.KVPair{}, map[string]*api.KVPair{}
	// Shard values decoded by an earlier listing are reused while their
	// key's ModifyIndex is unchanged (a value is only ever rewritten with
	// its index): most of a large fleet's listing repeats unchanged.
	c.mu.Lock()
	prev := c.owners
	c.mu.Unlock()
	owners := make(map[string]decodedOwner, len(prev))
	defer func() {
		c.mu.Lock()
		c.owners = owners
		c.mu.Unlock()
	}()

	for _, kv := range pairs {
		rel := strings.TrimPrefix(kv.Key, c.prefix)
		switch {
		case kv.Key == c.configKey():
		case kv.Key == c.assignorKey():
			snap.Assignor = decodeLock(kv)
			if snap.Assignor.Problem != "" {
				snap.Problems = append(snap.Problems, snap.Assignor.Problem)
			}
		case kv.Key == c.freezeKey():
			var bad string
			if snap.Freeze, bad = decodeFreeze(kv); bad != "" {
				snap.Problems = append(snap.Problems, bad)
			}
		case kv.Key == c.policyKey():
			var bad string
			if snap.Policy, bad = decodePolicy(kv); bad != "" {
				snap.Problems = append(snap.Problems, bad)
			}
		case strings.HasPrefix(rel, "assign/"):
			worker, part, ok := strings.Cut(strings.TrimPrefix(rel, "assign/"), "/")
			switch {
			case worker == "" || !ok || (part != "shards" && part != "memory"):
				problem(kv.Key, "not an assignment key (assign/<worker>/shards or assign/<worker>/memory)")
			case part == "shards":
				assigned[worker] = kv
			default:
				memories[worker] = kv
			}
		case strings.HasPrefix(rel, "offsets/"), rel == "history":
		case c.isReportKey(kv.Key):
			kind, worker, _ := c.reportOf(kv.Key)
			if worker == "" {
				problem(kv.Key, "%s key without a worker id", kind)
				continue
			}
			if reports[kind] == nil {
				reports[kind] = map[string]*api.KVPair{}
			}
			reports[kind][worker] = kv
		case strings.HasPrefix(rel, "members/"):
			id := strings.TrimPrefix(rel, "members/")
			if id == "" {
				problem(kv.Key, "member key without an id")
				continue
			}
			m, bad := decodeMember(id, kv)
			if bad != "" {
				problem(kv.Key, "%s", bad)
				continue
			}
			snap.Members = append(snap.Members, m)
		case strings.HasPrefix(rel, "shards/"):
			id := shard.ID(strings.TrimPrefix(rel, "shards/"))
			if id == "" {
				problem(kv.Key, "shard key without a shard id")
				continue
			}
			if set != nil && !set.ids[id] {
				problem(kv.Key, "not one of the fleet's shards; ignored")
				if kv.Session != "" {
					outside = append(outside, id)
				}
				continue
			}
			st := shard.ShardState{Shard: id, Session: shard.SessionID(kv.Session)}
			o, ok := prev[kv.Key]
			if !ok || o.index != kv.ModifyIndex {
				o = decodedOwner{index: kv.ModifyIndex}
				if err := json.Unmarshal(kv.Value, &o.owner); err != nil {
					o.owner, o.err = shard.Owner{}, err
				}
			}
			owners[kv.Key] = o
			st.Owner, st.Token = o.owner, o.owner.TokenAt(kv.ModifyIndex)
			if o.err != nil {
				problem(kv.Key, "malformed shard value (want JSON shard.Owner): %v; lock holder %q kept, value ignored", o.err, kv.Session)
			}
			snap.Shards = append(snap.Shards, st)
		default:
			problem(kv.Key, "foreign key under the fleet prefix; ignored")
		}
	}
	if len(outside) > 0 && fleet == nil {
		// First, as the cause of the per-key problems.
		snap.Problems = slices.Insert(snap.Problems, 0, c.heldOutside(set.cfg, outside))
	}
	for _, worker := range slices.Sorted(maps.Keys(assigned)) {
		a, bad := decodeAssignment(set, assigned[worker], memories[worker])
		if bad != "" {
			snap.Problems = append(snap.Problems, bad)
			continue
		}
		snap.Assignments[worker] = a
	}
	c.fillReports(&snap, set, reports)
	slices.SortFunc(snap.Members, func(a, b shard.MemberState) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(snap.Shards, func(a, b shard.ShardState) int { return cmp.Compare(a.Shard, b.Shard) })
	return snap
}

// decodedOwner is a shard key's value as decoded at ModifyIndex index.
// Profiled in a 100-worker × 10,000-shard cold start on one machine,
// decoding every value of every listing again was an eighth of the
// workers' CPU.
type decodedOwner struct {
	index uint64
	owner shard.Owner
	err   error // the value was not a shard.Owner
}

// deadMember is a member key seen without a session at ModifyIndex index,
// and when it is due for deletion (on this coordinator's clock).
type deadMember struct {
	index uint64
	due   time.Time
}

// gcRetry is how long a failed deletion of a dead member waits before the
// next attempt, so that a refusal (ACL) does not become a busy loop.
const gcRetry = 10 * time.Second

// collectDead updates the dead-member bookkeeping from a listing and deletes
// the keys whose grace has passed, each with a CAS on the ModifyIndex it was
// seen dead at, in one transaction with its worker's loads key (a worker
// that joined again in between moved the index, and the transaction is
// rolled back whole). Grace counts from when this coordinator first saw
// the key dead, so with several watchers the first to see it decides.
// Loads keys held by no session whose worker has no member key (an
// operator deleted it) are deleted at once, with a CAS too. Failures are
// ignored: the next watch tries again.
func (c *Coordinator) collectDead(ctx context.Context, pairs api.KVPairs) {
	t := now()
	var due []*api.KVPair
	c.collectOrphanReports(ctx, pairs)
	c.mu.Lock()
	seen := make(map[string]bool)
	for _, kv := range pairs {
		if !c.isMemberKey(kv.Key) || kv.Session != "" {
			continue
		}
		seen[kv.Key] = true
		d, ok := c.dead[kv.Key]
		if !ok || d.index != kv.ModifyIndex {
			d = deadMember{index: kv.ModifyIndex, due: t.Add(max(c.cfg.MemberGrace, 0))}
			if until := rejoinUntil(kv); until.After(d.due) {
				d.due = until // the worker said it will be back: the assignor keeps its shards until then
			}
			c.dead[kv.Key] = d
		}
		if !t.Before(d.due) {
			due = append(due, &api.KVPair{Key: kv.Key, ModifyIndex: d.index})
		}
	}
	for k := range c.dead {
		if !seen[k] {
			delete(c.dead, k)
		}
	}
	c.mu.Unlock()

	for _, kv := range due {
		octx, cancel := c.opCtx(ctx)
		worker := strings.TrimPrefix(kv.Key, c.prefix+"members/")
		ops := api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVDeleteCAS, Key: kv.Key, Index: kv.ModifyIndex}}}
		for _, k := range c.reportKeys(worker) {
			ops = append(ops, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: k}})
		}
		_, _, err := c.kv.Txn(octx, ops)
		cancel()
		c.mu.Lock()
		if err == nil {
			// Deleted, or changed since (re-joined or deleted by someone
			// else): either way the next listing tells.
			delete(c.dead, kv.Key)
		} else if d, ok := c.dead[kv.Key]; ok {
			d.due = t.Add(gcRetry)
			c.dead[kv.Key] = d
		}
		c.mu.Unlock()
	}
}

// collectOrphanReports deletes the report keys of pairs that no session
// holds and whose worker has no member key in pairs, each with a CAS on
// the ModifyIndex listed: a worker that joined since locked its report key
// again and keeps it.
func (c *Coordinator) collectOrphanReports(ctx context.Context, pairs api.KVPairs) {
	members := map[string]bool{}
	for _, kv := range pairs {
		if c.isMemberKey(kv.Key) {
			members[strings.TrimPrefix(kv.Key, c.prefix+"members/")] = true
		}
	}
	for _, kv := range pairs {
		_, worker, report := c.reportOf(kv.Key)
		if !report || kv.Session != "" || members[worker] {
			continue
		}
		octx, cancel := c.opCtx(ctx)
		_, _ = c.kv.DeleteCAS(octx, &api.KVPair{Key: kv.Key, ModifyIndex: kv.ModifyIndex})
		cancel()
	}
}

// nextCollection returns when the earliest pending dead-member deletion is
// due.
func (c *Coordinator) nextCollection() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Time
	found := false
	for _, d := range c.dead {
		if !found || d.due.Before(next) {
			next, found = d.due, true
		}
	}
	return next, found
}

// probeConfig reads P/config to tell "not configured yet" from "may not
// read": only the error matters.
func (c *Coordinator) probeConfig(ctx context.Context) error {
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	_, _, err := c.kv.Get(octx, c.configKey(), consulkv.Query{})
	return c.fail(octx, "watch (read config)", err)
}
