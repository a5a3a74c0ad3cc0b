package exec

import (
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard"
)

// DefaultDrainGrace is the DrainGrace of a zero Config: the same as
// worker.Config's default DrainTimeout.
const DefaultDrainGrace = 10 * time.Second

// Config configures a Supervisor. The zero value of every optional field
// selects the documented default; New never modifies the caller's Config.
type Config struct {
	// Argv is the program and its arguments, run once per owned shard.
	// Required; Argv[0] is looked up in PATH unless it holds a '/'.
	Argv []string
	// Env is the environment children inherit, without Consul's ACL token
	// and any SHARDLEASE_* variable; the claim's variables are added. Nil:
	// this process's environment, read when each child starts.
	Env []string
	// Prefix is the fleet's KV prefix, given to children as EnvPrefix.
	Prefix string
	// Fleet is the shard set the worker runs: it gives EnvShards and each
	// shard's EnvShardIndex. Required; the same as worker.Config.Fleet.
	Fleet shard.Config
	// DrainGrace is how long a revoked child has between SIGTERM and
	// SIGKILL. The child is killed sooner if the claim's authority ends
	// first (worker.Config.DrainTimeout, or the lease lost while it
	// drains). Zero: DefaultDrainGrace.
	DrainGrace time.Duration
	// Stdout and Stderr receive the children's output, line by line, each
	// line prefixed with its shard. Nil: os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// Logger receives a line for every start, exit and signal. Default
	// zap.NewNop().
	Logger *zap.Logger
}

func (c Config) withDefaults() Config {
	c.Fleet = c.Fleet.Normalize()
	if c.DrainGrace == 0 {
		c.DrainGrace = DefaultDrainGrace
	}
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// Validate reports every problem with c (after defaults) at once, in an
// error wrapping ErrInvalidConfig. It looks Argv[0] up in PATH, so a
// missing program is refused before any shard is taken.
func (c Config) Validate() error {
	c = c.withDefaults()
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch {
	case len(c.Argv) == 0:
		add("no command: Argv is empty")
	case c.Argv[0] == "":
		add("command %q: the program name is empty", c.Argv)
	default:
		if _, err := osexec.LookPath(c.Argv[0]); err != nil {
			add("command %q: %v", c.Argv[0], err)
		}
	}
	if err := c.Fleet.Validate(); err != nil {
		add("%v", err)
	}
	if c.DrainGrace < 0 {
		add("drain grace %v must not be negative (zero means the default, %v)", c.DrainGrace, DefaultDrainGrace)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	return nil
}
