#!/usr/bin/env python3
"""A stand-in for llama.cpp's llama-server, for the tests of `--provider local` that need no
model: it takes the real server's arguments, records them (with its pid, and whether it may
open an IPv4 socket) as JSON in the file named by its first line's RECORD, and then behaves as
MODE says: `fail` (an error on stderr, exit 1), `hang` (never serves), or `serve` (the
OpenAI endpoints zero uses, over the Unix socket given as --host, answering every chat request
with ANSWER and recording each request's headers and body)."""

import json
import os
import socket
import socketserver
import sys
import time
from http.server import BaseHTTPRequestHandler

MODE = "@MODE@"
RECORD = "@RECORD@"
ANSWER = "the answer from the local server"


def may_use_inet():
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        return "open"
    except PermissionError:
        return "blocked"


def record(**facts):
    facts.update(pid=os.getpid(), args=sys.argv[1:], inet=may_use_inet())
    temp = RECORD + ".partial"
    with open(temp, "w") as out:
        json.dump(facts, out)
    os.replace(temp, RECORD)


requests = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self.reply({"status": "ok"})
        elif self.path == "/props":
            self.reply({"default_generation_settings": {"n_ctx": 16384}})
        else:
            self.send_error(404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
        record(requests=requests)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        chunks = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER}}]},
            {
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        ]
        for chunk in chunks:
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def get_request(self):
        connection, _ = super().get_request()
        return connection, ("local", 0)


def main():
    if MODE == "fail":
        record()
        print("error: failed to load model (a test's fake)", file=sys.stderr)
        sys.exit(1)
    if MODE == "hang":
        record()
        time.sleep(300)
        return
    host = sys.argv[sys.argv.index("--host") + 1]
    with Server(host, Handler) as server:
        record(requests=requests)
        server.serve_forever()


main()
