"""Runs CTFd for the suite (test/cluster/ctfd.test.ts): create_app() served by
werkzeug on loopback at a free port, which it prints as `listening <port>`."""

import sys

from werkzeug.serving import make_server

from CTFd import create_app

app = create_app()
server = make_server("127.0.0.1", 0, app, threaded=True)
print(f"listening {server.server_port}", flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
