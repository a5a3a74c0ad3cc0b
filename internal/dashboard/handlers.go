package dashboard

import (
	"bytes"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"
)

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	if err := s.page.Execute(&buf, struct {
		Name  string
		Crash bool
	}{s.o.Name, s.o.Crash != nil}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) fleetJSON(w http.ResponseWriter, r *http.Request) {
	data, ready, _ := s.hub.get()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if data == nil {
		data = []byte(`{"error":"no snapshot of the fleet read yet"}`)
	}
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write(data)
	_, _ = w.Write([]byte("\n"))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if f, ok := s.Fleet(); !ok || f.Error != "" {
		http.Error(w, "no current view of the fleet", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// heartbeat keeps idle event streams open through proxies.
const heartbeat = 15 * time.Second

// events streams the view: one "fleet" event at once, then one per change.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()

	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	var sent []byte
	for {
		data, _, changed := s.hub.get()
		if data != nil && !bytes.Equal(data, sent) {
			if _, err := fmt.Fprintf(w, "event: fleet\ndata: %s\n\n", data); err != nil {
				return
			}
			flusher.Flush()
			sent = data
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// crash is the demo's fault injection: crash one worker.
func (s *Server) crash(w http.ResponseWriter, r *http.Request) {
	// A custom header forces a CORS preflight, which is never answered:
	// another site's page cannot crash workers through a visitor's browser.
	if r.Header.Get("X-Shardlease-Action") != "crash" {
		http.Error(w, "missing header X-Shardlease-Action: crash", http.StatusForbidden)
		return
	}
	id := r.PathValue("id")
	if err := s.o.Crash(id); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	s.o.Logger.Info("crashed a worker from the dashboard", zap.String("worker", id))
	w.WriteHeader(http.StatusNoContent)
}
