#!/usr/bin/env python3
"""A scripted, loopback stand-in for the Anthropic Messages API.

Good enough for the real Claude Code CLI (`claude -p ...`) to run a whole
session offline: streamed (SSE) and plain JSON answers to POST /v1/messages,
token counting, and harmless answers to everything else Claude Code asks for
at startup. Standard library only.

Usage:
    stub_anthropic.py --script SCRIPT.json [--port 0] [--port-file F] [--log LOG.jsonl]

The port actually bound is printed as the first line of stdout (and written to
--port-file when given). Every request is appended to --log as one JSON object
per line: {"ts", "method", "path", "headers", "body", "kind", "rule"}; "kind"
is "main" for a conversation turn, or the name of the side request
(see classify()), "rule" the index of the script rule that answered.

Script format (JSON). Either a list of rules, or an object
{"rules": [...], "fallback": <reply>, "title": "<session title>",
"compact_summary": "<text of the <summary> when Claude compacts>"}.
A rule:
    {"match": "run ls",            # case-insensitive substring of the last user text
     "regex": "run (ls|dir)",      # or a Python regex (re.search, case-insensitive)
     "reply": <reply>,             # the first answer
     "after_tool": <reply>,        # the answer once the tool result came back
     "then": [<reply>, ...]}       # or: several steps, one per tool round trip
A rule without "match"/"regex" (or with "match": "*") matches everything; in a
plain list it serves as the fallback.
A <reply> is a string (one text block) or a list of content blocks:
    {"type": "text", "text": "..."}
    {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}
Text may contain {tool_result} (the text of the last tool result),
{prompt} (the user text that matched) and {session_id}.

"The last user text" is the text of the newest user message that is not only a
tool result, with <system-reminder>...</system-reminder> sections removed (so
context injected by hooks or CLAUDE.md cannot trigger a rule by accident). When
the newest user message carries a tool_result, the rule and step are read back
from the tool_use id the stub generated (toolu_stub_r<rule>_s<step>_<n>), so the
stub is stateless and works across `--resume` and restarts.
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

REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
TOOL_ID_RE = re.compile(r"^toolu_stub_r(-?\d+)_s(\d+)_")
_counter = itertools.count(1)


# --------------------------------------------------------------------------- script


class Script(stub_common.BaseScript):
    def __init__(self, data):
        super().__init__(data)
        self.title = data.get("title") if isinstance(data, dict) else None


# --------------------------------------------------------------------------- helpers


def block_text(content) -> str:
    """The plain text of a message content (string or list of blocks)."""
    if isinstance(content, str):
        return content
    out = []
    for b in content or []:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "text":
            out.append(b.get("text", ""))
        elif b.get("type") == "tool_result":
            out.append(block_text(b.get("content", "")))
    return "\n".join(out)


def strip_reminders(text: str) -> str:
    return REMINDER_RE.sub("", text).strip()


def system_text(body) -> str:
    s = body.get("system")
    if isinstance(s, str):
        return s
    if isinstance(s, list):
        return "\n".join(b.get("text", "") for b in s if isinstance(b, dict))
    return ""


def last_user(body):
    """(last user message content, index) or (None, -1)."""
    msgs = body.get("messages") or []
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].get("role") == "user":
            return msgs[i].get("content"), i
    return None, -1


def tool_results(content):
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def last_prompt_text(body) -> str:
    """Text of the newest user message that is a real prompt (not only tool results)."""
    for m in reversed(body.get("messages") or []):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, list):
            texts = [b for b in c if isinstance(b, dict) and b.get("type") == "text"]
            txt = strip_reminders("\n".join(b.get("text", "") for b in texts))
        else:
            txt = strip_reminders(c or "")
        if txt:
            return txt
    return ""


def find_tool_use(body, tool_use_id):
    for m in body.get("messages") or []:
        if m.get("role") != "assistant" or not isinstance(m.get("content"), list):
            continue
        for b in m["content"]:
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") == tool_use_id:
                return b
    return None


def classify(body) -> str:
    """'main' for a conversation turn of the agent, otherwise a side request.

    Claude Code's side requests: the compaction request ("compact": `/compact`
    or auto-compaction, seen with 2.1.332: tools attached, the last user message
    asks for a summary), session-title generation ("title": no tools, "You are
    naming a coding session" system prompt; interactive mode without
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC), and, in other versions, a
    one-token "quota" probe and topic/summary checks on the small fast model.
    The scripted rules only ever answer "main" requests.
    """
    msgs = body.get("messages") or []
    content, _ = last_user(body)
    txt = strip_reminders(block_text(content)).strip().lower() if content is not None else ""
    sysl = system_text(body).lower()
    if txt == "quota" or (body.get("max_tokens") == 1 and len(msgs) <= 1):
        return "quota"
    if "summary of the conversation" in txt and "<summary>" in txt:
        # /compact or auto-compaction: Claude asks (with the tools still attached, as a
        # subagent) for "<analysis>...</analysis><summary>...</summary>".
        return "compact"
    if body.get("tools"):
        return "main"
    if "title" in sysl:
        return "title"
    if "topic" in sysl:
        return "topic"
    if "summar" in sysl:
        return "summary"
    if "bash command" in sysl or "command prefix" in sysl or "prefix" in sysl:
        return "bash_prefix"
    return "side"


def estimate_tokens(body) -> int:
    return max(1, len(json.dumps(body, ensure_ascii=False)) // 4)


def norm_blocks(reply, subst):
    if isinstance(reply, str):
        reply = [{"type": "text", "text": reply}]
    out = []
    for b in reply:
        if isinstance(b, str):
            b = {"type": "text", "text": b}
        b = dict(b)
        if b.get("type") == "text":
            t = b.get("text", "")
            for k, v in subst.items():
                t = t.replace("{" + k + "}", v)
            b["text"] = t
        out.append(b)
    return out


# --------------------------------------------------------------------------- answers


class Stub(stub_common.BaseStub):
    def side_answer(self, kind, body):
        """Blocks for a side request."""
        prompt = last_prompt_text(body)
        if kind == "quota":
            return [{"type": "text", "text": "ok"}]
        if kind == "title":
            title = self.script.title or (prompt[:40].strip() or "Stub session")
            sysl = system_text(body).lower()
            if "json" in sysl or body.get("output_format") or body.get("output_config"):
                return [{"type": "text", "text": json.dumps({"title": title})}]
            return [{"type": "text", "text": title}]
        if kind == "topic":
            return [{"type": "text", "text": json.dumps({"isNewTopic": False, "title": None})}]
        if kind == "bash_prefix":
            return [{"type": "text", "text": "none"}]
        if kind == "compact":
            return [{"type": "text", "text": self.compact_summary(body)}]
        if kind == "summary":
            return [{"type": "text", "text": "A short stub summary."}]
        return [{"type": "text", "text": "ok"}]

    def compact_summary(self, body):
        """A well-formed compaction answer: the script's "compact_summary", else the user's prompts."""
        if self.script.compact_summary is not None:
            summary = self.script.compact_summary
        else:
            prompts = []
            msgs = body.get("messages") or []
            for m in msgs:
                if m.get("role") != "user":
                    continue
                c = m.get("content")
                blocks = [c] if isinstance(c, str) else [b.get("text", "") for b in c or []
                                                         if isinstance(b, dict) and b.get("type") == "text"]
                for t in blocks:
                    t = strip_reminders(t)
                    # Not the compaction request itself, nor slash-command records or an
                    # earlier compaction summary.
                    if (not t or "<summary>" in t or t.startswith(("<local-command", "<command-"))
                            or t.startswith("This session is being continued")):
                        continue
                    prompts.append(t)
            summary = "1. Primary Request and Intent:\n" + "\n".join(f"   - {p}" for p in prompts)
        return f"<analysis>\nStub analysis.\n</analysis>\n\n<summary>\n{summary}\n</summary>"

    def main_answer(self, body):
        """(blocks, rule index) for a conversation turn."""
        session_id = ""
        md = body.get("metadata") or {}
        uid = md.get("user_id")
        if isinstance(uid, str):
            m = re.search(r"session_([0-9a-f-]{36})", uid)
            if m:
                session_id = m.group(1)
            else:
                try:
                    session_id = json.loads(uid).get("session_id", "")
                except Exception:
                    pass
        content, _ = last_user(body)
        results = tool_results(content)
        prompt = last_prompt_text(body)
        subst = {"prompt": prompt, "session_id": session_id, "tool_result": ""}
        if results:
            res = results[-1]
            subst["tool_result"] = block_text(res.get("content", "")).strip()
            m = TOOL_ID_RE.match(res.get("tool_use_id", ""))
            if m:
                rule, step = int(m.group(1)), int(m.group(2)) + 1
            else:
                rule, step = self.script.find(prompt), 1
            steps = self.script.steps(rule if rule >= 0 else None)
            reply = steps[step] if step < len(steps) else "Done."
            return self.finish(reply, rule, step, subst), rule
        rule = self.script.find(prompt)
        steps = self.script.steps(rule)
        return self.finish(steps[0], -1 if rule is None else rule, 0, subst), rule

    def finish(self, reply, rule, step, subst):
        blocks = norm_blocks(reply, subst)
        for b in blocks:
            if b.get("type") == "tool_use":
                b.setdefault("input", {})
                b["id"] = f"toolu_stub_r{rule}_s{step}_{next(_counter):04d}{uuid.uuid4().hex[:8]}"
        return blocks


def message_json(body, blocks):
    stop = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
    return {
        "id": "msg_stub_" + uuid.uuid4().hex[:20],
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or "claude-stub",
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": estimate_tokens(body),
            "output_tokens": max(1, len(json.dumps(blocks)) // 4),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def sse_events(msg):
    def ev(name, data):
        return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"

    start = dict(msg)
    start["content"] = []
    start["stop_reason"] = None
    start["usage"] = dict(msg["usage"], output_tokens=1)
    out = [ev("message_start", {"type": "message_start", "message": start})]
    out.append(ev("ping", {"type": "ping"}))
    for i, b in enumerate(msg["content"]):
        if b["type"] == "text":
            out.append(ev("content_block_start", {"type": "content_block_start", "index": i,
                                                  "content_block": {"type": "text", "text": ""}}))
            text = b["text"]
            for j in range(0, len(text), 24) or [0]:
                out.append(ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                      "delta": {"type": "text_delta", "text": text[j:j + 24]}}))
        elif b["type"] == "tool_use":
            out.append(ev("content_block_start", {"type": "content_block_start", "index": i,
                                                  "content_block": {"type": "tool_use", "id": b["id"],
                                                                    "name": b["name"], "input": {}}}))
            js = json.dumps(b.get("input", {}), ensure_ascii=False)
            for j in range(0, len(js), 16):
                out.append(ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                      "delta": {"type": "input_json_delta",
                                                                "partial_json": js[j:j + 16]}}))
        else:  # thinking etc.: pass through as a whole block
            out.append(ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": b}))
        out.append(ev("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(ev("message_delta", {"type": "message_delta",
                                    "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                    "usage": {"output_tokens": msg["usage"]["output_tokens"]}}))
    out.append(ev("message_stop", {"type": "message_stop"}))
    return "".join(out).encode("utf-8")


# --------------------------------------------------------------------------- HTTP

LOGGED_HEADERS = ("user-agent", "anthropic-beta", "anthropic-version", "x-app", "content-type",
                  "x-stainless-helper-method", "x-claude-code-session-id")


def make_handler(stub: Stub):
    class Handler(stub_common.BaseHandler):
        server_version = "stub-anthropic/1"

        def _body(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            if not raw:
                return None, raw
            try:
                return json.loads(raw), raw
            except Exception:
                return None, raw

        def _record(self, body, raw, kind=None, rule=None, status=200):
            rec = {
                "ts": time.time(),
                "method": self.command,
                "path": self.path,
                "headers": {k: v for k, v in self.headers.items() if k.lower() in LOGGED_HEADERS},
                "kind": kind,
                "rule": rule,
                "status": status,
            }
            if body is not None:
                rec["body"] = body
            elif raw:
                rec["raw"] = raw.decode("utf-8", "replace")
            stub.log(rec)

        def do_POST(self):
            path = urlsplit(self.path).path.rstrip("/")
            body, raw = self._body()
            try:
                if path == "/v1/messages" and isinstance(body, dict):
                    kind = classify(body)
                    rule = None
                    if kind == "main":
                        blocks, rule = stub.main_answer(body)
                    else:
                        blocks = stub.side_answer(kind, body)
                    self._record(body, raw, kind, rule)
                    msg = message_json(body, blocks)
                    if body.get("stream"):
                        self._send(200, sse_events(msg), "text/event-stream; charset=utf-8")
                    else:
                        self._send(200, msg)
                    return
                if path == "/v1/messages/count_tokens":
                    self._record(body, raw, "count_tokens")
                    self._send(200, {"input_tokens": estimate_tokens(body or {})})
                    return
                self._record(body, raw, "other")
                self._send(200, {})
            except BrokenPipeError:
                pass
            except Exception as e:  # never crash the server; tell the client
                self._record(body, raw, "error", status=500)
                self._send(500, {"type": "error", "error": {"type": "api_error", "message": f"stub: {e!r}"}})

        def do_GET(self):
            path = urlsplit(self.path).path.rstrip("/")
            self._record(None, b"", "get")
            if path == "/v1/models":
                self._send(200, {"data": [], "has_more": False, "first_id": None, "last_id": None})
            elif path.startswith("/v1/models/"):
                mid = path.rsplit("/", 1)[-1]
                self._send(200, {"type": "model", "id": mid, "display_name": mid,
                                 "created_at": "2025-01-01T00:00:00Z"})
            else:
                self._send(200, {})

        def do_PUT(self):
            self.do_POST()

    return Handler


def main(argv=None):
    stub_common.main(__doc__, Script, Stub, make_handler, argv)


if __name__ == "__main__":
    main()
