//! Home and XDG base directories, resolved from the environment on every call so that tests can
//! point `HOME` and `XDG_*` at a sandbox.

use std::path::PathBuf;

/// The user's home directory: `$HOME` when set and non-empty, else the platform's answer.
pub fn home_dir() -> PathBuf {
    match std::env::var_os("HOME") {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => dirs::home_dir().unwrap_or_else(|| PathBuf::from(".")),
    }
}

/// An absolute path from an environment variable, or `None` when unset, empty or relative
/// (the XDG Base Directory spec says relative values are invalid and must be ignored).
pub fn env_abs(var: &str) -> Option<PathBuf> {
    let v = std::env::var_os(var)?;
    let p = PathBuf::from(v);
    if p.is_absolute() { Some(p) } else { None }
}

/// `$XDG_DATA_HOME`, default `~/.local/share`.
pub fn xdg_data_home() -> PathBuf {
    env_abs("XDG_DATA_HOME").unwrap_or_else(|| home_dir().join(".local/share"))
}

/// `$XDG_STATE_HOME`, default `~/.local/state`.
pub fn xdg_state_home() -> PathBuf {
    env_abs("XDG_STATE_HOME").unwrap_or_else(|| home_dir().join(".local/state"))
}

/// `$XDG_CONFIG_HOME`, default `~/.config`.
pub fn xdg_config_home() -> PathBuf {
    env_abs("XDG_CONFIG_HOME").unwrap_or_else(|| home_dir().join(".config"))
}

/// The bytes of a small file an agent keeps beside its transcripts (a project registry, a
/// `.project_root` marker, a settings file), read by hooks: opened without blocking (a FIFO
/// returns at once) and read only when it is a regular file of at most `max` bytes, so that a
/// FIFO or a link to `/dev/zero` in its place can neither hang a hook nor fill its memory.
///
/// Errors: the file cannot be opened or read (`NotFound` when missing); `InvalidInput` when it
/// is not a regular file; `FileTooLarge` when it is larger than `max`.
pub fn read_small(path: &std::path::Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("{} is larger than {max} bytes", path.display()),
        ));
    }
    Ok(bytes)
}

/// [`read_small`] as UTF-8 text.
///
/// Errors: [`read_small`]'s; `InvalidData` when the bytes are not UTF-8.
pub fn read_small_text(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    String::from_utf8(read_small(path, max)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Decode `%XX` escapes of a `file://` URI path (as VS Code and Cursor write workspace folders);
/// invalid escapes are kept as they are, invalid UTF-8 becomes U+FFFD.
pub fn percent_decode(s: &str) -> String {
    let hex = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// At most this many entries of a folder are looked at by [`newest_in`] (one `stat` each).
pub const NEWEST_SCAN_CAP: usize = 4096;

/// The file written last (modification time) among those `pick` names for the first
/// [`NEWEST_SCAN_CAP`] entries `dir` lists (`pick` gives an entry's candidate file, or `None`
/// to pass over it); `None` when there is none or `dir` cannot be listed. Used by agents that
/// write a turn's end after their hooks ran: a session's start also reads the session before.
pub fn newest_in(
    dir: &std::path::Path,
    pick: impl Fn(&std::fs::DirEntry) -> Option<PathBuf>,
) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .take(NEWEST_SCAN_CAP)
        .filter_map(|e| {
            let f = pick(&e)?;
            let modified = std::fs::metadata(&f).ok()?.modified().ok()?;
            Some((modified, f))
        })
        .max()
        .map(|(_, f)| f)
}

/// What a directory entry is, symbolic links followed, from the type `readdir` returned
/// (`d_type`: no `stat`) when the file system gives one; a link or an unknown type costs one
/// `stat`. `None` when that `stat` fails (a dangling link). Discovery lists thousands of
/// transcripts: one `stat` each was a third of `memtrail status`'s system calls.
pub fn entry_type(entry: &std::fs::DirEntry) -> Option<std::fs::FileType> {
    match entry.file_type() {
        Ok(t) if !t.is_symlink() => Some(t),
        _ => std::fs::metadata(entry.path()).ok().map(|m| m.file_type()),
    }
}

/// [`entry_type`] is a directory.
pub fn entry_is_dir(entry: &std::fs::DirEntry) -> bool {
    entry_type(entry).is_some_and(|t| t.is_dir())
}

/// [`entry_type`] is a regular file.
pub fn entry_is_file(entry: &std::fs::DirEntry) -> bool {
    entry_type(entry).is_some_and(|t| t.is_file())
}

/// Sort paths in [`Path`](std::path::Path)'s order (component by component) without parsing
/// components: bytes compared with `/` below every other byte give the same order for the
/// paths discovery makes (no `.` components, no repeated `/`), at a fraction of the cost
/// (sorting the 1 GB bench corpus's 7,487 Claude Code transcripts by `Path` was a tenth of
/// `memtrail status`'s CPU time).
pub fn sort_paths(paths: &mut [PathBuf]) {
    use std::os::unix::ffi::OsStrExt;
    // `/` becomes NUL, which no file name holds: the keys compare as plain bytes (memcmp).
    paths.sort_by_cached_key(|p| {
        let mut k = p.as_os_str().as_bytes().to_vec();
        for b in &mut k {
            if *b == b'/' {
                *b = 0;
            }
        }
        k
    });
}

/// What a listed entry is, as `readdir` (or `lstat` when it gives no type) says: a symbolic
/// link is not followed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemKind {
    File,
    Dir,
    Link,
    Other,
}

impl ItemKind {
    fn of(t: std::fs::FileType) -> ItemKind {
        if t.is_symlink() {
            ItemKind::Link
        } else if t.is_dir() {
            ItemKind::Dir
        } else if t.is_file() {
            ItemKind::File
        } else {
            ItemKind::Other
        }
    }

    fn code(self) -> u8 {
        match self {
            ItemKind::File => 0,
            ItemKind::Dir => 1,
            ItemKind::Link => 2,
            ItemKind::Other => 3,
        }
    }

    fn from_code(c: u8) -> Option<ItemKind> {
        Some(match c {
            0 => ItemKind::File,
            1 => ItemKind::Dir,
            2 => ItemKind::Link,
            3 => ItemKind::Other,
            _ => return None,
        })
    }
}

/// One entry of a folder listed by [`list_dir`].
#[derive(Debug, Clone)]
pub struct Listed {
    path: PathBuf,
    kind: ItemKind,
}

impl Listed {
    /// The entry's path (the folder joined with its name).
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The entry's name.
    pub fn file_name(&self) -> &std::ffi::OsStr {
        self.path.file_name().unwrap_or_default()
    }

    /// A directory, symbolic links followed (a link costs one `stat`, as in [`entry_type`]).
    pub fn is_dir(&self) -> bool {
        match self.kind {
            ItemKind::Dir => true,
            ItemKind::Link => std::fs::metadata(&self.path).is_ok_and(|m| m.is_dir()),
            _ => false,
        }
    }

    /// A regular file, symbolic links followed.
    pub fn is_file(&self) -> bool {
        match self.kind {
            ItemKind::File => true,
            ItemKind::Link => std::fs::metadata(&self.path).is_ok_and(|m| m.is_file()),
            _ => false,
        }
    }

    /// A directory itself, not a link to one (`DirEntry::file_type().is_dir()`).
    pub fn is_dir_entry(&self) -> bool {
        self.kind == ItemKind::Dir
    }
}

/// The entries of `dir` (`read_dir`, in its order), or, while a [`DirCache`] is in use on this
/// thread ([`DirCache::run`]), the entries it kept for `dir` when `dir` has not changed since
/// (one `stat` instead of reading the folder). Discovery lists folders through this.
///
/// Errors: those of `read_dir` (or of the `stat` with a cache).
pub fn list_dir(dir: &std::path::Path) -> std::io::Result<Vec<Listed>> {
    let cache = DIR_CACHE.with(|c| c.borrow().clone());
    match cache {
        Some(c) => DirCache::list(&c, dir),
        None => read_listing(dir).map(|items| {
            items
                .into_iter()
                .map(|(name, kind)| Listed {
                    path: dir.join(name),
                    kind,
                })
                .collect()
        }),
    }
}

/// `dir`'s entries: their names and kinds (`d_type`; `lstat` when the file system gives none).
fn read_listing(dir: &std::path::Path) -> std::io::Result<Vec<(std::ffi::OsString, ItemKind)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let Ok(e) = e else { continue };
        let kind = match e.file_type() {
            Ok(t) => ItemKind::of(t),
            Err(_) => match std::fs::symlink_metadata(e.path()) {
                Ok(m) => ItemKind::of(m.file_type()),
                Err(_) => continue,
            },
        };
        out.push((e.file_name(), kind));
    }
    Ok(out)
}

thread_local! {
    static DIR_CACHE: std::cell::RefCell<Option<SharedCache>> = const { std::cell::RefCell::new(None) };
}

/// A folder's identity and times: while none of them changes, its entries have not changed
/// (creating, removing or renaming an entry sets the folder's modification and change times;
/// the change time cannot be set back by a user, as `touch -d` sets the modification time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirKey {
    dev: u64,
    ino: u64,
    mtime: i64,
    mtime_ns: i64,
    ctime: i64,
    ctime_ns: i64,
}

impl DirKey {
    fn of(md: &std::fs::Metadata) -> DirKey {
        use std::os::unix::fs::MetadataExt;
        DirKey {
            dev: md.dev(),
            ino: md.ino(),
            mtime: md.mtime(),
            mtime_ns: md.mtime_nsec(),
            ctime: md.ctime(),
            ctime_ns: md.ctime_nsec(),
        }
    }

    /// Changed less than [`DirCache::RACY`] before `now` (s since the epoch, with ns): a change
    /// in the same clock tick as the listing would leave the times as they are, so such a
    /// listing is not kept.
    fn racy(&self, now: std::time::SystemTime, window: std::time::Duration) -> bool {
        let at = |s: i64, ns: i64| {
            std::time::UNIX_EPOCH
                .checked_add(std::time::Duration::new(
                    s.max(0) as u64,
                    ns.clamp(0, 999_999_999) as u32,
                ))
                .unwrap_or(std::time::UNIX_EPOCH)
        };
        let newest = at(self.mtime, self.mtime_ns).max(at(self.ctime, self.ctime_ns));
        newest + window > now
    }
}

#[derive(Debug, Clone)]
struct CachedDir {
    key: DirKey,
    items: Vec<(std::ffi::OsString, ItemKind)>,
    /// Listed (from the cache or again) during the current run.
    used: bool,
}

/// Folder listings kept between discoveries (`memtrail status`), each with its folder's
/// [`DirKey`]: a discovery run through [`DirCache::run`] `stat`s each folder it lists and reads
/// only those that changed (12,104 transcripts in 6,200 folders: ~6,200 `stat`s instead of
/// opening and reading every folder). A folder changed within [`DirCache::RACY`] of being read
/// is read again next time. Kept in a file ([`DirCache::load`], [`DirCache::save`]); a file that
/// cannot be read or parsed is ignored (everything is listed again).
#[derive(Debug, Clone)]
pub struct DirCache {
    /// By the folder's path (its bytes: hashing a `Path` compares components).
    dirs: std::collections::HashMap<std::ffi::OsString, CachedDir>,
    changed: bool,
    /// Folders read (not answered from the cache) during the last [`DirCache::run`].
    reads: usize,
    /// [`DirCache::RACY`]; shorter in tests.
    racy: std::time::Duration,
}

impl Default for DirCache {
    fn default() -> DirCache {
        DirCache {
            dirs: Default::default(),
            changed: false,
            reads: 0,
            racy: DirCache::RACY,
        }
    }
}

const DIR_CACHE_MAGIC: &[u8; 8] = b"MTDIRC01";

/// One of [`DirCache::run_each`]'s jobs.
pub type Job<'a, R> = Box<dyn FnOnce() -> R + Send + 'a>;

/// A [`DirCache`] in use by [`DirCache::run_each`]'s threads.
type SharedCache = std::sync::Arc<std::sync::Mutex<DirCache>>;

/// Sets this thread's cache, and clears it when dropped (a job that panics included).
struct InUse;

impl InUse {
    fn new(c: &SharedCache) -> InUse {
        DIR_CACHE.with(|t| *t.borrow_mut() = Some(c.clone()));
        InUse
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        DIR_CACHE.with(|t| t.borrow_mut().take());
    }
}

impl DirCache {
    /// How long after a folder's last change its listing is trusted: 2 s, the coarsest time
    /// granularity of the file systems memtrail runs on (FAT's; ext4 and most others keep the
    /// kernel's clock tick, a few ms).
    pub const RACY: std::time::Duration = std::time::Duration::from_secs(2);

    /// Run `f` (a discovery) on this thread with this cache: [`list_dir`] answers from it.
    /// Folders not listed during `f` are forgotten afterwards.
    pub fn run<R>(&mut self, f: impl FnOnce() -> R) -> R {
        self.begin();
        let shared: SharedCache = std::sync::Arc::new(std::sync::Mutex::new(std::mem::take(self)));
        let r = {
            let _in_use = InUse::new(&shared);
            f()
        };
        self.end(shared);
        r
    }

    /// [`DirCache::run`] for several discoveries at once, on up to `threads` threads (each
    /// job on one of them), sharing this cache; the results in the jobs' order. A job that
    /// panics panics here, after the others ended.
    pub fn run_each<'a, R: Send>(&mut self, jobs: Vec<Job<'a, R>>, threads: usize) -> Vec<R> {
        self.begin();
        let shared: SharedCache = std::sync::Arc::new(std::sync::Mutex::new(std::mem::take(self)));
        let n = jobs.len();
        let jobs: Vec<std::sync::Mutex<Option<Job<'a, R>>>> = jobs
            .into_iter()
            .map(|j| std::sync::Mutex::new(Some(j)))
            .collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Vec<std::sync::Mutex<Option<R>>> =
            (0..n).map(|_| std::sync::Mutex::new(None)).collect();
        let work = || {
            let _in_use = InUse::new(&shared);
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let job = job.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let Some(job) = job {
                    let r = job();
                    *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            }
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|s| {
                for _ in 1..threads.clamp(1, n.max(1)) {
                    s.spawn(work);
                }
                work();
            })
        }));
        self.end(shared);
        if let Err(p) = outcome {
            std::panic::resume_unwind(p);
        }
        results
            .into_iter()
            .map(|r| {
                r.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .expect("every job ran")
            })
            .collect()
    }

    fn begin(&mut self) {
        for d in self.dirs.values_mut() {
            d.used = false;
        }
        self.reads = 0;
    }

    fn end(&mut self, shared: SharedCache) {
        *self = match std::sync::Arc::try_unwrap(shared) {
            Ok(m) => m.into_inner().unwrap_or_else(|e| e.into_inner()),
            // Still held by a thread (it cannot be: every user ended): start over.
            Err(_) => DirCache {
                changed: true,
                ..DirCache::default()
            },
        };
        let before = self.dirs.len();
        self.dirs.retain(|_, d| d.used);
        self.changed |= self.dirs.len() != before;
    }

    /// Whether anything changed since it was loaded or saved (a folder read again or forgotten).
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// How many folders the last [`DirCache::run`] read (the others were answered from the
    /// cache).
    pub fn reads(&self) -> usize {
        self.reads
    }

    /// How many folders it holds.
    pub fn len(&self) -> usize {
        self.dirs.len()
    }

    /// It holds no folder.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    fn list(shared: &SharedCache, dir: &std::path::Path) -> std::io::Result<Vec<Listed>> {
        let key = DirKey::of(&std::fs::metadata(dir)?);
        let join = |items: &[(std::ffi::OsString, ItemKind)]| {
            items
                .iter()
                .map(|(name, kind)| Listed {
                    path: dir.join(name),
                    kind: *kind,
                })
                .collect()
        };
        let lock = || shared.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut c = lock();
            if let Some(d) = c.dirs.get_mut(dir.as_os_str())
                && d.key == key
            {
                d.used = true;
                return Ok(join(&d.items));
            }
        }
        // Read after the `stat`: a change in between leaves a newer time than the kept one.
        let now = std::time::SystemTime::now();
        let items = read_listing(dir);
        let mut c = lock();
        c.changed = true;
        c.reads += 1;
        let items = match items {
            Ok(items) => items,
            Err(e) => {
                c.dirs.remove(dir.as_os_str());
                return Err(e);
            }
        };
        let listed = join(&items);
        if key.racy(now, c.racy) {
            c.dirs.remove(dir.as_os_str());
        } else {
            c.dirs.insert(
                dir.as_os_str().to_os_string(),
                CachedDir {
                    key,
                    items,
                    used: true,
                },
            );
        }
        Ok(listed)
    }

    /// The cache kept in `file`; an empty one when it is missing, cannot be read or is not a
    /// cache this version wrote whole (checksum).
    pub fn load(file: &std::path::Path) -> DirCache {
        std::fs::read(file)
            .ok()
            .and_then(|b| Self::decode(&b))
            .unwrap_or_default()
    }

    /// Keep it in `file` (owner-only, `0600`; written to a temporary file beside it, then
    /// renamed over it, so a reader sees the old or the new whole), when it
    /// [changed](Self::changed). Nothing is written when `file`'s folder does not exist.
    ///
    /// Errors: writing or renaming.
    pub fn save(&mut self, file: &std::path::Path) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        if !self.changed || !file.parent().is_some_and(|p| p.is_dir()) {
            return Ok(());
        }
        // Unique to this process and call: two savers never share a temporary file.
        static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut tmp = file.as_os_str().to_os_string();
        tmp.push(format!(".{}.{n}.tmp", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let _ = std::fs::remove_file(&tmp);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&self.encode()))
            .and_then(|()| std::fs::rename(&tmp, file));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written?;
        self.changed = false;
        Ok(())
    }

    fn encode(&self) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt;
        let mut b = Vec::with_capacity(64 + self.dirs.len() * 160);
        b.extend_from_slice(DIR_CACHE_MAGIC);
        b.extend_from_slice(&(self.dirs.len() as u64).to_le_bytes());
        let bytes = |b: &mut Vec<u8>, s: &[u8]| {
            b.extend_from_slice(&(s.len() as u64).to_le_bytes());
            b.extend_from_slice(s);
        };
        for (path, d) in &self.dirs {
            bytes(&mut b, path.as_bytes());
            let k = d.key;
            for v in [k.dev, k.ino] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            for v in [k.mtime, k.mtime_ns, k.ctime, k.ctime_ns] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(&(d.items.len() as u64).to_le_bytes());
            for (name, kind) in &d.items {
                b.push(kind.code());
                bytes(&mut b, name.as_bytes());
            }
        }
        let sum = fnv1a(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<DirCache> {
        use std::os::unix::ffi::OsStrExt;
        let (body, sum) = b.split_at_checked(b.len().checked_sub(8)?)?;
        if fnv1a(body).to_le_bytes() != sum || !body.starts_with(DIR_CACHE_MAGIC) {
            return None;
        }
        let mut r = &body[DIR_CACHE_MAGIC.len()..];
        fn take<'a>(r: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
            let (h, t) = r.split_at_checked(n)?;
            *r = t;
            Some(h)
        }
        fn u64_(r: &mut &[u8]) -> Option<u64> {
            Some(u64::from_le_bytes(take(r, 8)?.try_into().ok()?))
        }
        fn bytes<'a>(r: &mut &'a [u8]) -> Option<&'a [u8]> {
            let n = usize::try_from(u64_(r)?).ok()?;
            take(r, n)
        }
        let n = u64_(&mut r)?;
        let mut dirs = std::collections::HashMap::new();
        for _ in 0..n {
            let path = std::ffi::OsStr::from_bytes(bytes(&mut r)?).to_os_string();
            let key = DirKey {
                dev: u64_(&mut r)?,
                ino: u64_(&mut r)?,
                mtime: u64_(&mut r)? as i64,
                mtime_ns: u64_(&mut r)? as i64,
                ctime: u64_(&mut r)? as i64,
                ctime_ns: u64_(&mut r)? as i64,
            };
            let count = u64_(&mut r)?;
            // Each item takes at least 9 bytes: a count beyond what is left is corrupt.
            if count > (r.len() / 9) as u64 {
                return None;
            }
            let mut items = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let kind = ItemKind::from_code(*take(&mut r, 1)?.first()?)?;
                let name = std::ffi::OsStr::from_bytes(bytes(&mut r)?).to_os_string();
                items.push((name, kind));
            }
            dirs.insert(
                path,
                CachedDir {
                    key,
                    items,
                    used: false,
                },
            );
        }
        r.is_empty().then_some(DirCache {
            dirs,
            ..DirCache::default()
        })
    }
}

/// 64-bit FNV-1a: the cache file's checksum (against a file cut short or damaged, not an
/// adversary: the file is the user's own, owner-only).
fn fnv1a(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= x as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod dir_cache_tests {
    use super::*;

    /// An agent's small file is read only as a regular file within its size: a FIFO returns at
    /// once (it would block an open), a device or an over-long file is refused.
    #[cfg(unix)]
    #[test]
    fn read_small_refuses_fifos_devices_and_large_files() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.json");
        memtrail_testkit::mkfifo(&fifo);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(read_small(&fifo, 10).map_err(|e| e.kind()));
        });
        let r = rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
        assert_eq!(r, Err(std::io::ErrorKind::InvalidInput));
        let zero = dir.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert_eq!(
            read_small(&zero, 10).map_err(|e| e.kind()),
            Err(std::io::ErrorKind::InvalidInput)
        );
        let f = dir.path().join("f.json");
        std::fs::write(&f, "0123456789").unwrap();
        assert_eq!(read_small(&f, 10).unwrap(), b"0123456789");
        assert_eq!(
            read_small(&f, 9).map_err(|e| e.kind()),
            Err(std::io::ErrorKind::FileTooLarge)
        );
        assert_eq!(
            read_small(&dir.path().join("none"), 9).map_err(|e| e.kind()),
            Err(std::io::ErrorKind::NotFound)
        );
    }
    use std::path::Path;

    /// The names `list_dir` gives for `dir`, sorted, with whether each is a file.
    fn names(dir: &Path) -> Vec<(String, bool)> {
        let mut v: Vec<(String, bool)> = list_dir(dir)
            .unwrap()
            .iter()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.is_file()))
            .collect();
        v.sort();
        v
    }

    /// A cache that trusts a listing at once (no racy window), for tests that change folders
    /// within the same second.
    fn eager() -> DirCache {
        DirCache {
            racy: std::time::Duration::ZERO,
            ..DirCache::default()
        }
    }

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("p/s1/subagents")).unwrap();
        std::fs::write(d.path().join("p/a.jsonl"), "{}\n").unwrap();
        std::fs::write(d.path().join("p/s1/subagents/x.jsonl"), "{}\n").unwrap();
        std::os::unix::fs::symlink("a.jsonl", d.path().join("p/link.jsonl")).unwrap();
        d
    }

    /// Every folder listed through the cache: the root, `p`, `p/s1`, `p/s1/subagents`.
    fn walk(root: &Path) -> Vec<Vec<(String, bool)>> {
        ["", "p", "p/s1", "p/s1/subagents"]
            .iter()
            .map(|sub| names(&root.join(sub)))
            .collect()
    }

    #[test]
    fn unchanged_folders_are_answered_from_the_cache_and_changed_ones_read_again() {
        let d = tree();
        let root = d.path();
        let plain = walk(root);
        let mut c = eager();
        assert_eq!(c.run(|| walk(root)), plain);
        assert_eq!((c.reads(), c.len()), (4, 4));
        // Nothing changed: no folder read, the same listing.
        assert_eq!(c.run(|| walk(root)), plain);
        assert_eq!(c.reads(), 0);
        // A transcript added to an existing folder: that folder alone is read again.
        std::fs::write(root.join("p/b.jsonl"), "{}\n").unwrap();
        let added = c.run(|| walk(root));
        assert_eq!(c.reads(), 1);
        assert_eq!(added, walk(root));
        assert!(added[1].contains(&("b.jsonl".to_string(), true)));
        // A transcript that grows changes no folder: nothing is read, nothing differs.
        std::fs::write(root.join("p/b.jsonl"), "{}\n{}\n").unwrap();
        assert_eq!(c.run(|| walk(root)), added);
        assert_eq!(c.reads(), 0);
        // Removed: read again, gone.
        std::fs::remove_file(root.join("p/a.jsonl")).unwrap();
        let removed = c.run(|| walk(root));
        assert_eq!(c.reads(), 1);
        assert!(!removed[1].iter().any(|(n, _)| n == "a.jsonl"));
        // The link to the removed file is still listed, no longer a file (followed on use).
        assert!(removed[1].contains(&("link.jsonl".to_string(), false)));
        assert_eq!(removed, walk(root));
        // A folder's modification time set back to what it was (`touch -d`) does not hide a
        // change: its change time moved.
        let sub = root.join("p/s1/subagents");
        let was = std::fs::metadata(&sub).unwrap().modified().unwrap();
        std::fs::write(sub.join("y.jsonl"), "{}\n").unwrap();
        std::fs::File::open(&sub)
            .unwrap()
            .set_modified(was)
            .unwrap();
        assert_eq!(std::fs::metadata(&sub).unwrap().modified().unwrap(), was);
        let after = c.run(|| walk(root));
        assert_eq!(after[3].len(), 2, "{after:?}");
    }

    #[test]
    fn a_folder_changed_within_the_racy_window_is_read_every_time() {
        let d = tree();
        let root = d.path();
        let mut c = DirCache::default();
        c.run(|| walk(root));
        assert_eq!(c.reads(), 4);
        // Created just now: none is trusted yet.
        assert_eq!(c.len(), 0);
        c.run(|| walk(root));
        assert_eq!(c.reads(), 4);
    }

    #[test]
    fn folders_no_longer_listed_are_forgotten_and_a_missing_one_is_an_error() {
        let d = tree();
        let root = d.path();
        let mut c = eager();
        c.run(|| walk(root));
        std::fs::remove_dir_all(root.join("p/s1")).unwrap();
        let err = c.run(|| list_dir(&root.join("p/s1")).unwrap_err());
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(c.len(), 0);
        // Without a cache in use, `list_dir` reads the folder.
        assert_eq!(names(&root.join("p")).len(), 2);
    }

    #[test]
    fn the_cache_file_is_owner_only_and_a_damaged_one_is_ignored() {
        use std::os::unix::fs::PermissionsExt;
        let d = tree();
        let root = d.path();
        let state = tempfile::tempdir().unwrap();
        let file = state.path().join("state/listing-cache");
        let mut c = eager();
        let listed = c.run(|| walk(root));
        // No folder for it: nothing written.
        c.save(&file).unwrap();
        assert!(!file.exists());
        std::fs::create_dir(state.path().join("state")).unwrap();
        c.save(&file).unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // Read back: the same folders, answered without a read.
        let mut back = DirCache::load(&file);
        back.racy = std::time::Duration::ZERO;
        assert_eq!(back.len(), 4);
        assert_eq!(back.run(|| walk(root)), listed);
        assert_eq!(back.reads(), 0);
        assert!(!back.changed());
        // Unchanged since saved: not written again.
        let before = std::fs::metadata(&file).unwrap().modified().unwrap();
        back.save(&file).unwrap();
        assert_eq!(
            std::fs::metadata(&file).unwrap().modified().unwrap(),
            before
        );
        // Damaged in any way: ignored, everything read again.
        let good = std::fs::read(&file).unwrap();
        let mut flipped = good.clone();
        flipped[good.len() / 2] ^= 0x40;
        for bad in [
            Vec::new(),
            b"garbage".to_vec(),
            good[..good.len() - 1].to_vec(),
            good[..good.len() / 2].to_vec(),
            flipped,
        ] {
            std::fs::write(&file, &bad).unwrap();
            let mut c = DirCache::load(&file);
            assert!(c.is_empty());
            assert_eq!(c.run(|| walk(root)), listed);
            assert_eq!(c.reads(), 4);
        }
        // A file that is not there: empty.
        assert!(DirCache::load(&state.path().join("none")).is_empty());
    }

    #[test]
    fn jobs_on_several_threads_share_one_cache() {
        let d = tree();
        let root = d.path();
        let plain = walk(root);
        let mut c = eager();
        type Job<'a> = Box<dyn FnOnce() -> Vec<Vec<(String, bool)>> + Send + 'a>;
        let jobs = || -> Vec<Job<'_>> {
            (0..3)
                .map(|_| Box::new(move || walk(root)) as Box<dyn FnOnce() -> _ + Send>)
                .collect()
        };
        assert_eq!(c.run_each(jobs(), 2), vec![plain.clone(); 3]);
        assert_eq!(c.len(), 4);
        assert!(c.reads() >= 4);
        assert_eq!(c.run_each(jobs(), 2), vec![plain; 3]);
        assert_eq!(c.reads(), 0);
        // A job that panics: the panic reaches the caller, the cache is still usable.
        let bad: Vec<Box<dyn FnOnce() + Send>> = vec![Box::new(|| panic!("job"))];
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.run_each(bad, 2)));
        assert!(r.is_err());
        assert!(DIR_CACHE.with(|t| t.borrow().is_none()));
        c.run(|| walk(root));
        assert_eq!(c.len(), 4);
    }

    #[test]
    fn sort_paths_is_the_order_of_path() {
        let mut v: Vec<PathBuf> = [
            "/h/p-a/x.jsonl",
            "/h/p/x.jsonl",
            "/h/p/a/b.jsonl",
            "/h/p.b/x.jsonl",
            "/h/p/",
            "/h/p",
            "/h/P/z",
            "/h/p a/z",
            "/h/é/z",
            "/h/p/x.jsonl",
            "/h",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let mut by_path = v.clone();
        by_path.sort();
        sort_paths(&mut v);
        assert_eq!(v, by_path);
    }
}
