package fleetkeys

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/shard"
)

// A worker's coordinator runs the fleet config Configure settled, for the
// life of the process. P/config is written once, but an operator can
// rewrite or delete it under a running fleet; a coordinator that then took
// its shard set from the next listing would drop the shard keys outside
// the new set, its worker would count its own shards as lost, and every
// later Acquire would name an unknown shard. So the running fleet keeps
// serving the shards it was started with, and the stored config is only
// compared against and reported (Snapshot.Problems); workers that start or
// restart are refused by Configure until P/config is restored. Only a
// coordinator never configured — an operator's view (shardctl, the
// dashboard) — takes the stored config, listing by listing.

// Decoder is one coordinator's reading of its fleet's keys: the config it
// runs, and what it remembers between listings. Its methods are safe for
// concurrent use.
type Decoder struct {
	Layout
	// restore is the engine's command that writes value to key, for the
	// hint a problem with P/config gives ("consul kv put …").
	restore func(key string, value []byte) string

	mu sync.Mutex
	// fleet is the config Configure settled: the one this coordinator's
	// worker runs, whatever P/config says later.
	fleet *ShardSet
	// stored caches the shard set of the last stored config read by a
	// coordinator that was never configured.
	stored *ShardSet
	// seenGen is the highest fleet generation this coordinator has read
	// (P/config, its own raises), for the restore hint it prints when
	// P/config is deleted or rewritten under the fleet.
	seenGen atomic.Uint32
	// memos are the values decoded from the latest listing.
	memos decodeMemos
}

// NewDecoder returns the decoder of the fleet laid out by layout; restore
// formats the engine's command that writes a value to a key.
func NewDecoder(layout Layout, restore func(key string, value []byte) string) *Decoder {
	return &Decoder{Layout: layout, restore: restore}
}

// decodedOwner is a shard key's value as decoded: the owner, or why it
// is not one.
type decodedOwner struct {
	owner shard.Owner
	err   error // the value was not a shard.Owner
}

// decodedMember is a member key's value as decoded (its Session is the
// listing's, set on every use), or what is wrong with it.
type decodedMember struct {
	m   shard.MemberState
	bad string
}

// decodedAssignment is an assignment key's value with the memory beside
// it as decoded, or what is wrong with them.
type decodedAssignment struct {
	a   shard.Assignment
	bad string
}

// decodeMemos are the values Decode decoded from the latest listing; a
// pass is one Decode, which holds mu throughout.
type decodeMemos struct {
	mu          sync.Mutex
	pass        uint64
	owners      memo[decodedOwner]
	members     memo[decodedMember]
	assignments memo[decodedAssignment]
}

// SetFleet records cfg as the config this coordinator's worker runs.
func (d *Decoder) SetFleet(cfg shard.Config) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fleet == nil || !d.fleet.Config.Same(cfg) {
		d.fleet = NewShardSet(cfg)
	}
}

// Adopt makes the config of stored (a P/config pair; nil: none) the one
// this coordinator runs when it succeeds the one it runs (shard.Config.
// Succeeds: a reshard rewrote it), and returns the set it runs afterwards
// (nil when not configured). Anything else stored is left to the
// listings to report.
func (d *Decoder) Adopt(stored *Pair) *ShardSet {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fleet == nil || stored == nil {
		return d.fleet
	}
	cfg, err := ParseConfig(stored.Value)
	if err == nil && !d.fleet.Config.Same(cfg) && cfg.Succeeds(d.fleet.Config) {
		d.fleet = NewShardSet(cfg)
	}
	return d.fleet
}

// Fleet returns the config Configure settled, or nil before.
func (d *Decoder) Fleet() *ShardSet {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fleet
}

// Stored returns the shard set of a stored config, reusing the last one
// built: an unconfigured view reads the same config in every listing.
func (d *Decoder) Stored(cfg shard.Config) *ShardSet {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stored == nil || !d.stored.Config.Same(cfg) {
		d.stored = NewShardSet(cfg)
	}
	return d.stored
}

// LastStored is the shard set Stored last built, nil if none.
func (d *Decoder) LastStored() *ShardSet {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stored
}

// Shards is the shard set calls are checked against: the config Configure
// settled, else the stored one (stored, nil when none is known), else nil.
func (d *Decoder) Shards(stored *Pair) *ShardSet {
	if set := d.Fleet(); set != nil {
		return set
	}
	if stored == nil {
		return d.LastStored()
	}
	cfg, err := ParseConfig(stored.Value)
	if err != nil {
		return nil
	}
	return d.Stored(cfg)
}

// NoteGeneration remembers gen if it is the highest seen.
func (d *Decoder) NoteGeneration(gen uint32) {
	for {
		seen := d.seenGen.Load()
		if gen <= seen || d.seenGen.CompareAndSwap(seen, gen) {
			return
		}
	}
}

// LockGeneration is the generation new locks are taken in: the stored
// one, never a higher one this coordinator remembers. A coordinator
// cannot tell a config deleted by hand, or lost with its engine, from a
// second coordinator beside the first, and carrying a generation over
// would let the second take shards from the first without an operator's
// word (docs/design.md, "Token generations"). A generation above
// shard.MaxGeneration, written by hand, is refused before anything is
// locked.
func (d *Decoder) LockGeneration(read Generation) (Generation, error) {
	if read.Gen > shard.MaxGeneration {
		return read, fmt.Errorf("%w: %s holds generation %d, above the highest, %d: fix it by hand",
			shard.ErrInvalidArgument, d.Config(), read.Gen, shard.MaxGeneration)
	}
	d.NoteGeneration(read.Gen)
	return read, nil
}

// listingShards returns the shard set a listing's shard keys are parsed
// against (nil: no config, every shard key is taken) and what is wrong
// with its P/config, "" if nothing. fleet is the config Configure settled
// (nil if none); stored is the P/config pair of the listing, nil when it
// has none.
func (d *Decoder) listingShards(fleet *ShardSet, stored *Pair) (*ShardSet, string) {
	var (
		cfg shard.Config
		bad error
	)
	if stored != nil {
		cfg, bad = ParseConfig(stored.Value)
	}
	switch {
	case fleet != nil && bad == nil && stored != nil && cfg.Succeeds(fleet.Config):
		return d.Adopt(stored), ""
	case fleet != nil:
		return fleet, d.drift(stored, cfg, bad, fleet.Config)
	case stored == nil:
		return nil, ""
	case bad != nil:
		return nil, bad.Error()
	default:
		return d.Stored(cfg), ""
	}
}

// drift describes how P/config differs from the config this fleet runs,
// naming both and how to restore it; "" when they agree.
func (d *Decoder) drift(stored *Pair, cfg shard.Config, bad error, runs shard.Config) string {
	runs.Generation = d.seenGen.Load() // the restored config must not lower the fleet's tokens
	value, _ := json.Marshal(runs)     // a Config always marshals
	restore := fmt.Sprintf("restore it (%s)", d.restore(d.Config(), value))
	switch {
	case stored == nil:
		return fmt.Sprintf("missing; this fleet runs %s: %s — the next worker to start would store its own config there",
			describeConfig(runs), restore)
	case bad != nil:
		return fmt.Sprintf("stored value is not a config (%v) and differs from the one this fleet runs %s: ignored; %s — workers that restart will refuse to start",
			bad, describeConfig(runs), restore)
	case len(runs.Layouts) > 0 && cfg.Protocol == shard.StoredProtocol(cfg.Layouts) && runs.Succeeds(cfg) && !cfg.Same(runs):
		// An older config of this fleet (a coordinator restored from a
		// snapshot, or P/config deleted and written again by a worker that
		// brought only the first shard set): it lacks reshards the fleet
		// ran, and a worker that starts on it would run retired shards.
		return fmt.Sprintf("stored config %s lacks reshards this fleet ran (%d layouts recorded, %d run): ignored; %s — workers that restart would run the old layout",
			describeConfig(cfg), len(cfg.Layouts), len(runs.Layouts), restore)
	case !cfg.SameFleet(runs):
		var protocol string
		if cfg.Protocol != runs.Protocol {
			protocol = fmt.Sprintf(" (written by protocol %d; this fleet runs protocol %d, and a fleet runs one)", cfg.Protocol, runs.Protocol)
		}
		return fmt.Sprintf("stored config %s differs from the one this fleet runs %s%s: ignored; %s — workers that restart will refuse to start",
			describeConfig(cfg), describeConfig(runs), protocol, restore)
	}
	return ""
}

// heldOutside is what an operator's view, which cannot know the config the
// workers run, says when shard keys outside the stored config cfg are
// held: the running fleet uses another config.
func (d *Decoder) heldOutside(cfg shard.Config, held []shard.ID) string {
	return fmt.Sprintf("%s: %d shard keys outside the stored config %s are held (%s … %s): the running fleet uses another config; if %s was rewritten under it, restore it — its workers keep serving their shards, and workers that restart will refuse to start",
		d.Config(), len(held), describeConfig(cfg), slices.Min(held), slices.Max(held), d.Config())
}

func describeConfig(cfg shard.Config) string {
	return fmt.Sprintf("{shards %d, name %q}", cfg.Shards, cfg.Name)
}

// ConfigPair returns the P/config pair of a listing, nil if it has none.
func (d *Decoder) ConfigPair(pairs []*Pair) *Pair {
	for _, kv := range pairs {
		if kv.Key == d.Config() {
			return kv
		}
	}
	return nil
}

// Decode turns the prefix's keys into a snapshot at index. It never
// fails: what it cannot read becomes a problem. Keys under P/offsets/
// and P/history are skipped (the offsets store's and History's).
func (d *Decoder) Decode(pairs []*Pair, index uint64) shard.Snapshot {
	snap := shard.Snapshot{Index: index, Members: []shard.MemberState{}, Shards: []shard.ShardState{}, Assignments: map[string]shard.Assignment{}}
	problem := func(key, format string, args ...any) {
		snap.Problems = append(snap.Problems, fmt.Sprintf("%s: %s", key, fmt.Sprintf(format, args...)))
	}

	// The config first: it says which shard keys are the fleet's.
	fleet := d.Fleet()
	stored := d.ConfigPair(pairs)
	set, bad := d.listingShards(fleet, stored)
	if bad != "" {
		problem(d.Config(), "%s", bad)
	}
	if set != nil {
		cfg := set.Config
		if bad == "" { // the stored config is the one the fleet runs: its generation is the fleet's
			cfg.Generation = GenerationOf(stored).Gen
			if cfg.Generation <= shard.MaxGeneration {
				d.NoteGeneration(cfg.Generation)
			}
		}
		snap.Config = &cfg
	}
	var outside []shard.ID                   // held shard keys outside the stored config
	reports := map[string]map[string]*Pair{} // report keys, by kind and worker
	// assignment keys and the assignor's memories, by worker: read as pairs
	// once every key is seen
	assigned, memories := map[string]*Pair{}, map[string]*Pair{}
	// Values decoded from an earlier listing are reused while their keys'
	// indexes and bytes are unchanged (memo).
	memos := &d.memos
	memos.mu.Lock()
	defer memos.mu.Unlock()
	memos.pass++
	pass := memos.pass
	defer memos.owners.sweep(pass)
	defer memos.members.sweep(pass)
	defer memos.assignments.sweep(pass)
	snap.Shards = make([]shard.ShardState, 0, len(pairs))

	// The keys are told apart by their part after the prefix, shard keys
	// first: a large fleet's listing is nearly all shard keys, and nothing
	// here builds a string for a key that is not a problem.
	assignorKey := string(shard.AssignorLock)
	for _, kv := range pairs {
		rel, under := strings.CutPrefix(kv.Key, d.Dir())
		switch {
		case !under:
			problem(kv.Key, "not under the fleet prefix; ignored")
		case strings.HasPrefix(rel, "shards/"):
			id := shard.ID(rel[len("shards/"):])
			if id == "" {
				problem(kv.Key, "shard key without a shard id")
				continue
			}
			if set != nil && !set.Has(id) {
				if set.Config.Retired(id) {
					continue // a layout the fleet ran before a reshard: its keys stay, never acquired again
				}
				problem(kv.Key, "not one of the fleet's shards; ignored")
				if kv.Session != "" {
					outside = append(outside, id)
				}
				continue
			}
			st := shard.ShardState{Shard: id, Session: kv.Session}
			o := memos.owners.get(pass, kv.Key, [2]uint64{kv.Index}, [2][]byte{kv.Value}, nil, func() (o decodedOwner) {
				if err := json.Unmarshal(kv.Value, &o.owner); err != nil {
					o.owner, o.err = shard.Owner{}, err
				}
				return o
			})
			st.Owner, st.Token = o.owner, o.owner.TokenAt(kv.Index)
			if o.err != nil {
				problem(kv.Key, "malformed shard value (want JSON shard.Owner): %v; lock holder %q kept, value ignored", o.err, kv.Session)
			}
			snap.Shards = append(snap.Shards, st)
		case rel == "config":
		case rel == assignorKey:
			snap.Assignor = DecodeLock(kv)
			if snap.Assignor.Problem != "" {
				snap.Problems = append(snap.Problems, snap.Assignor.Problem)
			}
		case rel == "freeze":
			var bad string
			if snap.Freeze, bad = DecodeFreeze(kv); bad != "" {
				snap.Problems = append(snap.Problems, bad)
			}
		case rel == "policy":
			var bad string
			if snap.Policy, bad = DecodePolicy(kv); bad != "" {
				snap.Problems = append(snap.Problems, bad)
			}
		case strings.HasPrefix(rel, "assign/"):
			worker, part, ok := strings.Cut(strings.TrimPrefix(rel, "assign/"), "/")
			switch {
			case worker == "" || !ok || (part != "shards" && part != "memory"):
				problem(kv.Key, "not an assignment key (assign/<worker>/shards or assign/<worker>/memory)")
			case part == "shards":
				assigned[worker] = kv
			default:
				memories[worker] = kv
			}
		case strings.HasPrefix(rel, "offsets/"), rel == "history":
		case isReportRel(rel): // after the shard keys: the hot path asks nothing of them
			kind, worker, _ := reportOf(rel)
			if worker == "" {
				problem(kv.Key, "%s key without a worker id", kind)
				continue
			}
			if reports[kind] == nil {
				reports[kind] = map[string]*Pair{}
			}
			reports[kind][worker] = kv
		case strings.HasPrefix(rel, "members/"):
			id := strings.TrimPrefix(rel, "members/")
			if id == "" {
				problem(kv.Key, "member key without an id")
				continue
			}
			dm := memos.members.get(pass, kv.Key, [2]uint64{kv.Index}, [2][]byte{kv.Value}, nil, func() (dm decodedMember) {
				dm.m, dm.bad = DecodeMember(id, kv)
				return dm
			})
			if dm.bad != "" {
				problem(kv.Key, "%s", dm.bad)
				continue
			}
			m := dm.m // a copy of its own: a snapshot is the caller's to change
			m.Member = m.Member.Clone()
			m.Session = kv.Session
			snap.Members = append(snap.Members, m)
		default:
			problem(kv.Key, "foreign key under the fleet prefix; ignored")
		}
	}
	if len(outside) > 0 && fleet == nil {
		// First, as the cause of the per-key problems.
		snap.Problems = slices.Insert(snap.Problems, 0, d.heldOutside(set.Config, outside))
	}
	for _, worker := range slices.Sorted(maps.Keys(assigned)) {
		kv, memory := assigned[worker], memories[worker]
		at, raw := [2]uint64{kv.Index}, [2][]byte{kv.Value}
		if memory != nil {
			at[1], raw[1] = memory.Index+1, memory.Value // 0: no memory
		}
		da := memos.assignments.get(pass, kv.Key, at, raw, set, func() (da decodedAssignment) {
			da.a, da.bad = DecodeAssignment(set, kv, memory)
			return da
		})
		if da.bad != "" {
			snap.Problems = append(snap.Problems, da.bad)
			continue
		}
		snap.Assignments[worker] = da.a.Clone() // a copy of its own, as above
	}
	fillReports(&snap, set, reports)
	byID := func(a, b shard.MemberState) int { return cmp.Compare(a.ID, b.ID) }
	if !slices.IsSortedFunc(snap.Members, byID) {
		slices.SortFunc(snap.Members, byID)
	}
	byShard := func(a, b shard.ShardState) int { return cmp.Compare(a.Shard, b.Shard) }
	if !slices.IsSortedFunc(snap.Shards, byShard) { // a listing sorted by key is sorted by shard
		slices.SortFunc(snap.Shards, byShard)
	}
	return snap
}

// fillReports sets each member's Load and Standby from its report keys
// that its own live session holds; a report of another session (a
// worker that stopped, its key not yet collected) is not the member's.
func fillReports(snap *shard.Snapshot, set *ShardSet, reports map[string]map[string]*Pair) {
	for i := range snap.Members {
		m := &snap.Members[i]
		live := func(kind string) *Pair {
			kv := reports[kind][m.ID]
			if kv == nil || kv.Session == "" || kv.Session != m.Session {
				return nil
			}
			return kv
		}
		if kv := live("loads"); kv != nil {
			load, err := keycodec.DecodeLoad(kv.Value)
			if err != nil {
				snap.Problems = append(snap.Problems, fmt.Sprintf("%s: %v; the member's loads are ignored", kv.Key, err))
			}
			m.Load = load
		}
		if kv := live("standby"); kv != nil {
			if set == nil {
				snap.Problems = append(snap.Problems, fmt.Sprintf("%s: cannot be read without the fleet's config; the member's standbys count as not ready", kv.Key))
				continue
			}
			states, err := keycodec.DecodeStandby(set.Config, kv.Value)
			if err != nil {
				snap.Problems = append(snap.Problems, fmt.Sprintf("%s: %v; the member's standbys count as not ready", kv.Key, err))
			}
			m.Standby = states
		}
	}
}
