package consulkv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/hashicorp/consul/api"
)

// Connection says how to reach a Consul agent. shard/consul.Config
// carries the same fields, and offsets/consul.Config takes a Connection,
// so one process's coordinator and offsets store reach the same agent
// with the same token, TLS and transport wrapper.
type Connection struct {
	// Address of the agent's HTTP API: host:port, or an http://, https://
	// or unix:// URL. Empty: 127.0.0.1:8500.
	Address string
	// Scheme is "http" or "https"; empty: http.
	Scheme string
	// Datacenter to use; empty means the agent's own.
	Datacenter string
	// Token is the ACL token; TokenFile, if set, is read instead.
	Token, TokenFile string
	// TLS settings (CA, client certificate, server name).
	TLS api.TLSConfig
	// WrapTransport, if set, wraps the HTTP transport: a hook to count or
	// observe requests. It is not applied to the TLS setup, which happens
	// below it.
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// WithDefaults fills the zero Address and Scheme; it works on a copy.
func (c Connection) WithDefaults() Connection {
	if c.Address == "" {
		c.Address = "127.0.0.1:8500"
	}
	if c.Scheme == "" {
		c.Scheme = "http"
	}
	return c
}

// Problems lists what is wrong with c (after WithDefaults), for a
// Validate that reports every problem at once.
func (c Connection) Problems() []string {
	c = c.WithDefaults()
	if c.Scheme != "http" && c.Scheme != "https" {
		return []string{fmt.Sprintf("scheme %q is neither http nor https", c.Scheme)}
	}
	return nil
}

// Dial builds the API client for c (after WithDefaults) and returns it
// with its transport, which the caller owns: CloseIdleConnections drops
// its pooled connections. It sends nothing.
func Dial(c Connection) (*api.Client, *http.Transport, error) {
	c = c.WithDefaults()
	transport := api.DefaultConfig().Transport // pooled, as Consul's own clients use
	// Go's transport asks for gzip on its own, and Consul then compresses
	// every large answer: on a loopback hop (the usual local agent) that
	// only burns CPU on both ends (docs/design.md, "One Consul layer").
	transport.DisableCompression = LocalAgent(c.Address)
	apiCfg := &api.Config{
		Address:    c.Address,
		Scheme:     c.Scheme,
		Datacenter: c.Datacenter,
		Token:      c.Token,
		TokenFile:  c.TokenFile,
		TLSConfig:  c.TLS,
		Transport:  transport,
	}
	// api.NewClient swaps in a transport of its own for unix:// addresses,
	// which would bypass WrapTransport: dial the socket from ours instead.
	if path, ok := strings.CutPrefix(c.Address, "unix://"); ok {
		transport.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
		apiCfg.Address, apiCfg.Scheme = "localhost", "http"
	}
	httpClient, err := api.NewHttpClient(transport, c.TLS)
	if err != nil {
		return nil, nil, err
	}
	if c.WrapTransport != nil {
		httpClient.Transport = c.WrapTransport(httpClient.Transport)
	}
	apiCfg.HttpClient = httpClient
	client, err := api.NewClient(apiCfg)
	if err != nil {
		return nil, nil, err
	}
	return client, transport, nil
}

// LocalAgent reports whether address (Connection.Address) is on this
// machine: a unix socket, localhost, or a loopback IP.
func LocalAgent(address string) bool {
	if strings.HasPrefix(address, "unix://") {
		return true
	}
	host := address
	if u, err := url.Parse(address); err == nil && u.Host != "" {
		host = u.Host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
