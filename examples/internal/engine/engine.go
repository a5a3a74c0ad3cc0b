package engine

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/etcd"
	"github.com/shardlease/shardlease/shard/memory"
)

// Choice is the coordinator an example runs on.
type Choice struct {
	consul           consul.Config
	etcd             etcd.Connection
	envEtcd          error
	prefix           string
	onConsul, onEtcd bool
}

// Register binds --consul and its flags, --etcd and its flags, and
// --prefix (defaultPrefix: the example's own) to fs.
func (c *Choice) Register(fs *flag.FlagSet, defaultPrefix string) {
	c.consul = consul.DefaultConfig()
	c.consul.RegisterFlags(fs)
	c.etcd = etcd.ConnectionFromEnv(os.Getenv)
	c.etcd.RegisterFlags(fs)
	fs.StringVar(&c.prefix, "prefix", defaultPrefix, "key prefix of the example's fleet (with --consul or --etcd); removed at the end")
}

// Parsed settles the choice after fs was parsed: Consul when --consul
// was given, etcd when --etcd was; both is an error.
func (c *Choice) Parsed(fs *flag.FlagSet) error {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "consul":
			c.onConsul = true
		case "etcd":
			c.onEtcd = true
		}
	})
	switch etcdSet := etcd.FlagsGiven(fs); {
	case c.onConsul && c.onEtcd:
		return errors.New("--consul and --etcd: the fleet runs on one coordinator; give one")
	case c.onEtcd:
		return c.etcd.Validate()
	case len(etcdSet) > 0:
		return fmt.Errorf("%s: etcd's, but --etcd is not given: give --etcd ENDPOINTS too, or drop them", strings.Join(etcdSet, ", "))
	}
	return nil
}

// Shared reports whether members get coordinators of their own (Consul,
// etcd) rather than sharing the embedded one.
func (c *Choice) Shared() bool { return c.onConsul || c.onEtcd }

// Consul sets the choice to Consul with cfg, as --consul would (tests).
func (c *Choice) Consul(cfg consul.Config) {
	c.consul, c.onConsul, c.onEtcd, c.prefix = cfg, true, false, cfg.Prefix
}

// Etcd sets the choice to etcd at endpoints under prefix, as --etcd would
// (tests).
func (c *Choice) Etcd(endpoints []string, prefix string) {
	c.etcd, c.onEtcd, c.onConsul, c.prefix = etcd.Connection{Endpoints: endpoints}, true, false, prefix
}

// Name says where the fleet is, for the story's transcript.
func (c *Choice) Name() string {
	switch {
	case c.onConsul:
		return fmt.Sprintf("Consul at %s (prefix %s)", c.consul.Address, c.prefix)
	case c.onEtcd:
		return fmt.Sprintf("etcd at %s (prefix %s)", strings.Join(c.etcd.Endpoints, ","), c.prefix)
	}
	return "the embedded coordinator"
}

// Members makes the coordinators of a story's members.
type Members struct {
	choice   *Choice
	embedded *memory.Coordinator
	closers  []func()
	deleters []func(context.Context) error
}

// Members starts making coordinators of c's engine.
func (c *Choice) Members() *Members {
	m := &Members{choice: c}
	if !c.Shared() {
		m.embedded = memory.New()
	}
	return m
}

// New is a member's coordinator: the one embedded coordinator, or a
// client of its own of Consul (liveness check) or etcd.
func (m *Members) New() (shard.Coordinator, error) {
	c := m.choice
	switch {
	case c.onConsul:
		cfg := c.consul
		cfg.Prefix, cfg.Liveness = c.prefix, consul.LivenessCheck
		cc, err := consul.New(cfg)
		if err != nil {
			return nil, err
		}
		m.closers, m.deleters = append(m.closers, cc.Close), append(m.deleters, cc.DeleteFleet)
		return cc, nil
	case c.onEtcd:
		cli, err := c.etcd.Dial(nil)
		if err != nil {
			return nil, err
		}
		ec, err := etcd.New(etcd.Config{Client: cli, Prefix: c.prefix})
		if err != nil {
			_ = cli.Close()
			return nil, err
		}
		m.closers = append(m.closers, func() { ec.Close(); _ = cli.Close() })
		m.deleters = append(m.deleters, ec.DeleteFleet)
		return ec, nil
	}
	return m.embedded, nil
}

// Close removes the fleet's keys (best effort: its workers released
// them) and closes every coordinator made.
func (m *Members) Close() {
	if len(m.deleters) > 0 {
		_ = m.deleters[0](context.Background())
	}
	for _, close := range m.closers {
		close()
	}
}
