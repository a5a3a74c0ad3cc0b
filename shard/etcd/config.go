package etcd

import (
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// Defaults of Config's zero fields.
const (
	DefaultRequestTimeout = 10 * time.Second
	DefaultWatchWait      = 5 * time.Minute
	DefaultMemberGrace    = time.Minute
)

// Config says which etcd and which fleet.
type Config struct {
	// Client reaches etcd; the coordinator uses it and never closes it.
	// Required.
	Client *clientv3.Client
	// Prefix is the fleet's key prefix P (docs/design.md, "Keys"). Required;
	// no leading or trailing '/'.
	Prefix string
	// RequestTimeout bounds every call except the watches, on top of the
	// caller's context. Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// WatchWait is how long a watch waits for a change before it checks
	// that etcd still answers (a watch stream alone cannot tell a quiet
	// fleet from a lost connection). Default DefaultWatchWait.
	WatchWait time.Duration
	// MemberGrace is how long a dead member key (its session gone) stays
	// before the fleet's watch deletes it; a worker that said it will be
	// back (Member.RejoinUntil) keeps it until then. Zero means
	// DefaultMemberGrace; negative deletes it on the next watch.
	MemberGrace time.Duration
}

// Validate reports every problem with c at once, wrapping
// shard.ErrInvalidArgument.
func (c Config) Validate() error {
	var problems []string
	if c.Client == nil {
		problems = append(problems, "no Client: pass the process's etcd client (clientv3.New, or Connection.Dial)")
	}
	if p := fleetkeys.PrefixProblem(c.Prefix); p != "" {
		problems = append(problems, p)
	}
	if c.RequestTimeout < 0 {
		problems = append(problems, fmt.Sprintf("request timeout %v must not be negative", c.RequestTimeout))
	}
	if c.WatchWait < 0 {
		problems = append(problems, fmt.Sprintf("watch wait %v must not be negative", c.WatchWait))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: shard/etcd config: %s", shard.ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.WatchWait == 0 {
		c.WatchWait = DefaultWatchWait
	}
	if c.MemberGrace == 0 {
		c.MemberGrace = DefaultMemberGrace
	}
	return c
}
