package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/shardlease/shardlease/internal/demo"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// demoConsul holds the flags that put `shardd demo` on a real Consul:
// --consul ADDR (without it the demo stays on the embedded coordinator,
// whatever CONSUL_HTTP_ADDR says), --prefix, and the other connection
// flags of shard/consul, whose defaults come from the environment.
type demoConsul struct{ cfg consul.Config }

// defaultDemoPrefix is where `shardd demo --consul` keeps its fleet.
const defaultDemoPrefix = "shardlease/demo"

func addDemoConsulFlags(fs *flag.FlagSet) *demoConsul {
	d := &demoConsul{cfg: consul.DefaultConfig()}
	d.cfg.RegisterFlags(fs)
	fs.StringVar(&d.cfg.Prefix, "prefix", defaultDemoPrefix, "with --consul: the fleet's KV prefix")
	return d
}

// apply sets o.Backend when --consul was given. Without lease flags the
// policy becomes demo.ConsulPolicy (check liveness, the default) or
// shard.SessionTTLPolicy (--consul-liveness ttl: a 10 s TTL, Consul's minimum
// session TTL); a policy whose sessions Consul would refuse (a TTL below
// 10 s with ttl liveness, a lock-delay above 60 s) is refused here.
func (d *demoConsul) apply(fs *flag.FlagSet, o *demo.Options) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["consul"] {
		var stray []string
		for name := range set {
			if strings.HasPrefix(name, "consul-") || name == "prefix" {
				stray = append(stray, "--"+name)
			}
		}
		if len(stray) > 0 {
			sort.Strings(stray)
			return fmt.Errorf("%s: need --consul ADDR (without it the demo runs on the embedded coordinator)", strings.Join(stray, ", "))
		}
		return nil
	}
	if !(set["ttl"] || set["renew"] || set["pause-budget"] || set["lock-delay"]) {
		o.Policy = demo.ConsulPolicy
		if d.cfg.Liveness == consul.LivenessTTL {
			o.Policy = shard.SessionTTLPolicy
		}
	}
	if err := d.cfg.ValidateSession(o.Policy.SessionSpec("demo")); err != nil {
		return err
	}
	b, err := demo.ConsulBackend(d.cfg)
	if err != nil {
		return fmt.Errorf("--consul/--prefix: %w", err)
	}
	o.Backend = b
	return nil
}
