package etcd

import (
	"context"

	"google.golang.org/grpc"

	"github.com/shardlease/shardlease/internal/reqcount"
)

// RequestCounter counts the requests a client sends to etcd, in total and
// by gRPC method ("/etcdserverpb.KV/Txn", "/etcdserverpb.Lease/LeaseGrant"):
// each unary call once, and each message sent on a stream once (a watch
// created or cancelled, a lease keep-alive), which is what etcd serves.
// Give it to Connection.Requests, one counter per worker to measure
// requests per worker. Safe for concurrent use; the zero value is ready.
type RequestCounter struct{ reqcount.Counter }

// dialOptions are the interceptors that count a client's requests.
func (rc *RequestCounter) dialOptions() []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		rc.Add(method)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return countedStream{ClientStream: s, count: func() { rc.Add(method) }}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

// countedStream counts the messages sent on a client stream.
type countedStream struct {
	grpc.ClientStream
	count func()
}

func (s countedStream) SendMsg(m any) error {
	s.count()
	return s.ClientStream.SendMsg(m)
}
