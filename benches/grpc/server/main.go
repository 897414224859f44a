// A fast gRPC server for benches/grpc/run.sh: answers every unary call of any
// method with the same small message, without generated code (a raw-bytes codec
// and grpc-go's unknown-service handler), so it costs the bench as little CPU as a
// gRPC server can. Listens on 127.0.0.1:$1 (h2c). Built by run.sh; not committed
// as a binary.
package main

import (
	"log"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
)

// raw passes messages through as bytes.
type raw struct{}

func (raw) Marshal(v any) ([]byte, error)      { return *(v.(*[]byte)), nil }
func (raw) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = append([]byte(nil), data...); return nil }
func (raw) Name() string                       { return "proto" }

// reply is tankbar.HelloReply{message: "hello"}.
var reply = []byte{0x0a, 0x05, 'h', 'e', 'l', 'l', 'o'}

func handle(_ any, stream grpc.ServerStream) error {
	var in []byte
	if err := stream.RecvMsg(&in); err != nil {
		return err
	}
	out := reply
	return stream.SendMsg(&out)
}

func main() {
	encoding.RegisterCodec(raw{})
	listener, err := net.Listen("tcp", "127.0.0.1:"+os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	server := grpc.NewServer(grpc.UnknownServiceHandler(handle), grpc.MaxConcurrentStreams(1024))
	log.Fatal(server.Serve(listener))
}
