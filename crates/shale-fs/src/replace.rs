//! Replacing a small file so that a crash leaves either the old contents or the new, never a
//! mix: the contract of `CURRENT` and `OPTIONS-NNNNNN`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::{FileSystem, Result};

/// Writes `contents` to `path` durably and atomically: a temporary file `<path>.tmp` is
/// written and synced, renamed over `path`, then the parent directory is synced.
///
/// When this returns `Ok`, `path` holds `contents` across a crash. If it fails or the machine
/// stops midway, `path` holds either its old contents or `contents` (rename is atomic, and the
/// temporary file was synced before the rename); a leftover `.tmp` file may remain and is
/// never read by anyone.
pub fn replace_file_durably(fs: &dyn FileSystem, path: &Path, contents: &[u8]) -> Result<()> {
    let temp = temp_path(path);
    let mut file = fs.create(&temp)?;
    file.append(contents)?;
    file.sync_data()?;
    drop(file);
    fs.rename(&temp, path)?;
    fs.sync_dir(path.parent().unwrap_or_else(|| Path::new(".")))
}

/// `<path>.tmp`, the name `replace_file_durably` writes before renaming.
#[must_use]
pub fn temp_path(path: &Path) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(".tmp");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CrashMode, MemFs};

    fn read(fs: &MemFs, path: &Path) -> Vec<u8> {
        let file = fs.open_read(path).unwrap();
        let mut buf = vec![0; usize::try_from(file.size().unwrap()).unwrap()];
        file.read_exact_at(0, &mut buf).unwrap();
        buf
    }

    #[test]
    fn replaced_contents_survive_a_crash() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let path = Path::new("/d/CURRENT");
        replace_file_durably(&fs, path, b"first\n").unwrap();
        replace_file_durably(&fs, path, b"second\n").unwrap();
        for mode in [CrashMode::DropUnsynced, CrashMode::Torn { seed: 7 }] {
            let image = fs.crash_image(mode);
            assert_eq!(read(&image, path), b"second\n");
            assert!(!image.exists(&temp_path(path)).unwrap());
        }
    }

    #[test]
    fn a_crash_at_any_sync_point_leaves_old_or_new_contents() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let path = Path::new("/d/OPTIONS");
        replace_file_durably(&fs, path, b"old contents").unwrap();
        let images = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (hook_fs, hook_images) = (fs.clone(), images.clone());
        fs.set_sync_hook(Some(std::sync::Arc::new(move |_| {
            hook_images
                .lock()
                .unwrap()
                .push(hook_fs.crash_image(CrashMode::Torn { seed: 11 }));
        })));
        replace_file_durably(&fs, path, b"new contents, longer").unwrap();
        fs.set_sync_hook(None);
        let images = images.lock().unwrap();
        assert!(
            images.len() >= 2,
            "expected a sync of the file and of the directory"
        );
        for image in images.iter() {
            let found = read(image, path);
            assert!(
                found == b"old contents" || found == b"new contents, longer",
                "{:?}",
                String::from_utf8_lossy(&found)
            );
        }
    }

    #[test]
    fn temp_path_appends_tmp() {
        assert_eq!(
            temp_path(Path::new("/d/CURRENT")),
            Path::new("/d/CURRENT.tmp")
        );
    }
}
