package consultest

import "github.com/shardlease/shardlease/internal/freeport"

// portsPerAgent is how many ports an agent listens on: HTTP, Serf LAN,
// Serf WAN and server RPC, in that order.
const portsPerAgent = 4

// freePorts returns n distinct ports for agents, outside the kernel's
// ephemeral range and free for TCP and UDP a moment ago (freeport.Pick).
// One may still be taken before its agent binds it; starts retry.
func freePorts(n int) ([]int, error) { return freeport.Pick(n) }
