//! Delays for hosts that keep failing to log in: MySQL's `connection_control` plugin, built
//! in (docs/reliability.md "Authentication abuse").
//!
//! Rules:
//! 1. Failures count per client host (IP address), consecutively: a successful login from
//!    the host resets its count.
//! 2. Once a host has `threshold` failures, each of its next attempts waits, before its
//!    password is checked, until the host's `not_before` time; the wait grows by one second
//!    per further failure, from `min_delay` up to `max_delay`. The wait comes before the
//!    check, so an attacker learns nothing sooner by giving up early.
//! 3. Every attempt that waits reserves the next slot (`not_before` moves on by the current
//!    delay), so parallel connections from one host are spaced out too.
//! 4. Other hosts never wait, and a host's own successful login waits only if it comes
//!    within the window its failures opened.
//! 5. At most `MAX_HOSTS` hosts are remembered; past that, hosts whose window has passed are
//!    forgotten first.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const MAX_HOSTS: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    not_before: Instant,
}

#[derive(Debug)]
pub(crate) struct LoginThrottle {
    threshold: u32,
    min_delay: Duration,
    max_delay: Duration,
    hosts: Mutex<HashMap<IpAddr, Failures>>,
}

impl LoginThrottle {
    pub fn new(threshold: u32, min_delay: Duration, max_delay: Duration) -> LoginThrottle {
        LoginThrottle {
            threshold,
            min_delay,
            max_delay: max_delay.max(min_delay),
            hosts: Mutex::new(HashMap::new()),
        }
    }

    /// The delay after `count` consecutive failures (rule 2).
    fn delay_for(&self, count: u32) -> Duration {
        if self.threshold == 0 || count < self.threshold {
            return Duration::ZERO;
        }
        let step = Duration::from_secs(u64::from(count - self.threshold + 1));
        step.clamp(self.min_delay, self.max_delay)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Failures>> {
        self.hosts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How long an attempt from `ip` must wait before its password is checked (rules 2, 3).
    pub fn admit(&self, ip: IpAddr) -> Duration {
        self.admit_at(ip, Instant::now())
    }

    fn admit_at(&self, ip: IpAddr, now: Instant) -> Duration {
        let delay = {
            let hosts = self.lock();
            match hosts.get(&ip) {
                Some(f) => self.delay_for(f.count),
                None => return Duration::ZERO,
            }
        };
        if delay.is_zero() {
            return Duration::ZERO;
        }
        let mut hosts = self.lock();
        let Some(f) = hosts.get_mut(&ip) else {
            return Duration::ZERO;
        };
        let start = f.not_before.max(now);
        f.not_before = start + delay;
        start - now
    }

    pub fn failed(&self, ip: IpAddr) {
        self.failed_at(ip, Instant::now());
    }

    fn failed_at(&self, ip: IpAddr, now: Instant) {
        let mut hosts = self.lock();
        if hosts.len() >= MAX_HOSTS && !hosts.contains_key(&ip) {
            hosts.retain(|_, f| f.not_before > now);
            if hosts.len() >= MAX_HOSTS {
                return;
            }
        }
        let f = hosts.entry(ip).or_insert(Failures {
            count: 0,
            not_before: now,
        });
        f.count = f.count.saturating_add(1);
        let delay = self.delay_for(f.count);
        f.not_before = f.not_before.max(now + delay);
    }

    /// A successful login resets the host (rule 1).
    pub fn succeeded(&self, ip: IpAddr) {
        let mut hosts = self.lock();
        if !hosts.is_empty() {
            hosts.remove(&ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_start_at_the_threshold_grow_and_stay_per_host() {
        let t = LoginThrottle::new(3, Duration::from_secs(1), Duration::from_secs(5));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let now = Instant::now();
        for _ in 0..2 {
            assert_eq!(t.admit_at(a, now), Duration::ZERO);
            t.failed_at(a, now);
        }
        assert_eq!(t.admit_at(a, now), Duration::ZERO);
        t.failed_at(a, now);
        // Third failure: the fourth attempt waits a second, a parallel fifth one more.
        assert_eq!(t.admit_at(a, now), Duration::from_secs(1));
        assert_eq!(t.admit_at(a, now), Duration::from_secs(2));
        assert_eq!(t.admit_at(b, now), Duration::ZERO, "other hosts never wait");
        // After the window, one more failure makes the next wait two seconds.
        let later = now + Duration::from_secs(10);
        assert_eq!(t.admit_at(a, later), Duration::ZERO);
        t.failed_at(a, later);
        assert_eq!(t.admit_at(a, later), Duration::from_secs(2));
        for _ in 0..20 {
            t.failed_at(a, later);
        }
        assert_eq!(
            t.delay_for(100),
            Duration::from_secs(5),
            "capped at the maximum"
        );
        t.succeeded(a);
        assert_eq!(
            t.admit_at(a, later),
            Duration::ZERO,
            "a success resets the host"
        );
        let off = LoginThrottle::new(0, Duration::from_secs(1), Duration::from_secs(5));
        for _ in 0..10 {
            off.failed_at(a, now);
        }
        assert_eq!(off.admit_at(a, now), Duration::ZERO);
    }
}
