package assignor

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// memoryVersion is the format of the memory this package writes beside
// each worker's key (shard.Assignment.Memory). A memory of another
// version is read as none: the next step starts that worker afresh (no
// wait, no stuck verdict, no residences), which can delay a move or a
// verdict but never makes one.
const memoryVersion = 1

// memoryValue is what the assignor remembers about one worker between
// steps (rebalance.Assignment's fields beyond the worker's key), stored in
// the coordinator so that the next assignor carries on.
type memoryValue struct {
	V            int             `json:"v"`
	Since        time.Time       `json:"since,omitzero"`
	Waiting      int             `json:"waiting,omitempty"`
	WaitingSince time.Time       `json:"waiting_since,omitzero"`
	Stuck        bool            `json:"stuck,omitempty"`
	StuckSession shard.SessionID `json:"stuck_session,omitempty"`
	Verdicts     int             `json:"verdicts,omitempty"`
	StuckSince   time.Time       `json:"stuck_since,omitzero"`
	Arrived      []arrivalValue  `json:"arrived,omitempty"`
	OutOfBand    time.Time       `json:"out_of_band,omitzero"`
	// Preparing is when each warm move to the worker began to prepare
	// (rebalance.Assignment.Preparing); release 0.1.0's assignors ignore
	// it, and cannot write a key with standbys (StepStandbys).
	Preparing []arrivalValue `json:"preparing,omitempty"`
	// Gen is the fleet's generation when the memory was written. A
	// memory of an earlier generation keeps no stuck verdict and no wait:
	// the generation is raised to end a lost coordinator history, under
	// which every worker's claims were refused and judged stuck, and the
	// workers must get their shards back at once, not after the verdicts
	// expire. (Release 0.1.0's assignors ignore it.)
	Gen uint32 `json:"gen,omitempty"`
}

// arrivalValue is the shards that arrived (or began to prepare) at one
// time, as index ranges: a step places many shards at once, so grouping
// by time keeps it small.
type arrivalValue struct {
	At     time.Time `json:"at"`
	Shards string    `json:"shards"`
}

// encodeMemory is a's memory for the fleet's config (and its generation).
func encodeMemory(cfg shard.Config, a rebalance.Assignment) ([]byte, error) {
	v := memoryValue{V: memoryVersion, Since: a.Since, Waiting: a.Waiting, WaitingSince: a.WaitingSince,
		Stuck: a.Stuck, StuckSession: a.StuckSession, Verdicts: a.Verdicts, StuckSince: a.StuckSince, OutOfBand: a.OutOfBand,
		Gen: cfg.Generation}
	var err error
	if v.Arrived, err = encodeTimes(cfg, a.Arrived); err != nil {
		return nil, fmt.Errorf("arrivals %w", err)
	}
	if v.Preparing, err = encodeTimes(cfg, a.Preparing); err != nil {
		return nil, fmt.Errorf("preparations %w", err)
	}
	return json.Marshal(v)
}

// encodeTimes groups a map of shard to time by time, as sets.
func encodeTimes(cfg shard.Config, times map[shard.ID]time.Time) ([]arrivalValue, error) {
	byTime := map[int64][]shard.ID{}
	at := map[int64]time.Time{}
	for id, t := range times {
		k := t.UnixNano()
		byTime[k] = append(byTime[k], id)
		at[k] = t
	}
	var out []arrivalValue
	for _, k := range slices.Sorted(maps.Keys(byTime)) {
		set, err := keycodec.EncodeSet(cfg, byTime[k])
		if err != nil {
			return nil, fmt.Errorf("at %v: %w", at[k], err)
		}
		out = append(out, arrivalValue{At: at[k], Shards: set})
	}
	return out, nil
}

// decodeTimes reads what encodeTimes wrote (nil for none).
func decodeTimes(cfg shard.Config, values []arrivalValue) (map[shard.ID]time.Time, error) {
	var out map[shard.ID]time.Time
	for _, av := range values {
		ids, err := keycodec.DecodeSet(cfg, av.Shards)
		if err != nil {
			return nil, fmt.Errorf("at %v: %w", av.At, err)
		}
		if out == nil {
			out = map[shard.ID]time.Time{}
		}
		for _, id := range ids {
			out[id] = av.At
		}
	}
	return out, nil
}

// decodeMemory reads a worker's memory into a (its key's fields are the
// caller's), for the fleet's config and its generation. It says what is wrong with a memory it cannot read; a is
// then left as it was.
func decodeMemory(cfg shard.Config, b []byte, a *rebalance.Assignment) error {
	if len(b) == 0 {
		return nil // nothing remembered
	}
	var v memoryValue
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("malformed assignor memory: %w", err)
	}
	if v.V != memoryVersion {
		return fmt.Errorf("assignor memory of version %d, this assignor reads version %d", v.V, memoryVersion)
	}
	if v.Waiting < 0 {
		return fmt.Errorf("assignor memory's waiting %d is negative", v.Waiting)
	}
	if v.Verdicts < 0 {
		return fmt.Errorf("assignor memory's verdicts %d is negative", v.Verdicts)
	}
	arrived, err := decodeTimes(cfg, v.Arrived)
	if err != nil {
		return fmt.Errorf("assignor memory's shards arrived %w", err)
	}
	preparing, err := decodeTimes(cfg, v.Preparing)
	if err != nil {
		return fmt.Errorf("assignor memory's shards preparing %w", err)
	}
	a.Preparing = preparing
	a.Since, a.Arrived, a.OutOfBand = v.Since, arrived, v.OutOfBand
	if v.Gen < cfg.Generation {
		return nil // a fresh start for the new generation (memoryValue.Gen)
	}
	a.Waiting, a.WaitingSince = v.Waiting, v.WaitingSince
	a.Stuck, a.StuckSession = v.Stuck, v.StuckSession
	a.Verdicts, a.StuckSince = v.Verdicts, v.StuckSince
	return nil
}

// Memory is what the assignor remembers about one worker, for operators'
// views (shardctl, the dashboard): when its assignment last changed, how
// long it has been given free shards it did not take, whether it is
// judged stuck (or on probation after a verdict: Verdicts > 0 without
// Stuck) and under which session, and since when its load has been outside
// the band.
type Memory struct {
	Since        time.Time
	Waiting      int
	WaitingSince time.Time
	Stuck        bool
	StuckSession shard.SessionID
	Verdicts     int
	StuckSince   time.Time
	OutOfBand    time.Time
}

// Remembered reads the assignor's memory of a worker from its key as a
// snapshot lists it (shard.Assignment.Memory); ok is false when there is
// none this version can read.
func Remembered(a shard.Assignment) (Memory, bool) {
	var v memoryValue
	if len(a.Memory) == 0 || json.Unmarshal(a.Memory, &v) != nil || v.V != memoryVersion {
		return Memory{}, false
	}
	return Memory{Since: v.Since, Waiting: v.Waiting, WaitingSince: v.WaitingSince, Stuck: v.Stuck,
		StuckSession: v.StuckSession, Verdicts: v.Verdicts, StuckSince: v.StuckSince, OutOfBand: v.OutOfBand}, true
}

// Encode writes m in the assignor's memory format (no arrivals), as the
// assignor would beside a worker's key: for tools and tests that set up a
// fleet's keys by hand through a coordinator.
func (m Memory) Encode() []byte {
	b, _ := json.Marshal(memoryValue{V: memoryVersion, Since: m.Since, Waiting: m.Waiting, WaitingSince: m.WaitingSince,
		Stuck: m.Stuck, StuckSession: m.StuckSession, Verdicts: m.Verdicts, StuckSince: m.StuckSince, OutOfBand: m.OutOfBand})
	return b
}

// generation is the fleet's generation as the snapshot's config says (0
// without one): the one the memories are read and written in, whatever
// config the assignor's worker brought.
func generation(snap shard.Snapshot) uint32 {
	if snap.Config == nil {
		return 0
	}
	return snap.Config.Generation
}
