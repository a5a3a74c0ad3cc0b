package consulkv_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
)

// TestClassify: what each failure means, for a write and for a read.
func TestClassify(t *testing.T) {
	dial := &url.Error{Op: "Put", URL: "http://127.0.0.1:1/v1/txn", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}
	reset := &url.Error{Op: "Put", URL: "http://127.0.0.1:8500/v1/txn", Err: &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}}
	timeout := &url.Error{Op: "Put", URL: "http://127.0.0.1:8500/v1/txn", Err: context.DeadlineExceeded}
	for _, tc := range []struct {
		err         error
		write, read consulkv.Kind
	}{
		{api.StatusError{Code: 403, Body: "ACL not found"}, consulkv.KindPermission, consulkv.KindPermission},
		{api.StatusError{Code: 500, Body: "rpc error: Permission denied"}, consulkv.KindPermission, consulkv.KindPermission},
		{api.StatusError{Code: 400, Body: "Missing key"}, consulkv.KindRefused, consulkv.KindRefused},
		{api.StatusError{Code: 413, Body: "Transaction contains too many operations (129 > 128)"}, consulkv.KindRefused, consulkv.KindRefused},
		{api.StatusError{Code: 429, Body: "rate limit exceeded"}, consulkv.KindUnavailable, consulkv.KindUnavailable},
		{api.StatusError{Code: 500, Body: "No cluster leader"}, consulkv.KindUnavailable, consulkv.KindUnavailable},
		{api.StatusError{Code: 500, Body: "leadership lost while committing log"}, consulkv.KindOutcomeUnknown, consulkv.KindUnavailable},
		{api.StatusError{Code: 404, Body: "no such thing"}, consulkv.KindOther, consulkv.KindOther},
		{dial, consulkv.KindUnavailable, consulkv.KindUnavailable},
		{reset, consulkv.KindOutcomeUnknown, consulkv.KindUnavailable},
		{timeout, consulkv.KindOutcomeUnknown, consulkv.KindUnavailable},
	} {
		if got := consulkv.Classify(tc.err, true); got != tc.write {
			t.Errorf("Classify(%v, write) = %v, want %v", tc.err, got, tc.write)
		}
		if got := consulkv.Classify(tc.err, false); got != tc.read {
			t.Errorf("Classify(%v, read) = %v, want %v", tc.err, got, tc.read)
		}
	}
}

// TestClassifyRefusal pins the Consul 1.14 texts the backends read.
func TestClassifyRefusal(t *testing.T) {
	for what, want := range map[string]consulkv.Refusal{
		`failed to lock key "p/shards/a", lock is already held`:                                 consulkv.RefusedHeld,
		`failed to lock key "p/shards/b" due to lock delay`:                                     consulkv.RefusedLockDelay,
		`failed to unlock key "p/shards/a", lock isn't held, or is held by another session`:     consulkv.RefusedNotHeld,
		`invalid session "bogus"`:                                                               consulkv.RefusedBadSession,
		`missing session`:                                                                       consulkv.RefusedBadSession,
		`Permission denied: token with AccessorID '0002' lacks permission 'key:write' on "p/x"`: consulkv.RefusedPermission,
		`failed to delete key "p/members/w", index is stale`:                                    consulkv.RefusedStaleIndex,
		`failed to set key "p/offsets/s", index is stale`:                                       consulkv.RefusedStaleIndex,
		`key "p/shards/a" doesn't exist`:                                                        consulkv.RefusedKeyMissing,
		`failed session check for key "p/assignor", current session "" != "s"`:                  consulkv.RefusedCheckFailed,
		`failed index check for key "p/assignor", current modify index 9 != 7`:                  consulkv.RefusedCheckFailed,
		`something new`: consulkv.RefusedOther,
	} {
		if got := consulkv.ClassifyRefusal(what); got != want {
			t.Errorf("ClassifyRefusal(%q) = %d, want %d", what, got, want)
		}
	}
}

// TestRequestTimeoutCause: the request's own bound is told from the
// caller's end by the context alone.
func TestRequestTimeoutCause(t *testing.T) {
	ctx, cancel := consulkv.WithRequestTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if d, ok := consulkv.TimedOut(ctx); !ok || d != time.Nanosecond || consulkv.CallerCause(ctx) != nil {
		t.Fatalf("request bound passed: TimedOut = %v, %v; CallerCause = %v", d, ok, consulkv.CallerCause(ctx))
	}
	if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatalf("the cause %v does not match context.DeadlineExceeded", context.Cause(ctx))
	}

	lost := errors.New("lease lost")
	parent, stop := context.WithCancelCause(context.Background())
	ctx, cancel = consulkv.WithRequestTimeout(parent, time.Hour)
	defer cancel()
	if consulkv.CallerCause(ctx) != nil {
		t.Fatal("a live context has a cause")
	}
	stop(lost)
	if _, ok := consulkv.TimedOut(ctx); ok || !errors.Is(consulkv.CallerCause(ctx), lost) {
		t.Fatalf("caller ended: CallerCause = %v, want %v", consulkv.CallerCause(ctx), lost)
	}
}

func TestLocalAgent(t *testing.T) {
	for address, want := range map[string]bool{
		"127.0.0.1:8500":          true,
		"127.0.0.2:8500":          true,
		"localhost:8500":          true,
		"[::1]:8500":              true,
		"http://127.0.0.1:8500":   true,
		"https://localhost:8501":  true,
		"unix:///var/consul.sock": true,
		"10.0.0.5:8500":           false,
		"consul.service:8500":     false,
		"https://consul.example":  false,
		"192.168.1.1":             false,
	} {
		if got := consulkv.LocalAgent(address); got != want {
			t.Errorf("LocalAgent(%q) = %v, want %v", address, got, want)
		}
	}
}
