//! A deterministic synthetic corpus of coding-agent transcripts, for memtrail's benchmarks.
//!
//! [`generate`] writes, under a directory laid out like a HOME, Claude Code, Codex CLI, Gemini CLI
//! and Cursor transcripts in their real on-disk layouts and line formats (the formats of
//! `docs/agents/README.md` and the project fixtures in `fixtures/`):
//!
//! - Claude Code: `.claude/projects/<slug>/<uuid>.jsonl`, one line per content block, tool
//!   results in `user` lines with their `toolUseResult` copy, sub-agents in
//!   `<uuid>/subagents/agent-<id>.jsonl` spawned by a `Task` call;
//! - Codex CLI: `.codex/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl` (legacy
//!   history: prompts and answers written twice, `exec_command` calls with their output);
//! - Gemini CLI: `.gemini/tmp/<project hash>/chats/session-<time>-<id8>.jsonl` (metadata line,
//!   message records, `$set` updates, `toolCalls` with `functionResponse` results);
//! - Cursor: `.cursor/projects/<slug>/agent-transcripts/<uuid>.jsonl` (role lines, no ids,
//!   `turn_ended` records).
//!
//! The shape follows real transcripts: many short messages, tool outputs whose sizes are
//! log-normal (median ~0.5 KB, a tail of 10–60 KB outputs), code blocks in Rust, Python,
//! TypeScript and Go, file paths and identifiers, text in several languages (Japanese, Chinese,
//! Russian, French, German, Spanish, Korean), and word frequencies that follow Zipf's law (so a
//! few terms are in a large share of the messages, as `error`, `test` or `file` are in real
//! sessions). The same `seed` and `bytes` give the same bytes on every machine.

pub mod eval;
pub mod variant;

use memtrail_runtime::records::Standard;
use serde_json::{Value, json};
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A small, fast, deterministic generator (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)`.
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[lo, hi]`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
    pub fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next_u64() % xs.len() as u64) as usize]
    }
    /// An index in `[0, n)` drawn from a Zipf-like (log-uniform) law: index 0 is the most
    /// frequent, frequency falling roughly as 1/rank.
    pub fn zipf(&mut self, n: usize) -> usize {
        let x = ((n + 1) as f64).powf(self.f64()) - 1.0;
        (x as usize).min(n - 1)
    }
    /// Log-normal with the given median and sigma.
    pub fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        // Box-Muller.
        let u1 = self.f64().max(1e-12);
        let u2 = self.f64();
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        median * (sigma * z).exp()
    }
    pub fn hex(&mut self, n: usize) -> String {
        let mut s = String::with_capacity(n);
        while s.len() < n {
            s.push_str(&format!("{:016x}", self.next_u64()));
        }
        s.truncate(n);
        s
    }
    /// A UUID (version 4 layout).
    pub fn uuid(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-4{}-a{}-{}",
            &h[0..8],
            &h[8..12],
            &h[13..16],
            &h[17..20],
            &h[20..32]
        )
    }
    pub fn alnum(&mut self, n: usize) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n).map(|_| *self.pick(A) as char).collect()
    }
}

/// Vocabulary, most frequent first (rank drives the Zipf draw).
const WORDS: &[&str] = &[
    "the",
    "to",
    "and",
    "error",
    "test",
    "file",
    "a",
    "in",
    "is",
    "of",
    "function",
    "it",
    "that",
    "for",
    "this",
    "code",
    "with",
    "fix",
    "run",
    "we",
    "build",
    "not",
    "on",
    "be",
    "config",
    "value",
    "type",
    "return",
    "check",
    "now",
    "should",
    "use",
    "add",
    "update",
    "can",
    "from",
    "session",
    "path",
    "when",
    "string",
    "let",
    "need",
    "failing",
    "passes",
    "module",
    "new",
    "call",
    "data",
    "missing",
    "line",
    "change",
    "case",
    "struct",
    "field",
    "import",
    "read",
    "write",
    "parse",
    "output",
    "input",
    "result",
    "option",
    "default",
    "async",
    "await",
    "handler",
    "request",
    "response",
    "server",
    "client",
    "database",
    "query",
    "index",
    "cache",
    "token",
    "timeout",
    "retry",
    "lock",
    "thread",
    "memory",
    "buffer",
    "stream",
    "channel",
    "commit",
    "branch",
    "merge",
    "rebase",
    "diff",
    "patch",
    "release",
    "version",
    "dependency",
    "crate",
    "package",
    "compile",
    "warning",
    "lint",
    "format",
    "clippy",
    "cargo",
    "npm",
    "python",
    "pytest",
    "docker",
    "kubernetes",
    "deploy",
    "migration",
    "schema",
    "table",
    "column",
    "row",
    "transaction",
    "rollback",
    "cursor",
    "offset",
    "limit",
    "page",
    "sort",
    "filter",
    "search",
    "ranking",
    "snippet",
    "highlight",
    "tokenizer",
    "unicode",
    "utf8",
    "encoding",
    "decode",
    "serialize",
    "deserialize",
    "json",
    "yaml",
    "toml",
    "jsonl",
    "hook",
    "payload",
    "event",
    "agent",
    "prompt",
    "context",
    "compaction",
    "snapshot",
    "transcript",
    "adapter",
    "reader",
    "writer",
    "store",
    "ingest",
    "benchmark",
    "latency",
    "throughput",
    "allocation",
    "profile",
    "flamegraph",
    "regression",
    "panic",
    "unwrap",
    "lifetime",
    "borrow",
    "trait",
    "generic",
    "closure",
    "iterator",
    "vector",
    "hashmap",
    "btree",
    "slice",
    "refactor",
    "rename",
    "extract",
    "inline",
    "duplicate",
    "helper",
    "utility",
    "wrapper",
    "interface",
    "component",
    "render",
    "state",
    "props",
    "router",
    "endpoint",
    "middleware",
    "auth",
    "login",
    "logout",
    "password",
    "permission",
    "role",
    "user",
    "admin",
    "tenant",
    "quota",
    "billing",
    "invoice",
    "payment",
    "webhook",
    "queue",
    "worker",
    "scheduler",
    "cron",
    "job",
    "batch",
    "pipeline",
    "artifact",
    "coverage",
    "fixture",
    "mock",
    "stub",
    "assert",
    "expected",
    "actual",
    "mismatch",
    "overflow",
    "underflow",
    "nullable",
    "undefined",
    "segfault",
    "deadlock",
    "race",
    "flaky",
    "intermittent",
    "reproduce",
    "bisect",
    "stacktrace",
    "backtrace",
    "symbol",
    "linker",
    "target",
    "triple",
    "musl",
    "glibc",
    "wasm",
    "arm64",
    "x86",
    "simd",
    "vectorize",
    "prefetch",
    "mmap",
    "fsync",
    "inode",
    "symlink",
    "permissions",
    "chmod",
    "tempdir",
    "sandbox",
    "container",
    "volume",
    "network",
    "socket",
    "port",
    "proxy",
    "tls",
    "certificate",
    "dns",
    "latitude",
    "longitude",
    "weather",
    "temperature",
    "invoice",
    "currency",
    "locale",
    "timezone",
    "calendar",
    "holiday",
    "recurrence",
    "markdown",
    "heading",
    "paragraph",
    "table",
    "changelog",
    "readme",
    "license",
    "contributor",
    "maintainer",
    "roadmap",
    "milestone",
];

const PROJECTS: &[&str] = &[
    "memtrail",
    "tomlette",
    "kana-slug",
    "weather-app",
    "billing-api",
    "infra",
    "dotfiles",
    "website",
    "ml-pipeline",
    "mobile-app",
    "cli-tools",
    "search-service",
    "auth-gateway",
    "data-lake",
    "game-engine",
    "docs",
    "compiler",
    "scheduler",
];

const FOREIGN: &[&str] = &[
    "このテストが失敗する理由を調べて、修正してください。",
    "設定ファイルの読み込みでエラーが発生しています。",
    "数据库连接超时，请检查配置文件中的端口。",
    "请为这个函数添加单元测试。",
    "Проверь, почему падает сборка на CI, и исправь ошибку.",
    "Добавь обработку пустого ввода в функцию разбора.",
    "Peux-tu corriger le test qui échoue dans le module de paiement ?",
    "Bitte refaktoriere die Funktion und entferne den doppelten Code.",
    "¿Puedes revisar por qué el servidor devuelve un error 500?",
    "이 함수의 성능을 개선해 주세요. 테스트도 추가해 주세요.",
];

const LANGS: &[&str] = &["rust", "python", "typescript", "go"];

/// How the corpus is split between agents and sized.
#[derive(Clone, Debug)]
pub struct Options {
    pub seed: u64,
    /// Approximate total bytes of transcripts to write.
    pub bytes: u64,
    /// Median bytes of one session's main transcript (sizes are log-normal around it).
    pub session_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: 1,
            bytes: 10 << 20,
            session_bytes: 96 << 10,
        }
    }
}

/// What [`generate`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub files: u64,
    pub bytes: u64,
    /// Transcript lines written.
    pub lines: u64,
    /// Sessions (main transcripts) and sub-agent transcripts.
    pub sessions: u64,
    pub subagents: u64,
    /// Per agent: (name, files, bytes).
    pub per_agent: Vec<(String, u64, u64)>,
}

/// The agents written, with their share of the bytes.
const SHARES: &[(&str, f64)] = &[
    ("claude", 0.55),
    ("codex", 0.25),
    ("gemini", 0.10),
    ("cursor", 0.10),
];

/// Write a corpus of about `opts.bytes` bytes under `home` (a HOME-like folder: `.claude`,
/// `.codex`, `.gemini`, `.cursor`). Existing files are overwritten.
///
/// Errors: any I/O error creating folders or writing files.
pub fn generate(home: &Path, opts: &Options) -> std::io::Result<Summary> {
    let mut summary = Summary::default();
    for (i, (agent, share)) in SHARES.iter().enumerate() {
        let budget = (opts.bytes as f64 * share) as u64;
        let mut rng = Rng::new(opts.seed.wrapping_mul(31).wrapping_add(i as u64));
        let (mut files, mut bytes) = (0u64, 0u64);
        let mut n = 0u64;
        while bytes < budget.max(1) {
            let target = rng
                .lognormal(opts.session_bytes as f64, 0.9)
                .clamp(2048.0, 16.0 * opts.session_bytes as f64)
                .min((budget - bytes) as f64 + 2048.0) as u64;
            let mut s = SessionGen::new(&mut rng, n, agent);
            let w = match *agent {
                "claude" => s.claude(home, target)?,
                "codex" => s.codex(home, target)?,
                "gemini" => s.gemini(home, target)?,
                _ => s.cursor(home, target)?,
            };
            files += w.files;
            bytes += w.bytes;
            summary.lines += w.lines;
            summary.subagents += w.files - 1;
            summary.sessions += 1;
            n += 1;
        }
        summary.files += files;
        summary.bytes += bytes;
        summary.per_agent.push((agent.to_string(), files, bytes));
    }
    Ok(summary)
}

#[derive(Default)]
struct Written {
    files: u64,
    bytes: u64,
    lines: u64,
}

/// A JSONL file being written, counting its bytes and lines.
struct Jsonl {
    out: BufWriter<File>,
    bytes: u64,
    lines: u64,
}

impl Jsonl {
    fn create(path: &Path) -> std::io::Result<Jsonl> {
        if let Some(d) = path.parent() {
            fs::create_dir_all(d)?;
        }
        Ok(Jsonl {
            out: BufWriter::with_capacity(256 << 10, File::create(path)?),
            bytes: 0,
            lines: 0,
        })
    }
    fn append(path: &Path) -> std::io::Result<Jsonl> {
        let f = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)?;
        Ok(Jsonl {
            out: BufWriter::new(f),
            bytes: 0,
            lines: 0,
        })
    }
    fn line(&mut self, v: &Value) -> std::io::Result<()> {
        let s = serde_json::to_string(v).expect("a JSON value serializes");
        self.out.write_all(s.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.bytes += s.len() as u64 + 1;
        self.lines += 1;
        Ok(())
    }
    /// Flush, and date the file at `last_ms` (ms since the epoch: the time of its last
    /// record, not after now) as the agent's own writes would have: tools that look at
    /// modification times (`status`'s unfinished-line check, `import`'s unchanged files) see
    /// a corpus spread over months, not one written a minute ago.
    fn finish(self, w: &mut Written, last_ms: i64) -> std::io::Result<()> {
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        let now = std::time::SystemTime::now();
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(last_ms.max(0) as u64);
        file.set_modified(at.min(now))?;
        w.files += 1;
        w.bytes += self.bytes;
        w.lines += self.lines;
        Ok(())
    }
}

/// `YYYY-MM-DDThh:mm:ss.mmmZ` for ms since the Unix epoch.
pub fn rfc3339(ms: i64) -> String {
    let (y, mo, d, h, mi, s) = civil(ms.div_euclid(1000));
    format!(
        "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{:03}Z",
        ms.rem_euclid(1000)
    )
}

fn civil(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        (rem % 3600 / 60) as u32,
        (rem % 60) as u32,
    )
}

/// Text pieces drawn from the vocabulary.
pub struct Text<'r>(pub &'r mut Rng);

impl Text<'_> {
    pub fn word(&mut self) -> &'static str {
        WORDS[self.0.zipf(WORDS.len())]
    }
    pub fn ident(&mut self) -> String {
        let a = self.word();
        let b = self.word();
        match self.0.range(0, 2) {
            0 => format!("{a}_{b}"),
            1 => format!("{}{}", cap(a), cap(b)),
            _ => format!("{a}{}", cap(b)),
        }
    }
    pub fn path(&mut self) -> String {
        let ext = *self
            .0
            .pick(&["rs", "py", "ts", "go", "toml", "md", "json", "tsx"]);
        let depth = self.0.range(0, 2);
        let mut p = String::from(
            *self
                .0
                .pick(&["src", "lib", "tests", "app", "crates/core/src"]),
        );
        for _ in 0..depth {
            p.push('/');
            p.push_str(self.word());
        }
        format!("{p}/{}.{ext}", self.ident().to_lowercase())
    }
    pub fn sentence(&mut self, words: usize) -> String {
        let mut s = String::new();
        for i in 0..words {
            if i > 0 {
                s.push(' ');
            }
            match self.0.range(0, 19) {
                0 => s.push_str(&format!("`{}`", self.ident())),
                1 => s.push_str(&self.path()),
                _ => s.push_str(self.word()),
            }
        }
        s.push('.');
        s
    }
    pub fn prose(&mut self, words: usize) -> String {
        let mut s = String::new();
        let mut left = words;
        while left > 0 {
            let n = self.0.range(4, 18).min(left);
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(&cap(&self.sentence(n)));
            left -= n;
        }
        if self.0.chance(0.08) {
            s.push(' ');
            s.push_str(FOREIGN[self.0.range(0, FOREIGN.len() - 1)]);
        }
        s
    }
    pub fn code(&mut self, lines: usize) -> (String, String) {
        let lang = *self.0.pick(LANGS);
        let mut s = String::new();
        for i in 0..lines {
            let (a, b, c) = (self.ident(), self.ident(), self.word());
            let line = match (lang, i % 4) {
                ("rust", 0) => format!("pub fn {a}(&self, {c}: &str) -> Result<{}> {{", cap(&b)),
                ("rust", 1) => format!("    let {b} = self.{a}.get({c:?})?;"),
                ("rust", 2) => format!("    {b}.{c}().map_err(Error::{})?", cap(c)),
                ("rust", _) => "}".to_string(),
                ("python", 0) => format!("def {a}(self, {c}):"),
                ("python", 1) => format!("    {b} = self.{a}.get(\"{c}\")"),
                ("python", 2) => format!("    if not {b}: raise ValueError(\"{c}\")"),
                ("python", _) => format!("    return {b}"),
                ("typescript", 0) => format!("export async function {a}({c}: string) {{"),
                ("typescript", 1) => format!("  const {b} = await this.{a}.get('{c}');"),
                ("typescript", 2) => format!("  if (!{b}) throw new Error('{c}');"),
                ("typescript", _) => "}".to_string(),
                (_, 0) => format!("func {}({c} string) error {{", cap(&a)),
                (_, 1) => format!("\t{b}, err := s.{a}.Get(\"{c}\")"),
                (_, 2) => "\tif err != nil { return err }".to_string(),
                (_, _) => "}".to_string(),
            };
            s.push_str(&line);
            s.push('\n');
        }
        (lang.to_string(), s)
    }
    /// An assistant answer: prose, sometimes with a fenced code block.
    pub fn answer(&mut self) -> String {
        let words = self.0.lognormal(35.0, 0.8).clamp(3.0, 400.0) as usize;
        let mut s = self.prose(words);
        if self.0.chance(0.2) {
            let n = self.0.range(4, 24);
            let (lang, code) = self.code(n);
            s.push_str(&format!("\n\n```{lang}\n{code}```\n"));
        }
        s
    }
    pub fn prompt(&mut self) -> String {
        if self.0.chance(0.12) {
            return FOREIGN[self.0.range(0, FOREIGN.len() - 1)].to_string();
        }
        let words = self.0.lognormal(18.0, 0.7).clamp(2.0, 200.0) as usize;
        self.prose(words)
    }
    /// A tool output of about `bytes` bytes, shaped like the tool's.
    pub fn output(&mut self, tool: &str, bytes: usize) -> String {
        let mut s = String::with_capacity(bytes + 128);
        let mut n = 1;
        while s.len() < bytes {
            let line = match tool {
                "Read" => {
                    let (_, c) = self.code(4);
                    c.lines()
                        .map(|l| {
                            n += 1;
                            format!("{:>6}\t{l}\n", n - 1)
                        })
                        .collect()
                }
                "Grep" => format!(
                    "{}:{}: {}\n",
                    self.path(),
                    self.0.range(1, 900),
                    self.sentence(6)
                ),
                _ => match self.0.range(0, 5) {
                    0 => format!(
                        "test {}::tests::{} ... {}\n",
                        self.word(),
                        self.ident(),
                        if self.0.chance(0.9) { "ok" } else { "FAILED" }
                    ),
                    1 => format!(
                        "   Compiling {} v0.{}.{}\n",
                        self.ident(),
                        self.0.range(1, 30),
                        self.0.range(0, 9)
                    ),
                    2 => format!(
                        "warning: unused variable: `{}`\n --> {}:{}:9\n",
                        self.ident(),
                        self.path(),
                        self.0.range(1, 400)
                    ),
                    3 => format!("{} {}\n", self.0.hex(7), self.sentence(7)),
                    _ => format!("{}\n", self.path()),
                },
            };
            s.push_str(&line);
        }
        s
    }
}

fn cap(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The tools of a turn: (Claude name, Gemini name, Cursor name).
const TOOLS: &[(&str, &str, &str)] = &[
    ("Bash", "run_shell_command", "Shell"),
    ("Read", "read_file", "Read"),
    ("Grep", "search_file_content", "Grep"),
    ("Edit", "replace", "StrReplace"),
    ("Write", "write_file", "Write"),
];

/// One session being generated.
struct SessionGen<'r> {
    rng: &'r mut Rng,
    project: String,
    cwd: String,
    /// ms since the epoch of the next record.
    now: i64,
}

/// Size of a tool output: log-normal, median ~500 bytes, a tail up to 60 KB.
fn output_size(rng: &mut Rng) -> usize {
    rng.lognormal(500.0, 1.4).clamp(20.0, 60_000.0) as usize
}

impl<'r> SessionGen<'r> {
    fn new(rng: &'r mut Rng, n: u64, _agent: &str) -> Self {
        let project = rng.pick(PROJECTS).to_string();
        let cwd = format!("/home/dev/src/{project}");
        // Sessions spread over two years from 2025-01-01, in order.
        let now = 1_735_689_600_000 + n as i64 * 1_800_000 + rng.range(0, 1_000_000) as i64;
        SessionGen {
            rng,
            project,
            cwd,
            now,
        }
    }
    fn tick(&mut self) -> String {
        self.now += self.rng.range(200, 20_000) as i64;
        rfc3339(self.now)
    }
    /// A tool call: (tool index, input, output).
    fn tool_call(&mut self) -> (usize, Value, String) {
        let i = self.rng.zipf(TOOLS.len());
        let size = output_size(self.rng);
        let mut t = Text(self.rng);
        let (input, output) = match i {
            0 => {
                let cmd = format!(
                    "{} {}",
                    t.0.pick(&[
                        "cargo test",
                        "cargo build",
                        "git log --oneline -20",
                        "npm test",
                        "pytest -q",
                        "ls -la"
                    ]),
                    t.word()
                );
                (
                    json!({"command": cmd, "description": t.sentence(5)}),
                    t.output("Bash", size),
                )
            }
            1 => (
                json!({"file_path": format!("{}/{}", self.cwd, t.path())}),
                t.output("Read", size),
            ),
            2 => (
                json!({"pattern": t.ident(), "path": self.cwd, "output_mode": "content"}),
                t.output("Grep", size),
            ),
            3 => {
                let (_, old) = t.code(2);
                let (_, new) = t.code(3);
                (
                    json!({"file_path": format!("{}/{}", self.cwd, t.path()), "old_string": old, "new_string": new}),
                    "The file has been updated.".to_string(),
                )
            }
            _ => {
                let n = t.0.range(5, 40);
                let (_, c) = t.code(n);
                (
                    json!({"file_path": format!("{}/{}", self.cwd, t.path()), "content": c}),
                    "File created successfully.".to_string(),
                )
            }
        };
        (i, input, output)
    }

    // ---- Claude Code -----------------------------------------------------------------------

    fn claude(&mut self, home: &Path, target: u64) -> std::io::Result<Written> {
        let sid = self.rng.uuid();
        let slug = self.cwd.replace(['/', '.'], "-");
        let dir = home.join(".claude/projects").join(&slug);
        let mut w = Written::default();
        let mut f = Jsonl::create(&dir.join(format!("{sid}.jsonl")))?;
        let mut c = ClaudeCtx {
            sid: sid.clone(),
            agent_id: None,
            parent: Value::Null,
            model: "claude-opus-4-6",
        };
        while f.bytes < target {
            self.claude_turn(&mut f, &mut c, Some((&dir, &mut w)))?;
        }
        f.finish(&mut w, self.now)?;
        Ok(w)
    }

    fn claude_turn(
        &mut self,
        f: &mut Jsonl,
        c: &mut ClaudeCtx,
        mut subagents: Option<(&Path, &mut Written)>,
    ) -> std::io::Result<()> {
        let prompt = Text(self.rng).prompt();
        let ts = self.tick();
        c.user(self, f, json!(prompt), None, &ts)?;
        let steps = self.rng.lognormal(3.0, 0.8).clamp(0.0, 25.0) as usize;
        for _ in 0..steps {
            let msg_id = format!("msg_01{}", self.rng.alnum(22));
            if self.rng.chance(0.3) {
                let n = self.rng.range(8, 60);
                let th = Text(self.rng).prose(n);
                let sig = self.rng.alnum(200);
                c.assistant(
                    self,
                    f,
                    &msg_id,
                    json!({"type": "thinking", "thinking": th, "signature": sig}),
                )?;
            }
            if self.rng.chance(0.4) {
                let n = self.rng.range(4, 20);
                let t = Text(self.rng).sentence(n);
                c.assistant(self, f, &msg_id, json!({"type": "text", "text": t}))?;
            }
            let call_id = format!("toolu_01{}", self.rng.alnum(22));
            let spawn = subagents.is_some() && self.rng.chance(0.04);
            if spawn {
                let (dir, w) = subagents.as_mut().expect("checked");
                let task = Text(self.rng).prompt();
                let description = Text(self.rng).sentence(3);
                c.assistant(self, f, &msg_id, json!({"type": "tool_use", "id": call_id, "name": "Task",
                    "input": {"description": description, "prompt": task, "subagent_type": "Explore"}}))?;
                let agent_id = self.rng.hex(7);
                let mut sf = Jsonl::create(
                    &dir.join(&c.sid)
                        .join("subagents")
                        .join(format!("agent-{agent_id}.jsonl")),
                )?;
                let mut sc = ClaudeCtx {
                    sid: c.sid.clone(),
                    agent_id: Some(agent_id.clone()),
                    parent: Value::Null,
                    model: "claude-haiku-4-5-20251001",
                };
                let sub_target = self.rng.lognormal(20_000.0, 0.7).clamp(3000.0, 200_000.0) as u64;
                while sf.bytes < sub_target {
                    self.claude_turn(&mut sf, &mut sc, None)?;
                }
                sf.finish(w, self.now)?;
                let report = Text(self.rng).answer();
                let ts = self.tick();
                c.user(self, f, json!([{"tool_use_id": call_id, "type": "tool_result", "content": [
                    {"type": "text", "text": report},
                    {"type": "text", "text": format!("agentId: {agent_id} (for resuming to continue this agent's work if needed)")}]}]),
                    Some(json!({"status": "completed", "prompt": task, "agentId": agent_id, "totalDurationMs": 17000, "totalTokens": 9120, "totalToolUseCount": 3})), &ts)?;
                continue;
            }
            let (i, input, output) = self.tool_call();
            let name = TOOLS[i].0;
            c.assistant(
                self,
                f,
                &msg_id,
                json!({"type": "tool_use", "id": call_id, "name": name, "input": input}),
            )?;
            let is_error = name == "Bash" && self.rng.chance(0.08);
            let tur = match name {
                "Bash" => {
                    json!({"stdout": output, "stderr": "", "interrupted": false, "isImage": false})
                }
                "Read" => {
                    json!({"type": "text", "file": {"filePath": input["file_path"], "content": output, "numLines": output.lines().count(), "startLine": 1, "totalLines": output.lines().count()}})
                }
                _ => {
                    json!({"filePath": input.get("file_path").cloned().unwrap_or(Value::Null), "mode": "content", "numLines": output.lines().count()})
                }
            };
            let ts = self.tick();
            c.user(self, f, json!([{"tool_use_id": call_id, "type": "tool_result", "content": output, "is_error": is_error}]), Some(tur), &ts)?;
        }
        let msg_id = format!("msg_01{}", self.rng.alnum(22));
        let a = Text(self.rng).answer();
        c.assistant(self, f, &msg_id, json!({"type": "text", "text": a}))?;
        Ok(())
    }

    // ---- Codex CLI -------------------------------------------------------------------------

    fn codex(&mut self, home: &Path, target: u64) -> std::io::Result<Written> {
        let thread = self.rng.uuid();
        let ts0 = self.tick();
        let (y, mo, d, h, mi, s) = civil(self.now / 1000);
        let path = home.join(format!(
            ".codex/sessions/{y:04}/{mo:02}/{d:02}/rollout-{y:04}-{mo:02}-{d:02}T{h:02}-{mi:02}-{s:02}-{thread}.jsonl"
        ));
        let mut f = Jsonl::create(&path)?;
        let cwd = self.cwd.clone();
        f.line(&json!({"timestamp": ts0, "type": "session_meta", "payload": {"id": thread, "timestamp": ts0, "cwd": cwd,
            "originator": "codex_cli_rs", "cli_version": "0.98.0", "source": "cli", "model_provider": "openai",
            "base_instructions": {"text": "You are Codex, based on GPT-5. You are running as a coding agent in the Codex CLI on a user's computer."},
            "git": {"commit_hash": self.rng.hex(40), "branch": "main", "repository_url": format!("https://github.com/example/{}.git", self.project)}}}))?;
        f.line(&json!({"timestamp": ts0, "type": "response_item", "payload": {"type": "message", "role": "developer", "content": [{"type": "input_text",
            "text": "<permissions instructions>\nFilesystem sandboxing defines which files can be read or written. `sandbox_mode` is `workspace-write`.\nApproval policy is currently on-request.\n</permissions instructions>"}]}}))?;
        while f.bytes < target {
            let turn = self.rng.uuid();
            let ts = self.tick();
            f.line(&json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "task_started", "turn_id": turn, "model_context_window": 272000, "collaboration_mode_kind": "default"}}))?;
            f.line(&json!({"timestamp": ts, "type": "turn_context", "payload": {"turn_id": turn, "cwd": cwd, "approval_policy": "on-request",
                "sandbox_policy": {"type": "workspace-write", "writable_roots": [cwd], "network_access": false}, "model": "gpt-5.2-codex", "effort": "medium", "summary": "auto"}}))?;
            let prompt = Text(self.rng).prompt();
            f.line(&json!({"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}}))?;
            f.line(&json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "user_message", "message": prompt, "images": [], "local_images": [], "text_elements": []}}))?;
            let steps = self.rng.lognormal(3.0, 0.8).clamp(0.0, 25.0) as usize;
            for _ in 0..steps {
                let ts = self.tick();
                if self.rng.chance(0.5) {
                    let n = self.rng.range(3, 8);
                    let r = format!("**{}**", cap(&Text(self.rng).sentence(n)));
                    f.line(&json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "agent_reasoning", "text": r}}))?;
                    let enc = format!("gAAAAA{}", self.rng.alnum(300));
                    f.line(&json!({"timestamp": ts, "type": "response_item", "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": r}], "content": null, "encrypted_content": enc}}))?;
                }
                if self.rng.chance(0.3) {
                    let n = self.rng.range(5, 20);
                    let m = Text(self.rng).sentence(n);
                    f.line(&json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "agent_message", "message": m, "phase": "commentary"}}))?;
                    f.line(&json!({"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": m}], "phase": "commentary"}}))?;
                }
                let call = format!("call_{}", self.rng.alnum(24));
                let (i, input, output) = self.tool_call();
                let cmd = match i {
                    0 => input["command"].as_str().unwrap_or("ls").to_string(),
                    1 => format!(
                        "sed -n '1,200p' {}",
                        input["file_path"].as_str().unwrap_or("")
                    ),
                    2 => format!("rg -n {} {}", input["pattern"].as_str().unwrap_or(""), cwd),
                    _ => format!("cat {}", input["file_path"].as_str().unwrap_or("")),
                };
                let args = json!({"cmd": cmd, "workdir": cwd, "yield_time_ms": 10000}).to_string();
                f.line(&json!({"timestamp": ts, "type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": args, "call_id": call}}))?;
                let code = if self.rng.chance(0.08) { 1 } else { 0 };
                let ts = self.tick();
                let out = format!(
                    "Chunk ID: {}\nWall time: {:.4} seconds\nProcess exited with code {code}\nOriginal token count: {}\nOutput:\n{output}",
                    self.rng.hex(6),
                    self.rng.f64() * 5.0,
                    output.len() / 4
                );
                f.line(&json!({"timestamp": ts, "type": "response_item", "payload": {"type": "function_call_output", "call_id": call, "output": out}}))?;
            }
            let ts = self.tick();
            let a = Text(self.rng).answer();
            f.line(&json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "agent_message", "message": a, "phase": "final_answer"}}))?;
            f.line(&json!({"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": a}], "phase": "final_answer"}}))?;
            f.line(&json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "token_count", "info": null, "rate_limits": {"limit_id": "codex", "limit_name": null,
                "primary": {"used_percent": 12.0, "window_minutes": 300, "resets_at": 1773489600}, "secondary": {"used_percent": 3.0, "window_minutes": 10080, "resets_at": 1773964800},
                "credits": {"has_credits": false, "unlimited": false, "balance": null}, "plan_type": null}}}))?;
            f.line(&json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "task_complete", "turn_id": turn, "last_agent_message": a}}))?;
        }
        let mut w = Written::default();
        f.finish(&mut w, self.now)?;
        Ok(w)
    }

    // ---- Gemini CLI ------------------------------------------------------------------------

    fn gemini(&mut self, home: &Path, target: u64) -> std::io::Result<Written> {
        let sid = self.rng.uuid();
        let hash = self.rng.hex(64);
        let ts0 = self.tick();
        let (y, mo, d, h, mi, _) = civil(self.now / 1000);
        let path = home.join(format!(
            ".gemini/tmp/{hash}/chats/session-{y:04}-{mo:02}-{d:02}T{h:02}-{mi:02}-{}.jsonl",
            &sid[..8]
        ));
        let mut f = Jsonl::create(&path)?;
        f.line(&json!({"sessionId": sid, "projectHash": hash, "startTime": ts0, "lastUpdated": ts0, "kind": "main"}))?;
        while f.bytes < target {
            let ts = self.tick();
            let id = self.rng.uuid();
            let p = Text(self.rng).prompt();
            f.line(&json!({"id": id, "timestamp": ts, "type": "user", "content": [{"text": p}]}))?;
            f.line(&json!({"$set": {"lastUpdated": ts}}))?;
            let steps = self.rng.lognormal(2.0, 0.8).clamp(0.0, 20.0) as usize;
            for k in 0..=steps {
                let ts = self.tick();
                let id = self.rng.uuid();
                let tokens = json!({"input": self.rng.range(2000, 90000), "output": self.rng.range(10, 900), "cached": 0, "thoughts": 64, "tool": 0, "total": 9000});
                let thought = json!([{"subject": cap(&Text(self.rng).sentence(3)), "description": Text(self.rng).sentence(12), "timestamp": ts}]);
                if k == steps {
                    let a = Text(self.rng).answer();
                    f.line(&json!({"id": id, "timestamp": ts, "type": "gemini", "content": a, "thoughts": thought, "tokens": tokens, "model": "gemini-2.5-pro"}))?;
                } else {
                    let (i, input, output) = self.tool_call();
                    let name = TOOLS[i].1;
                    let call_id = format!("{name}-{}-{}", self.now, self.rng.hex(13));
                    let ts2 = self.tick();
                    f.line(&json!({"id": id, "timestamp": ts, "type": "gemini", "content": "", "thoughts": thought, "tokens": tokens, "model": "gemini-2.5-pro",
                        "toolCalls": [{"id": call_id, "name": name, "args": input, "result": [{"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}],
                        "status": "success", "timestamp": ts2, "resultDisplay": "", "description": "", "displayName": name, "renderOutputAsMarkdown": false}]}))?;
                }
                f.line(&json!({"$set": {"lastUpdated": ts}}))?;
            }
        }
        let mut w = Written::default();
        f.finish(&mut w, self.now)?;
        Ok(w)
    }

    // ---- Cursor ----------------------------------------------------------------------------

    fn cursor(&mut self, home: &Path, target: u64) -> std::io::Result<Written> {
        let id = self.rng.uuid();
        let slug = self.cwd.trim_start_matches('/').replace(['/', '.'], "-");
        let path = home.join(format!(
            ".cursor/projects/{slug}/agent-transcripts/{id}.jsonl"
        ));
        let mut f = Jsonl::create(&path)?;
        while f.bytes < target {
            self.tick();
            let (_, mo, d, h, mi, _) = civil(self.now / 1000);
            let month = [
                "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
            ][mo as usize - 1];
            let (h12, ampm) = (
                if h % 12 == 0 { 12 } else { h % 12 },
                if h < 12 { "AM" } else { "PM" },
            );
            let p = Text(self.rng).prompt();
            let text = format!(
                "<timestamp>Monday, {month} {d}, 2026, {h12}:{mi:02} {ampm} GMT+1</timestamp>\n<user_query>\n{p}\n</user_query>"
            );
            f.line(
                &json!({"role": "user", "message": {"content": [{"type": "text", "text": text}]}}),
            )?;
            let steps = self.rng.lognormal(3.0, 0.8).clamp(0.0, 25.0) as usize;
            for _ in 0..steps {
                let (i, input, _) = self.tool_call();
                let mut content = Vec::new();
                if self.rng.chance(0.4) {
                    let n = self.rng.range(4, 16);
                    content.push(json!({"type": "text", "text": Text(self.rng).sentence(n)}));
                }
                let input = match i {
                    0 => json!({"command": input["command"]}),
                    1 => json!({"path": input["file_path"]}),
                    2 => json!({"pattern": input["pattern"], "path": input["path"]}),
                    3 => {
                        json!({"path": input["file_path"], "old_string": input["old_string"], "new_string": input["new_string"]})
                    }
                    _ => json!({"path": input["file_path"], "contents": input["content"]}),
                };
                content.push(json!({"type": "tool_use", "name": TOOLS[i].2, "input": input}));
                f.line(&json!({"role": "assistant", "message": {"content": content}}))?;
            }
            let a = Text(self.rng).answer();
            f.line(&json!({"role": "assistant", "message": {"content": [{"type": "text", "text": a}]}}))?;
            f.line(&json!({"type": "turn_ended", "status": "success"}))?;
        }
        let mut w = Written::default();
        f.finish(&mut w, self.now)?;
        Ok(w)
    }
}

/// Claude Code line envelope state: the session, the sub-agent id, the previous line's uuid.
struct ClaudeCtx {
    sid: String,
    agent_id: Option<String>,
    parent: Value,
    model: &'static str,
}

impl ClaudeCtx {
    fn envelope(
        &mut self,
        g: &mut SessionGen<'_>,
        kind: &str,
        ts: &str,
    ) -> serde_json::Map<String, Value> {
        let uuid = g.rng.uuid();
        let mut m = serde_json::Map::new();
        m.insert("parentUuid".into(), self.parent.clone());
        m.insert("isSidechain".into(), json!(self.agent_id.is_some()));
        m.insert("userType".into(), json!("external"));
        m.insert("cwd".into(), json!(g.cwd));
        m.insert("sessionId".into(), json!(self.sid));
        m.insert("version".into(), json!("2.1.49"));
        m.insert("gitBranch".into(), json!("main"));
        if let Some(a) = &self.agent_id {
            m.insert("agentId".into(), json!(a));
        }
        m.insert("type".into(), json!(kind));
        m.insert("uuid".into(), json!(uuid));
        m.insert("timestamp".into(), json!(ts));
        self.parent = json!(uuid);
        m
    }
    fn user(
        &mut self,
        g: &mut SessionGen<'_>,
        f: &mut Jsonl,
        content: Value,
        tool_use_result: Option<Value>,
        ts: &str,
    ) -> std::io::Result<()> {
        let mut m = self.envelope(g, "user", ts);
        m.insert(
            "message".into(),
            json!({"role": "user", "content": content}),
        );
        if let Some(t) = tool_use_result {
            m.insert("toolUseResult".into(), t);
        }
        f.line(&Value::Object(m))
    }
    fn assistant(
        &mut self,
        g: &mut SessionGen<'_>,
        f: &mut Jsonl,
        msg_id: &str,
        block: Value,
    ) -> std::io::Result<()> {
        let ts = g.tick();
        let mut m = self.envelope(g, "assistant", &ts);
        m.insert("message".into(), json!({"model": self.model, "id": msg_id, "type": "message", "role": "assistant", "content": [block],
            "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 3, "cache_creation_input_tokens": 512, "cache_read_input_tokens": 14210,
            "cache_creation": {"ephemeral_5m_input_tokens": 512, "ephemeral_1h_input_tokens": 0}, "output_tokens": 1, "service_tier": "standard"}}));
        m.insert(
            "requestId".into(),
            json!(format!("req_011{}", g.rng.alnum(21))),
        );
        f.line(&Value::Object(m))
    }
}

/// Append one Claude Code turn of about `bytes` bytes (a prompt, tool calls with their
/// results, an answer) to the main transcript `path` of session `session_id`, as Claude Code
/// does between two Stop hooks. Ids are drawn from `seed` and the file's current length, so
/// every appended turn is new. Returns the bytes appended.
///
/// Errors: the file cannot be opened for appending or written.
pub fn append_claude_turn(
    path: &Path,
    session_id: &str,
    bytes: u64,
    seed: u64,
) -> std::io::Result<u64> {
    let len = fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut rng = Rng::new(seed ^ len.wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut g = SessionGen::new(&mut rng, 0, "claude");
    g.now = 1_800_000_000_000 + (len / 10) as i64;
    let mut f = Jsonl::append(path)?;
    let mut c = ClaudeCtx {
        sid: session_id.to_string(),
        agent_id: None,
        parent: Value::Null,
        model: "claude-opus-4-6",
    };
    let prompt = Text(g.rng).prompt();
    let ts = g.tick();
    c.user(&mut g, &mut f, json!(prompt), None, &ts)?;
    while f.bytes + 600 < bytes {
        let msg_id = format!("msg_01{}", g.rng.alnum(22));
        let call_id = format!("toolu_01{}", g.rng.alnum(22));
        let want = ((bytes - f.bytes) / 2).clamp(100, 4000) as usize;
        let out = Text(g.rng).output("Bash", want);
        c.assistant(&mut g, &mut f, &msg_id, json!({"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "cargo test", "description": "Run the tests"}}))?;
        let ts = g.tick();
        c.user(&mut g, &mut f, json!([{"tool_use_id": call_id, "type": "tool_result", "content": out, "is_error": false}]), None, &ts)?;
    }
    let msg_id = format!("msg_01{}", g.rng.alnum(22));
    let a = Text(g.rng).sentence(12);
    c.assistant(&mut g, &mut f, &msg_id, json!({"type": "text", "text": a}))?;
    f.out.flush()?;
    Ok(f.bytes)
}

/// The main Claude Code transcripts under `home`, sorted by path.
pub fn claude_main_transcripts(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(projects) = fs::read_dir(home.join(".claude/projects")) {
        for p in projects.flatten() {
            if let Ok(files) = fs::read_dir(p.path()) {
                out.extend(
                    files
                        .flatten()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|e| e == "jsonl")),
                );
            }
        }
    }
    out.sort();
    out
}

/// A snapshot input of `n` stored events (files edited, prompts, errors, git actions, tasks in
/// turn), for the snapshot benchmark.
pub fn snapshot_input(n: usize) -> memtrail_runtime::snapshot::SnapshotInput {
    use memtrail_runtime::events::{Category, Event, StoredEvent};
    let events = (0..n as i64)
        .map(|i| StoredEvent {
            id: i + 1,
            seq: i / 3,
            message_id: format!("m{}", i / 3),
            event: Event {
                category: [
                    Category::File,
                    Category::Prompt,
                    Category::Error,
                    Category::Git,
                    Category::Task,
                ][(i % 5) as usize],
                action: ["edited", "submitted", "tool", "commit", "created"][(i % 5) as usize]
                    .to_string(),
                priority: (i % 4 + 1) as u8,
                subject: format!("src/module_{}/file_{}.rs", i % 97, i % 13),
                detail: (i % 3 == 0).then(|| format!("error[E0{}]: mismatched types", i % 999)),
                call_id: Some(format!("toolu_{i}")),
                tool: Some("Edit".to_string()),
                ts: Some(1_760_000_000_000 + i * 1000),
            },
        })
        .collect();
    memtrail_runtime::snapshot::SnapshotInput {
        agent: "claude".into(),
        session_id: "bench".into(),
        project_dir: Some("/home/dev/src/memtrail".into()),
        title: Some("benchmark session".into()),
        git_branch: Some("main".into()),
        events,
    }
}

/// Write into `store` one Claude Code session (`agent` claude, id `snapshot-bench`) whose
/// messages give `n` stored events (each message an `Edit` of its own file: one `file edited`
/// event each), for the whole-path snapshot benchmark. Returns the session's row id.
pub fn store_snapshot_session(
    store: &mut memtrail_runtime::Store,
    n: usize,
) -> memtrail_runtime::Result<i64> {
    use memtrail_adapters::{
        Agent, Kind, Message, Part, Record, Role, SessionMeta, SessionRef, ToolCall,
    };
    store.write(|w| {
        let sid = w.upsert_session(
            &SessionRef {
                agent: Agent::Claude,
                external_id: "snapshot-bench".into(),
                parent_external_id: None,
            },
            &SessionMeta {
                project_dir: Some("/home/dev/src/memtrail".into()),
                title: Some("snapshot benchmark session".into()),
                ..SessionMeta::default()
            },
            &Standard,
        )?;
        let records = (0..n)
            .map(|i| {
                Record::Message(Message {
                    id: format!("m{i}"),
                    role: Role::Assistant,
                    kind: Kind::ToolCall,
                    parts: vec![Part::ToolCall(ToolCall {
                        id: format!("toolu_{i}"),
                        name: "Edit".into(),
                        tool: "edit".into(),
                        input: json!({
                            "file_path": format!("/home/dev/src/memtrail/src/module_{}/file_{i}.rs", i % 97),
                            "old_string": "a",
                            "new_string": "b"
                        }),
                        output: Some("The file has been updated.".into()),
                        is_error: false,
                        exit_code: None,
                    })],
                    timestamp: Some(1_760_000_000_000 + i as i64 * 1000),
                    model: None,
                })
            })
            .collect();
        w.apply(sid, records)?;
        Ok(sid)
    })
}
