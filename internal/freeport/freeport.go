package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Ports are drawn from [minPort, maxPort] outside the kernel's ephemeral
// range. Below minPort lie well-known services' ports.
const (
	minPort  = 10000
	maxPort  = 65535
	minSpan  = 1024 // fewer candidates than this and collisions get likely
	rangeSys = "/proc/sys/net/ipv4/ip_local_port_range"
)

// drawsPerPort bounds how many candidates Pick tries for each port wanted.
const drawsPerPort = 50

// defaultEphemeral is Linux's default ephemeral range, assumed when
// rangeSys cannot be read.
var defaultEphemeral = [2]int{32768, 60999}

// Pick returns n distinct ports outside the ephemeral range that were free
// on 127.0.0.1 for TCP and UDP a moment ago, drawn at random.
func Pick(n int) ([]int, error) {
	if n < 0 {
		return nil, fmt.Errorf("freeport: asked for %d ports; want a count ≥ 0", n)
	}
	s := candidates(ephemeralRange())
	return pick(n, func() int { return s.lo + rand.IntN(s.size()) })
}

// span is the ports [lo, hi).
type span struct{ lo, hi int }

func (s span) size() int { return s.hi - s.lo }

// candidates returns where to draw ports, given the ephemeral range [low,
// high]: below it ([minPort, low)) if that holds at least minSpan ports,
// else above it ((high, maxPort]) if that does, else all of [minPort,
// maxPort] (outgoing connections may then take a port).
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

// pick takes candidates from draw until it has n distinct ones that are
// free, giving up after drawsPerPort draws per port.
func pick(n int, draw func() int) ([]int, error) {
	seen := make(map[int]bool)
	ports := make([]int, 0, n)
	var last error
	for tries := 0; len(ports) < n; tries++ {
		if tries == drawsPerPort*n {
			return nil, fmt.Errorf("freeport: only %d of %d ports free after %d draws; last refused: %v", len(ports), n, tries, last)
		}
		p := draw()
		if seen[p] {
			continue
		}
		seen[p] = true
		if last = free(p); last == nil {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// free binds 127.0.0.1:port for TCP and for UDP (Consul's Serf uses both),
// and releases it.
func free(port int) error {
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
