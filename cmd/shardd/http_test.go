package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDemoHTTPServesMetricsThatMove runs `shardd demo --http 127.0.0.1:0`
// and scrapes /metrics while the demo plays its faults: every shardlease_*
// metric of DESIGN.md is there, and the values move: commits and renewals
// grow, the crash shows as orphaned acquisitions, the pause past the TTL as
// a step-down with losses and as stale commits the fence rejected, the
// paused worker's return as hand-offs to it. The
// dashboard's JSON and page are served from the same address.
func TestDemoHTTPServesMetricsThatMove(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &httpLogBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"demo", "--http", "127.0.0.1:0", "--workers", "4", "--shards", "16", "--seed", "5"}, io.Discard, stderr)
	}()
	defer func() {
		cancel()
		if c := <-code; c != exitOK {
			t.Errorf("shardd demo --http exited %d:\n%s", c, stderr.String())
		}
	}()

	urlRE := regexp.MustCompile(`dashboard: (http://127\.0\.0\.1:\d+/)`)
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == ""; time.Sleep(50 * time.Millisecond) {
		if m := urlRE.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no dashboard URL printed within 20s:\n%s", stderr.String())
		}
	}

	first := scrapeMetrics(t, base+"metrics")
	for deadline := time.Now().Add(5 * time.Second); first.sum("shardlease_shards_owned", "") < 16; first = scrapeMetrics(t, base+"metrics") {
		if time.Now().After(deadline) {
			t.Fatalf("the workers do not own the 16 shards after 5s: %v", first.sum("shardlease_shards_owned", ""))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The schedule crashes a worker at 5 s and pauses one past its TTL at
	// 8 s; wait for both to show.
	var last metricsText
	moved := func() string {
		last = scrapeMetrics(t, base+"metrics")
		switch {
		case last.sum("shardlease_commits_total", `result="accepted"`) <= first.sum("shardlease_commits_total", `result="accepted"`):
			return "no accepted commits since the first scrape"
		case last.sum("shardlease_renewal_duration_seconds_count", "") <= first.sum("shardlease_renewal_duration_seconds_count", ""):
			return "no renewals since the first scrape"
		case last.sum("shardlease_watch_wakeups_total", "") <= first.sum("shardlease_watch_wakeups_total", ""):
			return "no watch wake-ups since the first scrape"
		case last.sum("shardlease_acquisitions_total", `reason="orphaned"`) < 1:
			return "no orphaned acquisitions (the crash)"
		case last.sum("shardlease_step_downs_total", "") < 1 || last.sum("shardlease_losses_total", "") < 1:
			return "no step-down with losses (the pause past the TTL)"
		case last.sum("shardlease_commits_total", `result="stale"`) < 1:
			return "no stale commits rejected (the paused worker's late writes)"
		case last.sum("shardlease_releases_total", `reason="rebalance"`) < 1:
			return "no hand-offs (to the paused worker when it is back, or to the joiner at 13 s)"
		}
		return ""
	}
	for deadline := time.Now().Add(25 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		why := moved()
		if why == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics did not move: %s\n%s", why, stderr.String())
		}
	}
	for _, name := range []string{
		"shardlease_shards_owned", "shardlease_acquisitions_total", "shardlease_releases_total", "shardlease_losses_total",
		"shardlease_renewal_duration_seconds_bucket", "shardlease_renewal_failures_total", "shardlease_step_downs_total",
		"shardlease_commits_total", "shardlease_watch_wakeups_total", "shardlease_rebalance_moves_total",
		"shardlease_imbalance_shards", "shardlease_pause_seconds_bucket", "shardlease_handler_restarts_total",
		"go_goroutines", "process_cpu_seconds_total",
	} {
		if !last.has(name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	// Every metric the Grafana dashboard queries is exported.
	board, err := os.ReadFile(filepath.Join("..", "..", "docs", "grafana", "shardlease.json"))
	if err != nil {
		t.Fatal(err)
	}
	queried := regexp.MustCompile(`shardlease_[a-z_]*[a-z]`).FindAllString(string(board), -1)
	if len(queried) < 10 {
		t.Fatalf("docs/grafana/shardlease.json queries only %v", queried)
	}
	for _, name := range queried {
		if !last.has(name) {
			t.Errorf("docs/grafana/shardlease.json queries %s, which /metrics does not export", name)
		}
	}
	if !strings.Contains(last.raw, `worker="w01"`) {
		t.Errorf("metrics are not labelled by worker")
	}

	resp, err := http.Get(base + "api/v1/fleet")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Summary struct {
			Shards int `json:"shards"`
		} `json:"summary"`
		HasOffsets bool `json:"has_offsets"`
	}
	err = json.NewDecoder(resp.Body).Decode(&f)
	resp.Body.Close()
	if err != nil || f.Summary.Shards != 16 || !f.HasOffsets {
		t.Errorf("/api/v1/fleet: %+v, %v", f, err)
	}
}

// metricsText is one scrape in the Prometheus text format.
type metricsText struct{ raw string }

func scrapeMetrics(t *testing.T, url string) metricsText {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("scraping %s: HTTP %d", url, resp.StatusCode)
	}
	return metricsText{string(b)}
}

// sum adds the samples of a metric whose labels contain match.
func (m metricsText) sum(name, match string) float64 {
	total := 0.0
	sc := bufio.NewScanner(strings.NewReader(m.raw))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		if match != "" && !strings.Contains(line, match) {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			total += v
		}
	}
	return total
}

func (m metricsText) has(name string) bool {
	return strings.Contains(m.raw, "\n"+name+"{") || strings.Contains(m.raw, "\n"+name+" ")
}

// httpLogBuffer is a bytes.Buffer for a command writing from a goroutine.
type httpLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *httpLogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *httpLogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
