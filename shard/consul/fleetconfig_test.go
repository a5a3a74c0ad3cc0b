package consul_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// TestConfigRewrittenUnderARunningFleet: an operator rewrites or deletes
// P/config while a worker runs. The worker's coordinator keeps the config
// it was configured with: its snapshots still list every shard key it
// holds, report the stored config as a problem naming both, and its
// Acquire of its own shards still works. A worker starting with the
// original config is refused, naming both configs; an operator's view
// (never configured) shows the stored config and says the held keys
// outside it are not its.
func TestConfigRewrittenUnderARunningFleet(t *testing.T) {
	agent := consultest.StartDev(t)
	kv := agent.Client(t).KV()
	runs := shard.Config{Shards: 16}.Normalize()

	for _, tt := range []struct {
		name    string
		rewrite func(t *testing.T, key string)
		problem []string // in the worker's problem about P/config
		refused []string // in a starting worker's ErrConfigMismatch; nil: it starts
		view    []string // in an operator's view's problems; nil: none expected
	}{
		{
			name:    "another shard count",
			rewrite: put(kv, `{"shards":8,"name":"stream/shard"}`),
			problem: []string{`stored config {shards 8, name "stream/shard"} differs from the one this fleet runs {shards 16, name "stream/shard"}`, "workers that restart will refuse to start", `consul kv put`},
			refused: []string{"8 shards", "16 shards"},
			view:    []string{`8 shard keys outside the stored config {shards 8, name "stream/shard"} are held (stream/shard-008 … stream/shard-015)`},
		},
		{
			name:    "another name",
			rewrite: put(kv, `{"shards":16,"name":"orders"}`),
			problem: []string{`stored config {shards 16, name "orders"} differs from the one this fleet runs {shards 16, name "stream/shard"}`},
			refused: []string{`"orders"`, `"stream/shard"`},
			view:    []string{`16 shard keys outside the stored config {shards 16, name "orders"} are held`},
		},
		{
			name:    "not a config",
			rewrite: put(kv, `sixteen`),
			problem: []string{"malformed config value", `the one this fleet runs {shards 16, name "stream/shard"}`},
			refused: []string{"not a valid config"},
		},
		{
			name: "deleted",
			rewrite: func(t *testing.T, key string) {
				if _, err := kv.Delete(key, nil); err != nil {
					t.Fatal(err)
				}
			},
			problem: []string{`missing; this fleet runs {shards 16, name "stream/shard"}`},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			c := newCoordinator(t, agent, nil)
			if _, err := c.Fleet().Configure(ctx, runs); err != nil {
				t.Fatal(err)
			}
			sid := newSession(t, c, "w", time.Minute, 0)
			first := acquire(t, c, sid, runs.IDs()...)
			before := snapshot(t, c)
			if len(before.Problems) != 0 {
				t.Fatalf("problems before the rewrite: %q", before.Problems)
			}

			tt.rewrite(t, c.Prefix()+"/config")
			snap, err := c.Fleet().Watch(ctx, before.Index) // a running watch wakes for it
			if err != nil {
				t.Fatal(err)
			}
			if snap.Config == nil || !snap.Config.Same(runs) {
				t.Errorf("snapshot config = %+v, want the one the fleet runs, %+v", snap.Config, runs)
			}
			if len(snap.Shards) != runs.Shards {
				t.Errorf("snapshot lists %d shard keys, want all %d the worker holds; problems %q", len(snap.Shards), runs.Shards, snap.Problems)
			}
			for _, st := range snap.Shards {
				if st.Session != sid {
					t.Errorf("%s held by %q, want %q", st.Shard, st.Session, sid)
				}
			}
			requireProblem(t, snap.Problems, c.Prefix()+"/config: ", tt.problem)

			again, err := c.Locks().Acquire(ctx, sid, wantOf(runs.IDs()...))
			if err != nil || len(again) != runs.Shards {
				t.Fatalf("Acquire of its own %d shards after the rewrite = %d claims, %v", runs.Shards, len(again), err)
			}
			last := runs.IDs()[runs.Shards-1]
			if err := c.Locks().Release(ctx, sid, shard.ShardLocks([]shard.ID{last}), shard.ReasonRebalance); err != nil {
				t.Fatal(err)
			}
			if got := acquire(t, c, sid, last); got[last] <= first[last] {
				t.Fatalf("re-acquiring %s after the rewrite = %v, want a token above %d", last, got, first[last])
			}

			view := snapshot(t, newCoordinator(t, agent, func(cfg *consul.Config) { cfg.Prefix = c.Prefix() }))
			if tt.view != nil {
				requireProblem(t, view.Problems, c.Prefix()+"/config: ", tt.view)
			}

			_, err = newCoordinator(t, agent, func(cfg *consul.Config) { cfg.Prefix = c.Prefix() }).Fleet().Configure(ctx, runs)
			if tt.refused == nil {
				if err != nil {
					t.Fatalf("a worker starting after P/config was deleted: %v, want it to store its config", err)
				}
				if s := snapshot(t, c); len(s.Problems) != 0 {
					t.Fatalf("problems once P/config is back: %q", s.Problems)
				}
				return
			}
			if !errors.Is(err, shard.ErrConfigMismatch) {
				t.Fatalf("a worker starting with the fleet's config = %v, want ErrConfigMismatch", err)
			}
			for _, w := range tt.refused {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not name %s", err, w)
				}
			}
		})
	}
}

func put(kv *api.KV, value string) func(t *testing.T, key string) {
	return func(t *testing.T, key string) {
		t.Helper()
		if _, err := kv.Put(&api.KVPair{Key: key, Value: []byte(value)}, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// requireProblem fails unless one problem starts with prefix and holds
// every part.
func requireProblem(t *testing.T, problems []string, prefix string, parts []string) {
	t.Helper()
	for _, p := range problems {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		for _, w := range parts {
			if !strings.Contains(p, w) {
				t.Errorf("problem %q does not say %q", p, w)
			}
		}
		return
	}
	t.Errorf("no problem starting %q among %q", prefix, problems)
}

// TestConfigProtocols: a P/config written by hand without a protocol is
// this build's: an operator's view shows it so and a worker joins it. One
// that names another protocol refuses a worker of this build, naming both.
// A fleet of this build whose P/config is rewritten to another protocol
// reports it, naming both.
func TestConfigProtocols(t *testing.T) {
	agent := consultest.StartDev(t)
	ctx := t.Context()
	kv := agent.Client(t).KV()

	bare := newCoordinator(t, agent, nil)
	if _, err := kv.Put(&api.KVPair{Key: bare.Prefix() + "/config", Value: []byte(`{"shards":8,"name":"stream/shard"}`)}, nil); err != nil {
		t.Fatal(err)
	}
	if snap := snapshot(t, bare); snap.Config == nil || snap.Config.Protocol != shard.Protocol {
		t.Fatalf("an operator's view of a config without a protocol: %+v, want protocol %d", snap.Config, shard.Protocol)
	}
	if _, err := bare.Fleet().Configure(ctx, shard.Config{Shards: 8}); err != nil {
		t.Fatalf("Configure on a config written without a protocol: %v, want it joined", err)
	}

	old := []byte(`{"shards":8,"name":"stream/shard","protocol":2}`)
	view := newCoordinator(t, agent, nil)
	if _, err := kv.Put(&api.KVPair{Key: view.Prefix() + "/config", Value: old}, nil); err != nil {
		t.Fatal(err)
	}
	worker := newCoordinator(t, agent, func(cfg *consul.Config) { cfg.Prefix = view.Prefix() })
	got, err := worker.Fleet().Configure(ctx, shard.Config{Shards: 8})
	if !errors.Is(err, shard.ErrConfigMismatch) || got.Protocol != 2 {
		t.Fatalf("Configure on a protocol 2 fleet = %+v, %v; want its config and ErrConfigMismatch", got, err)
	}
	for _, part := range []string{"protocol 2", fmt.Sprintf("protocol %d", shard.Protocol), "no mixed fleets"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("%q does not say %q", err, part)
		}
	}

	running := newCoordinator(t, agent, nil)
	if _, err := running.Fleet().Configure(ctx, shard.Config{Shards: 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(&api.KVPair{Key: running.Prefix() + "/config", Value: old}, nil); err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, running)
	want := fmt.Sprintf("written by protocol 2; this fleet runs protocol %d", shard.Protocol)
	if !slices.ContainsFunc(snap.Problems, func(p string) bool { return strings.Contains(p, want) }) {
		t.Fatalf("problems %q after P/config was rewritten to protocol 2, want one saying %q", snap.Problems, want)
	}
	if snap.Config == nil || snap.Config.Protocol != shard.Protocol {
		t.Fatalf("the running fleet's config became %+v, want it kept", snap.Config)
	}
}

// TestGenerationOfAConfigDeletedUnderTheFleet: once the fleet's
// generation was raised, a P/config deleted under a running worker is not
// replaced by a generation the coordinator remembers: its next lock is in
// generation 0 again (below the store's floors: refused until an operator
// recovers), the config Configure writes again says 0, and the restore
// hint the coordinator reports names the generation it saw. A
// hand-written generation above the highest is refused before anything
// is locked.
func TestGenerationOfAConfigDeletedUnderTheFleet(t *testing.T) {
	agent := consultest.StartDev(t)
	kv := agent.Client(t).KV()
	var prefix string
	c := newCoordinator(t, agent, func(cfg *consul.Config) { prefix = cfg.Prefix })
	ctx := t.Context()
	cfg, err := c.Fleet().Configure(ctx, shard.Config{Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fleet().RaiseGeneration(ctx, 2); err != nil {
		t.Fatal(err)
	}
	sid := newSession(t, c, "w1", time.Minute, 0)
	ids := cfg.IDs()
	if tok := acquire(t, c, sid, ids[0])[ids[0]]; tok.Generation() != 2 {
		t.Fatalf("token %d after the raise is of generation %d, want 2", tok, tok.Generation())
	}
	key := prefix + "/config"
	if _, err := kv.Delete(key, nil); err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, c)
	if !slices.ContainsFunc(snap.Problems, func(p string) bool { return strings.Contains(p, `"generation":2`) }) {
		t.Errorf("problems %q: want the restore hint with the generation the fleet ran, 2", snap.Problems)
	}
	if tok := acquire(t, c, sid, ids[1])[ids[1]]; tok.Generation() != 0 {
		t.Errorf("token %d with P/config deleted is of generation %d, want 0: no generation is carried over", tok, tok.Generation())
	}
	if again, err := c.Fleet().Configure(ctx, shard.Config{Shards: 4}); err != nil || again.Generation != 0 {
		t.Errorf("Configure after the delete = %+v, %v; want the config written again at generation 0", again, err)
	}
	if _, err := kv.Put(&api.KVPair{Key: key, Value: []byte(`{"shards":4,"name":"stream/shard","protocol":3,"generation":99999999}`)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Locks().Acquire(ctx, sid, wantOf(ids[3])); !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), "99999999") {
		t.Errorf("Acquire with a generation above the highest = %v, want ErrInvalidArgument naming it", err)
	}
}
