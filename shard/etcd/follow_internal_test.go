package etcd

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
)

// TestFollowSeesAWriteBetweenItsReadAndItsWatch: follow reads a key
// unchanged since after and so starts its watch after the read's
// revision; a write that lands between that read and the watch's start is
// still seen at once, not left for WatchWait.
func TestFollowSeesAWriteBetweenItsReadAndItsWatch(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: cluster.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	const wait = 10 * time.Second
	c, err := New(Config{Client: cli, Prefix: "follow-test", WatchWait: wait})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := "follow-test/k"
	put, err := cli.Put(t.Context(), key, "v1")
	if err != nil {
		t.Fatal(err)
	}
	after := uint64(put.Header.Revision)
	reads := 0
	read := func(ctx context.Context) ([]string, uint64, int64, error) {
		reads++
		got, err := cli.Get(ctx, key)
		if err != nil {
			return nil, 0, 0, err
		}
		if reads == 1 { // the write between this read and the watch
			if _, err := cli.Put(ctx, key, "v2"); err != nil {
				return nil, 0, 0, err
			}
		}
		return []string{key}, uint64(got.Kvs[0].ModRevision), got.Header.Revision, nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*wait)
	defer cancel()
	began := time.Now()
	index, err := c.follow(ctx, "test", after, read)
	if err != nil {
		t.Fatal(err)
	}
	if index == after || reads != 2 {
		t.Fatalf("follow returned index %d after %d reads, want the write's index past %d after a second read", index, reads, after)
	}
	if took := time.Since(began); took >= wait {
		t.Errorf("follow took %v, WatchWait or more: the write between its read and its watch was missed", took)
	}
}
