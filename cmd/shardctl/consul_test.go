package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/internal/harness/pgtest"
	offconsul "github.com/shardlease/shardlease/offsets/consul"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/worker"
)

// TestAgainstConsul runs shardctl against a real fleet: three workers, each
// with its own Consul coordinator as separate processes would have, on a
// dev agent with ACLs on. status -json lists every shard with its owner and
// token (the lock key's ModifyIndex); drain and release work on sessions
// shardctl did not create; a token that may not read, or may not write,
// gets one line saying which permission is missing.
func TestAgainstConsul(t *testing.T) {
	agent := consultest.StartDev(t, consultest.WithACL())
	prefix := "shardctl-test/" + randomName()
	const shards = 12
	newCoord := func() *consul.Coordinator {
		cfg := consul.DefaultConfig()
		cfg.Address, cfg.Scheme, cfg.Token, cfg.TokenFile, cfg.Prefix = agent.HTTPAddr, "http", agent.Token, "", prefix
		c, err := consul.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	for _, id := range []string{"w1", "w2", "w3"} {
		coord := newCoord()
		store, err := offconsul.New(offconsul.Config{Connection: coord.Connection(), Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		w, err := worker.New(worker.Config{
			ID: id, Version: "v2.0.0", Fleet: shard.Config{Shards: shards}, Coordinator: coord, Offsets: store,
			Policy:  shard.LeasePolicy{TTL: 3 * time.Second, RenewEvery: 500 * time.Millisecond, PauseBudget: time.Second},
			Handler: worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error { <-ctx.Done(); return nil }),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	observer := newCoord()
	waitFor(t, 30*time.Second, "every shard owned, 4 each", func() (bool, string) {
		f := view(t, observer, prefix)
		return f.Summary.Owned == shards && f.Summary.Imbalance == 0 && f.Summary.Live == 3, headline(f)
	})

	ctl := func(stdin string, args ...string) (int, string, string) {
		a, out, errOut := newApp(stdin)
		args = append(args[:1:1], append([]string{"-consul", agent.HTTPAddr, "-consul-token", agent.Token, "-prefix", prefix}, args[1:]...)...)
		code := a.run(t.Context(), args)
		return code, out.String(), errOut.String()
	}

	// status -json: every shard with its owner and token; with -offsets
	// consul, the floor each owner fenced with its token in Consul KV.
	// An owner fences after it has taken the lock, so a shard owned may
	// not show its floor yet: wait until every one does.
	var (
		code        int
		out, errOut string
		f           fleetview.Fleet
	)
	waitFor(t, 30*time.Second, "floor fenced with its owner's token on every shard", func() (bool, string) {
		code, out, errOut = ctl("", "status", "-json", "-offsets", "consul")
		if code != 0 {
			t.Fatalf("status -json: exit %d: %s", code, errOut)
		}
		f = fleetview.Fleet{}
		if err := json.Unmarshal([]byte(out), &f); err != nil {
			t.Fatalf("status -json: %v\n%s", err, out)
		}
		if !f.HasOffsets {
			return false, "status -json -offsets consul shows no offsets"
		}
		for _, s := range f.Shards {
			if s.Floor == nil {
				return false, fmt.Sprintf("%s: no floor, want the owner's token %d fenced in Consul KV", s.ID, s.Token)
			}
			if *s.Floor != s.Token {
				return false, fmt.Sprintf("%s: floor %d, want the owner's token %d fenced in Consul KV", s.ID, *s.Floor, s.Token)
			}
		}
		return true, ""
	})
	kv := agent.Client(t).KV()
	for _, s := range f.Shards {
		pair, _, err := kv.Get(prefix+"/shards/"+string(s.ID), nil)
		if err != nil || pair == nil {
			t.Fatalf("reading %s: %v", s.ID, err)
		}
		if s.State != fleetview.ShardOwned || s.Owner == "" || s.Token != shard.Token(pair.ModifyIndex) {
			t.Errorf("%s: %s by %q with token %d; Consul says token %d", s.ID, s.State, s.Owner, s.Token, pair.ModifyIndex)
		}
	}
	if len(f.Shards) != shards || len(f.Workers) != 3 {
		t.Fatalf("status -json lists %d shards and %d workers, want %d and 3", len(f.Shards), len(f.Workers), shards)
	}
	if code, out, _ := ctl("", "status"); code != 0 || !strings.Contains(out, "owned 12/12 · workers 3 live · imbalance 0") {
		t.Errorf("status: exit %d\n%s", code, out)
	}
	// -offsets takes a PostgreSQL store too; one the workers do not use
	// (they fence in Consul KV) holds no fence of theirs, and status says
	// it is not the fleet's.
	if code, out, errOut := ctl("", "status", "-offsets", pgtest.Start(t).NewDatabase(t)); code != 0 ||
		!strings.Contains(out, "WARNING: the offsets store holds no fence for any of the 12 owned shards") || !strings.Contains(out, "OFFSET") {
		t.Errorf("status -offsets postgres://…: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := ctl("", "status", "-offsets", "consul"); code != 0 || strings.Contains(out, "WARNING: the offsets store") {
		t.Errorf("status -offsets consul (the fleet's store) warns:\n%s", out)
	}

	// cordon and freeze are stored in Consul with who set them, read back
	// by status, and lifted.
	if code, out, errOut := ctl("", "cordon", "--by", "alice", "w3"); code != 0 || !strings.Contains(out, "w3 cordoned by alice") {
		t.Fatalf("cordon: exit %d: %s%s", code, out, errOut)
	}
	if code, out, errOut := ctl("", "freeze", "--by", "carol", "--reason", "maintenance"); code != 0 || !strings.Contains(out, "frozen by carol") {
		t.Fatalf("freeze: exit %d: %s%s", code, out, errOut)
	}
	if code, out, _ := ctl("", "status", "-no-shards"); code != 0 || !strings.Contains(out, "FROZEN by carol since") || !strings.Contains(out, "w3 cordoned by alice since") {
		t.Errorf("status after the cordon and the freeze: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"uncordon", "w3"}, {"unfreeze"}} {
		if code, _, errOut := ctl("", args...); code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], code, errOut)
		}
	}

	// drain rewrites the member key under the worker's own session.
	code, out, errOut = ctl("", "drain", "-timeout", "60s", "w2")
	t.Logf("drain:\n%s", out)
	if code != 0 || !strings.Contains(out, "w2 drained in") {
		t.Fatalf("drain: exit %d: %s", code, errOut)
	}
	if f := view(t, observer, prefix); f.Summary.Owned != shards || f.Summary.Draining != 1 {
		t.Fatalf("after the drain: %s", headline(f))
	}

	// release unlocks with the owner's session; the next owner fences above.
	before := view(t, observer, prefix).Shards[0]
	code, out, errOut = ctl("", "release", "-yes", "0")
	t.Logf("release:\n%s", out)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("released stream/shard-000 (was %s, token %d)", before.Owner, before.Token)) {
		t.Fatalf("release: exit %d: %s", code, errOut)
	}
	if after := view(t, observer, prefix).Shards[0]; after.State != fleetview.ShardOwned || after.Token <= before.Token {
		t.Errorf("after release: %+v, want owned again with a token above %d", after, before.Token)
	}

	// delete-shard removes a key a hand edit left outside the config.
	for _, k := range []string{"typo", "typo2"} {
		if _, err := kv.Put(&api.KVPair{Key: prefix + "/shards/" + k, Value: []byte("x")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut = ctl("", "delete-shard", "typo")
	if code != 0 || !strings.Contains(out, "deleted "+prefix+"/shards/typo, which was not one of the fleet's shards") {
		t.Fatalf("delete-shard: exit %d: %s%s", code, out, errOut)
	}
	if pair, _, err := kv.Get(prefix+"/shards/typo", nil); err != nil || pair != nil {
		t.Errorf("after delete-shard the key is %+v, %v", pair, err)
	}

	// Tokens that may not read, and that may read but not write.
	acl := agent.Client(t).ACL()
	token := func(rules string) string {
		pol, _, err := acl.PolicyCreate(&api.ACLPolicy{Name: "p-" + randomName(), Rules: rules}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err := acl.TokenCreate(&api.ACLToken{Policies: []*api.ACLTokenPolicyLink{{ID: pol.ID}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tok.SecretID
	}
	noRead := token(`key_prefix "elsewhere/" { policy = "read" }`)
	readOnly := token(`key_prefix "` + prefix + `/" { policy = "read" }`)
	for _, tc := range []struct {
		tok  string
		args []string
		want string
	}{
		{noRead, []string{"status"}, "cannot read the fleet"},
		{noRead, []string{"watch"}, "cannot read the fleet"},
		{"", []string{"status", "-json"}, "cannot read the fleet"},
		{readOnly, []string{"drain", "w1"}, `cannot write the fleet "` + prefix + `"; this command needs key_prefix "` + prefix + `/" write`},
		{readOnly, []string{"release", "-yes", "1"}, "cannot write the fleet"},
		{readOnly, []string{"delete-shard", "typo2"}, "cannot write the fleet"},
	} {
		a, out, errOut := newApp("")
		args := append(tc.args[:1:1], append([]string{"-consul", agent.HTTPAddr, "-consul-token", tc.tok, "-prefix", prefix}, tc.args[1:]...)...)
		code := a.run(t.Context(), args)
		t.Logf("%v: %s", tc.args, errOut)
		wantOneLineError(t, code, out.String(), errOut.String(), 1, "permission denied by Consul at "+agent.HTTPAddr, tc.want)
	}
	if code, _, _ := ctl("", "status"); code != 0 {
		t.Errorf("the management token stopped working")
	}
}

func view(t *testing.T, c shard.Coordinator, name string) fleetview.Fleet {
	t.Helper()
	s, err := c.Fleet().Watch(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return fleetview.Build(fleetview.Input{Name: name, Snapshot: s, Now: time.Now()})
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		done, state := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v: %s", what, within, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func randomName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
