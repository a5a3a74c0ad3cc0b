package main

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/shardlease/shardlease/shard/memory"
)

// TestBadInputIsOneLine: every refusal is one line on stderr naming the
// value that was wrong, with a non-zero exit and no stack trace.
func TestBadInputIsOneLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 8, "w1", "w2")
		for _, tc := range []struct {
			name string
			args []string
			code int
			want []string
		}{
			{"unknown worker", []string{"drain", "-prefix", "orders", "nope"}, 1, []string{`no worker "nope" in fleet orders (workers: w1, w2)`}},
			{"undrain unknown worker", []string{"undrain", "-prefix", "orders", "nope"}, 1, []string{`no worker "nope"`}},
			{"unknown shard", []string{"release", "-prefix", "orders", "-yes", "stream/shard-999"}, 1,
				[]string{`no shard "stream/shard-999" in fleet orders (it has 8 shards: stream/shard-000 … stream/shard-007, or a number 0..7)`}},
			{"shard number out of range", []string{"release", "-prefix", "orders", "-yes", "8"}, 1, []string{`no shard "8"`}},
			{"missing worker", []string{"drain", "-prefix", "orders"}, 2, []string{"missing WORKER"}},
			{"extra argument", []string{"release", "-prefix", "orders", "1", "2"}, 2, []string{`unexpected argument "2" after SHARD "1"`}},
			{"status argument", []string{"status", "-prefix", "orders", "w1"}, 2, []string{`unexpected argument "w1"`}},
			{"no prefix", []string{"status"}, 2, []string{"-prefix is required"}},
			{"unknown command", []string{"stauts"}, 2, []string{`unknown command "stauts"`}},
		} {
			code, out, errOut := f.run(t.Context(), "", tc.args...)
			t.Logf("%s: %s", tc.name, errOut)
			wantOneLineError(t, code, out, errOut, tc.code, tc.want...)
		}

		// Draining the last worker not draining would strand its shards.
		f.stop("w2")
		code, out, errOut := f.run(t.Context(), "", "drain", "-prefix", "orders", "w1")
		wantOneLineError(t, code, out, errOut, 1, "w1 is the only live worker not draining")
		code, out, errOut = f.run(t.Context(), "", "drain", "-prefix", "orders", "w2")
		wantOneLineError(t, code, out, errOut, 1, `worker "w2" is dead`)
	})
}

// TestNoFleetAtPrefix: a prefix with nothing under it says so, for every
// command that reads the fleet.
func TestNoFleetAtPrefix(t *testing.T) {
	empty := memory.New()
	for _, args := range [][]string{
		{"status", "-prefix", "shardlease/typo"},
		{"watch", "-prefix", "shardlease/typo"},
		{"drain", "-prefix", "shardlease/typo", "w1"},
		{"release", "-prefix", "shardlease/typo", "1"},
		{"delete-shard", "-prefix", "shardlease/typo", "stream/shard-001"},
		{"undrain", "-prefix", "shardlease/typo", "w1"},
		{"dashboard", "-prefix", "shardlease/typo", "-http", "127.0.0.1:0"},
	} {
		a, out, errOut := newApp("")
		a.connect = func(c connFlags) (*fleetConn, error) {
			return &fleetConn{coord: empty, name: c.consul.Prefix, addr: "the embedded coordinator"}, nil
		}
		code := a.run(context.Background(), args)
		wantOneLineError(t, code, out.String(), errOut.String(), 1,
			`no fleet at prefix "shardlease/typo" on the embedded coordinator: there is no shardlease/typo/config key; check -prefix`)
	}
}

// TestConsulUnreachable: nothing listens at the address (port 1 is never
// open for us): one line naming the address and the way to change it.
func TestConsulUnreachable(t *testing.T) {
	for _, args := range [][]string{
		{"status", "-prefix", "orders", "-consul", "127.0.0.1:1"},
		{"watch", "-prefix", "orders", "-consul", "127.0.0.1:1"},
		{"drain", "-prefix", "orders", "-consul", "127.0.0.1:1", "w1"},
		{"release", "-prefix", "orders", "-consul", "127.0.0.1:1", "-yes", "3"},
		{"delete-shard", "-prefix", "orders", "-consul", "127.0.0.1:1", "stream/shard-003"},
		{"dashboard", "-prefix", "orders", "-consul", "127.0.0.1:1", "-http", "127.0.0.1:0"},
	} {
		a, out, errOut := newApp("")
		code := a.run(context.Background(), args)
		wantOneLineError(t, code, out.String(), errOut.String(), 1,
			"cannot reach Consul at 127.0.0.1:1 (connection refused); check -consul or CONSUL_HTTP_ADDR")
	}
	// The environment is read as the consul CLI reads it.
	a, out, errOut := newApp("")
	a.getenv = func(k string) string { return map[string]string{"SHARDLEASE_PREFIX": "orders"}[k] }
	t.Setenv("CONSUL_HTTP_ADDR", "127.0.0.1:1")
	code := a.run(context.Background(), []string{"status"})
	wantOneLineError(t, code, out.String(), errOut.String(), 1, "cannot reach Consul at 127.0.0.1:1")
}
