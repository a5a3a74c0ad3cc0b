package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/offsets"
	offconsul "github.com/shardlease/shardlease/offsets/consul"
	offetcd "github.com/shardlease/shardlease/offsets/etcd"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/etcd"
)

// connFlags are the connection flags every fleet command takes.
type connFlags struct {
	consul  consul.Config
	etcd    etcd.Connection // on etcd when it names endpoints (--etcd)
	offsets string          // where the fleet's offsets are: "" (not shown), "consul", "etcd" or a postgres:// URL
	fs      *flag.FlagSet   // the command's flags, to tell which were given
}

// offsetsConsul reads the fleet's checkpoints from Consul KV (P/offsets/,
// package offsets/consul); offsetsEtcd from etcd (the same keys, package
// offsets/etcd).
const (
	offsetsConsul = "consul"
	offsetsEtcd   = "etcd"
)

// register binds -prefix and the consul package's connection flags, with
// the environment's values as defaults.
func (a *app) connFlags(fs *flag.FlagSet) *connFlags {
	c := &connFlags{consul: consul.DefaultConfig(), fs: fs}
	c.consul.RegisterConnectionFlags(fs) // shardctl opens no session: no -consul-liveness
	c.etcd = etcd.ConnectionFromEnv(a.getenv)
	c.etcd.RegisterFlags(fs)
	fs.StringVar(&c.consul.Prefix, "prefix", a.getenv("SHARDLEASE_PREFIX"),
		"the fleet's key prefix, e.g. shardlease/orders (env SHARDLEASE_PREFIX)")
	fs.Func("offsets", `show each shard's committed offset and fencing floor from the fleet's offset store: "consul" (Consul KV under the prefix, as shardd worker --offsets consul writes them), "etcd" (the same in etcd, with --etcd) or a postgres:// URL (its shardlease_offsets table)`,
		func(v string) error {
			if v != offsetsConsul && v != offsetsEtcd && !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") {
				return fmt.Errorf("want %q, %q or a postgres:// URL (memory and bolt stores are private to their workers)", offsetsConsul, offsetsEtcd)
			}
			c.offsets = v
			return nil
		})
	return c
}

// budgetFlag adds -move-budget: a what-if budget the move queue is shown
// against instead of the fleet's stored one.
func budgetFlag(fs *flag.FlagSet) *int {
	return fs.Int("move-budget", 0, "a what-if: show the move queue against this budget instead of the fleet's (0: the fleet's stored balance policy's, or the default, max(16, shards ÷ workers); 'shardctl balance' changes the fleet's)")
}

// fleetConn is a connection to one fleet.
type fleetConn struct {
	coord   shard.Coordinator
	keys    admin.ShardKeyDeleter // nil: shard keys cannot be deleted
	offsets offsets.Store         // nil: offsets not shown
	name    string                // the prefix, as the operator typed it
	addr    string                // where the coordinator is, for messages
	close   func()
}

// neverCollect keeps shardctl from deleting dead member keys: operators'
// reads must not write (the workers' own watches collect them).
const neverCollect = 100 * 365 * 24 * time.Hour

// connectCoordinator connects to the fleet's coordinator: etcd with
// --etcd, Consul otherwise.
func (a *app) connectCoordinator(c connFlags) (*fleetConn, error) {
	if c.consul.Prefix == "" {
		return nil, usagef("-prefix is required: the fleet's key prefix, e.g. -prefix shardlease/orders (or set SHARDLEASE_PREFIX)")
	}
	var consulSet []string
	if c.fs != nil {
		c.fs.Visit(func(f *flag.Flag) {
			if strings.HasPrefix(f.Name, "consul") {
				consulSet = append(consulSet, "-"+f.Name)
			}
		})
	}
	if len(c.etcd.Endpoints) > 0 {
		if len(consulSet) > 0 {
			return nil, usagef("%s: Consul's, but the fleet is read on etcd (--etcd): drop them", strings.Join(consulSet, ", "))
		}
		return a.connectEtcd(c)
	}
	if c.fs != nil {
		if given := etcd.FlagsGiven(c.fs); len(given) > 0 {
			return nil, usagef("%s: etcd's, but --etcd is not given: give --etcd ENDPOINTS too, or drop them", strings.Join(given, ", "))
		}
	}
	if c.offsets == offsetsEtcd {
		return nil, usagef("-offsets etcd reads the offsets from etcd: give --etcd ENDPOINTS (the fleet's coordinator)")
	}
	return a.connectConsul(c)
}

// connectEtcd connects to a fleet on etcd.
func (a *app) connectEtcd(c connFlags) (*fleetConn, error) {
	if c.offsets == offsetsConsul {
		return nil, usagef("-offsets consul reads the offsets from Consul, but the fleet runs on etcd (--etcd): use -offsets etcd")
	}
	cli, err := c.etcd.Dial(nil)
	if err != nil {
		if errors.Is(err, shard.ErrInvalidArgument) {
			return nil, usageError{oneLine(err)}
		}
		return nil, fmt.Errorf("cannot reach etcd at %s (%s); check --etcd and that a majority of the members are running", strings.Join(c.etcd.Endpoints, ","), rootCause(err))
	}
	coord, err := etcd.New(etcd.Config{Client: cli, Prefix: c.consul.Prefix, MemberGrace: neverCollect})
	if err != nil {
		cli.Close()
		return nil, usageError{oneLine(err)}
	}
	fc := &fleetConn{coord: coord, keys: coord, name: c.consul.Prefix, addr: "etcd at " + strings.Join(c.etcd.Endpoints, ","),
		close: func() { coord.Close(); cli.Close() }}
	return a.withOffsets(fc, c, func() (offsets.Store, error) {
		return offetcd.New(offetcd.Config{Client: cli, Prefix: c.consul.Prefix})
	})
}

func (a *app) connectConsul(c connFlags) (*fleetConn, error) {
	cfg := c.consul
	cfg.MemberGrace = neverCollect
	coord, err := consul.New(cfg)
	if err != nil {
		if errors.Is(err, shard.ErrInvalidArgument) {
			return nil, usageError{oneLine(err)}
		}
		return nil, err
	}
	fc := &fleetConn{coord: coord, keys: coord, name: cfg.Prefix, addr: "Consul at " + cfg.Address, close: coord.Close}
	return a.withOffsets(fc, c, func() (offsets.Store, error) {
		return offconsul.New(offconsul.Config{Connection: coord.Connection(), Prefix: cfg.Prefix})
	})
}

// withOffsets opens the -offsets store of fc: the coordinator's own
// (openOwn) or PostgreSQL. A failure closes fc.
func (a *app) withOffsets(fc *fleetConn, c connFlags, openOwn func() (offsets.Store, error)) (*fleetConn, error) {
	switch {
	case c.offsets == offsetsConsul || c.offsets == offsetsEtcd:
		st, err := openOwn()
		if err != nil {
			fc.close()
			return nil, usageError{oneLine(err)}
		}
		fc.offsets = st
	case c.offsets != "":
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		st, err := postgres.Open(ctx, postgres.Config{DSN: c.offsets})
		if err != nil {
			fc.close()
			return nil, fmt.Errorf("-offsets %s: %w", postgres.RedactDSN(c.offsets), err)
		}
		fc.offsets = st
	}
	if fc.offsets != nil {
		closeCoord, st := fc.close, fc.offsets
		fc.close = func() { st.Close(); closeCoord() }
	}
	return fc, nil
}

// open connects with the parsed flags.
func (a *app) open(c *connFlags) (*fleetConn, error) {
	fc, err := a.connect(*c)
	if err != nil {
		return nil, err
	}
	if fc.close == nil {
		fc.close = func() {}
	}
	return fc, nil
}

// operator acts on the fleet for a command.
func (fc *fleetConn) operator(a *app) admin.Operator {
	return admin.Operator{Coordinator: fc.coord, Name: fc.name, Now: a.now}
}

// snapshot reads the fleet once. A prefix with nothing of a fleet under it
// is an error that says so.
func (fc *fleetConn) snapshot(ctx context.Context) (shard.Snapshot, error) {
	s, err := admin.Operator{Coordinator: fc.coord, Name: fc.name}.Snapshot(ctx)
	return s, fc.explain(err, "read")
}

// viewWithOffsets reads the fleet and builds its view, with every shard's
// checkpoint when the offsets are shown.
func (a *app) viewWithOffsets(ctx context.Context, fc *fleetConn, budget int, tolerance float64) (fleetview.Fleet, error) {
	s, err := fc.snapshot(ctx)
	if err != nil {
		return fleetview.Fleet{}, err
	}
	in := fleetview.Input{Name: fc.name, Snapshot: s, MaxMovesInFlight: budget, Tolerance: tolerance, Now: a.now()}
	if fc.offsets != nil {
		if in.Offsets, err = fleetview.LoadOffsets(ctx, fc.offsets, s.Config.IDs()); err != nil {
			return fleetview.Fleet{}, fc.explain(err, "read")
		}
	}
	return fleetview.Build(in), nil
}

// explain turns a coordinator error into the one line an operator needs.
// op is what was attempted: "read" or "write" (a write that package admin
// reports failed is a write whatever op says).
func (fc *fleetConn) explain(err error, op string) error {
	if errors.Is(err, admin.ErrWrite) {
		op = "write"
	}
	var noFleet *admin.NoFleetError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &noFleet) && noFleet.Empty:
		return fmt.Errorf("no fleet at prefix %q on %s: there is no %s/config key; check -prefix (workers write the config when the first one starts)",
			fc.name, fc.addr, fc.name)
	case errors.As(err, &noFleet):
		return fmt.Errorf("the fleet at prefix %q on %s has members or shards but no valid %s/config key: %s",
			fc.name, fc.addr, fc.name, strings.Join(noFleet.Problems, "; "))
	case errors.Is(err, shard.ErrPermissionDenied) && strings.HasPrefix(fc.addr, "etcd"):
		return fmt.Errorf("permission denied by %s: the user (--etcd-user or ETCDCTL_USER) cannot %s the fleet %q; this command needs %s on the key range %q",
			fc.addr, op, fc.name, map[string]string{"read": "read", "write": "readwrite"}[op], fc.name+"/")
	case errors.Is(err, shard.ErrPermissionDenied):
		need := fmt.Sprintf("key_prefix %q read", fc.name+"/")
		if op == "write" {
			need = fmt.Sprintf("key_prefix %q write", fc.name+"/")
		}
		return fmt.Errorf("permission denied by %s: the ACL token (CONSUL_HTTP_TOKEN or -consul-token) cannot %s the fleet %q; this command needs %s",
			fc.addr, op, fc.name, need)
	case errors.Is(err, shard.ErrUnavailable):
		check := "-consul or CONSUL_HTTP_ADDR and that the agent is running"
		if strings.HasPrefix(fc.addr, "etcd") {
			check = "--etcd and that a majority of the members are running"
		}
		return fmt.Errorf("cannot reach %s (%s); check %s", fc.addr, rootCause(err), check)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("interrupted: %w", err)
	}
	return err
}

// rootCause is the innermost part of a wrapped transport error, e.g.
// "connection refused" or "no answer within 10s".
func rootCause(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "no answer within"); i >= 0 {
		msg = msg[i:]
		if j := strings.Index(msg, ":"); j >= 0 {
			msg = msg[:j]
		}
		return msg
	}
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}
