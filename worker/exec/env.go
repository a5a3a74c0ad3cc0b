package exec

import (
	"slices"
	"strconv"
	"strings"

	"github.com/shardlease/shardlease/worker"
)

// Environment variables a child gets, describing its claim.
const (
	EnvShard      = "SHARDLEASE_SHARD"       // the shard, e.g. stream/shard-003
	EnvShardIndex = "SHARDLEASE_SHARD_INDEX" // its index in the fleet, 0..N-1
	EnvShards     = "SHARDLEASE_SHARDS"      // N, the fleet's shard count
	EnvToken      = "SHARDLEASE_TOKEN"       // the claim's fencing token
	EnvWorker     = "SHARDLEASE_WORKER"      // the ID of the worker that owns the shard
	EnvPrefix     = "SHARDLEASE_PREFIX"      // the fleet's KV prefix
	// EnvLoadFD is the file descriptor (always 3) of the pipe on which the
	// child may report its shard's load, one line "load <number>" at a
	// time (see the package doc).
	EnvLoadFD = "SHARDLEASE_LOAD_FD"
)

// envPrefix marks the claim's variables: any of the supervisor's own is
// dropped, so a stale one never reaches a child.
const envPrefix = "SHARDLEASE_"

// droppedEnv are variables of the supervisor's environment a child does
// not get: the supervisor's Consul ACL token and etcd user, password and
// client key are for its own calls, and a child that needs the
// coordinator should carry credentials of its own.
var droppedEnv = []string{"CONSUL_HTTP_TOKEN", "CONSUL_HTTP_TOKEN_FILE",
	"ETCDCTL_USER", "ETCDCTL_PASSWORD", "ETCDCTL_CERT", "ETCDCTL_KEY"}

// childEnv returns base without droppedEnv and SHARDLEASE_* variables,
// followed by the claim's variables.
func (s *Supervisor) childEnv(base []string, c *worker.Claim) []string {
	out := make([]string, 0, len(base)+7)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix) || slices.Contains(droppedEnv, name) {
			continue
		}
		out = append(out, kv)
	}
	return append(out,
		EnvShard+"="+string(c.Shard),
		EnvShardIndex+"="+strconv.Itoa(s.index[c.Shard]),
		EnvShards+"="+strconv.Itoa(s.cfg.Fleet.Shards),
		EnvToken+"="+strconv.FormatUint(uint64(c.Token), 10),
		EnvWorker+"="+c.Worker,
		EnvPrefix+"="+s.cfg.Prefix,
		EnvLoadFD+"="+strconv.Itoa(loadFD),
	)
}
