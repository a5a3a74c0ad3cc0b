package fleetkeys

import "github.com/shardlease/shardlease/shard"

// GrantsInOrder is the grants of tokens in the order want asked for them
// (Locks.Acquire's result).
func GrantsInOrder(want []shard.Acquisition, tokens map[shard.Lock]shard.Token) []shard.Grant {
	grants := make([]shard.Grant, 0, len(tokens))
	for _, a := range want {
		if t, ok := tokens[a.Lock]; ok {
			grants = append(grants, shard.Grant{Lock: a.Lock, Token: t})
		}
	}
	return grants
}

// UniqueBy returns xs without the elements whose key was seen before, in
// order (a lock asked for twice counts once). It does not modify xs.
func UniqueBy[T any, K comparable](xs []T, key func(T) K) []T {
	seen := make(map[K]bool, len(xs))
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		if k := key(x); !seen[k] {
			seen[k] = true
			out = append(out, x)
		}
	}
	return out
}
