package consul

import "github.com/hashicorp/consul/api"

// APIClient is the coordinator's Consul client, for tests that edit keys
// as an operator would; the package hands it to nobody else.
func APIClient(c *Coordinator) *api.Client { return c.client }
