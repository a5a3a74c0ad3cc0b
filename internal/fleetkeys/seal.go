package fleetkeys

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
)

// A worker's key and the assignor's memory beside it are one decision:
// Assign writes both in one transaction, so both carry its modify index,
// and a plain write of either (a hand edit) moves only its own. Consul
// does not bump the index of a key set to the value it already holds, so
// each Assign also stamps both values with one fresh number, the seal: the
// pair is sealed when both carry the same modify index and the same seal.

// NewSeal returns the seal of one Assign's pair.
func NewSeal() uint64 { return rand.Uint64() | 1 }

// SealValue stamps an assignment value (a JSON object) with seal, as its
// first field; readers of the value ignore it.
func SealValue(value []byte, seal uint64) []byte {
	rest := bytes.TrimPrefix(bytes.TrimSpace(value), []byte("{"))
	out := append([]byte(`{"seal":`), strconv.FormatUint(seal, 10)...)
	if len(bytes.TrimSpace(rest)) > 1 { // more than the closing brace
		out = append(out, ',')
	}
	return append(out, rest...)
}

// ValueSeal is the seal an assignment value carries, 0 when none.
func ValueSeal(value []byte) uint64 {
	var v struct {
		Seal uint64 `json:"seal"`
	}
	_ = json.Unmarshal(value, &v)
	return v.Seal
}

// SealMemory stamps the assignor's memory with seal, on a line of its own
// before it (the memory is opaque: any bytes).
func SealMemory(memory []byte, seal uint64) []byte {
	return append(append(strconv.AppendUint(nil, seal, 10), '\n'), memory...)
}

// UnsealMemory splits a stored memory into its seal (0 when it has none)
// and the assignor's bytes.
func UnsealMemory(stored []byte) (uint64, []byte) {
	line, memory, ok := bytes.Cut(stored, []byte("\n"))
	if !ok {
		return 0, stored
	}
	seal, err := strconv.ParseUint(string(line), 10, 64)
	if err != nil {
		return 0, stored
	}
	return seal, memory
}
