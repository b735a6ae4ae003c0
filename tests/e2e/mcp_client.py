#!/usr/bin/env python3
"""A real MCP client (the Python `mcp` SDK) for memtrail's stdio MCP server.

Usage:
    mcp_client.py MEMTRAIL_BIN [--db PATH] [--timeout S] [TOOL [JSON_ARGS]]
    mcp_client.py MEMTRAIL_BIN --calls JSON_ARRAY   # [[TOOL, {ARGS}], ...] in one session
                                                    # (["__sleep", {"seconds": S}] pauses)

Starts `MEMTRAIL_BIN [--db PATH] mcp` over stdio with the caller's environment
(so MEMTRAIL_DB, HOME, XDG_* pass through), initializes, lists the tools and,
when TOOL is given, calls it with JSON_ARGS (a JSON object, default {}).
Prints one JSON object on stdout:

    {"tools": [names...], "result": <structuredContent, else the text content>,
     "is_error": bool, "structured": bool (whether structuredContent came),
     "text": <the text content>, "server": {"name", "version"}, "protocol_version": "...",
     "schemas": {name: {"description", "input_schema", "output_schema"}},
     "calls": [{"tool", "is_error", "structured", "result", "text"}, ...] (with --calls)}

With no TOOL, "result" is null. On a transport or protocol failure it prints
{"tools": [...], "result": null, "is_error": true, "error": "..."} and exits 1;
a tool that answers with isError still exits 0 (the caller checks is_error).
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Call a tool of `memtrail mcp` with the Python MCP SDK.")
    ap.add_argument("binary", help="path of the memtrail binary")
    ap.add_argument("tool", nargs="?", help="tool to call (omit to only list tools)")
    ap.add_argument("args", nargs="?", default="{}", help="JSON object of tool arguments")
    ap.add_argument("--db", help="pass --db PATH to memtrail")
    ap.add_argument("--timeout", type=float, default=60.0, help="overall timeout in seconds")
    ap.add_argument("--calls", help="JSON array of [tool, args] pairs, called in order in one session")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="extra argument for the server command line (repeatable), before 'mcp'")
    return ap.parse_intermixed_args(argv)


async def run(ns):
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    cmd_args = list(ns.server_arg)
    if ns.db:
        cmd_args += ["--db", ns.db]
    cmd_args.append("mcp")
    # The SDK's default environment keeps only a handful of variables (HOME,
    # PATH, ...); pass the whole caller environment so the sandbox reaches the server.
    params = StdioServerParameters(command=ns.binary, args=cmd_args, env=dict(os.environ))
    out = {"tools": [], "result": None, "is_error": False}
    tool_args = json.loads(ns.args) if ns.tool else {}
    if not isinstance(tool_args, dict):
        raise SystemExit("JSON_ARGS must be a JSON object")

    with anyio.fail_after(ns.timeout):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                out["protocol_version"] = init.protocol_version
                info = init.server_info
                out["server"] = {"name": getattr(info, "name", None), "version": getattr(info, "version", None)}
                tools = []
                cursor = None
                while True:
                    if cursor is None:
                        listing = await session.list_tools()
                    else:
                        from mcp import types as mtypes

                        listing = await session.list_tools(params=mtypes.PaginatedRequestParams(cursor=cursor))
                    tools += [t.name for t in listing.tools]
                    for t in listing.tools:
                        out.setdefault("schemas", {})[t.name] = {
                            "description": t.description,
                            "input_schema": schema_of(t, "input_schema", "inputSchema"),
                            "output_schema": schema_of(t, "output_schema", "outputSchema"),
                        }
                    cursor = listing.next_cursor
                    if not cursor:
                        break
                out["tools"] = tools
                if ns.tool:
                    out.update(await call(session, ns.tool, tool_args))
                if ns.calls:
                    out["calls"] = []
                    for name, args in json.loads(ns.calls):
                        if name == "__sleep":
                            # Not a tool: a pause between calls (a server's idle-time work).
                            await anyio.sleep(float(args.get("seconds", 1)))
                            continue
                        r = await call(session, name, args)
                        r["tool"] = name
                        out["calls"].append(r)
    return out


def schema_of(tool, *names):
    """A tool's schema attribute, whichever spelling this SDK release uses."""
    for n in names:
        v = getattr(tool, n, None)
        if v is not None:
            return v.model_dump(by_alias=True, exclude_none=True) if hasattr(v, "model_dump") else v
    return None


async def call(session, name, args):
    res = await session.call_tool(name, args)
    texts = [c.text for c in res.content if getattr(c, "type", None) == "text"]
    return {
        "is_error": bool(res.is_error),
        "structured": res.structured_content is not None,
        "result": res.structured_content if res.structured_content is not None else "\n".join(texts),
        "text": "\n".join(texts),
    }


def leaves(e):
    """The innermost exceptions of (nested) exception groups."""
    subs = getattr(e, "exceptions", None)
    if not subs:
        return [e]
    return [x for s in subs for x in leaves(s)]


def main(argv=None):
    ns = parse_args(sys.argv[1:] if argv is None else argv)
    import anyio

    try:
        out = anyio.run(run, ns)
    except BaseException as e:  # noqa: BLE001 - report anything, including ExceptionGroup/timeouts
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        msg = "; ".join(repr(x) for x in leaves(e))
        print(json.dumps({"tools": [], "result": None, "is_error": True, "error": msg}))
        sys.exit(1)
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
