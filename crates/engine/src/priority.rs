//! Asking Linux to run the I/O threads as soon as they wake.
//!
//! Two requests, both best effort (tank runs without them, and tank.log says
//! which were granted):
//!
//! - **A short scheduler slice.** When the cores are busy (the target on the
//!   same machine, a neighbour guest), a thread woken at a shot's due time may
//!   wait for the running task's slice to end (1.5 ms with EEVDF's default on
//!   2 CPUs) before it runs: lag the shot carries. The I/O threads ask for a
//!   0.1 ms slice ([`short_slice`], Linux 6.12 and later), so a woken thread's
//!   deadline comes before a busy task's. A new thread inherits its creator's
//!   slice, so the run's other threads (results, feeders), started after the
//!   run's own thread asked, run in short slices too: none holds a core the
//!   target or an I/O thread waits for longer than that.
//! - **CPUs kept awake** ([`keep_cpus_awake`]). An idle CPU that halts can take
//!   long to run again when its timer fires: on a virtual machine the halted
//!   vCPU waits for the host to schedule it. Measured on the 2-vCPU KVM guest
//!   tank is developed on: a thread sleeping 100 µs at a time overslept by more
//!   than 0.5 ms 1,250 times in 20 s (1.6 s in all); with the CPUs held out of
//!   halting, 26-47 times (0.1 s). A PM QoS request of zero wake-up latency
//!   makes idle CPUs poll instead, as latency tools (cyclictest) do while they
//!   measure. Polling yields at once to any runnable thread, so the target and
//!   tank's own threads lose no CPU to it; the cost is power and, on a shared
//!   host, CPU time the idle vCPUs keep.

use std::io;

use std::fs::File;

/// The slice asked for the runtime's workers: EEVDF's smallest.
pub const SHORT_SLICE_NS: u64 = 100_000;

/// Ask for [`SHORT_SLICE_NS`] as the calling thread's scheduler slice, keeping
/// its policy and nice value. Errors when the kernel does not take custom
/// slices for ordinary threads (before 6.12) or refuses.
pub fn short_slice() -> io::Result<()> {
    imp::short_slice()
}

/// The PM QoS device through which a process asks for a CPU wake-up latency.
pub const CPU_LATENCY_DEVICE: &str = "/dev/cpu_dma_latency";

/// A held request that every CPU wakes at once: it lasts until dropped (the
/// kernel drops it when the file closes, so also when tank is killed).
#[derive(Debug)]
pub struct CpusAwake {
    _request: File,
}

/// Ask that every CPU stay out of idle states slower to leave than 0 µs, that
/// is, poll when idle, until the returned value is dropped. Needs write access
/// to [`CPU_LATENCY_DEVICE`] (root, by default).
pub fn keep_cpus_awake() -> io::Result<CpusAwake> {
    use std::io::Write;
    let mut request = std::fs::OpenOptions::new()
        .write(true)
        .open(CPU_LATENCY_DEVICE)?;
    // The device takes the latency in µs as a binary 32-bit integer.
    request.write_all(&0i32.to_ne_bytes())?;
    Ok(CpusAwake { _request: request })
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;

    use super::SHORT_SLICE_NS;

    /// The kernel's `struct sched_attr` (include/uapi/linux/sched/types.h), which
    /// the libc crate does not define.
    #[repr(C)]
    #[derive(Default)]
    pub(super) struct SchedAttr {
        size: u32,
        policy: u32,
        flags: u64,
        pub(super) nice: i32,
        priority: u32,
        /// For ordinary threads since Linux 6.12: the requested slice, in ns.
        pub(super) runtime: u64,
        deadline: u64,
        period: u64,
        util_min: u32,
        util_max: u32,
    }

    /// Keep the thread's policy (SCHED_OTHER or SCHED_BATCH as the user chose).
    const SCHED_FLAG_KEEP_POLICY: u64 = 0x08;

    pub(super) fn short_slice() -> io::Result<()> {
        // sched_setattr sets the nice value too: pass on the current one, so
        // `nice -n 5 tank` stays niced. getpriority may return -1 as a value.
        // SAFETY: errno is thread-local; setting it to 0 is how getpriority's
        // errors are told from a nice value of -1.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: plain integer arguments; PRIO_PROCESS with 0 is this thread on Linux.
        let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        if nice == -1 {
            let error = io::Error::last_os_error();
            if error.raw_os_error() != Some(0) {
                return Err(error);
            }
        }
        let attr = SchedAttr {
            size: size_of::<SchedAttr>() as u32,
            flags: SCHED_FLAG_KEEP_POLICY,
            nice,
            runtime: SHORT_SLICE_NS,
            ..SchedAttr::default()
        };
        // SAFETY: `attr` is a valid sched_attr of the size it states; pid 0 is this thread.
        if unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // Kernels before 6.12 accept the call and ignore the slice: check it took.
        if current()?.runtime != SHORT_SLICE_NS {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this kernel does not take a slice for ordinary threads (Linux 6.12 and later do)",
            ));
        }
        Ok(())
    }

    /// The calling thread's scheduling attributes.
    pub(super) fn current() -> io::Result<SchedAttr> {
        let mut attr = SchedAttr::default();
        let size = size_of::<SchedAttr>() as u32;
        // SAFETY: the kernel writes at most `size` bytes into `attr`; pid 0 is this thread.
        if unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                0,
                &mut attr as *mut SchedAttr,
                size,
                0,
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(attr)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;

    fn unsupported() -> io::Error {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "tank asks for this on Linux only",
        )
    }

    pub(super) fn short_slice() -> io::Result<()> {
        Err(unsupported())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The latency the kernel currently grants every CPU, in µs.
    fn granted_latency() -> io::Result<i32> {
        use std::io::Read;
        let mut value = [0u8; 4];
        File::open(CPU_LATENCY_DEVICE)?.read_exact(&mut value)?;
        Ok(i32::from_ne_bytes(value))
    }

    #[test]
    fn cpus_stay_awake_while_the_request_is_held_where_it_is_allowed() {
        match keep_cpus_awake() {
            Ok(held) => {
                assert_eq!(granted_latency().unwrap(), 0);
                drop(held);
            }
            // Without the device or the right to write it, the error says which.
            Err(error) => assert!(
                matches!(
                    error.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::NotFound
                ),
                "{error}"
            ),
        }
    }

    #[test]
    fn a_short_slice_keeps_the_nice_value_and_takes_where_the_kernel_allows() {
        let outcome = std::thread::spawn(|| {
            // SAFETY: plain integer arguments; 0 is this thread. Raising nice needs no privilege.
            assert_eq!(unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 3) }, 0);
            let result = short_slice();
            let after = imp::current().unwrap();
            (result.map_err(|e| e.to_string()), after.nice, after.runtime)
        })
        .join()
        .unwrap();
        let (result, nice, runtime) = outcome;
        assert_eq!(nice, 3, "the nice value was lost");
        match result {
            Ok(()) => assert_eq!(runtime, SHORT_SLICE_NS),
            Err(why) => assert_ne!(runtime, SHORT_SLICE_NS, "reported {why} yet took"),
        }
    }

    /// What the module says of the run's other threads: they get the slice by
    /// being started after it was granted, without asking.
    #[test]
    fn a_thread_started_after_the_slice_was_granted_inherits_it() {
        let (granted, inherited) = std::thread::spawn(|| {
            let granted = short_slice().is_ok();
            let child = std::thread::spawn(|| imp::current().unwrap().runtime)
                .join()
                .unwrap();
            (granted, child)
        })
        .join()
        .unwrap();
        if granted {
            assert_eq!(inherited, SHORT_SLICE_NS);
        }
    }
}
