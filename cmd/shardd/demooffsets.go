package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/offsets"
	offconsul "github.com/shardlease/shardlease/offsets/consul"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard/consul"
)

// openDemoOffsets opens the store --offsets names: "bolt" (the default: the
// demo opens its own file), "consul" (Consul KV, on the agent the consul
// flags name), or a postgres:// URL. On a Consul fleet (consulFleet) the
// offsets live under the fleet's own prefix, P/offsets/, as in production:
// Consul's tokens only grow, run after run. On the embedded coordinator,
// whose tokens start low on every run, each run gets a Consul prefix or a
// PostgreSQL table of its own, or an earlier run's floors would fence this
// one out. The name is printed so the offsets can be looked at afterwards.
func openDemoOffsets(ctx context.Context, spec string, cfg consul.Config, consulFleet bool, say func(string, ...any)) (offsets.Store, func(), error) {
	run := time.Now().UTC().Format("20060102t150405")
	switch {
	case spec == "" || spec == "bolt":
		return nil, func() {}, nil
	case spec == "consul":
		if !consulFleet {
			cfg.Prefix = "shardlease-demo-offsets/" + run
		}
		st, err := offconsul.New(offconsul.Config{Connection: cfg.Connection(), Prefix: cfg.Prefix})
		if err != nil {
			return nil, nil, fmt.Errorf("--offsets consul: %w", err)
		}
		say("offsets: Consul KV under %s/offsets/ on %s", cfg.Prefix, cfg.Connection().Address)
		return st, func() { st.Close() }, nil
	case strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://"):
		table := "shardlease_demo_" + run
		octx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		st, err := postgres.Open(octx, postgres.Config{DSN: spec, Table: table})
		if err != nil {
			return nil, nil, fmt.Errorf("--offsets %s: %w", postgres.RedactDSN(spec), err)
		}
		say("offsets: PostgreSQL table %s on %s", table, postgres.RedactDSN(spec))
		return st, func() { st.Close() }, nil
	default:
		return nil, nil, fmt.Errorf("--offsets %q: want bolt, consul or a postgres:// URL", spec)
	}
}
