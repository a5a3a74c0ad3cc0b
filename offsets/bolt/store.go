package bolt

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrLocked: another Store holds the file's lock. Only one may have it
	// open; bbolt's two writers would corrupt it.
	ErrLocked = errors.New("offsets/bolt: file locked by another store")
	// ErrCorrupt is offsets.ErrCorrupt: a stored checkpoint is not a valid
	// record.
	ErrCorrupt = offsets.ErrCorrupt
)

// lockTimeout bounds the wait for the file lock: long enough for a
// restarting process to let go of it, short enough that a second opener
// gets an error instead of hanging.
const lockTimeout = time.Second

var bucketName = []byte("offsets")

// errNoWrite rolls back a transaction that has nothing to write: a rejected
// operation, or one that changes nothing (bbolt would fsync even an empty
// commit).
var errNoWrite = errors.New("no write")

// Store is an offsets.Store in one bbolt file.
type Store struct {
	db     *bbolt.DB
	path   string
	closed atomic.Bool
}

var _ offsets.Store = (*Store)(nil)

// Open opens the store in the file at path, creating it (mode 0600) if it
// does not exist; its directory must exist. It fails with ErrLocked when
// another Store keeps the file locked for a second.
func Open(path string) (*Store, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: lockTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s still locked after %v", ErrLocked, path, lockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("offsets/bolt: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketName)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("offsets/bolt: open %s: bucket %q: %w", path, bucketName, err)
	}
	return &Store{db: db, path: path}, nil
}

// Path returns the file the store is kept in.
func (st *Store) Path() string { return st.path }

// Fence raises the shard's floor to token; see offsets.Store.
func (st *Store) Fence(ctx context.Context, s shard.ID, token shard.Token) error {
	return st.update(ctx, "fence", s, func(cp offsets.Checkpoint) (offsets.Checkpoint, error) {
		return offsets.ApplyFence(cp, s, token)
	})
}

// Commit stores offset for the shard unless token is below its floor; see
// offsets.Store.
func (st *Store) Commit(ctx context.Context, s shard.ID, token shard.Token, offset int64) error {
	return st.update(ctx, "commit", s, func(cp offsets.Checkpoint) (offsets.Checkpoint, error) {
		return offsets.ApplyCommit(cp, s, token, offset)
	})
}

// update is the atomic step: read, apply the rule and write in one
// read-write transaction.
func (st *Store) update(ctx context.Context, op string, s shard.ID, apply func(offsets.Checkpoint) (offsets.Checkpoint, error)) error {
	if err := ctxErr(ctx, op, s); err != nil {
		return err
	}
	if st.closed.Load() {
		return offsets.ErrClosed
	}
	if err := offsets.ValidShard(s); err != nil {
		return err // before bbolt sees an empty key
	}
	var verdict error // why nothing was written; returned as is
	err := st.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketName)
		old, err := decode(s, b.Get([]byte(s)))
		if err != nil {
			verdict = err
			return errNoWrite
		}
		cp, err := apply(old)
		if err != nil {
			verdict = err
			return errNoWrite
		}
		if cp == old {
			return errNoWrite
		}
		return b.Put([]byte(s), encode(cp))
	})
	switch {
	case errors.Is(err, errNoWrite):
		return verdict
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return offsets.ErrClosed // Close won the race with the check above
	case err != nil:
		return fmt.Errorf("offsets/bolt: %s shard %s: %w", op, s, err)
	}
	return nil
}

// Load returns the shard's checkpoint; the zero Checkpoint for a shard never
// fenced or committed.
func (st *Store) Load(ctx context.Context, s shard.ID) (offsets.Checkpoint, error) {
	if err := ctxErr(ctx, "load", s); err != nil {
		return offsets.Checkpoint{}, err
	}
	if st.closed.Load() {
		return offsets.Checkpoint{}, offsets.ErrClosed
	}
	if err := offsets.ValidShard(s); err != nil {
		return offsets.Checkpoint{}, err
	}
	var cp offsets.Checkpoint
	err := st.db.View(func(tx *bbolt.Tx) error {
		var err error
		cp, err = decode(s, tx.Bucket(bucketName).Get([]byte(s)))
		return err
	})
	switch {
	case errors.Is(err, ErrCorrupt):
		return offsets.Checkpoint{}, err
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return offsets.Checkpoint{}, offsets.ErrClosed
	case err != nil:
		return offsets.Checkpoint{}, fmt.Errorf("offsets/bolt: load shard %s: %w", s, err)
	}
	return cp, nil
}

// Close waits for running transactions, then closes the file and releases
// its lock. Later calls return offsets.ErrClosed; closing twice is not an
// error.
func (st *Store) Close() error {
	if st.closed.Swap(true) {
		return nil
	}
	if err := st.db.Close(); err != nil {
		return fmt.Errorf("offsets/bolt: close %s: %w", st.path, err)
	}
	return nil
}

// ctxErr reports a done context with its cause too, so a caller can tell
// why its handler's context ended (revoked, lost) as well as that it did.
func ctxErr(ctx context.Context, op string, s shard.ID) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("offsets/bolt: %s shard %s: %w: %w", op, s, err, cause)
	}
	return fmt.Errorf("offsets/bolt: %s shard %s: %w", op, s, err)
}

// ProcessLocal is true: only this process sees the store's checkpoints
// (offsets.Local).
func (s *Store) ProcessLocal() bool { return true }
