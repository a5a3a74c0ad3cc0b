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
