//! The full-text index's segments, read from FTS5's structure record, so that
//! [`super::Store::tidy_index`] can merge the small segments without rewriting a large one.
//!
//! The record is the row of `messages_fts_data` whose id is 10 (`FTS5_STRUCTURE_ROWID`); its
//! format is described in SQLite's `ext/fts5/fts5_index.c` ("Structure record"):
//!
//! - a 4-byte big-endian cookie, then, in the second version of the format, the 4 bytes
//!   `FF 00 00 01` and the same fields with more per segment;
//! - varints: the number of levels, the number of segments, the write counter;
//! - per level: varints `nMerge` (how many of its oldest segments a merge in progress is
//!   reading; 0 when none) and its number of segments, then per segment its id, its first and
//!   last leaf page (and, in the second version, five more varints: two origins, tombstone
//!   pages, tombstone entries, entries).
//!
//! Varints are SQLite's: big-endian groups of 7 bits with the high bit set on all but the last,
//! the ninth byte contributing all 8 bits. A record that does not decode to exactly the number
//! of segments it announces gives `None`, and the caller leaves the index to FTS5's own merges.

/// One level of the index: its segments' sizes in leaf pages, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    /// `nMerge`: segments of this level an incremental merge in progress reads (0: none).
    pub merging: u64,
    /// Leaf pages of each segment (`pgnoLast - pgnoFirst + 1`).
    pub pages: Vec<u64>,
}

/// The index's levels, level 0 first.
#[derive(Debug, Clone, PartialEq)]
pub struct Structure {
    pub levels: Vec<Level>,
}

fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for k in 0..9 {
        let c = *b.get(*i)?;
        *i += 1;
        if k == 8 {
            return Some((v << 8) | u64::from(c));
        }
        v = (v << 7) | u64::from(c & 0x7f);
        if c & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

impl Structure {
    /// Decode a structure record; `None` when it is not one this module understands.
    pub fn decode(b: &[u8]) -> Option<Structure> {
        if b.len() < 4 {
            return None;
        }
        let mut i = 4;
        let v2 = b.get(4..8) == Some(&[0xff, 0x00, 0x00, 0x01][..]);
        if v2 {
            i = 8;
        }
        let n_levels = varint(b, &mut i)?;
        let n_segments = varint(b, &mut i)?;
        varint(b, &mut i)?; // the write counter
        // FTS5 reads at most 2,000 levels (`FTS5_MAX_SEGMENT`, in `fts5StructureDecode`); each
        // whole-index merge (an import's `optimize_index`) puts the index up to two levels
        // higher, to at most 65 (`fts5IndexOptimizeStruct` caps the level it merges at 63).
        if n_levels > 2000 {
            return None;
        }
        // Nor more than 2,000 segments (the same check): a count past it is a damaged record,
        // not a size to allocate for.
        if n_segments > 2000 {
            return None;
        }
        let mut levels = Vec::with_capacity(n_levels as usize);
        let mut seen = 0u64;
        for _ in 0..n_levels {
            let merging = varint(b, &mut i)?;
            let n = varint(b, &mut i)?;
            if n > n_segments || merging > n {
                return None;
            }
            let mut pages = Vec::with_capacity(n as usize);
            for _ in 0..n {
                varint(b, &mut i)?; // the segment's id
                let first = varint(b, &mut i)?;
                let last = varint(b, &mut i)?;
                if v2 {
                    for _ in 0..5 {
                        varint(b, &mut i)?;
                    }
                }
                pages.push((last + 1).checked_sub(first)?);
            }
            seen += n;
            levels.push(Level { merging, pages });
        }
        (seen == n_segments && i == b.len()).then_some(Structure { levels })
    }

    /// How many segments the index has.
    pub fn segments(&self) -> usize {
        self.levels.iter().map(|l| l.pages.len()).sum()
    }

    /// The level FTS5's incremental `'merge'` with `usermerge = min` reads next (its
    /// `fts5IndexMerge`): levels are looked at from 0 up to the first with a merge in
    /// progress; the lowest holding the most segments is the pick, unless the merging level's
    /// `nMerge` is more than that most, which makes it the pick; a pick holding fewer than
    /// `min` segments (and no merge in progress) is none.
    pub fn merge_pick(&self, min: usize) -> Option<usize> {
        let (mut pick, mut most) = (0usize, 0u64);
        for (l, level) in self.levels.iter().enumerate() {
            if level.merging > 0 {
                if level.merging > most {
                    pick = l;
                    most = min as u64;
                }
                break;
            }
            let n = level.pages.len() as u64;
            if n > most {
                pick = l;
                most = n;
            }
        }
        let merging = self.levels.get(pick).is_some_and(|l| l.merging > 0);
        (most >= min as u64 || merging).then_some(pick)
    }

    /// Whether [`super::Store::tidy_index`] would merge: FTS5's next level to merge with
    /// `usermerge` 2 ([`Structure::merge_pick`]) exists and does not hold the largest segment.
    pub fn tidy_would_merge(&self) -> bool {
        matches!(self.merge_pick(super::TIDY_USERMERGE as usize), Some(level) if Some(level) != self.largest_level())
    }

    /// The level holding the largest segment (by leaf pages; the highest such level on a tie).
    pub fn largest_level(&self) -> Option<usize> {
        let mut best: Option<(usize, u64)> = None;
        for (l, level) in self.levels.iter().enumerate() {
            for &p in &level.pages {
                if best.is_none_or(|(_, b)| p >= b) {
                    best = Some((l, p));
                }
            }
        }
        best.map(|(l, _)| l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version-1 record built by hand: cookie 7; 3 levels, 4 segments, write counter 300;
    /// level 0: no merge, 2 segments (ids 5, 6: pages 1..=3, 1..=4); level 1: empty;
    /// level 2: merge of 1 in progress, 2 segments (id 1: pages 1..=200, the largest; id 130:
    /// pages 1..=2, whose id takes two varint bytes: 130 = 0x81 0x02).
    fn record() -> Vec<u8> {
        let mut b = vec![0, 0, 0, 7];
        b.extend([3, 4, 0x82, 0x2c]); // 300 = 2 * 128 + 44
        b.extend([0, 2, 5, 1, 3, 6, 1, 4]);
        b.extend([0, 0]);
        b.extend([1, 2, 1, 1, 0x81, 0x48, 0x81, 0x02, 1, 2]); // 200 = 0x81 0x48
        b
    }

    #[test]
    fn a_hand_built_record_decodes_to_its_levels() {
        let s = Structure::decode(&record()).unwrap();
        assert_eq!(
            s.levels,
            vec![
                Level {
                    merging: 0,
                    pages: vec![3, 4]
                },
                Level {
                    merging: 0,
                    pages: vec![]
                },
                Level {
                    merging: 1,
                    pages: vec![200, 2]
                },
            ]
        );
        assert_eq!(s.segments(), 4);
        assert_eq!(s.largest_level(), Some(2));
        // Level 2's merge in progress reads 1 segment; level 0 holds 2, more: it is merged
        // first (as SQLite 3.54's fts5IndexMerge does with this structure).
        assert_eq!(s.merge_pick(2), Some(0));
    }

    /// The second version (written when the table counts origins: `contentless_delete`, not
    /// memtrail's): the marker, the same header, five more varints a segment (SQLite 3.54's
    /// `fts5StructureWrite`).
    #[test]
    fn a_version_2_record_decodes_too() {
        let mut b = vec![0, 0, 0, 1, 0xff, 0x00, 0x00, 0x01];
        b.extend([1, 1, 5]); // 1 level, 1 segment, write counter 5
        b.extend([0, 1]); // level 0: no merge, 1 segment
        b.extend([1, 1, 4, 1, 1, 0, 0, 7]); // id 1, pages 1..=4, origins, tombstones, entries
        let s = Structure::decode(&b).unwrap();
        assert_eq!(
            s.levels,
            vec![Level {
                merging: 0,
                pages: vec![4]
            }]
        );
        // Read as version 1 (without the marker) the same bytes do not add up.
        let mut v1 = b.clone();
        v1.drain(4..8);
        assert_eq!(Structure::decode(&v1), None);
    }

    #[test]
    fn the_pick_is_the_lowest_level_holding_the_most_segments() {
        let lvl = |n: usize| Level {
            merging: 0,
            pages: vec![1; n],
        };
        let s = Structure {
            levels: vec![lvl(1), lvl(2), lvl(0), lvl(2)],
        };
        assert_eq!(s.merge_pick(2), Some(1));
        assert_eq!(s.merge_pick(3), None);
        let s = Structure {
            levels: vec![lvl(1), lvl(1)],
        };
        assert_eq!(s.merge_pick(2), None);
        // A merge in progress reading more segments than any lower level holds goes on, also
        // when that is fewer than `min`; levels above it are not looked at.
        let merging = |n: usize, m: u64| Level {
            merging: m,
            pages: vec![1; n],
        };
        let s = Structure {
            levels: vec![lvl(1), merging(3, 2), lvl(5)],
        };
        assert_eq!(s.merge_pick(4), Some(1));
        let s = Structure {
            levels: vec![lvl(2), merging(3, 2), lvl(5)],
        };
        assert_eq!(s.merge_pick(2), Some(0));
        assert_eq!(s.merge_pick(3), None);
    }

    /// Whole-index merges (an import's `optimize_index`, FTS5's `'optimize'`) leave the index
    /// up to two levels higher each, to 65 levels: such a record decodes (it did not when the
    /// decoder stopped at 64, and the tidy-ups then left the index to FTS5's merges).
    #[test]
    fn a_record_of_65_levels_decodes() {
        let mut b = vec![0, 0, 0, 1];
        b.extend([65, 1, 9]); // 65 levels, 1 segment, write counter 9
        for _ in 0..64 {
            b.extend([0, 0]);
        }
        b.extend([0, 1, 3, 1, 40]); // level 64: segment 3, pages 1..=40
        let s = Structure::decode(&b).unwrap();
        assert_eq!(s.levels.len(), 65);
        assert_eq!(s.largest_level(), Some(64));
        assert_eq!(s.levels[64].pages, vec![40]);
        b[4] = 0xff; // 2 bytes of varint: the count no longer adds up
        assert_eq!(Structure::decode(&b), None);
    }

    #[test]
    fn a_record_that_does_not_add_up_is_not_decoded() {
        let good = record();
        // Cut short, one byte too many, a segment count that disagrees, a last page before
        // the first.
        assert_eq!(Structure::decode(&good[..good.len() - 1]), None);
        let mut long = good.clone();
        long.push(0);
        assert_eq!(Structure::decode(&long), None);
        let mut count = good.clone();
        count[5] = 5;
        assert_eq!(Structure::decode(&count), None);
        let mut order = good.clone();
        order[11] = 9; // level 0's first segment: pages 9..=3
        assert_eq!(Structure::decode(&order), None);
        assert_eq!(Structure::decode(&[0, 0, 0]), None);
        // A damaged count of segments (10^12, written as a varint below) is no record, not an
        // allocation of terabytes (it aborted the process).
        let mut huge = vec![0, 0, 0, 1, 1];
        let mut v = 1_000_000_000_000u64;
        let mut groups = vec![(v & 0x7f) as u8];
        v >>= 7;
        while v > 0 {
            groups.push((v & 0x7f) as u8 | 0x80);
            v >>= 7;
        }
        groups.reverse();
        huge.extend(&groups);
        huge.extend([0, 0]);
        huge.extend(&groups);
        huge.extend([1, 1, 1]);
        assert_eq!(Structure::decode(&huge), None);
    }
}
