"""Plumbing shared by the scripted model stubs (stub_anthropic.py, stub_openai.py).

The script rules (parsing, matching, steps), the request log, the basics of the
HTTP handler and the command line / server loop. Standard library only. The
stubs are run as scripts (`python3 tests/e2e/stub_*.py`), so this module is
found in the script's own folder.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# --------------------------------------------------------------------------- script


class BaseScript:
    """The rules of a script: a list of rules, or an object {"rules", "fallback",
    "compact_summary", ...}."""

    def __init__(self, data):
        if isinstance(data, list):
            rules, fallback = data, None
        elif isinstance(data, dict):
            rules = data.get("rules", [])
            fallback = data.get("fallback")
        else:
            raise ValueError("script must be a list of rules or an object")
        self.rules = []
        for i, rule in enumerate(rules):
            if not isinstance(rule, dict) or "reply" not in rule:
                raise ValueError(f"rule {i}: an object with a 'reply' is required")
            steps = [rule["reply"]]
            if "then" in rule:
                steps += list(rule["then"])
            elif "after_tool" in rule:
                steps.append(rule["after_tool"])
            rx = rule.get("regex")
            self.rules.append(
                {
                    "match": rule.get("match"),
                    "regex": re.compile(rx, re.I | re.S) if rx else None,
                    "steps": steps,
                }
            )
        self.fallback = fallback if fallback is not None else "OK."
        self.compact_summary = data.get("compact_summary") if isinstance(data, dict) else None

    def find(self, text: str):
        low = text.lower()
        for i, rule in enumerate(self.rules):
            if rule["regex"] is not None:
                if rule["regex"].search(text):
                    return i
            elif rule["match"] in (None, "", "*"):
                return i
            elif str(rule["match"]).lower() in low:
                return i
        return None

    def steps(self, index):
        if index is None or index < 0 or index >= len(self.rules):
            return [self.fallback]
        return self.rules[index]["steps"]


# --------------------------------------------------------------------------- stub state


class BaseStub:
    """The script and the request log (one JSON object per line, appended under a lock)."""

    def __init__(self, script: BaseScript, log_path: str | None, verbose: bool):
        self.script = script
        self.log_path = log_path
        self.verbose = verbose
        self.lock = threading.Lock()

    def log(self, rec):
        if self.verbose:
            print(
                f"[stub] {rec.get('method')} {rec.get('path')} kind={rec.get('kind')} rule={rec.get('rule')}",
                file=sys.stderr,
                flush=True,
            )
        if not self.log_path:
            return
        line = json.dumps(rec, ensure_ascii=False)
        with self.lock:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(line + "\n")


# --------------------------------------------------------------------------- HTTP


class BaseHandler(BaseHTTPRequestHandler):
    """HTTP/1.1, no access log, `_send`, HEAD and DELETE. A subclass gives `_body` and `_record`
    (and the routes), and names its request id header."""

    protocol_version = "HTTP/1.1"
    request_id_header = "request-id"

    def log_message(self, fmt, *args):  # silence the default stderr access log
        pass

    def _send(self, code, payload, ctype="application/json"):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header(self.request_id_header, "req_stub_" + uuid.uuid4().hex[:16])
        if ctype.startswith("text/event-stream"):
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_HEAD(self):
        self._record(None, b"", "head")
        self._send(200, b"")

    def do_DELETE(self):
        body, raw = self._body()
        self._record(body, raw, "other")
        self._send(200, {})


# --------------------------------------------------------------------------- command line


def main(doc, script_class, stub_class, make_handler, argv=None):
    """Parses the command line (`--script`, `--host`, `--port`, `--port-file`, `--log`,
    `--verbose`), binds, prints the port as the first line of stdout (and writes it to
    --port-file), then serves until interrupted."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--script", required=True, help="JSON file with the scripted rules")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--port-file", help="write the bound port to this file")
    ap.add_argument("--log", help="append every request as a JSON line to this file")
    ap.add_argument("--verbose", action="store_true", help="one line per request on stderr")
    args = ap.parse_args(argv)

    with open(args.script, encoding="utf-8") as f:
        script = script_class(json.load(f))
    stub = stub_class(script, args.log, args.verbose)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(stub))
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.port_file)
    print(port, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
