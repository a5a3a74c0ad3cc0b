package offsets

import (
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const s7 = shard.ID("stream/shard-007")

func TestApplyCommit(t *testing.T) {
	cp := Checkpoint{Offset: 100, Token: 40, Floor: 42} // fenced at 42 after a commit at 40
	tests := []struct {
		name    string
		shard   shard.ID
		token   shard.Token
		offset  int64
		want    Checkpoint
		wantErr error
		wantMsg string
	}{
		{name: "stale", shard: s7, token: 41, offset: 200, want: cp, wantErr: ErrStaleToken,
			wantMsg: "offsets: stale fencing token: shard stream/shard-007: token 41 is below floor 42"},
		{name: "token that wrote the offset is now stale", shard: s7, token: 40, offset: 200, want: cp, wantErr: ErrStaleToken,
			wantMsg: "offsets: stale fencing token: shard stream/shard-007: token 40 is below floor 42"},
		{name: "equal to floor overwrites", shard: s7, token: 42, offset: 200, want: Checkpoint{200, 42, 42}},
		{name: "equal may go backwards", shard: s7, token: 42, offset: 7, want: Checkpoint{7, 42, 42}},
		{name: "higher raises floor", shard: s7, token: 50, offset: 300, want: Checkpoint{300, 50, 50}},
		{name: "offset zero", shard: s7, token: 42, offset: 0, want: Checkpoint{0, 42, 42}},
		{name: "negative offset", shard: s7, token: 50, offset: -3, want: cp, wantErr: ErrInvalidOffset,
			wantMsg: "offsets: invalid offset: shard stream/shard-007: offset -3 is negative"},
		{name: "negative offset beats stale", shard: s7, token: 1, offset: -3, want: cp, wantErr: ErrInvalidOffset},
		{name: "empty shard", shard: "", token: 50, offset: 1, want: cp, wantErr: shard.ErrInvalidArgument,
			wantMsg: "offsets: empty shard ID: shard: invalid argument"},
		{name: "zero token", shard: s7, token: 0, offset: 1, want: cp, wantErr: shard.ErrInvalidArgument,
			wantMsg: "offsets: shard stream/shard-007: token 0 is not a fencing token: shard: invalid argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ApplyCommit(cp, tt.shard, tt.token, tt.offset)
			check(t, got, err, tt.want, tt.wantErr, tt.wantMsg)
		})
	}
}

func TestApplyFence(t *testing.T) {
	cp := Checkpoint{Offset: 100, Token: 40, Floor: 42}
	tests := []struct {
		name    string
		shard   shard.ID
		token   shard.Token
		want    Checkpoint
		wantErr error
		wantMsg string
	}{
		{name: "higher raises floor, keeps offset", shard: s7, token: 43, want: Checkpoint{100, 40, 43}},
		{name: "equal is a no-op", shard: s7, token: 42, want: cp},
		{name: "lower is stale", shard: s7, token: 41, want: cp, wantErr: ErrStaleToken,
			wantMsg: "offsets: stale fencing token: shard stream/shard-007: token 41 is below floor 42"},
		{name: "empty shard", shard: "", token: 43, want: cp, wantErr: shard.ErrInvalidArgument},
		{name: "zero token", shard: s7, token: 0, want: cp, wantErr: shard.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ApplyFence(cp, tt.shard, tt.token)
			check(t, got, err, tt.want, tt.wantErr, tt.wantMsg)
		})
	}
}

func TestApplyFenceOnZero(t *testing.T) {
	got, err := ApplyFence(Checkpoint{}, s7, 1)
	check(t, got, err, Checkpoint{Floor: 1}, nil, "")
}

func TestStaleTokenErrorAs(t *testing.T) {
	_, err := ApplyCommit(Checkpoint{Floor: 9}, s7, 3, 1)
	var st *StaleTokenError
	if !errors.As(err, &st) {
		t.Fatalf("errors.As(%v, *StaleTokenError) = false", err)
	}
	if want := (StaleTokenError{Shard: s7, Token: 3, Floor: 9}); *st != want {
		t.Fatalf("got %+v, want %+v", *st, want)
	}
}

func check(t *testing.T, got Checkpoint, err error, want Checkpoint, wantErr error, wantMsg string) {
	t.Helper()
	if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		t.Fatalf("err = %v, want %v", err, wantErr)
	}
	if wantMsg != "" && err.Error() != wantMsg {
		t.Fatalf("message = %q, want %q", err.Error(), wantMsg)
	}
	if got != want {
		t.Fatalf("checkpoint = %+v, want %+v", got, want)
	}
}
