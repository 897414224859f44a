"""The gRPC server tests/grpc.rs shoots at: tankbar.Greeter over h2c, with
server reflection (v1 and v1alpha), on 127.0.0.1:PORT (argv[1]). It prints
"listening" once it serves, and counts the calls it answers in argv[2]
(one line per call: the method and the name), for the test to compare with
tank's rows."""
import sys
import threading
import time
from concurrent import futures

import grpc
from grpc_reflection.v1alpha import reflection

import tankbar_pb2
import tankbar_pb2_grpc

log_lock = threading.Lock()
log = open(sys.argv[2], "a", buffering=1)


def note(method, name):
    with log_lock:
        log.write(f"{method} {name}\n")


class Greeter(tankbar_pb2_grpc.GreeterServicer):
    def SayHello(self, request, context):
        note("SayHello", request.name)
        if request.name == "missing":
            context.abort(grpc.StatusCode.NOT_FOUND, "no such name")
        if request.name == "busy":
            context.abort(grpc.StatusCode.UNAVAILABLE, "try later")
        if request.name == "slow":
            # Past any deadline a test gives: grpc's core ends the call with
            # DEADLINE_EXCEEDED when the caller's grpc-timeout runs out.
            time.sleep(3)
        return tankbar_pb2.HelloReply(message=f"hello, {request.name}")

    def Count(self, request, context):
        note("Count", request.name)
        for i in range(request.times):
            yield tankbar_pb2.HelloReply(message=str(i + 1))


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    tankbar_pb2_grpc.add_GreeterServicer_to_server(Greeter(), server)
    names = (
        tankbar_pb2.DESCRIPTOR.services_by_name["Greeter"].full_name,
        reflection.SERVICE_NAME,
    )
    reflection.enable_server_reflection(names, server)
    server.add_insecure_port(f"127.0.0.1:{sys.argv[1]}")
    server.start()
    print("listening", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
