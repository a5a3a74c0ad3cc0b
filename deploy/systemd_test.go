package deploy

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/shardproc"
)

// unitCommand is a unit's ExecStart with %i and the ${VAR}s of env
// expanded, split into words.
func unitCommand(t *testing.T, unit string, env map[string]string) []string {
	t.Helper()
	for _, line := range strings.Split(unit, "\n") {
		if rest, ok := strings.CutPrefix(line, "ExecStart="); ok {
			rest = strings.ReplaceAll(rest, "%i", "w1")
			rest = regexp.MustCompile(`\$\{(\w+)\}`).ReplaceAllStringFunc(rest, func(v string) string {
				name := v[2 : len(v)-1]
				val, ok := env[name]
				if !ok {
					t.Errorf("ExecStart uses ${%s}, which shardlease.env does not set", name)
				}
				return val
			})
			return strings.Fields(rest)
		}
	}
	t.Fatal("no ExecStart line")
	return nil
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not NAME=value", path, line)
		}
		env[k] = v
	}
	return env
}

// TestSystemdUnits: each unit passes systemd-analyze verify (with
// ExecStart pointing at a shardd built from this tree), its command line
// is one that shardd accepts (it gets past the flags: not exit 2), and its
// TimeoutStopSec leaves the drain it asks for (--drain-timeout) and 10 s to
// release before systemd kills.
func TestSystemdUnits(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Fatalf("systemd-analyze is needed to check the units (Debian: apt-get install systemd): %v", err)
	}
	dir := t.TempDir()
	bin, err := shardproc.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	env := readEnv(t, filepath.Join("systemd", "shardlease.env"))
	env["CONSUL_HTTP_ADDR"] = "127.0.0.1:1" // nothing listens: shardd must get past its flags and then wait
	units, err := filepath.Glob(filepath.Join("systemd", "*@.service"))
	if err != nil || len(units) < 2 {
		t.Fatalf("units %v (%v), want shardd-worker@ and shardd-run@", units, err)
	}
	for _, path := range units {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			unit := strings.ReplaceAll(string(b), "/usr/local/bin/shardd", bin)
			unit = strings.ReplaceAll(unit, "/usr/local/bin/my-consumer", "/bin/sleep")
			instance := filepath.Join(dir, strings.Replace(filepath.Base(path), "@.", "@w1.", 1))
			if err := os.WriteFile(instance, []byte(unit), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("systemd-analyze", "verify", instance).CombinedOutput()
			if err != nil || len(strings.TrimSpace(string(out))) > 0 {
				t.Errorf("systemd-analyze verify: %v\n%s", err, out)
			}

			stop := regexp.MustCompile(`(?m)^TimeoutStopSec=(\S+)$`).FindStringSubmatch(unit)
			drain := regexp.MustCompile(`--drain-timeout (\S+)`).FindStringSubmatch(unit)
			if stop == nil || drain == nil {
				t.Fatalf("the unit must set TimeoutStopSec and pass --drain-timeout")
			}
			stopAfter, err1 := time.ParseDuration(stop[1])
			drainFor, err2 := time.ParseDuration(drain[1])
			var first time.Duration // --drain-before-stop, when the unit drains first
			if m := regexp.MustCompile(`--drain-before-stop (\S+)`).FindStringSubmatch(unit); m != nil {
				first, err2 = time.ParseDuration(m[1])
			}
			if err1 != nil || err2 != nil || stopAfter < first+drainFor+10*time.Second {
				t.Errorf("TimeoutStopSec=%s with --drain-timeout %s (and %v of drain before the stop): want at least both and 10 s to release", stop[1], drain[1], first)
			}

			argv := unitCommand(t, unit, env)
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "CONSUL_HTTP_ADDR=127.0.0.1:1")
			got, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == 2 {
				t.Errorf("shardd refused the unit's command line %q:\n%s", argv[1:], got)
			}
		})
	}
}
