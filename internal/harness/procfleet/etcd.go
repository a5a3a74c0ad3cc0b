package procfleet

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/shard/etcd"
)

// EtcdCoordinator is a coordinator of a fleet on etcd with a client of its
// own, which its Close closes too: what a worker of a harness's fleet, or
// a third party (an observer, an operator), holds, as a process would.
type EtcdCoordinator struct {
	*etcd.Coordinator
	cli *clientv3.Client
}

// DialEtcd dials conn and makes a coordinator of cfg's fleet on it
// (cfg.Client is set here).
func DialEtcd(conn etcd.Connection, cfg etcd.Config) (*EtcdCoordinator, error) {
	cli, err := conn.Dial(nil)
	if err != nil {
		return nil, err
	}
	cfg.Client = cli
	c, err := etcd.New(cfg)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	return &EtcdCoordinator{Coordinator: c, cli: cli}, nil
}

// Sever closes the client at once, before anything else: to etcd the
// holder is a process killed with kill -9 (its lease is kept alive no
// more, nor revoked). Close still closes the coordinator.
func (c *EtcdCoordinator) Sever() { _ = c.cli.Close() }

// Close closes the coordinator and its client.
func (c *EtcdCoordinator) Close() { c.Coordinator.Close(); _ = c.cli.Close() }
