package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
)

// EtcdSource is the etcd a run's scenarios share: given (--etcd), or one
// member started from bin/etcd the first time a scenario asks for it, so
// that a run of Consul's scenarios alone starts none.
type EtcdSource struct {
	given []string
	log   io.Writer

	mu      sync.Mutex
	cluster *etcdtest.Cluster
	err     error
}

// NewEtcdSource is the run's etcd: at endpoints when given, else started
// on first use.
func NewEtcdSource(endpoints []string, log io.Writer) *EtcdSource {
	return &EtcdSource{given: endpoints, log: log}
}

// Endpoints returns the run's etcd's client endpoints, starting a member
// the first time when none was given. A start that failed fails every
// later call the same way.
func (s *EtcdSource) Endpoints() ([]string, error) {
	if s == nil {
		return nil, fmt.Errorf("this run has no etcd: the scenario needs one, and the Env was made without Env.Etcd (shardbench sets it from --etcd ENDPOINTS, or starts one from bin/etcd)")
	}
	if len(s.given) > 0 {
		return s.given, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cluster == nil && s.err == nil {
		s.err = s.build()
	}
	if s.cluster == nil && s.err == nil {
		if s.cluster, s.err = etcdtest.Launch(1); s.err != nil {
			s.err = fmt.Errorf("starting etcd for the run: %w", s.err)
		} else {
			fmt.Fprintf(s.log, "shardbench: started an etcd member on %s (data in %s)\n", s.cluster.Endpoints()[0], s.cluster.Members[0].Dir)
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	return s.cluster.Endpoints(), nil
}

// build builds bin/etcd with scripts/etcd.sh when it is missing, as
// ObtainConsul builds Consul; a binary named by $SHARDLEASE_ETCD is not
// built.
func (s *EtcdSource) build() error {
	_, err := etcdtest.FindBinary()
	if err == nil || os.Getenv(etcdtest.EnvBinary) != "" {
		return err
	}
	fmt.Fprintf(s.log, "shardbench: %v\nshardbench: building it with scripts/etcd.sh …\n", err)
	return buildServer(context.Background(), s.log, "etcd", etcdtest.FindBinary)
}

// Stop stops a member started here.
func (s *EtcdSource) Stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cluster != nil {
		_ = s.cluster.Close()
		s.cluster = nil
	}
}
