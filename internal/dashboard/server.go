package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/internal/history"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

//go:embed assets
var assets embed.FS

// ErrNoCoordinator: Options.Coordinator is nil.
var ErrNoCoordinator = errors.New("dashboard: no coordinator")

// Options configure a Server. Only Coordinator is required.
type Options struct {
	// Name is the fleet's name on the page (its KV prefix, or "embedded").
	Name string
	// Coordinator is watched for the fleet's snapshots.
	Coordinator shard.Coordinator
	// Offsets, if set, is read for every shard's checkpoint, every Refresh.
	Offsets offsets.Store
	// Head, if set, returns a shard's stream head, for lag (with Offsets).
	Head func(shard.ID) (int64, bool)
	// Gatherer, if set, is served at /metrics.
	Gatherer prometheus.Gatherer
	// Crash, if set, adds a crash button per live worker (the demo's
	// fault injection). Never set it for a real fleet.
	Crash func(worker string) error
	// MaxMovesInFlight, if set, is the fleet's move budget (the workers'
	// worker.Config.MaxMovesInFlight), shown with the move queue; 0:
	// unknown, and the queue is shown without it.
	MaxMovesInFlight int
	// Tolerance, if set, is the workers' imbalance tolerance (their
	// worker.Config.LoadBalance.Tolerance), drawn as the band of the load
	// bars; 0: rebalance.DefaultTolerance.
	Tolerance float64
	// Refresh is how often offsets are re-read when the coordinator has
	// not changed. Default 1 s.
	Refresh time.Duration
	// Events is how many recent events the page shows. Default 60.
	Events int
	// Logger; default zap.NewNop().
	Logger *zap.Logger
}

// Server is the dashboard of one fleet. Create it with New, start it with
// Serve (or Run plus the Handler in a server of your own).
type Server struct {
	o       Options
	tracker *fleetview.Tracker
	page    *template.Template
	mux     *http.ServeMux
	hub     hub
}

// New validates o and returns a Server; it does not contact anything.
func New(o Options) (*Server, error) {
	if o.Coordinator == nil {
		return nil, ErrNoCoordinator
	}
	if o.Refresh <= 0 {
		o.Refresh = time.Second
	}
	if o.Events <= 0 {
		o.Events = 60
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Name == "" {
		o.Name = "fleet"
	}
	page, err := template.ParseFS(assets, "assets/index.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: parsing the page template: %w", err)
	}
	s := &Server{o: o, tracker: fleetview.NewTracker(max(200, o.Events)), page: page, mux: http.NewServeMux()}
	s.hub.changed = make(chan struct{})
	static, _ := fs.Sub(assets, "assets")
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /api/v1/fleet", s.fleetJSON)
	s.mux.HandleFunc("GET /api/v1/events", s.events)
	s.mux.HandleFunc("GET /healthz", s.healthz)
	if o.Gatherer != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
	}
	if o.Crash != nil {
		s.mux.HandleFunc("POST /api/v1/workers/{id}/crash", s.crash)
	}
	return s, nil
}

// Handler returns the dashboard's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Fleet returns the latest view, and false before the first snapshot.
func (s *Server) Fleet() (fleetview.Fleet, bool) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.hub.fleet, s.hub.ready
}

// Serve runs the dashboard on ln until ctx ends: it follows the fleet and
// serves HTTP, then shuts down (open event streams end with ctx).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.Run(ctx) })
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-errc
		return nil
	}
}

// rebuildEvery is the shortest time between two views: a burst of
// coordinator changes costs one update to every client.
const rebuildEvery = 250 * time.Millisecond

// Run follows the fleet until ctx ends, rebuilding the view on every change
// (at most every 250 ms) and every Refresh when offsets are shown.
func (s *Server) Run(ctx context.Context) {
	s.seedFromHistory(ctx)
	snaps := make(chan shard.Snapshot, 1)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		_ = fleetview.Follow(ctx, s.o.Coordinator.Fleet().Watch, func(snap shard.Snapshot) error {
			select { // only the latest matters
			case <-snaps:
			default:
			}
			snaps <- snap
			return nil
		}, func(err error) bool {
			select {
			case <-errs:
			default:
			}
			errs <- err
			return true
		})
	})

	tick := time.NewTicker(rebuildEvery)
	defer tick.Stop()
	var (
		latest    *shard.Snapshot
		lastErr   error
		dirty     bool
		lastBuild time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return
		case snap := <-snaps:
			s.tracker.Observe(snap, time.Now())
			latest, lastErr, dirty = &snap, nil, true
		case err := <-errs:
			if lastErr == nil || lastErr.Error() != err.Error() {
				s.o.Logger.Warn("cannot read the fleet; showing the last view", zap.Error(err))
			}
			lastErr, dirty = err, true
		case <-tick.C:
			if latest == nil && lastErr == nil {
				continue
			}
			if !dirty && (s.o.Offsets == nil || time.Since(lastBuild) < s.o.Refresh) {
				continue
			}
			s.publish(ctx, latest, lastErr)
			dirty, lastBuild = false, time.Now()
		}
	}
}

// seedFromHistory starts the recent moves from the fleet's recorded
// ownership history (P/history), so a dashboard opened after an incident
// shows it. Without one (a fleet of an older release, a log this build
// cannot read, a failed read) the moves start from the owners' keys, as
// before; the failure is logged, never fatal.
func (s *Server) seedFromHistory(ctx context.Context) {
	value, _, err := s.o.Coordinator.History().Read(ctx)
	if err == nil {
		var l history.Log
		if l, err = history.Decode(value); err == nil {
			s.tracker.Seed(l.Changes)
			return
		}
	}
	if ctx.Err() == nil {
		s.o.Logger.Warn("cannot read the fleet's ownership history; recent moves start from the owners' keys", zap.Error(err))
	}
}

// publish builds the view and hands it to every client.
func (s *Server) publish(ctx context.Context, snap *shard.Snapshot, lastErr error) {
	in := fleetview.Input{Name: s.o.Name, Events: s.tracker.Recent(s.o.Events), MaxMovesInFlight: s.o.MaxMovesInFlight,
		Tolerance: s.o.Tolerance, Now: time.Now()}
	if snap != nil {
		in.Snapshot = *snap
	}
	var problems []string
	if s.o.Offsets != nil && snap != nil && snap.Config != nil {
		ids := snap.Config.IDs()
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		cps, err := fleetview.LoadOffsets(octx, s.o.Offsets, ids)
		cancel()
		if err != nil {
			problems = append(problems, "offsets: "+err.Error())
		} else {
			in.Offsets = cps
			if s.o.Head != nil {
				in.Heads = make(map[shard.ID]int64, len(ids))
				for _, id := range ids {
					if h, ok := s.o.Head(id); ok {
						in.Heads[id] = h
					}
				}
			}
		}
	}
	f := fleetview.Build(in)
	f.Problems = append(f.Problems, problems...)
	if lastErr != nil {
		f.Error = lastErr.Error()
	}
	if in.Events == nil {
		f.Events = []fleetview.Event{}
	}
	s.hub.set(f, snap != nil)
}

// hub holds the latest view and wakes the event streams when it changes.
type hub struct {
	mu      sync.Mutex
	fleet   fleetview.Fleet
	data    []byte // the view as JSON; before the first snapshot, just the error
	ready   bool   // a snapshot was read
	changed chan struct{}
}

func (h *hub) set(f fleetview.Fleet, ready bool) {
	var v any = f
	if !ready {
		v = struct {
			Error string `json:"error"`
		}{f.Error}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fleet, h.data, h.ready = f, data, ready
	close(h.changed)
	h.changed = make(chan struct{})
}

// get returns the latest JSON, whether it is a view, and a channel closed
// at the next change.
func (h *hub) get() ([]byte, bool, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.data, h.ready, h.changed
}
