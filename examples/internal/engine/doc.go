// Package engine is the examples' choice of coordinator: the embedded one
// by default, Consul with --consul, etcd with --etcd; and a coordinator
// of the chosen engine per member, as separate processes would have.
package engine
