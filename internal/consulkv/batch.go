package consulkv

import (
	"encoding/json"
	"slices"

	"github.com/hashicorp/consul/api"
)

// Batches splits ops into transactions of at most MaxTxnOps operations,
// each opened by head (checks every transaction repeats), and, if maxBytes
// is positive, about maxBytes of JSON body (Consul 1.14 refuses a body
// over txn_max_req_len, 512 KiB by default, with HTTP 413). An operation
// that does not fit in maxBytes on its own travels alone, for Consul to
// refuse with the reason. Order is kept.
func Batches(head api.TxnOps, ops []*api.TxnOp, maxBytes int) ([]api.TxnOps, error) {
	return batches(head, ops, MaxTxnOps, maxBytes)
}

// GroupBatches is Batches for groups of operations that must commit
// together: a group is never split across two transactions (a group
// larger than a transaction is refused by Consul with the reason).
func GroupBatches(head api.TxnOps, groups [][]*api.TxnOp, maxBytes int) ([]api.TxnOps, error) {
	return groupBatches(head, groups, MaxTxnOps, maxBytes)
}

func batches(head api.TxnOps, ops []*api.TxnOp, maxOps, maxBytes int) ([]api.TxnOps, error) {
	groups := make([][]*api.TxnOp, len(ops))
	for i, op := range ops {
		groups[i] = []*api.TxnOp{op}
	}
	return groupBatches(head, groups, maxOps, maxBytes)
}

func groupBatches(head api.TxnOps, groups [][]*api.TxnOp, maxOps, maxBytes int) ([]api.TxnOps, error) {
	size := func(op *api.TxnOp) (int, error) {
		if maxBytes <= 0 {
			return 0, nil
		}
		b, err := json.Marshal(op)
		return len(b) + 1, err // and a comma
	}
	headBytes := 2 // the brackets
	for _, op := range head {
		n, err := size(op)
		if err != nil {
			return nil, err
		}
		headBytes += n
	}
	var (
		out   []api.TxnOps
		cur   api.TxnOps
		bytes int
	)
	for _, group := range groups {
		n := 0
		for _, op := range group {
			k, err := size(op)
			if err != nil {
				return nil, err
			}
			n += k
		}
		if cur != nil && (len(cur)+len(group) > maxOps || (maxBytes > 0 && bytes+n > maxBytes)) {
			out = append(out, cur)
			cur = nil
		}
		if cur == nil {
			cur, bytes = slices.Clone(head), headBytes
		}
		cur = append(cur, group...)
		bytes += n
	}
	if cur != nil {
		out = append(out, cur)
	}
	return out, nil
}
