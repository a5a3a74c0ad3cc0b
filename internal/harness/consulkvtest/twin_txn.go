package consulkvtest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/consul/api"
)

// apply runs ops as one transaction on a copy of the state, with Consul's
// texts for each failure (agent/consul/state/kvs.go and txn.go, 1.14).
// Every operation runs, also after one failed, and sees the effects of
// those before it; the copy replaces the state only if none failed, and a
// transaction that wrote moves the index by one. t.mu is held.
func (t *Twin) apply(ops api.TxnOps) (api.TxnResults, api.TxnErrors) {
	idx := t.index + 1
	keys := maps.Clone(t.keys)
	tomb := maps.Clone(t.tomb)
	wrote := false
	var (
		results api.TxnResults
		errs    api.TxnErrors
	)
	fail := func(i int, format string, args ...any) {
		errs = append(errs, &api.TxnError{OpIndex: i, What: fmt.Sprintf(format, args...)})
	}
	result := func(kv *api.KVPair, keepValue bool) {
		c := *kv
		if !keepValue {
			c.Value = nil
		}
		results = append(results, &api.TxnResult{KV: &c})
	}
	put := func(kv *api.KVPair) {
		wrote = true
		keys[kv.Key] = kv
		delete(tomb, kv.Key)
		result(kv, false)
	}
	del := func(key string) {
		if _, ok := keys[key]; ok {
			wrote = true
			delete(keys, key)
			tomb[key] = idx
		}
	}
	// set writes value at key, keeping the lock holder, as a set does.
	set := func(op *api.KVTxnOp, session string, lockIndex uint64) *api.KVPair {
		kv := &api.KVPair{Key: op.Key, Value: slices.Clone(op.Value), Flags: op.Flags, ModifyIndex: idx, CreateIndex: idx,
			Session: session, LockIndex: lockIndex}
		if cur := keys[op.Key]; cur != nil {
			kv.CreateIndex = cur.CreateIndex
		}
		return kv
	}

	for i, txnOp := range ops {
		op := txnOp.KV
		if op == nil {
			fail(i, "unsupported operation: only KV operations are in the twin")
			continue
		}
		cur := keys[op.Key]
		if isWrite(op.Verb) && t.deniedKey(op.Key) {
			fail(i, "Permission denied: token lacks permission 'key:write' on %q", op.Key)
			continue
		}
		switch op.Verb {
		case api.KVSet:
			session, lockIndex := holder(cur)
			put(set(op, session, lockIndex))
		case api.KVCAS:
			if (op.Index == 0 && cur != nil) || (op.Index != 0 && (cur == nil || cur.ModifyIndex != op.Index)) {
				fail(i, "failed to set key %q, index is stale", op.Key)
				continue
			}
			session, lockIndex := holder(cur)
			put(set(op, session, lockIndex))
		case api.KVLock:
			switch {
			case op.Session == "":
				fail(i, "missing session")
			case !t.sessions[op.Session]:
				fail(i, "invalid session %q", op.Session)
			case cur != nil && cur.Session != "" && cur.Session != op.Session:
				fail(i, "failed to lock key %q, lock is already held", op.Key)
			default:
				lockIndex := uint64(1)
				if cur != nil {
					lockIndex = cur.LockIndex
					if cur.Session != op.Session {
						lockIndex++
					}
				}
				put(set(op, op.Session, lockIndex))
			}
		case api.KVUnlock:
			if cur == nil || cur.Session != op.Session {
				fail(i, "failed to unlock key %q, lock isn't held, or is held by another session", op.Key)
				continue
			}
			put(set(op, "", cur.LockIndex))
		case api.KVGet:
			if cur == nil {
				fail(i, "key %q doesn't exist", op.Key)
				continue
			}
			result(cur, true)
		case api.KVGetOrEmpty:
			if cur == nil {
				result(&api.KVPair{Key: op.Key}, true)
				continue
			}
			result(cur, true)
		case api.KVGetTree:
			for _, k := range slices.Sorted(maps.Keys(keys)) {
				if strings.HasPrefix(k, op.Key) {
					result(keys[k], true)
				}
			}
		case api.KVCheckIndex:
			switch {
			case cur == nil:
				fail(i, "failed to check index, key %q doesn't exist", op.Key)
			case cur.ModifyIndex != op.Index:
				fail(i, "failed index check for key %q, current modify index %d != %d", op.Key, cur.ModifyIndex, op.Index)
			default:
				result(cur, false)
			}
		case api.KVCheckSession:
			switch {
			case cur == nil:
				fail(i, "failed to check session, key %q doesn't exist", op.Key)
			case cur.Session != op.Session:
				fail(i, "failed session check for key %q, current session %q != %q", op.Key, cur.Session, op.Session)
			default:
				result(cur, false)
			}
		case api.KVCheckNotExists:
			if cur != nil {
				fail(i, "key %q exists", op.Key)
			}
		case api.KVDelete:
			del(op.Key)
		case api.KVDeleteCAS:
			if cur != nil && cur.ModifyIndex != op.Index {
				fail(i, "failed to delete key %q, index is stale", op.Key)
				continue
			}
			del(op.Key)
		case api.KVDeleteTree:
			for k := range keys {
				if strings.HasPrefix(k, op.Key) {
					del(k)
				}
			}
		default:
			fail(i, "unknown KV verb %q", op.Verb)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if wrote {
		t.index, t.keys, t.tomb = idx, keys, tomb
		t.wake()
	}
	return results, nil
}

// holder is a key's lock holder and lock count, which a set keeps.
func holder(kv *api.KVPair) (session string, lockIndex uint64) {
	if kv == nil {
		return "", 0
	}
	return kv.Session, kv.LockIndex
}

// isWrite reports a verb that writes (and so needs key write permission).
func isWrite(v api.KVOp) bool {
	switch v {
	case api.KVSet, api.KVCAS, api.KVLock, api.KVUnlock, api.KVDelete, api.KVDeleteCAS, api.KVDeleteTree:
		return true
	}
	return false
}
