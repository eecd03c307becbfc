"""Runs CTFd for the suite (test/cluster/ctfd.test.ts): create_app() served by
werkzeug on loopback at a free port, which it prints as `listening <port>`."""

import sys

from werkzeug.serving import WSGIRequestHandler, make_server

from CTFd import create_app

app = create_app()
# HTTP/1.1 with keep-alive, as a production server answers: werkzeug's HTTP/1.0
# default closes each connection, which clients reusing connections race with.
WSGIRequestHandler.protocol_version = "HTTP/1.1"
server = make_server("127.0.0.1", 0, app, threaded=True)
print(f"listening {server.server_port}", flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
