package main

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/shardlease/shardlease/examples/jetstream/pipeline"
	"github.com/shardlease/shardlease/internal/pgserver"
	"github.com/shardlease/shardlease/offsets/postgres"
)

// servers are the log and the database of a run: the ones named on the
// command line, or started here and stopped by close.
type servers struct {
	natsURL, dsn string
	what         []string // what was started, for the transcript
	closers      []func()
}

func startServers(o options) (*servers, error) {
	s := &servers{natsURL: o.natsURL, dsn: o.postgresDSN}
	if s.dsn == "" {
		pg, err := pgserver.Launch()
		if err != nil {
			return nil, fmt.Errorf("starting a throwaway PostgreSQL (or give --postgres): %w", err)
		}
		s.closers = append(s.closers, func() { _ = pg.Close() })
		s.dsn = pg.DSN("postgres")
		s.what = append(s.what, fmt.Sprintf("a throwaway %s on 127.0.0.1:%d", pg.Version, pg.Port))
	} else {
		s.what = append(s.what, "PostgreSQL at "+postgres.RedactDSN(s.dsn))
	}
	if s.natsURL == "" {
		dir, err := os.MkdirTemp("", "jetstream-example-")
		if err != nil {
			s.close()
			return nil, err
		}
		js, err := pipeline.StartEmbedded(dir)
		if err != nil {
			_ = os.RemoveAll(dir)
			s.close()
			return nil, err
		}
		s.closers = append(s.closers, func() { js.Close(); _ = os.RemoveAll(dir) })
		s.natsURL = js.URL()
		s.what = append(s.what, "nats-server (JetStream) in-process at "+s.natsURL)
	} else {
		s.what = append(s.what, "JetStream at "+s.natsURL)
	}
	return s, nil
}

// close stops what was started, the last started first.
func (s *servers) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// withPoolSize returns dsn with pgxpool's pool_max_conns set to n.
func withPoolSize(dsn string, n int) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		q := u.Query()
		q.Set("pool_max_conns", fmt.Sprint(n))
		u.RawQuery = q.Encode()
		return u.String()
	}
	return strings.TrimSpace(dsn) + fmt.Sprintf(" pool_max_conns=%d", n)
}
