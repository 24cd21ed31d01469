//! Self-describing table files: the properties every table file of the store records about
//! the index ids it holds and the table definitions behind them (docs/format/catalog.md,
//! "Table file properties"), so a single file can be read as rows (`shale tool sst`).
//!
//! [`Store::open`](crate::Store::open) installs an [`IndexIdCollectorFactory`] on the
//! default keyspace, where the rows and the catalog live. Every file the engine writes there
//! (flushes, compactions, bulk loads' external files) gets a collector that notes each new
//! 4-byte index id prefix as keys go by in order (one 4-byte comparison per entry) and, at
//! finish, looks the ids up in the catalog the store holds at that moment.
//!
//! Invariants:
//! 1. `shale_table.index_ids` lists every index id of the file's point entries (keys of at
//!    least 4 bytes), ascending, each once; range tombstones are not entries.
//! 2. `shale_table.table_defs` holds one definition per table of the catalog (at finish)
//!    owning at least one of those ids, encoded as the catalog's `T` value, with the ids of
//!    it the file holds. An id no table owns then (a dropped table or index, the catalog's
//!    own id 1, an index still being built) is listed in `index_ids` only.
//! 3. Decoding treats the bytes as untrusted: a malformed property is
//!    [`Error::Corruption`] naming the property, never a panic.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use shale_engine::{
    TableFileContext, TablePropertiesCollector, TablePropertiesCollectorFactory, ValueKind,
};

use crate::codec::{put_bytes, put_varint, Reader};
use crate::error::{Error, Result};
use crate::schema::{Catalog, TableDef};
use crate::system;

/// The property (stored as `user.shale_table.index_ids`) listing the file's index ids.
pub const INDEX_IDS_PROPERTY: &str = "shale_table.index_ids";
/// The property (stored as `user.shale_table.table_defs`) with the definitions behind them.
pub const TABLE_DEFS_PROPERTY: &str = "shale_table.table_defs";
/// The version byte both properties start with.
const PROPERTY_VERSION: u8 = 1;

/// The catalog as the store holds it: swapped whole by DDL, read by collectors at finish.
pub(crate) type SharedCatalog = Arc<RwLock<Arc<Catalog>>>;

/// Makes an [`IndexIdCollector`] per table file of the store's default keyspace.
#[derive(Debug)]
pub(crate) struct IndexIdCollectorFactory {
    catalog: SharedCatalog,
}

impl IndexIdCollectorFactory {
    pub(crate) fn new(catalog: SharedCatalog) -> Self {
        IndexIdCollectorFactory { catalog }
    }
}

impl TablePropertiesCollectorFactory for IndexIdCollectorFactory {
    fn name(&self) -> &'static str {
        "shale_table.index_ids"
    }

    fn create_collector(&self, _: TableFileContext<'_>) -> Box<dyn TablePropertiesCollector> {
        Box::new(IndexIdCollector {
            catalog: self.catalog.clone(),
            ids: Vec::new(),
            last_prefix: None,
        })
    }
}

/// Collects one file's index ids (module docs).
#[derive(Debug)]
struct IndexIdCollector {
    catalog: SharedCatalog,
    ids: Vec<u32>,
    /// The index id prefix of the last key seen: keys come in order, so an id is pushed once
    /// per run of keys.
    last_prefix: Option<[u8; 4]>,
}

impl TablePropertiesCollector for IndexIdCollector {
    fn add(&mut self, user_key: &[u8], _: ValueKind, _: &[u8]) {
        let Some(prefix) = user_key.first_chunk::<4>() else {
            return;
        };
        if self.last_prefix.as_ref() != Some(prefix) {
            self.last_prefix = Some(*prefix);
            self.ids.push(u32::from_be_bytes(*prefix));
        }
    }

    fn finish(&mut self) -> BTreeMap<String, Vec<u8>> {
        let mut properties = BTreeMap::new();
        if self.ids.is_empty() {
            return properties;
        }
        // In order already under the store's bytewise comparator; made certain for any.
        self.ids.sort_unstable();
        self.ids.dedup();
        let catalog = self
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let tables = tables_owning(&catalog, &self.ids);
        properties.insert(INDEX_IDS_PROPERTY.to_owned(), encode_index_ids(&self.ids));
        if !tables.is_empty() {
            properties.insert(TABLE_DEFS_PROPERTY.to_owned(), encode_table_defs(&tables));
        }
        properties
    }
}

/// The tables of `catalog` owning at least one of `ids` (ascending), each with the ids of it
/// among them.
fn tables_owning<'c>(catalog: &'c Catalog, ids: &[u32]) -> Vec<(&'c TableDef, Vec<u32>)> {
    let mut owning = Vec::new();
    for table in catalog.databases.values().flat_map(BTreeMap::values) {
        let mut held: Vec<u32> = std::iter::once(&table.primary_key)
            .chain(&table.indexes)
            .map(|index| index.index_id)
            .filter(|id| ids.binary_search(id).is_ok())
            .collect();
        if !held.is_empty() {
            held.sort_unstable();
            owning.push((table.as_ref(), held));
        }
    }
    owning
}

fn encode_index_ids(ids: &[u32]) -> Vec<u8> {
    let mut out = vec![PROPERTY_VERSION];
    put_varint(&mut out, ids.len() as u64);
    for id in ids {
        out.extend_from_slice(&id.to_be_bytes());
    }
    out
}

fn encode_table_defs(tables: &[(&TableDef, Vec<u32>)]) -> Vec<u8> {
    let mut out = vec![PROPERTY_VERSION];
    put_varint(&mut out, tables.len() as u64);
    for (table, ids) in tables {
        put_varint(&mut out, ids.len() as u64);
        for id in ids {
            out.extend_from_slice(&id.to_be_bytes());
        }
        put_bytes(&mut out, &system::encode_table(table));
    }
    out
}

/// What a table file says it holds: its index ids and the tables behind those the catalog
/// knew when the file was written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileTables {
    /// Every index id of the file's entries, ascending.
    pub index_ids: Vec<u32>,
    /// One entry per table owning some of them: its definition and which of its ids (table
    /// id and secondary index ids) the file holds, ascending.
    pub tables: Vec<(TableDef, Vec<u32>)>,
}

impl FileTables {
    /// Reads the properties of a table file (its `user.<name>` map, as
    /// `shale_engine::inspect::read_table_properties` returns it). `file` names the file in
    /// errors. `Ok(None)` when the file has no such properties (written by another program,
    /// or before this build, or holding no keys).
    pub fn from_properties(
        user_properties: &BTreeMap<String, Vec<u8>>,
        file: &Path,
    ) -> Result<Option<FileTables>> {
        let Some(ids) = user_properties.get(INDEX_IDS_PROPERTY) else {
            return Ok(None);
        };
        let bad = |name: &str, e: Error| {
            let detail = match e {
                Error::Corruption(detail) => detail,
                other => other.to_string(),
            };
            Error::Corruption(format!(
                "table file {} has a malformed property user.{name}: {detail}",
                file.display()
            ))
        };
        let index_ids = decode_index_ids(ids).map_err(|e| bad(INDEX_IDS_PROPERTY, e))?;
        let tables = match user_properties.get(TABLE_DEFS_PROPERTY) {
            None => Vec::new(),
            Some(bytes) => {
                decode_table_defs(bytes, &index_ids).map_err(|e| bad(TABLE_DEFS_PROPERTY, e))?
            }
        };
        Ok(Some(FileTables { index_ids, tables }))
    }

    /// The table owning `index_id`, and the index: `None` for its primary key, else the
    /// position in [`TableDef::indexes`].
    pub fn lookup(&self, index_id: u32) -> Option<(&TableDef, Option<usize>)> {
        self.tables.iter().find_map(|(table, ids)| {
            if !ids.contains(&index_id) {
                return None;
            }
            if table.primary_key.index_id == index_id {
                return Some((table, None));
            }
            let position = table.indexes.iter().position(|i| i.index_id == index_id)?;
            Some((table, Some(position)))
        })
    }
}

fn check_version(reader: &mut Reader<'_>) -> Result<()> {
    match reader.u8()? {
        PROPERTY_VERSION => Ok(()),
        v => Err(reader.corruption(&format!("version {v}; this build reads {PROPERTY_VERSION}"))),
    }
}

/// A count of 4-byte ids, bounded by the bytes left so a bad count cannot allocate much.
fn read_ids(reader: &mut Reader<'_>) -> Result<Vec<u32>> {
    let count = reader.varint()?;
    if count > (reader.rest().len() / 4) as u64 {
        return Err(reader.corruption(&format!("{count} ids in fewer bytes")));
    }
    let mut ids = Vec::new();
    for _ in 0..count {
        let id = u32::from_be_bytes(reader.array()?);
        if ids.last().is_some_and(|&last| last >= id) {
            return Err(reader.corruption("ids out of order"));
        }
        ids.push(id);
    }
    Ok(ids)
}

fn decode_index_ids(bytes: &[u8]) -> Result<Vec<u32>> {
    let mut reader = Reader::new(bytes, "index id list");
    check_version(&mut reader)?;
    let ids = read_ids(&mut reader)?;
    if !reader.is_empty() {
        return Err(reader.corruption("bytes after the last id"));
    }
    Ok(ids)
}

fn decode_table_defs(bytes: &[u8], index_ids: &[u32]) -> Result<Vec<(TableDef, Vec<u32>)>> {
    let mut reader = Reader::new(bytes, "table definitions");
    check_version(&mut reader)?;
    let count = reader.varint()?;
    let mut tables = Vec::new();
    for _ in 0..count {
        let ids = read_ids(&mut reader)?;
        let table = system::decode_table(reader.len_prefixed()?)?;
        for id in &ids {
            let owned = table.primary_key.index_id == *id
                || table.indexes.iter().any(|index| index.index_id == *id);
            if !owned || index_ids.binary_search(id).is_err() {
                return Err(reader.corruption(&format!(
                    "index id {id} listed for table '{}.{}' is not one of its ids in the file",
                    table.database, table.name
                )));
            }
        }
        tables.push((table, ids));
    }
    if !reader.is_empty() {
        return Err(reader.corruption("bytes after the last definition"));
    }
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_as_documented() {
        // docs/format/catalog.md, "Table file properties".
        assert_eq!(encode_index_ids(&[1, 256]), [1, 2, 0, 0, 0, 1, 0, 0, 1, 0]);
        let mut table = crate::testing::sysbench_table(false);
        table.primary_key.index_id = 256;
        table.indexes[0].index_id = 257;
        let definition = system::encode_table(&table);
        // version 1, one table, holding two ids: 256 and 257, then its definition.
        let mut expected = vec![1, 1, 2, 0, 0, 1, 0, 0, 0, 1, 1];
        put_bytes(&mut expected, &definition);
        assert_eq!(encode_table_defs(&[(&table, vec![256, 257])]), expected);
        assert_eq!(
            decode_table_defs(&expected, &[1, 256, 257]).unwrap(),
            vec![(table, vec![256, 257])]
        );
    }

    #[test]
    fn index_ids_round_trip_and_refuse_bad_bytes() {
        let ids = [1, 256, 300];
        assert_eq!(decode_index_ids(&encode_index_ids(&ids)).unwrap(), ids);
        let good = encode_index_ids(&ids);
        for (bad, what) in [
            (vec![2, 0], "version 2"),
            (good[..good.len() - 1].to_vec(), "fewer bytes"),
            ([good.clone(), vec![0]].concat(), "after the last id"),
            (encode_index_ids(&[5, 4]), "out of order"),
            (vec![1, 0xff, 0xff, 0xff, 0xff, 0x0f], "fewer bytes"),
            (Vec::new(), ""),
        ] {
            let err = decode_index_ids(&bad).unwrap_err().to_string();
            assert!(err.contains(what), "{bad:?}: {err}");
        }
    }
}
