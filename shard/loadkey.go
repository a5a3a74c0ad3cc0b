package shard

// MaxLoadBytes bounds the JSON value of a loads key (Members.ReportLoad).
// Consul stores a value of up to 512 KiB and sends it base64-encoded in a
// /v1/txn body that may not exceed 512 KiB either: 352 KiB of JSON is about
// 470 KiB encoded, with room for the transaction around it. A worker of
// 10,000 shards named like the default ("stream/shard-0042") with figures
// of three significant digits writes 243 to 260 KiB (1 to 0.0123 a shard),
// so default names of up to about 25 characters fit.
const MaxLoadBytes = 352 << 10
