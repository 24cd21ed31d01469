//! User-key comparators. The comparator's name is stored in every table and checked on open,
//! because a table sorted by one order is garbage under another.

use std::cmp::Ordering;
use std::fmt::Debug;

/// A total order on user keys, plus the two key-shortening hooks the index block uses.
pub trait Comparator: Send + Sync + Debug {
    /// A stable name stored in each table; change it whenever the order changes.
    fn name(&self) -> &str;
    /// Compares two keys.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;
    /// If `start < limit`, may shorten `start` to any key in `[start, limit)`.
    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]);
    /// May change `key` to any key `>= key`, preferably shorter.
    fn find_short_successor(&self, key: &mut Vec<u8>);
}

/// Lexicographic byte order (`memcmp`), the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct BytewiseComparator;

impl BytewiseComparator {
    /// The name stored in tables sorted by this comparator.
    pub const NAME: &'static str = "shale.BytewiseComparator";
}

impl Comparator for BytewiseComparator {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        bytewise_compare(a, b)
    }

    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        let common = start.iter().zip(limit).take_while(|(a, b)| a == b).count();
        if common >= start.len().min(limit.len()) {
            return; // one is a prefix of the other: cannot shorten
        }
        let byte = start[common];
        if byte < 0xff && byte + 1 < limit[common] {
            start[common] = byte + 1;
            start.truncate(common + 1);
            return;
        }
        // `limit` is just above `start` at the first difference (consecutive numbers, say):
        // keep that byte and increment the first later byte of `start` that can be, which
        // stays below `limit` and is shorter unless that byte is `start`'s last.
        if let Some(i) = start[common + 1..].iter().position(|&b| b < 0xff) {
            let i = common + 1 + i;
            if i + 1 < start.len() {
                start[i] += 1;
                start.truncate(i + 1);
            }
        }
    }

    fn find_short_successor(&self, key: &mut Vec<u8>) {
        if let Some(i) = key.iter().position(|&b| b != 0xff) {
            key[i] += 1;
            key.truncate(i + 1);
        }
    }
}

/// Byte order, deciding most comparisons on the first 8 bytes as one integer comparison
/// instead of a call to `memcmp` (as the memtable's skiplist does).
#[inline]
pub(crate) fn bytewise_compare(a: &[u8], b: &[u8]) -> Ordering {
    if let (Some(a8), Some(b8)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        let order = u64::from_be_bytes(*a8).cmp(&u64::from_be_bytes(*b8));
        if order != Ordering::Equal {
            return order;
        }
        return a[8..].cmp(&b[8..]);
    }
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytewise_compare_is_slice_order() {
        // Lengths around the 8-byte fast path, bytes whose order differs signed and unsigned.
        let alphabet = [0u8, 1, 0x7f, 0x80, 0xff];
        let mut keys: Vec<Vec<u8>> = vec![Vec::new()];
        for len in [1usize, 7, 8, 9, 16, 17] {
            for (i, &a) in alphabet.iter().enumerate() {
                for &b in &alphabet {
                    let mut key = vec![a; len];
                    key[(i * 3) % len] = b;
                    keys.push(key);
                }
            }
        }
        for a in &keys {
            for b in &keys {
                assert_eq!(bytewise_compare(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn separator_lies_between() {
        let cmp = BytewiseComparator;
        let cases: &[(&[u8], &[u8])] = &[
            (b"abcdef", b"abzz"),
            (b"abc", b"abd"),
            (b"ab", b"abc"),
            (b"a\xff\xff", b"b"),
            (b"a\xff\x01\x02", b"b"),
            (b"a\x01\x02", b"b\x00"),
            (b"x", b"x"),
        ];
        for &(start, limit) in cases {
            let mut s = start.to_vec();
            cmp.find_shortest_separator(&mut s, limit);
            assert!(s.as_slice() >= start, "{s:?} < {start:?}");
            if start < limit {
                assert!(s.as_slice() < limit, "{s:?} >= {limit:?}");
            }
        }
        let mut s = b"abcdef".to_vec();
        cmp.find_shortest_separator(&mut s, b"abzz");
        assert_eq!(s, b"abd");
        // The first difference is one apart: a later byte of `start` is incremented.
        for (start, limit, expected) in [
            (
                &b"\x00\x07\x0100000000"[..],
                &b"\x00\x07\x0200000000"[..],
                &b"\x00\x07\x011"[..],
            ),
            (b"ab\xff\xffx", b"ac", b"ab\xff\xffx"),
            (b"ab\xffcd", b"ac", b"ab\xffd"),
            (b"abc", b"acc", b"abc"),
        ] {
            let mut s = start.to_vec();
            cmp.find_shortest_separator(&mut s, limit);
            assert_eq!(s, expected, "{start:?} .. {limit:?}");
        }
    }

    #[test]
    fn successor_is_not_smaller() {
        let cmp = BytewiseComparator;
        for key in [&b"abc"[..], b"\xff\xffa", b"\xff\xff", b""] {
            let mut k = key.to_vec();
            cmp.find_short_successor(&mut k);
            assert!(k.as_slice() >= key);
        }
        let mut k = b"\x01\x02".to_vec();
        cmp.find_short_successor(&mut k);
        assert_eq!(k, b"\x02");
    }
}
