package freeport

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

// TestPickOutsideEphemeral: the ports are distinct, free, and outside the
// kernel's ephemeral range.
func TestPickOutsideEphemeral(t *testing.T) {
	low, high := ephemeralRange()
	ports, err := Pick(40)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 40 {
		t.Fatalf("Pick(40) returned %d ports", len(ports))
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

func TestPickNegative(t *testing.T) {
	if got, err := Pick(-1); err == nil {
		t.Fatalf("Pick(-1) = %v, want an error", got)
	}
}

// TestPickSkipsBusy: a candidate bound for TCP, one bound for UDP only (and
// free for TCP), and a repeated candidate are all passed over.
func TestPickSkipsBusy(t *testing.T) {
	ports, err := Pick(4)
	if err != nil {
		t.Fatal(err)
	}
	tcpBusy, udpBusy, a, b := ports[0], ports[1], ports[2], ports[3]
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(tcpBusy)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(udpBusy)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })

	draws := []int{tcpBusy, udpBusy, a, a, tcpBusy, b}
	got, err := pick(2, seq(draws))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("pick from %v (busy: TCP %d, UDP %d) = %v, want [%d %d]", draws, tcpBusy, udpBusy, got, a, b)
	}
}

// TestPickGivesUp: a draw that only offers a busy port ends in an error
// naming the refusal, not a loop.
func TestPickGivesUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := l.Addr().(*net.TCPAddr).Port
	got, err := pick(1, func() int { return busy })
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("pick with only busy port %d = %v, %v; want an error quoting the bind failure", busy, got, err)
	}
}

// seq draws the given ports in turn, then the last one again and again
// (which pick skips as seen, until it gives up).
func seq(ports []int) func() int {
	i := 0
	return func() int {
		p := ports[min(i, len(ports)-1)]
		i++
		return p
	}
}
