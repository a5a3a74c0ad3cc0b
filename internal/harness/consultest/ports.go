package consultest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// portsPerAgent is how many ports an agent listens on: HTTP, Serf LAN,
// Serf WAN and server RPC, in that order.
const portsPerAgent = 4

// Ports are drawn from [minPort, 65536) outside the kernel's ephemeral
// range: the source port of every outgoing connection on the machine comes
// from that range, so a port in it that was free a moment ago may be taken
// before the agent binds it (a CI run lost a cluster that way, its WAN
// Serf port taken). Below minPort lie well-known services' ports.
const (
	minPort  = 10000
	maxPort  = 65535
	minSpan  = 1024 // fewer candidates than this and collisions get likely
	rangeSys = "/proc/sys/net/ipv4/ip_local_port_range"
)

// defaultEphemeral is Linux's default ephemeral range, assumed when
// rangeSys cannot be read.
var defaultEphemeral = [2]int{32768, 60999}

// span is the ports [lo, hi).
type span struct{ lo, hi int }

func (s span) size() int { return s.hi - s.lo }

// candidates returns where to draw ports, given the ephemeral range [low,
// high]: below it ([minPort, low)) if that holds at least minSpan ports,
// else above it ((high, maxPort]) if that does, else all of [minPort,
// maxPort] (outgoing connections may then take a port; the start retries).
func candidates(low, high int) span {
	if below := (span{minPort, low}); below.size() >= minSpan {
		return below
	}
	if above := (span{max(high+1, minPort), maxPort + 1}); above.size() >= minSpan {
		return above
	}
	return span{minPort, maxPort + 1}
}

// parseEphemeral parses the contents of ip_local_port_range ("low high").
func parseEphemeral(s string) (low, high int, err error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("ephemeral port range %q: want two numbers", s)
	}
	if low, err = strconv.Atoi(f[0]); err == nil {
		high, err = strconv.Atoi(f[1])
	}
	if err != nil || low < 1 || low > high || high > maxPort {
		return 0, 0, fmt.Errorf("ephemeral port range %q: not a range of ports", s)
	}
	return low, high, nil
}

// ephemeralRange returns the kernel's ephemeral port range, or Linux's
// default when it cannot be read.
func ephemeralRange() (low, high int) {
	b, err := os.ReadFile(rangeSys)
	if err == nil {
		if low, high, err = parseEphemeral(string(b)); err == nil {
			return low, high
		}
	}
	return defaultEphemeral[0], defaultEphemeral[1]
}

// freePorts returns n distinct ports outside the ephemeral range that were
// free on 127.0.0.1 for TCP and UDP a moment ago. They are drawn at random,
// so that test processes running at once rarely draw the same ones.
func freePorts(n int) ([]int, error) {
	s := candidates(ephemeralRange())
	return pickPorts(n, func() int { return s.lo + rand.IntN(s.size()) })
}

// pickPorts takes candidates from draw until it has n distinct ones that
// are free, giving up after 50 draws per port.
func pickPorts(n int, draw func() int) ([]int, error) {
	seen := make(map[int]bool)
	ports := make([]int, 0, n)
	var last error
	for tries := 0; len(ports) < n; tries++ {
		if tries == 50*n {
			return nil, fmt.Errorf("only %d of %d ports free after %d draws; last refused: %v", len(ports), n, tries, last)
		}
		p := draw()
		if seen[p] {
			continue
		}
		seen[p] = true
		if last = portFree(p); last == nil {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// portFree binds 127.0.0.1:port for TCP and for UDP (Serf uses both), and
// releases it.
func portFree(port int) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	return u.Close()
}
