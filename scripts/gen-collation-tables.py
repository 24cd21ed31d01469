#!/usr/bin/env python3
"""Generates the weight tables of shale-table's collations
(crates/shale-table/src/codec/collation/*.bin; format in docs/format/table-keys.md,
"Collation tables").

    scripts/gen-collation-tables.py ALLKEYS_9_0_0 MARIADB_CLIENT_COMMAND...

- uca900.bin: the DUCET of UCA 9.0.0 (allkeys-9.0.0.txt, Unicode, Inc.; the pyuca package on
  PyPI ships a copy) for single code points. Contractions are left out (a documented limit).
- uca400.bin, general_ci.bin, latin1_swedish_ci.bin: utf8mb4_unicode_ci (UCA 4.0.0),
  utf8mb3_general_ci and latin1_swedish_ci weights as MariaDB's WEIGHT_STRING reports them
  (MySQL's and MariaDB's tables for these collations are the same), read through the client
  command given, e.g. `mariadb -S /tmp/sock -uroot -N -B test`.

Every table is written with little-endian integers. Run it again only to check that the
checked-in files are what it makes: weights inside keys on disk must never change.
"""
import re
import struct
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "crates/shale-table/src/codec/collation"


def uca900(allkeys):
    entries = {}
    ce = re.compile(r"\[([.*])([0-9A-F]{4})\.([0-9A-F]{4})\.([0-9A-F]{4})\]")
    for line in open(allkeys, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("@"):
            continue
        chars, elements = line.split(";", 1)
        chars = chars.split()
        if len(chars) != 1:
            continue  # a contraction
        cp = int(chars[0], 16)
        ces = [(int(p, 16), int(s, 16), int(t, 16)) for _, p, s, t in ce.findall(elements)]
        entries[cp] = ces
    out = bytearray()
    for cp in sorted(entries):
        ces = entries[cp]
        out += struct.pack("<I", cp)[:3] + bytes([len(ces)])
        for p, s, t in ces:
            out += struct.pack("<HHB", p, s, t)
    (OUT / "uca900.bin").write_bytes(out)


def query(client, sql):
    text = subprocess.run(client + ["-e", sql], check=True, capture_output=True, text=True)
    return [line.split("\t") for line in text.stdout.splitlines()]


def weights_of(hexed):
    return [int(hexed[i : i + 4], 16) for i in range(0, len(hexed), 4)]


def bmp_table(client, collation, charset):
    rows = query(
        client,
        f"select seq, hex(weight_string(convert(char(seq using utf32) using {charset}) "
        f"collate {collation})) from seq_0_to_65535 where seq not between 55296 and 57343",
    )
    table = {int(cp): weights_of(w) for cp, w in rows}
    return [table.get(cp, []) for cp in range(0x10000)]


def main():
    allkeys, client = sys.argv[1], sys.argv[2:]
    uca900(allkeys)
    # unicode_ci: per BMP code point, a count and that many primary weights.
    out = bytearray()
    for ws in bmp_table(client, "utf8mb4_unicode_ci", "utf8mb4"):
        out += bytes([len(ws)]) + b"".join(struct.pack("<H", w) for w in ws)
    (OUT / "uca400.bin").write_bytes(out)
    # general_ci: one weight per BMP code point (surrogates weigh themselves).
    out = bytearray()
    for cp, ws in enumerate(bmp_table(client, "utf8mb3_general_ci", "utf8mb3")):
        assert len(ws) <= 1
        out += struct.pack("<H", ws[0] if ws else cp)
    (OUT / "general_ci.bin").write_bytes(out)
    rows = query(
        client,
        "select seq, hex(weight_string(char(seq using latin1) collate latin1_swedish_ci)) "
        "from seq_0_to_255",
    )
    (OUT / "latin1_swedish_ci.bin").write_bytes(bytes(int(w, 16) for _, w in rows))


main()
