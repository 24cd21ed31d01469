//! AES_ENCRYPT and AES_DECRYPT, in the session's `block_encryption_mode`.
//!
//! Rules (MySQL 8's; the default mode's results match MariaDB 10.11 byte for byte):
//! 1. `block_encryption_mode` is `aes-K-M` with K in 128, 192, 256 and M `ecb` or `cbc`
//!    (default `aes-128-ecb`); MySQL's other modes (cfb1, cfb8, cfb128, ofb) are refused
//!    by SET with 1231, since Shale does not implement them.
//! 2. The key is folded into K/8 bytes: starting from zeros, key byte i is XORed into
//!    byte i mod K/8 (a short key is zero-padded, a long one wraps around).
//! 3. Plain text is padded as PKCS #7 (1 to 16 bytes, each holding the pad length), so the
//!    result is 16 * (len / 16 + 1) bytes. AES_DECRYPT gives NULL for a length that is not
//!    a positive multiple of 16 or a bad padding (a wrong key usually shows as one).
//! 4. CBC needs the third argument, an initialization vector of at least 16 bytes (its
//!    first 16 are used): without one the call is 1582, a shorter one 1619. ECB ignores
//!    a given vector (MySQL adds warning 1618 then; Shale does not).
//! 5. A NULL text, key or (CBC) vector gives NULL.

use aes::cipher::generic_array::GenericArray;
use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bind::Binder;
use crate::builtin::Builtin;
use crate::error::SqlError;
use crate::expr::{Expr, Func};
use crate::string_funcs::as_bytes;
use crate::types::SqlType;

const BLOCK: usize = 16;

/// One function of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AesFunc {
    Encrypt,
    Decrypt,
}

impl AesFunc {
    fn name(self) -> &'static str {
        match self {
            AesFunc::Encrypt => "aes_encrypt",
            AesFunc::Decrypt => "aes_decrypt",
        }
    }
}

/// A parsed `block_encryption_mode` (rule 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mode {
    key_bytes: usize,
    cbc: bool,
}

/// Rule 1: the mode a `block_encryption_mode` text names, None when Shale has none such.
pub(crate) fn parse_mode(text: &str) -> Option<Mode> {
    let lower = text.to_ascii_lowercase();
    let rest = lower.strip_prefix("aes-")?;
    let (bits, mode) = rest.split_once('-')?;
    let key_bytes = match bits {
        "128" => 16,
        "192" => 24,
        "256" => 32,
        _ => return None,
    };
    let cbc = match mode {
        "ecb" => false,
        "cbc" => true,
        _ => return None,
    };
    Some(Mode { key_bytes, cbc })
}

/// SET block_encryption_mode's check (rule 1): 1231 for a mode Shale does not know.
pub(crate) fn check_mode(v: &Value) -> Result<(), SqlError> {
    let text = crate::value::as_text(v).unwrap_or_default();
    match parse_mode(&text) {
        Some(_) => Ok(()),
        None => Err(SqlError::new(
            1231,
            "42000",
            format!("Variable 'block_encryption_mode' can't be set to the value of '{text}'"),
        )),
    }
}

/// Names, argument counts and result types; None for a name not of this module.
pub(crate) fn bind(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Option<Result<(Expr, SqlType), SqlError>> {
    let f = match name {
        "AES_ENCRYPT" => AesFunc::Encrypt,
        "AES_DECRYPT" => AesFunc::Decrypt,
        _ => return None,
    };
    if !(2..=3).contains(&args.len()) {
        return Some(Err(crate::builtin::wrong_count(name)));
    }
    let bound: Result<Vec<(Expr, SqlType)>, SqlError> =
        args.iter().map(|a| binder.expr(a)).collect();
    Some(bound.map(|b| {
        let text_len = match &b[0].1 {
            SqlType::Str { len, .. } => *len,
            _ => 21,
        };
        let len = match f {
            AesFunc::Encrypt => (text_len / 16 + 1).saturating_mul(16),
            AesFunc::Decrypt => text_len,
        };
        let args = b.into_iter().map(|(e, _)| e).collect();
        (
            Expr::Func(Func::Builtin(Builtin::Aes(f)), args),
            SqlType::Str {
                collation: Collation::Binary,
                len,
            },
        )
    }))
}

/// Rule 2.
fn fold_key(key: &[u8], size: usize) -> Vec<u8> {
    let mut out = vec![0u8; size];
    for (i, b) in key.iter().enumerate() {
        out[i % size] ^= b;
    }
    out
}

/// One key schedule of any of the three sizes.
enum Cipher {
    Aes128(aes::Aes128),
    Aes192(aes::Aes192),
    Aes256(aes::Aes256),
}

impl Cipher {
    fn new(key: &[u8]) -> Cipher {
        match key.len() {
            16 => Cipher::Aes128(aes::Aes128::new(GenericArray::from_slice(key))),
            24 => Cipher::Aes192(aes::Aes192::new(GenericArray::from_slice(key))),
            _ => Cipher::Aes256(aes::Aes256::new(GenericArray::from_slice(key))),
        }
    }

    fn encrypt(&self, block: &mut [u8]) {
        let block = GenericArray::from_mut_slice(block);
        match self {
            Cipher::Aes128(c) => c.encrypt_block(block),
            Cipher::Aes192(c) => c.encrypt_block(block),
            Cipher::Aes256(c) => c.encrypt_block(block),
        }
    }

    fn decrypt(&self, block: &mut [u8]) {
        let block = GenericArray::from_mut_slice(block);
        match self {
            Cipher::Aes128(c) => c.decrypt_block(block),
            Cipher::Aes192(c) => c.decrypt_block(block),
            Cipher::Aes256(c) => c.decrypt_block(block),
        }
    }
}

/// Evaluates `f` over its argument values in the session's `mode_text`.
pub(crate) fn eval(f: AesFunc, args: &[Value], mode_text: &Value) -> Result<Value, SqlError> {
    let mode = crate::value::as_text(mode_text)
        .and_then(|t| parse_mode(&t))
        .unwrap_or(Mode {
            key_bytes: 16,
            cbc: false,
        });
    let iv = if mode.cbc {
        let Some(iv) = args.get(2) else {
            return Err(crate::builtin::wrong_count(f.name()));
        };
        match as_bytes(iv) {
            None => return Ok(Value::Null),
            Some(iv) if iv.len() < BLOCK => {
                return Err(SqlError::new(
                    1619,
                    "HY000",
                    format!(
                        "The initialization vector supplied to {} is too short. Must be at \
                         least {BLOCK} bytes long",
                        f.name()
                    ),
                ))
            }
            Some(iv) => Some(iv[..BLOCK].to_vec()),
        }
    } else {
        None
    };
    let (Some(data), Some(key)) = (
        args.first().and_then(as_bytes),
        args.get(1).and_then(as_bytes),
    ) else {
        return Ok(Value::Null);
    };
    let cipher = Cipher::new(&fold_key(&key, mode.key_bytes));
    Ok(match f {
        AesFunc::Encrypt => Value::Bytes(encrypt(&cipher, &data, iv.as_deref())),
        AesFunc::Decrypt => {
            decrypt(&cipher, &data, iv.as_deref()).map_or(Value::Null, Value::Bytes)
        }
    })
}

/// Rule 3: PKCS #7 padding, then ECB or CBC.
fn encrypt(cipher: &Cipher, data: &[u8], iv: Option<&[u8]>) -> Vec<u8> {
    let pad = BLOCK - data.len() % BLOCK;
    let mut out = Vec::with_capacity(data.len() + pad);
    out.extend_from_slice(data);
    out.resize(data.len() + pad, u8::try_from(pad).unwrap_or(16));
    let mut chain = iv.map(<[u8]>::to_vec);
    for block in out.chunks_mut(BLOCK) {
        if let Some(prev) = &chain {
            block.iter_mut().zip(prev).for_each(|(b, p)| *b ^= p);
        }
        cipher.encrypt(block);
        if chain.is_some() {
            chain = Some(block.to_vec());
        }
    }
    out
}

/// Rule 3: None for a bad length or padding.
fn decrypt(cipher: &Cipher, data: &[u8], iv: Option<&[u8]>) -> Option<Vec<u8>> {
    if data.is_empty() || !data.len().is_multiple_of(BLOCK) {
        return None;
    }
    let mut out = data.to_vec();
    let mut chain = iv.map(<[u8]>::to_vec);
    for block in out.chunks_mut(BLOCK) {
        let cipher_block = block.to_vec();
        cipher.decrypt(block);
        if let Some(prev) = &chain {
            block.iter_mut().zip(prev).for_each(|(b, p)| *b ^= p);
            chain = Some(cipher_block);
        }
    }
    let pad = usize::from(*out.last()?);
    if pad == 0
        || pad > BLOCK
        || out[out.len() - pad..]
            .iter()
            .any(|&b| usize::from(b) != pad)
    {
        return None;
    }
    out.truncate(out.len() - pad);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        use std::fmt::Write as _;
        b.iter().fold(String::new(), |mut out, x| {
            let _ = write!(out, "{x:02X}");
            out
        })
    }

    #[test]
    fn default_mode_matches_mysql_and_mariadb() {
        let c = Cipher::new(&fold_key(b"F3229A0B371ED2D9441B830D21A390C3", 16));
        assert_eq!(
            hex(&encrypt(&c, b"text", None)),
            "C2BD89103557CCBF7ED97B51860225A0"
        );
        let k = Cipher::new(&fold_key(b"k", 16));
        assert_eq!(
            hex(&encrypt(&k, b"", None)),
            "932F1B1E9189536B938A6B67666D4031"
        );
        let long = Cipher::new(&fold_key("ab".repeat(20).as_bytes(), 16));
        assert_eq!(
            hex(&encrypt(&long, b"a", None)),
            "D7438AFA0EE42404213A990224B4962A"
        );
    }

    #[test]
    fn cbc_round_trips_and_depends_on_the_vector() {
        let c = Cipher::new(&fold_key(b"My secret passphrase", 32));
        let iv = b"1111111111111111";
        let data = b"a text longer than one block of sixteen bytes";
        let sealed = encrypt(&c, data, Some(iv));
        assert_eq!(sealed.len(), 48);
        assert_ne!(sealed, encrypt(&c, data, None));
        assert_eq!(decrypt(&c, &sealed, Some(iv)).as_deref(), Some(&data[..]));
        assert_ne!(
            decrypt(&c, &sealed, Some(b"2222222222222222")).as_deref(),
            Some(&data[..])
        );
    }

    #[test]
    fn bad_lengths_and_padding_give_none() {
        let c = Cipher::new(&fold_key(b"key", 16));
        assert_eq!(decrypt(&c, b"abc", None), None);
        assert_eq!(decrypt(&c, b"", None), None);
        let sealed = encrypt(&c, b"hello", None);
        let other = Cipher::new(&fold_key(b"kex", 16));
        assert_eq!(decrypt(&other, &sealed, None), None);
    }

    #[test]
    fn modes_parse_as_mysql_names_them() {
        assert!(parse_mode("AES-256-CBC").is_some());
        assert!(parse_mode("aes-128-ecb").is_some());
        assert!(parse_mode("aes-128-ofb").is_none());
        assert!(parse_mode("aes-64-ecb").is_none());
    }
}
