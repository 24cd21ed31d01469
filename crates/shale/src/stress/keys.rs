//! Keys and values of the stress workload. A key names its slot; a value names its keyspace,
//! its key and the value id it was written with, so a value read under the wrong key, a stale
//! (resurrected) value and an invented one are all told apart from the right one.

/// Keyspaces the workload writes: the default one and two more.
pub const KEYSPACES: [&str; 3] = ["default", "ks1", "ks2"];

/// The user key of global key number `index` (fixed width, so byte order is number order).
pub fn key(index: usize) -> Vec<u8> {
    format!("key{index:08}").into_bytes()
}

/// The key number encoded by [`key`], if `bytes` is such a key.
pub fn parse_key(bytes: &[u8]) -> Option<usize> {
    let digits = bytes.strip_prefix(b"key")?;
    if digits.len() != 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The value written to `keyspace`/`index` by the operation with value id `id`: a header
/// naming all three, then a filler whose length and bytes follow from `id` (0 to 96 bytes).
pub fn value(keyspace: usize, index: usize, id: u32) -> Vec<u8> {
    let mut value = format!("{keyspace}|{index:08}|{id:08x}|").into_bytes();
    let filler = (id as usize).wrapping_mul(31) % 97;
    value.extend((0..filler).map(|i| b'a' + ((id as usize + i) % 26) as u8));
    value
}

/// The value id of `bytes` if it is exactly [`value`]`(keyspace, index, id)` for some id;
/// `Err` says what is wrong with it otherwise.
pub fn parse_value(keyspace: usize, index: usize, bytes: &[u8]) -> Result<u32, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut parts = text.splitn(4, '|');
    let (Some(ks), Some(key), Some(id), Some(_)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("malformed value {:?}", shorten(&text)));
    };
    let id = u32::from_str_radix(id, 16)
        .map_err(|_| format!("malformed value id in {:?}", shorten(&text)))?;
    if ks != keyspace.to_string() || key != format!("{index:08}") {
        return Err(format!(
            "value {:?} belongs to keyspace {ks} key {key}",
            shorten(&text)
        ));
    }
    if value(keyspace, index, id) != bytes {
        return Err(format!("value {:?} has a damaged filler", shorten(&text)));
    }
    Ok(id)
}

fn shorten(text: &str) -> String {
    text.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_name_their_key() {
        for id in [1, 2, 96, 97, 0xffff_fffe] {
            let v = value(2, 17, id);
            assert_eq!(parse_value(2, 17, &v), Ok(id));
            assert!(parse_value(1, 17, &v).is_err());
            assert!(parse_value(2, 18, &v).is_err());
        }
        let mut damaged = value(0, 3, 200);
        *damaged.last_mut().unwrap() ^= 1;
        assert!(parse_value(0, 3, &damaged).is_err());
        assert_eq!(parse_key(&key(12345)), Some(12345));
        assert_eq!(parse_key(b"key1"), None);
    }
}
