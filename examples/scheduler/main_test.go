package main

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEveryInvoiceExactlyOnceAcrossAKillAndAPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		o := defaultOptions()
		res, err := run(t.Context(), o, &out)
		t.Logf("transcript:\n%s", out.String())
		if err != nil {
			t.Fatal(err)
		}
		if err := res.check(); err != nil {
			t.Fatal(err)
		}
		if len(res.terms) != 3 {
			t.Fatalf("terms %+v, want exactly three", res.terms)
		}
		if res.killed == "" || res.cut == "" || res.killed == res.cut {
			t.Errorf("killed %q, cut off %q: want two different leaders", res.killed, res.cut)
		}
		// Each term resumed from its predecessor's last checkpoint, not from
		// what it had enqueued: the gap is what the idempotency keys absorb.
		if got := []int64{res.terms[0].from, res.terms[1].from, res.terms[2].from}; got[0] != 0 || got[1] != 3 || got[2] != 6 {
			t.Errorf("terms resumed from %v, want [0 3 6]", got)
		}
		if res.dups != (o.killAt-3)+(o.cutAt-6) {
			t.Errorf("%d duplicates refused, want %d", res.dups, (o.killAt-3)+(o.cutAt-6))
		}
		byTerm := map[string]int{}
		for _, tok := range res.queued {
			for _, tm := range res.terms {
				if tm.token == tok {
					byTerm[tm.leader]++
				}
			}
		}
		if byTerm[res.killed] != o.killAt || byTerm[res.cut] != o.cutAt-o.killAt {
			t.Errorf("jobs queued per leader %v: the killed one must have queued %d, the cut-off one %d", byTerm, o.killAt, o.cutAt-o.killAt)
		}
		// A dead process says nothing after its death.
		after := strings.SplitN(out.String(), "is killed mid-batch", 2)[1]
		if strings.Contains(after, "\n"+res.killed+" ") {
			t.Errorf("the killed instance %s still reports after its death", res.killed)
		}
		for _, want := range []string{"candidate", "leader (token", "stepping_down: worker: shard lost", "follower of", "every invoice exactly once"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("transcript lacks %q", want)
			}
		}
	})
}
