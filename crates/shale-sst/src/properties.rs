//! The properties block: what a table holds, written by the writer and read on open.
//! Encoded as a data-format block of name -> value (docs/format/sst.md, "Properties block").
//! Names are part of the format and never change meaning; unknown `shale.` names are ignored.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::block::Block;
use crate::block_builder::BlockBuilder;
use crate::coding::{get_varint64, get_varint64_signed, put_varint64, put_varint64_signed};
use crate::comparator::BytewiseComparator;
use crate::error::DecodeError;

/// Prefix of the open string map filled by higher layers.
pub const USER_PREFIX: &str = "user.";

/// Everything the properties block records about a table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableProperties {
    /// Comparator name; checked on open.
    pub comparator: String,
    /// Compression the writer was asked for (`none`, `lz4`, ...).
    pub compression: String,
    /// zstd/zlib level the writer used.
    pub compression_level: i64,
    /// Seconds since the Unix epoch when the file was written.
    pub creation_time: u64,
    /// Bytes of data blocks, trailers included.
    pub data_size: u64,
    /// Bloom bits per key (0 = no filter).
    pub filter_bits_per_key: u64,
    /// Bytes of filter blocks, trailers included.
    pub filter_size: u64,
    /// Format version of the writer.
    pub format_version: u64,
    /// Bytes of the index block, trailer included.
    pub index_size: u64,
    /// Smallest internal key (empty when the table has no entries).
    pub smallest_key: Vec<u8>,
    /// Largest internal key (empty when the table has no entries).
    pub largest_key: Vec<u8>,
    /// Smallest sequence number.
    pub smallest_seqno: u64,
    /// Largest sequence number.
    pub largest_seqno: u64,
    /// Number of data blocks.
    pub num_data_blocks: u64,
    /// Point deletions.
    pub num_deletions: u64,
    /// Point entries (values and deletions).
    pub num_entries: u64,
    /// Range deletions.
    pub num_range_deletions: u64,
    /// Seconds since the epoch of the oldest entry (0 = unknown).
    pub oldest_entry_time: u64,
    /// Prefix extractor name, if a prefix filter was built.
    pub prefix_extractor: Option<String>,
    /// Sum of internal key lengths before prefix compression.
    pub raw_key_size: u64,
    /// Sum of value lengths.
    pub raw_value_size: u64,
    /// The open map (`user.` names, stored without the prefix here).
    pub user: BTreeMap<String, Vec<u8>>,
    /// Written outside a database for ingestion (`shale.external = 1`): every entry has
    /// seqno 0 and user keys are unique; the database that ingests it assigns one global
    /// seqno to all entries (docs/format/sst.md, "External files and the global seqno").
    pub external: bool,
}

enum Field<'a> {
    Number(u64),
    Signed(i64),
    Bytes(&'a [u8]),
}

impl TableProperties {
    fn fields(&self) -> Vec<(String, Field<'_>)> {
        let mut out = vec![
            (
                "shale.comparator".to_owned(),
                Field::Bytes(self.comparator.as_bytes()),
            ),
            (
                "shale.compression".to_owned(),
                Field::Bytes(self.compression.as_bytes()),
            ),
            (
                "shale.compression_level".to_owned(),
                Field::Signed(self.compression_level),
            ),
            (
                "shale.creation_time".to_owned(),
                Field::Number(self.creation_time),
            ),
            ("shale.data_size".to_owned(), Field::Number(self.data_size)),
            (
                "shale.filter_bits_per_key".to_owned(),
                Field::Number(self.filter_bits_per_key),
            ),
            (
                "shale.filter_size".to_owned(),
                Field::Number(self.filter_size),
            ),
            (
                "shale.format_version".to_owned(),
                Field::Number(self.format_version),
            ),
            (
                "shale.index_size".to_owned(),
                Field::Number(self.index_size),
            ),
            (
                "shale.num_data_blocks".to_owned(),
                Field::Number(self.num_data_blocks),
            ),
            (
                "shale.num_deletions".to_owned(),
                Field::Number(self.num_deletions),
            ),
            (
                "shale.num_entries".to_owned(),
                Field::Number(self.num_entries),
            ),
            (
                "shale.num_range_deletions".to_owned(),
                Field::Number(self.num_range_deletions),
            ),
            (
                "shale.oldest_entry_time".to_owned(),
                Field::Number(self.oldest_entry_time),
            ),
            (
                "shale.raw_key_size".to_owned(),
                Field::Number(self.raw_key_size),
            ),
            (
                "shale.raw_value_size".to_owned(),
                Field::Number(self.raw_value_size),
            ),
        ];
        if !self.smallest_key.is_empty() || !self.largest_key.is_empty() {
            out.push((
                "shale.largest_key".to_owned(),
                Field::Bytes(&self.largest_key),
            ));
            out.push((
                "shale.largest_seqno".to_owned(),
                Field::Number(self.largest_seqno),
            ));
            out.push((
                "shale.smallest_key".to_owned(),
                Field::Bytes(&self.smallest_key),
            ));
            out.push((
                "shale.smallest_seqno".to_owned(),
                Field::Number(self.smallest_seqno),
            ));
        }
        if self.external {
            out.push(("shale.external".to_owned(), Field::Number(1)));
        }
        if let Some(name) = &self.prefix_extractor {
            out.push((
                "shale.prefix_extractor".to_owned(),
                Field::Bytes(name.as_bytes()),
            ));
        }
        for (name, value) in &self.user {
            out.push((format!("{USER_PREFIX}{name}"), Field::Bytes(value)));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Encodes the properties block contents (uncompressed).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut builder = BlockBuilder::new(1);
        let mut value = Vec::new();
        for (name, field) in self.fields() {
            value.clear();
            match field {
                Field::Number(n) => put_varint64(&mut value, n),
                Field::Signed(n) => put_varint64_signed(&mut value, n),
                Field::Bytes(b) => value.extend_from_slice(b),
            }
            builder.add(name.as_bytes(), &value);
        }
        builder.finish().to_vec()
    }

    /// Decodes a properties block.
    pub(crate) fn decode(contents: Vec<u8>) -> Result<Self, DecodeError> {
        let block = Arc::new(Block::decode(contents)?);
        let mut iter = block.iter(Arc::new(BytewiseComparator));
        let mut props = TableProperties::default();
        let mut seen_comparator = false;
        let mut seen_entries = false;
        let mut previous: Option<Vec<u8>> = None;
        iter.seek_to_first();
        while iter.valid() {
            let name_bytes = iter.key();
            if previous.as_deref().is_some_and(|p| p >= name_bytes) {
                return Err(DecodeError::new("property names out of order"));
            }
            previous = Some(name_bytes.to_vec());
            let name = std::str::from_utf8(name_bytes)
                .map_err(|_| DecodeError::new("property name is not UTF-8"))?;
            let value = iter.value();
            let number = || -> Result<u64, DecodeError> {
                let (n, used) = get_varint64(value)
                    .map_err(|e| DecodeError::new(format!("property {name}: {e}")))?;
                if used != value.len() {
                    return Err(DecodeError::new(format!("property {name}: trailing bytes")));
                }
                Ok(n)
            };
            let string = || -> Result<String, DecodeError> {
                String::from_utf8(value.to_vec())
                    .map_err(|_| DecodeError::new(format!("property {name} is not UTF-8")))
            };
            match name {
                "shale.comparator" => {
                    props.comparator = string()?;
                    seen_comparator = true;
                }
                "shale.compression" => props.compression = string()?,
                "shale.compression_level" => {
                    let (n, used) = get_varint64_signed(value)?;
                    if used != value.len() {
                        return Err(DecodeError::new(
                            "property shale.compression_level: trailing bytes",
                        ));
                    }
                    props.compression_level = n;
                }
                "shale.creation_time" => props.creation_time = number()?,
                "shale.data_size" => props.data_size = number()?,
                "shale.external" => props.external = number()? == 1,
                "shale.filter_bits_per_key" => props.filter_bits_per_key = number()?,
                "shale.filter_size" => props.filter_size = number()?,
                "shale.format_version" => props.format_version = number()?,
                "shale.index_size" => props.index_size = number()?,
                "shale.largest_key" => props.largest_key = value.to_vec(),
                "shale.largest_seqno" => props.largest_seqno = number()?,
                "shale.num_data_blocks" => props.num_data_blocks = number()?,
                "shale.num_deletions" => props.num_deletions = number()?,
                "shale.num_entries" => {
                    props.num_entries = number()?;
                    seen_entries = true;
                }
                "shale.num_range_deletions" => props.num_range_deletions = number()?,
                "shale.oldest_entry_time" => props.oldest_entry_time = number()?,
                "shale.prefix_extractor" => props.prefix_extractor = Some(string()?),
                "shale.raw_key_size" => props.raw_key_size = number()?,
                "shale.raw_value_size" => props.raw_value_size = number()?,
                "shale.smallest_key" => props.smallest_key = value.to_vec(),
                "shale.smallest_seqno" => props.smallest_seqno = number()?,
                other => {
                    if let Some(user_name) = other.strip_prefix(USER_PREFIX) {
                        props.user.insert(user_name.to_owned(), value.to_vec());
                    }
                    // Unknown shale.* names come from newer writers and are safe to ignore.
                }
            }
            iter.next();
        }
        iter.status()?;
        if !seen_comparator {
            return Err(DecodeError::new("properties lack shale.comparator"));
        }
        if !seen_entries {
            return Err(DecodeError::new("properties lack shale.num_entries"));
        }
        Ok(props)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut props = TableProperties {
            comparator: "shale.BytewiseComparator".into(),
            compression: "lz4".into(),
            compression_level: -3,
            num_entries: 12,
            num_deletions: 2,
            smallest_key: b"a\x01\0\0\0\0\0\0\0".to_vec(),
            largest_key: b"z\x01\0\0\0\0\0\0\0".to_vec(),
            largest_seqno: 99,
            prefix_extractor: Some("shale.FixedPrefix.4".into()),
            ..TableProperties::default()
        };
        props
            .user
            .insert("schema".into(), b"CREATE TABLE t (a INT)".to_vec());
        let decoded = TableProperties::decode(props.encode()).unwrap();
        assert_eq!(decoded, props);
    }

    #[test]
    fn missing_required_is_corruption() {
        let mut builder = BlockBuilder::new(1);
        builder.add(b"shale.num_entries", &[1]);
        let err = TableProperties::decode(builder.finish().to_vec()).unwrap_err();
        assert!(err.0.contains("comparator"), "{err}");
    }
}
