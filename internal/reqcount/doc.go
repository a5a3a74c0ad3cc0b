// Package reqcount counts the requests a coordinator client sends, in
// total and by name (an HTTP endpoint, a gRPC method): the one counter
// behind shard/consul's and shard/etcd's RequestCounter.
package reqcount
