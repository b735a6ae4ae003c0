//! The vectors' side file: a copy of the store's vectors laid out for a scan, mapped into
//! memory by every search instead of read row by row from SQLite (723k vectors took 0.7–2 s and
//! 250 MB to load for each CLI search; mapped, a search touches the sign bits and its
//! candidates, and processes share the page cache).
//!
//! It is derived data, beside the SQLite file: `<store>-vectors` (like `-wal`), mode 0600,
//! deleted with the store. Rewritten whole (a temporary file renamed over it) by `memtrail
//! embed`, by `import` when it embedded something, by a server's background embedding when
//! 5,000 or more vectors are newer than the file, and by a search that finds it missing or
//! stale with that many; a search reads the vectors newer than the file from SQLite.
//!
//! Layout (little-endian), every section starting at a multiple of 8 bytes:
//!
//! | offset | size | what |
//! |---|---|---|
//! | 0 | 8 | magic `MTVECS01` |
//! | 8 | 4 + 4 | `dim`, `words` (u64 words of sign bits per vector: `ceil(dim / 64)`) |
//! | 16 | 8 | `n`, the number of vectors |
//! | 24 | 8 | `through`: the store's `done_through` the file holds every vector up to |
//! | 32 | 8 + 8 | the SQLite file's device and inode (a replaced store, e.g. by `repair`, is not read with another's vectors) |
//! | 48 | 2 + 206 | the model id's length and bytes (`name@version/dim`) |
//! | 256 | 8·n | message row ids |
//! | … | 4·n, padded to 8 | scales (value ≈ scale × byte) |
//! | … | 8·words·n | sign bits (bit `j` set when component `j` > 0) |
//! | … | dim·n | int8 components |
//!
//! Staleness: a message rewritten after the file was written (a late tool result) keeps its
//! earlier vector in the file until the next rewrite; a deleted message's vector stays in it
//! and is dropped from the hits (its row is gone).

use memtrail_runtime::store::{Store, VectorSet};
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"MTVECS01";
const HEADER: usize = 256;
const MAX_MODEL_ID: usize = 206;

/// Vectors newer than the file from which it is rewritten (below, they are read from SQLite).
pub const REWRITE_AFTER: usize = 5_000;

/// The side file of the SQLite store at `db`.
pub fn path_of(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push("-vectors");
    PathBuf::from(p)
}

/// A side file mapped into memory, checked.
pub struct Mapped {
    map: memmap2::Mmap,
    pub dim: usize,
    pub words: usize,
    pub n: usize,
    /// The store's `done_through` when it was written.
    pub through: i64,
    offs: [usize; 4],
}

/// The four columns of vectors (see [`Mapped`] and `VectorIndex`).
#[derive(Clone, Copy)]
pub struct Cols<'a> {
    pub ids: &'a [i64],
    pub scales: &'a [f32],
    pub bits: &'a [u64],
    pub data: &'a [i8],
}

fn pad8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// Section offsets and the file's length for `n` vectors.
fn layout(n: usize, dim: usize, words: usize) -> ([usize; 4], usize) {
    let ids = HEADER;
    let scales = ids + 8 * n;
    let bits = scales + pad8(4 * n);
    let data = bits + 8 * words * n;
    ([ids, scales, bits, data], data + pad8(dim * n))
}

#[cfg(unix)]
fn identity(db: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(db).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(_db: &Path) -> Option<(u64, u64)> {
    Some((0, 0))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

impl Mapped {
    /// The side file of the store at `db`, when it exists and holds `model`'s vectors of
    /// `dim` values for this very SQLite file, up to `done_through` at most; `None` otherwise
    /// (missing, another model or store, newer than the store, damaged).
    pub fn open(db: &Path, model: &str, dim: usize, done_through: i64) -> Option<Mapped> {
        let file = std::fs::File::open(path_of(db)).ok()?;
        // SAFETY: the file is memtrail's own, replaced only by rename (a mapping keeps the old
        // inode); its length and every offset are checked below before any slice is made.
        let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
        let b: &[u8] = &map;
        if b.len() < HEADER || &b[0..8] != MAGIC {
            return None;
        }
        let (fdim, words) = (u32_at(b, 8) as usize, u32_at(b, 12) as usize);
        let n = usize::try_from(u64_at(b, 16)).ok()?;
        let through = u64_at(b, 24) as i64;
        let (dev, ino) = (u64_at(b, 32), u64_at(b, 40));
        let len = b[48] as usize | (b[49] as usize) << 8;
        if fdim != dim
            || words != dim.div_ceil(64)
            || len > MAX_MODEL_ID
            || &b[50..50 + len] != model.as_bytes()
            || identity(db) != Some((dev, ino))
            || through > done_through
            || n > b.len() / (dim + 8 * words + 12).max(1)
        {
            return None;
        }
        let (offs, total) = layout(n, dim, words);
        if b.len() < total || !(b.as_ptr() as usize).is_multiple_of(8) {
            return None;
        }
        Some(Mapped {
            map,
            dim,
            words,
            n,
            through,
            offs,
        })
    }

    /// The columns.
    pub fn cols(&self) -> Cols<'_> {
        let b: &[u8] = &self.map;
        let n = self.n;
        // SAFETY: `open` checked that the mapping is 8-byte aligned and long enough for every
        // section; each section starts at a multiple of 8; i64, f32, u64 and i8 accept any bit
        // pattern.
        unsafe {
            Cols {
                ids: std::slice::from_raw_parts(b.as_ptr().add(self.offs[0]).cast(), n),
                scales: std::slice::from_raw_parts(b.as_ptr().add(self.offs[1]).cast(), n),
                bits: std::slice::from_raw_parts(
                    b.as_ptr().add(self.offs[2]).cast(),
                    n * self.words,
                ),
                data: std::slice::from_raw_parts(b.as_ptr().add(self.offs[3]).cast(), n * self.dim),
            }
        }
    }
}

/// Writes the side file of `store` for `model` (`dim` values per vector) from the store's
/// vectors: a temporary file (0600) renamed over the old one. Returns how many vectors it
/// holds. Nothing is written for a store that is not a SQLite file.
///
/// Errors: store errors; the I/O error, with the file's path.
pub fn write(store: &Store, model: &str, dim: usize) -> Result<usize, String> {
    let Some(db) = store.location().sqlite_path().map(Path::to_path_buf) else {
        return Ok(0);
    };
    if model.len() > MAX_MODEL_ID {
        return Ok(0);
    }
    let Some((dev, ino)) = identity(&db) else {
        return Ok(0);
    };
    let through = store
        .embed_progress()
        .map_err(|e| e.to_string())?
        .filter(|(m, _)| m == model)
        .map_or(0, |(_, d)| d);
    let set: VectorSet = store.load_vectors(model, dim).map_err(|e| e.to_string())?;
    let words = dim.div_ceil(64);
    let n = set.len();
    let mut head = vec![0u8; HEADER];
    head[0..8].copy_from_slice(MAGIC);
    head[8..12].copy_from_slice(&(dim as u32).to_le_bytes());
    head[12..16].copy_from_slice(&(words as u32).to_le_bytes());
    head[16..24].copy_from_slice(&(n as u64).to_le_bytes());
    head[24..32].copy_from_slice(&through.to_le_bytes());
    head[32..40].copy_from_slice(&dev.to_le_bytes());
    head[40..48].copy_from_slice(&ino.to_le_bytes());
    head[48..50].copy_from_slice(&(model.len() as u16).to_le_bytes());
    head[50..50 + model.len()].copy_from_slice(model.as_bytes());
    let path = path_of(&db);
    let tmp = {
        let mut p = path.as_os_str().to_owned();
        p.push(format!(".tmp{}", std::process::id()));
        PathBuf::from(p)
    };
    let io = |e: std::io::Error, p: &Path| format!("{}: {e}", p.display());
    let result = (|| -> Result<(), String> {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let f = opts.open(&tmp).map_err(|e| io(e, &tmp))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let put = |w: &mut std::io::BufWriter<std::fs::File>, b: &[u8]| {
            w.write_all(b).map_err(|e| io(e, &tmp))
        };
        put(&mut w, &head)?;
        for id in &set.ids {
            put(&mut w, &id.to_le_bytes())?;
        }
        for s in &set.scales {
            put(&mut w, &s.to_le_bytes())?;
        }
        put(&mut w, &vec![0u8; pad8(4 * n) - 4 * n])?;
        for row in set.data.chunks_exact(dim.max(1)) {
            for word in crate::search::sign_bits(row, words) {
                put(&mut w, &word.to_le_bytes())?;
            }
        }
        // The components as they are (i8 and u8 share their layout), without a second copy.
        // SAFETY: i8 and u8 have the same size and alignment; any i8 is a valid u8.
        let bytes: &[u8] =
            unsafe { std::slice::from_raw_parts(set.data.as_ptr().cast(), set.data.len()) };
        put(&mut w, bytes)?;
        put(&mut w, &vec![0u8; pad8(dim * n) - dim * n])?;
        w.flush().map_err(|e| io(e, &tmp))?;
        std::fs::rename(&tmp, &path).map_err(|e| io(e, &path))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map(|()| n)
}

/// Rewrites the side file when it is missing, unusable for this store, or [`REWRITE_AFTER`]
/// or more vectors behind the store. Returns whether it was written. Nothing is done for a
/// store that is not a SQLite file or holds no vector of `model`.
///
/// Errors: as [`write()`].
pub fn maintain(store: &Store, model: &str, dim: usize) -> Result<bool, String> {
    let Some(db) = store.location().sqlite_path() else {
        return Ok(false);
    };
    let Some(done) = store
        .embed_progress()
        .map_err(|e| e.to_string())?
        .filter(|(m, _)| m == model)
        .map(|(_, d)| d)
    else {
        return Ok(false);
    };
    if let Some(m) = Mapped::open(db, model, dim, done) {
        let newer = store
            .count_vectors_after(m.through)
            .map_err(|e| e.to_string())?;
        if (newer as usize) < REWRITE_AFTER {
            return Ok(false);
        }
    }
    write(store, model, dim).map(|_| true)
}
