package docscheck_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

var policyMarker = regexp.MustCompile(`<!-- policy-test ([^>]*)-->`)

// TestTuningNumbers: every worked lease policy in docs/tuning.md passes or
// fails shard.LeasePolicy's rules as the document says, with the stated need
// (2·renew + pause) and step-down point (ttl − pause); a failing one is
// quoted with the exact error the worker gives.
func TestTuningNumbers(t *testing.T) {
	doc := docFile(t, "tuning.md")
	markers := policyMarker.FindAllStringSubmatch(doc, -1)
	if len(markers) < 5 {
		t.Fatalf("docs/tuning.md has %d <!-- policy-test … --> markers; its worked examples should each carry one", len(markers))
	}
	sawDefault, sawFast := false, false
	for _, m := range markers {
		f := map[string]string{}
		for _, kv := range strings.Fields(m[1]) {
			k, v, _ := strings.Cut(kv, "=")
			f[k] = v
		}
		dur := func(k string) time.Duration {
			d, err := time.ParseDuration(f[k])
			if err != nil {
				t.Fatalf("marker %q: %s=%q: %v", m[0], k, f[k], err)
			}
			return d
		}
		p := shard.LeasePolicy{TTL: dur("ttl"), RenewEvery: dur("renew"), PauseBudget: dur("pause")}
		if _, ok := f["lockdelay"]; ok {
			p.LockDelay = dur("lockdelay")
		}
		sawDefault = sawDefault || p == shard.DefaultPolicy
		sawFast = sawFast || p == shard.FastPolicy
		err := p.Validate()
		if valid := f["valid"] == "true"; valid != (err == nil) {
			t.Errorf("%s: the document says valid=%v, Validate says %v", m[0], valid, err)
		}
		if need := dur("need"); p.Need() != need {
			t.Errorf("%s: need %v, the rule gives %v", m[0], need, p.Need())
		}
		if sd := dur("stepdown"); p.StepDownAfter() != sd {
			t.Errorf("%s: step-down %v, the worker steps down %v after a renewal", m[0], sd, p.StepDownAfter())
		}
		if err != nil && !strings.Contains(doc, err.Error()) {
			t.Errorf("%s: the document should quote the worker's refusal verbatim: %q", m[0], err.Error())
		}
	}
	if !sawFast {
		t.Errorf("no worked example is shard.FastPolicy %+v: the fast policy the document recommends is not the code's", shard.FastPolicy)
	}
	if !sawDefault {
		t.Errorf("no worked example is shard.DefaultPolicy %+v: the document's 'defaults' are not the code's", shard.DefaultPolicy)
	}
	for _, want := range []string{
		fmt.Sprintf("minimum session TTL is %d s", int(consul.MinSessionTTL.Seconds())),
		fmt.Sprintf("the maximum Consul honours is %d s", int(consul.MaxLockDelay.Seconds())),
		"TTL − PauseBudget after the start of its last successful renewal",
		"LockDelay ≥ TTL − PauseBudget",
	} {
		if !strings.Contains(strings.Join(strings.Fields(doc), " "), want) {
			t.Errorf("docs/tuning.md does not say %q", want)
		}
	}
}
