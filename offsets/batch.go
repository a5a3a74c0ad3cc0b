package offsets

import (
	"fmt"
	"strings"

	"github.com/shardlease/shardlease/shard"
)

// Entry is one commit of a batch, for the backends that commit many shards
// in one round trip (offsets/consul, offsets/postgres).
type Entry struct {
	Shard  shard.ID
	Token  shard.Token
	Offset int64
}

// BatchError reports the entries of a batch that were not committed. Errs
// has one element per entry, in the batch's order: nil for an entry that was
// committed, else why not (a *StaleTokenError, or the error of the request
// that carried it). errors.Is(err, ErrStaleToken) holds when any entry was
// stale.
type BatchError struct {
	Errs []error
}

func (e *BatchError) Error() string {
	var msgs []string
	for i, err := range e.Errs {
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("entry %d: %v", i, err))
		}
	}
	return fmt.Sprintf("offsets: %d of %d commits not made: %s", len(msgs), len(e.Errs), strings.Join(msgs, "; "))
}

// Unwrap returns the entries' errors, for errors.Is and errors.As.
func (e *BatchError) Unwrap() []error {
	var errs []error
	for _, err := range e.Errs {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
