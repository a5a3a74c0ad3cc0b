package chaos

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestTCPProxyPartition: a partition relays nothing, on the connections it
// had and on new ones, without closing them; once it heals, what waited
// is relayed and new connections work.
func TestTCPProxyPartition(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // an echo server, a line at a time
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					_, _ = c.Write([]byte(line))
				}
			}()
		}
	}()
	p, err := NewTCPProxy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	echo := func(c net.Conn) error {
		_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return err
		}
		_, err := bufio.NewReader(c).ReadString('\n')
		return err
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	before := dial()
	if err := echo(before); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Set(ModePartition, 0)
	if err := echo(before); err == nil {
		t.Fatal("a connection from before the partition still answers")
	}
	during := dial()
	if err := echo(during); err == nil {
		t.Fatal("a connection made during the partition answers")
	}
	p.Set(ModePass, 0)
	for name, c := range map[string]net.Conn{"from before": before, "made during": during} {
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "ping\n" {
			t.Errorf("the connection %s the partition after it healed: %q, %v; want the echo that waited", name, line, err)
		}
	}
	if err := echo(dial()); err != nil {
		t.Fatalf("after the partition healed: %v", err)
	}
}
