package consulkvtest

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
)

// defaultWait is Consul's wait for a blocking query that names none.
const defaultWait = 5 * time.Minute

// Twin is consulkv.KV in memory, with Consul's semantics for the calls KV makes:
// one global index (1 for an empty store, moved by one per committed
// write, shared by every key one transaction writes), transactions that
// apply their operations in order and commit all or none, reporting
// every failed operation with Consul's texts, sessions that locks need,
// and blocking queries by index. Create it with NewTwin; safe for
// concurrent use.
type Twin struct {
	mu       sync.Mutex
	index    uint64
	keys     map[string]*api.KVPair
	tomb     map[string]uint64 // deleted keys and the index of their deletion
	sessions map[string]bool
	nextID   int
	denied   []string
	faults   []fault
	changed  chan struct{} // closed and replaced on every committed write
}

type fault struct {
	err     error
	applied bool
}

var _ consulkv.KV = (*Twin)(nil)

// NewTwin returns an empty store at index 1.
func NewTwin() *Twin {
	return &Twin{
		index:    1,
		keys:     make(map[string]*api.KVPair),
		tomb:     make(map[string]uint64),
		sessions: make(map[string]bool),
		changed:  make(chan struct{}),
	}
}

// CreateSession opens a session (Behavior=release, no TTL) for locks.
func (t *Twin) CreateSession() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nextID++
	id := fmt.Sprintf("twin-session-%d", t.nextID)
	t.sessions[id] = true
	return id
}

// DestroySession ends a session: the keys it holds are unlocked, their
// values kept, in one write, as Consul releases them.
func (t *Twin) DestroySession(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.sessions, id)
	var held []*api.KVPair
	for _, kv := range t.keys {
		if kv.Session == id {
			held = append(held, kv)
		}
	}
	if len(held) == 0 {
		return
	}
	t.index++
	for _, kv := range held {
		c := *kv
		c.Session, c.ModifyIndex = "", t.index
		t.keys[c.Key] = &c
	}
	t.wake()
}

// Deny makes every write under prefix refused for lack of permission, as
// an ACL token without key_prefix write is: a transaction's operation
// fails with Consul's "Permission denied" text, a plain write with HTTP
// 403.
func (t *Twin) Deny(prefix string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.denied = append(t.denied, prefix)
}

// FailNext makes the next call fail with err. If applied, a write is
// applied first: its answer was lost on the way back.
func (t *Twin) FailNext(err error, applied bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.faults = append(t.faults, fault{err: err, applied: applied})
}

// Index returns the store's index.
func (t *Twin) Index() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.index
}

// takeFault pops the next injected fault; t.mu is held.
func (t *Twin) takeFault() (fault, bool) {
	if len(t.faults) == 0 {
		return fault{}, false
	}
	f := t.faults[0]
	t.faults = t.faults[1:]
	return f, true
}

func (t *Twin) deniedKey(key string) bool {
	return slices.ContainsFunc(t.denied, func(p string) bool { return strings.HasPrefix(key, p) })
}

func (t *Twin) wake() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// Txn applies ops as one transaction (see twin_txn.go).
func (t *Twin) Txn(ctx context.Context, ops api.TxnOps) (api.TxnResults, api.TxnErrors, error) {
	if err := consulkv.TooManyOps(len(ops)); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f, faulty := t.takeFault()
	if faulty && !f.applied {
		return nil, nil, f.err
	}
	results, errs := t.apply(ops)
	if faulty {
		return nil, nil, f.err
	}
	return results, errs, nil
}

// one runs a single-operation write for the plain KV calls: 403 for a
// denied key, the operation's result otherwise.
func (t *Twin) one(ctx context.Context, op *api.KVTxnOp) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f, faulty := t.takeFault()
	if faulty && !f.applied {
		return false, f.err
	}
	if t.deniedKey(op.Key) {
		return false, api.StatusError{Code: http.StatusForbidden, Body: "Permission denied"}
	}
	_, errs := t.apply(api.TxnOps{{KV: op}})
	if faulty {
		return false, f.err
	}
	return len(errs) == 0, nil
}

func (t *Twin) CAS(ctx context.Context, p *api.KVPair) (bool, error) {
	return t.one(ctx, &api.KVTxnOp{Verb: api.KVCAS, Key: p.Key, Value: p.Value, Flags: p.Flags, Index: p.ModifyIndex})
}

func (t *Twin) Delete(ctx context.Context, key string) error {
	_, err := t.one(ctx, &api.KVTxnOp{Verb: api.KVDelete, Key: key})
	return err
}

func (t *Twin) DeleteCAS(ctx context.Context, p *api.KVPair) (bool, error) {
	return t.one(ctx, &api.KVTxnOp{Verb: api.KVDeleteCAS, Key: p.Key, Index: p.ModifyIndex})
}

func (t *Twin) DeleteTree(ctx context.Context, prefix string) error {
	_, err := t.one(ctx, &api.KVTxnOp{Verb: api.KVDeleteTree, Key: prefix})
	return err
}

// Get reads key; a blocking query waits for the key's index to pass
// q.WaitIndex (a missing key's index is the store's).
func (t *Twin) Get(ctx context.Context, key string, q consulkv.Query) (*api.KVPair, consulkv.Meta, error) {
	var kv *api.KVPair
	idx, err := t.read(ctx, q, func() (uint64, uint64) {
		kv = nil
		if cur := t.keys[key]; cur != nil {
			c := *cur
			kv = &c
			return c.ModifyIndex, c.ModifyIndex
		}
		// Missing: the store's index, but only this key's own write (or
		// deletion) ends a blocked query, as on Consul.
		return t.index, t.tomb[key]
	})
	if err != nil {
		return nil, consulkv.Meta{}, err
	}
	return kv, consulkv.Meta{LastIndex: idx}, nil
}

// List reads every key under prefix. Its index is the highest of the
// prefix's keys and deletions, or the store's when it never had any.
func (t *Twin) List(ctx context.Context, prefix string, q consulkv.Query) (api.KVPairs, consulkv.Meta, error) {
	var pairs api.KVPairs
	idx, err := t.read(ctx, q, func() (uint64, uint64) {
		pairs = pairs[:0]
		for _, k := range slices.Sorted(maps.Keys(t.keys)) {
			if strings.HasPrefix(k, prefix) {
				c := *t.keys[k]
				pairs = append(pairs, &c)
			}
		}
		return t.prefixIndex(prefix)
	})
	if err != nil {
		return nil, consulkv.Meta{}, err
	}
	return pairs, consulkv.Meta{LastIndex: idx}, nil
}

// Keys lists the key names under prefix, each cut after the first
// separator past prefix, without repeats; its index is List's.
func (t *Twin) Keys(ctx context.Context, prefix, separator string, q consulkv.Query) ([]string, consulkv.Meta, error) {
	var names []string
	idx, err := t.read(ctx, q, func() (uint64, uint64) {
		names = names[:0]
		for _, k := range slices.Sorted(maps.Keys(t.keys)) {
			rest, ok := strings.CutPrefix(k, prefix)
			if !ok {
				continue
			}
			if i := strings.Index(rest, separator); separator != "" && i >= 0 {
				k = prefix + rest[:i+len(separator)]
			}
			if len(names) == 0 || names[len(names)-1] != k {
				names = append(names, k)
			}
		}
		return t.prefixIndex(prefix)
	})
	if err != nil {
		return nil, consulkv.Meta{}, err
	}
	return names, consulkv.Meta{LastIndex: idx}, nil
}

// prefixIndex is a list's index and version under the lock: the highest
// of prefix's keys and deletions, or the store's when it never had any.
func (t *Twin) prefixIndex(prefix string) (uint64, uint64) {
	var max uint64
	for k, kv := range t.keys {
		if strings.HasPrefix(k, prefix) {
			max = maxIndex(max, kv.ModifyIndex)
		}
	}
	for k, i := range t.tomb {
		if strings.HasPrefix(k, prefix) {
			max = maxIndex(max, i)
		}
	}
	if max == 0 {
		return t.index, t.index
	}
	return max, max
}

func maxIndex(a, b uint64) uint64 { return max(a, b) }

// read runs look under the lock. look returns the read's index and a
// version of what it watches. A blocking query returns at once if the
// index is past q.WaitIndex; otherwise when the version changes or
// q.WaitTime passes (then with the index as it is).
func (t *Twin) read(ctx context.Context, q consulkv.Query, look func() (index, version uint64)) (uint64, error) {
	wait := q.WaitTime
	if wait <= 0 {
		wait = defaultWait
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	t.mu.Lock()
	if f, faulty := t.takeFault(); faulty {
		t.mu.Unlock()
		return 0, f.err
	}
	idx, blockedAt := look()
	changed := t.changed
	t.mu.Unlock()
	if q.WaitIndex == 0 || idx > q.WaitIndex {
		return idx, nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-changed:
		case <-timer.C:
			t.mu.Lock()
			idx, _ = look()
			t.mu.Unlock()
			return idx, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		t.mu.Lock()
		idx, v := look()
		changed = t.changed
		t.mu.Unlock()
		if v != blockedAt {
			return idx, nil
		}
	}
}
