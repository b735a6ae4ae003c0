//! BERT's uncased WordPiece tokenizer, as `tokenizer.json` of all-MiniLM-L6-v2 describes it
//! (`BertNormalizer` with `lowercase`, `clean_text`, `handle_chinese_chars` and accents stripped;
//! `BertPreTokenizer`; `WordPiece` with `##` continuations and `[UNK]`, at most 100 chars a word).
//!
//! Only the token ids are produced (no offsets): the static model needs ids, and the
//! distillation feeds one id at a time.

use std::collections::HashMap;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Longest word (in chars) WordPiece splits; a longer word becomes `[UNK]`.
const MAX_WORD_CHARS: usize = 100;

/// A WordPiece vocabulary: token string → id, with the ids of the special tokens.
#[derive(Debug, Clone)]
pub struct WordPiece {
    ids: HashMap<String, u32>,
    /// The vocabulary in id order.
    tokens: Vec<String>,
    pub unk: u32,
    pub cls: u32,
    pub sep: u32,
}

impl WordPiece {
    /// Reads `vocab.txt` (one token a line, the line number is the id).
    ///
    /// Errors: a message naming the missing special token (`[UNK]`, `[CLS]`, `[SEP]`).
    pub fn from_vocab_txt(text: &str) -> Result<WordPiece, String> {
        let tokens: Vec<String> = text.lines().map(|l| l.to_string()).collect();
        Self::from_tokens(tokens)
    }

    /// The vocabulary from its tokens in id order.
    ///
    /// Errors: a message naming the missing special token.
    pub fn from_tokens(tokens: Vec<String>) -> Result<WordPiece, String> {
        let mut ids = HashMap::with_capacity(tokens.len());
        for (i, t) in tokens.iter().enumerate() {
            ids.entry(t.clone()).or_insert(i as u32);
        }
        let get = |t: &str| {
            ids.get(t)
                .copied()
                .ok_or_else(|| format!("the vocabulary has no {t} token"))
        };
        let (unk, cls, sep) = (get("[UNK]")?, get("[CLS]")?, get("[SEP]")?);
        Ok(WordPiece {
            ids,
            tokens,
            unk,
            cls,
            sep,
        })
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True when the vocabulary is empty (never, once built: it holds the special tokens).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The tokens in id order.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// The ids of `text` (no `[CLS]`/`[SEP]`), at most `max` of them.
    pub fn encode(&self, text: &str, max: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let mut word = String::new();
        for c in normalize(text) {
            if out.len() >= max {
                break;
            }
            if c.is_whitespace() {
                self.push_word(&word, &mut out);
                word.clear();
            } else if is_punctuation(c) || is_cjk_char(c) {
                self.push_word(&word, &mut out);
                word.clear();
                let mut buf = [0u8; 4];
                self.push_word(c.encode_utf8(&mut buf), &mut out);
            } else {
                word.push(c);
            }
        }
        self.push_word(&word, &mut out);
        out.truncate(max);
        out
    }

    /// Greedy longest-match-first WordPiece of one pre-tokenized word.
    fn push_word(&self, word: &str, out: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        if word.chars().count() > MAX_WORD_CHARS {
            out.push(self.unk);
            return;
        }
        let start_len = out.len();
        let mut start = 0;
        let mut piece = String::with_capacity(word.len() + 2);
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while end > start {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.push_str(&word[start..end]);
                if let Some(&id) = self.ids.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                end -= 1;
                while end > start && !word.is_char_boundary(end) {
                    end -= 1;
                }
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(start_len);
                    out.push(self.unk);
                    return;
                }
            }
        }
    }
}

/// `BertNormalizer`: drop control chars and U+FFFD, whitespace to space, lowercase, strip
/// accents (NFD, then drop combining marks).
fn normalize(text: &str) -> impl Iterator<Item = char> + '_ {
    text.chars()
        .filter(|&c| !(c == '\0' || c == '\u{fffd}' || is_control(c)))
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .flat_map(|c| c.to_lowercase())
        .nfd()
        .filter(|&c| !is_combining_mark(c))
}

fn is_control(c: char) -> bool {
    if c == '\t' || c == '\n' || c == '\r' {
        return false;
    }
    c.is_control()
}

/// BERT's punctuation: every non-alphanumeric ASCII printable char, and the Unicode
/// punctuation blocks (general punctuation, CJK symbols and punctuation, full-width forms).
pub(crate) fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation();
    }
    matches!(c as u32,
        0x00A1 | 0x00A7 | 0x00AB | 0x00B6 | 0x00B7 | 0x00BB | 0x00BF
        | 0x2010..=0x2027 | 0x2030..=0x205E
        | 0x3001..=0x3003 | 0x3008..=0x3011 | 0x3014..=0x301F
        | 0xFF01..=0xFF03 | 0xFF05..=0xFF0A | 0xFF0C..=0xFF0F | 0xFF1A | 0xFF1B
        | 0xFF1F | 0xFF20 | 0xFF3B..=0xFF3D | 0xFF3F | 0xFF5B | 0xFF5D | 0xFF5F..=0xFF65)
}

/// The CJK ideograph ranges BERT splits one char at a time (`_is_chinese_char`).
fn is_cjk_char(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> WordPiece {
        let toks = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "cafe", ",", "!", "中",
            "run", "##ning",
        ];
        WordPiece::from_tokens(toks.iter().map(|s| s.to_string()).collect()).unwrap()
    }

    #[test]
    fn splits_words_into_longest_pieces() {
        let v = vocab();
        // unaffable = un ##aff ##able; "Café!" lowercases, drops the accent, splits the "!".
        assert_eq!(v.encode("unaffable Café!", 64), vec![4, 5, 6, 7, 9]);
        assert_eq!(v.encode("running,中x", 64), vec![11, 12, 8, 10, 1]);
    }

    #[test]
    fn unknown_word_is_one_unk_and_max_caps() {
        let v = vocab();
        assert_eq!(v.encode("unzzz run", 64), vec![1, 11]);
        assert_eq!(v.encode("run run run", 2), vec![11, 11]);
        assert_eq!(v.encode("", 5), Vec::<u32>::new());
    }

    #[test]
    fn missing_special_token_is_an_error() {
        let e = WordPiece::from_tokens(vec!["[UNK]".into(), "[CLS]".into()]).unwrap_err();
        assert_eq!(e, "the vocabulary has no [SEP] token");
    }
}
