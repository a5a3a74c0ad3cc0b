// Package dashboard serves the live view of one fleet: an HTML page with the
// assignor and its epoch, the ownership grid (one cell per shard, coloured by
// owner, token on hover), the workers with the shards each owns against the
// shards its assignment gives it (and a stuck badge, a cordon badge with
// who set it and when, a returning badge with the end of the worker's
// rejoin grace), a banner while the fleet is frozen saying who froze it,
// when and why, the move queue (hand-offs in flight against the budget
// when known, and those waiting), offsets and lag per shard when an offset store is configured, the
// imbalance, the recent moves with their reasons, and the coordinator's
// problems (foreign or malformed keys, a P/config that differs from the one
// the fleet runs) above everything else while there are any, kept current by
// server-sent events; the same data as JSON at /api/v1/fleet; and, when a
// Prometheus gatherer is given, /metrics.
//
//	GET  /                     the page (assets embedded: works offline)
//	GET  /api/v1/fleet         fleetview.Fleet as JSON
//	GET  /api/v1/events        text/event-stream: a "fleet" event per change
//	GET  /metrics              Prometheus exposition (Options.Gatherer)
//	GET  /healthz              200 once a snapshot was read, else 503
//	POST /api/v1/workers/{id}/crash   the demo only (Options.Crash)
//
// What it guarantees: every client sees the latest view within about a
// quarter of a second of the coordinator's change (views are rebuilt at most
// four times a second, so a burst costs one update), and the server lists
// the prefix at most four times a second however busy the fleet
// (fleetview.MinSpacing), however many clients it has. While the coordinator
// cannot be read the last good view stays up, with Fleet.Error saying why.
//
// What it does not do: authenticate anyone. It is read-only, except for the
// demo's crash action, which exists only when Options.Crash is set. Bind it
// to loopback or put it behind your own proxy.
//
// How it fails: New refuses options without a coordinator. Serve returns
// the listener's error; coordinator errors never end it (it retries with
// jittered backoff and shows the error on the page).
package dashboard
