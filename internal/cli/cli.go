// Package cli holds what shardlease's commands share about their command
// lines: the exit codes, flag parsing that names a stray argument, and
// printing one JSON object as a line.
package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/shardlease/shardlease/shard"
)

// Exit codes of every shardlease command.
const (
	ExitOK        = 0
	ExitFailed    = 1 // ran, and something failed (an invariant, a server)
	ExitBadInvoke = 2 // bad command line
)

// Parse parses args into fs, printing errors to stderr. ok is false when the
// command must stop: with ExitOK after -h, with ExitBadInvoke after a bad
// flag or an unexpected argument (named in the message).
func Parse(fs *flag.FlagSet, args []string, stderr io.Writer) (ok bool, code int) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return false, ExitOK
		}
		return false, ExitBadInvoke
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return false, ExitBadInvoke
	}
	return true, ExitOK
}

// PrintJSON writes v as one line of JSON (or a JSON error object).
func PrintJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(w, "{\"error\":%q}\n", err.Error())
		return
	}
	fmt.Fprintln(w, string(b))
}

// Version is the release a command was built as: shard.Release, and the
// commit when the build recorded one ("0.2.0-dev+f382ed9", "+modified"
// when the tree had changes). A worker writes it in its member key.
func Version() string {
	v := shard.Release
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	v += "+" + rev[:min(len(rev), 7)]
	if modified {
		v += ".modified"
	}
	return v
}

// PrintVersion writes a command's version line: its name, Version, the
// protocol it speaks and the Go it was built with.
func PrintVersion(w io.Writer, command string) {
	fmt.Fprintf(w, "%s %s (protocol %d, steps %s, %s)\n", command, Version(), shard.Protocol, strings.Join(shard.Steps(), " "), runtime.Version())
}
