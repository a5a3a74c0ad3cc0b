package exec

import (
	"slices"
	"testing"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// TestChildEnvKeepsTheACLTokenAndStaleClaimsOut: the supervisor's Consul
// ACL token stays with it, a SHARDLEASE_* variable of its own environment
// never reaches a child, and the claim's variables describe the claim.
func TestChildEnvKeepsTheACLTokenAndStaleClaimsOut(t *testing.T) {
	s, err := New(Config{Argv: []string{"true"}, Prefix: "fleet/p", Fleet: shard.Config{Shards: 4, Name: "q/s"}})
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"PATH=/bin", "CONSUL_HTTP_TOKEN=s3cret", "CONSUL_HTTP_TOKEN_FILE=/t", "SHARDLEASE_TOKEN=1",
		"SHARDLEASE_OTHER=x", "CONSUL_HTTP_ADDR=127.0.0.1:8500", "KEEP=yes",
		"ETCDCTL_USER=root:pw", "ETCDCTL_PASSWORD=pw", "ETCDCTL_CERT=/c.pem", "ETCDCTL_KEY=/k.pem", "ETCDCTL_CACERT=/ca.pem"}
	got := s.childEnv(base, &worker.Claim{Claim: shard.Claim{Shard: "q/s-002", Token: 42}, Worker: "w1"})
	want := []string{"PATH=/bin", "CONSUL_HTTP_ADDR=127.0.0.1:8500", "KEEP=yes", "ETCDCTL_CACERT=/ca.pem",
		"SHARDLEASE_SHARD=q/s-002", "SHARDLEASE_SHARD_INDEX=2", "SHARDLEASE_SHARDS=4",
		"SHARDLEASE_TOKEN=42", "SHARDLEASE_WORKER=w1", "SHARDLEASE_PREFIX=fleet/p", "SHARDLEASE_LOAD_FD=3"}
	if !slices.Equal(got, want) {
		t.Errorf("child environment:\n got %q\nwant %q", got, want)
	}
}
