package exec

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// badLoadLog is part of the message that logs a child's first bad line.
const badLoadLog = "load pipe that is not"

// TestParseLoad: only "load <finite number ≥ 0>" is a load.
func TestParseLoad(t *testing.T) {
	for _, tc := range []struct {
		line string
		want float64
		ok   bool
	}{
		{"load 7.5\n", 7.5, true},
		{"load 0", 0, true},
		{"  load\t12 \r\n", 12, true},
		{"load 1e3\n", 1000, true},
		{"load -1\n", 0, false},
		{"load NaN\n", 0, false},
		{"load Inf\n", 0, false},
		{"load 1e400\n", 0, false},
		{"load\n", 0, false},
		{"load 1 2\n", 0, false},
		{"Load 1\n", 0, false},
		{"weight 3\n", 0, false},
		{"load x\n", 0, false},
		{"\n", 0, false},
	} {
		v, ok := parseLoad(tc.line)
		if v != tc.want || ok != tc.ok {
			t.Errorf("parseLoad(%q) = %v, %v; want %v, %v", tc.line, v, ok, tc.want, tc.ok)
		}
	}
}

// TestReadLoadsPassesLoadsAndCountsBadLines: every good line is reported
// in order, a last line without a newline too; bad lines, one longer than
// maxLoadLine included, are counted, the first logged quoted and cut, and
// a good line after a long one is read whole.
func TestReadLoadsPassesLoadsAndCountsBadLines(t *testing.T) {
	s := newSupervised(t, time.Minute, "true")
	core, logs := observer.New(zap.DebugLevel)
	long := "load " + strings.Repeat("9", 2*maxLoadLine)
	in := "load 7.5\n" + long + "\nload 2\nweight 3\nload -1\nload 3"
	var got []float64
	s.readLoads(strings.NewReader(in), func(v float64) { got = append(got, v) }, zap.New(core))
	if want := []float64{7.5, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("reported %v, want %v", got, want)
	}
	if n := s.BadLoadLines(); n != 3 {
		t.Errorf("BadLoadLines = %d, want 3 (the long line, weight, a negative load)", n)
	}
	bad := logs.FilterMessageSnippet(badLoadLog).All()
	if len(bad) != 1 {
		t.Fatalf("%d bad lines logged, want the first only: %v", len(bad), logs.All())
	}
	if line := bad[0].ContextMap()["line"]; line != strconv.Quote(long[:maxQuoted]) {
		t.Errorf("logged line %v, want the first %d bytes of the long line, quoted", line, maxQuoted)
	}
}

// TestLoadPipeIsReadAllTheTime: a child that writes a megabyte without a
// newline to its load pipe, far more than a pipe holds, is not blocked:
// the Supervisor reads and drops it, and counts it as one bad line.
func TestLoadPipeIsReadAllTheTime(t *testing.T) {
	s := newSupervised(t, time.Minute, `head -c 1000000 /dev/zero | tr '\0' x >&3; echo >&3; echo done; while :; do sleep 0.1; done`)
	s.start(t)
	waitUntil(t, 10*time.Second, "the child wrote its megabyte", func() bool { return strings.Contains(s.out.String(), "[s-000] done") })
	waitUntil(t, 10*time.Second, "the line is counted", func() bool { return s.BadLoadLines() == 1 })
	if n := s.logs.FilterMessageSnippet(badLoadLog).Len(); n != 1 {
		t.Errorf("%d bad lines logged, want 1", n)
	}
}

// TestUnderAWorkerAChildReportsItsLoad: under a worker that carries
// loads, a child's "load 7.5" reaches the fleet's loads and the worker's
// Status as the shard's figure, its bad lines are counted and logged once and do not stop it;
// a child that writes nothing has the commit-rate fallback, 0 for a child
// that commits nothing through the claim; one that closes the pipe keeps
// its last figure.
func TestUnderAWorkerAChildReportsItsLoad(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   float64
		bad    int64
	}{
		{"reports", `printf 'load 7.5\n' >&3; printf 'load -1\nweight 3\n' >&3; echo up; while :; do sleep 0.1; done`, 7.5, 2},
		{"silent", `echo up; while :; do sleep 0.1; done`, 0, 0},
		{"closes the pipe", `printf 'load 4\n' >&"$SHARDLEASE_LOAD_FD"; exec 3>&-; echo up; while :; do sleep 0.1; done`, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, stop := runUnderWorker(t, time.Second, time.Second, tc.script, func(c *worker.Config) {
				c.LoadBalance, c.LoadReportEvery = &shard.LoadBalance{}, worker.MinLoadReportEvery
			})
			// Every script writes its load line before "up"; the worker
			// reports at its own pace, so the figure reaches the fleet
			// some time after "up" (its first report, at the claim, is
			// the fallback 0). Wait for the figure, then hold it for a
			// few reports: a wrong one would replace it.
			waitUntil(t, 15*time.Second, "the child is up", func() bool { return strings.Contains(s.out.String(), "[s-000] up") })
			fleetLoad := func() (float64, bool) {
				snap, err := s.coord.Fleet().Watch(context.Background(), 0)
				if err != nil {
					t.Fatal(err)
				}
				m, _ := snap.Member("w1")
				v, ok := m.Load["s-000"]
				return v, ok
			}
			waitUntil(t, 15*time.Second, "the fleet carries s-000's load", func() bool {
				v, ok := fleetLoad()
				return ok && v == tc.want
			})
			time.Sleep(3 * worker.MinLoadReportEvery)
			if v, ok := fleetLoad(); !ok || v != tc.want {
				t.Errorf("s-000's load in the fleet = %v (present %v), want %v", v, ok, tc.want)
			}
			if sh := s.w.Status().Shards; len(sh) != 1 || sh[0].Load == nil || *sh[0].Load != tc.want {
				t.Errorf("the worker's Status = %+v, want s-000 at load %v", sh, tc.want)
			}
			if n := s.BadLoadLines(); n != tc.bad {
				t.Errorf("BadLoadLines = %d, want %d", n, tc.bad)
			}
			if n, want := s.logs.FilterMessageSnippet(badLoadLog).Len(), min(tc.bad, 1); int64(n) != want {
				t.Errorf("%d bad lines logged, want %d", n, want)
			}
			if n := s.logged("child exited while the shard is owned; restarting with backoff"); n != 0 {
				t.Errorf("the child exited %d times, want it running", n)
			}
			stop()
		})
	}
}
