package fleetkeys

import (
	"strings"

	"github.com/shardlease/shardlease/shard"
)

// Pair is one key of a fleet as an engine stores it.
type Pair struct {
	Key   string
	Value []byte
	// Index is the engine's modify index of the key (Consul's
	// ModifyIndex, etcd's ModRevision): a lock's token is made from it.
	Index uint64
	// Session is the live session holding the key, empty when none does.
	Session shard.SessionID
}

// Layout names a fleet's keys under its prefix (docs/design.md, "Keys").
type Layout struct {
	prefix string // the fleet's prefix and "/"
}

// NewLayout is the layout of the fleet whose prefix is prefix (no
// trailing slash).
func NewLayout(prefix string) Layout { return Layout{prefix: prefix + "/"} }

// Dir is the prefix and its slash: every key of the fleet starts with it.
func (l Layout) Dir() string { return l.prefix }

// The fleet's keys.
func (l Layout) Config() string            { return l.prefix + "config" }
func (l Layout) Freeze() string            { return l.prefix + "freeze" }
func (l Layout) Policy() string            { return l.prefix + "policy" }
func (l Layout) History() string           { return l.prefix + "history" }
func (l Layout) Member(id string) string   { return l.prefix + "members/" + id }
func (l Layout) Lock(lk shard.Lock) string { return l.prefix + string(lk) }
func (l Layout) Shard(id shard.ID) string  { return l.Lock(shard.ShardLock(id)) }
func (l Layout) Assignor() string          { return l.Lock(shard.AssignorLock) }

// AssignDir is the directory of worker's assignment: its key, "shards",
// and the assignor's memory about it, "memory", written together.
func (l Layout) AssignDir(worker string) string { return l.prefix + "assign/" + worker + "/" }
func (l Layout) Assign(worker string) string    { return l.AssignDir(worker) + "shards" }
func (l Layout) Memory(worker string) string    { return l.AssignDir(worker) + "memory" }

// LockOf is the lock whose key is key.
func (l Layout) LockOf(key string) shard.Lock { return shard.Lock(strings.TrimPrefix(key, l.prefix)) }

// MemberOf returns the worker whose member key is key.
func (l Layout) MemberOf(key string) (string, bool) {
	rel, ok := strings.CutPrefix(key, l.prefix)
	if !ok {
		return "", false
	}
	return strings.CutPrefix(rel, "members/")
}

// IsMember reports whether key is a member key.
func (l Layout) IsMember(key string) bool { _, ok := l.MemberOf(key); return ok }

// ReportKinds are the trees of the workers' report keys, P/<kind>/<worker>:
// keys of their own, held by the worker's session beside its member key,
// that it writes without touching the member key (where operators set
// drains and cordons).
var ReportKinds = []string{"loads", "standby"}

// Report is worker's report key of kind.
func (l Layout) Report(kind, worker string) string { return l.prefix + kind + "/" + worker }

// ReportOf returns the kind and worker of a report key.
func (l Layout) ReportOf(key string) (kind, worker string, ok bool) {
	rel, ok := strings.CutPrefix(key, l.prefix)
	if !ok {
		return "", "", false
	}
	return reportOf(rel)
}

// reportOf is ReportOf of a key relative to the prefix. It allocates
// nothing: a listing of a large fleet asks it of every key.
func reportOf(rel string) (kind, worker string, ok bool) {
	for _, kind := range ReportKinds {
		if w, ok := strings.CutPrefix(rel, kind); ok && strings.HasPrefix(w, "/") {
			return kind, w[1:], true
		}
	}
	return "", "", false
}

// isReportRel reports whether rel, a key relative to the prefix, is a
// report key.
func isReportRel(rel string) bool { _, _, ok := reportOf(rel); return ok }

// IsReport reports whether key is a report key.
func (l Layout) IsReport(key string) bool { _, _, ok := l.ReportOf(key); return ok }

// Reports are worker's report keys.
func (l Layout) Reports(worker string) []string {
	keys := make([]string, len(ReportKinds))
	for i, kind := range ReportKinds {
		keys[i] = l.Report(kind, worker)
	}
	return keys
}
