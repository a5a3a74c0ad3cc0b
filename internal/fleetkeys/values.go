package fleetkeys

import (
	"encoding/json"
	"fmt"
	"iter"
	"time"

	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/shard"
)

// ShardSet is a fleet config, for telling its shard IDs from others. It
// parses an ID rather than keeping every ID: a process with many workers
// of a large fleet (a benchmark's thousand) would otherwise keep a copy
// of 100,000 IDs for each.
type ShardSet struct {
	Config shard.Config // normalized
	naming keycodec.Naming
}

// NewShardSet is cfg's shard set.
func NewShardSet(cfg shard.Config) *ShardSet {
	cfg = cfg.Normalize()
	return &ShardSet{Config: cfg, naming: keycodec.NamingOf(cfg)}
}

// Has reports whether id is one of the fleet's shards, exactly as
// Config.IDs writes it. It allocates nothing: a listing asks it of every
// shard key.
func (s *ShardSet) Has(id shard.ID) bool {
	_, err := s.naming.Index(id)
	return err == nil
}

// Unknown returns an error wrapping shard.ErrUnknownShard for the first
// shard lock of want outside the set, nil when there is none.
func (s *ShardSet) Unknown(want []shard.Acquisition) error {
	for _, a := range want {
		if sh, ok := a.Lock.Shard(); ok && !s.Has(sh) {
			_, err := s.naming.Index(sh)
			return err
		}
	}
	return nil
}

// ParseConfig reads a P/config value; the error says what is wrong with
// it. A value that names no protocol is this build's (Config.Protocol).
func ParseConfig(value []byte) (shard.Config, error) {
	var cfg shard.Config
	if err := json.Unmarshal(value, &cfg); err != nil {
		return shard.Config{}, fmt.Errorf("malformed config value (want JSON shard.Config): %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return shard.Config{}, fmt.Errorf("invalid config: %w", err)
	}
	return cfg.Normalize(), nil
}

// Generation is the fleet's generation as one read of P/config saw it,
// and the config key's modify index then (0: missing), which a lock's
// transaction checks so that the generation its value records is the
// stored one when it commits.
type Generation struct {
	Gen   uint32
	Index uint64
	// resharded is the config read when it records layouts: which
	// shards may be locked depends on it (shard.Config.Acquirable).
	resharded *shard.Config
}

// Acquirable reports whether lock l may be taken under the config read:
// a role's lock always; a shard's unless the config records a reshard
// under which it may not (a child not yet open, a parent closed for good,
// a shard of a layout the fleet no longer runs). A lock's transaction
// checks the config's index, so a lock taken under a config that changed
// meanwhile is refused and read again.
func (g Generation) Acquirable(l shard.Lock) bool {
	id, ok := l.Shard()
	return !ok || g.resharded == nil || g.resharded.Acquirable(id)
}

// GenerationOf reads the generation of a P/config pair (nil: none
// stored). It reads the one field leniently: a config that is otherwise
// malformed is reported by listings, and its locks still get a token.
func GenerationOf(kv *Pair) Generation {
	if kv == nil {
		return Generation{}
	}
	var v struct {
		Generation uint32          `json:"generation"`
		Layouts    json.RawMessage `json:"layouts"`
	}
	_ = json.Unmarshal(kv.Value, &v)
	g := Generation{Gen: v.Generation, Index: kv.Index}
	if len(v.Layouts) > 0 {
		// A resharded config that cannot be read locks nothing: which
		// shards are open cannot be told.
		cfg, err := ParseConfig(kv.Value)
		if err != nil {
			cfg = shard.Config{Shards: 1, Name: "unreadable", Layouts: []shard.Layout{{Shards: 1, Name: "unreadable.r1", Lineage: shard.LineageMod}}}
		}
		g.resharded = &cfg
	}
	return g
}

// DecodeMember reads member id's key: the member and its lock holder, or
// what is wrong with the value.
func DecodeMember(id string, kv *Pair) (shard.MemberState, string) {
	var m shard.Member
	if err := json.Unmarshal(kv.Value, &m); err != nil {
		return shard.MemberState{}, fmt.Sprintf("malformed member value (want JSON shard.Member): %v", err)
	}
	if m.ID != id {
		return shard.MemberState{}, fmt.Sprintf("member value names worker %q, not %q", m.ID, id)
	}
	m.Load, m.Standby = nil, nil // read from the worker's report keys only
	return shard.MemberState{Member: m, Session: kv.Session}, ""
}

// RejoinUntil is the RejoinUntil of a member key's value, zero when the
// value cannot be read.
func RejoinUntil(value []byte) time.Time {
	var m shard.Member
	if json.Unmarshal(value, &m) != nil {
		return time.Time{}
	}
	return m.RejoinUntil
}

// DecodeLock reads a lock's key: its holder, token and value, or what is
// wrong with the value (the lock is real all the same).
func DecodeLock(kv *Pair) shard.LockKey {
	key := shard.LockKey{Index: kv.Index}
	var o shard.Owner
	err := json.Unmarshal(kv.Value, &o)
	if err == nil && o.Worker == "" {
		err = fmt.Errorf("it names no worker")
	}
	if err != nil {
		key.Problem = fmt.Sprintf("%s: malformed lock value (want JSON {worker, reason, since, released}): %v", kv.Key, err)
	} else {
		key.Owner = o
	}
	if kv.Session != "" {
		key.Session, key.Token = kv.Session, o.TokenAt(kv.Index)
	}
	return key
}

// DecodeFreeze reads P/freeze. A value that is not a shard.Mark still
// freezes the fleet (someone meant to freeze it), with a zero Mark, and
// says why in problem.
func DecodeFreeze(kv *Pair) (mark *shard.Mark, problem string) {
	var m shard.Mark
	if err := json.Unmarshal(kv.Value, &m); err != nil {
		return &shard.Mark{}, fmt.Sprintf("%s: malformed freeze value (want JSON {\"by\",\"at\",\"reason\"}): %v; the fleet counts as frozen", kv.Key, err)
	}
	return &m, ""
}

// DecodePolicy reads P/policy. A value that is not a valid policy is
// ignored (the assignor follows its own config) and problem says why.
func DecodePolicy(kv *Pair) (p *shard.BalancePolicy, problem string) {
	var v shard.BalancePolicy
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return nil, fmt.Sprintf("%s: not a balance policy: %v; ignored: the assignor follows its own config", kv.Key, err)
	}
	return &v, ""
}

// DecodeAssignment reads an assignment key against the fleet's shard set
// (nil: none known) with the assignor's memory beside it: a pair that is
// not sealed (see Seal) is an edit by hand, never an assignment.
func DecodeAssignment(fleet *ShardSet, kv, memory *Pair) (shard.Assignment, string) {
	if fleet == nil {
		return shard.Assignment{}, kv.Key + ": the fleet has no config to read the assignment against"
	}
	a, err := keycodec.DecodeAssignment(fleet.Config, kv.Value)
	if err != nil {
		return shard.Assignment{}, fmt.Sprintf("%s: %v", kv.Key, err)
	}
	if memory == nil || memory.Index != kv.Index {
		return shard.Assignment{}, fmt.Sprintf("%s: %s", kv.Key, shard.Unsealed)
	}
	seal, mem := UnsealMemory(memory.Value)
	if seal == 0 || seal != ValueSeal(kv.Value) {
		return shard.Assignment{}, fmt.Sprintf("%s: %s", kv.Key, shard.Unsealed)
	}
	a.Memory = mem
	return a, ""
}

// CheckReport is Members.ReportLoad's and ReportStandby's check of a
// report's worker and shards against the fleet's set (nil: not known
// yet, the shards are not checked), before anything is written.
func CheckReport(set *ShardSet, kind, worker string, shards iter.Seq[shard.ID]) error {
	if worker == "" {
		return fmt.Errorf("%w: report %s: worker id is empty", shard.ErrInvalidArgument, kind)
	}
	if set == nil {
		return nil
	}
	for sh := range shards {
		if !set.Has(sh) {
			return fmt.Errorf("%w: %s of worker %q: %q is not one of the fleet's %d shards named %q",
				shard.ErrUnknownShard, kind, worker, sh, set.Config.Shards, set.Config.Name)
		}
	}
	return nil
}

// RaiseTo is Fleet.RaiseGeneration's rewrite of a stored config, as each
// engine's check-and-set applies it: Generation gen, if shard.CheckRaise
// allows it.
func RaiseTo(gen uint32) func(shard.Config) (shard.Config, error) {
	return func(stored shard.Config) (shard.Config, error) {
		if err := shard.CheckRaise(stored.Generation, gen); err != nil {
			return stored, err
		}
		stored.Generation = gen
		return stored, nil
	}
}
