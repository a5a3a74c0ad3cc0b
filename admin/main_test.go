package admin_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is one fleet on one coordinator, acted on by an Operator, with the
// tests playing its workers by hand: sessions, member keys and locks.
type env struct {
	t     *testing.T
	coord shard.Coordinator
	op    admin.Operator
	keys  admin.ShardKeyDeleter
	// put writes a raw key under the prefix, as `consul kv put` would;
	// nil where the coordinator has no raw keys (the embedded one).
	put      func(rel, value string)
	sessions map[string]shard.SessionID
}

// rules is every case, each run on a fresh fleet of every coordinator.
var rules = map[string]func(t *testing.T, e *env){
	"DrainRefusals":     drainRefusals,
	"DrainAndUndrain":   drainAndUndrain,
	"FollowDrain":       followDrain,
	"FollowDrainEnds":   followDrainEnds,
	"CordonRefusals":    cordonRefusals,
	"CordonAndUncordon": cordonAndUncordon,
	"FreezeAndUnfreeze": freezeAndUnfreeze,
	"ResolveShard":      resolveShard,
	"Release":           release,
	"ReleaseRefusals":   releaseRefusals,
	"DeleteShardKey":    deleteShardKey,
	"Recover":           recoverRule,
	"SetRules":          setRulesRule,
	"SetStandbys":       setStandbysRule,
	"Reshard":           reshardRule,
	"ZoneOperations":    zoneOperations,
	"ZoneWithADeadOne":  zoneWithAWorkerDown,
}

// rawKeyRules need keys written by hand outside the fleet's config, which
// only Consul has (the embedded coordinator stores no raw keys): they run
// on Consul alone.
var rawKeyRules = map[string]func(t *testing.T, e *env){
	"DeleteKeyOutsideConfig":            deleteKeyOutsideConfig,
	"DeleteRefusedWhileOutsideKeysHeld": deleteRefusedWhileOutsideKeysHeld,
}

// TestRulesMemory runs the rules on the embedded coordinator.
func TestRulesMemory(t *testing.T) {
	for name, rule := range rules {
		t.Run(name, func(t *testing.T) {
			c := memory.New(memory.WithMemberGrace(time.Hour))
			rule(t, newEnv(t, c, c, nil))
		})
	}
}

// TestRulesConsul runs the same rules, and those needing raw keys, on a
// real Consul agent, a fresh prefix per case.
func TestRulesConsul(t *testing.T) {
	agent := consultest.StartDev(t)
	kv := agent.Client(t).KV()
	for name, rule := range merged(rules, rawKeyRules) {
		t.Run(name, func(t *testing.T) {
			cfg := consul.DefaultConfig()
			cfg.Address, cfg.Scheme, cfg.Token, cfg.TokenFile = agent.HTTPAddr, "http", agent.Token, ""
			cfg.Prefix, cfg.MemberGrace = "admin-test/"+randomName(), time.Hour
			// The rules are about what is written, not how fast: a starved
			// machine has kept a session's creation waiting over 10 s.
			cfg.RequestTimeout = time.Minute
			open := func() *consul.Coordinator {
				c, err := consul.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				return c
			}
			put := func(rel, value string) {
				t.Helper()
				if _, err := kv.Put(&api.KVPair{Key: cfg.Prefix + "/" + rel, Value: []byte(value)}, nil); err != nil {
					t.Fatal(err)
				}
			}
			// The workers' coordinator runs the config it stored; the
			// operator's, like shardctl's, reads the stored one.
			workers, operator := open(), open()
			e := newEnv(t, workers, operator, put)
			rule(t, e)
		})
	}
}

// newEnv is a fleet whose workers use workers and whose operator uses
// operator (which deletes keys too, when it can).
func newEnv(t *testing.T, workers, operator shard.Coordinator, put func(rel, value string)) *env {
	keys, _ := operator.(admin.ShardKeyDeleter)
	return &env{t: t, coord: workers, op: admin.Operator{Coordinator: operator, Name: "orders"}, keys: keys, put: put, sessions: map[string]shard.SessionID{}}
}

// configure stores a fleet config of n shards and returns its IDs.
func (e *env) configure(n int) []shard.ID {
	e.t.Helper()
	cfg, err := e.coord.Fleet().Configure(e.t.Context(), shard.Config{Shards: n})
	if err != nil {
		e.t.Fatal(err)
	}
	return cfg.IDs()
}

// twoLiveOneDead configures six shards among w1 and w2, with w3 joined
// and stopped (its member key dead), as the refusal cases need.
func (e *env) twoLiveOneDead() []shard.ID {
	e.t.Helper()
	ids := e.configure(6)
	e.join("w1", ids[:2]...)
	e.join("w2", ids[2:4]...)
	e.join("w3", ids[4:]...)
	e.stop("w3")
	return ids
}

// refused fails unless err wraps want and says msg.
func refused(t *testing.T, what string, err, want error, msg string) {
	t.Helper()
	if !errors.Is(err, want) || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: %v, want %v saying %q", what, err, want, msg)
	}
}

// join opens a session for worker and registers it, holding shards.
func (e *env) join(worker string, shards ...shard.ID) shard.SessionID {
	e.t.Helper()
	return e.joinIn("", worker, shards...)
}

// joinIn is join for a worker in zone.
func (e *env) joinIn(zone, worker string, shards ...shard.ID) shard.SessionID {
	e.t.Helper()
	ctx := e.t.Context()
	sid, err := e.coord.Sessions().Create(ctx, shard.SessionSpec{Worker: worker, TTL: time.Minute, LockDelay: time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = e.coord.Sessions().Destroy(context.Background(), sid) })
	if err := e.coord.Members().Join(ctx, sid, shard.Member{ID: worker, Weight: 1, Steps: shard.Steps(), Zone: zone}); err != nil {
		e.t.Fatal(err)
	}
	e.sessions[worker] = sid
	e.acquire(worker, shards...)
	return sid
}

func (e *env) acquire(worker string, shards ...shard.ID) {
	e.t.Helper()
	if len(shards) == 0 {
		return
	}
	want := make([]shard.Acquisition, len(shards))
	for i, id := range shards {
		want[i] = shard.AcquireShard(id, shard.Why{Reason: shard.ReasonInitial})
	}
	claims, err := e.coord.Locks().Acquire(e.t.Context(), e.sessions[worker], want)
	if err != nil || len(claims) != len(shards) {
		e.t.Fatalf("%s acquiring %v: %d claims, %v", worker, shards, len(claims), err)
	}
}

func (e *env) release(worker string, shards ...shard.ID) {
	e.t.Helper()
	if err := e.coord.Locks().Release(e.t.Context(), e.sessions[worker], shard.ShardLocks(shards), shard.ReasonRebalance); err != nil {
		e.t.Fatal(err)
	}
}

// stop ends worker's session: its member key stays, dead.
func (e *env) stop(worker string) {
	e.t.Helper()
	if err := e.coord.Sessions().Destroy(e.t.Context(), e.sessions[worker]); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) snapshot() shard.Snapshot {
	e.t.Helper()
	s, err := e.op.Coordinator.Fleet().Watch(e.t.Context(), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// unchanged fails if the coordinator was written since the listing at
// index before: a refused operation must write nothing.
func (e *env) unchanged(before uint64, what string) {
	e.t.Helper()
	if after := e.snapshot().Index; after != before {
		e.t.Errorf("%s wrote: index %d → %d", what, before, after)
	}
}

func randomName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// merged is the union of the rule sets.
func merged(sets ...map[string]func(t *testing.T, e *env)) map[string]func(t *testing.T, e *env) {
	out := map[string]func(t *testing.T, e *env){}
	for _, set := range sets {
		maps.Copy(out, set)
	}
	return out
}
