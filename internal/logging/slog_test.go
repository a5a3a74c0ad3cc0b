package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestFromSlog: zap's levels, message, fields (With's and the call's) and
// name arrive in the slog handler, and a level the handler does not want
// is not written.
func TestFromSlog(t *testing.T) {
	var buf bytes.Buffer
	l := FromSlog(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Debug("hidden")
	l.Named("worker").With(zap.String("worker", "w1")).Warn("coordinator not reachable; retrying", zap.Error(errors.New("refused")), zap.Int("try", 3))
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("one JSON line, got %q: %v", buf.String(), err)
	}
	want := map[string]any{"level": "WARN", "msg": "coordinator not reachable; retrying", "worker": "w1", "logger": "worker", "error": "refused", "try": float64(3)}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, got[k], v, buf.String())
		}
	}
}

// TestFromSlogAtAHigherLevel: FromSlogAt writes nothing below its level,
// and a handler that wants less still gets only what it wants (no error
// about raising a level).
func TestFromSlogAtAHigherLevel(t *testing.T) {
	var buf bytes.Buffer
	l := FromSlogAt(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError})), zap.WarnLevel)
	l.Info("no")
	l.Warn("no: the handler wants errors only")
	l.Error("yes")
	if out := buf.String(); strings.Count(out, "msg=") != 1 || !strings.Contains(out, "msg=yes") {
		t.Errorf("got %q, want only the error", out)
	}
}
