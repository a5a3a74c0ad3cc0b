package bench_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/internal/bench"
)

// TestJSONReportSurvivesNaN: a figure with no value (a p50 over trials that
// never converged is NaN) must not turn the whole JSON report into an
// error: it is dropped and the row's note says so.
func TestJSONReportSurvivesNaN(t *testing.T) {
	r := bench.Report{Results: []bench.Result{bench.Measured("s", bench.SystemShardlease, "m", "s", []float64{1}).With("never", math.NaN())}}
	var b bytes.Buffer
	r.WriteJSON(&b)
	var back bench.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Results) != 1 {
		t.Fatalf("JSON report with a NaN figure: %v\n%s", err, b.String())
	}
	if _, ok := back.Results[0].Extra["never"]; ok || !strings.Contains(back.Results[0].Note, "never: no value") {
		t.Fatalf("NaN figure: extra %v, note %q; want it dropped and named in the note", back.Results[0].Extra, back.Results[0].Note)
	}
}
