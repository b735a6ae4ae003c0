#!/usr/bin/env python3
"""A scripted, loopback stand-in for the OpenAI Responses API.

Good enough for the real Codex CLI (`codex exec ...`, a custom
`[model_providers.stub]` with `wire_api = "responses"`) to run whole sessions
offline: streamed (SSE) and plain JSON answers to POST /v1/responses, with
text and function calls (the shell tool, MCP tools), and harmless answers to
everything else. Standard library only.

Usage:
    stub_openai.py --script SCRIPT.json [--port 0] [--port-file F] [--log LOG.jsonl] [--verbose]

The port actually bound is printed as the first line of stdout (and written to
--port-file when given). Every request is appended to --log as one JSON object
per line: {"ts", "method", "path", "headers", "body", "kind", "rule", "status"};
"kind" is "main" for a conversation turn, else the name of the side request
(see classify()), "rule" the index of the script rule that answered.

Script format (JSON): the same as stub_anthropic.py's. Either a list of rules,
or an object {"rules": [...], "fallback": <reply>, "compact_summary": "..."}.
A rule:
    {"match": "run ls",            # case-insensitive substring of the last user text
     "regex": "run (ls|dir)",      # or a Python regex (re.search, case-insensitive)
     "reply": <reply>,             # the first answer
     "after_tool": <reply>,        # the answer once the tool output came back
     "then": [<reply>, ...]}       # or: several steps, one per tool round trip
A rule without "match"/"regex" (or with "match": "*") matches everything; in a
plain list it serves as the fallback.
A <reply> is a string (one assistant message) or a list of items:
    {"type": "text", "text": "..."}                       # an assistant message
    {"type": "shell", "command": "ls"}                    # run a shell command with
        # whichever shell tool the request offers: exec_command {"cmd"}, shell_command
        # {"command": str}, shell {"command": [bash, -lc, cmd]} or local_shell
    {"type": "function_call", "name": "...", "arguments": {...}}   # any function tool
        # ("namespace" for a tool of a namespace; or "name_regex" instead of both, matched
        # against the offered tools written `<namespace>.<name>`, e.g. "memtrail.*\\.search$":
        # Codex offers an MCP server's tools as a namespace `mcp__<server>`)
Text may contain {tool_result} (the output of the last tool call), {prompt}
(the user text that matched) and {session_id} (the `session_id` header or
`prompt_cache_key`).

"The last user text" is the text of the newest user message, without the
context the agent injects itself (`<environment_context>`, AGENTS.md
instructions, `<user_instructions>`, skills, hook context: any input_text that
is one whole `<tag>...</tag>` block, or starts with "# AGENTS.md
instructions"), so injected context cannot trigger a rule by accident. When the
newest input item is a tool output, the rule and step are read back from the
call id the stub generated (call_stub_r<rule>_s<step>_<n>), so the stub is
stateless and works across `resume` and restarts.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import time
import uuid
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ next to the tests
import stub_common  # noqa: E402  (the shared plumbing, next to this script)

CALL_ID_RE = re.compile(r"^call_stub_r(-?\d+)_s(\d+)_")
# One whole injected block: "<environment_context>...</environment_context>" and the like.
INJECTED_BLOCK_RE = re.compile(r"^\s*<([A-Za-z_][\w .:-]*)>.*</\1>\s*$", re.S)
INJECTED_ANY_RE = re.compile(
    r"<(environment_context|user_instructions|permissions instructions|skills_instructions|"
    r"apps_instructions|collaboration_mode|INSTRUCTIONS|hook_context|user_shell_command|"
    r"turn_aborted|subagent_notification)>.*?</\1>",
    re.S,
)
TOOL_OUTPUT_TYPES = (
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "mcp_tool_call_output",
    "tool_search_output",
)
SHELL_TOOLS = ("exec_command", "shell_command", "shell", "local_shell")
_counter = itertools.count(1)


# --------------------------------------------------------------------------- script


# The script format is the same as stub_anthropic.py's (see stub_common.BaseScript).
Script = stub_common.BaseScript


# --------------------------------------------------------------------------- request helpers


def input_items(body):
    inp = body.get("input")
    if isinstance(inp, str):
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": inp}]}]
    return [i for i in (inp or []) if isinstance(i, dict)]


def content_texts(content):
    """The texts of a message content (a string or a list of parts)."""
    if isinstance(content, str):
        return [content]
    out = []
    for p in content or []:
        if isinstance(p, dict) and p.get("type") in ("input_text", "output_text", "text"):
            out.append(p.get("text", ""))
    return out


def is_injected(text: str) -> bool:
    t = text.strip()
    return bool(INJECTED_BLOCK_RE.match(t)) or t.startswith("# AGENTS.md instructions")


def prompt_of(item) -> str:
    """The user's own text in a user message item ('' when it only carries injected context)."""
    if item.get("type", "message") != "message" or item.get("role") != "user":
        return ""
    texts = [t for t in content_texts(item.get("content")) if not is_injected(t)]
    return INJECTED_ANY_RE.sub("", "\n".join(texts)).strip()


def last_prompt_text(body) -> str:
    for item in reversed(input_items(body)):
        txt = prompt_of(item)
        if txt:
            return txt
    return ""


def output_text(out) -> str:
    """The text of a tool output (`output` is a string, a list of parts, or {content, ...})."""
    if isinstance(out, str):
        return out
    if isinstance(out, list):
        return "\n".join(content_texts(out))
    if isinstance(out, dict):
        for k in ("content", "output", "text"):
            if k in out:
                return output_text(out[k])
        return json.dumps(out)
    return "" if out is None else str(out)


def last_tool_output(body):
    """The newest input item when it is a tool output (the turn continues after a tool call)."""
    items = input_items(body)
    if not items:
        return None
    last = items[-1]
    return last if last.get("type") in TOOL_OUTPUT_TYPES else None


def offered_tools(body):
    """The function tools a request offers, as (namespace or None, name) pairs.

    Codex 0.171 groups each MCP server's tools in a namespace tool
    (`{"type": "namespace", "name": "mcp__memtrail", "tools": [{"name": "search"}, ...]}`);
    a call of one of them is a function_call with that `namespace` and the bare `name`.
    """
    out = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "local_shell":
            out.append((None, "local_shell"))
        elif t.get("type") == "namespace":
            for sub in t.get("tools") or []:
                if isinstance(sub, dict) and sub.get("name"):
                    out.append((t.get("name"), sub["name"]))
        elif t.get("name"):
            out.append((None, t["name"]))
        elif isinstance(t.get("function"), dict) and t["function"].get("name"):
            out.append((None, t["function"]["name"]))
    return out


def tool_names(body):
    """Offered tool names, namespaced ones as `<namespace>.<name>`."""
    return [f"{ns}.{n}" if ns else n for ns, n in offered_tools(body)]


def classify(body) -> str:
    """'main' for a conversation turn of the agent, otherwise a side request.

    Side requests seen or expected from Codex: the compaction request ("compact":
    the last user message or the instructions ask for a checkpoint/summary of the
    conversation, no tool call expected), and requests without tools (title or
    memory generation: "side"). The scripted rules only ever answer "main".
    """
    instr = str(body.get("instructions") or "").lower()
    items = input_items(body)
    last_user = ""
    for item in reversed(items):
        if item.get("type", "message") == "message" and item.get("role") == "user":
            last_user = "\n".join(content_texts(item.get("content"))).lower()
            break
    if ("context checkpoint compaction" in last_user or "handoff summary" in last_user
            or ("summar" in last_user and "compact" in last_user)):
        return "compact"
    if not body.get("tools") and ("title" in instr or "title" in last_user):
        return "title"
    if not body.get("tools"):
        return "side"
    return "main"


def estimate_tokens(body) -> int:
    return max(1, len(json.dumps(body, ensure_ascii=False)) // 4)


# --------------------------------------------------------------------------- answers


class Stub(stub_common.BaseStub):
    def side_answer(self, kind, body):
        if kind == "compact":
            return [{"type": "text", "text": self.compact_summary(body)}]
        if kind == "title":
            return [{"type": "text", "text": (last_prompt_text(body)[:40].strip() or "Stub session")}]
        return [{"type": "text", "text": "ok"}]

    def compact_summary(self, body):
        if self.script.compact_summary is not None:
            return self.script.compact_summary
        prompts = []
        for item in input_items(body)[:-1]:
            t = prompt_of(item)
            if t:
                prompts.append(t)
        return "Summary of the conversation so far:\n" + "\n".join(f"- {p}" for p in prompts)

    def main_answer(self, body, session_id=""):
        """(items, rule index) for a conversation turn."""
        prompt = last_prompt_text(body)
        subst = {"prompt": prompt, "session_id": session_id, "tool_result": ""}
        out = last_tool_output(body)
        if out is not None:
            subst["tool_result"] = output_text(out.get("output")).strip()
            m = CALL_ID_RE.match(str(out.get("call_id") or ""))
            if m:
                rule, step = int(m.group(1)), int(m.group(2)) + 1
            else:
                rule, step = (self.script.find(prompt) if prompt else None), 1
                rule = -1 if rule is None else rule
            steps = self.script.steps(rule if rule >= 0 else None)
            reply = steps[step] if step < len(steps) else "Done."
            return self.finish(reply, rule, step, subst, body), (rule if rule >= 0 else None)
        rule = self.script.find(prompt)
        steps = self.script.steps(rule)
        return self.finish(steps[0], -1 if rule is None else rule, 0, subst, body), rule

    def finish(self, reply, rule, step, subst, body):
        """Turns a scripted reply into Responses API output items."""
        if isinstance(reply, (str, dict)):
            reply = [reply]
        offered = tool_names(body)
        items = []
        for b in reply:
            if isinstance(b, str):
                b = {"type": "text", "text": b}
            kind = b.get("type", "text")
            if kind == "text":
                t = b.get("text", "")
                for k, v in subst.items():
                    t = t.replace("{" + k + "}", v)
                items.append(message_item(t))
                continue
            call_id = f"call_stub_r{rule}_s{step}_{next(_counter):04d}{uuid.uuid4().hex[:8]}"
            if kind == "shell":
                items.append(shell_call(b.get("command", ""), offered, call_id, b))
            elif kind == "function_call":
                name, namespace = b.get("name"), b.get("namespace")
                if not name and b.get("name_regex"):
                    rx = re.compile(b["name_regex"], re.I)
                    found = next(((ns, n) for ns, n in offered_tools(body)
                                  if rx.search(f"{ns}.{n}" if ns else n)), None)
                    if found is None:
                        items.append(message_item(
                            f"stub: no offered tool matches {b['name_regex']!r} (offered: {offered})"))
                        continue
                    namespace, name = found
                items.append(function_call_item(name, b.get("arguments", {}), call_id, namespace))
            else:  # anything else (reasoning, ...) passes through as an item
                items.append(dict(b))
        return items


def message_item(text):
    return {
        "type": "message",
        "id": "msg_stub_" + uuid.uuid4().hex[:24],
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call_item(name, arguments, call_id, namespace=None):
    item = {
        "type": "function_call",
        "id": "fc_stub_" + uuid.uuid4().hex[:24],
        "status": "completed",
        "name": name,
        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        "call_id": call_id,
    }
    if namespace:
        item["namespace"] = namespace
    return item


def shell_call(command, offered, call_id, spec):
    """A call of the shell tool the agent offers, running `command`."""
    workdir = spec.get("workdir")
    for name in spec.get("prefer") or SHELL_TOOLS:
        if name not in offered:
            continue
        if name == "exec_command":
            args = {"cmd": command}
            if workdir:
                args["workdir"] = workdir
        elif name == "shell_command":
            args = {"command": command}
            if workdir:
                args["workdir"] = workdir
        elif name == "shell":
            args = {"command": ["bash", "-lc", command]}
            if workdir:
                args["workdir"] = workdir
        else:  # local_shell: its own item type
            return {
                "type": "local_shell_call",
                "id": "lsh_stub_" + uuid.uuid4().hex[:24],
                "call_id": call_id,
                "status": "completed",
                "action": {"type": "exec", "command": ["bash", "-lc", command]},
            }
        return function_call_item(name, args, call_id)
    return message_item(f"stub: the request offers no shell tool (offered: {offered})")


def response_obj(body, resp_id, items, status):
    out_tokens = max(1, len(json.dumps(items)) // 4)
    in_tokens = estimate_tokens(body)
    return {
        "id": resp_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": body.get("model") or "stub-model",
        "output": items if status == "completed" else [],
        "usage": {
            "input_tokens": in_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": in_tokens + out_tokens,
        }
        if status == "completed"
        else None,
    }


def sse_events(body, items):
    """The SSE stream of one response: created, in_progress, per item added/deltas/done, completed."""
    seq = itertools.count(0)
    resp_id = "resp_stub_" + uuid.uuid4().hex[:24]

    def ev(name, data):
        data = {"type": name, "sequence_number": next(seq), **data}
        return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"

    out = [
        ev("response.created", {"response": response_obj(body, resp_id, items, "in_progress")}),
        ev("response.in_progress", {"response": response_obj(body, resp_id, items, "in_progress")}),
    ]
    for i, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            out.append(ev("response.output_item.added", {"output_index": i, "item": dict(
                item, status="in_progress", content=[])}))
            part = {"type": "output_text", "text": "", "annotations": []}
            out.append(ev("response.content_part.added", {"item_id": item["id"], "output_index": i,
                                                          "content_index": 0, "part": part}))
            for j in range(0, len(text), 24) or [0]:
                out.append(ev("response.output_text.delta", {"item_id": item["id"], "output_index": i,
                                                             "content_index": 0, "delta": text[j:j + 24]}))
            out.append(ev("response.output_text.done", {"item_id": item["id"], "output_index": i,
                                                        "content_index": 0, "text": text}))
            out.append(ev("response.content_part.done", {"item_id": item["id"], "output_index": i,
                                                         "content_index": 0, "part": dict(part, text=text)}))
        elif item["type"] == "function_call":
            out.append(ev("response.output_item.added", {"output_index": i, "item": dict(
                item, status="in_progress", arguments="")}))
            args = item["arguments"]
            for j in range(0, len(args), 16):
                out.append(ev("response.function_call_arguments.delta", {"item_id": item["id"], "output_index": i,
                                                                         "delta": args[j:j + 16]}))
            out.append(ev("response.function_call_arguments.done", {"item_id": item["id"], "output_index": i,
                                                                    "arguments": args}))
        else:
            out.append(ev("response.output_item.added", {"output_index": i, "item": item}))
        out.append(ev("response.output_item.done", {"output_index": i, "item": item}))
    out.append(ev("response.completed", {"response": response_obj(body, resp_id, items, "completed")}))
    return "".join(out).encode("utf-8"), resp_id


# --------------------------------------------------------------------------- HTTP

LOGGED_HEADERS = ("user-agent", "authorization", "content-type", "content-encoding", "accept",
                  "originator", "session_id", "session-id", "conversation_id", "x-codex-turn-metadata",
                  "openai-beta", "version", "x-openai-subagent", "x-codex-window-id")


def make_handler(stub: Stub):
    class Handler(stub_common.BaseHandler):
        server_version = "stub-openai/1"
        request_id_header = "x-request-id"

        def _body(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                raw = self._read_chunked()
            if not raw:
                return None, raw
            enc = (self.headers.get("Content-Encoding") or "").lower()
            data = raw
            if enc in ("gzip", "deflate"):
                import zlib

                data = zlib.decompress(raw, 47)
            elif enc == "zstd":
                try:
                    from compression import zstd  # Python 3.14+

                    data = zstd.decompress(raw)
                except Exception:
                    return None, raw
            try:
                return json.loads(data), raw
            except Exception:
                return None, raw

        def _read_chunked(self):
            buf = b""
            while True:
                line = self.rfile.readline().strip()
                size = int(line.split(b";")[0] or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return buf
                buf += self.rfile.read(size)
                self.rfile.readline()

        def _record(self, body, raw, kind=None, rule=None, status=200, extra=None):
            rec = {
                "ts": time.time(),
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items() if k.lower() in LOGGED_HEADERS},
                "kind": kind,
                "rule": rule,
                "status": status,
            }
            if body is not None:
                rec["body"] = body
            elif raw:
                rec["raw"] = raw.decode("utf-8", "replace")[:4000]
            if extra:
                rec.update(extra)
            stub.log(rec)

        def _session_id(self, body):
            for h in ("session_id", "session-id", "conversation_id"):
                if self.headers.get(h):
                    return self.headers[h]
            return str((body or {}).get("prompt_cache_key") or "")

        def do_POST(self):
            path = urlsplit(self.path).path.rstrip("/")
            body, raw = self._body()
            try:
                if path.endswith("/responses") and isinstance(body, dict):
                    kind = classify(body)
                    rule = None
                    if kind == "main":
                        items, rule = stub.main_answer(body, self._session_id(body))
                    else:
                        items = [message_item(b["text"]) for b in stub.side_answer(kind, body)]
                    if body.get("stream", True) is False:
                        resp = response_obj(body, "resp_stub_" + uuid.uuid4().hex[:24], items, "completed")
                        self._record(body, raw, kind, rule, extra={"reply": items})
                        self._send(200, resp)
                    else:
                        data, _ = sse_events(body, items)
                        self._record(body, raw, kind, rule, extra={"reply": items})
                        self._send(200, data, "text/event-stream; charset=utf-8")
                    return
                if path.endswith("/responses/compact") and isinstance(body, dict):
                    # The remote compaction endpoint (OpenAI provider only): a summary message.
                    items = [message_item(stub.compact_summary(body))]
                    self._record(body, raw, "compact_endpoint")
                    self._send(200, {"output": items})
                    return
                self._record(body, raw, "other", status=404)
                self._send(404, {"error": {"message": f"stub: no route for POST {path}", "type": "not_found"}})
            except BrokenPipeError:
                pass
            except Exception as e:  # never crash the server; tell the client
                self._record(body, raw, "error", status=500, extra={"error": repr(e)})
                self._send(500, {"error": {"message": f"stub: {e!r}", "type": "server_error"}})

        def do_GET(self):
            path = urlsplit(self.path).path.rstrip("/")
            if path.endswith("/models"):
                self._record(None, b"", "models")
                # Both shapes: OpenAI's list and Codex's own `{"models": [...]}` (an empty list
                # makes Codex keep its built-in model metadata).
                self._send(200, {"object": "list", "data": [], "models": []})
                return
            self._record(None, b"", "get", status=404)
            self._send(404, {"error": {"message": f"stub: no route for GET {path}", "type": "not_found"}})

    return Handler


def main(argv=None):
    stub_common.main(__doc__, Script, Stub, make_handler, argv)


if __name__ == "__main__":
    main()
