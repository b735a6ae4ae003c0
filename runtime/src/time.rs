//! Parsing the dates people type: `2026-11-29`, RFC 3339 timestamps, and relative ages
//! (`30m`, `12h`, `7d`, `2w`).

use crate::{Error, Result, now_ms};
use memtrail_adapters::{days_from_civil, parse_rfc3339_ms};

/// Which end of a day a bare date means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// `--since`: the start of the day (00:00:00.000 UTC).
    Start,
    /// `--until`: the end of the day (23:59:59.999 UTC).
    End,
}

/// Parse a date into milliseconds since the Unix epoch (UTC).
///
/// Accepts `YYYY-MM-DD` (a whole UTC day: start or end by `bound`), RFC 3339
/// (`2026-11-29T10:00:00Z`, `…+02:00`), a relative age `N` + `m|h|d|w` (that long before now),
/// `today` and `yesterday`. Errors with a message that lists the accepted forms.
pub fn parse_date(s: &str, bound: Bound) -> Result<i64> {
    let t = s.trim();
    let day_ms = 86_400_000i64;
    let now = now_ms();
    let day_start = |ms: i64| ms - ms.rem_euclid(day_ms);
    let pick = |start: i64| match bound {
        Bound::Start => start,
        Bound::End => start + day_ms - 1,
    };
    match t {
        "today" => return Ok(pick(day_start(now))),
        "yesterday" => return Ok(pick(day_start(now) - day_ms)),
        _ => {}
    }
    if let Some(ms) = parse_rfc3339_ms(t) {
        return Ok(ms);
    }
    let b = t.as_bytes();
    if b.len() == 10 && b[4] == b'-' && b[7] == b'-' {
        let num = |r: std::ops::Range<usize>| t.get(r).and_then(|x| x.parse::<i64>().ok());
        if let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10))
            && (1..=12).contains(&m)
            && (1..=days_in_month(y, m)).contains(&d)
        {
            return Ok(pick(days_from_civil(y, m, d) * day_ms));
        }
    }
    if t.len() >= 2 {
        let (n, unit) = t.split_at(t.len() - 1);
        if let Ok(n) = n.parse::<u32>() {
            let n = i64::from(n);
            let unit_ms = match unit {
                "m" => Some(60_000),
                "h" => Some(3_600_000),
                "d" => Some(day_ms),
                "w" => Some(7 * day_ms),
                _ => None,
            };
            if let Some(u) = unit_ms
                && let Some(back) = n.checked_mul(u)
            {
                return Ok(now - back);
            }
        }
    }
    Err(Error::Invalid(format!(
        "cannot read the date `{s}`: use YYYY-MM-DD, an RFC 3339 time (2026-11-29T10:00:00Z), today, yesterday, or an age like 30m, 12h, 7d, 2w"
    )))
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        // 2026-11-29 is day 20786 since the epoch (2026-01-01 = 20454, + 332 days).
        assert_eq!(
            parse_date("2026-11-29", Bound::Start).unwrap(),
            20_786 * 86_400_000
        );
        assert_eq!(
            parse_date("2026-11-29", Bound::End).unwrap(),
            20_787 * 86_400_000 - 1
        );
        assert_eq!(
            parse_date("1970-01-01T00:00:01Z", Bound::Start).unwrap(),
            1000
        );
        let now = now_ms();
        let d = parse_date("7d", Bound::Start).unwrap();
        assert!((now - 7 * 86_400_000 - d).abs() < 5_000);
        assert!(parse_date("last tuesday", Bound::Start).is_err());
        assert!(parse_date("2026-13-01", Bound::Start).is_err());
        assert!(parse_date("2026-02-30", Bound::Start).is_err());
        assert!(parse_date("2024-02-29", Bound::Start).is_ok(), "leap day");
        assert!(
            parse_date("2100-02-29", Bound::Start).is_err(),
            "not a leap year"
        );
        assert!(parse_date("-5d", Bound::Start).is_err(), "no negative ages");
        assert!(parse_date("99999999999999999w", Bound::Start).is_err());
    }
}
