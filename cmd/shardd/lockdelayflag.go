package main

import (
	"errors"
	"flag"
	"strings"
	"time"
)

// lockDelayHelp is --lock-delay's meaning, the same for every command.
const lockDelayHelp = "a `duration`: how long a session's shards stay closed to everyone after the session ends other than by a release " +
	"(expired, destroyed, its node failed); at least ttl − pause-budget. 0: the ttl. " +
	"Default: with no lease flag at all, the default policy's (3s; liveness ttl: 10s), else the ttl. " +
	"There is no none: the lease rules keep ttl − pause-budget above zero"

// errNoLockDelay answers --lock-delay none.
var errNoLockDelay = errors.New("there is no lock-delay of none: a session that ends early must keep its shards closed " +
	"for at least ttl − pause-budget, or its worker, cut off from the coordinator, could still act beside the next owner; " +
	"0 means the default, the ttl")

// lockDelayFlag is --lock-delay: a duration, with 0 the policy's default
// (the ttl), as shard.LeasePolicy reads it. "none" is refused with the
// reason instead of a parse error.
type lockDelayFlag struct{ d *time.Duration }

// addLockDelayFlag binds --lock-delay to d, keeping d's value as default.
func addLockDelayFlag(fs *flag.FlagSet, d *time.Duration) {
	fs.Var(lockDelayFlag{d}, "lock-delay", lockDelayHelp)
}

func (f lockDelayFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f lockDelayFlag) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "none") {
		return errNoLockDelay
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("parse error")
	}
	*f.d = d
	return nil
}
