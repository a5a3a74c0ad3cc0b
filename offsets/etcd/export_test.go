package etcd

import clientv3 "go.etcd.io/etcd/client/v3"

// SetKV replaces the store's KV (a test's fault injector).
func (st *Store) SetKV(kv clientv3.KV) { st.kv = kv }
