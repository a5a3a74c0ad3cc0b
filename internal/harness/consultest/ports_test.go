package consultest

import (
	"net"
	"strconv"
	"testing"
)

// occupy holds a free port for the rest of the test, for TCP (a listener)
// or UDP (a bound socket), and returns it.
func occupy(t *testing.T, network string) int {
	t.Helper()
	ps, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ps[0]))
	var c interface{ Close() error }
	if network == "udp" {
		c, err = net.ListenPacket("udp", addr)
	} else {
		c, err = net.Listen("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ps[0]
}
