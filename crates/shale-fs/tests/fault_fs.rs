//! Behaviour of `FaultFs` wrapped around `MemFs`: triggers, error kinds, filters, counters,
//! the hook.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use shale_fs::{
    CrashMode, Error, FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, FsCall, IoMode,
    MemFs, Op, OpKind,
};

fn setup() -> (MemFs, FaultFs) {
    let mem = MemFs::new();
    mem.create_dir_all(Path::new("/db")).expect("mkdir");
    let fault = FaultFs::new(Arc::new(mem.clone()));
    (mem, fault)
}

fn p(name: &str) -> PathBuf {
    Path::new("/db").join(name)
}

/// Runs `n` existence checks and returns which (1-based) failed.
fn failing_exists_calls(fs: &FaultFs, n: u64) -> Vec<u64> {
    (1..=n).filter(|_| fs.exists(&p("x")).is_err()).collect()
}

#[test]
fn nth_fails_exactly_one_matching_call() {
    let (_, fs) = setup();
    fs.add_rule(FaultRule::new(
        OpKind::Exists,
        FaultTrigger::Nth(3),
        FaultError::Eio,
    ));
    assert_eq!(failing_exists_calls(&fs, 6), [3]);
    assert_eq!(fs.injected_count(), 1);
    assert_eq!(fs.op_count(OpKind::Exists), 6);
}

#[test]
fn every_from_fails_the_nth_and_all_later_calls() {
    let (_, fs) = setup();
    fs.add_rule(FaultRule::new(
        OpKind::Exists,
        FaultTrigger::EveryFrom(4),
        FaultError::Eio,
    ));
    assert_eq!(failing_exists_calls(&fs, 6), [4, 5, 6]);
}

#[test]
fn always_fails_every_call_and_probability_is_seeded() {
    let (_, fs) = setup();
    let id = fs.add_rule(FaultRule::new(
        OpKind::Exists,
        FaultTrigger::Always,
        FaultError::Eio,
    ));
    assert_eq!(failing_exists_calls(&fs, 3), [1, 2, 3]);
    assert!(fs.remove_rule(id));
    assert!(!fs.remove_rule(id), "already removed");

    let run = |seed| {
        let (_, fs) = setup();
        fs.add_rule(FaultRule::new(
            OpKind::Exists,
            FaultTrigger::Probability { p: 0.3, seed },
            FaultError::Eio,
        ));
        failing_exists_calls(&fs, 1000)
    };
    let a = run(1);
    assert!(
        (200..400).contains(&a.len()),
        "{} of 1000 failed at p=0.3",
        a.len()
    );
    assert_eq!(a, run(1), "same seed, same failures");
    assert_ne!(a, run(2), "another seed, other failures");
}

#[test]
fn rules_count_only_matching_operations_and_paths() {
    let (_, fs) = setup();
    fs.add_rule(
        FaultRule::new(OpKind::Create, FaultTrigger::Nth(2), FaultError::Eio).path_contains(".sst"),
    );
    fs.create(&p("1.wal")).expect("wal is not matched");
    fs.create(&p("1.sst")).expect("first matching call");
    fs.exists(&p("2.sst")).expect("other operation");
    fs.create(&p("2.wal")).expect("wal again");
    let err = fs.create(&p("2.sst")).expect_err("second matching call");
    assert!(matches!(
        err,
        Error::Injected { op: Op::Create, fault: FaultError::Eio, ref path } if path == &p("2.sst")
    ));
    assert!(err.to_string().contains("injected"), "{err}");
    assert!(
        !fs.exists(&p("2.sst")).expect("exists"),
        "failed create does nothing"
    );
    assert_eq!(fs.op_count(OpKind::Create), 4);
    assert_eq!(fs.op_count(OpKind::Any), 6);
}

#[test]
fn rename_filter_matches_either_path() {
    let (mem, fs) = setup();
    mem.write_file_for_test(p("000001.tmp"), b"x")
        .expect("plant");
    fs.add_rule(
        FaultRule::new(OpKind::Rename, FaultTrigger::Always, FaultError::Eio)
            .path_contains("CURRENT"),
    );
    assert!(
        fs.rename(&p("000001.tmp"), &p("CURRENT")).is_err(),
        "target matches"
    );
    assert!(
        mem.exists(&p("000001.tmp")).expect("exists"),
        "rename not performed"
    );
    fs.rename(&p("000001.tmp"), &p("000002.tmp"))
        .expect("neither path matches");
    fs.rename(&p("000002.tmp"), &p("CURRENT.x"))
        .expect_err("target matches");
}

#[test]
fn no_space_is_reported_as_no_space() {
    let (mem, fs) = setup();
    fs.add_rule(FaultRule::new(
        OpKind::Append,
        FaultTrigger::Always,
        FaultError::NoSpace,
    ));
    let mut file = fs.create(&p("1.wal")).expect("create");
    let err = file.append(b"data").expect_err("full");
    assert!(err.is_no_space(), "{err}");
    assert_eq!(mem.file_contents(p("1.wal")).expect("contents"), b"");
}

#[test]
fn short_write_leaves_a_prefix_then_fails() {
    let (mem, fs) = setup();
    fs.add_rule(FaultRule::new(
        OpKind::Append,
        FaultTrigger::Nth(2),
        FaultError::ShortWrite,
    ));
    let mut file = fs.create(&p("1.wal")).expect("create");
    file.append(b"first;").expect("first append");
    let err = file.append(b"0123456789").expect_err("short");
    assert!(matches!(
        err,
        Error::Injected {
            fault: FaultError::ShortWrite,
            ..
        }
    ));
    assert_eq!(
        mem.file_contents(p("1.wal")).expect("contents"),
        b"first;01234"
    );
    assert_eq!(file.len(), 11);
}

#[test]
fn failed_sync_makes_nothing_durable() {
    let (mem, fs) = setup();
    let mut file = fs.create(&p("1.wal")).expect("create");
    fs.sync_dir(Path::new("/db")).expect("sync dir");
    fs.add_rule(FaultRule::new(
        OpKind::SyncData,
        FaultTrigger::Always,
        FaultError::FailedSync,
    ));
    fs.add_rule(FaultRule::new(
        OpKind::SyncDir,
        FaultTrigger::Always,
        FaultError::FailedSync,
    ));
    file.append(b"lost").expect("append");
    let err = file.sync_data().expect_err("sync fails");
    assert!(matches!(
        err,
        Error::Injected {
            op: Op::SyncData,
            fault: FaultError::FailedSync,
            ..
        }
    ));
    fs.create(&p("2.sst")).expect("create");
    assert!(fs.sync_dir(Path::new("/db")).is_err());
    assert_eq!(
        mem.sync_point_count(),
        1,
        "only the first sync_dir happened"
    );

    let image = mem.crash_image(CrashMode::DropUnsynced);
    assert_eq!(image.file_contents(p("1.wal")).expect("durable name"), b"");
    assert!(!image.exists(&p("2.sst")).expect("exists"));
}

#[test]
fn reads_through_opened_files_are_subject_to_rules() {
    let (mem, fs) = setup();
    mem.write_file_for_test(p("1.sst"), b"abcdef")
        .expect("plant");
    let reader = fs.open_read(&p("1.sst")).expect("open");
    fs.add_rule(
        FaultRule::new(OpKind::Read, FaultTrigger::Nth(1), FaultError::Eio).path_contains("1.sst"),
    );
    let mut buf = [0; 2];
    assert!(reader.read_exact_at(0, &mut buf).is_err());
    reader.read_exact_at(1, &mut buf).expect("second read");
    assert_eq!(&buf, b"bc");
    assert_eq!(fs.op_count(OpKind::Read), 2);
}

#[test]
fn first_added_rule_wins_but_all_matching_rules_count() {
    let (_, fs) = setup();
    fs.add_rule(FaultRule::new(
        OpKind::Any,
        FaultTrigger::Nth(1),
        FaultError::NoSpace,
    ));
    fs.add_rule(FaultRule::new(
        OpKind::Exists,
        FaultTrigger::Nth(1),
        FaultError::Eio,
    ));
    fs.add_rule(FaultRule::new(
        OpKind::Exists,
        FaultTrigger::Nth(2),
        FaultError::Eio,
    ));
    let first = fs.exists(&p("x")).expect_err("first");
    assert!(first.is_no_space(), "earlier rule decides: {first}");
    let second = fs.exists(&p("x")).expect_err("second");
    assert!(
        !second.is_no_space(),
        "third rule counted the first call too: {second}"
    );
    assert!(fs.exists(&p("x")).is_ok());
}

#[test]
fn nothing_fails_after_clear_rules() {
    let (_, fs) = setup();
    for kind in [
        OpKind::Any,
        OpKind::Create,
        OpKind::Append,
        OpKind::SyncData,
        OpKind::SyncDir,
    ] {
        fs.add_rule(FaultRule::new(kind, FaultTrigger::Always, FaultError::Eio));
    }
    assert!(fs.create(&p("1.wal")).is_err());
    fs.clear_rules();
    let mut file = fs.create(&p("1.wal")).expect("create");
    file.append(b"x").expect("append");
    file.flush().expect("flush");
    file.sync_data().expect("sync");
    fs.sync_dir(Path::new("/db")).expect("sync dir");
    fs.open_read(&p("1.wal"))
        .expect("open")
        .size()
        .expect("size");
    assert_eq!(fs.list(Path::new("/db")).expect("list"), ["1.wal"]);
    assert_eq!(fs.injected_count(), 1);
}

#[test]
fn a_concurrent_syncer_fails_as_the_file_sync_would() {
    let (mem, fs) = setup();
    let mut file = fs.create(&p("1.wal")).expect("create");
    fs.sync_dir(Path::new("/db")).expect("sync dir");
    file.append(b"lost").expect("append");
    let syncer = file
        .concurrent_syncer()
        .expect("flush")
        .expect("MemFs under FaultFs has one");
    let syncs = fs.op_count(OpKind::SyncData);
    fs.add_rule(
        FaultRule::new(
            OpKind::SyncData,
            FaultTrigger::Always,
            FaultError::FailedSync,
        )
        .path_contains(".wal"),
    );
    let err = syncer.sync_data().expect_err("sync fails");
    assert!(matches!(
        err,
        Error::Injected {
            op: Op::SyncData,
            fault: FaultError::FailedSync,
            ..
        }
    ));
    assert_eq!(
        fs.op_count(OpKind::SyncData),
        syncs + 1,
        "counted as a sync"
    );
    let image = mem.crash_image(CrashMode::DropUnsynced);
    assert_eq!(image.file_contents(p("1.wal")).expect("contents"), b"");
}

/// What a hook saw of one call, owned.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    op: Op,
    path: PathBuf,
    to: Option<PathBuf>,
    mode: Option<IoMode>,
}

fn recording_hook(fs: &FaultFs) -> Arc<Mutex<Vec<Seen>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    fs.set_hook(move |call: &FsCall<'_>| {
        log.lock().unwrap().push(Seen {
            op: call.op,
            path: call.path.to_path_buf(),
            to: call.to.map(Path::to_path_buf),
            mode: call.mode,
        });
        Ok(())
    });
    seen
}

#[test]
fn the_hook_sees_every_call_with_its_paths_and_open_mode() {
    let (_, fs) = setup();
    let seen = recording_hook(&fs);
    let mut file = fs.create_with(&p("1.sst"), IoMode::Direct).expect("create");
    file.append(b"abc").expect("append");
    file.sync_data().expect("sync");
    drop(file);
    fs.rename(&p("1.sst"), &p("2.sst")).expect("rename");
    let reader = fs.open_read(&p("2.sst")).expect("open");
    let mut buf = [0; 3];
    reader.read_exact_at(0, &mut buf).expect("read");
    fs.list(Path::new("/db")).expect("list");
    let on = |op, name: &str| Seen {
        op,
        path: p(name),
        to: None,
        mode: None,
    };
    assert_eq!(
        *seen.lock().unwrap(),
        [
            Seen {
                mode: Some(IoMode::Direct),
                ..on(Op::Create, "1.sst")
            },
            on(Op::Append, "1.sst"),
            on(Op::SyncData, "1.sst"),
            Seen {
                to: Some(p("2.sst")),
                ..on(Op::Rename, "1.sst")
            },
            Seen {
                mode: Some(IoMode::Buffered),
                ..on(Op::OpenRead, "2.sst")
            },
            on(Op::Read, "2.sst"),
            Seen {
                path: PathBuf::from("/db"),
                ..on(Op::List, "")
            },
        ]
    );
}

#[test]
fn a_hook_error_fails_the_call_before_it_reaches_the_inner_file_system() {
    let (mem, fs) = setup();
    fs.set_hook(|call: &FsCall<'_>| {
        if call.op == Op::Create && call.has_extension("sst") {
            return Err(Error::NotFound {
                op: call.op,
                path: call.path.to_path_buf(),
            });
        }
        Ok(())
    });
    let err = fs.create(&p("1.sst")).expect_err("refused by the hook");
    assert!(err.is_not_found(), "{err}");
    assert!(!mem.exists(&p("1.sst")).expect("exists"), "not created");
    assert_eq!(fs.injected_count(), 0, "a hook's failure is not injected");
    assert_eq!(fs.op_count(OpKind::Create), 1, "but the call is counted");
    fs.create(&p("1.wal")).expect("other files pass");
    fs.clear_hook();
    fs.create(&p("1.sst")).expect("no hook, no failure");
}

#[test]
fn the_hook_runs_before_the_rules_and_with_no_lock_held() {
    let (_, fs) = setup();
    fs.add_rule(FaultRule::new(
        OpKind::Exists,
        FaultTrigger::Nth(1),
        FaultError::Eio,
    ));
    let inner_fs = fs.clone();
    let calls = Arc::new(Mutex::new(0));
    let counted = calls.clone();
    fs.set_hook(move |call: &FsCall<'_>| {
        let first = {
            let mut calls = counted.lock().unwrap();
            *calls += 1;
            *calls == 1
        };
        // Calling back into the `FaultFs` from the hook must not deadlock.
        if call.op == Op::Exists && first {
            inner_fs.size(&p("missing")).expect_err("no such file");
        }
        Ok(())
    });
    assert!(fs.exists(&p("x")).is_err(), "the rule still fires");
    assert_eq!(
        *calls.lock().unwrap(),
        2,
        "the exists call and the nested size"
    );
    assert_eq!(fs.injected_count(), 1);
}
