#!/usr/bin/env python3
"""Writes fixtures/continuity/: sessions of six agents in their real transcript formats, each with
a `.facts` file listing what an agent resuming that session needs to know.

The sessions are scenarios written once, abstractly (prompts, reads, edits, writes, shell runs
with their output and exit code, todo lists, questions), then rendered in each agent's own format
with its own tool names and input shapes (the shapes of the project's fixtures in
fixtures/<agent>/ and of `docs/agents/README.md`):

- Claude Code: JSONL, one line per content block, `Read/Edit/Write/Bash/TodoWrite/AskUserQuestion`,
  failed Bash results `is_error: true` with `Exit code N` first.
- Codex CLI: rollout JSONL, `exec_command` with `Process exited with code N`, `apply_patch` as a
  custom tool call, `update_plan`.
- Gemini CLI: JSONL session, `read_file/replace/write_file/run_shell_command/write_todos`, shell
  output with `Exit Code: N` on failure.
- VS Code Copilot: agent transcript JSONL (`user.message`, `assistant.message` with
  `toolRequests`, `tool.execution_complete`), `read_file/replace_string_in_file/create_file/
  run_in_terminal/manage_todo_list`.
- Cursor: agent transcript JSONL (no tool results: Cursor does not record them), `Read/StrReplace/
  Write/Shell/TodoWrite`.
- OpenCode: `opencode export` JSON, `read/edit/write/bash/todowrite`.

Facts (`<core|extra> <kind> <text>`): `core` facts are the ones issue 5 names as the snapshot's
core (files changed, open tasks, last request, unresolved errors, decisions); `extra` are useful
but not core (the first request, an error's message). A path fact is written relative to the
project; the check accepts it relative or absolute. Facts are written from the scenario (what a
resumed agent must know), not from the snapshot.

Run: python3 scripts/gen-continuity-fixtures.py  (rewrites fixtures/continuity/ deterministically)
"""

import json
import os
import uuid

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "continuity")
BASE_MS = 1772442000000  # 2026-03-02T09:00:00Z


def iso(ms):
    import datetime

    return (
        datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.")
        + f"{ms % 1000:03d}Z"
    )


def uid(*parts):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "memtrail-continuity/" + "/".join(map(str, parts))))


def j(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def lines_of(s):
    return s.count("\n") + (0 if s.endswith("\n") or not s else 1)


# ------------------------------------------------------------------------------------------------
# Scenarios. Steps:
#   ("user", text) ("say", text) ("read", path, content) ("edit", path, old, new)
#   ("write", path, content) ("shell", cmd, output, exit) ("todo", [(text, status)])
#   ("ask", question, answer)
# statuses: pending | in_progress | completed

RUST_FAIL = """running 5 tests
test tests::parses_empty ... ok
test tests::parses_unicode ... FAILED

failures:

---- tests::parses_unicode stdout ----
thread 'tests::parses_unicode' panicked at src/lib.rs:42:9:
assertion `left == right` failed

test result: FAILED. 4 passed; 1 failed; 0 ignored
"""
RUST_OK = "running 5 tests\ntest result: ok. 5 passed; 0 failed; 0 ignored\n"


def rust_fail(test, where, msg):
    return (
        f"running 6 tests\ntest {test} ... FAILED\n\nfailures:\n\n---- {test} stdout ----\n"
        f"thread '{test}' panicked at {where}:\n{msg}\n\ntest result: FAILED. 5 passed; 1 failed; 0 ignored\n"
    )


def npm_fail(name, msg):
    return f"> test\n> vitest run\n\n FAIL  {name}\n  × {msg}\n\n Test Files  1 failed (1)\n      Tests  1 failed | 7 passed (8)\n"


NPM_OK = "> test\n> vitest run\n\n ✓ 8 tests passed\n\n Test Files  3 passed (3)\n      Tests  8 passed (8)\n"

PY_FAIL = "============================= test session starts ==============================\ncollected 12 items\n\ntests/test_api.py ..F.........\n\nFAILED tests/test_api.py::test_pagination - AssertionError: assert 20 == 25\n========================= 1 failed, 11 passed in 0.41s =========================\n"
PY_OK = "============================= test session starts ==============================\ncollected 12 items\n\ntests/test_api.py ............\n\n============================== 12 passed in 0.39s ==============================\n"

SCENARIOS = []


def scenario(sid, agent, cwd, steps, facts, branch="main"):
    SCENARIOS.append(dict(id=sid, agent=agent, cwd=cwd, steps=steps, facts=facts, branch=branch))


# A standard session per agent: edits, a failing then passing test run, a todo list and a
# decision. These are also the fixtures of runtime/tests/it/events.rs.
def standard(agent, n):
    cwd = f"/home/user/projects/tempconv"
    steps = [
        ("user", "Add Kelvin support to the temperature converter in src/convert.rs and make the tests pass."),
        ("todo", [("Add Kelvin conversions", "in_progress"), ("Update the CLI help text", "pending"), ("Add a changelog entry", "pending")]),
        ("read", "src/convert.rs", "pub fn c_to_f(c: f64) -> f64 {\n    c * 9.0 / 5.0 + 32.0\n}\n"),
        ("edit", "src/convert.rs", "pub fn c_to_f(c: f64) -> f64 {\n    c * 9.0 / 5.0 + 32.0\n}", "pub fn c_to_f(c: f64) -> f64 {\n    c * 9.0 / 5.0 + 32.0\n}\n\npub fn c_to_k(c: f64) -> f64 {\n    c + 273.15\n}"),
        ("shell", "cargo test", rust_fail("tests::kelvin_roundtrip", "src/convert.rs:31:9", "assertion `left == right` failed\n  left: 273.0\n right: 273.15"), 101),
        ("edit", "tests/kelvin.rs", "assert_eq!(c_to_k(0.0), 273.0);", "assert_eq!(c_to_k(0.0), 273.15);"),
        ("shell", "cargo test", "running 6 tests\ntest result: ok. 6 passed; 0 failed; 0 ignored\n", 0),
        ("todo", [("Add Kelvin conversions", "completed"), ("Update the CLI help text", "in_progress"), ("Add a changelog entry", "pending")]),
        ("say", "Kelvin conversions are in and the 6 tests pass. Next: the CLI help text."),
        ("user", "Don't touch the public API names; use f64 everywhere instead of f32."),
    ]
    facts = [
        ("core", "file", "src/convert.rs"),
        ("core", "file", "tests/kelvin.rs"),
        ("core", "task", "Update the CLI help text"),
        ("core", "task", "Add a changelog entry"),
        ("core", "request", "Don't touch the public API names; use f64 everywhere instead of f32."),
        ("core", "decision", "Don't touch the public API names"),
        ("extra", "goal", "Add Kelvin support to the temperature converter"),
    ]
    scenario(f"{agent}-standard", agent, cwd, steps, facts)


for a in ["claude", "codex", "gemini", "vscode", "cursor", "opencode"]:
    standard(a, 0)


def api_pagination(agent):
    cwd = "/home/user/src/bookshelf-api"
    steps = [
        ("user", "The /books endpoint returns 20 items even when I pass limit=25. Fix pagination in app/routes/books.py."),
        ("read", "app/routes/books.py", "def list_books(limit: int = 20):\n    return db.books()[:20]\n"),
        ("shell", "pytest tests/test_api.py -q", PY_FAIL, 1),
        ("edit", "app/routes/books.py", "    return db.books()[:20]", "    return db.books()[:limit]"),
        ("edit", "app/db.py", "def books():\n    return BOOKS", "def books(offset: int = 0):\n    return BOOKS[offset:]"),
        ("shell", "pytest tests/test_api.py -q", PY_OK, 0),
        ("user", "Good. Now add an offset parameter too, and keep the default limit at 20. Never return more than 100 items."),
        ("edit", "app/routes/books.py", "def list_books(limit: int = 20):", "def list_books(limit: int = 20, offset: int = 0):\n    limit = min(limit, 100)"),
        ("shell", "ruff check app", "app/routes/books.py:3:5: F841 Local variable `total` is assigned to but never used\nFound 1 error.\n", 1),
        ("say", "Offset is added; ruff reports an unused variable `total` in app/routes/books.py that I still need to remove."),
    ]
    facts = [
        ("core", "file", "app/routes/books.py"),
        ("core", "file", "app/db.py"),
        ("core", "request", "Good. Now add an offset parameter too, and keep the default limit at 20. Never return more than 100 items."),
        ("core", "error", "ruff check app"),
        ("core", "decision", "Never return more than 100 items"),
        ("extra", "error", "F841"),
        ("extra", "goal", "Fix pagination in app/routes/books.py"),
    ]
    scenario(f"{agent}-pagination", agent, cwd, steps, facts)


def frontend_refactor(agent):
    cwd = "/home/user/work/dashboard"
    files = [
        "src/components/Chart.tsx",
        "src/components/Legend.tsx",
        "src/components/Tooltip.tsx",
        "src/hooks/useSeries.ts",
        "src/theme/colors.ts",
        "src/pages/Overview.tsx",
    ]
    steps = [
        ("user", "Move all chart colours into src/theme/colors.ts and make every component import them from there. Use CSS variables instead of hard-coded hex values."),
        ("todo", [("Create src/theme/colors.ts", "in_progress"), ("Replace hex colours in components", "pending"), ("Run the visual tests", "pending"), ("Update Storybook stories", "pending")]),
        ("write", "src/theme/colors.ts", "export const colors = {\n  primary: 'var(--chart-primary)',\n  grid: 'var(--chart-grid)',\n};\n"),
        ("todo", [("Create src/theme/colors.ts", "completed"), ("Replace hex colours in components", "in_progress"), ("Run the visual tests", "pending"), ("Update Storybook stories", "pending")]),
    ]
    for f in files[:3] + files[3:4] + files[5:]:
        steps.append(("read", f, "import React from 'react';\nconst stroke = '#3366ff';\n"))
        steps.append(("edit", f, "const stroke = '#3366ff';", "import { colors } from '../theme/colors';\nconst stroke = colors.primary;"))
    steps += [
        ("shell", "npm test", npm_fail("src/components/Legend.test.tsx", "renders legend swatches: expected '#3366ff' to be 'var(--chart-primary)'"), 1),
        ("say", "One snapshot test still expects the old hex value in Legend.test.tsx."),
        ("user", "Leave the snapshot tests for now, we will update them in a separate PR. Commit what you have."),
        ("shell", 'git add -A && git commit -m "Move chart colours to theme/colors.ts"', "[feat/theme 1a2b3c4] Move chart colours to theme/colors.ts\n 6 files changed, 24 insertions(+), 12 deletions(-)\n", 0),
    ]
    facts = [("core", "file", f) for f in files]
    facts += [
        ("core", "task", "Replace hex colours in components"),
        ("core", "task", "Run the visual tests"),
        ("core", "task", "Update Storybook stories"),
        ("core", "request", "Leave the snapshot tests for now, we will update them in a separate PR. Commit what you have."),
        ("core", "error", "npm test"),
        ("core", "decision", "Use CSS variables instead of hard-coded hex values"),
        ("extra", "git", "Move chart colours to theme/colors.ts"),
    ]
    scenario(f"{agent}-theme", agent, cwd, steps, facts, branch="feat/theme")


def long_session(agent):
    """A long session: many reads and commands, several prompts, a decision by question."""
    cwd = "/srv/repos/ingest-worker"
    steps = [("user", "Profile the ingest worker: the nightly job takes 40 minutes. Find the hot spot in worker/pipeline.go.")]
    for i in range(12):
        steps.append(("read", f"worker/stage_{i:02d}.go", f"package worker\n\n// stage {i}\n"))
    steps += [
        ("shell", "go test ./... -run TestPipeline -count=1", "ok  \tgithub.com/acme/ingest-worker/worker\t2.114s\n", 0),
        ("shell", "go test -bench=BenchmarkPipeline -benchmem ./worker", "BenchmarkPipeline-8   \t      12\t  98213411 ns/op\t 4812331 B/op\t   91234 allocs/op\nPASS\n", 0),
        ("ask", "Which approach should I take for the JSON decoding hot spot?", "Switch to a streaming decoder"),
        ("edit", "worker/pipeline.go", "\tdata, _ := io.ReadAll(r)\n\tjson.Unmarshal(data, &batch)", "\tdec := json.NewDecoder(r)\n\tfor dec.More() {\n\t\tdec.Decode(&rec)\n\t}"),
        ("edit", "worker/decode.go", "func decodeAll(b []byte)", "func decodeStream(r io.Reader)"),
        ("shell", "go vet ./...", "# github.com/acme/ingest-worker/worker\nworker/decode.go:17:2: unreachable code\n", 1),
        ("user", "Keep the old decodeAll behind a flag so we can compare. Then write the benchmark numbers into docs/perf.md."),
        ("write", "docs/perf.md", "# Ingest performance\n\n| decoder | ns/op |\n|---|---|\n| ReadAll | 98213411 |\n"),
    ]
    for i in range(6):
        steps.append(("shell", f"git log --oneline -n 5 -- worker/stage_{i:02d}.go", "3f2a1b0 stage tweaks\n", 0))
    facts = [
        ("core", "file", "worker/pipeline.go"),
        ("core", "file", "worker/decode.go"),
        ("core", "file", "docs/perf.md"),
        ("core", "request", "Keep the old decodeAll behind a flag so we can compare. Then write the benchmark numbers into docs/perf.md."),
        ("core", "error", "go vet ./..."),
        ("core", "decision", "Switch to a streaming decoder"),
        ("extra", "error", "unreachable code"),
        ("extra", "goal", "Find the hot spot in worker/pipeline.go"),
    ]
    scenario(f"{agent}-profile", agent, cwd, steps, facts, branch="perf/streaming-decoder")


for a in ["claude", "codex", "gemini", "opencode"]:
    api_pagination(a)
for a in ["claude", "codex", "vscode", "gemini"]:
    frontend_refactor(a)
for a in ["claude", "codex", "opencode", "vscode"]:
    long_session(a)


def migration(agent):
    cwd = "/home/dev/shop"
    steps = [
        ("user", "Add a `discount_cents` column to orders with a migration, and expose it in the Order model."),
        ("todo", [("Write the migration", "in_progress"), ("Add the field to the Order model", "pending"), ("Backfill existing rows", "pending")]),
        ("write", "db/migrations/20260302_add_discount_cents.sql", "ALTER TABLE orders ADD COLUMN discount_cents INTEGER NOT NULL DEFAULT 0;\n"),
        ("shell", "make migrate", "psql: error: connection to server on socket \"/var/run/postgresql/.s.PGSQL.5432\" failed: No such file or directory\nmake: *** [Makefile:12: migrate] Error 2\n", 2),
        ("edit", "app/models/order.rb", "  attribute :total_cents, :integer", "  attribute :total_cents, :integer\n  attribute :discount_cents, :integer, default: 0"),
        ("todo", [("Write the migration", "completed"), ("Add the field to the Order model", "completed"), ("Backfill existing rows", "pending"), ("Start Postgres and run the migration", "pending")]),
        ("user", "Postgres is not running locally, that's fine. Do not run migrations against staging."),
    ]
    facts = [
        ("core", "file", "db/migrations/20260302_add_discount_cents.sql"),
        ("core", "file", "app/models/order.rb"),
        ("core", "task", "Backfill existing rows"),
        ("core", "task", "Start Postgres and run the migration"),
        ("core", "request", "Postgres is not running locally, that's fine. Do not run migrations against staging."),
        ("core", "error", "make migrate"),
        ("core", "decision", "Do not run migrations against staging"),
        ("extra", "error", "connection to server"),
    ]
    scenario(f"{agent}-migration", agent, cwd, steps, facts)


for a in ["cursor", "gemini", "claude", "opencode"]:
    migration(a)


def docs_only(agent):
    cwd = "/home/user/notes-site"
    steps = [
        ("user", "Rewrite the installation section of README.md for Windows users; prefer winget over chocolatey."),
        ("read", "README.md", "# notes-site\n\n## Installation\n\nbrew install notes-site\n"),
        ("edit", "README.md", "## Installation\n\nbrew install notes-site", "## Installation\n\n### Windows\n\nwinget install notes-site\n\n### macOS\n\nbrew install notes-site"),
        ("write", "docs/windows.md", "# Windows\n\nUse winget: `winget install notes-site`.\n"),
        ("user", "Also link docs/windows.md from the README and check the links."),
    ]
    facts = [
        ("core", "file", "README.md"),
        ("core", "file", "docs/windows.md"),
        ("core", "request", "Also link docs/windows.md from the README and check the links."),
        ("core", "decision", "prefer winget over chocolatey"),
    ]
    scenario(f"{agent}-docs", agent, cwd, steps, facts)


for a in ["cursor", "vscode"]:
    docs_only(a)


def big_rename(agent):
    """A large session: 18 files changed, an 8-item todo list, three decisions, one error fixed and
    one left."""
    cwd = "/home/user/code/netkit"
    files = [f"src/api/{m}.rs" for m in ["users", "orders", "billing", "search", "auth", "admin"]]
    files += [f"src/{m}.rs" for m in ["client", "lib", "retry", "config", "errors", "middleware"]]
    files += [f"tests/{m}.rs" for m in ["client", "retry", "auth"]]
    files += ["examples/basic.rs", "examples/streaming.rs", "README.md"]
    tasks = [
        "Rename the struct in src/client.rs",
        "Update call sites in src/api",
        "Update the examples",
        "Update the docs and README",
        "Add the deprecated alias",
        "Run clippy and fix warnings",
        "Update CHANGELOG.md",
        "Bump the version to 0.9.0",
    ]
    steps = [
        ("user", "Rename the `Client` type to `HttpClient` across the crate and update all call sites. Keep the old name as a deprecated alias."),
        ("todo", [(t, "in_progress" if i == 0 else "pending") for i, t in enumerate(tasks)]),
    ]
    for f in files[:-3]:
        steps.append(("read", f, "use crate::Client;\n"))
        steps.append(("edit", f, "use crate::Client;", "use crate::HttpClient;"))
    steps += [
        ("shell", "cargo build --all-targets", "   Compiling netkit v0.8.3 (/home/user/code/netkit)\nerror[E0412]: cannot find type `Client` in this scope\n --> examples/basic.rs:4:12\n\nerror: could not compile `netkit` (example \"basic\") due to 1 previous error\n", 101),
        ("edit", "examples/basic.rs", "let c = Client::new();", "let c = HttpClient::new();"),
        ("edit", "examples/streaming.rs", "let c = Client::new();", "let c = HttpClient::new();"),
        ("shell", "cargo build --all-targets", "   Compiling netkit v0.8.3 (/home/user/code/netkit)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 4.31s\n", 0),
        ("user", "Don't bump the version yet, we release on Friday."),
        ("edit", "README.md", "let client = netkit::Client::new();", "let client = netkit::HttpClient::new();"),
        ("todo", [(t, "completed" if i < 3 else "in_progress" if i == 3 else "pending") for i, t in enumerate(tasks)]),
        ("shell", "cargo clippy --all-targets -- -D warnings", "error: unused import: `crate::Client`\n --> src/lib.rs:3:5\n  |\n3 | use crate::Client;\n  |     ^^^^^^^^^^^^^\n  |\n  = note: `-D unused-imports` implied by `-D warnings`\n", 101),
        ("user", "Always run cargo fmt before committing. Now fix the clippy warning and commit."),
    ]
    facts = [("core", "file", f) for f in files]
    facts += [("core", "task", t) for t in tasks[3:]]
    facts += [
        ("core", "request", "Always run cargo fmt before committing. Now fix the clippy warning and commit."),
        ("core", "error", "cargo clippy --all-targets -- -D warnings"),
        ("core", "decision", "Keep the old name as a deprecated alias"),
        ("core", "decision", "Don't bump the version yet"),
        ("core", "decision", "Always run cargo fmt before committing"),
        ("extra", "error", "unused import"),
        ("extra", "goal", "Rename the `Client` type to `HttpClient`"),
    ]
    scenario(f"{agent}-rename", agent, cwd, steps, facts, branch="refactor/http-client")


for a in ["claude", "codex", "gemini", "opencode"]:
    big_rename(a)


# ------------------------------------------------------------------------------------------------
# Renderers. Each returns (file name, bytes).


class Clock:
    def __init__(self, start):
        self.t = start

    def __call__(self, step=1500):
        self.t += step
        return self.t


def abs_path(cwd, p):
    return p if p.startswith("/") else f"{cwd}/{p}"


def render_claude(sc):
    sid = uid(sc["id"], "session")
    clock = Clock(BASE_MS)
    out = []
    parent = [None]

    def env(kind, ts):
        u = uid(sc["id"], "line", len(out))
        v = {
            "parentUuid": parent[0],
            "isSidechain": False,
            "userType": "external",
            "cwd": sc["cwd"],
            "sessionId": sid,
            "version": "2.1.49",
            "gitBranch": sc["branch"],
            "type": kind,
        }
        parent[0] = u
        return v, u

    def user_line(content, ts, extra=None):
        v, u = env("user", ts)
        v["message"] = {"role": "user", "content": content}
        if extra:
            v.update(extra)
        v["uuid"] = u
        v["timestamp"] = iso(ts)
        out.append(j(v))

    n_msg = [0]

    def assistant(blocks):
        n_msg[0] += 1
        mid = f"msg_01{uid(sc['id'], 'msg', n_msg[0]).replace('-', '')[:22]}"
        for b in blocks:
            ts = clock(400)
            v, u = env("assistant", ts)
            v["message"] = {
                "model": "claude-opus-4-6",
                "id": mid,
                "type": "message",
                "role": "assistant",
                "content": [b],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 3, "output_tokens": 12},
            }
            v["requestId"] = "req_011" + mid[6:24]
            v["uuid"] = u
            v["timestamp"] = iso(ts)
            out.append(j(v))

    n_call = [0]

    def call(name, inp, result, is_error=False):
        n_call[0] += 1
        cid = "toolu_01" + uid(sc["id"], "call", n_call[0]).replace("-", "")[:22]
        assistant([{"type": "tool_use", "id": cid, "name": name, "input": inp}])
        user_line([{"type": "tool_result", "tool_use_id": cid, "content": result, "is_error": is_error}], clock(900))

    for st in sc["steps"]:
        k = st[0]
        if k == "user":
            user_line(st[1], clock(20000), {"permissionMode": "default"})
        elif k == "say":
            assistant([{"type": "text", "text": st[1]}])
        elif k == "read":
            p = abs_path(sc["cwd"], st[1])
            body = "\n".join(f"{i + 1:>6}→{l}" for i, l in enumerate(st[2].splitlines()))
            call("Read", {"file_path": p}, body)
        elif k == "edit":
            p = abs_path(sc["cwd"], st[1])
            call("Edit", {"file_path": p, "old_string": st[2], "new_string": st[3]}, f"The file {p} has been updated successfully.")
        elif k == "write":
            p = abs_path(sc["cwd"], st[1])
            call("Write", {"file_path": p, "content": st[2]}, f"File created successfully at: {p}")
        elif k == "shell":
            cmd, output, code = st[1], st[2], st[3]
            if code == 0:
                call("Bash", {"command": cmd, "description": "Run " + cmd.split()[0]}, output.rstrip("\n"))
            else:
                call("Bash", {"command": cmd, "description": "Run " + cmd.split()[0]}, f"Exit code {code}\n{output.rstrip()}", True)
        elif k == "todo":
            todos = [{"content": t, "status": s, "activeForm": t} for t, s in st[1]]
            call("TodoWrite", {"todos": todos}, "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable")
        elif k == "ask":
            q, a = st[1], st[2]
            inp = {"questions": [{"question": q, "header": "Approach", "options": [{"label": a, "description": ""}, {"label": "Keep the current decoder", "description": ""}], "multiSelect": False}]}
            call("AskUserQuestion", inp, f'User has answered your questions: "{q}"="{a}". You can now continue with the user\'s answers in mind.')
    return f"{sid}.jsonl", "".join(l + "\n" for l in out)


def render_codex(sc):
    thread = uid(sc["id"], "thread")
    clock = Clock(BASE_MS)
    out = []

    def rec(typ, payload, ts=None):
        out.append(j({"timestamp": iso(ts or clock(50)), "type": typ, "payload": payload}))

    rec(
        "session_meta",
        {
            "id": thread,
            "timestamp": iso(BASE_MS),
            "cwd": sc["cwd"],
            "originator": "codex_cli_rs",
            "cli_version": "0.98.0",
            "source": "cli",
            "model_provider": "openai",
            "base_instructions": {"text": "You are Codex, based on GPT-5. You are running as a coding agent in the Codex CLI on a user's computer."},
            "git": {"commit_hash": "4be1f0c9d2a87e3b5c6d7e8f9a0b1c2d3e4f5a6b", "branch": sc["branch"], "repository_url": "https://github.com/example/repo.git"},
        },
        BASE_MS,
    )
    rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"<environment_context>\n  <cwd>{sc['cwd']}</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>bash</shell>\n</environment_context>"}]})
    turn = [None]
    n_turn = [0]
    n_call = [0]

    def end_turn():
        if turn[0]:
            rec("event_msg", {"type": "task_complete", "turn_id": turn[0], "last_agent_message": None})

    def call_id():
        n_call[0] += 1
        return "call_" + uid(sc["id"], "call", n_call[0]).replace("-", "")[:20]

    for st in sc["steps"]:
        k = st[0]
        if k == "user":
            end_turn()
            n_turn[0] += 1
            turn[0] = uid(sc["id"], "turn", n_turn[0])
            clock(20000)
            rec("event_msg", {"type": "task_started", "turn_id": turn[0], "model_context_window": 272000, "collaboration_mode_kind": "default"})
            rec("turn_context", {"turn_id": turn[0], "cwd": sc["cwd"], "approval_policy": "on-request", "sandbox_policy": {"type": "workspace-write", "writable_roots": [sc["cwd"]], "network_access": False}, "model": "gpt-5.2-codex", "effort": "medium", "summary": "auto"})
            rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": st[1]}]})
            rec("event_msg", {"type": "user_message", "message": st[1], "images": [], "local_images": [], "text_elements": []})
        elif k == "say":
            rec("event_msg", {"type": "agent_message", "message": st[1], "phase": "final_answer"})
            rec("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": st[1]}], "phase": "final_answer"})
        elif k in ("read", "shell"):
            if k == "read":
                cmd, output, code = f"sed -n '1,200p' {st[1]}", st[2], 0
            else:
                cmd, output, code = st[1], st[2], st[3]
            cid = call_id()
            rec("response_item", {"type": "function_call", "name": "exec_command", "arguments": j({"cmd": cmd, "workdir": sc["cwd"], "yield_time_ms": 10000}), "call_id": cid})
            toks = max(1, len(output) // 4)
            rec("response_item", {"type": "function_call_output", "call_id": cid, "output": f"Chunk ID: {cid[5:11]}\nWall time: 1.2040 seconds\nProcess exited with code {code}\nOriginal token count: {toks}\nOutput:\n{output}"}, clock(1500))
        elif k in ("edit", "write"):
            cid = call_id()
            if k == "edit":
                body = "".join(f"-{l}\n" for l in st[2].split("\n")) + "".join(f"+{l}\n" for l in st[3].split("\n"))
                patch = f"*** Begin Patch\n*** Update File: {st[1]}\n@@\n{body}*** End Patch\n"
                mark = "M"
            else:
                body = "".join(f"+{l}\n" for l in st[2].rstrip("\n").split("\n"))
                patch = f"*** Begin Patch\n*** Add File: {st[1]}\n{body}*** End Patch\n"
                mark = "A"
            rec("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": cid, "name": "apply_patch", "input": patch})
            rec("response_item", {"type": "custom_tool_call_output", "call_id": cid, "output": j({"output": f"Success. Updated the following files:\n{mark} {st[1]}\n", "metadata": {"exit_code": 0, "duration_seconds": 0.0}})})
        elif k == "todo":
            cid = call_id()
            plan = [{"step": t, "status": s} for t, s in st[1]]
            rec("response_item", {"type": "function_call", "name": "update_plan", "arguments": j({"plan": plan}), "call_id": cid})
            rec("response_item", {"type": "function_call_output", "call_id": cid, "output": "Plan updated"})
        elif k == "ask":
            cid = call_id()
            inp = {"questions": [{"id": "approach", "header": "Approach", "question": st[1], "options": [{"label": st[2], "description": ""}, {"label": "Keep the current decoder", "description": ""}]}]}
            rec("response_item", {"type": "function_call", "name": "request_user_input", "arguments": j(inp), "call_id": cid})
            rec("response_item", {"type": "function_call_output", "call_id": cid, "output": j({"answers": {"approach": {"answers": [st[2]]}}})})
    end_turn()
    name = f"rollout-2026-03-02T09-00-00-{thread}.jsonl"
    return name, "".join(l + "\n" for l in out)


def render_gemini(sc):
    sid = uid(sc["id"], "session")
    clock = Clock(BASE_MS)
    out = [j({"sessionId": sid, "projectHash": uid(sc["cwd"]).replace("-", "") * 2, "startTime": iso(BASE_MS), "lastUpdated": iso(BASE_MS), "kind": "main"})]
    n = [0]

    def mid():
        n[0] += 1
        return uid(sc["id"], "msg", n[0])

    def gemini(content, calls):
        ts = clock(1200)
        v = {"id": mid(), "timestamp": iso(ts), "type": "gemini", "content": content, "thoughts": [], "tokens": {"input": 8000, "output": 40, "cached": 0, "thoughts": 0, "tool": 0, "total": 8040}, "model": "gemini-2.5-pro"}
        if calls:
            v["toolCalls"] = calls
        out.append(j(v))
        out.append(j({"$set": {"lastUpdated": iso(ts + 10)}}))

    def call(name, args, output, status="success", error=None):
        n[0] += 1
        cid = f"{name}-{BASE_MS + n[0]}-{uid(sc['id'], 'c', n[0])[:13].replace('-', '')}"
        resp = {"error": error} if error else {"output": output}
        c = {"id": cid, "name": name, "args": args, "result": [{"functionResponse": {"id": cid, "name": name, "response": resp}}], "status": status, "timestamp": iso(clock(300)), "resultDisplay": "", "displayName": name, "renderOutputAsMarkdown": False}
        gemini("", [c])

    for st in sc["steps"]:
        k = st[0]
        if k == "user":
            out.append(j({"id": mid(), "timestamp": iso(clock(20000)), "type": "user", "content": [{"text": st[1]}]}))
        elif k == "say":
            gemini(st[1], None)
        elif k == "read":
            call("read_file", {"file_path": st[1]}, st[2])
        elif k == "edit":
            call("replace", {"file_path": abs_path(sc["cwd"], st[1]), "old_string": st[2], "new_string": st[3]}, f"Successfully modified file: {abs_path(sc['cwd'], st[1])} (1 replacements).")
        elif k == "write":
            call("write_file", {"file_path": abs_path(sc["cwd"], st[1]), "content": st[2]}, f"Successfully created and wrote to new file: {abs_path(sc['cwd'], st[1])}.")
        elif k == "shell":
            cmd, output, code = st[1], st[2], st[3]
            text = f"Command: {cmd}\nDirectory: (root)\nOutput: {output.rstrip()}\nError: (none)\n"
            if code != 0:
                text += f"Exit Code: {code}\n"
            text += "Signal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 48213"
            call("run_shell_command", {"command": cmd, "description": "Run " + cmd.split()[0]}, text)
        elif k == "todo":
            todos = [{"description": t, "status": s} for t, s in st[1]]
            listing = "\n".join(f"{i + 1}. [{s}] {t}" for i, (t, s) in enumerate(st[1]))
            call("write_todos", {"todos": todos}, f"Successfully updated the todo list. The current list is now:\n{listing}")
        elif k == "ask":
            call("ask_user", {"questions": [{"question": st[1], "header": "Approach", "options": [{"label": st[2]}, {"label": "Keep the current decoder"}]}]}, f'User has answered your questions: "{st[1]}"="{st[2]}".')
    return f"session-2026-03-02T09-00-{sid[:8]}.jsonl", "".join(l + "\n" for l in out)


def render_vscode(sc):
    sid = uid(sc["id"], "session")
    clock = Clock(BASE_MS)
    out = []
    prev = [None]
    n = [0]

    def ev(typ, data, step=50):
        n[0] += 1
        i = uid(sc["id"], "ev", n[0])
        out.append(j({"type": typ, "data": data, "id": i, "timestamp": iso(clock(step)), "parentId": prev[0]}))
        prev[0] = i

    ev("session.start", {"sessionId": sid, "version": 1, "producer": "copilot-agent", "copilotVersion": "0.37.8", "vscodeVersion": "1.110.1", "startTime": iso(BASE_MS), "context": {"cwd": sc["cwd"]}}, 0)
    turn = [0]
    n_call = [0]

    def tool(content, name, args, result, success=True):
        n_call[0] += 1
        cid = f"call_{uid(sc['id'], 'call', n_call[0]).replace('-', '')[:16]}"
        ev("assistant.turn_start", {"turnId": str(turn[0])})
        ev("assistant.message", {"messageId": uid(sc["id"], "m", n_call[0]), "content": content, "toolRequests": [{"toolCallId": cid, "name": name, "arguments": j(args), "type": "function"}]}, 1200)
        ev("tool.execution_start", {"toolCallId": cid, "toolName": name, "arguments": args})
        ev("tool.execution_complete", {"toolCallId": cid, "success": success, "result": {"content": result}}, 900)
        ev("assistant.turn_end", {"turnId": str(turn[0])})
        turn[0] += 1

    for st in sc["steps"]:
        k = st[0]
        if k == "user":
            ev("user.message", {"content": st[1], "attachments": []}, 20000)
        elif k == "say":
            ev("assistant.turn_start", {"turnId": str(turn[0])})
            ev("assistant.message", {"messageId": uid(sc["id"], "say", turn[0]), "content": st[1], "toolRequests": []}, 1200)
            ev("assistant.turn_end", {"turnId": str(turn[0])})
            turn[0] += 1
        elif k == "read":
            tool("", "read_file", {"filePath": abs_path(sc["cwd"], st[1]), "startLine": 1, "endLine": 200}, st[2])
        elif k == "edit":
            p = abs_path(sc["cwd"], st[1])
            tool("", "replace_string_in_file", {"filePath": p, "oldString": st[2], "newString": st[3]}, f"The following files were successfully edited:\n{p}")
        elif k == "write":
            p = abs_path(sc["cwd"], st[1])
            tool("", "create_file", {"filePath": p, "content": st[2]}, "")
        elif k == "shell":
            tool("", "run_in_terminal", {"command": st[1], "explanation": "Run " + st[1].split()[0], "isBackground": False}, st[2].rstrip())
        elif k == "todo":
            vs = {"pending": "not-started", "in_progress": "in-progress", "completed": "completed"}
            lst = [{"id": i + 1, "title": t, "description": "", "status": vs[s]} for i, (t, s) in enumerate(st[1])]
            tool("", "manage_todo_list", {"operation": "write", "todoList": lst}, "Successfully wrote todo list")
        elif k == "ask":
            raise ValueError("no question tool in this VS Code scenario")
    return f"{sid}.jsonl", "".join(l + "\n" for l in out)


def render_cursor(sc):
    out = []

    def asst(blocks):
        out.append(j({"role": "assistant", "message": {"content": blocks}}))

    n = [0]
    for st in sc["steps"]:
        k = st[0]
        if k == "user":
            out.append(j({"role": "user", "message": {"content": [{"type": "text", "text": f"<timestamp>Monday, Mar 2, 2026, 10:00 AM GMT+1</timestamp>\n<user_query>\n{st[1]}\n</user_query>"}]}}))
        elif k == "say":
            asst([{"type": "text", "text": st[1]}])
        elif k == "read":
            asst([{"type": "tool_use", "name": "Read", "input": {"path": abs_path(sc["cwd"], st[1])}}])
        elif k == "edit":
            asst([{"type": "tool_use", "name": "StrReplace", "input": {"path": abs_path(sc["cwd"], st[1]), "old_string": st[2], "new_string": st[3]}}])
        elif k == "write":
            asst([{"type": "tool_use", "name": "Write", "input": {"path": abs_path(sc["cwd"], st[1]), "contents": st[2]}}])
        elif k == "shell":
            asst([{"type": "tool_use", "name": "Shell", "input": {"command": st[1]}}])
        elif k == "todo":
            n[0] += 1
            todos = [{"id": str(i + 1), "content": t, "status": s} for i, (t, s) in enumerate(st[1])]
            asst([{"type": "tool_use", "name": "TodoWrite", "input": {"merge": False, "todos": todos}}])
        elif k == "ask":
            raise ValueError("no question tool in this Cursor scenario")
    sid = uid(sc["id"], "session")
    return f"{sid}.jsonl", "".join(l + "\n" for l in out)


def render_opencode(sc):
    sid = "ses_" + uid(sc["id"], "s").replace("-", "")[:26]
    clock = Clock(BASE_MS)
    msgs = []
    n = [0]

    def pid():
        n[0] += 1
        return "prt_" + uid(sc["id"], "p", n[0]).replace("-", "")[:26]

    def mid():
        n[0] += 1
        return "msg_" + uid(sc["id"], "m", n[0]).replace("-", "")[:26]

    last_user = [None]

    def assistant(parts):
        m = mid()
        t = clock(1500)
        for p in parts:
            p.update({"id": pid(), "sessionID": sid, "messageID": m})
        msgs.append({"info": {"role": "assistant", "time": {"created": t, "completed": t + 900}, "parentID": last_user[0], "modelID": "claude-sonnet-4-6", "providerID": "anthropic", "mode": "build", "agent": "build", "path": {"cwd": sc["cwd"], "root": sc["cwd"]}, "cost": 0.004, "tokens": {"input": 2, "output": 50, "reasoning": 0, "cache": {"read": 12000, "write": 300}}, "finish": "tool-calls", "id": m, "sessionID": sid}, "parts": parts})

    def tool(name, inp, output, ok=True, title=""):
        t = clock(200)
        state = {"status": "completed", "input": inp, "output": output, "title": title, "metadata": {}, "time": {"start": t, "end": t + 300}}
        if not ok:
            state = {"status": "error", "input": inp, "error": output, "time": {"start": t, "end": t + 300}}
        n[0] += 1
        assistant([{"type": "tool", "callID": "toolu_01" + uid(sc["id"], "c", n[0]).replace("-", "")[:22], "tool": name, "state": state}])

    for st in sc["steps"]:
        k = st[0]
        if k == "user":
            m = mid()
            last_user[0] = m
            msgs.append({"info": {"role": "user", "time": {"created": clock(20000)}, "summary": {"diffs": []}, "agent": "build", "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-6"}, "id": m, "sessionID": sid}, "parts": [{"type": "text", "text": st[1], "id": pid(), "sessionID": sid, "messageID": m}]})
        elif k == "say":
            assistant([{"type": "text", "text": st[1]}])
        elif k == "read":
            body = "<file>\n" + "".join(f"{i + 1:05d}| {l}\n" for i, l in enumerate(st[2].splitlines())) + "</file>"
            tool("read", {"filePath": abs_path(sc["cwd"], st[1])}, body, title=st[1])
        elif k == "edit":
            tool("edit", {"filePath": abs_path(sc["cwd"], st[1]), "oldString": st[2], "newString": st[3]}, "", title=st[1])
        elif k == "write":
            tool("write", {"filePath": abs_path(sc["cwd"], st[1]), "content": st[2]}, "", title=st[1])
        elif k == "shell":
            cmd, output, code = st[1], st[2], st[3]
            if code == 0:
                tool("bash", {"command": cmd, "description": "Run " + cmd.split()[0]}, output, title=cmd)
            else:
                tool("bash", {"command": cmd, "description": "Run " + cmd.split()[0]}, f"Error: Command failed: exit code {code}\n{output.rstrip()}", ok=False)
        elif k == "todo":
            todos = [{"content": t, "status": s, "priority": "medium", "id": str(i + 1)} for i, (t, s) in enumerate(st[1])]
            tool("todowrite", {"todos": todos}, j(todos, ), title=f"{sum(1 for _, s in st[1] if s != 'completed')} todos")
        elif k == "ask":
            raise ValueError("no question tool in this OpenCode scenario")
    doc = {"info": {"id": sid, "slug": "steady-river", "projectID": uid(sc["cwd"]).replace("-", "")[:40], "directory": sc["cwd"], "title": sc["steps"][0][1][:60], "version": "1.2.10", "time": {"created": BASE_MS, "updated": clock(0)}}, "messages": msgs}
    return f"{sid}.json", json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


RENDER = {
    "claude": render_claude,
    "codex": render_codex,
    "gemini": render_gemini,
    "vscode": render_vscode,
    "cursor": render_cursor,
    "opencode": render_opencode,
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f != "README.md":
            os.remove(os.path.join(OUT, f))
    index = []
    for sc in SCENARIOS:
        if sc["agent"] != "claude":
            # Only Claude Code's question tool (AskUserQuestion) is rendered as a tool; elsewhere
            # the agent asks in prose and the user answers with a prompt.
            steps = []
            for st in sc["steps"]:
                steps += [("say", st[1]), ("user", st[2])] if st[0] == "ask" else [st]
            sc = dict(sc, steps=steps)
        name, text = RENDER[sc["agent"]](sc)
        fname = f"{sc['id']}--{name}"
        with open(os.path.join(OUT, fname), "w", encoding="utf-8") as fh:
            fh.write(text)
        with open(os.path.join(OUT, f"{sc['id']}.facts"), "w", encoding="utf-8") as fh:
            fh.write(f"# {sc['id']}: {sc['agent']} session in {sc['cwd']}; transcript {fname}\n")
            fh.write(f"project {sc['cwd']}\n")
            fh.write(f"transcript {fname}\n")
            for core, kind, text in sc["facts"]:
                fh.write(f"{core} {kind} {text}\n")
        index.append(sc["id"])
    print(f"{len(index)} sessions written to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
