//! `shale tool sst FILE`: shows what is inside a sorted table (docs/format/sst.md), like
//! `sst_dump` of `RocksDB`.
//!
//! Views, printed in this order when asked for: properties (the default when no other view is
//! asked for), blocks (`Table::layout`, which reads and checks every block), filter statistics,
//! entries (`--scan`, with `--from`/`--to`/`--limit`), and the verification result.
//!
//! A table file written by the table layer names the tables it holds (docs/format/catalog.md,
//! "Table file properties"): `--scan` then prints their entries as rows with named columns
//! (`shale_table::FileTables::describe_entry`), and every other entry as bytes; `--raw` prints
//! all as bytes. Malformed table properties are reported (exit 2) after a scan in bytes. With
//! `--json` the same views are fields of one JSON object instead. Exit codes follow
//! [`crate::output`]: 2 for any corruption found, 1 for other errors.

use std::io::{self, BufWriter, Write};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use shale_fs::OsFs;
use shale_sst::{
    printable, BlockInfo, BlockKind, Compression, FilterStats, IndexEntry, ParsedInternalKey,
    ReadOptions, Table, TableLayout, TableOpenOptions, TableProperties,
};
use shale_table::FileTables;

use crate::output::{Failure, Render};
use crate::SstToolArgs;

/// The bloom filter false-positive rate the standard formula predicts: `(1 - e^(-k n / m))^k`
/// for `m` bits, `k` probes and `n` keys.
pub fn estimated_false_positive_rate(bits: u64, probes: u32, keys: u64) -> f64 {
    if bits == 0 {
        return 1.0;
    }
    let k = f64::from(probes);
    let exponent = -k * keys as f64 / bits as f64;
    (1.0 - exponent.exp()).powf(k)
}

/// Where the views go: text sections on stdout, or fields of one JSON object printed at the end.
struct Printer<W: Write> {
    out: W,
    /// The JSON object being built, when `--json`.
    doc: Option<Map<String, Value>>,
    /// Whether text sections get a `--- name ---` heading (more than one view asked for).
    headings: bool,
}

impl<W: Write> Printer<W> {
    /// Prints one view: `json` builds its field, `text` writes its text.
    fn view(
        &mut self,
        name: &str,
        json: impl FnOnce() -> Value,
        text: impl FnOnce(&mut W) -> io::Result<()>,
    ) -> Result<(), Failure> {
        if let Some(doc) = &mut self.doc {
            doc.insert(name.to_owned(), json());
        } else {
            self.heading(name)?;
            text(&mut self.out)?;
        }
        Ok(())
    }

    /// The `--- name ---` line before a text section, when there is more than one.
    fn heading(&mut self, name: &str) -> io::Result<()> {
        if self.headings && self.doc.is_none() {
            writeln!(self.out, "--- {name} ---")?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(), Failure> {
        if let Some(doc) = self.doc.take() {
            serde_json::to_writer_pretty(&mut self.out, &Value::Object(doc))
                .map_err(io::Error::from)?;
            writeln!(self.out)?;
        }
        self.out.flush()?;
        Ok(())
    }
}

/// Runs the tool.
pub fn run(args: &SstToolArgs) -> Result<(), Failure> {
    let render = Render { hex: args.hex };
    let parse = |text: &Option<String>, flag| text.as_deref().map(|t| render.parse_key(t, flag));
    let lower = parse(&args.from, "--from").transpose()?;
    let upper = parse(&args.to, "--to").transpose()?;
    let table = Table::open(&OsFs::new(), &args.file, &TableOpenOptions::default())?;
    let show_properties =
        args.properties || !(args.blocks || args.index || args.scan || args.filter || args.verify);
    let views = [
        show_properties,
        args.blocks,
        args.index,
        args.filter,
        args.scan,
        args.verify,
    ];
    let mut printer = Printer {
        out: BufWriter::new(io::stdout().lock()),
        doc: args.json.then(|| {
            let mut doc = Map::new();
            doc.insert("file".into(), json!(args.file.display().to_string()));
            doc.insert("file_size".into(), json!(table.file_size()));
            doc
        }),
        headings: views.iter().filter(|&&on| on).count() > 1,
    };
    if show_properties {
        properties_view(&table, args, render, &mut printer)?;
    }
    // The layout walk checks every block, so --blocks and --verify share one walk.
    let layout = (args.blocks || args.verify).then(|| table.layout());
    if let (true, Some(layout)) = (args.blocks, &layout) {
        let layout = layout.as_ref().map_err(shale_sst::Error::duplicate)?;
        printer.view(
            "blocks",
            || blocks_json(layout, render),
            |out| write!(out, "{layout}"),
        )?;
    }
    if args.index {
        print_index(&table, render, &mut printer)?;
    }
    if args.filter {
        let (filter, prefix_filter) = table.filter_stats();
        let keys = table.properties().num_entries;
        printer.view(
            "filter",
            || filter_json(filter, keys),
            |out| {
                writeln!(out, "filter: {}", filter_text(filter, keys))?;
                writeln!(out, "prefix filter: {}", filter_text(prefix_filter, keys))
            },
        )?;
        if let Some(doc) = &mut printer.doc {
            doc.insert("prefix_filter".into(), filter_json(prefix_filter, keys));
        }
    }
    let rows_failure = if args.scan {
        scan_view(&table, args, (lower, upper), render, &mut printer)?
    } else {
        None
    };
    let mut verify_failure = None;
    if let (true, Some(layout)) = (args.verify, layout) {
        let checksum = table.checksum_type().name();
        let result = match &layout {
            Ok(l) => json!({ "ok": true, "blocks": l.blocks.len(), "checksum": checksum }),
            Err(e) => json!({ "ok": false, "error": e.to_string() }),
        };
        match layout {
            Ok(l) => printer.view(
                "verify",
                || result,
                |out| {
                    writeln!(
                        out,
                        "verify: ok, {} blocks and the footer of {} checked ({checksum} checksums)",
                        l.blocks.len(),
                        args.file.display()
                    )
                },
            )?,
            Err(e) => {
                printer.view("verify", || result, |_| Ok(()))?;
                verify_failure = Some(Failure::from(e));
            }
        }
    }
    printer.finish()?;
    verify_failure.or(rows_failure).map_or(Ok(()), Err)
}

/// The `--scan` view: entries within `bounds`, as rows where the file describes its tables
/// (unless `--raw`). Returns the failure to report once everything is printed: table
/// properties that do not decode.
fn scan_view<W: Write>(
    table: &Arc<Table>,
    args: &SstToolArgs,
    bounds: (Option<Vec<u8>>, Option<Vec<u8>>),
    render: Render,
    printer: &mut Printer<W>,
) -> Result<Option<Failure>, Failure> {
    let options = ReadOptions {
        lower_bound: bounds.0,
        upper_bound: bounds.1,
        skip_cache_fill: true,
        ..ReadOptions::default()
    };
    let mut failure = None;
    let tables = if args.raw {
        None
    } else {
        FileTables::from_properties(&table.properties().user, &args.file)
            .map_err(|e| failure = Some(Failure::Corruption(e.to_string())))
            .ok()
            .flatten()
    };
    let entries = scan(table, options, args.limit, render, tables.as_ref(), printer)?;
    if let Some(doc) = &mut printer.doc {
        doc.insert("entries".into(), Value::Array(entries));
    }
    Ok(failure)
}

/// The properties view, with the tables the table layer's properties describe decoded
/// (docs/format/catalog.md, "Table file properties").
fn properties_view<W: Write>(
    table: &Table,
    args: &SstToolArgs,
    render: Render,
    printer: &mut Printer<W>,
) -> Result<(), Failure> {
    let props = table.properties();
    let described = match FileTables::from_properties(&props.user, &args.file) {
        Ok(tables) => tables.as_ref().map(described_tables).unwrap_or_default(),
        Err(e) => vec![format!("(not decodable: {e})")],
    };
    printer.view(
        "properties",
        || {
            let mut json = properties_json(props, render);
            json["tables"] = json!(described);
            json
        },
        |out| {
            write!(out, "{}", props.describe())?;
            described
                .iter()
                .try_for_each(|line| writeln!(out, "{line}"))
        },
    )
}

/// One line per table the file describes: its name and the ids of it the file holds, each
/// with its index's name.
fn described_tables(tables: &FileTables) -> Vec<String> {
    tables
        .tables
        .iter()
        .map(|(table, ids)| {
            let ids: Vec<String> = ids
                .iter()
                .map(|&id| {
                    let index = std::iter::once(&table.primary_key)
                        .chain(&table.indexes)
                        .find(|index| index.index_id == id);
                    format!("{id} ({})", index.map_or("?", |i| i.name.as_str()))
                })
                .collect();
            format!(
                "table {}.{}: index ids {}",
                table.database,
                table.name,
                ids.join(", ")
            )
        })
        .collect()
}

/// Prints entries within `options`' bounds, at most `limit`; with JSON, returns them instead.
/// With `tables`, entries of the tables the file describes are shown as rows too.
fn scan<W: Write>(
    table: &Arc<Table>,
    options: ReadOptions,
    limit: Option<u64>,
    render: Render,
    tables: Option<&FileTables>,
    printer: &mut Printer<W>,
) -> Result<Vec<Value>, Failure> {
    let mut iter = table.iter(options);
    let mut collected = Vec::new();
    let mut count = 0u64;
    printer.heading("entries")?;
    iter.seek_to_first();
    while iter.valid() && limit.is_none_or(|l| count < l) {
        let key = ParsedInternalKey::parse(iter.key()).map_err(|e| {
            Failure::Corruption(format!(
                "corruption in {}: entry {count} of the scan has key {}: {e}",
                table.path().display(),
                printable(iter.key())
            ))
        })?;
        // A row, or why an entry of a described table does not decode.
        let row = tables.map(|t| t.describe_entry(key.user_key, key.kind, iter.value()));
        let (row, undecodable) = match row {
            Some(Ok(Some(text))) => (Some(text), None),
            Some(Err(e)) => (None, Some(e.to_string())),
            Some(Ok(None)) | None => (None, None),
        };
        if printer.doc.is_some() {
            let mut entry = json!({
                "key": render.bytes_unquoted(key.user_key),
                "seqno": key.seqno,
                "kind": key.kind.name(),
                "value": render.bytes_unquoted(iter.value()),
            });
            if let Some(row) = row {
                entry["row"] = json!(row);
            }
            if let Some(error) = undecodable {
                entry["row_error"] = json!(error);
            }
            collected.push(entry);
        } else if let Some(row) = row {
            writeln!(printer.out, "{row} @{}", key.seqno)?;
        } else {
            if let Some(error) = undecodable {
                write!(printer.out, "(not decodable: {error}) ")?;
            }
            writeln!(
                printer.out,
                "{}@{}:{} => {}",
                render.bytes(key.user_key),
                key.seqno,
                key.kind.name(),
                render.bytes(iter.value())
            )?;
        }
        count += 1;
        iter.next();
    }
    iter.status()?;
    Ok(collected)
}

/// The index view: format version, separator form, and one line per data block.
fn print_index<W: Write>(
    table: &Table,
    render: Render,
    printer: &mut Printer<W>,
) -> Result<(), Failure> {
    let entries = table.index_entries()?;
    let version = table.footer().format_version;
    printer.view(
        "index",
        || index_json(&entries, version, render),
        |out| write_index(out, &entries, version, render),
    )
}

/// A separator as the index stores it: a user key, or an internal key.
fn separator_text(entry: &IndexEntry, render: Render) -> String {
    if entry.separator_is_user_key {
        render.bytes(&entry.separator)
    } else {
        render.internal_key(&entry.separator)
    }
}

fn write_index<W: Write>(
    out: &mut W,
    entries: &[IndexEntry],
    format_version: u32,
    render: Render,
) -> io::Result<()> {
    let user_keys = entries.first().is_some_and(|e| e.separator_is_user_key);
    writeln!(
        out,
        "index: format version {format_version}, {} entries, separators are {}",
        entries.len(),
        if user_keys {
            "user keys"
        } else {
            "internal keys"
        }
    )?;
    for entry in entries {
        writeln!(
            out,
            "{} -> offset {} size {}",
            separator_text(entry, render),
            entry.handle.offset,
            entry.handle.size
        )?;
    }
    Ok(())
}

fn index_json(entries: &[IndexEntry], format_version: u32, render: Render) -> Value {
    json!({
        "format_version": format_version,
        "separators_are_user_keys": entries.first().is_some_and(|e| e.separator_is_user_key),
        "entries": entries.iter().map(|e| json!({
            "separator": separator_text(e, render),
            "offset": e.handle.offset,
            "size": e.handle.size,
        })).collect::<Vec<_>>(),
    })
}

fn filter_text(stats: Option<FilterStats>, keys: u64) -> String {
    let Some(f) = stats else {
        return "none".to_owned();
    };
    let bits_per_key = if keys == 0 {
        0.0
    } else {
        f.num_bits as f64 / keys as f64
    };
    format!(
        "{} bits, {} probes, {} bytes, {bits_per_key:.2} bits/key over {keys} entries, \
         estimated false-positive rate {:.4}% ((1-e^(-kn/m))^k)",
        f.num_bits,
        f.num_probes,
        f.size_bytes,
        estimated_false_positive_rate(f.num_bits, f.num_probes, keys) * 100.0
    )
}

fn filter_json(stats: Option<FilterStats>, keys: u64) -> Value {
    let Some(f) = stats else {
        return Value::Null;
    };
    json!({
        "bits": f.num_bits,
        "probes": f.num_probes,
        "bytes": f.size_bytes,
        "keys": keys,
        "bits_per_key": if keys == 0 { 0.0 } else { f.num_bits as f64 / keys as f64 },
        "estimated_false_positive_rate":
            estimated_false_positive_rate(f.num_bits, f.num_probes, keys),
    })
}

fn properties_json(p: &TableProperties, render: Render) -> Value {
    let user: Map<String, Value> = p
        .user
        .iter()
        .map(|(name, value)| (name.clone(), json!(render.bytes_unquoted(value))))
        .collect();
    json!({
        "comparator": p.comparator,
        "compression": p.compression,
        "compression_level": p.compression_level,
        "creation_time": p.creation_time,
        "data_size": p.data_size,
        "filter_bits_per_key": p.filter_bits_per_key,
        "filter_size": p.filter_size,
        "format_version": p.format_version,
        "index_size": p.index_size,
        "largest_key": render.internal_key(&p.largest_key),
        "largest_seqno": p.largest_seqno,
        "num_data_blocks": p.num_data_blocks,
        "num_deletions": p.num_deletions,
        "num_entries": p.num_entries,
        "num_range_deletions": p.num_range_deletions,
        "oldest_entry_time": p.oldest_entry_time,
        "prefix_extractor": p.prefix_extractor,
        "raw_key_size": p.raw_key_size,
        "raw_value_size": p.raw_value_size,
        "smallest_key": render.internal_key(&p.smallest_key),
        "smallest_seqno": p.smallest_seqno,
        "user": user,
    })
}

fn blocks_json(layout: &TableLayout, render: Render) -> Value {
    let block = |b: &BlockInfo| {
        let internal = match b.kind {
            BlockKind::Data | BlockKind::RangeDeletion => true,
            BlockKind::Index => !layout.index_user_keys,
            _ => false,
        };
        let key = |k: &Option<Vec<u8>>| {
            k.as_deref().map(|k| {
                if internal {
                    render.internal_key(k)
                } else {
                    render.bytes(k)
                }
            })
        };
        json!({
            "offset": b.handle.offset,
            "size": b.handle.size,
            "raw_size": b.uncompressed_size,
            "kind": b.kind.name(),
            "compression": Compression::from_tag(b.compression).map_or("unknown", Compression::name),
            "checksum": format!("{:#010x}", b.checksum),
            "entries": b.entries,
            "first_key": key(&b.first_key),
            "last_key": key(&b.last_key),
        })
    };
    json!({
        "file_size": layout.file_size,
        "format_version": layout.footer.format_version,
        "index_separators_are_user_keys": layout.index_user_keys,
        "checksum": layout.footer.checksum_type.name(),
        "blocks": layout.blocks.iter().map(block).collect::<Vec<_>>(),
        "footer": {
            "offset": layout.file_size - shale_sst::format::FOOTER_SIZE as u64,
            "metaindex": { "offset": layout.footer.metaindex.offset, "size": layout.footer.metaindex.size },
            "index": { "offset": layout.footer.index.offset, "size": layout.footer.index.size },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_matches_the_formula_and_known_points() {
        // 10 bits/key, 7 probes: about 0.82% (the classic figure).
        let rate = estimated_false_positive_rate(10_000, 7, 1_000);
        assert!((rate - 0.008_193).abs() < 1e-5, "{rate}");
        assert!((estimated_false_positive_rate(0, 7, 10) - 1.0).abs() < f64::EPSILON);
        assert!(estimated_false_positive_rate(1000, 3, 0).abs() < f64::EPSILON);
    }

    #[test]
    fn hex_render_shows_user_key_seqno_and_kind() {
        let mut key = b"ab".to_vec();
        key.extend_from_slice(&((7u64 << 8) | 1).to_le_bytes());
        assert_eq!(Render { hex: true }.internal_key(&key), "6162@7:put");
        assert_eq!(Render { hex: false }.internal_key(&key), "\"ab\"@7:put");
        assert_eq!(Render { hex: true }.internal_key(&[]), "(none)");
    }
}
