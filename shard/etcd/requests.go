package etcd

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc"

	"github.com/shardlease/shardlease/internal/reqcount"
)

// RequestCounter counts the requests a client sends to etcd, in total and
// by gRPC method ("/etcdserverpb.KV/Txn", "/etcdserverpb.Lease/LeaseGrant"):
// each unary call once, and each message sent on a stream once (a watch
// created or cancelled, a lease keep-alive), which is what etcd serves.
// It also counts the bytes of every message the client receives (Received).
// Give it to Connection.Requests, one counter per worker to measure
// requests per worker. Safe for concurrent use; the zero value is ready.
type RequestCounter struct {
	reqcount.Counter
	received atomic.Int64
}

// grpcMessagePrefix is the bytes gRPC puts before every message on the
// wire: a compression flag and a four-byte length.
const grpcMessagePrefix = 5

// Received returns the bytes of the messages the client has received so
// far: each reply and each message of a stream (a watch's events, a
// keep-alive's answer), as gRPC framed it (the message and its five-byte
// prefix; HTTP/2's own frame headers are not counted).
func (rc *RequestCounter) Received() int64 { return rc.received.Load() }

// countReceived adds the size of one message received.
func (rc *RequestCounter) countReceived(m any) {
	if s, ok := m.(interface{ Size() int }); ok {
		rc.received.Add(int64(s.Size()) + grpcMessagePrefix)
	}
}

// dialOptions are the interceptors that count a client's requests and the
// bytes it receives.
func (rc *RequestCounter) dialOptions() []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		rc.Add(method)
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil {
			rc.countReceived(reply)
		}
		return err
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return countedStream{ClientStream: s, rc: rc, method: method}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

// countedStream counts the messages sent on a client stream and the bytes
// of those received.
type countedStream struct {
	grpc.ClientStream
	rc     *RequestCounter
	method string
}

func (s countedStream) SendMsg(m any) error {
	s.rc.Add(s.method)
	return s.ClientStream.SendMsg(m)
}

func (s countedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		s.rc.countReceived(m)
	}
	return err
}
