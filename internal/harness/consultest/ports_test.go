package consultest

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestParseEphemeral(t *testing.T) {
	for _, tc := range []struct {
		in        string
		low, high int
		bad       bool
	}{
		{in: "32768\t60999\n", low: 32768, high: 60999},
		{in: "1024 65535", low: 1024, high: 65535},
		{in: "", bad: true},
		{in: "32768", bad: true},
		{in: "a 60999", bad: true},
		{in: "60999 32768", bad: true},
		{in: "0 100", bad: true},
		{in: "1024 70000", bad: true},
	} {
		low, high, err := parseEphemeral(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("parseEphemeral(%q) = %d, %d; want an error", tc.in, low, high)
			}
			continue
		}
		if err != nil || low != tc.low || high != tc.high {
			t.Errorf("parseEphemeral(%q) = %d, %d, %v; want %d, %d", tc.in, low, high, err, tc.low, tc.high)
		}
	}
}

func TestCandidates(t *testing.T) {
	for _, tc := range []struct {
		low, high int
		want      span
	}{
		{32768, 60999, span{10000, 32768}}, // Linux's default: below
		{49152, 65535, span{10000, 49152}}, // IANA's range
		{10500, 60999, span{61000, 65536}}, // too little below: above
		{1024, 65535, span{10000, 65536}},  // nothing outside: everything
		{1024, 30000, span{30001, 65536}},  // range under minPort
	} {
		if got := candidates(tc.low, tc.high); got != tc.want {
			t.Errorf("candidates(%d, %d) = %v, want %v", tc.low, tc.high, got, tc.want)
		}
	}
}

// TestFreePortsOutsideEphemeral: the ports are distinct, free, and outside
// the kernel's ephemeral range.
func TestFreePortsOutsideEphemeral(t *testing.T) {
	low, high := ephemeralRange()
	ports, err := freePorts(40)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < minPort || (p >= low && p <= high) {
			t.Errorf("port %d is inside the ephemeral range %d–%d or below %d", p, low, high, minPort)
		}
		if seen[p] {
			t.Errorf("port %d drawn twice", p)
		}
		seen[p] = true
	}
}

// TestPickPortsSkipsBusy: a candidate bound for TCP, one bound for UDP only,
// and a repeated candidate are all passed over.
func TestPickPortsSkipsBusy(t *testing.T) {
	tcpBusy, udpBusy := occupy(t, "tcp"), occupy(t, "udp")
	spare, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	a, b := spare[0], spare[1]

	draws := []int{tcpBusy, udpBusy, a, a, tcpBusy, b}
	got, err := pickPorts(2, seq(draws))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("pickPorts from %v (busy: TCP %d, UDP %d) = %v, want [%d %d]", draws, tcpBusy, udpBusy, got, a, b)
	}
}

// TestPickPortsGivesUp: a draw that only offers a busy port ends in an
// error naming the refusal, not a loop.
func TestPickPortsGivesUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := l.Addr().(*net.TCPAddr).Port
	got, err := pickPorts(1, func() int { return busy })
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("pickPorts with only busy port %d = %v, %v; want an error quoting the bind failure", busy, got, err)
	}
}

// seq draws the given ports in turn, then the last one again and again
// (which pickPorts skips as seen, until it gives up).
func seq(ports []int) func() int {
	i := 0
	return func() int {
		p := ports[min(i, len(ports)-1)]
		i++
		return p
	}
}

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
