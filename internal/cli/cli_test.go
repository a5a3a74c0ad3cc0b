package cli

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		ok     bool
		code   int
		stderr string
	}{
		{[]string{"-n", "3"}, true, ExitOK, ""},
		{[]string{"-h"}, false, ExitOK, "Usage"},
		{[]string{"-n", "x"}, false, ExitBadInvoke, `invalid value "x"`},
		{[]string{"-n", "3", "extra"}, false, ExitBadInvoke, `cmd: unexpected argument "extra"`},
	} {
		fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
		fs.Int("n", 0, "a number")
		var errb bytes.Buffer
		ok, code := Parse(fs, tc.args, &errb)
		if ok != tc.ok || code != tc.code || !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("Parse(%q) = %v, %d, stderr %q; want %v, %d, naming %q", tc.args, ok, code, errb.String(), tc.ok, tc.code, tc.stderr)
		}
	}
}

func TestPrintJSONIsOneLine(t *testing.T) {
	var b bytes.Buffer
	PrintJSON(&b, map[string]int{"a": 1})
	PrintJSON(&b, func() {}) // not encodable: an error object, still one line
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || lines[0] != `{"a":1}` || !strings.HasPrefix(lines[1], `{"error":`) {
		t.Errorf("PrintJSON wrote %q", b.String())
	}
}
