package lincheck

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/shardlease/shardlease/offsets"
)

// CheckTimeout bounds porcupine's search. A history the search cannot
// settle within it fails the test as unknown; the workloads here settle in
// well under a second.
const CheckTimeout = 15 * time.Second

// Check runs porcupine on a recorded history.
func Check(history []porcupine.Operation) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	return porcupine.CheckOperationsVerbose(Model, history, CheckTimeout)
}

// Run records the workload against stores and fails t unless porcupine
// finds the history linearizable. Every store gets a share of the clients,
// so several stores on one namespace (one prefix, one table) act as
// several workers would.
func Run(t *testing.T, stores []offsets.Store, w Workload) {
	t.Helper()
	if len(stores) == 0 {
		t.Fatal("lincheck.Run: no stores")
	}
	start := time.Now()
	history, errs := Record(stores, w)
	recorded := time.Since(start)
	for i, err := range errs {
		if i == 10 {
			t.Errorf("… and %d more", len(errs)-i)
			break
		}
		t.Errorf("unexpected error: %v", err)
	}
	var stale, loads, overlapped int
	for _, op := range history {
		if op.Return-op.Call > 1 { // another call or return happened in between
			overlapped++
		}
		if op.Output.(Output).Stale {
			stale++
		}
		if op.Input.(Input).Kind == Load {
			loads++
		}
	}
	start = time.Now()
	result, info := Check(history)
	t.Logf("%d operations (%d loads, %d rejected as stale, %d overlapping another) recorded in %v, checked in %v: %s",
		len(history), loads, stale, overlapped, recorded.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), result)
	if stale == 0 || stale == len(history)-loads {
		t.Errorf("degenerate workload: %d of %d writes rejected; the check proves little", stale, len(history)-loads)
	}
	if overlapped < len(history)/4 {
		t.Errorf("only %d of %d operations overlapped another: the calls barely raced, the check proves little", overlapped, len(history))
	}
	if result != porcupine.Ok {
		t.Errorf("history is not linearizable (%s)%s", result, visualize(info))
	}
}

// visualize writes porcupine's HTML for a failed check and says where.
func visualize(info porcupine.LinearizationInfo) string {
	f, err := os.CreateTemp("", "lincheck-*.html")
	if err != nil {
		return ""
	}
	defer f.Close()
	if err := porcupine.Visualize(Model, info, f); err != nil {
		return fmt.Sprintf(" (visualisation failed: %v)", err)
	}
	return fmt.Sprintf("; porcupine's visualisation: %s", f.Name())
}
