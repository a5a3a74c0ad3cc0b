package lincheck

import (
	"fmt"
	"maps"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Kind is the operation of an Input.
type Kind uint8

// The operations.
const (
	Commit Kind = iota
	Fence
	Load
)

func (k Kind) String() string { return [...]string{"commit", "fence", "load"}[k] }

// Input is one call, as porcupine's Operation.Input.
type Input struct {
	Kind   Kind
	Shard  shard.ID
	Token  shard.Token // Commit, Fence
	Offset int64       // Commit
}

// Output is what the call returned, as porcupine's Operation.Output.
type Output struct {
	Stale bool               // rejected with offsets.ErrStaleToken; otherwise it succeeded
	CP    offsets.Checkpoint // Load's result
	// Unknown: the outcome of a Commit or Fence is not known (it failed
	// other than as stale, or its process was killed during it). It may
	// have taken effect or not: give it a Return after every other
	// operation, and the model lets it take effect wherever it is placed
	// (placed last, it is as if it never happened).
	Unknown bool
}

// Model is the porcupine model of a Store (see the package doc). Its state
// is an offsets.Checkpoint.
var Model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byShard := map[shard.ID][]porcupine.Operation{}
		for _, op := range history {
			s := op.Input.(Input).Shard
			byShard[s] = append(byShard[s], op)
		}
		parts := make([][]porcupine.Operation, 0, len(byShard))
		for _, s := range slices.Sorted(maps.Keys(byShard)) {
			parts = append(parts, byShard[s])
		}
		return parts
	},
	Init: func() any { return offsets.Checkpoint{} },
	Step: func(state, input, output any) (bool, any) {
		cp, in, out := state.(offsets.Checkpoint), input.(Input), output.(Output)
		switch in.Kind {
		case Load:
			return !out.Stale && out.CP == cp, cp
		case Commit:
			if in.Token < cp.Floor {
				return out.Stale || out.Unknown, cp
			}
			return !out.Stale, offsets.Checkpoint{Offset: in.Offset, Token: in.Token, Floor: in.Token}
		default: // Fence
			if in.Token < cp.Floor {
				return out.Stale || out.Unknown, cp
			}
			next := cp
			next.Floor = in.Token
			return !out.Stale, next
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(Input), output.(Output)
		var call string
		switch in.Kind {
		case Commit:
			call = fmt.Sprintf("Commit(%d, %d)", in.Token, in.Offset)
		case Fence:
			call = fmt.Sprintf("Fence(%d)", in.Token)
		default:
			return fmt.Sprintf("Load() → %d@%d floor %d", out.CP.Offset, out.CP.Token, out.CP.Floor)
		}
		if out.Stale {
			return call + " → stale"
		}
		if out.Unknown {
			return call + " → unknown"
		}
		return call + " → ok"
	},
	DescribeState: func(state any) string {
		cp := state.(offsets.Checkpoint)
		return fmt.Sprintf("%d@%d floor %d", cp.Offset, cp.Token, cp.Floor)
	},
}
