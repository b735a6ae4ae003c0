// memtrail for pi: captures this machine's pi sessions into memtrail's local store, gives a
// session its working state back after a compaction, and lends pi memtrail's MCP tools.
// memtrail-pi-extension (marker: `memtrail install` and `memtrail uninstall` recognise this file
// by that word; edits here are overwritten by the next install)
//
// Installed as <agent>/extensions/memtrail.ts (default ~/.pi/agent/extensions/), which pi loads
// at startup with its extension loader (jiti). No dependencies: node:child_process only.
//
// Capture. On these pi events it runs `<memtrail> hook pi` with one line of JSON on stdin:
//   {"hook_event_name": H, "pi_event": E, "session_id": "<uuid>", "transcript_path": "<file>",
//    "cwd": "/project", "source": "<reason>"}
//   E = session_start           H = SessionStart  (source: startup|reload|new|resume|fork)
//       agent_end               H = Stop          (every message of the prompt is on disk)
//       session_before_compact  H = PreCompact    (memtrail saves its snapshot)
//       session_compact         H = PostCompact
//       session_shutdown        H = SessionEnd    (source: quit|reload|new|resume|fork)
// The session file is the source of truth: memtrail reads it from its cursor; the event is only
// a trigger. At SessionStart and PostCompact memtrail may answer {"additionalContext": "..."};
// that text is appended to the system prompt of the session's prompts from then on
// (before_agent_start), never written into the session file.
//
// Tools. pi has no MCP client: at load, the extension asks `<memtrail> mcp` for its tools
// (tools/list) and registers each as a pi tool `memtrail_<name>`; a call runs `<memtrail> mcp`
// in the session's folder for one tools/call.
//
// It never breaks pi: every hook run is bounded (HOOK_TIMEOUT_MS; a slower hook keeps running,
// detached, and finishes on its own) and every error is swallowed. MEMTRAIL_DISABLE=1 in pi's
// environment turns it off.

import { spawn } from "node:child_process"

const MEMTRAIL_BIN = "__MEMTRAIL_BIN__"
const HOOK_TIMEOUT_MS = 5000
const MCP_TIMEOUT_MS = 30000
// The tool list, asked once as pi starts: pi waits for it, so a stuck memtrail costs pi 5 s at
// most (then pi starts without memtrail's tools).
const LIST_TIMEOUT_MS = 5000
const MAX_REPLY_CHARS = 1024 * 1024
const MAX_CONTEXT_CHARS = 20000

function disabled() {
  return process.env.MEMTRAIL_DISABLE === "1"
}

/**
 * Run `memtrail ...args` in `cwd` (or the current folder) with `input` on stdin. Resolves with
 * its stdout ("" on any error) when it exits, or after `timeoutMs` with what it printed so far;
 * a process still running then is left to finish on its own.
 */
function run(args, input, timeoutMs, cwd) {
  return new Promise((resolve) => {
    let out = ""
    let settled = false
    let child
    let timer
    const settle = () => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      try {
        if (child && child.stdout) child.stdout.destroy()
        if (child) child.unref()
      } catch {}
      resolve(out)
    }
    try {
      const opts = { stdio: ["pipe", "pipe", "ignore"], detached: true, windowsHide: true }
      if (cwd) opts.cwd = cwd
      child = spawn(MEMTRAIL_BIN, args, opts)
      timer = setTimeout(settle, timeoutMs)
      child.on("error", settle)
      child.on("close", settle)
      child.stdout.setEncoding("utf8")
      child.stdout.on("data", (chunk) => {
        if (out.length < MAX_REPLY_CHARS) out += chunk
      })
      child.stdout.on("error", () => {})
      child.stdin.on("error", () => {})
      child.stdin.end(input)
    } catch {
      settle()
    }
  })
}

// ------------------------------------------------------------------------------------- capture

/** Context memtrail gave back, by session file. */
const contextOf = new Map()

/** Run the hook for pi event `piEvent` as `hookEvent`; keep the context it answers, if any. */
async function hook(hookEvent, piEvent, ctx, source) {
  if (disabled()) return
  let file
  let sessionId
  try {
    file = ctx.sessionManager.getSessionFile()
    sessionId = ctx.sessionManager.getSessionId()
  } catch {
    return
  }
  if (!file) return // --no-session: nothing is written, nothing to capture
  const payload = {
    hook_event_name: hookEvent,
    pi_event: piEvent,
    session_id: sessionId,
    transcript_path: file,
    cwd: ctx.cwd,
  }
  if (source) payload.source = source
  const reply = await run(["hook", "pi"], JSON.stringify(payload) + "\n", HOOK_TIMEOUT_MS)
  try {
    const v = JSON.parse(reply.trim() || "null")
    const c = v && typeof v.additionalContext === "string" ? v.additionalContext.trim() : ""
    if (c) contextOf.set(file, c.slice(0, MAX_CONTEXT_CHARS))
  } catch {}
}

// --------------------------------------------------------------------------------- MCP tools

/** One MCP exchange with `memtrail mcp`: initialize, then `method` with `params`. */
async function mcp(method, params, cwd, timeoutMs = MCP_TIMEOUT_MS) {
  const lines = [
    { jsonrpc: "2.0", id: 1, method: "initialize", params: {
      protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "memtrail-pi", version: "1" },
    } },
    { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", id: 2, method, params },
  ]
  const out = await run(["mcp"], lines.map((l) => JSON.stringify(l)).join("\n") + "\n", timeoutMs, cwd)
  for (const line of out.split("\n")) {
    try {
      const v = JSON.parse(line)
      if (v && v.id === 2) return v
    } catch {}
  }
  return undefined
}

/** A JSON schema without the keys pi's validator does not take (`$schema`, `format`). */
function plainSchema(s) {
  if (Array.isArray(s)) return s.map(plainSchema)
  if (!s || typeof s !== "object") return s
  const o = {}
  for (const [k, v] of Object.entries(s)) {
    if (k === "$schema" || k === "format") continue
    o[k] = plainSchema(v)
  }
  return o
}

function registerTools(pi, tools) {
  for (const t of tools) {
    if (!t || typeof t.name !== "string") continue
    pi.registerTool({
      name: `memtrail_${t.name}`,
      label: `memtrail ${t.name}`,
      description: typeof t.description === "string" ? t.description : t.name,
      parameters: plainSchema(t.inputSchema || { type: "object", properties: {} }),
      async execute(_id, params, _signal, _onUpdate, ctx) {
        const v = await mcp("tools/call", { name: t.name, arguments: params || {} }, ctx && ctx.cwd)
        const r = v && v.result
        if (!r) throw new Error((v && v.error && v.error.message) || "memtrail mcp did not answer")
        const text = (r.content || [])
          .filter((c) => c && c.type === "text")
          .map((c) => c.text)
          .join("\n")
        if (r.isError) throw new Error(text || "memtrail: the tool failed")
        return { content: [{ type: "text", text }], details: {} }
      },
    })
  }
}

// ----------------------------------------------------------------------------------- wiring

export default async function (pi) {
  if (disabled()) return
  pi.on("session_start", async (event, ctx) => {
    try {
      contextOf.delete(ctx.sessionManager.getSessionFile())
    } catch {}
    await hook("SessionStart", "session_start", ctx, event && event.reason)
  })
  pi.on("agent_end", async (_event, ctx) => hook("Stop", "agent_end", ctx))
  pi.on("session_before_compact", async (_event, ctx) => {
    await hook("PreCompact", "session_before_compact", ctx)
  })
  pi.on("session_compact", async (_event, ctx) => hook("PostCompact", "session_compact", ctx))
  pi.on("session_shutdown", async (event, ctx) =>
    hook("SessionEnd", "session_shutdown", ctx, event && event.reason))
  pi.on("before_agent_start", async (event, ctx) => {
    let c
    try {
      c = contextOf.get(ctx.sessionManager.getSessionFile())
    } catch {}
    if (!c || !event || typeof event.systemPrompt !== "string") return
    return { systemPrompt: `${event.systemPrompt}\n\n${c}` }
  })
  const listed = await mcp("tools/list", {}, process.cwd(), LIST_TIMEOUT_MS)
  registerTools(pi, (listed && listed.result && listed.result.tools) || [])
}
