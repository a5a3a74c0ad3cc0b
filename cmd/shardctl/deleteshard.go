package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/shardlease/shardlease/shard"
)

func (a *app) deleteShard(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl delete-shard", flag.ContinueOnError)
	conn := a.connFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl delete-shard -prefix P [flags] SHARD

Deletes the shard key P/shards/SHARD that a hand edit left: a key outside
the fleet's config (a mistyped name; 'shardctl status' lists it under
PROBLEMS), or a free key of one of the fleet's shards whose value was
overwritten. SHARD is the key's name under P/shards/, in full. A key held
by a session is never deleted: release the shard instead ('shardctl
release'), or, for held keys outside the config, restore P/config. The next
owner of a deleted shard still acquires it with a higher token.

`)
		fs.PrintDefaults()
	}
	pos, fc, err := a.openFleet(fs, conn, args, 1, "SHARD")
	if err != nil {
		return err
	}
	defer fc.close()
	d, err := fc.operator(a).DeleteShard(ctx, fc.keys, shard.ID(pos[0]))
	if err != nil {
		return fc.explain(err, "read")
	}
	key := fc.name + "/shards/" + string(d.Shard)
	if d.InFleet {
		fmt.Fprintf(a.stdout, "deleted %s (free, token %d); the shard's next owner creates it again with a higher token\n", key, d.Token)
		return nil
	}
	fmt.Fprintf(a.stdout, "deleted %s, which was not one of the fleet's shards\n", key)
	return nil
}
