//! The zstd dictionary of message parts (schema 21): raw content (RFC 8878 §5, "raw content
//! dictionary": no header, no entropy tables, the bytes a frame may refer back into) written
//! for memtrail's parts JSON: the parts' own keys and types, the agents' tool names with their
//! inputs' keys, and outputs common to every project (git, cargo, npm, pytest, the agents' own
//! result headers). Nothing in it comes from a transcript: it is the same in every store and
//! every build, so no text of a user's sessions is kept in it.
//!
//! Frozen: a frame written with it is read back with these exact bytes, so they never change
//! (a test pins their BLAKE3; `parts_dictionary.txt` is kept byte for byte by git, `-text` in
//! `.gitattributes`). A raw content dictionary has no id for a frame to name, so another
//! dictionary would need rows that say which one they were written with. Frames written
//! without it (before schema 21) decode the same through a
//! decompressor that holds it: a frame without a dictionary never refers before its start.
//!
//! Measured on 1,302 rows of the 1 GB bench store and on the 22 compressed rows of the real
//! public fixtures, one row at a time at level 3 (docs/benchmarks.md, "Parts compressed with a
//! dictionary of the format"): 13.8% and 14.4% fewer bytes.

/// The dictionary's bytes (9,051), most common strings last: zstd finds them at the smallest
/// offsets, the cheapest to write.
pub const PARTS_DICTIONARY: &str = include_str!("parts_dictionary.txt");

#[cfg(test)]
mod tests {
    use super::PARTS_DICTIONARY;

    /// Its bytes never change: every frame written with it is read back through them.
    #[test]
    fn the_dictionary_is_frozen() {
        assert_eq!(PARTS_DICTIONARY.len(), 9_051);
        assert_eq!(
            blake3::hash(PARTS_DICTIONARY.as_bytes()).to_hex().as_str(),
            "9ae66ed9a3487dd4c4a5a900e8dba35dafc8865ea7d0553beb3f6f017772b142"
        );
    }
}
