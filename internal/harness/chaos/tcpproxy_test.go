package chaos

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestTCPProxyPartition: a partition closes the connections relayed and
// relays nothing on new ones until it heals; then it relays again.
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
	if err := echo(dial()); err == nil {
		t.Fatal("a connection made during the partition answers")
	}
	p.Set(ModePass, 0)
	if err := echo(dial()); err != nil {
		t.Fatalf("after the partition healed: %v", err)
	}
}
