//! Data-driven key encodings: `tests/testdata/key_encodings.txt` lists `type value` lines; this
//! test encodes each and checks the hex after `->`. Regenerate the right-hand sides with
//! `SHALE_REGENERATE_GOLDEN=1 cargo test -p shale-table --test key_encodings`.

use std::fmt::Write as _;

use shale_table::testing::encode_key_column;
use shale_table::{Collation, ColumnDef, ColumnType, DateTime, Decimal, Value};

fn parse_type(name: &str) -> ColumnDef {
    let nullable = name.ends_with('?');
    let name = name.trim_end_matches('?');
    let string = |collation| ColumnType::VarChar { len: 32, collation };
    let ty = match name {
        "tinyint" => ColumnType::TinyInt { unsigned: false },
        "tinyint_unsigned" => ColumnType::TinyInt { unsigned: true },
        "smallint" => ColumnType::SmallInt { unsigned: false },
        "mediumint" => ColumnType::MediumInt { unsigned: false },
        "int" => ColumnType::Int { unsigned: false },
        "bigint" => ColumnType::BigInt { unsigned: false },
        "bigint_unsigned" => ColumnType::BigInt { unsigned: true },
        "double" => ColumnType::Double,
        "decimal" => ColumnType::Decimal {
            precision: 65,
            scale: 30,
        },
        "date" => ColumnType::Date,
        "datetime6" => ColumnType::DateTime { fsp: 6 },
        "timestamp3" => ColumnType::Timestamp { fsp: 3 },
        "year" => ColumnType::Year,
        "time" => ColumnType::Time { fsp: 0 },
        "time6" => ColumnType::Time { fsp: 6 },
        "binary" => string(Collation::Binary),
        "bin" => string(Collation::Utf8mb4Bin),
        "ci" => string(Collation::Utf8mb4GeneralCi),
        other => panic!("unknown type {other}"),
    };
    ColumnDef {
        name: "c".into(),
        ty,
        nullable,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    }
}

fn parse_value(column: &ColumnDef, text: &str) -> Value {
    if text == "NULL" {
        return Value::Null;
    }
    if let Some(quoted) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        return Value::Bytes(
            quoted
                .replace("\\0", "\0")
                .replace("\\t", "\t")
                .into_bytes(),
        );
    }
    match column.ty {
        ColumnType::Double => Value::Double(text.parse().unwrap()),
        ColumnType::Decimal { .. } => Value::Decimal(Decimal::parse(text).unwrap()),
        ColumnType::Date => Value::DateTime(DateTime::parse(text, None).unwrap()),
        ColumnType::DateTime { fsp } | ColumnType::Timestamp { fsp } => {
            Value::DateTime(DateTime::parse(&text.replace('_', " "), Some(fsp)).unwrap())
        }
        ColumnType::Time { fsp } => match shale_table::Time::parse(text, fsp) {
            shale_table::TimeParse::Ok(t) => Value::Time(t),
            other => panic!("{text}: {other:?}"),
        },
        ColumnType::TinyInt { unsigned: true }
        | ColumnType::BigInt { unsigned: true }
        | ColumnType::Year => Value::UInt(text.parse().unwrap()),
        _ => Value::Int(text.parse().unwrap()),
    }
}

#[test]
fn key_encodings_match_the_fixture() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/testdata/key_encodings.txt"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            writeln!(out, "{line}").unwrap();
            continue;
        }
        let input = line.split(" -> ").next().unwrap();
        let (ty, value) = input.split_once(' ').unwrap();
        let column = parse_type(ty);
        let bytes = encode_key_column(&column, &parse_value(&column, value)).unwrap();
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(out, "{input} -> {}", hex.join(" ")).unwrap();
    }
    if std::env::var_os("SHALE_REGENERATE_GOLDEN").is_some() {
        std::fs::write(path, &out).unwrap();
    }
    let expected = std::fs::read_to_string(path).unwrap();
    assert_eq!(
        out, expected,
        "key encodings changed; regenerate with SHALE_REGENERATE_GOLDEN=1 if deliberate"
    );
}

/// TIMESTAMP keys: for instants across the whole range, written as UTC values, the byte order
/// of the encodings is the order of the instants, and every value survives a row round trip.
#[test]
fn timestamp_keys_sort_in_utc_order_and_round_trip() {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    let column = ColumnDef {
        name: "ts".into(),
        ty: ColumnType::Timestamp { fsp: 6 },
        nullable: true,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    };
    let table = shale_table::TableDef {
        database: "d".into(),
        name: "t".into(),
        columns: vec![column.clone()],
        primary_key: shale_table::IndexDef {
            name: "PRIMARY".into(),
            columns: Vec::new(),
            unique: true,
            index_id: 256,
        },
        indexes: Vec::new(),
        schema_version: 1,
        past_versions: Vec::new(),
    };
    let first = 1_000_000i64;
    let last = (1i64 << 31) * 1_000_000 - 1;
    let mut rng = SmallRng::seed_from_u64(21);
    let mut instants: Vec<i64> = (0..2000).map(|_| rng.gen_range(first..=last)).collect();
    instants.extend([first, first + 1, last - 1, last]);
    let mut encoded: Vec<(Vec<u8>, i64)> = Vec::new();
    for &micros in &instants {
        let utc = DateTime::from_unix_micros(micros, Some(6)).unwrap();
        assert!(utc.in_timestamp_range());
        let value = Value::DateTime(utc);
        encoded.push((encode_key_column(&column, &value).unwrap(), micros));
        let row = shale_table::testing::encode_row(&table, std::slice::from_ref(&value)).unwrap();
        assert_eq!(
            shale_table::testing::decode_row(&table, &row).unwrap(),
            vec![value]
        );
    }
    let null = encode_key_column(&column, &Value::Null).unwrap();
    assert!(encoded.iter().all(|(bytes, _)| null < *bytes));
    encoded.sort();
    assert!(encoded.windows(2).all(|w| w[0].1 <= w[1].1));
    let outside = DateTime::from_unix_micros(first - 1, Some(6)).unwrap();
    assert!(!outside.in_timestamp_range());
    assert!(!DateTime::from_unix_micros(last + 1, Some(6))
        .unwrap()
        .in_timestamp_range());
}

/// TIME keys: random values over the whole range (and its ends) encode in SQL order, and
/// every value survives a row round trip; out-of-range and too-fine values are refused.
#[test]
fn time_keys_sort_in_sql_order_and_round_trip() {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use shale_table::{Time, TIME_MAX_MICROS};

    for fsp in [0u8, 3, 6] {
        let column = ColumnDef {
            name: "t".into(),
            ty: ColumnType::Time { fsp },
            nullable: true,
            default: None,
            auto_increment: false,
            auto_timestamp: shale_table::AutoTimestamp::default(),
            generated: None,
        };
        let table = shale_table::TableDef {
            database: "d".into(),
            name: "t".into(),
            columns: vec![column.clone()],
            primary_key: shale_table::IndexDef {
                name: "PRIMARY".into(),
                columns: Vec::new(),
                unique: true,
                index_id: 256,
            },
            indexes: Vec::new(),
            schema_version: 1,
            past_versions: Vec::new(),
        };
        let unit = 10i64.pow(6 - u32::from(fsp));
        let mut rng = SmallRng::seed_from_u64(22 + u64::from(fsp));
        let mut values: Vec<i64> = (0..2000)
            .map(|_| rng.gen_range(-TIME_MAX_MICROS..=TIME_MAX_MICROS) / unit * unit)
            .collect();
        values.extend([-TIME_MAX_MICROS, -unit, 0, unit, TIME_MAX_MICROS]);
        let mut encoded: Vec<(Vec<u8>, i64)> = Vec::new();
        for &micros in &values {
            let value = Value::Time(Time::from_micros(micros, fsp).unwrap());
            encoded.push((encode_key_column(&column, &value).unwrap(), micros));
            let row =
                shale_table::testing::encode_row(&table, std::slice::from_ref(&value)).unwrap();
            assert_eq!(
                shale_table::testing::decode_row(&table, &row).unwrap(),
                vec![value]
            );
        }
        let null = encode_key_column(&column, &Value::Null).unwrap();
        assert!(encoded.iter().all(|(bytes, _)| null < *bytes));
        encoded.sort();
        assert!(encoded.windows(2).all(|w| w[0].1 <= w[1].1));
        // Equal values encode equally: byte order is exactly SQL order.
        assert!(encoded
            .windows(2)
            .all(|w| (w[0].0 == w[1].0) == (w[0].1 == w[1].1)));
        assert!(Time::from_micros(TIME_MAX_MICROS + unit, fsp).is_none());
        if fsp < 6 {
            let fine = Time::from_micros(1, 6).unwrap();
            assert!(shale_table::testing::encode_row(&table, &[Value::Time(fine)]).is_err());
        }
    }
}
