package consul

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/shard"
)

// FuzzDecode feeds the snapshot decoder what anyone with write access to
// the fleet's prefix could leave there: any keys, any values, any sessions.
// The decoder must not panic, must account for every key (the config, a
// member, a shard, the assignor, an assignment, an offsets key left to its
// store, or a problem naming the key), and must never let a key it cannot
// read become a member, an owner or an assignment.
//
// keys is newline-separated, relative to the prefix ("!" marks a key
// outside it); values holds one value per key, NUL-separated; sessions one
// session per key, comma-separated.
func FuzzDecode(f *testing.F) {
	owner, _ := json.Marshal(shard.Owner{Worker: "w1", Why: shard.Why{Reason: shard.ReasonInitial}})
	member, _ := json.Marshal(shard.Member{ID: "w1", Weight: 1})
	join := func(vs ...[]byte) []byte { return bytes.Join(vs, []byte{0}) }
	f.Add([]byte(`{"shards":4}`), "members/w1\nshards/stream/shard-001\noffsets/stream/shard-001",
		join(member, owner, []byte(`{"v":1}`)), "s1,s1,", uint64(42))
	f.Add([]byte(`{"shards":4}`), "shards/stream/shard-009\nshards/not-a-shard\nshards/\nmembers/\nforeign\n!elsewhere/x",
		join(owner, owner, owner, member, []byte("hello"), []byte("x")), "s1,,s2,s3,,", uint64(7))
	f.Add([]byte(`not json`), "members/ghost\nmembers/impostor\nshards/stream/shard-000",
		join([]byte("[]"), member, []byte("{overwritten")), "s1,s2,s3", uint64(1))
	f.Add([]byte(`{"shards":0,"name":"/x"}`), "somewhere/deep/in/the/tree", join(owner), "", uint64(0))
	f.Add([]byte(nil), "shards/stream/shard-000\nmembers/w1", join([]byte("null"), []byte("null")), ",", uint64(3))
	assigned, _ := keycodec.EncodeAssignment(shard.Config{Shards: 4}, shard.Assignment{Epoch: 9, Shards: []shard.ID{"stream/shard-001"}})
	f.Add([]byte(`{"shards":4,"protocol":2}`), "assignor\nassign/w1\nassign/w2\nassign/\nassign/w3\nassignors",
		join([]byte(`{"worker":"w1"}`), assigned, []byte(`{"epoch":9,"shards":"0-4"}`), assigned, []byte(`{"epoch":0}`), []byte("x")), "s1,,s2,,,", uint64(12))
	f.Add([]byte(nil), "assignor\nassign/w1", join([]byte(`not json`), assigned), ",", uint64(5))
	f.Fuzz(func(t *testing.T, config []byte, keys string, values []byte, sessions string, index uint64) {
		c, err := New(Config{Address: "127.0.0.1:1", Prefix: "fuzz/fleet"})
		if err != nil {
			t.Fatal(err)
		}
		vals := bytes.Split(values, []byte{0})
		sess := strings.Split(sessions, ",")
		var pairs api.KVPairs
		seen := map[string]bool{}
		if config != nil {
			pairs = append(pairs, &api.KVPair{Key: c.keys.Config(), Value: config, ModifyIndex: 1})
			seen[c.keys.Config()] = true
		}
		for i, k := range strings.Split(keys, "\n") {
			if abs, ok := strings.CutPrefix(k, "!"); ok {
				k = abs
			} else {
				k = c.prefix + k
			}
			if seen[k] { // a listing holds each key once
				continue
			}
			seen[k] = true
			kv := &api.KVPair{Key: k, ModifyIndex: uint64(i) + 2}
			if i < len(vals) {
				kv.Value = vals[i]
			}
			if i < len(sess) {
				kv.Session = sess[i]
			}
			pairs = append(pairs, kv)
		}

		snap := c.decode(pairs, index)

		if snap.Index != index {
			t.Fatalf("index %d, want %d", snap.Index, index)
		}
		problemFor := map[string]bool{}
		for _, p := range snap.Problems {
			named := false
			for k := range seen {
				if strings.HasPrefix(p, k+": ") {
					problemFor[k], named = true, true
				}
			}
			if !named {
				t.Fatalf("problem %q names none of the keys", p)
			}
		}
		if snap.Config != nil {
			if err := snap.Config.Validate(); err != nil {
				t.Fatalf("snapshot config %+v is invalid: %v", *snap.Config, err)
			}
		}
		var known map[shard.ID]bool
		if snap.Config != nil {
			known = map[shard.ID]bool{}
			for _, id := range snap.Config.IDs() {
				known[id] = true
			}
		}
		if !slices.IsSortedFunc(snap.Members, func(a, b shard.MemberState) int { return strings.Compare(a.ID, b.ID) }) ||
			!slices.IsSortedFunc(snap.Shards, func(a, b shard.ShardState) int { return strings.Compare(string(a.Shard), string(b.Shard)) }) {
			t.Fatalf("members or shards not sorted: %+v", snap)
		}
		members := map[string]shard.MemberState{}
		for _, m := range snap.Members {
			kv := findKey(pairs, c.keys.Member(m.ID))
			if kv == nil || m.ID == "" || string(m.Session) != kv.Session {
				t.Fatalf("member %+v does not match a member key with its id and session", m)
			}
			members[m.ID] = m
		}
		shards := map[shard.ID]shard.ShardState{}
		for _, st := range snap.Shards {
			kv := findKey(pairs, c.keys.Shard(st.Shard))
			if kv == nil || st.Shard == "" || string(st.Session) != kv.Session || uint64(st.Token) != kv.ModifyIndex {
				t.Fatalf("shard %+v does not match a shard key with its session and index", st)
			}
			if known != nil && !known[st.Shard] {
				t.Fatalf("shard %s is not one of the config's %d shards", st.Shard, snap.Config.Shards)
			}
			shards[st.Shard] = st
		}
		for _, kv := range pairs {
			rel, under := strings.CutPrefix(kv.Key, c.prefix)
			var accounted bool
			switch {
			case !under:
				accounted = problemFor[kv.Key]
			case kv.Key == c.keys.Config():
				accounted = snap.Config != nil || problemFor[kv.Key]
			case strings.HasPrefix(rel, "offsets/"):
				accounted = !problemFor[kv.Key]
			case strings.HasPrefix(rel, "members/"):
				_, ok := members[strings.TrimPrefix(rel, "members/")]
				accounted = ok != problemFor[kv.Key]
			case strings.HasPrefix(rel, "shards/"):
				_, ok := shards[shard.ID(strings.TrimPrefix(rel, "shards/"))]
				accounted = ok || problemFor[kv.Key] // a held shard with a malformed value is kept and reported
			case kv.Key == c.keys.Assignor():
				// The lock is real whatever the value: always shown.
				k := snap.Assignor
				accounted = k.Index == kv.ModifyIndex && string(k.Session) == kv.Session && (k.Problem != "") == problemFor[kv.Key] &&
					(k.Worker == "" || k.Held() && k.Problem == "")
			case strings.HasPrefix(rel, "assign/"):
				a, ok := snap.Assignments[strings.TrimPrefix(rel, "assign/")]
				accounted = ok != problemFor[kv.Key]
				for _, id := range a.Shards {
					if known == nil || !known[id] {
						t.Fatalf("assignment %s names %s, not one of the config's shards", kv.Key, id)
					}
				}
			default:
				accounted = problemFor[kv.Key]
			}
			if !accounted {
				t.Fatalf("key %q (value %q) is neither decoded nor reported:\n%+v", kv.Key, kv.Value, snap)
			}
		}
	})
}

func findKey(pairs api.KVPairs, key string) *api.KVPair {
	for _, kv := range pairs {
		if kv.Key == key {
			return kv
		}
	}
	return nil
}
