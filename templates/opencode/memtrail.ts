// memtrail for OpenCode: captures this machine's OpenCode sessions into memtrail's local store.
// memtrail-opencode-plugin (marker: `memtrail install` and `memtrail uninstall` recognise this
// file by that word; edits here are overwritten by the next install)
//
// Installed as <config>/plugins/memtrail.ts (default ~/.config/opencode/plugins/), which
// OpenCode loads at startup. No dependencies (only node:child_process, available under Bun and
// Node), and plain JavaScript syntax (valid TypeScript: OpenCode transpiles without type checks).
//
// What it does. On these events it runs `<memtrail> hook opencode` and writes one line of JSON
// on its stdin:
//   {"hook_event_name": EVENT, "session_id": "ses_...", "cwd": "/project", "plugin_api": "v1"|"v2"}
// with EVENT:
//   session.idle        a turn finished: memtrail reads the new rows of OpenCode's own database
//                       (the transcript is the source of truth; this is only a trigger)
//   session.compacting  compaction is about to run: memtrail captures and builds its snapshot
//   session.compacted   compaction finished
//   session.start       a new top-level session was created
// For the last three, memtrail may answer on stdout {"additionalContext": "..."}; the text is
// added to the compaction prompt (session.compacting) or to the session's system prompt from
// then on (session.compacted, session.start).
//
// It never blocks or breaks OpenCode: the hook is spawned, never awaited longer than 2 s (a
// slower hook keeps running detached and finishes on its own), and every error is swallowed.
// Set MEMTRAIL_DISABLE=1 in OpenCode's environment to turn it off.
//
// Two plugin APIs, one file. The default export carries both:
//   server  the 1.x API: called with {directory, ...}, returns hooks; OpenCode 1.3.4 and later
//           call it when the default export is an object with `server`.
//   setup   the 2.x API: OpenCode 2 decodes the default export as {id, setup} and calls
//           setup(ctx); hooks are registered on ctx.session, events come from ctx.event.
// OpenCode before 1.3.4 calls every export as a plugin function, so for those versions the
// installer replaces the default export by `export const MemtrailPlugin = server`.

import { spawn } from "node:child_process"

const MEMTRAIL_BIN = "__MEMTRAIL_BIN__"
const HOOK_TIMEOUT_MS = 2000
const MAX_REPLY_CHARS = 256 * 1024
const MAX_CONTEXT_CHARS = 20000

/** Context to add to a session's system prompt, by session id. */
const contexts = new Map()
/** A hook call whose reply may set a session's context, by session id. */
const pending = new Map()
/** Sessions with a capture in flight, and those that went idle again meanwhile. */
const capturing = new Set()
const again = new Set()

function disabled() {
  return process.env.MEMTRAIL_DISABLE === "1"
}

function sleep(ms) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms)
    if (t && typeof t.unref === "function") t.unref()
  })
}

/**
 * Run the hook once. Resolves with its stdout ("" on any error) when it exits, or after
 * HOOK_TIMEOUT_MS with what it printed so far; a slower hook keeps running, detached. A call
 * that waits for a reply keeps the host's event loop alive until it resolves; a capture
 * (no reply) never holds the host up, even at exit.
 */
function callHook(event, sessionID, cwd, api, wantReply) {
  return new Promise((resolve) => {
    let out = ""
    let done = false
    let timer
    let child
    const finish = () => {
      if (done) return
      done = true
      if (timer) clearTimeout(timer)
      try {
        if (child && child.stdout) child.stdout.destroy()
        if (child && typeof child.unref === "function") child.unref()
      } catch {}
      resolve(out)
    }
    try {
      // No `cwd` option: a project folder that vanished must not make the spawn fail.
      child = spawn(MEMTRAIL_BIN, ["hook", "opencode"], {
        stdio: ["pipe", wantReply ? "pipe" : "ignore", "ignore"],
        detached: true,
        windowsHide: true,
      })
      timer = setTimeout(finish, HOOK_TIMEOUT_MS)
      if (!wantReply && timer && typeof timer.unref === "function") timer.unref()
      child.on("error", finish)
      child.on("close", finish)
      if (child.stdout) {
        child.stdout.setEncoding("utf8")
        child.stdout.on("data", (chunk) => {
          if (out.length < MAX_REPLY_CHARS) out += chunk
        })
        child.stdout.on("error", () => {})
      }
      if (child.stdin) {
        child.stdin.on("error", () => {})
        child.stdin.end(
          JSON.stringify({ hook_event_name: event, session_id: sessionID, cwd, plugin_api: api }) + "\n",
        )
      }
      if (!wantReply && typeof child.unref === "function") child.unref()
    } catch {
      finish()
    }
  })
}

/** The context in a hook reply {"additionalContext": "..."}, if any. */
function replyContext(reply) {
  try {
    const v = JSON.parse(String(reply).trim() || "null")
    const c = v && typeof v.additionalContext === "string" ? v.additionalContext.trim() : ""
    return c ? c.slice(0, MAX_CONTEXT_CHARS) : undefined
  } catch {
    return undefined
  }
}

/** session.idle: capture, one run at a time per session (an idle meanwhile re-runs it once). */
function capture(sessionID, cwd, api) {
  if (capturing.has(sessionID)) {
    again.add(sessionID)
    return
  }
  capturing.add(sessionID)
  callHook("session.idle", sessionID, cwd, api, false).then(() => {
    capturing.delete(sessionID)
    if (again.delete(sessionID)) capture(sessionID, cwd, api)
  })
}

/** session.compacted / session.start: ask for context to add to the session from now on. */
function requestContext(event, sessionID, cwd, api) {
  const p = callHook(event, sessionID, cwd, api, true).then((reply) => {
    const c = replyContext(reply)
    if (c) contexts.set(sessionID, c)
  })
  pending.set(sessionID, p)
  p.then(() => {
    if (pending.get(sessionID) === p) pending.delete(sessionID)
  })
}

/** The context for a session, waiting (at most HOOK_TIMEOUT_MS) for a reply on its way. */
async function contextFor(sessionID) {
  if (typeof sessionID !== "string" || !sessionID) return undefined
  const p = pending.get(sessionID)
  if (p) await Promise.race([p, sleep(HOOK_TIMEOUT_MS)])
  return contexts.get(sessionID)
}

/** Context for the compaction prompt (compaction waits at most HOOK_TIMEOUT_MS for it). */
async function compactionContext(sessionID, cwd, api) {
  if (typeof sessionID !== "string" || !sessionID || disabled()) return undefined
  return replyContext(await callHook("session.compacting", sessionID, cwd, api, true))
}

/** A bus event: 1.x `{type, properties}` or 2.x `{type, data}`. */
function onEvent(type, data, cwd, api) {
  if (disabled() || typeof type !== "string" || !data || typeof data !== "object") return
  const info = data.info && typeof data.info === "object" ? data.info : {}
  const sessionID = typeof data.sessionID === "string" ? data.sessionID : info.id
  if (typeof sessionID !== "string" || !sessionID) return
  const dir = typeof info.directory === "string" && info.directory ? info.directory : cwd
  if (type === "session.idle") capture(sessionID, dir, api)
  else if (type === "session.compacted") requestContext("session.compacted", sessionID, dir, api)
  else if (type === "session.created" && !info.parentID && !data.parentID) {
    requestContext("session.start", sessionID, dir, api)
  }
}

// ---- OpenCode 1.x -------------------------------------------------------------------------

async function server(input) {
  const cwd = input && typeof input.directory === "string" ? input.directory : process.cwd()
  return {
    event: async (arg) => {
      try {
        const event = arg && arg.event
        if (event) onEvent(event.type, event.properties, cwd, "v1")
      } catch {}
    },
    "experimental.session.compacting": async (input, output) => {
      try {
        const c = await compactionContext(input && input.sessionID, cwd, "v1")
        if (c && output && Array.isArray(output.context)) output.context.push(c)
      } catch {}
    },
    "experimental.chat.system.transform": async (input, output) => {
      try {
        const c = await contextFor(input && input.sessionID)
        if (c && output && Array.isArray(output.system)) output.system.push(c)
      } catch {}
    },
  }
}

// ---- OpenCode 2.x -------------------------------------------------------------------------

async function setup(ctx) {
  // A host without an event stream is not OpenCode 2: `server` serves it.
  if (!ctx || !ctx.event || typeof ctx.event.subscribe !== "function") return undefined
  const cwd = ctx.location && typeof ctx.location.directory === "string" ? ctx.location.directory : process.cwd()
  const controller = new AbortController()
  ;(async () => {
    try {
      for await (const event of ctx.event.subscribe({ signal: controller.signal })) {
        try {
          if (event) onEvent(event.type, event.data || event.properties, cwd, "v2")
        } catch {}
      }
    } catch {}
  })()
  try {
    if (ctx.session && typeof ctx.session.hook === "function") {
      await ctx.session.hook("context", async (event) => {
        try {
          const c = await contextFor(event && event.sessionID)
          if (c && Array.isArray(event.system)) event.system.push({ type: "text", text: c })
        } catch {}
      })
      await ctx.session.hook("compaction", async (event) => {
        try {
          const c = await compactionContext(event && event.sessionID, cwd, "v2")
          if (c && Array.isArray(event.system)) event.system.push({ type: "text", text: c })
        } catch {}
      })
    }
  } catch {}
  return () => controller.abort()
}

export default { id: "memtrail", setup, server }
