package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/dashboard"
	"github.com/shardlease/shardlease/internal/demo"
	"github.com/shardlease/shardlease/internal/fleetview"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
)

// pageState is what a person sees on the page, read from the DOM.
type pageState struct {
	Live    bool              `json:"live"`
	Cells   int               `json:"cells"`
	Owners  map[string]string `json:"owners"` // shard → owner ("" when free)
	Tokens  map[string]int64  `json:"tokens"`
	Workers map[string]string `json:"workers"` // worker → state
	Moves   []pageMove        `json:"moves"`
	Owned   string            `json:"owned"` // the "shards owned" tile
	// The assignor tile (its value, the worker it names, its epoch and
	// sub-line), the worker row marked as the assignor, and each live
	// worker's "owned / assigned" cell.
	Assignor      string            `json:"assignor"`
	AssignorEpoch string            `json:"assignorEpoch"`
	AssignorSub   string            `json:"assignorSub"`
	AssignorRow   string            `json:"assignorRow"`
	OwnedAssigned map[string]string `json:"ownedAssigned"`
	StuckBadges   string            `json:"stuckBadges"` // workers whose row has a "stuck" badge
	// Zones lists the worker rows in order as zone:worker, and ZoneColumn
	// is the zone header's CSS display ("none" while no worker has one).
	Zones      string `json:"zones"`
	ZoneColumn string `json:"zoneColumn"`
	// Unplaceable is the unplaceable banner's count ("" while hidden).
	Unplaceable string `json:"unplaceable"`
}

type pageMove struct {
	Kind, Shard, Worker, From, Text string
}

const readPage = `
const cells = [...document.querySelectorAll('#grid .cell')];
return {
  live: document.getElementById('conn').classList.contains('live'),
  cells: cells.length,
  owners: Object.fromEntries(cells.map(c => [c.dataset.shard, c.dataset.owner])),
  tokens: Object.fromEntries(cells.map(c => [c.dataset.shard, Number(c.dataset.token)])),
  workers: Object.fromEntries([...document.querySelectorAll('#workers tbody tr')].map(tr => [tr.dataset.worker, tr.dataset.state])),
  moves: [...document.querySelectorAll('#moves li')].map(li => ({Kind: li.dataset.kind, Shard: li.dataset.shard,
    Worker: li.dataset.worker, From: li.dataset.from, Text: li.textContent})),
  owned: document.querySelector('#tile-owned .value').textContent,
  assignor: document.querySelector('#tile-assignor .value').textContent,
  assignorEpoch: document.getElementById('tile-assignor').dataset.epoch || '',
  assignorSub: document.querySelector('#tile-assignor .sub').textContent,
  assignorRow: [...document.querySelectorAll('#workers tr[data-assignor="true"]')].map(tr => tr.dataset.worker).join(','),
  stuckBadges: [...document.querySelectorAll('#workers tbody tr .badge.stuck')].map(b => b.closest('tr').dataset.worker).join(','),
  zones: [...document.querySelectorAll('#workers tbody tr')].map(tr => tr.querySelector('td.zone').dataset.zone + ':' + tr.dataset.worker).join(','),
  zoneColumn: getComputedStyle(document.querySelector('#workers th.zone')).display,
  unplaceable: document.getElementById('unplaceable').hidden ? '' : document.getElementById('unplaceable').dataset.shards,
  ownedAssigned: Object.fromEntries([...document.querySelectorAll('#workers tbody tr')].map(tr => [tr.dataset.worker, tr.querySelector('td.num').textContent])),
};`

// TestDashboardInChromium opens the dashboard of a running demo (12 workers,
// 128 shards, on the embedded coordinator) in headless Chromium, checks that
// the grid shows every shard with an owner, crashes a worker with the
// page's own button, and checks that the grid and the moves list update:
// the worker shows dead, its shards have new owners with higher tokens, and
// the moves list names the expiries and the takeovers with their reasons.
// It saves a screenshot to $SHARDLEASE_SCREENSHOT (default: a file in the
// temp dir, named in the log); `make dashboard-screenshot` copies it to
// docs/img/dashboard.png.
func TestDashboardInChromium(t *testing.T) {
	wd := startBrowser(t)
	const shards = 128

	// The demo, in process, with the dashboard served from its OnStart hook.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	var stopServe func()
	ran := make(chan error, 1)
	go func() {
		_, err := demo.Run(ctx, demo.Options{Seed: 11, Store: offmem.New(), OnStart: func(l demo.Live) {
			srv, err := dashboard.New(dashboard.Options{Name: "embedded demo", Coordinator: l.Coordinator, Offsets: l.Offsets,
				Head: func(shard.ID) (int64, bool) { return l.Head(), true }, Gatherer: l.Registry, Crash: l.Crash,
				Events: 2000}) // room for the schedule's own faults besides ours, and for a loaded machine's step-downs
			if err != nil {
				panic(err) // only a nil coordinator
			}
			sctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = srv.Serve(sctx, ln) }()
			stopServe = func() { stop(); <-done }
			close(served)
		}}, io.Discard)
		ran <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("the demo failed: %v", err)
		}
	})
	select {
	case <-served:
		t.Cleanup(func() { stopServe() })
	case err := <-ran:
		t.Fatalf("the demo ended before starting: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the demo did not start within 30s")
	}
	url := "http://" + ln.Addr().String() + "/"
	wd.navigate(url)

	read := func() pageState {
		var s pageState
		if err := wd.eval(readPage, &s); err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		return s
	}
	waitPage := func(within time.Duration, what string, ok func(pageState) string) pageState {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			s := read()
			why := ok(s)
			if why == "" {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("the page did not show %s within %v: %s", what, within, why)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// 1. Every shard has an owner, shown live.
	before := waitPage(20*time.Second, "every shard with an owner", func(s pageState) string {
		free := 0
		for _, o := range s.Owners {
			if o == "" {
				free++
			}
		}
		switch {
		case !s.Live:
			return "the event stream is not connected"
		case s.Cells != shards:
			return fmt.Sprintf("%d cells, want %d", s.Cells, shards)
		case free > 0:
			return fmt.Sprintf("%d shards without an owner", free)
		case s.Owned != "128 / 128":
			return fmt.Sprintf("tile says %q owned", s.Owned)
		}
		return ""
	})

	// 1b. The assignor tile and the worker rows agree with /api/v1/fleet:
	// who holds P/assignor, its epoch, and each worker's owned / assigned.
	waitPage(20*time.Second, "the assignor and owned / assigned per worker as /api/v1/fleet has them", func(s pageState) string {
		f, err := fetchFleet(url)
		switch {
		case err != nil:
			return err.Error()
		case !f.Assignor.Held:
			return "the API shows no assignor yet"
		case s.Assignor != f.Assignor.Worker || s.AssignorEpoch != fmt.Sprint(f.Assignor.Epoch):
			return fmt.Sprintf("tile shows assignor %q epoch %q, the API %s epoch %d", s.Assignor, s.AssignorEpoch, f.Assignor.Worker, f.Assignor.Epoch)
		case !strings.HasPrefix(s.AssignorSub, fmt.Sprintf("epoch %d · since ", f.Assignor.Epoch)):
			return fmt.Sprintf("tile's sub-line %q does not give the epoch and since when", s.AssignorSub)
		case s.AssignorRow != f.Assignor.Worker:
			return fmt.Sprintf("worker rows marked assignor: %q, want %s", s.AssignorRow, f.Assignor.Worker)
		}
		for _, w := range f.Workers {
			if want := fmt.Sprintf("%d / %d", w.Shards, w.Assigned); w.Live() && s.OwnedAssigned[w.ID] != want {
				return fmt.Sprintf("%s shows %q owned / assigned, the API %q", w.ID, s.OwnedAssigned[w.ID], want)
			}
		}
		return ""
	})

	// 2. Crash the live worker with the most shards, with its button. The
	// demo's own schedule crashes a worker too (at 5 s): if it took ours
	// first, or the row was re-rendered under the click, pick again.
	var (
		victim   string
		counts   map[string]int
		crashErr error
	)
	for range 5 {
		counts = map[string]int{}
		for _, o := range before.Owners {
			counts[o]++
		}
		victim = ""
		for w, n := range counts {
			if before.Workers[w] == "live" && (victim == "" || n > counts[victim] || (n == counts[victim] && w < victim)) {
				victim = w
			}
		}
		if crashErr = wd.click(fmt.Sprintf(`#workers tr[data-worker=%q] button.crash`, victim)); crashErr == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
		before = read()
	}
	if crashErr != nil {
		t.Fatalf("clicking crash for %s: %v", victim, crashErr)
	}
	t.Logf("crashed %s, which owned %d shards", victim, counts[victim])

	// 3. The grid and the moves list follow.
	after := waitPage(20*time.Second, victim+"'s shards with new owners and the moves listed", func(s pageState) string {
		if s.Workers[victim] != "dead" {
			return fmt.Sprintf("%s is %q, not dead", victim, s.Workers[victim])
		}
		for sh, o := range before.Owners {
			if o != victim {
				continue
			}
			switch {
			case s.Owners[sh] == "" || s.Owners[sh] == victim:
				return fmt.Sprintf("%s still shows owner %q", sh, s.Owners[sh])
			case s.Tokens[sh] <= before.Tokens[sh]:
				return fmt.Sprintf("%s token %d is not above %d", sh, s.Tokens[sh], before.Tokens[sh])
			}
		}
		expired, taken := 0, 0
		for _, m := range s.Moves {
			if m.Kind == "expired" && m.Worker == victim {
				expired++
			}
			if m.Kind == "acquired" && m.From == victim && strings.Contains(m.Text, "orphaned: "+victim+"'s session invalidated") {
				taken++
			}
		}
		if expired < counts[victim] || taken < counts[victim] {
			return fmt.Sprintf("moves list shows %d expiries and %d takeovers from %s, want %d each", expired, taken, victim, counts[victim])
		}
		return ""
	})
	t.Logf("page after the crash: %d cells, owned tile %q, %d moves listed", after.Cells, after.Owned, len(after.Moves))

	png, err := wd.screenshot()
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := os.Getenv("SHARDLEASE_SCREENSHOT")
	if path == "" {
		path = filepath.Join(os.TempDir(), "shardlease-dashboard.png")
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("saving the screenshot: %v", err)
	}
	t.Logf("screenshot (%d bytes): %s", len(png), path)
}

// fetchFleet reads the dashboard's /api/v1/fleet.
func fetchFleet(url string) (fleetview.Fleet, error) {
	var f fleetview.Fleet
	resp, err := http.Get(url + "api/v1/fleet")
	if err != nil {
		return f, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return f, fmt.Errorf("GET /api/v1/fleet: %s", resp.Status)
	}
	return f, json.NewDecoder(resp.Body).Decode(&f)
}
