package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Stream is the name of the one stream; its subjects are SubjectPrefix + ">".
const (
	Stream        = "ORDERS"
	SubjectPrefix = "orders."
)

// Subject is partition p's subject: orders.000, orders.001, …
func Subject(p int) string { return fmt.Sprintf("%s%03d", SubjectPrefix, p) }

// Event is one message of a partition: the N-th (from 1) the producer
// published to it, and when, so the handler can tell the latency from
// publish to committed effect. A keyed event (Keyed's) is also the
// KeySeq-th event of its key, an order id (0: none), wherever the key's
// partition was when it was published. A marker is the last message of a
// partition the producer left at a switch of layouts: its end, which its
// owner applies like an event (its N follows the partition's last event)
// before it closes the partition.
type Event struct {
	Partition   int   `json:"p"`
	N           int64 `json:"n"`
	PublishedNs int64 `json:"t"`
	Key         int64 `json:"k,omitempty"`
	KeySeq      int64 `json:"ks,omitempty"`
	Marker      bool  `json:"m,omitempty"`
}

// Embedded is a nats-server with JetStream running in this process, on a
// random loopback port with its store in a directory of its own.
type Embedded struct {
	srv *server.Server
}

// StartEmbedded starts an in-process nats-server with JetStream, storing
// its files under dir (which the caller removes).
func StartEmbedded(dir string) (*Embedded, error) {
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: dir,
		NoSigs: true, NoLog: true, MaxPayload: 1 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("pipeline: embedded nats-server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("pipeline: the embedded nats-server was not ready for connections within 10 s")
	}
	return &Embedded{srv: srv}, nil
}

// URL is where clients connect.
func (e *Embedded) URL() string { return e.srv.ClientURL() }

// Close shuts the server down and waits for it.
func (e *Embedded) Close() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// Connect connects to url and returns the connection and its JetStream
// context. The connection retries for ever on a broken link (the default
// would give up after a minute), so a server restart is ridden out.
func Connect(url, name string) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		return nil, nil, fmt.Errorf("pipeline: connecting to NATS at %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("pipeline: JetStream on %s: %w", url, err)
	}
	return nc, js, nil
}

// Every handler start, replay and standby rebuild makes an ordered
// consumer. nats-server refuses a stream's 1,001st consumer unless the
// stream says otherwise, and the client library keeps an idle one five
// minutes: a 128-partition run with standbys reached the limit within a
// minute, and its handlers restarted cold over and over. So the stream
// allows maxConsumers, and the server drops a consumer nobody reads
// after consumerIdle.
const (
	maxConsumers = 20_000
	consumerIdle = 2 * time.Second
)

// CreateStream creates the stream afresh (deleting one left by an earlier
// run): file storage, every message kept, one subject per partition.
func CreateStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	if err := js.DeleteStream(ctx, Stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("pipeline: deleting the old stream %s: %w", Stream, err)
	}
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: Stream, Subjects: []string{SubjectPrefix + ">"},
		Storage: jetstream.FileStorage, Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld,
		MaxConsumers: maxConsumers,
	})
	if err != nil {
		return nil, fmt.Errorf("pipeline: creating stream %s: %w", Stream, err)
	}
	return s, nil
}

func encode(e Event) []byte {
	b, _ := json.Marshal(e) // integers and a bool: cannot fail
	return b
}

func decode(b []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("pipeline: a message that is not an event (%q): %w", b, err)
	}
	return e, nil
}
