//! What a DBA sees of transactions, locks and deadlocks through a real client (`PyMySQL`
//! against `shale serve`; docs/operations.md "Transactions, locks and deadlocks"):
//! - one connection holds a row lock and another waits for it: `SHALE_LOCKS` shows the lock
//!   GRANTED to the holder and WAITING for the waiter, `SHALE_TRX` the waiter in LOCK WAIT
//!   with the key (named `d.t.PRIMARY`) and the holder, each under its connection id and
//!   statement; SHOW ENGINE SHALE TRANSACTION STATUS prints both;
//! - a provoked deadlock appears in `SHALE_DEADLOCKS` with its victim;
//! - `information_schema.PROCESSLIST` keeps SHOW PROCESSLIST's privilege rule, and the
//!   `SHALE_*` views need PROCESS (1227).
//!
//! A missing `PyMySQL` skips the tests, except under CI=true.

mod support;

use support::have;

const PY_PRELUDE: &str = r#"
import os, threading, time, pymysql
port = int(os.environ["PORT"])
def connect(user="root", password=""):
    return pymysql.connect(host="127.0.0.1", port=port, user=user, password=password,
                           autocommit=True)
def run(c, sql):
    try:
        with c.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()
    except pymysql.err.MySQLError as e:
        return "error %d %s" % (e.args[0], e.args[1])
def wait_for_lock_wait(c):
    for _ in range(2000):
        rows = run(c, "SELECT THREAD_ID FROM information_schema.SHALE_TRX WHERE STATE = 'LOCK WAIT'")
        if rows:
            return
        time.sleep(0.01)
    raise SystemExit("no transaction ever waited")
root = connect()
run(root, "CREATE DATABASE d")
run(root, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
run(root, "INSERT INTO d.t VALUES (1, 10), (2, 20)")
"#;

fn pymysql(port: u16, script: &str) -> String {
    support::pymysql(port, &format!("{PY_PRELUDE}{script}"))
}

fn available() -> bool {
    have("/usr/bin/python3", &["-c", "import pymysql"])
}

#[test]
fn a_lock_wait_shows_in_shale_locks_and_shale_trx() {
    if !available() {
        return;
    }
    let dir = support::scratch("dba-views-wait");
    let mut server = support::start_shale(&dir);
    let out = pymysql(
        server.port,
        r#"
holder, waiter = connect(), connect()
hid, wid = holder.thread_id(), waiter.thread_id()
run(holder, "BEGIN")
run(holder, "UPDATE d.t SET v = 11 WHERE id = 1")
result = {}
def wait():
    # READ COMMITTED: under REPEATABLE READ the row changed after the waiter's snapshot, a
    # snapshot conflict (1213, as MyRocks answers), not the lock wait this test is about.
    run(waiter, "SET SESSION transaction_isolation = 'READ-COMMITTED'")
    run(waiter, "BEGIN")
    result["update"] = run(waiter, "UPDATE d.t SET v = 12 WHERE id = 1")
    run(waiter, "COMMIT")
t = threading.Thread(target=wait)
t.start()
wait_for_lock_wait(root)
locks = run(root, "SELECT l.TRANSACTION_ID, l.MODE, l.LOCK_STATUS, l.KEY, l.TABLE_SCHEMA, l.TABLE_NAME, l.INDEX_NAME, l.LOCK_DATA FROM information_schema.SHALE_LOCKS l ORDER BY l.LOCK_STATUS")
trx = {r[0]: r for r in run(root, "SELECT THREAD_ID, TRANSACTION_ID, STATE, WAITING_KEY, WAITING_TABLE_SCHEMA, WAITING_TABLE_NAME, WAITING_INDEX_NAME, WAITING_MODE, WAITING_FOR, LOCK_COUNT, WRITE_COUNT, QUERY, WAITING_KEY_DATA FROM information_schema.SHALE_TRX WHERE THREAD_ID IN (%d, %d)" % (hid, wid))}
h, w = trx[hid], trx[wid]
print("holder", h[2], h[3], h[9], h[10], h[11])
print("waiter", w[2], w[3], w[4], w[5], w[6], w[7], w[9], w[10], w[11], w[12])
print("waiter waits for holder", w[8] == str(h[1]))
for l in locks:
    who = {h[1]: "holder", w[1]: "waiter"}[l[0]]
    print("lock", who, l[1], l[2], l[3], l[4], l[5], l[6], l[7])
status = run(root, "SHOW ENGINE SHALE TRANSACTION STATUS")[0][2]
print("status names the waiter's connection", ("MySQL thread id %d, query: UPDATE d.t SET v = 12" % wid) in status)
print("status shows the wait", "LOCK WAIT" in status and "EXCLUSIVE lock on key 0000010480000001 (d.t.PRIMARY id=1)" in status)
watcher_setup = [run(root, "CREATE USER 'w'@'%'"), run(root, "GRANT SELECT ON d.* TO 'w'@'%'")]
watcher = connect("w")
print("watcher processlist", run(watcher, "SELECT USER, INFO FROM information_schema.PROCESSLIST"))
print("watcher show processlist", [(r[1], r[7]) for r in run(watcher, "SHOW FULL PROCESSLIST")])
print("watcher trx", run(watcher, "SELECT * FROM information_schema.SHALE_TRX"))
print("root sees", len(run(root, "SELECT ID FROM information_schema.PROCESSLIST")), "sessions")
run(holder, "COMMIT")
t.join()
print("waiter got", result["update"])
print("after", run(root, "SELECT v FROM d.t WHERE id = 1"), run(root, "SELECT COUNT(*) FROM information_schema.SHALE_LOCKS"), run(root, "SELECT COUNT(*) FROM information_schema.SHALE_DEADLOCKS"))
"#,
    );
    server.stop();
    assert_eq!(
        out,
        "holder RUNNING None 1 1 None\n\
         waiter LOCK WAIT 0000010480000001 d t PRIMARY X 0 0 UPDATE d.t SET v = 12 WHERE id = 1 id=1\n\
         waiter waits for holder True\n\
         lock holder X GRANTED 0000010480000001 d t PRIMARY id=1\n\
         lock waiter X WAITING 0000010480000001 d t PRIMARY id=1\n\
         status names the waiter's connection True\n\
         status shows the wait True\n\
         watcher processlist (('w', 'SELECT USER, INFO FROM information_schema.PROCESSLIST'),)\n\
         watcher show processlist [('w', 'SHOW FULL PROCESSLIST')]\n\
         watcher trx error 1227 Access denied; you need (at least one of) the PROCESS privilege(s) for this operation\n\
         root sees 4 sessions\n\
         waiter got ()\n\
         after ((12,),) ((0,),) ((0,),)\n"
    );
}

#[test]
fn a_deadlock_shows_in_shale_deadlocks_with_its_victim() {
    if !available() {
        return;
    }
    let dir = support::scratch("dba-views-deadlock");
    let mut server = support::start_shale(&dir);
    let out = pymysql(
        server.port,
        r#"
older, younger = connect(), connect()
run(older, "BEGIN")
run(older, "UPDATE d.t SET v = 11 WHERE id = 1")
run(younger, "BEGIN")
run(younger, "UPDATE d.t SET v = 22 WHERE id = 2")
ids = {r[0]: r[1] for r in run(root, "SELECT THREAD_ID, TRANSACTION_ID FROM information_schema.SHALE_TRX")}
old_id, young_id = ids[older.thread_id()], ids[younger.thread_id()]
print("the younger began later", young_id > old_id)
result = {}
def close_cycle():
    result["younger"] = run(younger, "UPDATE d.t SET v = 21 WHERE id = 1")
t = threading.Thread(target=close_cycle)
t.start()
wait_for_lock_wait(root)
print("older", run(older, "UPDATE d.t SET v = 12 WHERE id = 2"))
t.join()
print("younger", result["younger"])
run(older, "COMMIT")
rows = run(root, "SELECT DEADLOCK_ID, TRANSACTION_ID, WAITING_KEY, LOCK_TYPE, TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, WAITING_FOR, ROLLED_BACK, TIMESTAMP IS NOT NULL, WAITING_KEY_DATA FROM information_schema.SHALE_DEADLOCKS ORDER BY TRANSACTION_ID")
for r in rows:
    who = {old_id: "older", young_id: "younger"}[r[1]]
    waits_for = {str(old_id): "older", str(young_id): "younger"}[r[7]]
    print(r[0], who, r[2], r[3], r[4], r[5], r[6], "waits for", waits_for, "rolled back", r[8], r[9], r[10])
status = run(root, "SHOW ENGINE SHALE TRANSACTION STATUS")[0][2]
print("status", "LATEST DETECTED DEADLOCK" in status and ("victim: transaction %d" % young_id) in status)
print(run(root, "SELECT * FROM d.t ORDER BY id"))
"#,
    );
    server.stop();
    assert_eq!(
        out,
        "the younger began later True\n\
         older ()\n\
         younger error 1213 Deadlock found when trying to get lock; try restarting transaction\n\
         1 older 0000010480000002 EXCLUSIVE d t PRIMARY waits for younger rolled back 0 1 id=2\n\
         1 younger 0000010480000001 EXCLUSIVE d t PRIMARY waits for older rolled back 1 1 id=1\n\
         status True\n\
         ((1, 11), (2, 12))\n"
    );
}
