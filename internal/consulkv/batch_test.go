package consulkv

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/hashicorp/consul/api"
)

// TestBatches: operations are split into transactions of at most maxOps
// (the head included) and maxBytes of JSON body, in order, each opened by
// the head; an operation too large on its own travels alone.
func TestBatches(t *testing.T) {
	head := api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: "p/assignor", Session: "s"}}}
	op := func(key string, size int) *api.TxnOp {
		return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVSet, Key: key, Value: make([]byte, size)}}
	}
	body := func(ops api.TxnOps) int {
		b, err := json.Marshal(ops)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	for _, tc := range []struct {
		name      string
		ops       []*api.TxnOp
		maxOps    int
		maxBytes  int
		wantSizes []int // operations per transaction, head excluded
	}{
		{"none", nil, 4, 1 << 20, nil},
		{"by count", []*api.TxnOp{op("a", 1), op("b", 1), op("c", 1), op("d", 1), op("e", 1), op("f", 1), op("g", 1)}, 4, 1 << 20, []int{3, 3, 1}},
		{"by count, no byte budget", []*api.TxnOp{op("a", 1), op("b", 1), op("c", 1), op("d", 1)}, 3, 0, []int{2, 2}},
		{"by size", []*api.TxnOp{op("a", 300), op("b", 300), op("c", 300), op("d", 300)}, 128, 1400, []int{2, 2}},
		{"too large alone", []*api.TxnOp{op("a", 10), op("big", 5000), op("c", 10)}, 128, 1000, []int{1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := batches(head, tc.ops, tc.maxOps, tc.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			var sizes []int
			var sent []*api.TxnOp
			for _, b := range got {
				if b[0] != head[0] {
					t.Fatalf("a transaction opens with %+v, not the head", b[0].KV)
				}
				if len(b) > tc.maxOps || (tc.maxBytes > 0 && len(b) > 2 && body(b) > tc.maxBytes) {
					t.Fatalf("a transaction of %d operations, %d bytes: over %d, %d", len(b), body(b), tc.maxOps, tc.maxBytes)
				}
				sizes = append(sizes, len(b)-1)
				sent = append(sent, b[1:]...)
			}
			if !slices.Equal(sizes, tc.wantSizes) || !slices.Equal(sent, tc.ops) {
				t.Fatalf("operations per transaction %v, want %v, all in order", sizes, tc.wantSizes)
			}
		})
	}
}
