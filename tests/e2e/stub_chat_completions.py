#!/usr/bin/env python3
"""A loopback stand-in for the OpenAI Chat Completions API, for Aider (through litellm).

Every POST .../chat/completions is answered with the same assistant text (REPLY), streamed
(SSE chunks) or whole, as the request asks; GET .../models gets an empty list. Standard
library only.

Usage: stub_chat_completions.py --script SCRIPT.json [--port 0] [--log LOG.jsonl]
SCRIPT.json is {"reply": "<the assistant's text>"}. Prints the port it bound as the first line
of stdout; with --log, appends one JSON line per request: {"path", "stream"}.
"""

import argparse
import http.server
import json

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--script", required=True)
ARGS.add_argument("--port", type=int, default=0)
ARGS.add_argument("--log")
OPTS = ARGS.parse_args()
with open(OPTS.script, encoding="utf-8") as f:
    REPLY = json.load(f)["reply"]
LOG = OPTS.log


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, code, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            body = {}
        if LOG:
            with open(LOG, "a", encoding="utf-8") as f:
                f.write(json.dumps({"path": self.path, "stream": body.get("stream")}) + "\n")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": "stub: no route", "type": "not_found"}})
            return
        model = body.get("model", "stub")
        if body.get("stream"):
            chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": model,
                     "choices": [{"index": 0, "delta": {"role": "assistant", "content": REPLY},
                                  "finish_reason": None}]}
            out = b"data: " + json.dumps(chunk).encode() + b"\n\n"
            chunk["choices"][0]["delta"] = {}
            chunk["choices"][0]["finish_reason"] = "stop"
            out += b"data: " + json.dumps(chunk).encode() + b"\n\n" + b"data: [DONE]\n\n"
            self._send(200, out, "text/event-stream")
            return
        self._send(200, {"id": "c1", "object": "chat.completion", "created": 0, "model": model,
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": REPLY}}],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                   "total_tokens": 15}})

    def do_GET(self):
        self._send(200, {"object": "list", "data": []})


server = http.server.HTTPServer(("127.0.0.1", OPTS.port), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
